"""`vaultmem sql` in a child process: the only way its bounds hold whatever the statement does.

DuckDB checks an interrupt between the chunks of a pipeline only, and its `memory_limit` covers
the buffer manager, not every vector: `SELECT len(list_distinct(range(30000000)))` ignored both
for minutes at 5 GB, and ten rows of `repeat('x', 1e8)` took 7 GB before an interrupt landed.
So the statement runs in a child (`python -m vaultmem.storage.sql_process`) that the parent
kills at the deadline, whose address space is capped (`SQL_ADDRESS_SPACE`), on a sandboxed
read-only connection whose memory and threads are capped too (`store.SQL_SETTINGS`, locked
against `SET`). The child stops fetching once the rows it rendered pass `SQL_MAX_BYTES`
(`truncated`). A writer never waits on it: the parent looks at the vault's writer lock while
the child runs and kills the child when a writer wants the file (`locked`, retry).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vaultmem.core.errors import (
    IndexUnavailableError,
    LockedError,
    QueryError,
    QueryTimeoutError,
    VaultmemError,
)
from vaultmem.storage.catalog_queries import SQL_HINT, SqlResult

SQL_ADDRESS_SPACE = 4 << 30
"""The child's address space (RLIMIT_AS): DuckDB's own memory_limit is 1 GB, and Python,
DuckDB's code and its thread stacks reserve the rest; past it an allocation fails."""
SQL_MAX_BYTES = 16_000_000
"""The result's rendered size (JSON) at most: the rows past it are cut (`truncated`)."""
SQL_GRACE_S = 5.0
"""How long past `timeout_s` the child has to start and to end an interrupted statement
before it is killed."""
_POLL_S = 0.05

_ERRORS: dict[str, type[VaultmemError]] = {
    cls.code: cls for cls in (QueryError, QueryTimeoutError, LockedError, IndexUnavailableError)
}


def run(
    index: Path,
    sql: str,
    *,
    limit: int,
    params: Mapping[str, Any] | None,
    timeout_s: float,
    lock_path: Path | None,
) -> SqlResult:
    """Run one read-only statement on `index` in a child process, within the bounds above."""
    from vaultmem.storage.store import writer_waiting

    if not index.exists():
        raise IndexUnavailableError(f"No index at {index} yet.")
    request = json.dumps(
        {
            "index": str(index),
            "sql": sql,
            "limit": limit,
            "params": dict(params or {}),
            "timeout_s": timeout_s,
            "max_bytes": SQL_MAX_BYTES,
        }
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "vaultmem.storage.sql_process"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout_s + SQL_GRACE_S
    pending: bytes | None = request.encode()
    try:
        while True:
            try:
                # Retried after each timeout: `communicate` keeps what it read, so the child
                # never blocks on a full pipe while this side watches the clock and the lock.
                answer, _ = child.communicate(pending, timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pending = None
            if writer_waiting(lock_path):
                raise LockedError(
                    "The SQL statement was stopped: a writer needed the index.",
                    hint="Run it again once the write is done (a store or reconcile).",
                )
            if time.monotonic() > deadline:
                raise QueryTimeoutError(
                    f"The SQL statement ran longer than {timeout_s:g} s and was interrupted."
                )
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return _result(answer, child.returncode)


def _limit_child() -> None:
    """Capped by the child itself, not in `preexec_fn`, which is unsafe in a process with
    threads (the MCP server calls `Vault` from worker threads)."""
    if os.name == "posix":
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (SQL_ADDRESS_SPACE, SQL_ADDRESS_SPACE))


def _result(answer: bytes, returncode: int) -> SqlResult:
    try:
        data = json.loads(answer) if answer else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise QueryError(
            f"The SQL statement ran out of memory or crashed (exit status {returncode}).",
            hint="Ask for less: fewer or smaller rows, or an aggregate (the statement's memory "
            "is capped; docs/limits.md).",
        )
    if "error" in data:
        error = data["error"]
        cls = _ERRORS.get(error["code"], QueryError)
        raise cls(error["message"], hint=error.get("hint") or SQL_HINT)
    return SqlResult(data["columns"], data["rows"], bool(data["truncated"]))


def _child() -> int:
    """The child's body: one request on stdin, one JSON answer on stdout."""
    from vaultmem.storage import store
    from vaultmem.storage.catalog_queries import run_sql

    _limit_child()
    request = json.loads(sys.stdin.buffer.read())
    try:
        with store.reading(Path(request["index"]), sandboxed=True) as con:
            result = run_sql(
                con,
                request["sql"],
                limit=request["limit"],
                params=request["params"],
                timeout_s=request["timeout_s"],
                max_bytes=request["max_bytes"],
            )
    except VaultmemError as error:
        answer: dict[str, Any] = {
            "error": {"code": error.code, "message": error.message, "hint": error.hint}
        }
    except MemoryError:
        message, hint = "The SQL statement ran out of memory.", "Ask for less (docs/limits.md)."
        answer = {"error": {"code": QueryError.code, "message": message, "hint": hint}}
    else:
        answer = {"columns": result.columns, "rows": result.rows, "truncated": result.truncated}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child())

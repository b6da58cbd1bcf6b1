"""`vaultmem sql` stays within its bounds whatever the statement does (issue 27, item 8): the
timeout holds on an expression DuckDB cannot interrupt, the memory and threads are capped and
locked against `SET`, the result's bytes are capped (`truncated`), non-finite numbers are
refused, and a writer is never held out by a running statement. Real CLI subprocesses."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_env, run_cli
from vaultmem.adapters import commands as operations
from vaultmem.adapters.contract import bind
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.storage.sql_process import SQL_MAX_BYTES

HANG_GUARD_S = 120  # not a speed bound: the old code ran such statements for many minutes


@pytest.fixture
def built(example_vault: Path) -> Path:
    done = run_cli("reconcile", "--vault", str(example_vault), "--json")
    assert done.returncode == 0, done.stderr
    return example_vault


def _sql(vault: Path, statement: str, *args: str) -> dict[str, Any]:
    command = ["sql", statement, *args, "--vault", str(vault), "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "vaultmem", *command],
        capture_output=True, text=True, env=cli_env(), timeout=HANG_GUARD_S, check=False,
    )  # fmt: skip
    envelope: dict[str, Any] = json.loads(result.stdout)
    return envelope


@pytest.mark.slow
def test_the_timeout_holds_on_an_expression_duckdb_cannot_interrupt(built: Path) -> None:
    # One row whose one value takes minutes and gigabytes: no chunk boundary to interrupt at.
    out = _sql(built, "SELECT len(list_distinct(range(30000000)))", "--timeout-s", "1")
    assert not out["ok"] and out["error"]["code"] in ("query_timeout", "query_invalid")


def test_the_result_bytes_are_capped(built: Path) -> None:
    out = _sql(built, "SELECT repeat('x', 1000000) AS x FROM range(40)", "--timeout-s", "60")
    assert out["ok"], out
    data = out["data"]
    assert data["truncated"] is True
    assert 0 < len(data["rows"]) < 40
    assert len(json.dumps(data["rows"])) <= SQL_MAX_BYTES


def test_memory_and_threads_are_capped_and_locked(built: Path) -> None:
    out = _sql(built, "SELECT current_setting('threads'), current_setting('memory_limit')")
    assert out["ok"], out
    threads, memory = out["data"]["rows"][0]
    assert int(threads) == 2 and "MiB" in memory and float(memory.split()[0]) < 1024
    for statement in ("SET memory_limit = '64GB'", "SET threads = 64"):
        refused = _sql(built, statement)
        assert not refused["ok"] and refused["error"]["code"] == "query_invalid"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_non_finite_number_is_invalid(built: Path, value: str) -> None:
    out = _sql(built, "SELECT 1", "--timeout-s", value)
    assert not out["ok"] and out["error"]["code"] == "invalid_argument"


def test_a_non_finite_tool_argument_is_invalid() -> None:
    tool = next(op for op in operations.OPERATIONS if op.name == "sql")
    for value in (math.nan, math.inf):
        with pytest.raises(InvalidArgumentError, match="finite"):
            bind(tool, {"query": "SELECT 1", "timeout_s": value}, adapter="mcp")


@pytest.mark.slow
def test_a_running_statement_never_holds_a_writer_out(built: Path) -> None:
    slow = "SELECT sum(a.range * b.range) FROM range(100000000) a, range(100000000) b"
    command = ["sql", slow, "--timeout-s", "300", "--vault", str(built), "--json"]
    reader = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", *command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        time.sleep(3)  # the statement is running (it runs for minutes)
        assert reader.poll() is None
        stored = run_cli(
            "store", "sql-bounds-note", "written while a slow sql runs", "--vault", str(built),
            "--json",
        )  # fmt: skip
        assert stored.returncode == 0, stored.stdout + stored.stderr
        out, _ = reader.communicate(timeout=HANG_GUARD_S)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    envelope = json.loads(out)
    assert not envelope["ok"] and envelope["error"]["code"] == "locked"

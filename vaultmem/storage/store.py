"""The only code that opens DuckDB: connections, retries, bulk loads and the index lifecycle.

Connections are short-lived on purpose. DuckDB lets one process hold a file read-write and
then refuses every other process, even read-only ones; so readers open per request and a
writer opens only for its transaction. Either side that meets the other's file lock retries
with backoff up to a bound, then raises `LockedError` naming the holder DuckDB reports.

Rows go in as columns: Python lists bound as typed LIST parameters and `unnest`ed in one
INSERT per table per batch (row-at-a-time `executemany` runs ~100x slower here). Postings, the
bulk of the rows, come as TSV files written by the parse workers (`parallel.py`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from vaultmem.errors import IndexUnavailableError, LockedError
from vaultmem.storage.schema import DDL, SCHEMA_VERSION, table_docs

_LOCK_MESSAGE = re.compile(r"Could not set lock|Conflicting lock", re.I)
_PERMISSION = re.compile(r"Permission denied|Read-only file system", re.I)
_HOLDER = re.compile(r"Conflicting lock is held in (.*?)(?:\. See also|$)")

Connection = duckdb.DuckDBPyConnection


class CorruptIndex(Exception):
    """The index file cannot be read as a DuckDB database. Internal: callers rebuild."""


DatabaseError = duckdb.Error
"""What a failed statement raises: callers above storage catch this, never import duckdb."""


def _is_lock_error(error: BaseException) -> bool:
    return isinstance(error, duckdb.Error) and bool(_LOCK_MESSAGE.search(str(error)))


def connect(
    path: Path, *, read_only: bool, timeout_s: float = 15.0, sandboxed: bool = False
) -> Connection:
    """Open the index, retrying while another process holds DuckDB's file lock.

    `sandboxed` turns off DuckDB's file system access (COPY TO, read_csv, ATTACH), for
    connections that run SQL written by a user or an agent.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    config: dict[str, str | bool | int | float | list[str]] = (
        {"enable_external_access": False} if sandboxed else {}
    )
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.Error as error:
            if _PERMISSION.search(str(error)):
                raise IndexUnavailableError(
                    f"Cannot open the index {path}: {error}",
                    hint=f"Make {path.parent} and the files in it writable for this user "
                    f"(`chmod -R u+w {path.parent}`), or run vaultmem as their owner.",
                ) from error
            if not _is_lock_error(error):
                raise CorruptIndex(str(error)) from error
            if time.monotonic() >= deadline:
                holder = _HOLDER.search(str(error))
                raise LockedError(
                    f"The index {path} stayed locked for {timeout_s:.0f} s by "
                    f"{holder.group(1) if holder else 'another process'}.",
                    hint="Close the other DuckDB connection (a long query, a GUI client), retry.",
                ) from error
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


@contextmanager
def reading(
    path: Path, *, timeout_s: float = 15.0, sandboxed: bool = False
) -> Iterator[Connection]:
    """A read-only connection for one request. Missing or unreadable index: a clear error."""
    if not path.exists():
        raise IndexUnavailableError(f"No index at {path} yet.")
    try:
        con = connect(path, read_only=True, timeout_s=timeout_s, sandboxed=sandboxed)
    except CorruptIndex as error:
        raise IndexUnavailableError(
            f"The index {path} cannot be read: {error}",
            hint="Run `vaultmem reconcile`: it moves a damaged index aside and rebuilds it.",
        ) from error
    try:
        yield con
    finally:
        con.close()


@dataclass(slots=True)
class Batch:
    """Rows for one table, column by column, appended cheaply and loaded in one statement."""

    table: str
    columns: Sequence[str]
    types: Sequence[str]
    data: list[list[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.data:
            self.data = [[] for _ in self.columns]

    def add(self, *row: Any) -> None:
        for column, value in zip(self.data, row, strict=True):
            column.append(value)

    def __len__(self) -> int:
        return len(self.data[0]) if self.data else 0


_COLUMN_TYPES: dict[str, tuple[tuple[str, str], ...]] = {
    t.name: tuple((c.name, c.type) for c in t.columns) for t in table_docs()
}


def new_batch(table: str) -> Batch:
    """An empty batch with the table's columns and types, straight from the DDL."""
    cols = _COLUMN_TYPES[table]
    return Batch(table, [c for c, _ in cols], [t for _, t in cols])


def load(con: Connection, batch: Batch) -> None:
    """Insert a batch with one statement (typed LIST parameters unnested in SQL)."""
    if not len(batch):
        return
    selects = ", ".join(
        f"unnest(${i + 1}::{'VARCHAR' if t == 'JSON' else t}[])" for i, t in enumerate(batch.types)
    )
    con.execute(
        f"INSERT INTO {batch.table} ({', '.join(batch.columns)}) SELECT {selects}", batch.data
    )


def delete_where_in(con: Connection, table: str, column: str, values: Sequence[str]) -> None:
    """Delete the rows whose `column` is in `values`, as one statement."""
    if values:
        con.execute(
            f"DELETE FROM {table} WHERE {column} IN (SELECT unnest($1::VARCHAR[]))", [list(values)]
        )


@contextmanager
def transaction(con: Connection) -> Iterator[None]:
    """One write transaction: committed when the block ends, rolled back on any exception
    (a KeyboardInterrupt too), so a failed reconcile leaves the index as it was."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):  # the failure may have ended the transaction already
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def create_schema(con: Connection, versions: Mapping[str, str]) -> None:
    con.execute(DDL)
    meta = new_batch("meta")
    for key, value in sorted({**versions, "schema_version": str(SCHEMA_VERSION)}.items()):
        meta.add(key, value)
    load(con, meta)


def read_meta(con: Connection) -> dict[str, str]:
    return {k: v for k, v in con.execute("SELECT key, value FROM meta").fetchall()}


def meta_matches(con: Connection, versions: Mapping[str, str]) -> bool:
    """True when the index was built by this schema, parser and tokenizer."""
    try:
        meta = read_meta(con)
    except duckdb.CatalogException:
        return False
    expected = {**versions, "schema_version": str(SCHEMA_VERSION)}
    return all(meta.get(k) == v for k, v in expected.items())


def move_aside(path: Path) -> Path:
    """Keep a damaged index for inspection instead of deleting it; return where it went."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    path.replace(target)
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        wal.replace(target.with_name(target.name + ".wal"))
    return target


def remove_index(path: Path) -> None:
    for candidate in (path, path.with_name(path.name + ".wal")):
        candidate.unlink(missing_ok=True)


def fetch_dicts(con: Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Run a query and return rows as dicts keyed by column name."""
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

"""The only code that opens DuckDB: connections, retries, bulk loads and the index lifecycle.

DuckDB lets one process hold a file read-write and then refuses every other process, even
read-only ones, and a reader's shared lock likewise keeps every writer out. So a writer opens
only for its transaction, and a reader either opens per request (`reading`) or, in a process
that serves many requests (the MCP server, a library user), keeps one read-only connection
between them (`SharedReader`) and lets go of it whenever a writer may want the file: after
IDLE_CLOSE_S without a request, at once when the vault's writer lock (`.vaultmem/write.lock`,
which reconcile takes before it opens the index) is held, and before this process opens the
file any other way. Either side that meets the other's file lock retries with backoff up to a
bound, then raises `LockedError` naming the holder DuckDB reports; while the holder is a
vaultmem writer (its writer lock is held), it waits for that lock instead and opens within a
few milliseconds of its release (`files.lock.wait_for_writer`).

Rows go in as columns: Python lists bound as typed LIST parameters and `unnest`ed in one
INSERT per table per batch (row-at-a-time `executemany` runs ~100x slower here). Postings, the
bulk of the rows, come as TSV files written by the parse workers (`parallel.py`).
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

# DuckDB's engine, imported without the `duckdb` package around it: that package re-exports
# this extension module and adds a Python relational API and version lookup we never call
# (`_relation`, `importlib.metadata`), a large share of a cold command that opens the index.
# A private module: listed with its tested versions in core/compat.py (only storage may import
# DuckDB, so the import stays here). The stubs (`_duckdb-stubs`) ship with the wheel; the names
# are the same objects. A release without a separate engine module gets the package.
try:
    import _duckdb as duckdb
except ImportError:  # pragma: no cover - depends on the installed DuckDB's packaging
    import duckdb  # type: ignore[no-redef]

from vaultmem.core.errors import IndexUnavailableError, LockedError
from vaultmem.files.lock import wait_for_writer, writer_holds
from vaultmem.storage.schema import DDL, SCHEMA_VERSION, SEARCH_SCHEMA_VERSION, table_docs

_LOCK_MESSAGE = re.compile(r"Could not set lock|Conflicting lock", re.I)
_OTHER_CONFIGURATION = re.compile(r"different configuration", re.I)
"""DuckDB's refusal of a file that another thread of this process has open the other way."""
_PERMISSION = re.compile(r"Permission denied|Read-only file system", re.I)
_HOLDER = re.compile(r"Conflicting lock is held in (.*?)(?:\. See also|$)")
IN_PROCESS_RETRY_S = 0.02
"""The longest `connect` sleeps between tries while another thread of this process has the
file open the other way (its request or write takes milliseconds)."""

Connection = duckdb.DuckDBPyConnection


class _WriterTurns:
    """The paths a thread of this process is waiting to open read-write (or sandboxed): a
    new read-only connection to such a path waits for that open first.

    DuckDB refuses a file to a thread of this process while another thread has it open the
    other way, and readers that reopen between requests could otherwise take the file back
    before every one of the writer's retries: two reader threads serving requests back to
    back kept a writer out for its whole 10 s timeout under load. Writers go first; a reader
    waits for them at most until its own deadline."""

    def __init__(self) -> None:
        self._waiting: dict[str, int] = {}
        self._changed = threading.Condition()

    @contextmanager
    def writing(self, path: Path) -> Iterator[None]:
        key = os.path.abspath(path)
        with self._changed:
            self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                left = self._waiting.pop(key) - 1
                if left:
                    self._waiting[key] = left
                self._changed.notify_all()

    def waiting(self, path: Path) -> bool:
        """Whether a thread of this process is waiting to open `path` the other way."""
        return os.path.abspath(path) in self._waiting

    def wait(self, path: Path, deadline: float) -> None:
        """Until no thread of this process waits to open `path` the other way (or `deadline`).

        Called before a reader takes any lock of its own: the waiting writer's
        `SharedReader.release_all` takes the shared readers' locks."""
        if not self._waiting:  # the common case, without the lock: no writer in this process
            return
        with self._changed:
            while self.waiting(path):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)


_WRITER_TURNS = _WriterTurns()


class CorruptIndex(Exception):
    """The index file cannot be read as a DuckDB database. Internal: callers rebuild."""


DatabaseError = duckdb.Error
"""What a failed statement raises: callers above storage catch this, never import duckdb."""
QueryInterrupted = duckdb.InterruptException
"""A statement stopped by `Connection.interrupt()` (a read-only query past its time limit)."""


def _is_lock_error(error: BaseException) -> bool:
    return isinstance(error, duckdb.Error) and bool(_LOCK_MESSAGE.search(str(error)))


SPILL_FOLDER = "spill"
"""Beside the index: where its connections may spill a sort or join larger than memory.

DuckDB's default is `<index>.tmp`, which was also the rebuild's temporary file's name: a
leftover spill folder made every rebuild fail ("Is a directory"), and the SQL sandbox allows
writes into its connection's temp folder (issue 27). The folder is private (0700) and named
apart from the rebuild's file (`rebuild_path`); sandboxed connections get no spill folder at all.
"""


def rebuild_path(index: Path) -> Path:
    """Where a build from nothing writes before it replaces the index (never the spill name)."""
    return index.with_name(f"{index.stem}.rebuild{index.suffix}")


SQL_SETTINGS: dict[str, str | bool | int] = {
    "memory_limit": "1GB",
    "threads": 2,
    "lock_configuration": True,  # last: the SQL a user or agent writes cannot `SET` them back
}
"""What a sandboxed connection (`vaultmem sql`) may use: 1 GB of DuckDB's buffer memory and
two threads (`storage/sql_process.py` bounds the rest)."""


def connect(
    path: Path, *, read_only: bool, timeout_s: float = 15.0, sandboxed: bool = False
) -> Connection:
    """Open the index, retrying while another process holds DuckDB's file lock, or another
    thread of this process has the file open the other way (read-only against read-write).

    `sandboxed` turns off DuckDB's file system access (COPY TO, read_csv, ATTACH) and its
    spill folder, for connections that run SQL written by a user or an agent: DuckDB lets even
    a sandboxed connection write into its temp folder, so it gets none, and every write to a
    file is refused. Other connections spill into the private SPILL_FOLDER beside the index.
    """
    deadline = time.monotonic() + timeout_s
    if read_only and not sandboxed:
        return _connect(path, read_only=True, deadline=deadline, timeout_s=timeout_s)
    with _WRITER_TURNS.writing(path):
        # DuckDB refuses a second connection to a file with another configuration inside one
        # process: this process's shared readers of the file let go first.
        SharedReader.release_all(path)
        return _connect(
            path, read_only=read_only, deadline=deadline, timeout_s=timeout_s, sandboxed=sandboxed
        )


def _connect(
    path: Path, *, read_only: bool, deadline: float, timeout_s: float, sandboxed: bool = False
) -> Connection:
    """`connect`'s tries until `deadline`."""
    delay = 0.005
    config: dict[str, str | bool | int | float | list[str]] = (
        {"enable_external_access": False, "temp_directory": "", **SQL_SETTINGS} if sandboxed else {}
    )
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config=config)
            if not sandboxed:
                # Set, not configured: a connection opened with a config differs from every
                # plain one, and DuckDB refuses to mix the two on one file in one process.
                spill = path.parent / SPILL_FOLDER
                if not spill.is_dir():
                    spill.mkdir(mode=0o700, parents=True, exist_ok=True)
                con.execute("SET temp_directory = $1", [str(spill)])
            return con
        except duckdb.Error as error:
            if _PERMISSION.search(str(error)):
                raise IndexUnavailableError(
                    f"Cannot open the index {path}: {error}",
                    hint=f"Make {path.parent} and the files in it writable for this user "
                    f"(`chmod -R u+w {path.parent}`), or run vaultmem as their owner.",
                ) from error
            in_process = bool(_OTHER_CONFIGURATION.search(str(error)))
            if not in_process and not _is_lock_error(error):
                raise CorruptIndex(str(error)) from error
            if time.monotonic() >= deadline:
                holder = _HOLDER.search(str(error))
                who = holder.group(1) if holder else "another process"
                raise LockedError(
                    f"The index {path} stayed locked for {timeout_s:.0f} s by "
                    f"{'another thread of this process' if in_process else who}.",
                    hint="Close the other DuckDB connection (a long query, a GUI client), retry.",
                ) from error
            if in_process:
                # Another thread has the file open the other way: a shared reader reopened
                # for a request since `release_all` (a writer), or a writer's connection (a
                # reader). Either lets go within its request or write: not damage, which a
                # reconcile would move aside and rebuild.
                if not read_only or sandboxed:
                    SharedReader.release_all(path)
                time.sleep(delay)
                delay = min(delay * 2, IN_PROCESS_RETRY_S)
                continue
            if wait_for_writer(path.parent, deadline):
                delay = 0.005  # a vaultmem writer just let go of the index: open it now
                continue
            time.sleep(delay)  # another holder (a reader, another client): back off
            delay = min(delay * 2, 0.2)


@contextmanager
def reading(
    path: Path, *, timeout_s: float = 15.0, sandboxed: bool = False
) -> Iterator[Connection]:
    """A read-only connection for one request. Missing or unreadable index: a clear error."""
    if not path.exists():
        raise IndexUnavailableError(f"No index at {path} yet.")
    if not sandboxed:
        _WRITER_TURNS.wait(path, time.monotonic() + timeout_s)
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


IDLE_CLOSE_S = 2.0
"""A shared reader closes after this long without a request, so a writer that does not take
the vault's writer lock (another DuckDB client) waits at most this long plus one request."""
WRITER_POLL_S = 0.05
"""How often an idle shared reader looks at the writer lock: a waiting reconcile gets the
file within about this long (it retries its own open with backoff meanwhile)."""


def _signature(path: Path) -> tuple[int, ...]:
    """What changes when another process writes or replaces the index: inode, size and mtime
    of the file and of its write-ahead log."""
    out: list[int] = []
    for candidate in (path, path.with_name(path.name + ".wal")):
        try:
            st = os.stat(candidate)
        except FileNotFoundError:
            out += [0, 0, 0]
        else:
            out += [st.st_ino, st.st_size, st.st_mtime_ns]
    return tuple(out)


def writer_waiting(lock_path: Path | None) -> bool:
    """True when another process holds the vault's writer lock (a reconcile about to write)."""
    return lock_path is not None and writer_holds(lock_path)


class SharedReader:
    """One read-only connection to the index, kept between requests and given up for writers.

    `use()` hands out the open connection (opening or reopening it when the index file changed
    since: another inode after a rebuild, or another size or mtime), one request at a time. A
    daemon thread, alive only while the connection is open, closes it once it is idle for
    IDLE_CLOSE_S or whenever `lock_path` (the writer lock) is held by someone; a request made
    while a writer waits gets the connection for its own length only. Opening the same file
    for writing in this process (`connect`) releases it first.
    """

    _instances: ClassVar[weakref.WeakSet[SharedReader]] = weakref.WeakSet()

    def __init__(
        self,
        path: Path,
        *,
        lock_path: Path | None = None,
        idle_s: float | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self.path = path
        self.lock_path = lock_path
        self.idle_s = IDLE_CLOSE_S if idle_s is None else idle_s
        self.timeout_s = timeout_s
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._con: Connection | None = None
        self._cursors: set[Connection] = set()
        self._signature: tuple[int, ...] = ()
        self._last_used = 0.0
        self._busy = 0
        self._watcher: threading.Thread | None = None
        self._depth = threading.local()
        """`n`: how many requests of the calling thread are inside `use` (nested calls)."""
        self.opened = 0
        """How many times a connection was opened (tests and benchmarks read it)."""
        SharedReader._instances.add(self)

    @property
    def is_open(self) -> bool:
        return self._con is not None

    @property
    def signature(self) -> tuple[int, ...]:
        """The index file's signature when the open connection was opened: what is derived
        from it (`search/resident.py`) is valid while this stays the same."""
        return self._signature

    def _writers_first(self) -> None:
        """Wait while a thread of this process waits to open the file read-write
        (`_WriterTurns`), unless this thread is inside a request already (its lock held)."""
        if not getattr(self._depth, "n", 0):
            _WRITER_TURNS.wait(self.path, time.monotonic() + self.timeout_s)

    @contextmanager
    def use(self) -> Iterator[Connection]:
        """The shared connection for one request (the same errors as `reading`)."""
        self._writers_first()
        with self._lock:
            depth = self._depth
            depth.n = getattr(depth, "n", 0) + 1
            try:
                con = self._open()
                self._busy += 1
                try:
                    yield con
                finally:
                    self._busy -= 1
                    self._last_used = time.monotonic()
                    if not self._busy and writer_waiting(self.lock_path):
                        self._close()
            finally:
                depth.n -= 1

    @contextmanager
    def cursor(self) -> Iterator[Connection]:
        """A second connection to the shared database, for a long read in another thread
        (the resident search index's load) while requests go on using the shared one.
        Closing the shared connection (a writer waiting, `close`, `release_all`) interrupts
        the cursor's statement and waits until it is handed back; idleness does not."""
        self._writers_first()
        with self._lock:
            cursor = self._open().cursor()
            self._cursors.add(cursor)
        try:
            yield cursor
        finally:
            with self._lock:
                self._cursors.discard(cursor)
                cursor.close()
                self._last_used = time.monotonic()
                self._wake.notify_all()

    def close(self) -> None:
        """Close the connection now (a request in another thread finishes first)."""
        with self._lock:
            if not self._busy:
                self._close()

    @classmethod
    def close_all(cls) -> None:
        """Close every shared reader of this process and wait for its watcher to end.

        Registered to run at exit: the watcher is a daemon thread, and a daemon thread still
        inside DuckDB when the interpreter finalizes is stopped by a forced unwind through
        DuckDB's C++ frames, which aborts the process ("FATAL: exception not rethrown")."""
        for reader in list(cls._instances):
            watcher = reader._watcher
            reader.close()
            if watcher is not None and reader._con is None:
                watcher.join(WRITER_POLL_S * 4)

    @classmethod
    def release_all(cls, path: Path) -> None:
        """Close this process's shared readers of `path` before it is opened another way."""
        target = os.path.abspath(path)
        for reader in list(cls._instances):
            if reader._con is not None and os.path.abspath(reader.path) == target:
                reader.close()

    def _open(self) -> Connection:
        signature = _signature(self.path)
        if self._con is not None and signature == self._signature:
            return self._con
        self._close()
        if not self.path.exists():
            raise IndexUnavailableError(f"No index at {self.path} yet.")
        try:
            self._con = connect(self.path, read_only=True, timeout_s=self.timeout_s)
        except CorruptIndex as error:
            raise IndexUnavailableError(
                f"The index {self.path} cannot be read: {error}",
                hint="Run `vaultmem reconcile`: it moves a damaged index aside and rebuilds it.",
            ) from error
        self._signature = signature
        self.opened += 1
        if self._watcher is None:
            self._watcher = threading.Thread(
                target=self._watch, name="vaultmem-shared-reader", daemon=True
            )
            self._watcher.start()
        return self._con

    def _close(self) -> None:
        """Close the shared connection (the lock held): cursors first, interrupted, then
        waited for (DuckDB refuses to close a connection one of its cursors is using)."""
        for cursor in list(self._cursors):
            cursor.interrupt()
        while self._cursors:
            self._wake.wait(WRITER_POLL_S)
        con, self._con = self._con, None
        if con is not None:
            con.close()
        self._wake.notify_all()

    def _watch(self) -> None:
        """Close the idle connection when a writer may want the file; end with it."""
        with self._lock:
            while self._con is not None:
                self._wake.wait(WRITER_POLL_S)
                if self._con is None or self._busy:
                    continue
                if self._cursors and not writer_waiting(self.lock_path):
                    continue  # a long read in a cursor: not idle
                idle = time.monotonic() - self._last_used >= self.idle_s
                if idle or writer_waiting(self.lock_path):
                    self._close()
            self._watcher = None


atexit.register(SharedReader.close_all)


class Batch:
    """Rows for one table, column by column, appended cheaply and loaded in one statement.

    A plain class: a dataclass would compile its methods at import (~2.9M instructions), which
    every command that opens the index pays."""

    __slots__ = ("columns", "data", "table", "types")

    def __init__(self, table: str, columns: Sequence[str], types: Sequence[str]) -> None:
        self.table = table
        self.columns = columns
        self.types = types
        self.data: list[list[Any]] = [[] for _ in columns]

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


def delete_where_in(
    con: Connection, table: str, column: str, values: Sequence[str], returning: str = ""
) -> list[tuple[Any, ...]]:
    """Delete the rows whose `column` is in `values`, as one statement; with `returning`
    (columns), the deleted rows' values of them.

    One value (a one-note edit) is compared in the scan itself, a list joins its unnested
    values: the join's set-up cost ~0.3 ms more a table, nine tables an edit."""
    if not values:
        return []
    back = f" RETURNING {returning}" if returning else ""
    if len(values) == 1:
        con.execute(f"DELETE FROM {table} WHERE {column} = $1{back}", [values[0]])
    else:
        con.execute(
            f"DELETE FROM {table} WHERE {column} IN (SELECT unnest($1::VARCHAR[])){back}",
            [list(values)],
        )
    return con.fetchall() if returning else []


_BUILD_SIDE_OPTIMIZER = "build_side_probe_side"


@contextmanager
def build_side_as_written(con: Connection) -> Iterator[None]:
    """Hash joins build on their right side, as the query is written, for the statements run
    inside: DuckDB otherwise builds on the side it estimates smaller.

    It estimates a staged JSON file at ~84 rows, whatever it holds, so the load of staged rows
    built its hash table on the file and probed it with `note_numbers`: one row group, hence
    one thread for the whole insert (the links of 100,000 notes 1.9 s on one core, 1.1 s on
    two as written: benchmarks/HISTORY.md). A DuckDB without that optimizer runs as is."""
    before = con.execute("SELECT current_setting('disabled_optimizers')").fetchone()
    known = con.execute(
        "SELECT count(*) FROM duckdb_optimizers() WHERE name = $1", [_BUILD_SIDE_OPTIMIZER]
    ).fetchone()
    disabled = str(before[0] if before else "")
    if not (known and known[0]) or _BUILD_SIDE_OPTIMIZER in disabled.split(","):
        yield
        return
    con.execute(
        f"SET disabled_optimizers = '{','.join(filter(None, (disabled, _BUILD_SIDE_OPTIMIZER)))}'"
    )
    try:
        yield
    finally:
        with suppress(duckdb.Error):  # a failed statement may have aborted the transaction
            con.execute(f"SET disabled_optimizers = '{disabled}'")


SCAN_HEADROOM_MIB = 32
"""DuckDB's memory for a statement that reads a whole column once (`scanning_once`), above what
the connection holds already."""


@contextmanager
def scanning_once(con: Connection) -> Iterator[None]:
    """Run a statement that reads a whole column it will not read again (a one-note edit's
    scan of `postings.note_key`, 22M rows at 100,000 notes) with DuckDB's memory capped low.

    Under the connection's usual cap the buffer manager keeps every block it loads, each in
    memory the process touches for the first time: ~50,000 page faults, most of the scan's
    cost. Capped, it evicts the blocks it is done with and reuses their memory (the scan
    0.13 -> 0.05 s wall at 100,000 notes: benchmarks/HISTORY.md). The cap is what the
    connection holds already (a transaction's own rows, temp tables) plus SCAN_HEADROOM_MIB:
    a fixed cap failed once a transaction held that much, and a failed statement aborts the
    transaction. It is a setting, not part of the transaction: it is put back however the
    statement ends, as DuckDB prints it (exact for a whole number of MiB, which
    `index_writes.bound_memory` sets). A cap the connection cannot take leaves the statement
    uncapped."""
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()
    held = con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()")
    held_mib = int((held.fetchone() or (0,))[0]) // 2**20
    try:
        con.execute(f"SET memory_limit = '{held_mib + SCAN_HEADROOM_MIB}MiB'")
    except duckdb.Error:
        yield
        return
    restore = "SET memory_limit = $1", [before[0] if before else "1GB"]
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):  # a failed statement may have aborted the transaction
            con.execute(*restore)
        raise
    con.execute(*restore)


def load_binding() -> None:
    """Bind a list parameter on a throwaway in-memory database. DuckDB's Python binding imports
    the modules it converts parameters with (`decimal`, `uuid` and what they import) on a
    process's first bound statement: ~10 ms that a long-lived writer (`index.reconcile.warm_up`)
    pays here rather than on its first save."""
    con = duckdb.connect(":memory:")
    try:
        con.execute("SELECT $1", [[0]]).fetchall()  # a list: its conversion imports them
    finally:
        con.close()


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


SCHEMA_VERSIONS = {
    "schema_version": str(SCHEMA_VERSION),
    "search_schema_version": str(SEARCH_SCHEMA_VERSION),
}
"""The layout's versions, recorded in `meta` beside the code's (`reconcile.index_versions`)."""


def create_schema(con: Connection, versions: Mapping[str, str]) -> None:
    con.execute(DDL)
    meta = new_batch("meta")
    for key, value in sorted({**versions, **SCHEMA_VERSIONS}.items()):
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
    expected = {**versions, **SCHEMA_VERSIONS}
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

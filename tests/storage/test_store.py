"""The shared read connection (`store.SharedReader`): kept between calls, reopened when the
index changed, and given up to writers: in this process, in another vaultmem process taking
the writer lock, and in a plain DuckDB client, each proven with real processes and files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.helpers import index_of, run_cli
from vaultmem.storage import store
from vaultmem.vault import Vault

HOLDER = textwrap.dedent(
    """
    import json, sys
    from vaultmem.storage import store
    store.IDLE_CLOSE_S = float(sys.argv[2])
    from vaultmem.vault import Vault
    vault = Vault(sys.argv[1])
    for line in sys.stdin:
        hits = [h.path for h in vault.search(line.strip())]
        print(json.dumps({"hits": hits, "open": vault._reader.is_open,
                          "opened": vault._reader.opened}), flush=True)
    """
)


def make_vault(root: Path) -> Vault:
    root.mkdir(parents=True)
    vault = Vault.init(root)
    (root / "Alpha.md").write_text("# Alpha\n\nThe alpha note about lanterns.\n", "utf-8")
    vault.reconcile()
    return vault


def holder(root: Path, idle_s: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(idle_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def ask(proc: subprocess.Popen[str], query: str) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(query + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def wait_closed(reader: store.SharedReader, bound_s: float = 30.0) -> bool:
    deadline = time.monotonic() + bound_s
    while reader.is_open and time.monotonic() < deadline:
        time.sleep(0.01)
    return not reader.is_open


def test_connection_is_kept_between_calls_and_reopened_after_a_write(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    # No resident index: its loader thread, started by the second search, may open the reader
    # again on its own schedule (racing the write below), which this count is not about.
    vault.resident_max_postings = 0
    assert [h.path for h in vault.search("lantern")] == ["Alpha.md"]
    vault.find("Alpha")
    vault.search("alpha")
    assert vault._reader is not None and vault._reader.opened == 1
    # A write in this process releases the reader first (DuckDB refuses the other mode).
    (tmp_path / "v" / "Beta.md").write_text("# Beta\n\nMore lanterns here.\n", "utf-8")
    vault.reconcile()
    assert sorted(h.path for h in vault.search("lantern")) == ["Alpha.md", "Beta.md"]
    assert vault._reader.opened == 2


def test_a_rebuild_replacing_the_file_is_seen(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    other = Vault(tmp_path / "v")
    assert [h.path for h in vault.search("lantern")] == ["Alpha.md"]
    (tmp_path / "v" / "Beta.md").write_text("# Beta\n\nMore lanterns here.\n", "utf-8")
    other.reconcile(rebuild=True)
    assert sorted(h.path for h in vault.search("lantern")) == ["Alpha.md", "Beta.md"]


def test_idle_reader_closes_and_a_plain_duckdb_writer_gets_the_file(tmp_path: Path) -> None:
    root = tmp_path / "v"
    make_vault(root).close()
    proc = holder(root, idle_s=0.2)
    try:
        assert ask(proc, "lantern")["hits"] == ["Alpha.md"]
        # A writer that knows nothing of vaultmem's lock: it gets the file once the holder
        # has been idle for its IDLE_CLOSE_S (connect retries up to its bound meanwhile).
        con = store.connect(index_of(root), read_only=False, timeout_s=60)
        try:
            con.execute("UPDATE notes SET title = 'Renamed' WHERE path = 'Alpha.md'")
        finally:
            con.close()
        reply = ask(proc, "lantern")
        assert reply["hits"] == ["Alpha.md"] and reply["opened"] == 2
    finally:
        proc.communicate("", timeout=60)


@pytest.mark.slow
def test_holder_yields_to_a_cli_reconcile_and_sees_its_notes(tmp_path: Path) -> None:
    root = tmp_path / "v"
    make_vault(root).close()
    # Idle close far beyond the writer's 15 s retry bound: only the writer lock can free it.
    proc = holder(root, idle_s=3600)
    try:
        first = ask(proc, "lantern")
        assert first == {"hits": ["Alpha.md"], "open": True, "opened": 1}
        (root / "Beta.md").write_text("# Beta\n\nMore lanterns, and a kettle.\n", "utf-8")
        done = run_cli("reconcile", "--vault", str(root), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["data"]["added"] == 1
        after = ask(proc, "kettle")
        assert after["hits"] == ["Beta.md"] and after["opened"] == 2
    finally:
        proc.communicate("", timeout=60)


def test_held_reader_is_reused_until_released(tmp_path: Path) -> None:
    root = tmp_path / "v"
    make_vault(root).close()
    reader = store.SharedReader(index_of(root), idle_s=3600)
    with reader.use() as con:
        first = con
    with reader.use() as con:
        assert con is first
    assert reader.is_open
    store.SharedReader.release_all(index_of(root))
    assert not reader.is_open
    with reader.use():
        pass
    short = store.SharedReader(index_of(root), idle_s=0.05)
    with short.use():
        pass
    assert wait_closed(short)
    reader.close()


def test_delete_where_in_deletes_one_value_or_many(tmp_path: Path) -> None:
    """One value is compared in the scan, several are joined: both delete exactly those rows."""
    con = store.connect(tmp_path / "t.duckdb", read_only=False)
    try:
        con.execute("CREATE TABLE t (k VARCHAR, v INTEGER)")
        con.execute("INSERT INTO t SELECT 'k' || (i % 5), i FROM range(20) r(i)")
        store.delete_where_in(con, "t", "k", [])
        store.delete_where_in(con, "t", "k", ["k1"])
        store.delete_where_in(con, "t", "k", ["k3", "k4", "nope"])
        left = con.execute("SELECT DISTINCT k FROM t ORDER BY k").fetchall()
        assert left == [("k0",), ("k2",)]
        assert con.execute("SELECT count(*) FROM t").fetchone() == (8,)
    finally:
        con.close()


def test_a_scan_once_runs_under_its_cap_and_gives_the_limit_back(tmp_path: Path) -> None:
    """A whole-column scan twice the cap's size (a one-note edit's delete) runs under
    `scanning_once` with the cap in force; the connection's own limit is back after it, and
    after a statement that failed. (What the cap saves, page faults, is measured in
    `benchmarks/bench_steady.py`.)"""
    path = tmp_path / "t.duckdb"
    con = store.connect(path, read_only=False)
    con.execute("CREATE TABLE t AS SELECT hash(i) // 2 AS k FROM range(8_000_000) r(i)")
    con.close()

    con = store.connect(path, read_only=False)

    def limit() -> str:
        row = con.execute("SELECT current_setting('memory_limit')").fetchone()
        assert row is not None
        return str(row[0])

    try:
        con.execute("SET memory_limit = '512MiB'")  # as `bound_memory` sets it
        with store.scanning_once(con):
            assert limit().endswith(" MiB") and limit() != "512.0 MiB"
            total = con.execute("SELECT count(*), sum(k) FROM t").fetchone()
        assert limit() == "512.0 MiB"
        assert total == con.execute("SELECT count(*), sum(k) FROM t").fetchone()

        with pytest.raises(duckdb.Error), store.scanning_once(con):
            con.execute("SELECT k FROM no_such_table")
        assert limit() == "512.0 MiB"
    finally:
        con.close()


def _probe_side(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> str:
    """What the plan's hash join probes with (its first child): the JSON file or the table."""
    plan = json.loads(con.execute(f"EXPLAIN (FORMAT json) {sql}", params).fetchall()[0][1])

    def join(node: dict[str, Any]) -> dict[str, Any] | None:
        if node["name"] == "HASH_JOIN":
            return node
        return next(filter(None, map(join, node["children"])), None)

    found = next(filter(None, map(join, plan)))
    return "json" if "READ_JSON" in json.dumps(found["children"][0]) else "table"


def test_a_large_staged_load_is_probed_by_its_files(tmp_path: Path) -> None:
    """DuckDB estimates a JSON file at a few rows and builds its hash join on it, probing with
    the number table (one row group: one thread for the whole insert); inside
    `build_side_as_written` the files probe. The setting is given back after, and after a
    statement that failed."""
    staged = tmp_path / "rows.json"
    staged.write_text(json.dumps({"n": list(range(50_000)), "v": ["x"] * 50_000}))
    con = store.connect(tmp_path / "t.duckdb", read_only=False)
    try:
        con.execute("CREATE TABLE numbers AS SELECT range AS number FROM range(100000)")
        sql = (
            "SELECT s.v FROM (SELECT unnest(n) AS n, unnest(v) AS v FROM read_json($1, "
            "format='unstructured', columns={'n': 'INTEGER[]', 'v': 'VARCHAR[]'})) s "
            "JOIN numbers m ON m.number = s.n"
        )
        assert _probe_side(con, sql, [str(staged)]) == "table"  # why the wrapper exists
        con.execute("SET disabled_optimizers = 'top_n'")  # one the caller had set
        with store.build_side_as_written(con):
            assert _probe_side(con, sql, [str(staged)]) == "json"
            assert con.execute(f"SELECT count(*) FROM ({sql})", [str(staged)]).fetchone() == (
                50_000,
            )
        setting = "SELECT current_setting('disabled_optimizers')"
        assert con.execute(setting).fetchone() == ("top_n",)
        with pytest.raises(duckdb.Error), store.build_side_as_written(con):
            con.execute("SELECT * FROM no_such_table")
        assert con.execute(setting).fetchone() == ("top_n",)
    finally:
        con.close()


def test_a_scan_once_inside_a_transaction_holding_much_still_runs(tmp_path: Path) -> None:
    """The cap leaves room above what the connection holds already (a transaction's rows, its
    temp tables): a fixed 32 MiB cap failed once a one-note edit at 100,000 notes held ~30 MiB
    at its links scan (out of memory, which aborted the whole transaction)."""
    path = tmp_path / "t.duckdb"
    con = store.connect(path, read_only=False)
    con.execute("CREATE TABLE t AS SELECT hash(i) // 2 AS k FROM range(8_000_000) r(i)")
    con.execute("CREATE TABLE held (k BIGINT, s VARCHAR)")
    con.close()

    con = store.connect(path, read_only=False)
    try:
        con.execute("SET memory_limit = '512MiB'")
        with store.transaction(con):
            con.execute(
                "INSERT INTO held SELECT i, repeat('x', 40) || i FROM range(1_000_000) r(i)"
            )
            con.execute("CREATE TEMP TABLE kept AS SELECT * FROM held")
            row = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()
            assert row is not None and row[0] > store.SCAN_HEADROOM_MIB * 2**20, row
            with store.scanning_once(con):
                cap = con.execute("SELECT current_setting('memory_limit')").fetchone()
                assert cap is not None and cap[0].endswith(" MiB"), cap
                assert float(cap[0].split()[0]) >= row[0] / 2**20 - 1 + store.SCAN_HEADROOM_MIB
                total = con.execute("SELECT count(*) FROM t WHERE k % 1009 = 2000").fetchone()
                links = con.execute("SELECT count(*), sum(k) FROM t").fetchone()
        assert total == (0,) and links is not None and links[0] == 8_000_000
        assert con.execute("SELECT count(*) FROM held").fetchone() == (1_000_000,)
    finally:
        con.close()


def test_a_process_ends_with_no_shared_reader_thread_left_in_duckdb(tmp_path: Path) -> None:
    """At exit every shared reader is closed and its watcher (a daemon thread) has ended: a
    daemon thread still inside DuckDB when the interpreter finalizes aborts the process."""
    root = tmp_path / "v"
    make_vault(root).close()
    code = textwrap.dedent(
        f"""
        import atexit, threading

        def left() -> None:  # registered first, so it runs after vaultmem's own exit handler
            alive = [t.name for t in threading.enumerate() if t.name == "vaultmem-shared-reader"]
            print("left:", alive)

        atexit.register(left)
        from pathlib import Path
        from vaultmem.storage import store
        reader = store.SharedReader(Path({str(index_of(root))!r}), idle_s=3600)
        with reader.use() as con:
            con.execute("SELECT count(*) FROM notes").fetchall()
        assert reader.is_open
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "left: []"


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from vaultmem.files.lock import writer_lock
    from vaultmem.storage import store
    index = Path(sys.argv[1])
    with writer_lock(index.parent):
        con = store.connect(index, read_only=False)
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
        con.close()
    """
)


def test_a_refused_reader_waits_for_the_writer_lock_not_with_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vaultmem writer holds the index only inside its writer lock: a reader DuckDB
    refuses waits on that lock and opens once it is let go, instead of trying the open again
    and again (each refused open is ~10 ms of DuckDB's start-up; the backoff grew to 0.2 s
    between tries, so a reader got in up to that long after the writer was done)."""
    root = tmp_path / "v"
    make_vault(root).close()
    index = index_of(root)
    opens: list[float] = []
    engine = store.duckdb  # the module store opens DuckDB through
    real_connect = engine.connect

    def counted(*args: Any, **kwargs: Any) -> Any:
        opens.append(time.monotonic())
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(engine, "connect", counted)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(index), "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "holding\n"
        con = store.connect(index, read_only=True, timeout_s=60)
        try:
            assert con.execute("SELECT count(*) FROM notes").fetchone() == (1,)
        finally:
            con.close()
    finally:
        writer.communicate(timeout=60)
    # One refused open, then one once the writer let go (the backoff made ~10 in 1.5 s).
    assert len(opens) <= 3, len(opens)


def test_a_writer_never_waits_for_its_own_lock(tmp_path: Path) -> None:
    from vaultmem.files.lock import wait_for_writer, writer_lock

    with writer_lock(tmp_path):
        assert not wait_for_writer(tmp_path, time.monotonic() + 30)
    assert not wait_for_writer(tmp_path, time.monotonic() + 30)  # let go: nobody holds it
    assert not wait_for_writer(tmp_path / "none", time.monotonic() + 30)  # no lock file


def test_threads_of_one_process_take_turns_with_the_file_instead_of_failing(
    tmp_path: Path,
) -> None:
    """DuckDB refuses a file that another thread of this process has open the other way
    (read-only against read-write). An MCP server's writer and its shared readers meet so:
    a reader reopens for a request between the writer's `release_all` and its open, or opens
    while the writer's connection is open. Both wait their turn; before, the writer's open
    raised `CorruptIndex` (a reconcile takes that for damage) and the reader's failed."""
    import threading

    from vaultmem.files.lock import writer_lock

    make_vault(tmp_path / "v").close()
    path = index_of(tmp_path / "v")
    reader = store.SharedReader(path, lock_path=path.parent / "write.lock")
    stop = threading.Event()
    failures: list[str] = []

    def read_until_stopped() -> None:
        while not stop.is_set():
            try:
                with reader.use() as con:
                    con.execute("SELECT count(*) FROM notes").fetchall()
            except Exception as error:  # what the test is about: none may happen
                failures.append(f"reader: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=read_until_stopped) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(20):
            try:
                with writer_lock(path.parent, timeout_s=10):
                    con = store.connect(path, read_only=False, timeout_s=10)
                    con.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
                    con.close()
            except Exception as error:
                failures.append(f"writer: {type(error).__name__}: {error}")
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        reader.close()
    assert failures == []


READ_HOLDER = textwrap.dedent(
    """
    import sys
    import duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    print("open", flush=True)
    sys.stdin.readline()  # hold the read lock until told to let go
    con.close()
    """
)


def test_a_reader_of_this_process_lets_a_waiting_writer_of_it_go_first(tmp_path: Path) -> None:
    """While a thread of this process waits to open the index for writing (another process
    reads it), a reader of this process that comes later waits for the writer's turn instead
    of opening at once: readers serving requests back to back would otherwise take the file
    back before each of the writer's retries and keep it out until its timeout. The other
    process lets go only when told, so no step depends on how fast this machine is."""
    import threading

    make_vault(tmp_path / "v").close()
    path = index_of(tmp_path / "v")
    other = subprocess.Popen(
        [sys.executable, "-c", READ_HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdin is not None and other.stdout is not None
    events: list[str] = []
    counts: list[object] = []  # asserted here: an assert in a thread cannot fail the test

    def write() -> None:
        con = store.connect(path, read_only=False, timeout_s=60)
        events.append("writer opened")
        time.sleep(0.2)
        con.close()
        events.append("writer closed")

    def read() -> None:
        with store.reading(path, timeout_s=60) as con:
            events.append("reader opened")
            counts.append(con.execute("SELECT count(*) FROM notes").fetchone())

    writer, reader = threading.Thread(target=write), threading.Thread(target=read)
    try:
        assert other.stdout.readline().strip() == "open"
        writer.start()
        deadline = time.monotonic() + 30
        while not store._WRITER_TURNS.waiting(path):  # the writer is retrying
            assert time.monotonic() < deadline, "the writer never started to wait"
            time.sleep(0.01)
        reader.start()
        reader.join(0.5)
        # Both could open now beside the other process's read lock only the reader could:
        # it must not, while the writer waits.
        assert events == [] and reader.is_alive()
    finally:
        other.stdin.write("\n")
        other.stdin.flush()
        other.wait(30)
        writer.join(60)
        reader.join(60)
    assert events == ["writer opened", "writer closed", "reader opened"]
    assert counts == [(1,)]

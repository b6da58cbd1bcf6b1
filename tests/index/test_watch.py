"""`vaultmem watch` as a real subprocess: whatever happens to the vault, the index it leaves equals
a fresh rebuild of a copy of the vault (rename journal included, so human note ids match).

Every wait polls with a deadline; nothing asserts on wall-clock time.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.helpers import dump_index, index_of, state_of
from vaultmem.core.config import load_config
from vaultmem.index.journal import JOURNAL_NAME
from vaultmem.index.reconcile import reconcile
from vaultmem.index.watch import CONFIG_FILES, WatchEvent, _Follower
from vaultmem.storage import store
from vaultmem.storage.schema import DERIVED_TABLES

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30.0
Dump = dict[str, list[tuple[Any, ...]]]
dump = dump_index


# -- helpers ---------------------------------------------------------------------------------


def rebuilt(vault: Path, scratch: Path) -> Dump:
    """The index a rebuild makes of a copy of `vault` (with its rename journal)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(vault, scratch, ignore=shutil.ignore_patterns("index.duckdb*", "*.lock"))
    config = load_config(scratch)
    journal = state_of(vault) / JOURNAL_NAME  # machine-local: not in the copy (issue 29)
    if journal.exists():
        config.state_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(journal, config.state_dir / JOURNAL_NAME)
    reconcile(config, rebuild=True)
    return dump(config.index_path)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


class Watcher:
    """`vaultmem watch --json` on a vault, its JSON lines collected by a reader thread."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.events: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vaultmem",
                "watch",
                "--vault",
                str(vault),
                "--json",
                "--debounce-ms",
                "100",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        wait_for(lambda: self.count("sweep") >= 1, "the start-up sweep")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            envelope = json.loads(line)
            assert envelope["ok"] is True, envelope
            self.events.append(envelope["data"])

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e["kind"] == kind)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self) -> int:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def settles(self, scratch: Path) -> None:
        """Poll until the watcher's index equals a rebuild of a copy of the vault.

        The expected dump is recomputed whenever the rename journal grew, since a rename the
        watcher has not seen yet changes the ids a rebuild assigns.
        """
        index = index_of(self.vault)
        journal = state_of(self.vault) / JOURNAL_NAME
        state: dict[str, Any] = {"journal": None, "expected": None, "actual": None}

        def equal() -> bool:
            text = journal.read_text(encoding="utf-8") if journal.exists() else ""
            if text != state["journal"]:
                state["journal"], state["expected"] = text, rebuilt(self.vault, scratch)
            try:
                state["actual"] = dump(index)
            except duckdb.Error:
                return False  # locked by a batch in progress
            return bool(state["actual"] == state["expected"])

        try:
            wait_for(equal, "the index to equal a rebuild")
        except pytest.fail.Exception:
            actual = {t: set(map(repr, rows)) for t, rows in (state["actual"] or {}).items()}
            expected = {t: set(map(repr, rows)) for t, rows in state["expected"].items()}
            diff = {
                t: (sorted(actual[t] - expected[t])[:3], sorted(expected[t] - actual[t])[:3])
                for t in DERIVED_TABLES
                if state["actual"] and state["actual"][t] != state["expected"][t]
            }
            raise AssertionError(f"index differs from a rebuild: {diff}; {self.stderr}") from None
        assert self.alive(), self.stderr


@pytest.fixture
def watched(example_vault: Path) -> Iterator[Watcher]:
    watcher = Watcher(example_vault)
    try:
        yield watcher
    finally:
        code = watcher.terminate()
    assert code == 0, watcher.stderr
    wait_for(lambda: watcher.count("stopped") == 1, "the stopped event")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def atomic_write(path: Path, text: str) -> None:
    """As editors save: a hidden temp file next to the target, renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- the watcher follows the vault -----------------------------------------------------------


@pytest.mark.slow
def test_follows_notes_and_folders(watched: Watcher, tmp_path: Path) -> None:
    v = watched.vault
    scratch = tmp_path / "rebuilt"
    write(
        v / "Knowledge/Fresh idea.md",
        "# Fresh idea\n\nSee [[DuckDB]] and [[Team/Dana Whitfield]].\n",
    )
    with (v / "Knowledge/DuckDB.md").open("a", encoding="utf-8") as f:
        f.write("\n## Watching\n\nThe watcher keeps the index current.\n")
    text = (v / "Knowledge/BM25 ranking.md").read_text(encoding="utf-8")
    atomic_write(v / "Knowledge/BM25 ranking.md", text + "\nSaved atomically.\n")
    write(v / ".obsidian/workspace.json", "{}")  # churn that must be ignored
    write(v / "Knowledge/Git workflow.sync-conflict-20261201-101010-XYZ.md", "# copy\n")
    watched.settles(scratch)

    os.rename(v / "Journal/2026-11-23.md", v / "Journal/2026-11-23 Monday.md")
    os.rename(v / "Knowledge/Git workflow.md", v / "Projects/Atlas/Git workflow.md")
    os.rename(v / "Knowledge/People", v / "Knowledge/Team")
    write(v / "Projects/Borealis/Research/Ideas.md", "# Ideas\n\n[[Data pipeline#Stages]]\n")
    write(v / "Projects/Borealis/Research/Deep/Notes.md", "# Notes\n\n[[Ideas]]\n")
    shutil.rmtree(v / "Knowledge/Archive")
    (v / "Projects/Atlas/Meeting notes.md").unlink()
    (v / "attachments/atlas-architecture.png").unlink()
    watched.settles(scratch)

    os.rename(v / "Projects/Borealis/Research", v / "Projects/Atlas/Research")
    write(v / "Journal/Broken.md", "---\ntitle: [unclosed\n---\nBody with [[DuckDB]].\n")
    watched.settles(scratch)
    assert watched.count("error") == 0, watched.events

    # Still alive after the malformed note: the next edit is followed too.
    write(v / "Journal/After.md", "# After\n\nStill watching.\n")
    watched.settles(scratch)

    # A config change re-applies the mappings to notes that did not change.
    config = watched.vault / ".vaultmem/config.toml"
    text = config.read_text(encoding="utf-8")
    atomic_write(config, text.replace('scope_id = "2026-w48"', 'scope_id = "2026-w49"'))
    wait_for(lambda: watched.count("config") >= 1, "the config event")
    watched.settles(scratch)
    with store.reading(index_of(watched.vault)) as con:
        scopes = con.execute("SELECT DISTINCT scope_id FROM notes WHERE path LIKE 'Journal/%'")
        assert scopes.fetchall() == [("2026-w49",)]
    # A config file that no longer parses is reported, and the previous config kept.
    atomic_write(config, text + "\n[[mappings\n")
    wait_for(lambda: watched.count("config") >= 2, "the second config event")
    assert "kept the previous config" in watched.events[-1]["message"]
    assert watched.alive()


@pytest.mark.slow
def test_burst_of_writes_ends_as_a_rebuild(watched: Watcher, tmp_path: Path) -> None:
    folder = watched.vault / "Knowledge/Burst"
    folder.mkdir()
    for round_ in range(4):  # 1,000 writes to 250 files
        for i in range(250):
            link = f"[[Note {(i * 7) % 250}]]" if round_ % 2 else "[[DuckDB]]"
            write(folder / f"Note {i}.md", f"# Note {i}\n\nround {round_} word{i} {link}\n")
    watched.settles(tmp_path / "rebuilt")
    # The burst was gathered into batches: far fewer reconciles than files, let alone writes.
    batches = [e for e in watched.events if e["kind"] == "batch"]
    assert 0 < len(batches) < 250, [e["paths"] for e in batches]


@pytest.mark.slow
def test_survives_a_locked_index(watched: Watcher, tmp_path: Path) -> None:
    v = watched.vault
    index = index_of(v)
    # Another process holds the DuckDB file read-write for a few seconds (store.connect waits
    # out a batch the watcher may be writing).
    con = store.connect(index, read_only=False)
    try:
        write(v / "Knowledge/While locked.md", "# While locked\n")
        time.sleep(3)  # the lock is held this long; nothing is asserted on timing
    finally:
        con.close()
    watched.settles(tmp_path / "rebuilt")

    # Another vaultmem writer holds the vault's writer lock: the watcher logs and retries.
    fd = os.open(state_of(v) / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        write(v / "Knowledge/Writer locked.md", "# Writer locked\n")
        wait_for(lambda: watched.count("error") >= 1, "an error event for the lock")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert "locked" in next(e for e in watched.events if e["kind"] == "error")["message"]
    watched.settles(tmp_path / "rebuilt")


# -- pieces, in process ----------------------------------------------------------------------


def test_filter_ignores_tool_folders_and_droppings(example_vault: Path) -> None:
    follower = _Follower(load_config(example_vault), 300, lambda _e: None)
    root = str(follower.config.root)

    def wanted(rel: str) -> bool:
        return follower.wanted(None, f"{root}/{rel}")  # type: ignore[arg-type]

    assert wanted("Knowledge/DuckDB.md")
    assert wanted("attachments/diagram.png")  # attachments change link resolution
    assert wanted("Knowledge/People")  # a folder event stands for its contents
    # A sync tool's conflict copies: a batch unites a topic's, reports the others (issue 29).
    assert wanted("agent-memory/project/atlas/build.sync-conflict-20261120-101500-ABCDEFG.md")
    assert wanted("Knowledge/Git workflow.sync-conflict-20261120-101500-ABCDEFG.md")
    assert wanted("Knowledge/Note (Dana's conflicted copy 2026-11-20).md")
    for rel in CONFIG_FILES:
        assert wanted(rel)
    for rel in (
        ".obsidian/workspace.json",
        ".trash/Old.md",
        ".git/index",
        ".vaultmem/index.duckdb",
        ".vaultmem/write.lock",
        "Knowledge/.DuckDB.md.tmp",
        ".trash/Note.sync-conflict-20261120-101500-ABCDEFG.md",
        "Knowledge/Draft.md~",
    ):
        assert not wanted(rel), rel
    assert not follower.wanted(None, "/elsewhere/Note.md")  # type: ignore[arg-type]


def test_event_to_dict_is_json_safe() -> None:
    event = WatchEvent("batch", paths=2, changed=1, added=1, duration_s=0.084)
    data = event.to_dict()
    assert json.loads(json.dumps(data))["kind"] == "batch"
    assert (data["paths"], data["changed"], data["added"]) == (2, 1, 1)
    assert list(data) == [  # the order of the example line in docs/watch.md
        "kind", "paths", "added", "changed", "removed", "renamed", "touched", "problems",
        "notes", "duration_s", "message", "at",
    ]  # fmt: skip


@pytest.mark.slow
def test_a_note_still_being_written_is_read_again(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vaultmem.index.parallel as parallel_module
    from vaultmem.core.note_model import Problem

    config = load_config(example_vault)
    reconcile(config)
    events: list[WatchEvent] = []
    follower = _Follower(config, 300, events.append)
    follower.next_sweep = float("inf")
    path = "Knowledge/Growing.md"
    write(example_vault / path, "# Growing\n\nFirst half")
    real_read = parallel_module.read_note_fingerprinted
    reads: list[str] = []

    def unstable_once(config: Any, rel: str, *_: Any) -> Any:
        reads.append(rel)
        if rel == path and reads.count(rel) == 1:
            return Problem(rel, "file_unstable", "the file changed while it was read")
        return real_read(config, rel)

    monkeypatch.setattr(parallel_module, "read_note_fingerprinted", unstable_once)
    follower.run_batch([path])
    assert path in follower.pending  # queued again, for after it settles
    write(example_vault / path, "# Growing\n\nFirst half, second half.\n")
    stop = threading.Event()
    wait_for(lambda: (follower.run_due(stop), path not in follower.pending)[1], "the retry")
    assert reads.count(path) == 2
    assert dump(config.index_path) == rebuilt(example_vault, example_vault.parent / "rebuilt")
    assert [e.kind for e in events] == ["batch", "batch"]


def test_a_burst_written_for_longer_than_the_debounce_is_one_batch(example_vault: Path) -> None:
    """watchfiles hands over what gathered within the debounce: a burst still being written
    comes in two or more parts. The first part, a burst by its size, waits for the writes to
    pause, and the rest joins it: one reconcile of every path, equal to a rebuild."""
    from vaultmem.index import watch as watch_module

    config = load_config(example_vault)
    reconcile(config)
    events: list[WatchEvent] = []
    follower = _Follower(config, 300, events.append)
    follower.next_sweep = float("inf")
    folder = example_vault / "Knowledge/Burst"
    folder.mkdir()
    names = [f"Knowledge/Burst/Note {i}.md" for i in range(watch_module.BURST_PATHS + 30)]
    first, rest = names[: watch_module.BURST_PATHS], names[watch_module.BURST_PATHS :]
    stop = threading.Event()
    for part in (first, rest):  # as watchfiles yields a burst outlasting its debounce
        for name in part:
            write(example_vault / name, f"# {name}\n\nburst word{len(name)}\n")
        follower.note_changes(str(example_vault / name) for name in part)
        follower.run_due(stop)
        assert events == [], "a burst ran before its writes paused"
    wait_for(lambda: (follower.run_due(stop), bool(events))[1], "the burst's batch")
    assert [(e.kind, e.paths, e.added) for e in events] == [("batch", len(names), len(names))]
    assert dump(config.index_path) == rebuilt(example_vault, example_vault.parent / "rebuilt")

    follower.note_changes([str(example_vault / first[0])])  # a single save is not held
    write(example_vault / first[0], "# Saved once\n")
    follower.run_due(stop)
    assert [e.paths for e in events] == [len(names), 1]


def test_a_burst_that_goes_on_is_held_no_longer_than_its_bound(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync writing for minutes never pauses for `BURST_QUIET_S`: its paths still run once
    `BURST_MAX_S` has passed since the burst began, while the writes go on."""
    from vaultmem.index import watch as watch_module

    monkeypatch.setattr(watch_module, "BURST_PATHS", 2)
    monkeypatch.setattr(watch_module, "BURST_MAX_S", 0.3)
    config = load_config(example_vault)
    reconcile(config)
    events: list[WatchEvent] = []
    follower = _Follower(config, 300, events.append)
    follower.next_sweep = float("inf")
    (example_vault / "Knowledge/Stream").mkdir()
    stop = threading.Event()
    started = time.monotonic()
    i = 0
    while not events:
        assert time.monotonic() - started < TIMEOUT_S, "the held burst never ran"
        names = [f"Knowledge/Stream/Note {i}.md", f"Knowledge/Stream/Note {i + 1}.md"]
        for name in names:
            write(example_vault / name, f"# {name}\n")
        follower.note_changes(str(example_vault / name) for name in names)
        follower.run_due(stop)
        i += 2
        time.sleep(0.05)  # closer together than BURST_QUIET_S: the writes never pause
    assert events[0].kind == "batch" and events[0].paths >= 4


@pytest.mark.slow
def test_a_config_change_waits_out_a_locked_index(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vaultmem.index.watch as watch_module

    monkeypatch.setattr(watch_module, "LOCK_WAIT_S", 0.1)
    config = load_config(example_vault)
    reconcile(config)
    events: list[WatchEvent] = []
    follower = _Follower(config, 300, events.append)
    follower.next_sweep = float("inf")
    toml = example_vault / ".vaultmem/config.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("2026-w48", "2026-w50"), "utf-8")
    stop = threading.Event()
    fd = os.open(state_of(example_vault) / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        follower.config_due = 0.0
        follower.run_due(stop)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert [e.kind for e in events] == ["error"]
    wait_for(lambda: (follower.run_due(stop), follower.config_due is None)[1], "the rebuild")
    assert [e.kind for e in events] == ["error", "config"]
    assert dump(config.index_path) == rebuilt(example_vault, example_vault.parent / "rebuilt")

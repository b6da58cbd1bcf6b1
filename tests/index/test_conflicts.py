"""Sync-conflict copies (issue 29): outside the managed folder reported and never touched,
inside it united by every kind of reconcile, and a topic read only when its fingerprint moved.
Real files, a real index, the CLI and the watcher as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli, state_of
from tests.index.test_watch import Watcher, wait_for
from vaultmem.core.errors import VaultmemError
from vaultmem.core.names import conflict_copy_original
from vaultmem.index import conflicts
from vaultmem.note.topics import read_topic
from vaultmem.vault import Vault

OUTSIDE = {
    "Knowledge/Note.sync-conflict-20261201-123456-ABCDEFG.md": "Syncthing's copy\n",
    "Knowledge/Note (conflicted copy 2026-12-01).md": "Dropbox's copy\n",
    "Knowledge/Note (Dana's conflicted copy 2026-12-01).md": "Dropbox's, named\n",
    "Knowledge/Note 2.md": "iCloud's copy\n",
    "Knowledge/Merged.md": "# Merged\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n",
}
NOT_COPIES = {
    "Knowledge/Note.md": "# Note\n",
    "Knowledge/Chapter 2.md": "# Chapter 2\nno Chapter.md beside it: a chapter\n",
    # Obsidian's own second note of a name ("Make a copy", `Untitled 1.md`): iCloud starts at 2
    "Knowledge/Note 1.md": "# Note 1\na copy made in Obsidian\n",
    "Knowledge/Rule.md": "# Rule\n=======\nA setext line is no conflict.\n",
}


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True
    return envelope["data"]


def snapshot(vault: Path, rels: list[str]) -> dict[str, tuple[bytes, int]]:
    return {rel: ((vault / rel).read_bytes(), (vault / rel).stat().st_mtime_ns) for rel in rels}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "Notes"
    root.mkdir()
    ok(run_cli("init", str(root), "--json"))
    return root


def test_names_read_as_conflict_copies() -> None:
    assert conflict_copy_original("x.sync-conflict-20261201-123456-ABCDEFG.md") == ("x.md", True)
    assert conflict_copy_original("A b (Dana's conflicted copy 2026-12-01).md") == ("A b.md", True)
    assert conflict_copy_original("Note 2.md") == ("Note.md", False)  # needs Note.md beside it
    for name in ("Note.md", "2026-12-01.md", "Note 1234.md", "x.sync-conflict-.md"):
        assert conflict_copy_original(name) is None, name
    assert conflicts.original_of("shared 2.md") == "shared.md"
    assert conflicts.original_of("Not A Key 2.md") is None  # in the managed folder: keys only


def test_copies_outside_the_managed_folder_are_problems_and_never_touched(vault: Path) -> None:
    for rel, text in {**OUTSIDE, **NOT_COPIES}.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    before = snapshot(vault, [*OUTSIDE, *NOT_COPIES])
    v = ("--vault", str(vault), "--json")
    for _ in range(2):  # the second run is a no-op that keeps the rows
        ok(run_cli("reconcile", *v))
        rows = ok(run_cli("problems", *v))
        got = {(r["path"], r["code"]) for r in rows}
        assert got == {
            *((rel, "conflict_copy") for rel in OUTSIDE if rel != "Knowledge/Merged.md"),
            ("Knowledge/Merged.md", "conflict_markers"),
        }
        copies = [r for r in rows if r["code"] == "conflict_copy"]
        assert all("Knowledge/Note.md" in r["message"] for r in copies)
        assert ok(run_cli("status", *v))["problems"] == len(OUTSIDE)
        assert snapshot(vault, [*OUTSIDE, *NOT_COPIES]) == before
    # The named copies stay out of the index; the numbered one and the merged note are notes.
    paths = {row[0] for row in ok(run_cli("sql", "SELECT path FROM notes", *v))["rows"]}
    assert paths == {"Knowledge/Note.md", "Knowledge/Chapter 2.md", "Knowledge/Rule.md",
                     "Knowledge/Note 1.md", "Knowledge/Note 2.md",
                     "Knowledge/Merged.md"}  # fmt: skip
    # Resolved by hand: the rows go.
    (vault / "Knowledge/Note 2.md").unlink()
    (vault / "Knowledge/Merged.md").write_text("# Merged\nours and theirs\n")
    (vault / "Knowledge/Note.sync-conflict-20261201-123456-ABCDEFG.md").unlink()
    ok(run_cli("reconcile", *v))
    left = {r["path"] for r in ok(run_cli("problems", *v))}
    assert left == {"Knowledge/Note (conflicted copy 2026-12-01).md",
                    "Knowledge/Note (Dana's conflicted copy 2026-12-01).md"}  # fmt: skip


def test_a_per_path_reconcile_reports_the_copies_among_its_paths(vault: Path) -> None:
    for rel, text in {**OUTSIDE, **NOT_COPIES}.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    v = Vault(vault)
    v.reconcile()
    copy = "Knowledge/Note 3.md"
    (vault / copy).write_text("another copy\n")
    marked = "Knowledge/Later.md"
    (vault / marked).write_text("<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n")
    report = v.reconcile(paths=[copy, marked])
    assert report.mode == "paths"
    codes = {(p["path"], p["code"]) for p in v.problems()}
    assert {(copy, "conflict_copy"), (marked, "conflict_markers")} <= codes
    assert len(codes) == len(OUTSIDE) + 2
    (vault / copy).unlink()
    v.reconcile(paths=[copy])
    assert copy not in {p["path"] for p in v.problems()}


def _topic_and_copy(vault: Path, copy_name: str) -> tuple[Path, Path]:
    v = ("--vault", str(vault), "--json")
    stored = ok(run_cli("store", "shared", "Fact from this machine.", *v, cwd=vault))
    topic = vault / str(stored["path"])
    other = topic.read_text().rstrip("\n") + "\n\n## 2026-11-30T10:00:00.000Z\nFact from there.\n"
    copy = topic.parent / copy_name
    copy.write_text(other)
    return topic, copy


@pytest.mark.parametrize(
    "copy_name",
    ["shared.sync-conflict-20261201-123456-ABCDEFG.md", "shared 2.md"],
)
def test_a_per_path_reconcile_unites_a_topic_copy_among_its_paths(
    vault: Path, copy_name: str
) -> None:
    topic, copy = _topic_and_copy(vault, copy_name)
    v = Vault(vault)
    rel = copy.relative_to(vault).as_posix()
    report = v.reconcile(paths=[rel])
    assert report.mode == "paths"
    assert not copy.exists()
    texts = [o.text for o in read_topic("x", topic.read_text()).observations]
    assert texts == ["Fact from there.", "Fact from this machine."]
    topics = v.sql("SELECT path FROM notes WHERE managed").rows
    assert topics == [[topic.relative_to(vault).as_posix()]]
    got = v.get("shared").to_dict()
    assert [o["text"] for o in got["observations"]] == texts  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_watcher_unites_a_topic_copy_a_sync_tool_drops(vault: Path) -> None:
    topic, _ = _topic_and_copy(vault, "placeholder.md")
    (topic.parent / "placeholder.md").unlink()
    watcher = Watcher(vault)
    try:
        # As Syncthing delivers it: a hidden temp file renamed to the copy's name.
        copy = topic.parent / "shared.sync-conflict-20261201-123456-ABCDEFG.md"
        tmp = topic.parent / f".syncthing.{copy.name}.tmp"
        tmp.write_text(topic.read_text() + "\n## 2026-11-30T10:00:00.000Z\nFact from there.\n")
        os.replace(tmp, copy)
        wait_for(lambda: not copy.exists(), "the copy to be united")
        assert (vault / "agent-memory/.trash" / copy.relative_to(vault / "agent-memory")).exists()
        texts = [o.text for o in read_topic("x", topic.read_text()).observations]
        assert texts == ["Fact from there.", "Fact from this machine."]

        def indexed() -> bool:
            try:
                found = Vault(vault).sql("SELECT count(*) FROM notes WHERE path LIKE '%sync-c%'")
                united = Vault(vault).get("shared").topic.observations
            except VaultmemError:  # the index is being written
                return False
            return found.rows == [[0]] and len(united) == 2

        wait_for(indexed, "the united topic in the index")
    finally:
        assert watcher.terminate() == 0, watcher.stderr


def test_a_full_reconcile_reads_a_topic_only_when_its_fingerprint_moved(vault: Path) -> None:
    v = ("--vault", str(vault), "--json")
    topic = vault / str(ok(run_cli("store", "shared", "Base fact.", *v, cwd=vault))["path"])
    ok(run_cli("reconcile", *v))
    record = json.loads((state_of(vault) / conflicts.RECORD_NAME).read_text())
    rel = topic.relative_to(vault).as_posix()
    assert record["topics"][rel] == [topic.stat().st_size, topic.stat().st_mtime_ns]
    # The same size and mtime, other bytes: reconcile cannot tell, and reads nothing.
    stat = topic.stat()
    text = topic.read_text()
    blocked = "\n<<<<<<< a\n=======\n>>>>>>> b\n"
    cut = text[: len(text) - len(blocked)] + blocked
    topic.write_text(cut)
    os.utime(topic, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    ok(run_cli("reconcile", *v))
    assert topic.read_text() == cut
    # Its fingerprint moves: read, and its conflict united.
    os.utime(topic, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    ok(run_cli("reconcile", *v))
    assert "<<<<<<<" not in topic.read_text()

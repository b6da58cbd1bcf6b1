"""Hostile inputs to the reconcile pipeline: one bad file is a problem row, never an abort.

Each test reproduces a failure a hostile run found (issue 16) and pins the fix; the read-size
test pins the fix for the 100,000-note MemoryError (issue 14).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import vaultmem.files.scan as scan
import vaultmem.index.parallel as parallel
import vaultmem.index.reconcile as reconcile_module
from tests.index.test_reconcile import assert_equals_rebuild, query, write
from vaultmem.core.config import Config
from vaultmem.core.errors import VaultmemError
from vaultmem.files.lock import writer_lock
from vaultmem.index.reconcile import reconcile
from vaultmem.okf.bundle import name_problem
from vaultmem.vault import Vault

pytestmark = pytest.mark.timeout(120)  # a hostile input must never hang the suite


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    """An empty vault, the whole of it one project scope."""
    root = tmp_path / "vault"
    root.mkdir()
    return Vault.init(root).config


def problems(config: Config) -> list[tuple[Any, ...]]:
    return query(config, "SELECT path, code, message FROM problems ORDER BY path, code")


def test_a_note_read_asks_for_what_the_note_holds(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading asks for the file's size + 1, not the 5 MB cap: a buffer of the cap per note
    left one memory mapping per note behind and ended a 100k-note reconcile in MemoryError."""
    write(vault.root, "Small.md", "# Small\n\nbody\n")
    asked: list[int] = []
    real = scan._read_limited

    def recording(handle: Any, limit: int) -> bytes:
        asked.append(limit)
        return real(handle, limit)

    monkeypatch.setattr(scan, "_read_limited", recording)
    data = scan.read_note(vault, "Small.md")
    assert data == b"# Small\n\nbody\n"
    assert asked == [len(data) + 1]
    assert vault.max_note_bytes > 1000 * len(data)


def test_an_oversized_note_is_read_up_to_the_cap_plus_one(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    small = replace(vault, max_note_bytes=100)
    write(vault.root, "Big.md", "x" * 5000)
    asked: list[int] = []
    real = scan._read_limited
    monkeypatch.setattr(scan, "_read_limited", lambda h, n: (asked.append(n), real(h, n))[1])
    data = scan.read_note(small, "Big.md")
    assert isinstance(data, bytes) and len(data) == 101 and asked == [101]


def test_a_non_utf8_name_anywhere_is_a_problem_row(vault: Config) -> None:
    write(vault.root, "Note.md", "# Note\n\n![[x.png]]\n")
    os.makedirs(vault.root / "attachments", exist_ok=True)
    with open(os.fsencode(vault.root) + b"/attachments/x\xff.png", "wb") as handle:
        handle.write(b"png")
    with open(os.fsencode(vault.root) + b"/Bad\xfe.md", "wb") as handle:
        handle.write(b"# bad name\n")
    report = reconcile(vault)
    assert report.notes == 1
    rows = problems(vault)
    assert [(p, c) for p, c, _ in rows] == [
        ("Bad\ufffd.md", "file_unreadable"),
        ("attachments/x\ufffd.png", "file_unreadable"),
    ]
    assert all("UTF-8" in m for _, _, m in rows)
    assert_equals_rebuild(vault)


def test_watch_keeps_running_beside_a_non_utf8_name(vault: Config) -> None:
    from vaultmem.index.watch import WatchEvent, _Follower

    write(vault.root, "Note.md", "# Note\n")
    with open(os.fsencode(vault.root) + b"/x\xff.png", "wb") as handle:
        handle.write(b"png")
    events: list[WatchEvent] = []
    follower = _Follower(vault, 300, events.append)
    follower.run_batch(["Note.md"])  # the first batch is the full start-up reconcile
    assert [e.kind for e in events] == ["batch"], events


def test_a_word_longer_than_2_mb_is_indexed(vault: Config) -> None:
    """DuckDB's CSV reader refuses lines over 2 MB by default: a postings line holds a term."""
    write(vault.root, "Long.md", "# Long\n\n" + "a" * 2_200_000 + "\n")
    write(vault.root, "Short.md", "# Short\n\nzebra\n")
    report = reconcile(vault)
    assert report.notes == 2
    assert query(vault, "SELECT count(*) FROM postings WHERE term = 'zebra'") == [(1,)]


def test_a_path_longer_than_path_max_is_a_problem_row(vault: Config) -> None:
    write(vault.root, "Note.md", "# Note\n")
    cwd = os.getcwd()
    os.chdir(vault.root)
    try:  # relative steps: an absolute path this long cannot be created either
        depth = len(os.fsencode(vault.root))
        while depth < scan.MAX_PATH_BYTES + 300:
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
            depth += 201
        with open("Deep.md", "w", encoding="utf-8") as handle:
            handle.write("# Deep\n")
    finally:
        os.chdir(cwd)
    report = reconcile(vault)
    assert report.notes == 1
    rows = problems(vault)
    assert rows and all(c == "file_unreadable" for _, c, _ in rows)
    assert any("longer than" in m for _, _, m in rows)


def test_a_damaged_rename_journal_costs_one_line_not_the_index(vault: Config) -> None:
    write(vault.root, "A.md", "# A\n\nalpha\n")
    reconcile(vault)
    (vault.root / "A.md").rename(vault.root / "B.md")
    reconcile(vault)  # journals A → B
    journal = vault.state_dir / "renames.jsonl"
    good = journal.read_bytes()
    journal.write_bytes(b'{"id": "n-x", "from": "\xff", "to"\n' + good + b'{"id": "n-')
    report = reconcile(vault, rebuild=True)
    assert any("renames.jsonl" in w for w in report.warnings)
    ids = query(vault, "SELECT id FROM notes WHERE path = 'B.md'")
    assert ids and ids[0][0] != "n-x"
    write(vault.root, "C.md", "# C\n")
    reconcile(vault)
    (vault.root / "C.md").rename(vault.root / "D.md")
    reconcile(vault)  # appends after the torn line: this record must not be swallowed
    from vaultmem.index.journal import read_renames

    assert "D.md" in read_renames(vault.state_dir).ids


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_fifo_or_socket_named_like_a_note_is_a_problem_row(vault: Config, kind: str) -> None:
    write(vault.root, "Real.md", "# Real\n")
    special = vault.root / "Pipe.md"
    if kind == "fifo":
        os.mkfifo(special)
    else:
        # AF_UNIX paths are short: bind from inside the folder.
        cwd = os.getcwd()
        os.chdir(vault.root)
        try:
            sock = socket.socket(socket.AF_UNIX)
            sock.bind("Pipe.md")
            sock.close()
        finally:
            os.chdir(cwd)
    report = reconcile(vault)
    assert report.notes == 1
    assert [(p, c) for p, c, _ in problems(vault)] == [("Pipe.md", "file_unreadable")]
    assert_equals_rebuild(vault)


def test_notes_parse_without_the_writer_lock(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long parse must not lock out `store`: the lock is taken only for the write."""
    write(vault.root, "A.md", "# A\n\nalpha\n")
    free_while_parsing: list[bool] = []
    real = parallel.parse_note

    def probing(*args: Any, **kwargs: Any) -> Any:
        try:
            with writer_lock(vault.state_dir, timeout_s=0):
                free_while_parsing.append(True)
        except VaultmemError:
            free_while_parsing.append(False)
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel, "parse_note", probing)
    reconcile(vault)
    assert free_while_parsing == [True]


def test_a_file_changed_by_another_writer_during_the_parse_is_read_again(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the lock is free, `store` may rewrite a note and index it: the run that parsed
    the old bytes must notice (the index changed) and not write its stale rows over it."""
    write(vault.root, "A.md", "# A\n\nold words\n")
    write(vault.root, "B.md", "# B\n")
    reconcile(vault)
    write(vault.root, "A.md", "# A\n\nmiddle words\n")
    real = parallel.parse_note
    done = [False]

    def interfering(path: str, data: bytes, **kwargs: Any) -> Any:
        if not done[0]:
            done[0] = True
            write(vault.root, "A.md", "# A\n\nnewest words\n")
            reconcile(vault, paths=["A.md"])  # another writer, between read and write
        return real(path, data, **kwargs)

    monkeypatch.setattr(parallel, "parse_note", interfering)
    # A change this small is otherwise parsed under the lock (`write_small`), where no other
    # writer can come between: the usual path is the one that must notice.
    monkeypatch.setattr(reconcile_module, "SMALL_WRITE_BYTES", -1)
    reconcile(vault)
    monkeypatch.setattr(parallel, "parse_note", real)
    assert query(vault, "SELECT count(*) FROM postings WHERE term = 'newest'") == [(1,)]
    assert_equals_rebuild(vault)


@pytest.mark.unprivileged
def test_a_read_only_state_folder_is_a_clear_error(vault: Config) -> None:
    write(vault.root, "A.md", "# A\n")
    reconcile(vault)
    write(vault.root, "B.md", "# B\n")
    os.chmod(vault.state_dir, 0o555)
    try:
        with pytest.raises(VaultmemError) as caught:
            reconcile(vault)
    finally:
        os.chmod(vault.state_dir, 0o755)
    assert str(vault.state_dir) in str(caught.value) and "chmod" in caught.value.hint


def test_problems_of_a_note_that_failed_once_come_back_with_its_bytes(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(vault.root, "A.md", "---\ntitle: [unclosed\n---\n# A\n")
    reconcile(vault)
    before = problems(vault)
    assert [c for _, c, _ in before] == ["frontmatter_invalid"]
    real = parallel.read_note_fingerprinted
    monkeypatch.setattr(
        parallel,
        "read_note_fingerprinted",
        lambda config, path, *_: scan.Problem(path, "file_unstable", "changed while read"),
    )
    os.utime(vault.root / "A.md", ns=(1, 1))  # same bytes, new fingerprint: read again
    reconcile(vault)
    monkeypatch.setattr(parallel, "read_note_fingerprinted", real)
    os.utime(vault.root / "A.md", ns=(2, 2))
    report = reconcile(vault)
    assert report.touched == 1
    assert problems(vault) == before
    assert_equals_rebuild(vault)


def test_staging_folders_of_dead_runs_are_removed(
    vault: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp / f"{parallel.STAGING_PREFIX}{int(dead.stdout)}-abc"
    live = tmp / f"{parallel.STAGING_PREFIX}{os.getppid()}-def"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "chunk-000000.postings.tsv").write_text("x\t0\t0\tbody\t1\n", encoding="utf-8")
    write(vault.root, "A.md", "# A\n")
    reconcile(vault)
    assert not stale.exists() and live.exists()
    assert not [p for p in tmp.iterdir() if p not in (live,)]  # this run's folder went too


def test_a_colon_in_a_bundle_name_is_not_called_absolute() -> None:
    reason = name_problem("a:b.md")
    assert reason is not None and "absolute" not in reason and ":" in reason
    assert name_problem("C:/win.md") == "absolute path"

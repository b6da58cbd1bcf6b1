"""The rename journal: replay, and compaction to the entries it replays to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vaultmem.index import journal as journal_module
from vaultmem.index.journal import (
    FACTS_NAME,
    JOURNAL_NAME,
    RenameJournal,
    append_renames,
    compact_renames,
    read_renames,
    replay,
)
from vaultmem.index.plan import journal_digest


def test_a_path_moved_back_leaves_one_entry() -> None:
    ids: dict[str, str] = {}
    replay(ids, [("n-1", "a.md", "b.md"), ("n-1", "b.md", "a.md"), ("n-2", "c.md", "b.md")])
    assert ids == {"a.md": "n-1", "b.md": "n-2"}


def test_a_long_journal_is_compacted_to_what_it_replays_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "COMPACT_LINES", 4)
    moves = [("n-1", "a.md", "b.md"), ("n-1", "b.md", "a.md")] * 5 + [("n-2", "c.md", "d.md")]
    append_renames(tmp_path, moves)
    before = read_renames(tmp_path)
    assert before.lines == 11 and before.ids == {"a.md": "n-1", "d.md": "n-2"}
    assert compact_renames(tmp_path, RenameJournal(tmp_path))
    after = read_renames(tmp_path)
    assert after.ids == before.ids and after.lines == 2
    assert not compact_renames(tmp_path, RenameJournal(tmp_path))  # short enough now
    append_renames(tmp_path, [("n-2", "d.md", "e.md")])  # appends go on after it
    assert read_renames(tmp_path).ids == {"a.md": "n-1", "e.md": "n-2"}


def test_a_journal_with_an_unreadable_line_is_not_compacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "COMPACT_LINES", 1)
    append_renames(tmp_path, [("n-1", "a.md", "b.md"), ("n-1", "b.md", "a.md")] * 3)
    path = tmp_path / JOURNAL_NAME
    path.write_bytes(path.read_bytes() + b'{"id": "n-')
    damaged = read_renames(tmp_path)
    assert damaged.skipped == 1
    assert not compact_renames(tmp_path, RenameJournal(tmp_path))
    assert path.read_bytes().endswith(b'{"id": "n-')


def test_a_line_of_two_renames_is_unreadable_as_it_always_was(tmp_path: Path) -> None:
    """The whole journal is decoded in one call when it can be; a line holding two records
    (hand-edited) is still one unreadable line, as decoding line by line counts it."""
    append_renames(tmp_path, [("n-1", "a.md", "b.md")])
    path = tmp_path / JOURNAL_NAME
    two = b'{"id": "n-2", "from": "c.md", "to": "d.md"}, {"id": "n-3", "from": "e", "to": "f"}'
    path.write_bytes(path.read_bytes() + two + b"\n")
    journal = read_renames(tmp_path)
    assert (journal.ids, journal.skipped, journal.lines) == ({"b.md": "n-1"}, 1, 2)


def test_the_kept_digest_stands_for_the_journal_until_the_file_changes(tmp_path: Path) -> None:
    """A write reads the journal once and keeps its digest beside it; the next write takes
    the digest without reading the file, and an append (a new signature) is read again."""
    append_renames(tmp_path, [("n-1", "a.md", "b.md"), ("n-2", "c.md", "d.md")])
    first = RenameJournal(tmp_path)
    assert first.facts.digest == journal_digest({"b.md": "n-1", "d.md": "n-2"})
    assert (tmp_path / FACTS_NAME).exists()

    kept = RenameJournal(tmp_path)
    facts = kept.facts
    assert facts.digest == first.facts.digest
    assert (facts.lines, facts.entries, facts.skipped) == (2, 2, 0)
    assert kept._journal is None  # answered from the kept facts: the file was not read
    assert dict(kept) == {"b.md": "n-1", "d.md": "n-2"}  # entries, when asked for, are read

    append_renames(tmp_path, [("n-1", "b.md", "e.md")])
    moved = RenameJournal(tmp_path)
    assert moved.facts.digest == journal_digest({"e.md": "n-1", "d.md": "n-2"})
    assert moved.facts.digest != first.facts.digest
    assert moved._journal is not None


@pytest.mark.parametrize("facts", [b"", b"{", b'{"digest": 1}', b'{"signature": [1, 2]}'])
def test_damaged_facts_are_no_facts(tmp_path: Path, facts: bytes) -> None:
    append_renames(tmp_path, [("n-1", "a.md", "b.md")])
    (tmp_path / FACTS_NAME).write_bytes(facts)
    journal = RenameJournal(tmp_path)
    assert journal.facts.digest == journal_digest({"b.md": "n-1"})
    assert journal._journal is not None
    again = RenameJournal(tmp_path)  # the facts kept by that reading replace the damaged
    assert again.facts.digest == journal.facts.digest and again._journal is None


def test_facts_kept_of_another_journal_are_not_taken(tmp_path: Path) -> None:
    """Facts name the file they were read from (size, mtime, ctime, inode): a journal
    rewritten to the same size, its mtime set back, is read again."""
    append_renames(tmp_path, [("n-1", "a.md", "b.md")])
    path = tmp_path / JOURNAL_NAME
    RenameJournal(tmp_path).facts.digest  # noqa: B018 - keeps the facts
    before = path.stat()
    path.write_bytes(path.read_bytes().replace(b"n-1", b"n-9"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert RenameJournal(tmp_path).facts.digest == journal_digest({"b.md": "n-9"})


def test_no_journal_keeps_no_facts(tmp_path: Path) -> None:
    journal = RenameJournal(tmp_path)
    assert journal.facts.digest == journal_digest({}) and len(journal) == 0
    assert not (tmp_path / FACTS_NAME).exists()

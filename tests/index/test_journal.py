"""The rename journal: replay, and compaction to the entries it replays to."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.index import journal as journal_module
from vaultmem.index.journal import (
    JOURNAL_NAME,
    append_renames,
    compact_renames,
    read_renames,
    replay,
)


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
    assert compact_renames(tmp_path, before)
    after = read_renames(tmp_path)
    assert after.ids == before.ids and after.lines == 2
    assert not compact_renames(tmp_path, after)  # short enough now
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
    assert not compact_renames(tmp_path, damaged)
    assert path.read_bytes().endswith(b'{"id": "n-')

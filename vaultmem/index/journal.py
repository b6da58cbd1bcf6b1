"""The rename journal: how a human note keeps its id across renames, even through a rebuild.

A human note's id is derived from the path it was first seen at. When reconcile sees a note
move (same bytes at a new path, old path gone) it appends one JSON line to
`<state>/renames.jsonl`; a rebuild replays the file, so ids survive deleting the index.
The journal lives in `.vaultmem/`, never in the vault: deleting it loses only rename history.
Appends are single `write` calls of one line, fsynced, so a crash leaves at most a torn last
line, which replay skips; so does any line that is not valid UTF-8 JSON (counted, so that
reconcile can warn).

Every write replays the journal, and a folder moved back and forth adds a line per note each
time: a journal grown past `COMPACT_LINES` and twice its replayed entries is rewritten as one
line per entry, atomically (`compact_renames`), which replays to the very same ids.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from vaultmem.core.atomic import replace_file

JOURNAL_NAME = "renames.jsonl"

COMPACT_LINES = 1_000
"""A journal of more lines than this, and more than twice its replayed entries, is compacted:
20,662 lines of folder moves replayed to 2,954 entries in 0.10-0.15 s, paid by every write."""


class Journal(NamedTuple):  # not a dataclass: nothing compiled at import (index/parallel.py)
    """The replayed journal: {current path: id}, how many lines could not be read, and how
    many lines it has."""

    ids: dict[str, str]
    skipped: int = 0
    lines: int = 0


def read_renames(state_dir: Path) -> Journal:
    """Replay the journal into {current path: id} for every path that inherited an id.

    Each line is decoded on its own: a torn line (a crash mid-append) or a damaged byte costs
    that one rename, never the journal, so reconcile, rebuild and store keep working.
    """
    path_to_id: dict[str, str] = {}
    skipped = lines = 0
    try:
        data = (state_dir / JOURNAL_NAME).read_bytes()
    except FileNotFoundError:
        return Journal(path_to_id)
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        lines += 1
        try:
            entry = json.loads(line.decode("utf-8"))
            note_id, old, new = str(entry["id"]), str(entry["from"]), str(entry["to"])
        except (ValueError, KeyError, TypeError):
            skipped += 1  # the rename is lost; the note falls back to its path's id
            continue
        replay(path_to_id, ((note_id, old, new),))
    return Journal(path_to_id, skipped, lines)


def compact_renames(state_dir: Path, journal: Journal) -> bool:
    """Rewrite a journal grown past `COMPACT_LINES` and twice its entries as one line per
    entry (a path that inherited an id, "moved" from itself), atomically; a journal with an
    unreadable line is left as it is (what was lost stays on record). Under the writer lock:
    an append in between would be lost. Whether it was rewritten (a folder that cannot be
    written keeps the long journal: it costs time, not ids)."""
    if journal.skipped or journal.lines <= max(COMPACT_LINES, 2 * len(journal.ids)):
        return False
    entries = sorted((note_id, path, path) for path, note_id in journal.ids.items())
    try:
        replace_file(state_dir / JOURNAL_NAME, _lines(entries))
    except OSError:
        return False
    return True


def replay(path_to_id: dict[str, str], renames: Iterable[tuple[str, str, str]]) -> None:
    """Apply (id, old path, new path) records to {path: id} as reading the journal does: the
    new path inherits the id, the old path's entry for it goes. A run applies its own renames
    so, and its ids then come from the journal the next run reads."""
    for note_id, old, new in renames:
        if path_to_id.get(old) == note_id:
            del path_to_id[old]
        path_to_id[new] = note_id


def append_renames(state_dir: Path, renames: Iterable[tuple[str, str, str]]) -> None:
    """Append (id, old path, new path) records durably."""
    lines = _lines(renames)
    if not lines:
        return
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(state_dir / JOURNAL_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        if end and os.pread(fd, 1, end - 1) != b"\n":
            lines = b"\n" + lines  # end a torn last line, or it would swallow this record
        os.write(fd, lines)
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(renames: Iterable[tuple[str, str, str]]) -> bytes:
    """(id, old path, new path) records as the journal's lines."""
    return "".join(
        json.dumps({"id": i, "from": old, "to": new}, ensure_ascii=False) + "\n"
        for i, old, new in renames
    ).encode("utf-8")

"""The rename journal: how a human note keeps its id across renames, even through a rebuild.

A human note's id is derived from the path it was first seen at. When reconcile sees a note
move (same bytes at a new path, old path gone) it appends one JSON line to
`.vaultmem/renames.jsonl`; a rebuild replays the file, so ids survive deleting the index.
The journal lives in `.vaultmem/`, never in the vault: deleting it loses only rename history.
Appends are single `write` calls of one line, fsynced, so a crash leaves at most a torn last
line, which replay skips.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

JOURNAL_NAME = "renames.jsonl"


def read_renames(state_dir: Path) -> dict[str, str]:
    """Replay the journal into {current path: id} for every path that inherited an id."""
    path_to_id: dict[str, str] = {}
    try:
        text = (state_dir / JOURNAL_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return path_to_id
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            note_id, old, new = str(entry["id"]), str(entry["from"]), str(entry["to"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line after a crash: skip it, the rename is re-detected
        if path_to_id.get(old) == note_id:
            del path_to_id[old]
        path_to_id[new] = note_id
    return path_to_id


def append_renames(state_dir: Path, renames: Iterable[tuple[str, str, str]]) -> None:
    """Append (id, old path, new path) records durably."""
    lines = "".join(
        json.dumps({"id": i, "from": old, "to": new}, ensure_ascii=False) + "\n"
        for i, old, new in renames
    )
    if not lines:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / JOURNAL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, lines.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)

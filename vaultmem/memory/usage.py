"""How often each note is used: an append-only log in `<state>/usage.jsonl`.

A use is a read an agent chose to make: `get` of a topic, `read` of any note, or an explicit
`used` ("this note helped"). A recall that merely returns a note is not a use: counting hits
let repeated questions push catch-all notes up. One JSON line per use (`{"id": <note id>, "at":
<ISO UTC>}`), appended with a single `O_APPEND` write so concurrent writers never interleave.
The log lives beside the index, not in it, so rebuilding the index keeps every count. A line
that does not parse (a torn write after a crash) is skipped. Recording is best effort: a
failed append never fails the read it records.

Recall weighs uses decayed with a half-life (`decayed_uses`), so a note used often last year
does not outrank one used this week, and caps their weight (see `recall.py`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

USAGE_FILE = "usage.jsonl"
HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class Usage:
    """Uses of one note: how many, and the latest (ISO UTC)."""

    count: int
    last_access: str


def record(state_dir: Path, note_ids: Iterable[str], at: str) -> bool:
    """Append one line per note id; False when the log could not be written."""
    lines = "".join(json.dumps({"id": i, "at": at}) + "\n" for i in note_ids if i)
    if not lines:
        return True
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(state_dir / USAGE_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _entries(state_dir: Path) -> Iterator[tuple[str, str]]:
    try:
        text = (state_dir / USAGE_FILE).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        note_id, at = row.get("id"), row.get("at")
        if isinstance(note_id, str) and isinstance(at, str):
            yield note_id, at


def read_usage(state_dir: Path) -> dict[str, Usage]:
    """Use count and last use per note id."""
    counts: dict[str, Usage] = {}
    for note_id, at in _entries(state_dir):
        old = counts.get(note_id)
        if old is None:
            counts[note_id] = Usage(1, at)
        else:
            counts[note_id] = Usage(old.count + 1, max(old.last_access, at))
    return counts


def decayed_uses(
    state_dir: Path, now: datetime, half_life_days: float = HALF_LIFE_DAYS
) -> dict[str, float]:
    """note id → Σ 0.5 ** (age in days / half-life) over its uses; a use dated in the future
    (a clock step) counts as now, an unreadable date not at all."""
    out: dict[str, float] = {}
    for note_id, at in _entries(state_dir):
        try:
            moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            continue
        days = max(0.0, (now - moment).total_seconds() / 86400)
        out[note_id] = out.get(note_id, 0.0) + 0.5 ** (days / half_life_days)
    return out

"""How often each topic is recalled: an append-only log in `.vaultmem/usage.jsonl`.

One JSON line per recall (`{"id": <topic id>, "at": <ISO UTC>}`), appended with a single
`O_APPEND` write so concurrent recalls never interleave. The log lives beside the index, not in
it, so rebuilding the index keeps every count. A line that does not parse (a torn write after a
crash) is skipped. Counting is best effort: a failed append never fails the read it records.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

USAGE_FILE = "usage.jsonl"


@dataclass(frozen=True, slots=True)
class Usage:
    """Recalls of one topic: how many, and the latest (ISO UTC)."""

    count: int
    last_access: str


def record(state_dir: Path, topic_ids: Iterable[str], at: str) -> bool:
    """Append one line per topic id; False when the log could not be written."""
    lines = "".join(json.dumps({"id": i, "at": at}) + "\n" for i in topic_ids if i)
    if not lines:
        return True
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / USAGE_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def read_usage(state_dir: Path) -> dict[str, Usage]:
    """Access count and last access per topic id."""
    counts: dict[str, Usage] = {}
    try:
        text = (state_dir / USAGE_FILE).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return counts
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        topic_id, at = row.get("id"), row.get("at")
        if not isinstance(topic_id, str) or not isinstance(at, str):
            continue
        old = counts.get(topic_id)
        if old is None:
            counts[topic_id] = Usage(1, at)
        else:
            counts[topic_id] = Usage(old.count + 1, max(old.last_access, at))
    return counts

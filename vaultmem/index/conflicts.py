"""Sync-conflict copies of topics: found by reconcile, united into their topic, trashed.

Sync tools keep both sides of a clash as two files: Syncthing `key.sync-conflict-20261201-
123456-ABCDEFG.md`, Dropbox `key (conflicted copy 2026-12-01).md`, iCloud and OneDrive
`key 2.md`; git leaves `<<<<<<<`/`=======`/`>>>>>>>` blocks inside the file. None of these names
is a valid topic key, so inside the managed folder they are recognised without a guess: each
copy's observations whose stamps the topic lacks are added to the topic (`topics.unite`, once
each, read in stamp order), under the topic's lock, and the copy moves to the managed folder's
`.trash/`; a topic holding conflict markers is replaced by the union of its two sides. Files
outside the managed folder are people's, and never touched here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from vaultmem.core.config import Config
from vaultmem.core.names import KEY_RE
from vaultmem.files import managed
from vaultmem.note.topics import conflict_sides, has_conflict_markers, unite

COPY_NAMES = (
    re.compile(r"^(?P<key>.+?)\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]{7}\.md$"),  # Syncthing
    re.compile(r"^(?P<key>.+?) \([^()]*conflicted copy[^()]*\)\.md$"),  # Dropbox
    re.compile(r"^(?P<key>.+?) \d{1,3}\.md$"),  # iCloud, OneDrive
)


def original_of(name: str) -> str | None:
    """The topic file name a conflict copy's name stands for (`x 2.md` → `x.md`), or None."""
    for pattern in COPY_NAMES:
        found = pattern.match(name)
        if found and KEY_RE.fullmatch(found.group("key")):
            return found.group("key") + ".md"
    return None


def unite_conflicts(config: Config, now: datetime | None = None) -> list[str]:
    """Unite every conflict copy and conflicted topic of the managed folder; the paths of the
    topics changed (to index) and of the copies moved away."""
    moment = now or datetime.now(UTC)
    changed: list[str] = []
    for rel in managed.list_topics(config):
        folder, _, name = rel.rpartition("/")
        original = original_of(name)
        if original is not None:
            target = f"{folder}/{original}"
            with managed.topic_lock(config, target):
                copy = managed.read_text(config, rel, errors="surrogateescape")
                base = managed.read_text(config, target, errors="surrogateescape")
                if copy is None:
                    continue
                merged = copy if base is None else unite(base, copy)
                if merged != base:
                    managed.write_text(config, target, merged)
                managed.move_to_trash(config, rel, moment)
            changed += [target, rel]
            continue
        text = managed.read_text(config, rel, errors="surrogateescape")
        if text is not None and has_conflict_markers(text):
            with managed.topic_lock(config, rel):
                text = managed.read_text(config, rel, errors="surrogateescape")
                if text is None or not has_conflict_markers(text):
                    continue
                ours, theirs = conflict_sides(text)
                managed.write_text(config, rel, unite(ours, theirs))
            changed.append(rel)
    return changed

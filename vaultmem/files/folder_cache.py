"""What each folder of the vault held at the last walk, so the next walk lists only the folders
that changed.

Listing a folder and judging each name in it (hidden, a dropping, excluded, mapped, a note) was
most of a whole-vault walk's cost: at 100,000 notes 0.8 s, against 0.25 s for the stats
alone. A folder's entries change only when one is created, removed or renamed, and each of
those moves the folder's own mtime and ctime. The ctime cannot be set by any program (setting
the mtime with `utime`, as rsync and unpackers do, moves the ctime to now), so a folder whose
(mtime_ns, ctime_ns, inode, device) are as they were when it was listed holds the same names
of the same kinds. The walk then takes the recorded decisions and stats only the notes: an edit
in place moves the note's own mtime and size, never its folder's.

What is not recorded, and so always listed again: a folder changed in the two seconds before it
was listed (timestamps tick coarsely, 4 ms on Linux and 2 s on FAT, so a change in the same tick
would not show), a folder holding a symbolic link or a special file (a link's target can change
without its folder), and everything when the configuration that decides what a walk keeps
(root, mapped folders, exclusions, the managed folder, the secret patterns) is not the one
recorded. A folder with a name holding a secret is not recorded either (the state folder keeps
no secret), so a recorded folder needs no look for one. `rebuild`
lists every folder. Like the last survey (`storage.last_survey`) the record can only make a
walk cheaper: an unreadable one is a walk without it.

`<state>/folders.json`: one JSON object, written by rename and never fsynced (a record lost in
a crash costs one slower walk).
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from hashlib import blake2b
from itertools import compress
from typing import Any, NamedTuple

from vaultmem.core.atomic import replace_file
from vaultmem.core.config import Config
from vaultmem.core.note_model import Problem
from vaultmem.core.secrets import builtin_digest

RECORD_NAME = "folders.json"
_FORMAT = 2  # 2: the note names as flags over the files
SETTLE_NS = 2_000_000_000
"""A folder changed this recently when it was listed is not recorded (FAT's 2 s timestamps)."""

FolderKey = tuple[int, int, int, int]
"""(mtime_ns, ctime_ns, inode, device) of a folder."""


class Listing(NamedTuple):
    """What the walk decided for one folder's entries: the note names (stat each), the names of
    every visible file (notes included), the sub-folders to enter (name, whether mapped) and
    the problems its names gave."""

    notes: tuple[str, ...]
    files: tuple[str, ...]
    folders: tuple[tuple[str, bool], ...]
    problems: tuple[Problem, ...]


class FolderCache:
    """The recorded listings (`kept`, read at the start of a walk) and the listings this walk
    found (`found`), by folder prefix (`""` for the root, `Projects/Atlas/`)."""

    __slots__ = ("changed", "found", "kept", "settled_before")

    def __init__(self, kept: dict[str, tuple[FolderKey, Listing]], now_ns: int) -> None:
        self.kept = kept
        self.found: dict[str, tuple[FolderKey, Listing]] = {}
        self.changed = False
        self.settled_before = now_ns - SETTLE_NS

    def listing(self, prefix: str, key: FolderKey) -> Listing | None:
        """The recorded listing of the folder at `prefix` when it still stands, else None."""
        kept = self.kept.get(prefix)
        if kept is None or kept[0] != key:
            return None
        self.found[prefix] = kept
        return kept[1]

    def record(self, prefix: str, key: FolderKey, listing: Listing, cacheable: bool) -> None:
        """Keep a fresh listing of a folder (when it can stand for the folder next time). A
        folder listed every time (it holds a link) changes nothing: the record is written
        only when what it keeps changed (`save`)."""
        if cacheable and key[0] < self.settled_before and key[1] < self.settled_before:
            entry = (key, listing)
            self.found[prefix] = entry
            if self.kept.get(prefix) != entry:
                self.changed = True

    def forget(self, prefix: str) -> None:
        """A recorded listing that did not hold (a note vanished under the walk): the walk
        lists the folder again."""
        self.found.pop(prefix, None)
        self.kept.pop(prefix, None)


def folder_key(st: os.stat_result) -> FolderKey:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def config_digest(config: Config) -> str:
    """What decides a walk's listings: another value means none of the recorded ones stand."""
    decided = (
        _FORMAT,
        str(config.root),
        config.managed_folder,
        config.config_exclude,
        config.obsidian_exclude,
        tuple(sorted(m.folder for m in config.mappings)),
        config.secret_patterns,  # a recorded listing holds no name with a secret
        builtin_digest(),
    )
    return blake2b(repr(decided).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def load(config: Config, now_ns: int, *, fresh: bool = False) -> FolderCache:
    """The record for this configuration (`fresh`: start without one, as `rebuild` does)."""
    kept: dict[str, tuple[FolderKey, Listing]] = {}
    if not fresh:
        with suppress(OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            kept = _decode(
                json.loads((config.state_dir / RECORD_NAME).read_bytes()), config_digest(config)
            )
    return FolderCache(kept, now_ns)


def save(config: Config, cache: FolderCache) -> None:
    """Write this walk's listings when they differ from the record (a listing changed, or a
    recorded folder is gone or no longer recorded); a state folder that cannot be written just
    goes without."""
    if not cache.changed and cache.found.keys() == cache.kept.keys():
        return
    folders = {
        prefix: [
            list(key),
            list(listing.files),
            flags,
            [[name, mapped] for name, mapped in listing.folders],
            [[p.path, p.code, p.message, p.line] for p in listing.problems],
        ]
        for prefix, (key, listing) in cache.found.items()
        if (flags := _note_flags(listing)) is not None
    }
    data = json.dumps({"format": _FORMAT, "config": config_digest(config), "folders": folders})
    if config.state_dir.is_dir():
        with suppress(OSError):
            replace_file(config.state_dir / RECORD_NAME, data.encode("utf-8"))


def _note_flags(listing: Listing) -> str | None:
    """Which of a listing's files are its notes, as one `0`/`1` character each: the note names
    are recorded once, among the files (parsing each name twice was half of a load). None
    when a note is not among the files, which no walk's listing is: that folder goes
    unrecorded, to be listed again."""
    notes = set(listing.notes)
    if not notes.issubset(listing.files):
        return None
    return "".join("1" if name in notes else "0" for name in listing.files)


_FLAG_BITS = bytes.maketrans(b"01", b"\x00\x01")


def _decode(data: Any, digest: str) -> dict[str, tuple[FolderKey, Listing]]:
    if data.get("format") != _FORMAT or data.get("config") != digest:
        return {}
    out: dict[str, tuple[FolderKey, Listing]] = {}
    for prefix, (key, files, flags, folders, problems) in data["folders"].items():
        mtime, ctime, inode, device = (int(k) for k in key)
        if len(flags) != len(files):
            raise ValueError("a damaged record")
        listing = Listing(
            tuple(compress(files, flags.encode("ascii").translate(_FLAG_BITS))),
            tuple(files),
            tuple((str(name), bool(mapped)) for name, mapped in folders),
            tuple(Problem(path, code, message, line) for path, code, message, line in problems),
        )
        out[str(prefix)] = ((mtime, ctime, inode, device), listing)
    return out

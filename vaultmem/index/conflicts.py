"""Sync-conflict copies: inside the managed folder united into their topic, elsewhere reported.

Sync tools keep both sides of a clash as two files: Syncthing `x.sync-conflict-20261201-
123456-ABCDEFG.md`, Dropbox `x (conflicted copy 2026-12-01).md`, iCloud and OneDrive `x 2.md`
(`core.names.conflict_copy_original` reads these names, for the scanner and for this module);
git leaves `<<<<<<<`/`=======`/`>>>>>>>` blocks inside the file (`has_markers`).

- **Inside the managed folder** none of these names is a valid topic key, so copies are
  recognised without a guess: each copy's observations whose stamps the topic lacks are added
  to the topic (`topics.unite`, once each, read in stamp order), under the topic's lock, and
  the copy moves to the managed folder's `.trash/`; a topic holding conflict markers is
  replaced by the union of its two sides. A full reconcile does this before it indexes
  (`unite_walked`), a per-path one for the paths it is given (`unite_paths`).
- **Elsewhere** the files are people's and never touched: a copy is a `conflict_copy` problem
  (the scanner reports the named copies it leaves out; `copy_problems` the numbered ones, which
  stay notes) and a note still holding markers is a `conflict_markers` problem (`marker_problem`,
  from the parse, so only notes that changed are looked at).

Work is proportional to change: names come from the walk, and a topic's bytes are read only
when its (size, mtime) differs from when it was last read and found clean, which
`<state>/conflict-check.json` records (a cache: lost or unreadable, every topic is read once).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence, Set
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from vaultmem.core.config import Config
from vaultmem.core.models import SCOPES
from vaultmem.core.names import KEY_RE, conflict_copy_original
from vaultmem.core.note_model import Problem
from vaultmem.files.walked import in_folder

if TYPE_CHECKING:
    from vaultmem.files.scan import Fingerprint

RECORD_NAME = "conflict-check.json"
COPY: Final = "conflict_copy"
MARKERS: Final = "conflict_markers"


def original_of(name: str) -> str | None:
    """The topic file name a conflict copy's name stands for (`x 2.md` → `x.md`), or None:
    inside the managed folder a copy's stem must be a valid key, and nothing more is asked."""
    found = conflict_copy_original(name)
    if found is None or not KEY_RE.fullmatch(found[0][:-3]):
        return None
    return found[0]


def has_markers(data: bytes) -> bool:
    """Does the file hold a git conflict block (`<<<<<<<`, `=======`, `>>>>>>>` lines)?
    A byte search first: only a file holding `<<<<<<<` is decoded and read line by line."""
    if b"<<<<<<<" not in data or b">>>>>>>" not in data:
        return False
    from vaultmem.note.topics import has_conflict_markers

    return has_conflict_markers(data.decode("utf-8", "replace"))


def marker_problem(path: str, data: bytes) -> Problem | None:
    """The `conflict_markers` problem of a note whose bytes hold a git conflict block."""
    if not has_markers(data):
        return None
    return Problem(
        path,
        MARKERS,
        "git conflict markers (<<<<<<<, =======, >>>>>>>) are left in the note: resolve them "
        "by hand; vaultmem indexes the file as it is and never changes it",
    )


def copy_problems(notes: Iterable[str], files: Set[str]) -> list[Problem]:
    """A `conflict_copy` problem for each numbered copy among `notes` (`x 2.md` with `x.md`
    beside it, as iCloud and OneDrive name them). They stay notes: the name may be a person's
    own (`Chapter 2.md`), so only the report says what it looks like. `x 1.md` is never one:
    iCloud numbers its copies from 2, and 1 is what Obsidian itself gives a second note of a
    name (`Untitled 1.md`, "Make a copy" of `x.md`), which is no clash to merge."""
    out = []
    for path in notes:
        # Cheap tests first (a digit, a space before it): this runs over every note of a
        # full reconcile that finds a change, and dated notes (`2026-12-01.md`) are common.
        if path[-4:-3].isdigit() and " " in path[-8:-4] and path.endswith(".md"):
            if path.endswith(" 1.md"):
                continue
            folder, _, name = path.rpartition("/")
            found = conflict_copy_original(name)
            if found is None or found[1]:
                continue
            original = f"{folder}/{found[0]}" if folder else found[0]
            if original in files:
                out.append(
                    Problem(
                        path,
                        COPY,
                        f"looks like a sync tool's conflict copy of {original} (indexed as a "
                        f"note of its own): merge what it adds into {original} by hand and "
                        "delete it, or rename it",
                    )
                )
    return out


def path_problems(config: Config, paths: Iterable[str], files: Iterable[str]) -> list[Problem]:
    """The `conflict_copy` problems of the named `paths` (a per-path reconcile's): the named
    copies the scanner leaves out, and numbered ones beside their original among `files`."""
    from vaultmem.files.scan import conflict_copy_problem, is_dropping

    root = config.root
    numbered: list[str] = []
    out: list[Problem] = []
    for rel in sorted(paths):
        *folders, name = rel.split("/")
        if conflict_copy_original(name) is None or any(map(is_dropping, folders)):
            continue
        if config.mapping_for(rel) is None or not os.path.isfile(root / rel):
            continue
        if (copy := conflict_copy_problem(rel)) is not None:
            out.append(copy)
        else:
            numbered.append(rel)
    if numbered:
        out += copy_problems(numbered, frozenset(files))
    return out


# -- the managed folder ---------------------------------------------------------------------------


def unite_walked(
    config: Config,
    notes: Sequence[Fingerprint],
    problems: Iterable[Problem],
    now: datetime | None = None,
) -> list[str]:
    """Before a full reconcile indexes the walk: unite the managed folder's conflict copies
    (topic names among `notes`, the walk's sorted fingerprints, and the named copies the
    scanner left out, among `problems`) and its topics holding conflict markers. A topic is
    read only when its fingerprint moved since it was last found clean. The paths changed."""
    prefix = config.managed_folder + "/"
    folders = tuple(prefix + scope + "/" for scope in SCOPES)
    # The managed folder's notes alone: a walk makes no tuple for the rest (`files.walked`).
    topics = [fp for fp in in_folder(notes, prefix) if fp.path.startswith(folders)]
    # A copy's name holds a space (a valid key none), the only one the walk lists (`x 2.md`).
    copies = [fp.path for fp in topics if " " in fp.path and original_of(fp.path.split("/")[-1])]
    copies += [
        p.path
        for p in problems
        if p.code == COPY
        and _is_topic_path(config, p.path)
        and original_of(p.path.rpartition("/")[2])
    ]
    checked = _read_record(config)
    clean: dict[str, tuple[int, int]] = {}
    conflicted: list[str] = []
    for fp in topics:
        if fp.path in copies:
            continue
        seen = (fp.size, fp.mtime_ns)
        if checked.get(fp.path) == seen:
            clean[fp.path] = seen
            continue
        data = _read(config, fp.path)
        if data is not None and has_markers(data):
            conflicted.append(fp.path)
        elif data is not None:
            clean[fp.path] = seen
    if clean != checked:
        _write_record(config, clean)
    if not copies and not conflicted:
        return []
    return unite(config, copies, conflicted, now)


def unite_paths(config: Config, paths: Iterable[str], now: datetime | None = None) -> list[str]:
    """Before a per-path reconcile: unite the conflict copies and conflicted topics among
    `paths` (a folder stands for the topics under it). The paths changed, to index too."""
    root = config.root
    candidates: list[str] = []
    for path in paths:
        rel = path.strip("/")
        if not config.is_managed(rel):
            continue
        full = root / rel
        if full.is_dir() and not full.is_symlink():
            for folder, dirs, names in os.walk(full):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                base = os.path.relpath(folder, root).replace(os.sep, "/")
                candidates += [f"{base}/{n}" for n in names if n.endswith(".md")]
        elif rel.endswith(".md"):
            candidates.append(rel)
    copies: list[str] = []
    conflicted: list[str] = []
    for rel in dict.fromkeys(candidates):
        if not _is_topic_path(config, rel) or rel.rpartition("/")[2].startswith("."):
            continue
        if original_of(rel.rpartition("/")[2]):
            if (root / rel).is_file():
                copies.append(rel)
        elif (data := _read(config, rel)) is not None and has_markers(data):
            conflicted.append(rel)
    if not copies and not conflicted:
        return []
    return unite(config, copies, conflicted, now)


def unite(
    config: Config, copies: Sequence[str], conflicted: Sequence[str], now: datetime | None = None
) -> list[str]:
    """Unite each copy into its topic (then trash it) and each conflicted topic's two sides;
    the paths of the topics changed and of the copies moved away."""
    from vaultmem.files import managed
    from vaultmem.note.topics import conflict_sides, has_conflict_markers
    from vaultmem.note.topics import unite as unite_texts

    moment = now or datetime.now(UTC)
    changed: list[str] = []
    for rel in sorted(set(copies)):
        folder, _, name = rel.rpartition("/")
        original = original_of(name)
        assert original is not None, rel
        target = f"{folder}/{original}"
        with managed.topic_lock(config, target):
            copy = managed.read_text(config, rel, errors="surrogateescape")
            base = managed.read_text(config, target, errors="surrogateescape")
            if copy is None:
                continue
            merged = copy if base is None else unite_texts(base, copy)
            if merged != base:
                managed.write_text(config, target, merged)
            managed.move_to_trash(config, rel, moment)
        changed += [target, rel]
    for rel in sorted(set(conflicted) - set(changed)):
        with managed.topic_lock(config, rel):
            text = managed.read_text(config, rel, errors="surrogateescape")
            if text is None or not has_conflict_markers(text):
                continue
            ours, theirs = conflict_sides(text)
            managed.write_text(config, rel, unite_texts(ours, theirs))
        changed.append(rel)
    return changed


def _is_topic_path(config: Config, path: str) -> bool:
    """A file under `<managed>/<scope>/`, where topics live (not `.trash/`, not the base)."""
    parts = path[len(config.managed_folder) + 1 :].split("/")
    return (
        config.is_managed(path)
        and len(parts) >= 2
        and parts[0] in SCOPES
        and not any(p.startswith(".") for p in parts)
    )


def _read(config: Config, rel: str) -> bytes | None:
    from vaultmem.core.errors import VaultmemError
    from vaultmem.files import managed

    try:
        return managed.read_bytes(config, rel)
    except (OSError, VaultmemError):  # a link or an odd file: the reconcile reports it
        return None


def _read_record(config: Config) -> dict[str, tuple[int, int]]:
    try:
        data = json.loads((config.state_dir / RECORD_NAME).read_bytes())
        return {str(p): (int(s), int(m)) for p, (s, m) in data["topics"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _write_record(config: Config, clean: dict[str, tuple[int, int]]) -> None:
    """Publish by rename; a state folder that cannot be written just goes without."""
    target = config.state_dir / RECORD_NAME
    tmp = target.with_name(f".{RECORD_NAME}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(json.dumps({"topics": {p: list(v) for p, v in clean.items()}}).encode())
        os.replace(tmp, target)
    except OSError:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)

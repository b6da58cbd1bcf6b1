"""Reading the vault's files: the walk that fingerprints notes, and the careful read of one note.

`scan_vault` walks the whole vault once with `os.scandir` (iterative, no recursion) and returns
the fingerprint (path, size, mtime) of every Markdown note inside a mapped folder plus the path
of every other visible file, because link resolution needs attachments and unmapped notes too.
It never writes. The notes of folders whose listing stands (`files.folder_cache`) are statted
after the folders are walked, all at once: on two cores for a large vault (`files.stat_pair`).
What it skips, and why:

- hidden names (starting with `.`) at any depth: `.obsidian/`, `.trash/`, `.git/`, `.vaultmem/`,
  the managed folder's `.trash/`, editor locks (`.~lock.*`, `.#*`), swap files. Obsidian itself
  does not show dot-files, so nothing a user sees is lost;
- sync and editor droppings (`*.sync-conflict-*`, `* conflicted copy *`, `*.icloud`, `*.tmp`,
  `*~`, `~$*`): half-synced copies would show up as duplicate notes (a conflict copy of a note
  in a mapped folder is reported as a `conflict_copy` problem, for someone to merge);
- the config file's `exclude` globs, except inside the managed folder, which vaultmem must always
  be able to read back;
- symbolic links: directory links are never followed (a loop or a second copy of a folder is
  worse than a missing folder); a file link is followed only when its real target is inside the
  vault. Every refused link is reported as `symlink_refused`.

Obsidian's own `userIgnoreFilters` (`Config.obsidian_exclude`) hide files from search, graph and
unlinked mentions only: links still resolve to them. So a file they match is still listed among
`files` (a link target) but never fingerprinted as a note (`_unindexed`).

A note is a Markdown file or a JSON Canvas (`is_note_name`): a canvas is a link source too.

`read_note` opens one note without following a link out of the vault, reads at most
`max_note_bytes + 1` bytes (so the parser can flag `file_too_large`) and compares `fstat` before
and after: a note that changed under the reader is reported `file_unstable` and skipped this run.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from functools import lru_cache
from hashlib import blake2b
from typing import BinaryIO, NamedTuple

from vaultmem.core.config import Config
from vaultmem.core.names import conflict_copy_original, default_note_id
from vaultmem.core.note_model import Problem
from vaultmem.core.secrets import SecretPattern, compile_patterns, redact, secret_names
from vaultmem.files.folder_cache import FolderCache, Listing, folder_key
from vaultmem.files.stat_pair import stat_folders
from vaultmem.files.walked import Fingerprint, Folder, WalkedNotes, folder_of

__all__ = ["Fingerprint"]  # defined with the walk's notes (`files.walked`), imported from here

NOTE_SUFFIX = ".md"
CANVAS_SUFFIX = ".canvas"


_NOTE_SUFFIXES = (NOTE_SUFFIX, CANVAS_SUFFIX)


def is_note_name(name: str) -> bool:
    """A file indexed as a note when it is in a mapped folder: Markdown, or a canvas (its file
    nodes and text-node links are link sources, spec rule 18)."""
    return name.endswith(_NOTE_SUFFIXES)


# Names written by sync clients and editors next to real files (hidden names are caught first):
# Syncthing's `Note.sync-conflict-20261120-101500-ABCDEFG.md`, Dropbox's and Obsidian Sync's
# `Note (Dana's conflicted copy 2026-11-20).md`, iCloud's `.icloud` placeholders, editor temp
# files and backups (`*.tmp`, `*~`), Office lock files (`~$*`).
_CONFLICT_RE = re.compile(r"\.sync-conflict-|\bconflicted copy\b", re.IGNORECASE)
_DROPPING_SUFFIXES = (".icloud", ".tmp", "~")


class ScanResult(NamedTuple):
    """`notes`: eligible notes in mapped folders (`files.walked`: sorted fingerprints made on
    first use); `files`: every visible file (notes included).

    Named tuples here, not dataclasses, which compile their methods from source at import:
    every run, a no-op included, imports this module."""

    notes: WalkedNotes
    files: tuple[str, ...]
    problems: tuple[Problem, ...]


def notes_outside_mapping(config: Config, files: Iterable[str]) -> tuple[int, tuple[str, ...]]:
    """How many of the walk's `files` are notes no mapped folder holds (a first run's `--map`
    leaves the rest of the vault out), and their top-level folders (`.` = the vault's root)."""
    if config.mapping_for("") is not None:
        return 0, ()  # the whole vault is mapped: nothing can lie outside
    mapping_for = config.mapping_for
    outside = [path for path in files if is_note_name(path) and mapping_for(path) is None]
    folders = {path.partition("/")[0] if "/" in path else "." for path in outside}
    return len(outside), tuple(sorted(folders))


def is_dropping(name: str) -> bool:
    """True for a file or folder name vaultmem never looks at: hidden names and droppings."""
    # Cheap string tests first: this runs once per directory entry of the vault.
    if name[:1] == "." or name[:2] == "~$":
        return True
    lower = name.lower()
    if lower.endswith(_DROPPING_SUFFIXES):
        return True
    return "onflict" in lower and _CONFLICT_RE.search(name) is not None


def content_hash(data: bytes) -> str:
    """A 32-hex-digit BLAKE2b digest: faster than SHA-256 in CPython, collision-safe for
    detecting renames and edits (this is not a security boundary)."""
    return blake2b(data, digest_size=16).hexdigest()


# ---------------------------------------------------------------------------------------------
# Exclusions


class _Exclusions(NamedTuple):
    """Compiled `Config.exclude`: anchored patterns test the whole path, name patterns one name.

    Folders are tested as `path/` against regexes so that Obsidian prefix filters written with a
    trailing slash (`Archive/`) prune the folder itself.
    """

    anchored: re.Pattern[str] | None
    names: re.Pattern[str] | None
    regexes: tuple[re.Pattern[str], ...]
    managed: str

    @property
    def active(self) -> bool:
        return self.anchored is not None or self.names is not None or bool(self.regexes)

    def excluded(self, path: str, name: str, *, folder: bool) -> bool:
        managed = self.managed
        if path == managed or path.startswith(managed + "/") or managed.startswith(path + "/"):
            # The managed folder and the folders leading to it are never excluded.
            return False
        if self.names is not None and self.names.fullmatch(name):
            return True
        if self.anchored is not None and self.anchored.fullmatch(path):
            return True
        probe = path + "/" if folder else path
        return any(rx.search(probe) for rx in self.regexes)


@lru_cache(maxsize=16)
def _compile_exclusions(exclude: tuple[str, ...], managed: str) -> _Exclusions:
    anchored: list[str] = []
    names: list[str] = []
    regexes: list[re.Pattern[str]] = []
    for entry in exclude:
        if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
            regexes.append(re.compile(entry[1:-1]))
            continue
        pattern = entry.strip()
        if pattern.endswith("/"):
            pattern = pattern.rstrip("/")
        if pattern.startswith("/"):
            anchored.append(_glob_to_regex(pattern.lstrip("/")))
        elif "/" in pattern:
            anchored.append(_glob_to_regex(pattern))
        else:
            names.append(_glob_to_regex(pattern))
    return _Exclusions(
        anchored=re.compile("|".join(f"(?:{p})" for p in anchored)) if anchored else None,
        names=re.compile("|".join(f"(?:{p})" for p in names)) if names else None,
        regexes=tuple(regexes),
        managed=managed,
    )


def _glob_to_regex(glob: str) -> str:
    """`**` any run of characters including `/`; `*` and `?` stay inside one name; `[...]` a
    character class. A trailing `/**` also matches the folder itself, a leading `**/` any depth."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (close := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : close]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = close + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# The walk


def _unindexed(config: Config) -> _Exclusions:
    """Obsidian's `userIgnoreFilters`: files stay link targets, they are not indexed as notes."""
    return _compile_exclusions(config.obsidian_exclude, config.managed_folder)


def scan_vault(config: Config, folders: FolderCache | None = None) -> ScanResult:
    """Fingerprint every eligible note and list every visible file of the vault. `folders`:
    the listings of the last walk (`files.folder_cache`); a folder that did not change since
    is not listed again, only its notes are statted, and this walk's listings go into it."""
    patterns = compile_patterns(config.secret_patterns)
    notes, files, problems, named = _walk(config, patterns, folders)
    notes, files, problems = _without_secret_names(patterns, named, notes, files, problems)
    files.sort()
    problems.sort(key=lambda p: (p.path, p.code))
    return ScanResult(notes, tuple(files), tuple(problems))


def secret_named_note(config: Config, note_id: str) -> str | None:
    """The real path of the note whose name holds a secret and whose id (`default_note_id`,
    the id it would have as a note) is `note_id`, else None: how `read` finds a note the index
    never holds. It walks the whole vault, so only a read that missed the index calls it."""
    notes, _, _, named = _walk(config, compile_patterns(config.secret_patterns), None)
    paths = sorted(fp.path for fp in notes if fp.path in named)
    return next((path for path in paths if default_note_id(path) == note_id), None)


def _walk(
    config: Config, patterns: tuple[SecretPattern, ...], folders: FolderCache | None
) -> tuple[WalkedNotes, list[str], list[Problem], dict[str, str]]:
    """The walk itself: notes, files and problems as found (names holding secrets included),
    and those names: {path: the path redacted}."""
    root = str(config.root)
    lister = _Lister(config)
    named: dict[str, str] = {}  # path -> the path redacted, for paths holding a secret
    # Each folder's notes in the walk's order; a recorded folder's place is filled after the
    # stats (`_stat_recorded`), so the order is the same whichever way a folder was listed.
    notes: list[Folder | None] = []
    files: list[str] = []
    problems: list[Problem] = []
    stack: list[tuple[str, str, bool]] = [(root, "", config.mapping_for("") is not None)]
    recorded: list[_Recorded] = []  # notes of recorded listings, to stat
    while stack:
        abs_dir, prefix, mapped = stack.pop()
        try:
            key = folder_key(os.stat(abs_dir))
            listing = None if folders is None else folders.listing(prefix, key)
            if listing is not None:
                if listing.notes:
                    recorded.append(_Recorded(len(notes), abs_dir, prefix, listing.notes))
                    notes.append(None)
            else:
                listing, cacheable, found = lister.list(abs_dir, prefix, mapped)
                if found:
                    notes.append(folder_of(prefix, found))
                # Judged here, once per listing: a recorded listing holds no secret (none is
                # kept in the state folder), so a folder taken from the record needs no look.
                held = secret_names(
                    [prefix + n for n in listing.files] + [p.path for p in listing.problems],
                    patterns,
                )
                if held:
                    named.update(held)
                    cacheable = False
                if folders is not None:
                    folders.record(prefix, key, listing, cacheable)
        except FileNotFoundError:
            continue  # the folder vanished mid-walk; the next scan settles it
        except PermissionError:
            problems.append(
                Problem(prefix.rstrip("/") or ".", "file_unreadable", "permission denied")
            )
            continue
        except NotADirectoryError:
            continue
        except OSError as exc:  # ENAMETOOLONG, EIO, ...: this folder is skipped, not the vault
            message = exc.strerror or str(exc)
            problems.append(
                Problem(printable(prefix.rstrip("/") or "."), "file_unreadable", message)
            )
            continue
        files.extend([prefix + name for name in listing.files])
        problems.extend(listing.problems)
        # Listings are sorted and folders taken in order, so the sorts below find runs.
        for name, sub_mapped in reversed(listing.folders):
            stack.append((abs_dir + os.sep + name, prefix + name + "/", sub_mapped))
    if recorded:
        vanished = _stat_recorded(recorded, notes)
        if vanished:  # a note went under the walk: list its folder after all, walk again
            assert folders is not None
            for prefix in vanished:
                folders.forget(prefix)
            return _walk(config, patterns, folders)
    missing = _missing_folders(config)
    named.update(secret_names([p.path for p in missing], patterns))
    problems.extend(missing)
    return WalkedNotes(f for f in notes if f is not None), files, problems, named


class _Recorded(NamedTuple):
    """A folder whose listing came from the record: its place among the walk's folders, its
    absolute path, its prefix and the note names to stat."""

    place: int
    abs_dir: str
    prefix: str
    names: tuple[str, ...]


def _stat_recorded(recorded: list[_Recorded], notes: list[Folder | None]) -> list[str]:
    """Stat the notes of the folders whose listing was taken from the record, all at once
    (on two cores for a large vault: `files.stat_pair`), into their places in `notes`; return
    the prefixes of the folders where a note had vanished (none of theirs is added). The
    stats stay the columns they come as: no tuple per note (`files.walked`)."""
    vanished: list[str] = []
    answers = stat_folders([(r.abs_dir, r.names) for r in recorded])
    for (place, _, prefix, names), stats in zip(recorded, answers, strict=True):
        if stats is None:
            vanished.append(prefix)
            continue
        notes[place] = Folder(prefix, names, *stats)
    return vanished


class _Lister:
    """One folder's listing, judged name by name: what the walk does where the folder cache
    has nothing that stands."""

    def __init__(self, config: Config) -> None:
        self.config = config
        exclusions = _compile_exclusions(config.config_exclude, config.managed_folder)
        self.excluded = exclusions.excluded if exclusions.active else None
        ignoring = _unindexed(config)
        self.ignored = ignoring.excluded if ignoring.active else None
        self.mapping_for = config.mapping_for

    def list(
        self, abs_dir: str, prefix: str, mapped: bool
    ) -> tuple[Listing, bool, list[Fingerprint]]:
        """The listing of the folder at `abs_dir`, whether it can be recorded, and the
        fingerprints of the notes it holds."""
        # Mapped folders never overlap, so a folder inside one holds only mapped paths: decide
        # once per folder, not per file. The root is mapped only by a whole-vault mapping. The
        # loop runs once per entry of a changed folder (100,000 in a new large vault): it keeps
        # to local names and C-level string tests, and stats only notes (DirEntry caches the
        # lstat).
        new_tuple = tuple.__new__  # half the cost of the named tuple's own `__new__`
        excluded, ignored, mapping_for = self.excluded, self.ignored, self.mapping_for
        long_name = MAX_PATH_BYTES // 4 - 1 - len(abs_dir)  # shorter names cannot reach it
        note_names: list[str] = []
        file_names: list[str] = []
        folders: list[tuple[str, bool]] = []
        problems: list[Problem] = []
        notes: list[Fingerprint] = []
        cacheable = True
        with os.scandir(abs_dir) as entries:
            for entry in entries:
                name = entry.name
                if is_dropping(name):
                    if (
                        mapped
                        and "onflict" in name
                        and entry.is_file(follow_symlinks=False)
                        and (copy := conflict_copy_problem(prefix + name)) is not None
                    ):
                        problems.append(copy)  # left out, and reported to be merged
                    continue
                rel = prefix + name
                if not name.isascii() or len(name) >= long_name:
                    unusable = _unusable_name(entry.path, name)
                    if unusable is not None:
                        problems.append(Problem(printable(rel), "file_unreadable", unusable))
                        continue
                if entry.is_file(follow_symlinks=False):
                    if excluded is not None and excluded(rel, name, folder=False):
                        continue
                    file_names.append(name)
                    if (
                        mapped
                        and name.endswith(_NOTE_SUFFIXES)
                        and not (ignored is not None and ignored(rel, name, folder=False))
                    ):
                        note_names.append(name)
                        st = entry.stat(follow_symlinks=False)
                        notes.append(new_tuple(Fingerprint, (rel, st.st_size, st.st_mtime_ns)))
                elif entry.is_dir(follow_symlinks=False):
                    if not (excluded is not None and excluded(rel, name, folder=True)):
                        sub_mapped = mapped or mapping_for(rel) is not None
                        if ignored is not None and ignored(rel, name, folder=True):
                            sub_mapped = False
                        folders.append((name, sub_mapped))
                elif entry.is_symlink():
                    cacheable = False  # its target can change without the folder
                    target = _symlink_target(self.config, entry.path, rel, problems)
                    if target is None or (
                        excluded is not None and excluded(rel, name, folder=False)
                    ):
                        continue
                    file_names.append(name)
                    if (
                        mapped
                        and is_note_name(name)
                        and not (ignored is not None and ignored(rel, name, folder=False))
                    ):
                        notes.append(Fingerprint(rel, target.st_size, target.st_mtime_ns))
                elif mapped and is_note_name(name):
                    # A FIFO, socket or device named like a note: reading it could block.
                    cacheable = False
                    kind = _not_regular(entry.stat(follow_symlinks=False).st_mode)
                    problems.append(Problem(rel, "file_unreadable", kind))
        note_names.sort()
        file_names.sort()
        folders.sort()
        listing = Listing(tuple(note_names), tuple(file_names), tuple(folders), tuple(problems))
        return listing, cacheable, notes


def conflict_copy_problem(rel: str) -> Problem | None:
    """A sync tool's named conflict copy of a note (`core.names.conflict_copy_original`) is
    left out like every dropping, and reported: someone has two versions to merge."""
    found = conflict_copy_original(rel.rpartition("/")[2])
    if found is None or not found[1]:
        return None
    original = f"{rel.rpartition('/')[0]}/{found[0]}".lstrip("/")
    message = f"a sync tool's conflict copy of {original}, not indexed: merge by hand"
    return Problem(printable(rel), "conflict_copy", message + ", then delete it")


def _without_secret_names(
    patterns: tuple[SecretPattern, ...],
    named: dict[str, str],
    notes: WalkedNotes,
    files: list[str],
    problems: list[Problem],
) -> tuple[WalkedNotes, list[str], list[Problem]]:
    """The walk without the files whose path holds a secret (`named`: those paths, redacted;
    `xoxb-….md`, a folder named after a token): the index never holds a secret, and a path is
    its key, so such a file is neither a note nor a link target. Each becomes a
    `secret_in_name` problem, shown redacted: a folder once, for the shallowest name holding
    it, another file once, and every note (a folder's too) once with the id it is read by
    (`secret_named_note`). Other problems' paths are redacted."""
    if not named:
        return notes, files, problems
    note_paths = {fp.path for fp in notes if fp.path in named}
    flagged: dict[str, str] = {}
    for path in files:
        if path in named:
            parts = path.split("/")
            for i in range(1, len(parts) + 1):  # the shallowest part that holds it
                head = "/".join(parts[:i])
                if head == path or secret_names([head], patterns):
                    if head != path or path not in note_paths:
                        flagged.setdefault(head, redact(head, patterns).text)
                    break
    out_problems = [
        Problem(named.get(p.path, p.path), p.code, redact(p.message, patterns).text, p.line)
        for p in problems
    ]
    for head, shown in sorted(flagged.items()):
        found = ", ".join(redact(head, patterns).found)
        out_problems.append(
            Problem(
                shown,
                "secret_in_name",
                f"the name holds a secret ({found}): not indexed; rename the file or folder",
            )
        )
    for path in sorted(note_paths):
        redaction = redact(path, patterns)
        out_problems.append(
            Problem(
                redaction.text,
                "secret_in_name",
                f"the name holds a secret ({', '.join(redaction.found)}): not indexed; read it"
                f" with `vaultmem read {default_note_id(path)}`, or rename it to index it",
            )
        )
    return (
        notes.without(named),
        [path for path in files if path not in named],
        out_problems,
    )


MAX_PATH_BYTES = 4096
"""Linux's PATH_MAX: a longer absolute path cannot be opened (ENAMETOOLONG)."""

_PATH_TOO_LONG = f"the path is longer than {MAX_PATH_BYTES} bytes; shorten a folder or file name"


def _unusable_name(abs_path: str, name: str) -> str | None:
    """Why a directory entry cannot be indexed (None when it can): a name that is not UTF-8
    (the index stores text) or a path the system cannot open."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "the name is not valid UTF-8; rename the file or folder"
    if len(abs_path) * 4 >= MAX_PATH_BYTES and len(os.fsencode(abs_path)) >= MAX_PATH_BYTES:
        return _PATH_TOO_LONG
    return None


def printable(path: str) -> str:
    """A path as text for a problem row: undecodable bytes (kept by Python as surrogates) shown
    as U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _not_regular(mode: int) -> str:
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "a device or special file"
    )
    return f"not a regular file ({kind}); skipped"


def _symlink_target(
    config: Config, abs_path: str, rel: str, problems: list[Problem]
) -> os.stat_result | None:
    """The stat of a followable file link, else None with a `symlink_refused` problem."""
    real = os.path.realpath(abs_path)
    if not _inside(config, real):
        problems.append(Problem(rel, "symlink_refused", "symbolic link points outside the vault"))
        return None
    try:
        st = os.stat(real)
    except OSError:
        problems.append(Problem(rel, "symlink_refused", "symbolic link target does not exist"))
        return None
    if stat.S_ISDIR(st.st_mode):
        problems.append(
            Problem(rel, "symlink_refused", "symbolic links to folders are not followed")
        )
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _inside(config: Config, real: str) -> bool:
    root = str(config.root)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _missing_folders(config: Config) -> list[Problem]:
    problems = []
    for mapping in config.mappings:
        if mapping.folder and not os.path.isdir(config.root / mapping.folder):
            problems.append(
                Problem(
                    mapping.folder,
                    "config_folder_missing",
                    f"mapped folder {mapping.folder!r} ({mapping.scope}) does not exist",
                )
            )
    return problems


# ---------------------------------------------------------------------------------------------
# Single paths (the watcher)


def is_eligible_note(config: Config, path: str) -> bool:
    """Would `scan_vault` list `path` as a note? Judged on the path alone, without disk access."""
    if not is_note_name(path) or config.mapping_for(path) is None:
        return False
    if not is_eligible_file(config, path):
        return False
    unindexed = _unindexed(config)
    if not unindexed.active:
        return True
    parts = path.split("/")
    return not any(
        unindexed.excluded("/".join(parts[:i]), parts[i - 1], folder=i < len(parts))
        for i in range(1, len(parts) + 1)
    )


def is_eligible_file(config: Config, path: str) -> bool:
    """Would `scan_vault` list `path` among the vault's files (notes and attachments, mapped or
    not)? Judged on the path alone: no droppings, no hidden part, no part the config file
    excludes (Obsidian's filters leave a file a link target, see `is_eligible_note`)."""
    parts = path.split("/")
    if any(part in ("", ".", "..") or is_dropping(part) for part in parts):
        return False
    if secret_names([path], compile_patterns(config.secret_patterns)):
        return False  # `scan_vault` reports it (`secret_in_name`) and never indexes it
    excluded = _compile_exclusions(config.config_exclude, config.managed_folder).excluded
    for i in range(1, len(parts) + 1):
        if excluded("/".join(parts[:i]), parts[i - 1], folder=i < len(parts)):
            return False
    return True


def scan_paths(config: Config, paths: Iterable[str]) -> tuple[list[Fingerprint], list[str]]:
    """Stat just `paths`: (fingerprints of existing eligible notes, paths gone or ineligible)."""
    found: list[Fingerprint] = []
    gone: list[str] = []
    root = str(config.root)
    for path in dict.fromkeys(paths):
        if not is_eligible_note(config, path):
            gone.append(path)
            continue
        abs_path = os.path.join(root, *path.split("/"))
        # The walk never enters a folder link, so a path through one is not a note either.
        if os.path.realpath(os.path.dirname(abs_path)) != os.path.dirname(abs_path):
            gone.append(path)
            continue
        try:
            st = os.lstat(abs_path)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(abs_path)
                st = os.stat(real) if _inside(config, real) else st
        except OSError:
            gone.append(path)
            continue
        if stat.S_ISREG(st.st_mode):
            found.append(Fingerprint(path, st.st_size, st.st_mtime_ns))
        else:
            gone.append(path)
    return found, gone


# ---------------------------------------------------------------------------------------------
# Reading one note


def read_note(config: Config, path: str) -> bytes | Problem:
    """The note's bytes (at most `max_note_bytes + 1`), or the Problem that stopped the read."""
    got = read_note_fingerprinted(config, path)
    return got if isinstance(got, Problem) else got[0]


_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
"""O_NOFOLLOW: if the file is swapped for a link after realpath, the open fails (ELOOP).
O_NONBLOCK: a FIFO swapped in opens without waiting for a writer (S_ISREG after the open)."""


def read_note_fingerprinted(
    config: Config, path: str, folders: dict[str, str | None] | None = None
) -> tuple[bytes, Fingerprint] | Problem:
    """The note's bytes and the fingerprint of exactly those bytes, or the Problem.

    `folders`, when given, caches each folder's real path (None: outside the vault) across
    calls: a batch of notes then resolves each folder once instead of `lstat`-ing every
    component of every note's path (`os.path.realpath`). The note's own name is not resolved
    through the cache: opening it with O_NOFOLLOW fails on a link, which then takes the
    uncached way (a link to a note inside the vault is read, as without the cache). Give a
    fresh dict per batch: a folder swapped for a link after it was cached is not seen again.
    """
    abs_path = os.path.join(str(config.root), *path.split("/"))
    if len(os.fsencode(abs_path)) >= MAX_PATH_BYTES:
        return Problem(path, "file_unreadable", _PATH_TOO_LONG)
    if folders is not None:
        folder, _, name = abs_path.rpartition(os.sep)
        try:
            real_folder = folders[folder]
        except KeyError:
            real_folder = os.path.realpath(folder)
            # the folder's own real path may be the root (a note at the top of the vault)
            if not _inside(config, real_folder):
                real_folder = None
            folders[folder] = real_folder
        if real_folder is not None:
            try:
                fd = os.open(os.path.join(real_folder, name), _OPEN_FLAGS)
            except OSError:  # a link (ELOOP), gone, refused...: the uncached way says which
                pass
            else:
                return _read_open(config, path, fd)
    real = os.path.realpath(abs_path)
    if not _inside(config, real):
        return Problem(path, "symlink_refused", "the path leads outside the vault")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except FileNotFoundError:
        return Problem(path, "file_vanished", "the file disappeared before it could be read")
    except PermissionError:
        return Problem(path, "file_unreadable", "permission denied")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Problem(path, "symlink_refused", "the file was replaced by a symbolic link")
        return Problem(path, "file_unreadable", exc.strerror or str(exc))
    return _read_open(config, path, fd)


def _read_open(config: Config, path: str, fd: int) -> tuple[bytes, Fingerprint] | Problem:
    """Read the note open at `fd` (closed here) and fingerprint the bytes read."""
    try:
        before = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return Problem(path, "file_unreadable", exc.strerror or str(exc))
    if not stat.S_ISREG(before.st_mode):
        os.close(fd)
        return Problem(path, "file_unreadable", _not_regular(before.st_mode))
    try:
        with os.fdopen(fd, "rb") as handle:
            # Ask for what the file holds (+1 to see it grow, capped at the limit + 1): a read
            # of the cap would allocate the cap for every note and leave one memory mapping
            # per note behind, which ends a 100,000-note reconcile in MemoryError.
            data = _read_limited(handle, min(before.st_size, config.max_note_bytes) + 1)
            after = os.fstat(handle.fileno())
    except OSError as exc:
        return Problem(path, "file_unreadable", exc.strerror or str(exc))
    if _changed(before, after) or (
        len(data) <= config.max_note_bytes and len(data) != after.st_size
    ):
        return Problem(path, "file_unstable", "the file changed while it was read; retried later")
    return data, Fingerprint(path, after.st_size, after.st_mtime_ns)


def _read_limited(handle: BinaryIO, limit: int) -> bytes:
    """Read up to `limit` bytes (a seam the tests use to simulate a concurrent writer)."""
    return handle.read(limit)


def _changed(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size, before.st_mtime_ns, before.st_ino) != (
        after.st_size,
        after.st_mtime_ns,
        after.st_ino,
    )

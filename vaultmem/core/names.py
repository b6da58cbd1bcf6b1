"""The one rule for names vaultmem writes or accepts: topic keys, scope ids, path segments.

Every name that becomes a file or folder, whether a key given to `store`, a `--scope-id`, a concept
ID from an imported bundle or a segment of a managed path, is checked by the same function,
`portable_problem`, so a name `store` accepts is one `import` accepts and every operating system
can hold: no separator, NUL or control character, none of `<>:"|?*`, no Windows device name (`con`,
`aux`, `nul`, `com1`, `lpt1`, ... with any extension), no trailing dot or space, at most 255 bytes.
The constants other modules share (the trash folder, the key pattern) live here too, once, and
so does the one reading of a sync tool's conflict-copy names (`conflict_copy_original`) and
the id a human note gets from its path (`default_note_id`), which the scan names too (a note
whose name holds a secret is read by that id, never indexed).
"""

from __future__ import annotations

import re
from hashlib import blake2b

__all__ = [
    "KEY_PATTERN",
    "KEY_RE",
    "KEY_RULE",
    "MAX_COMPONENT_BYTES",
    "MAX_KEY",
    "MAX_SCOPE_ID",
    "SCOPE_ID_RE",
    "SCOPE_ID_RULE",
    "TRASH",
    "conflict_copy_original",
    "is_reserved_name",
    "portable_problem",
]

TRASH = ".trash"
"""The managed folder's trash (`<managed>/.trash/`): forgotten and pruned topics move there."""

MAX_COMPONENT_BYTES = 255
MAX_KEY = 60
MAX_SCOPE_ID = 64
KEY_PATTERN = r"[a-z0-9-]{1,60}"
KEY_RE = re.compile(KEY_PATTERN)
KEY_RULE = (
    "1-60 lower-case letters, digits and hyphens ([a-z0-9-]{1,60}), "
    "not a Windows device name such as con or aux"
)
SCOPE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SCOPE_ID_RULE = (
    "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, "
    "not ending in '.', not a Windows device name"
)

# Windows reserves these names in every folder, with any extension (`con.md`, `aux.tar.gz`).
_RESERVED = re.compile(r"(?i)(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(?:\..*)?", re.S)
_UNPORTABLE = re.compile(r'[<>:"|?*\\/\x00-\x1f\x7f]')


def is_reserved_name(name: str) -> bool:
    """A Windows device name (`con`, `aux.md`, `COM1.txt`), unusable as a file on Windows."""
    return _RESERVED.fullmatch(name) is not None


def portable_problem(name: str) -> str | None:
    """Why one path segment cannot be a file name on every system, or None when it can."""
    if name in ("", ".", ".."):
        return "is empty, '.' or '..'"
    if "/" in name or "\\" in name:
        return "holds a path separator"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "holds a NUL or control character"
    if _UNPORTABLE.search(name):
        return 'holds one of <>:"|?* (not portable across operating systems)'
    if is_reserved_name(name):
        return "is a Windows device name (con, prn, aux, nul, com1-9, lpt1-9): not portable"
    if name[-1] in ". ":
        return "ends in a dot or a space (not portable across operating systems)"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    if size > MAX_COMPONENT_BYTES:
        return f"is longer than {MAX_COMPONENT_BYTES} bytes"
    return None


# The names sync tools give the second side of a clash, beside the original file:
# Syncthing `x.sync-conflict-20261201-123456-ABCDEFG.md`, Dropbox (and Obsidian Sync)
# `x (Dana's conflicted copy 2026-12-01).md`, iCloud and OneDrive `x 2.md`.
_CONFLICT_COPY_NAMES = (
    re.compile(r"^(?P<stem>.+?)\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]{7}\.md$"),  # Syncthing
    re.compile(r"^(?P<stem>.+?) \([^()]*conflicted copy[^()]*\)\.md$"),  # Dropbox
    re.compile(r"^(?P<stem>.+?) (?P<number>\d{1,3})\.md$"),  # iCloud, OneDrive
)


def conflict_copy_original(name: str) -> tuple[str, bool] | None:
    """The file name a sync tool's conflict copy named `name` stands for (`x.sync-conflict-
    ….md` → `x.md`), and whether the name alone says so: False for a numbered `x 2.md`, which
    is a copy only when `x.md` is beside it (`Chapter 2.md` may be a chapter). None when the
    name is no conflict copy's."""
    for pattern in _CONFLICT_COPY_NAMES:
        found = pattern.match(name)
        if found is not None:
            return found.group("stem") + ".md", "number" not in found.groupdict()
    return None


def default_note_id(path: str, salt: int = 0) -> str:
    """A human note's id: a digest of the path it was first seen at (`salt` > 0 when a
    smaller path or a claimed id took the unsalted one)."""
    key = path if not salt else f"{path}\x00{salt}"
    return "n-" + blake2b(key.encode("utf-8"), digest_size=8).hexdigest()

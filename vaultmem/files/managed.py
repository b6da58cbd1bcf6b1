"""The managed folder: the only code that writes into the vault, and the checks that keep it there.

Paths are built from checked components only (`topic_path`): no empty, `.` or `..` segment, no
separator, NUL or control character, no leading dot, bounded length. Before any read or write the
path is walked from the vault root with `lstat`, one component at a time (`checked_path`): a
symbolic link anywhere on the way is refused, and so is a name that differs only in case from an
existing entry (on a case-insensitive disk they are the same file; on others a sync client would
make them collide). Every path written is asserted to be inside the managed folder.

Writes are atomic (`write_text`): a hidden temp file in the target folder, fsync, `os.replace`,
fsync of the folder, so a reader or a crash sees the old file or the new one, never a mix.
Removal is a move into `<managed>/.trash/` (`move_to_trash`), which Obsidian and the scanner
ignore. `topic_lock` is an advisory per-file `fcntl` lock under `.vaultmem/locks/`, held for a
read-modify-write; the kernel drops it if the holder dies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from vaultmem.config import Config
from vaultmem.errors import LockedError, PathEscapeError
from vaultmem.files.atomic import fsync_folder, replace_file
from vaultmem.files.lock import file_lock
from vaultmem.models import SCOPES

TRASH = ".trash"
DECISIONS_NOTE = "_decisions.md"
MAX_COMPONENT_BYTES = 255
MAX_SCOPE_ID = 64
MAX_KEY = 60
_NO_ID_SCOPES = frozenset({"global", "federated"})


def check_component(name: str, what: str, *, max_len: int = MAX_COMPONENT_BYTES) -> str:
    """One path segment that cannot leave its folder; PathEscapeError otherwise."""
    problem = None
    if name in ("", ".", ".."):
        problem = "is empty, '.' or '..'"
    elif "/" in name or "\\" in name:
        problem = "holds a path separator"
    elif any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        problem = "holds a NUL or control character"
    elif name.startswith("."):
        problem = "starts with '.' (hidden)"
    elif len(name) > max_len or len(name.encode()) > MAX_COMPONENT_BYTES:
        problem = f"is longer than {max_len} characters"
    elif os.path.isabs(name) or (len(name) > 1 and name[1] == ":"):
        problem = "is an absolute path"
    if problem:
        shown = name[:40].replace("\x00", "\\0") + ("…" if len(name) > 40 else "")
        raise PathEscapeError(f"The {what} {shown!r} {problem}; it would leave the managed folder.")
    return name


def topic_path(config: Config, scope: str, scope_id: str | None, key: str) -> str:
    """`<managed>/<scope>/[<scope_id>/]<key>.md`, every component checked."""
    if scope not in SCOPES:
        raise PathEscapeError(f"{scope!r} is not a scope; allowed: {', '.join(SCOPES)}.")
    parts = [config.managed_folder, scope]
    if scope in _NO_ID_SCOPES:
        if scope_id is not None:
            raise PathEscapeError(f"Scope {scope!r} has no scope id (got {scope_id!r}).")
    else:
        if scope_id is None:
            raise PathEscapeError(f"Scope {scope!r} needs a scope id.")
        parts.append(check_component(scope_id, "scope id", max_len=MAX_SCOPE_ID))
    parts.append(check_component(key, "key", max_len=MAX_KEY) + ".md")
    return "/".join(parts)


def _inside_managed(config: Config, rel: str) -> None:
    if not config.is_managed(rel) or rel == config.managed_folder:
        raise PathEscapeError(f"{rel!r} is outside the managed folder {config.managed_folder!r}.")


def checked_path(config: Config, rel: str, *, create_parents: bool = False) -> Path:
    """The absolute path of `rel`, walked from the vault root with lstat: no symlink on the way,
    no case-only twin of an existing entry. Missing folders are created when asked."""
    _inside_managed(config, rel)
    parts = rel.split("/")
    for part in parts:
        if part != TRASH:  # the one hidden folder vaultmem itself writes
            check_component(part, "path component")
    current = config.root
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        _refuse_case_twin(current, part, rel)
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if last:
                break
            if not create_parents:
                continue
            # A concurrent writer may have made it first; it is checked just below.
            with contextlib.suppress(FileExistsError):
                os.mkdir(current)
            st = os.lstat(current)
        if stat.S_ISLNK(st.st_mode):
            raise PathEscapeError(f"{rel!r}: {'/'.join(parts[: i + 1])} is a symbolic link.")
        if not last and not stat.S_ISDIR(st.st_mode):
            raise PathEscapeError(f"{rel!r}: {'/'.join(parts[: i + 1])} is not a folder.")
    root_real = os.path.realpath(config.root / config.managed_folder)
    real = os.path.realpath(current.parent)
    if real != root_real and not real.startswith(root_real + os.sep):
        raise PathEscapeError(f"{rel!r} resolves outside the managed folder.")
    return current


def _refuse_case_twin(folder: Path, name: str, rel: str) -> None:
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    folded = name.casefold()
    for other in names:
        if other != name and other.casefold() == folded:
            raise PathEscapeError(
                f"{rel!r}: {name!r} differs only in case from the existing {other!r}.",
                hint="Use the existing name's spelling, or another key.",
            )


def read_text(config: Config, rel: str) -> str | None:
    """A managed file's text, or None when it does not exist. Never follows a link."""
    path = checked_path(config, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathEscapeError(f"{rel!r} is a symbolic link.") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def write_text(config: Config, rel: str, text: str) -> None:
    """Publish `text` at `rel` atomically: temp file, fsync, rename, fsync the folder."""
    path = checked_path(config, rel, create_parents=True)
    assert config.is_managed(rel), rel
    replace_file(path, text.encode("utf-8"))


def move_to_trash(config: Config, rel: str, now: datetime) -> str:
    """Move a managed file to `<managed>/.trash/<same relative path>`; a name already taken gets
    a timestamp suffix. Returns the new vault-relative path."""
    source = checked_path(config, rel)
    inner = rel[len(config.managed_folder) + 1 :]
    target_rel = f"{config.managed_folder}/{TRASH}/{inner}"
    target = checked_path(config, target_rel, create_parents=True)
    if os.path.lexists(target):
        stem = inner.removesuffix(".md")
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        for n in range(1000):
            suffix = f".{stamp}" + (f"-{n}" if n else "")
            target_rel = f"{config.managed_folder}/{TRASH}/{stem}{suffix}.md"
            target = checked_path(config, target_rel, create_parents=True)
            if not os.path.lexists(target):
                break
    os.replace(source, target)
    fsync_folder(target.parent)
    fsync_folder(source.parent)
    return target_rel


def list_topics(config: Config) -> list[str]:
    """Vault-relative paths of every topic file on disk (`<managed>/<scope>/[<id>/]<key>.md`),
    never following a link, skipping hidden names."""
    out: list[str] = []
    base = config.root / config.managed_folder
    for scope in SCOPES:
        folder = base / scope
        if not _is_real_dir(folder):
            continue
        for entry in sorted(os.listdir(folder)):
            if entry.startswith("."):
                continue
            full = folder / entry
            if scope in _NO_ID_SCOPES:
                if entry.endswith(".md") and _is_real_file(full):
                    out.append(f"{config.managed_folder}/{scope}/{entry}")
            elif _is_real_dir(full):
                for name in sorted(os.listdir(full)):
                    hidden = name.startswith(".")
                    if name.endswith(".md") and not hidden and _is_real_file(full / name):
                        out.append(f"{config.managed_folder}/{scope}/{entry}/{name}")
    return out


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_real_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


@contextmanager
def topic_lock(config: Config, rel: str, *, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold the advisory lock of one managed file for a read-modify-write."""
    folder = config.state_dir / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(rel.casefold().encode()).hexdigest()[:24]

    def busy() -> LockedError:
        return LockedError(f"Another writer has held the lock on {rel} for {timeout_s:.0f} s.")

    with file_lock(folder / f"{digest}.lock", timeout_s=timeout_s, busy=busy):
        yield

"""The managed folder: the only code that writes into the vault, and the checks that keep it there.

Paths are built from checked components only (`topic_path`): every segment passes the one
portable-name rule (`names.portable_problem`: no separator, NUL or control character, no Windows
device name, no trailing dot or space, bounded length) and may not start with a dot.

No path is ever resolved twice. Every read, write and move walks the path from the vault root
one component at a time with `openat`-style calls (`os.open(name, O_DIRECTORY | O_NOFOLLOW,
dir_fd=parent)`), holding each folder open while it opens the next: a symbolic link anywhere on
the way is refused (`ELOOP`), and a folder swapped for a link after it was opened cannot redirect
the write, because the temp file is created and renamed relative to the folder descriptor
(`atomic.replace_at`). A name that differs only in case from an existing entry is refused too (on
a case-insensitive disk they are the same file; on others a sync client would make them
collide). The file itself is opened with `O_NOFOLLOW | O_NONBLOCK` and must be a regular file: a
FIFO, socket or folder at a topic path is refused at once instead of hanging the writer.

Writes are atomic: a hidden temp file in the target folder, fsync, rename, fsync of the folder,
so a reader or a crash sees the old file or the new one, never a mix. Bytes that are not UTF-8
in a person's file survive an edit (`read_text(..., errors="surrogateescape")` and
`write_text` round-trip them). Removal is a move into `<managed>/.trash/` (`move_to_trash`),
which Obsidian and the scanner ignore. `topic_lock` is an advisory per-file `fcntl` lock under
`.vaultmem/locks/`, held for a read-modify-write; the kernel drops it if the holder dies.
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

from vaultmem.core.atomic import replace_at
from vaultmem.core.config import Config
from vaultmem.core.errors import LockedError, PathEscapeError
from vaultmem.core.models import SCOPES
from vaultmem.core.names import MAX_COMPONENT_BYTES, MAX_KEY, MAX_SCOPE_ID, TRASH, portable_problem
from vaultmem.files.lock import file_lock

__all__ = [
    "DECISIONS_NOTE",
    "MAX_COMPONENT_BYTES",
    "MAX_KEY",
    "MAX_SCOPE_ID",
    "TRASH",
    "check_component",
    "ensure_text",
    "list_topics",
    "move_to_trash",
    "read_bytes",
    "read_text",
    "topic_lock",
    "topic_path",
    "write_text",
]

DECISIONS_NOTE = "_decisions.md"
TOPICS_BASE = "topics.base"
GITATTRIBUTES = ".gitattributes"
_NO_ID_SCOPES = frozenset({"global", "federated"})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def check_component(name: str, what: str, *, max_len: int = MAX_COMPONENT_BYTES) -> str:
    """One path segment that cannot leave its folder; PathEscapeError otherwise."""
    problem = portable_problem(name)
    if problem is None and name.startswith("."):
        problem = "starts with '.' (hidden)"
    if problem is None and len(name) > max_len:
        problem = f"is longer than {max_len} characters"
    if problem:
        shown = name[:40].encode("utf-8", "backslashreplace").decode()
        shown = shown.replace("\x00", "\\0") + ("…" if len(name) > 40 else "")
        raise PathEscapeError(
            f"The {what} {shown!r} {problem}.",
            hint="Use lower-case letters, digits and hyphens (a scope id may also hold '.' "
            "and '_').",
        )
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


def _inside_managed(config: Config, rel: str) -> list[str]:
    if not config.is_managed(rel) or rel == config.managed_folder:
        raise PathEscapeError(f"{rel!r} is outside the managed folder {config.managed_folder!r}.")
    parts = rel.split("/")
    for part in parts:
        if part not in (TRASH, GITATTRIBUTES):  # the hidden names vaultmem itself writes
            check_component(part, "path component")
    return parts


@contextmanager
def _parent(config: Config, rel: str, *, create: bool) -> Iterator[tuple[int | None, str]]:
    """The open folder holding `rel` and the file's name, walked from the vault root without
    following a link. The descriptor is None when a folder on the way does not exist (and
    `create` is off)."""
    parts = _inside_managed(config, rel)
    fd = os.open(config.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            _refuse_case_twin(fd, part, rel)
            child = _open_folder(fd, part, rel, "/".join(parts[: i + 1]), create=create)
            os.close(fd)
            fd = child
            if fd < 0:
                break
        if fd >= 0:
            _refuse_case_twin(fd, parts[-1], rel)
        yield (fd if fd >= 0 else None), parts[-1]
    finally:
        if fd >= 0:
            os.close(fd)


def _open_folder(parent: int, name: str, rel: str, shown: str, *, create: bool) -> int:
    """Open one folder relative to `parent` with O_NOFOLLOW; -1 when missing and not created."""
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return -1
            # A concurrent writer may make it first; the open just below checks what is there.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            # With O_DIRECTORY, Linux reports a link as ENOTDIR: lstat tells which it was.
            link = exc.errno == errno.ELOOP or _is_link(parent, name)
            what = "is a symbolic link" if link else "is not a folder"
            raise PathEscapeError(f"{rel!r}: {shown} {what}.") from exc
    raise PathEscapeError(f"{rel!r}: {shown} keeps changing; refusing to write there.")


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refuse_case_twin(folder_fd: int, name: str, rel: str) -> None:
    try:
        names = os.listdir(folder_fd)
    except OSError:
        return
    folded = name.casefold()
    for other in names:
        if other != name and other.casefold() == folded:
            raise PathEscapeError(
                f"{rel!r}: {name!r} differs only in case from the existing {other!r}.",
                hint="Use the existing name's spelling, or another key.",
            )


def _refuse_odd_file(rel: str, mode: int) -> None:
    if stat.S_ISLNK(mode):
        raise PathEscapeError(f"{rel!r} is a symbolic link.")
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        raise PathEscapeError(
            f"{rel!r} is {kind}, not a regular file; vaultmem reads and writes only files there.",
            hint="Move it out of the managed folder, then run the command again.",
        )


def read_bytes(config: Config, rel: str) -> bytes | None:
    """A managed file's bytes, or None when it does not exist. Never follows a link, never
    blocks on a FIFO, refuses anything but a regular file."""
    with _parent(config, rel, create=False) as (folder, name):
        if folder is None:
            return None
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathEscapeError(f"{rel!r} is a symbolic link.") from exc
            if exc.errno == errno.ENXIO:  # a socket
                _refuse_odd_file(rel, stat.S_IFSOCK)
            raise
        try:
            _refuse_odd_file(rel, os.fstat(fd).st_mode)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read()


def read_text(config: Config, rel: str, *, errors: str = "replace") -> str | None:
    """A managed file's text, or None when it does not exist. `errors="surrogateescape"` keeps
    bytes that are not UTF-8 so that `write_text` puts them back unchanged."""
    data = read_bytes(config, rel)
    return None if data is None else data.decode("utf-8", errors)


def write_text(config: Config, rel: str, text: str) -> None:
    """Publish `text` at `rel` atomically: temp file, fsync, rename, fsync the folder, all
    relative to the folder walked without following links."""
    data = text.encode("utf-8", "surrogateescape")
    with _parent(config, rel, create=True) as (folder, name):
        assert folder is not None
        _refuse_existing_odd_file(folder, name, rel)
        replace_at(folder, name, data)


def ensure_text(config: Config, rel: str, text: str) -> bool:
    """Write a generated file (the Bases view, `.gitattributes`) only when its bytes differ
    from `text`, so a sync tool or git sees a change only when there is one."""
    if read_bytes(config, rel) == text.encode("utf-8"):
        return False
    write_text(config, rel, text)
    return True


def _refuse_existing_odd_file(folder: int, name: str, rel: str) -> None:
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    _refuse_odd_file(rel, mode)


def move_to_trash(config: Config, rel: str, now: datetime) -> str:
    """Move a managed file to `<managed>/.trash/<same relative path>`; a name already taken gets
    a timestamp suffix. Returns the new vault-relative path."""
    inner = rel[len(config.managed_folder) + 1 :]
    target_rel = f"{config.managed_folder}/{TRASH}/{inner}"
    with (
        _parent(config, rel, create=False) as (source, source_name),
        _parent(config, target_rel, create=True) as (target, target_name),
    ):
        if source is None:
            raise FileNotFoundError(rel)
        _refuse_odd_file(rel, os.stat(source_name, dir_fd=source, follow_symlinks=False).st_mode)
        assert target is not None
        if _exists(target, target_name):
            stem = target_name.removesuffix(".md")
            stamp = now.strftime("%Y%m%dT%H%M%SZ")
            for n in range(1000):
                candidate = f"{stem}.{stamp}" + (f"-{n}" if n else "") + ".md"
                if not _exists(target, candidate):
                    target_name = candidate
                    break
            target_rel = target_rel.rsplit("/", 1)[0] + "/" + target_name
        os.rename(source_name, target_name, src_dir_fd=source, dst_dir_fd=target)
        os.fsync(target)
        os.fsync(source)
    return target_rel


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


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

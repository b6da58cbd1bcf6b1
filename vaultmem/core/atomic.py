"""Atomic file replacement: the one way vaultmem publishes a file, wherever it writes.

Write a temp file in the target's folder, fsync it, rename it over the target, fsync the
folder: a reader sees the old bytes or the new ones, never a torn file, and a crash leaves
at worst a stray `.name.*.tmp`. The new file keeps the old one's permission bits, or gets
the usual `0666 & ~umask` (mkstemp alone would leave every file private, 0600).

`replace_at` does all of it relative to an open folder descriptor: the temp file is created
with `O_EXCL | O_NOFOLLOW` and renamed with `dir_fd`, so no path is resolved twice and a folder
swapped for a symbolic link half-way cannot redirect the write (the managed folder relies on it).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def replace_file(path: Path, data: bytes) -> None:
    """Publish `data` at `path` atomically (the folder must exist)."""
    dir_fd = os.open(path.parent, _DIR_FLAGS)
    try:
        replace_at(dir_fd, path.name, data)
    finally:
        os.close(dir_fd)


def replace_at(dir_fd: int, name: str, data: bytes) -> None:
    """Publish `data` as `name` inside the open folder `dir_fd`, atomically, never following a
    link: the temp file is made in that folder and renamed there."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        mode = stat.S_IMODE(mode) if stat.S_ISREG(mode) else 0o666 & ~_umask()
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = f".{name[:200]}.{os.urandom(4).hex()}.tmp"  # not `secrets`: hmac, OpenSSL
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"no free temp name for {name}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current

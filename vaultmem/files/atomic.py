"""Atomic file replacement: the one way vaultmem publishes a file, wherever it writes.

Write a temp file in the target's folder, fsync it, rename it over the target, fsync the
folder: a reader sees the old bytes or the new ones, never a torn file, and a crash leaves
at worst a stray `.name.*.tmp`. The new file keeps the old one's permission bits, or gets
the usual `0666 & ~umask` (mkstemp alone would leave every file private, 0600).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_file(path: Path, data: bytes) -> None:
    """Publish `data` at `path` atomically (the folder must exist)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current

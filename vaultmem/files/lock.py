"""The vault's writer lock: one process at a time changes the index or the managed folder.

An advisory `fcntl.flock` on `.vaultmem/write.lock`. The kernel drops it when the holder dies,
so a `kill -9` never leaves a stale lock behind. The holder writes its pid and command into the
file so that a waiting process can say who it is waiting for.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from vaultmem.core.errors import IndexUnavailableError, LockedError

LOCK_NAME = "write.lock"

RETRY_MAX_S = 0.02
"""The longest wait between two tries of a busy lock. A try is one system call, so a waiting
process takes the lock within this long of its release (a cap of 0.25 s made a `store`
behind the watcher's batch wait up to a quarter second more)."""

WRITER_POLL_S = 0.002
"""How often `wait_for_writer` looks whether the writer is done."""

_HELD: set[Path] = set()
"""The writer lock files this process holds: it never waits for itself (`wait_for_writer`)."""


@contextmanager
def file_lock(path: Path, *, timeout_s: float, busy: Callable[[], LockedError]) -> Iterator[int]:
    """Hold an exclusive flock on `path` (created if missing), polling with backoff for up to
    `timeout_s`; then raise what `busy()` builds. Yields the lock file's descriptor."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except PermissionError as error:
        raise IndexUnavailableError(
            f"Cannot create the lock file {path}: permission denied.",
            hint=f"Make {path.parent} writable (`chmod u+w {path.parent}`) or run vaultmem as "
            "its owner.",
        ) from error
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy() from None
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def writer_lock(state_dir: Path, *, timeout_s: float = 30.0) -> Iterator[None]:
    """Hold the vault's writer lock, waiting up to `timeout_s` (0 = fail at once)."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / LOCK_NAME

    def busy() -> LockedError:
        return LockedError(
            f"Another vaultmem writer holds {path} ({_holder(path)}).",
            hint="Wait for it to finish (or stop it), then run the command again.",
        )

    with file_lock(path, timeout_s=timeout_s, busy=busy) as fd:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {' '.join(sys.argv)[:200]}\n".encode())
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)
            os.ftruncate(fd, 0)


def writer_holds(path: Path) -> bool:
    """Whether another open file holds the writer lock `path`: a non-blocking shared `flock`,
    let go at once (a missing file: no writer yet)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock taken just to test
    return False


def wait_for_writer(state_dir: Path, deadline: float) -> bool:
    """While another process holds the vault's writer lock, wait for it to let go (until
    `deadline`, a `time.monotonic()` value); True when one held it.

    For a process that DuckDB refused the index to: a vaultmem writer holds the index only
    inside this lock, so its release says when to open again. Looking costs a few system calls
    where a refused open costs ~10 ms of DuckDB's start-up, so the look is made every
    `WRITER_POLL_S` and the open follows within that of the writer's end, not after a backoff
    grown to a fifth of a second."""
    path = state_dir / LOCK_NAME
    if path in _HELD:
        return False  # this process is the writer
    held = False
    while writer_holds(path):
        held = True
        if time.monotonic() >= deadline:
            break
        time.sleep(WRITER_POLL_S)
    return held


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "holder unknown"
    return text or "holder unknown"

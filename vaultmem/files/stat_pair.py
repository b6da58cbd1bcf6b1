"""Statting a large vault's notes on two cores: a forked child stats half of them.

A walk with every folder's listing recorded (`files.folder_cache`) is one `lstat` per note
and little else: ~0.3 s of kernel time at 100,000 notes, every run, a no-op and a one-note edit
included. Python threads do not help (each call takes and gives back the GIL; measured slower),
but two processes do: `find` over two halves of a 100,000-note vault at once takes 0.15 s
against 0.31 s for the whole (benchmarks/HISTORY.md). So above `PARALLEL_MIN` notes a forked
child stats the second half and sends back sizes and mtimes, while this process stats the first.

A fork is taken only where it is safe and cheap: on Linux, with at least two processors to run
on, in a process with a single thread (a DuckDB connection or a server's threads mean no fork:
a child of a threaded process can deadlock on a lock another thread held). Anything that goes
wrong in the child (it dies, its answer does not read back) means this process stats its half
too: the answer never depends on the fork.
"""

from __future__ import annotations

import os
import pickle
import sys
from array import array
from collections.abc import Sequence

PARALLEL_MIN = 20_000
"""Fewer notes than this are statted here alone: the fork (~2-5 ms) would cost more than half
of their stats saves."""

Folder = tuple[str, Sequence[str]]
"""(a folder's absolute path, names of files in it to stat)."""

Stats = tuple["array[int]", "array[int]"] | None
"""Sizes and mtimes (ns) of a folder's names in order; None when one of them could not be
statted (gone: the folder changed under the walk; the caller lists it again)."""

_IN_FOLDER = os.lstat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


def stat_folders(folders: Sequence[Folder]) -> list[Stats]:
    """The sizes and mtimes of every folder's names, in order (two processes when many)."""
    total = sum(len(names) for _, names in folders)
    if total < PARALLEL_MIN or not _can_fork():
        return [stat_names(path, names) for path, names in folders]
    mine, theirs = _halves(folders, total // 2)
    child = _fork_stats(theirs)
    first = [stat_names(path, names) for path, names in mine]
    second = _collect(child)
    if second is None or len(second) != len(theirs):
        second = [stat_names(path, names) for path, names in theirs]
    return _joined(first, second, split=len(mine) + len(theirs) > len(folders))


def stat_names(path: str, names: Sequence[str]) -> Stats:
    """`lstat` of each name in the folder at `path`, by name in the open folder: the kernel
    then looks up one name, not every folder of the path (~13% faster at 100,000 notes)."""
    sizes, mtimes = array("q"), array("q")
    size, mtime = sizes.append, mtimes.append
    lstat = os.lstat
    try:
        if not _IN_FOLDER:
            base = path + os.sep
            for name in names:
                st = lstat(base + name)
                size(st.st_size)
                mtime(st.st_mtime_ns)
            return sizes, mtimes
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in names:
                st = lstat(name, dir_fd=fd)
                size(st.st_size)
                mtime(st.st_mtime_ns)
        finally:
            os.close(fd)
    except OSError:
        return None
    return sizes, mtimes


def _can_fork() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        if len(os.sched_getaffinity(0)) < 2:
            return False
        return len(os.listdir("/proc/self/task")) == 1  # native threads (DuckDB's) count too
    except OSError:
        return False


def _halves(folders: Sequence[Folder], cut: int) -> tuple[list[Folder], list[Folder]]:
    """The folders split at the `cut`-th name (a folder can be cut in two)."""
    seen = 0
    for i, (path, names) in enumerate(folders):
        if seen + len(names) > cut:
            at = cut - seen
            head = [*folders[:i], (path, names[:at])] if at else list(folders[:i])
            return head, [(path, names[at:]), *folders[i + 1 :]]
        seen += len(names)
    return list(folders), []


class _Child:
    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd


def _fork_stats(folders: list[Folder]) -> _Child | None:
    """A child that stats `folders` and writes its answer, pickled, to a pipe."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: never returns into the caller's code
        code = 1
        try:
            os.close(read_fd)
            data = pickle.dumps([stat_names(p, n) for p, n in folders], pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _collect(child: _Child | None) -> list[Stats] | None:
    """The child's answer, or None when it has none to give."""
    if child is None:
        return None
    chunks: list[bytes] = []
    try:
        while chunk := os.read(child.fd, 1 << 20):
            chunks.append(chunk)
    except OSError:
        chunks = []
    finally:
        os.close(child.fd)
        _, status = os.waitpid(child.pid, 0)
    if status != 0 or not chunks:
        return None
    try:
        answer = pickle.loads(b"".join(chunks))
    except Exception:  # a child that died mid-write: stat its half here
        return None
    return answer if isinstance(answer, list) else None


def _joined(first: list[Stats], second: list[Stats], *, split: bool) -> list[Stats]:
    """The two halves' answers as one per folder: a folder cut in two joins its pieces."""
    if not split or not first or not second:
        return first + second
    head, tail = first[-1], second[0]
    if head is None or tail is None:
        middle: Stats = None
    else:
        middle = (head[0] + tail[0], head[1] + tail[1])
    return [*first[:-1], middle, *second[1:]]

"""Analysing many notes (parse + search documents) on both cores when the batch is large.

Parsing is pure CPU (mistune's AST plus our plugins), so a process pool scales it; threads
would not, because of the GIL. A small batch (one edited note, a watcher tick) parses in the
calling process: starting workers costs more than it saves. Workers come from a `forkserver`
that preloads the parser, so no DuckDB state or threads are ever forked.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import repeat

from vaultmem.documents import SearchDocument, note_documents
from vaultmem.models import ParsedNote
from vaultmem.parse import parse_note

Analysed = tuple[ParsedNote, list[SearchDocument]]
Progress = Callable[[int, int], None]

PARALLEL_MIN_BYTES = 1_500_000
"""Below this much Markdown, one process is faster than two (measured: benchmarks/bench_parse)."""

_CHUNK_BYTES = 400_000


def analyse_note(path: str, data: bytes, max_bytes: int) -> Analysed:
    """Parse a note and cut it into search documents: all the CPU work one note needs."""
    parsed = parse_note(path, data, max_bytes=max_bytes)
    return parsed, note_documents(parsed.note)


def _analyse_chunk(items: Sequence[tuple[str, bytes]], max_bytes: int) -> list[Analysed]:
    return [analyse_note(path, data, max_bytes) for path, data in items]


def _exit_with_owner(owner: int) -> None:
    """Make a worker exit when the process that started the pool dies (`kill -9`, say).

    A pool worker blocks on its task queue forever once its owner is gone, and the forkserver
    that forked it stays up as long as any worker does, so neither notices on its own. Each
    worker therefore watches the owner's pid from a daemon thread.
    """

    def watch() -> None:
        while _alive(owner):
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="vaultmem-owner-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed owner not yet reaped by its parent is a zombie: as good as gone
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _chunks(items: Sequence[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = [[]]
    size = 0
    for item in items:
        if size >= _CHUNK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += len(item[1])
    return [c for c in chunks if c]


def worker_count() -> int:
    return max(1, min(2, len(os.sched_getaffinity(0))))


def analyse_all(
    items: Sequence[tuple[str, bytes]],
    *,
    max_bytes: int,
    progress: Progress | None = None,
) -> list[Analysed]:
    """Analyse (path, bytes) pairs, in order; two processes when the batch is large."""
    if worker_count() < 2 or sum(len(data) for _, data in items) < PARALLEL_MIN_BYTES:
        return _analyse_here(items, max_bytes, progress)
    try:
        return _analyse_in_pool(items, max_bytes, progress)
    except BrokenProcessPool:
        # Workers could not start (e.g. `__main__` is stdin or a notebook, which forkserver
        # cannot re-import): parsing in this process is slower but gives the same result.
        return _analyse_here(items, max_bytes, progress)


def _analyse_here(
    items: Sequence[tuple[str, bytes]], max_bytes: int, progress: Progress | None
) -> list[Analysed]:
    total = len(items)
    out = []
    for i, (path, data) in enumerate(items):
        out.append(analyse_note(path, data, max_bytes))
        if progress and i % 200 == 0:
            progress(i, total)
    if progress:
        progress(total, total)
    return out


def _analyse_in_pool(
    items: Sequence[tuple[str, bytes]], max_bytes: int, progress: Progress | None
) -> list[Analysed]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["vaultmem.parse"])
    results: list[Analysed] = []
    with ProcessPoolExecutor(
        max_workers=worker_count(),
        mp_context=context,
        initializer=_exit_with_owner,
        initargs=(os.getpid(),),
    ) as pool:
        for chunk in pool.map(_analyse_chunk, _chunks(items), repeat(max_bytes)):
            results.extend(chunk)
            if progress:
                progress(len(results), len(items))
    return results

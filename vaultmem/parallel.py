"""Analysing many notes (parse + search documents) on both cores when the batch is large enough to pay for the workers.

Parsing is pure CPU (mistune's AST plus our plugins), so a process pool scales it; threads
would not, because of the GIL. A small batch (one edited note, a watcher tick) parses in the
calling process: starting workers costs more than it saves. Workers come from a `forkserver`
that preloads the parser, so no DuckDB state or threads are ever forked.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat

from vaultmem.documents import SearchDocument, note_documents
from vaultmem.models import ParsedNote
from vaultmem.parse import parse_note

Analysed = tuple[ParsedNote, list[SearchDocument]]

PARALLEL_MIN_BYTES = 1_500_000
"""Below this much Markdown, one process is faster than two (measured: benchmarks/bench_parse)."""

_CHUNK_BYTES = 400_000


def analyse_note(path: str, data: bytes, max_bytes: int) -> Analysed:
    """Parse a note and cut it into search documents: all the CPU work one note needs."""
    parsed = parse_note(path, data, max_bytes=max_bytes)
    return parsed, note_documents(parsed.note)


def _analyse_chunk(items: Sequence[tuple[str, bytes]], max_bytes: int) -> list[Analysed]:
    return [analyse_note(path, data, max_bytes) for path, data in items]


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
    progress: Callable[[int, int], None] | None = None,
) -> list[Analysed]:
    """Analyse (path, bytes) pairs, in order; two processes when the batch is large."""
    total = len(items)
    workers = worker_count()
    if workers < 2 or sum(len(data) for _, data in items) < PARALLEL_MIN_BYTES:
        out = []
        for i, (path, data) in enumerate(items):
            out.append(analyse_note(path, data, max_bytes))
            if progress and i % 200 == 0:
                progress(i, total)
        if progress:
            progress(total, total)
        return out
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["vaultmem.parse"])
    results: list[Analysed] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for chunk in pool.map(_analyse_chunk, _chunks(items), repeat(max_bytes)):
            results.extend(chunk)
            if progress:
                progress(len(results), total)
    return results

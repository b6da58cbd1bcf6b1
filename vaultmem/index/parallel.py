"""Analysing many notes (parse + search documents) on both cores when the batch is large.

Parsing is pure CPU (mistune's AST plus our plugins), so a process pool scales it; threads
would not, because of the GIL. A small batch (one edited note, a watcher tick) parses in the
calling process: starting workers costs more than it saves. Workers come from a `forkserver`
that preloads the parser, so no DuckDB state or threads are ever forked.

Postings are most of the index's rows (~2M for 10,000 notes), so they never travel back as
Python objects: each chunk writes its postings straight to a TSV file
(`search.documents.postings_lines`; the note number is the note's position in the batch,
because ids are assigned only after every note is parsed) and the store loads all files with
DuckDB's CSV reader.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from itertools import repeat
from pathlib import Path

from vaultmem.models import ParsedNote
from vaultmem.note.parse import parse_note
from vaultmem.search.documents import SearchDocument, note_documents, postings_lines
from vaultmem.search.tokenizer import DEFAULT_LANGUAGE

Analysed = tuple[ParsedNote, list[SearchDocument]]
Progress = Callable[[int, int], None]

PARALLEL_MIN_BYTES = 1_500_000
"""Below this much Markdown, one process is faster than two (measured: benchmarks/bench_parse)."""

_CHUNK_BYTES = 400_000


def analyse_note(
    path: str, data: bytes, max_bytes: int, language: str = DEFAULT_LANGUAGE
) -> Analysed:
    """Parse a note and cut it into search documents: all the CPU work one note needs."""
    parsed = parse_note(path, data, max_bytes=max_bytes)
    return parsed, note_documents(parsed.note, language)


def _analyse_chunk(
    first: int,
    items: Sequence[tuple[str, bytes]],
    max_bytes: int,
    postings_path: str,
    language: str = DEFAULT_LANGUAGE,
) -> list[Analysed]:
    """Analyse notes `first`, `first + 1`, …; write their postings to `postings_path`."""
    out: list[Analysed] = []
    lines: list[str] = []
    for number, (path, data) in enumerate(items, start=first):
        parsed, documents = analyse_note(path, data, max_bytes, language)
        lines.extend(postings_lines(number, documents))
        out.append((parsed, [replace(doc, terms=()) for doc in documents]))
    with open(postings_path, "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(lines)
    return out


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


def _chunks(items: Sequence[tuple[str, bytes]]) -> list[tuple[int, list[tuple[str, bytes]]]]:
    """(first note number, notes) runs of about _CHUNK_BYTES each."""
    chunks: list[tuple[int, list[tuple[str, bytes]]]] = [(0, [])]
    size = 0
    for number, item in enumerate(items):
        if size >= _CHUNK_BYTES:
            chunks.append((number, []))
            size = 0
        chunks[-1][1].append(item)
        size += len(item[1])
    return [c for c in chunks if c[1]]


def worker_count() -> int:
    return max(1, min(2, len(os.sched_getaffinity(0))))


def analyse_all(
    items: Sequence[tuple[str, bytes]],
    postings_dir: Path,
    *,
    max_bytes: int,
    progress: Progress | None = None,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[list[Analysed], list[Path]]:
    """Analyse (path, bytes) pairs, in order, two processes when the batch is large.

    Returns the parsed notes with their documents (without terms) and the TSV files holding
    the postings, written into `postings_dir`.
    """
    chunks = _chunks(items)
    files = [postings_dir / f"postings-{i:05d}.tsv" for i in range(len(chunks))]
    if worker_count() >= 2 and sum(len(data) for _, data in items) >= PARALLEL_MIN_BYTES:
        try:
            return _analyse_in_pool(chunks, files, max_bytes, progress, len(items), language), files
        except BrokenProcessPool:
            pass  # workers could not start (e.g. `__main__` is stdin, which forkserver
            # cannot re-import): parsing here is slower but gives the same result
    results: list[Analysed] = []
    for (first, chunk), file in zip(chunks, files, strict=True):
        results.extend(_analyse_chunk(first, chunk, max_bytes, str(file), language))
        if progress:
            progress(len(results), len(items))
    return results, files


def _analyse_in_pool(
    chunks: list[tuple[int, list[tuple[str, bytes]]]],
    files: list[Path],
    max_bytes: int,
    progress: Progress | None,
    total: int,
    language: str,
) -> list[Analysed]:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["vaultmem.note.parse"])
    results: list[Analysed] = []
    with ProcessPoolExecutor(
        max_workers=worker_count(),
        mp_context=context,
        initializer=_exit_with_owner,
        initargs=(os.getpid(),),
    ) as pool:
        for chunk in pool.map(
            _analyse_chunk,
            [first for first, _ in chunks],
            [chunk for _, chunk in chunks],
            repeat(max_bytes),
            [str(f) for f in files],
            repeat(language),
        ):
            results.extend(chunk)
            if progress:
                progress(len(results), total)
    return results

"""How much staged JSON one load statement reads, and how a process's staged files are cut
into parts so that a load can keep to it (pure: no DuckDB).

DuckDB's JSON reader takes the staged objects (one per chunk, `{column: [values]}`) a
vector of rows at a time, and a run's objects fit in one vector: a statement over every file
of a table holds every value of the table at once, whatever `memory_limit` says. 154 MB of
staged links (5,000 notes of 300 links each) failed a build with an out-of-memory error at
the write's 512 MiB cap; read in groups of up to `STATEMENT_BYTES`, the same rows load
within it (benchmarks/HISTORY.md, session 38). So a process continues its file of a table in
a new part from `PART_BYTES` on, and a load reads the parts in groups of at most
`STATEMENT_BYTES`, several files a group: DuckDB reads the files of one statement on as many
threads (those 154 MB took 3.7 s read a 10 MB file a statement, 1.3 s two or three a statement).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

PART_BYTES = 24 * 1024 * 1024
"""A staged file gets no more objects once it is this large: the next go to a new part."""

STATEMENT_BYTES = 64 * 1024 * 1024
"""The most staged JSON one load statement reads (one file larger than this is read alone)."""


def part_path(folder: Path, stem: str, table: str) -> Path:
    """The file this process appends `table`'s next object to: `<stem>.<table>.json`, or
    `<stem>.<n>.<table>.json`, the first part not yet `PART_BYTES` large."""
    part = 0
    while True:
        path = folder / (f"{stem}.{table}.json" if part == 0 else f"{stem}.{part}.{table}.json")
        try:
            if os.stat(path).st_size < PART_BYTES:
                return path
        except FileNotFoundError:
            return path
        part += 1


def statement_groups(paths: Sequence[str]) -> list[list[str]]:
    """`paths` in order, grouped so that each group's files hold at most `STATEMENT_BYTES`
    together (a larger file makes a group of its own)."""
    groups: list[list[str]] = []
    size = 0
    for path in paths:
        bytes_ = os.path.getsize(path)
        if not groups or size + bytes_ > STATEMENT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(path)
        size += bytes_
    return groups

"""Python's cycle collector paused for one bounded piece of work.

A reconcile at 100,000 notes holds about a million small objects (the walk's fingerprints, the
index's state columns, the files list). Each full pass of the cycle collector visits every one
of them, and the allocations of the walk alone set off enough passes to cost ~0.2 s of a
0.7 s in-process no-op (`benchmarks.bench_steady`, the collector on against off). What a run
makes is freed by reference counting when it is dropped (its values are tuples, lists, dicts
and strings that do not refer back to themselves), so the run needs no cycle collection
before it ends, and the collector runs again after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection inside the block (unless it was off already, it is on after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

"""Python's cycle collector paused for one bounded piece of work.

A reconcile at 100,000 notes holds about a million small objects (the walk's fingerprints, the
index's state columns, the files list). Each full pass of the cycle collector visits every one
of them, and the allocations of the walk alone set off enough passes to cost ~0.2 s of a
0.7 s in-process no-op (`benchmarks.bench_steady`, the collector on against off). What a run
makes is freed by reference counting when it is dropped (its values are tuples, lists, dicts
and strings that do not refer back to themselves), so the run needs no cycle collection
before it ends, and the collector runs again after it.

What the run leaves alive (the index state kept for a warm run: ~600,000 objects at 100,000
notes) is still in the young generation when the collector comes back, so the first
allocation after the block sets off a collection that visits all of it: 38 ms of a cold
one-note edit at 100,000 notes, in a process that ends a moment later. A short-lived process
(`short_lived`, which the command line calls for its one-shot commands) moves those survivors
to the permanent generation instead, as `vaultmem.__main__` does with the imports. A
long-lived one (`watch`, `mcp`) does not: a cycle among frozen objects is never collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_freeze_survivors = False


def short_lived(on: bool = True) -> None:
    """Declare the process short-lived (`on`): from now on, what a paused block leaves alive is
    frozen when the block ends (`gc.freeze`), not visited by the next collection."""
    global _freeze_survivors
    _freeze_survivors = on


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection inside the block (unless it was off already, it is on after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if _freeze_survivors:
                gc.freeze()
            gc.enable()

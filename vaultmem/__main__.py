"""The `vaultmem` script and `python -m vaultmem`: tune the cyclic garbage collector for a short
process, then run the command line (`adapters.cli.main`).

Most commands are processes that live a fraction of a second and make few reference cycles,
yet with CPython's default thresholds the collector runs every 700 net container allocations:
~110 collections in a one-note edit, mostly over long-lived values (imported modules, the
index's 10,000 rows) that they cannot free, plus the full collection at exit over everything
loaded. So, before the imports, the young generation's threshold is raised to
`SHORT_LIVED_THRESHOLD` (garbage cycles then wait for at most that many net allocations, a few
MB), and after them `gc.freeze()` moves everything imported into the permanent generation,
which no collection (the one at exit included) walks again; what a reconcile leaves alive is
frozen the same way when it ends (`core.collector.short_lived`). Measured with callgrind on a cold
edit at 10,000 notes: ~60M instructions fewer, ~3.5% (benchmarks/HISTORY.md). The long-lived
commands (`watch`, `mcp`) keep the default thresholds: a server's garbage should not wait.
Worker processes come from a forkserver, a fresh interpreter with the default collector.

The installed script is `script`: a short-lived command then leaves without the interpreter's
teardown, which frees every object one by one (at 100,000 notes the index state kept for a warm run
is 600,000 of them: ~0.1 s of a cold `reconcile --path`, 0.87 → 0.75 s). Other threads are waited
for, exit handlers still run and both streams are flushed; only the freeing is left to the
operating system.
"""

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

SHORT_LIVED_THRESHOLD = 100_000
"""Net container allocations between young collections in a short-lived command (default 700)."""
LONG_LIVED_COMMANDS = frozenset({"watch", "mcp"})


def main() -> int:
    """Run the command line with the collector set for the command's lifetime."""
    if sys.argv[1:2] == ["hook"]:  # an agent's hook: its own lean path, no click (adapters/hook.py)
        from vaultmem.adapters.hook import main as hook

        return hook(sys.argv[2:])
    if LONG_LIVED_COMMANDS.isdisjoint(sys.argv[1:]):  # a stray "watch" argument only costs speed
        gc.set_threshold(SHORT_LIVED_THRESHOLD, *gc.get_threshold()[1:])
        from vaultmem.core.collector import short_lived

        short_lived()  # what a reconcile leaves alive is frozen too, not collected (core.collector)
    from vaultmem.adapters.cli import main as run

    gc.freeze()
    return run()


def script() -> NoReturn:
    """The `vaultmem` command: `main`, then an exit without the teardown for a short-lived
    command (`main` itself returns, for callers in process)."""
    code = main()
    if not LONG_LIVED_COMMANDS.isdisjoint(sys.argv[1:]):
        sys.exit(code)
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or debugger running the command reports after it
    for thread in threading.enumerate():  # as the interpreter's exit does, wait for them
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # then the exit handlers and finalizers
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with that descriptor closed
                stream.flush()
        except (OSError, ValueError):  # a reader that left: the exit the teardown gives
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    script()

"""The floor of a cold one-note edit: what any `vaultmem reconcile` process pays before it
does the edit's own work, measured in the same run as the edit.

A cold reconcile starts an interpreter, imports what an edit runs (the CLI, the parser, the
index writes), finds the change by a `stat` of every file (a line appended leaves the
folder's mtime as it was, so nothing cheaper can tell which file moved), opens the index for
writing and closes it after a commit. This module does exactly that and nothing more: it
lstats every file once in this one process (timed apart, and divided by the cores a
reconcile spreads its walk over, so the floor is below what any walk here can do), opens
the index, commits an empty write transaction, closes. Run as a script, it prints one JSON
line: {"stat_s", "files"}; `cold_floor` times the whole process around it.

    python -m benchmarks.edit_floor VAULT
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.floor import REPO_ROOT


def _stat_every_file(root: Path) -> int:
    """lstat every file under `root` as the walk sees them (hidden folders skipped)."""
    count = 0
    todo = [str(root)]
    while todo:
        folder = todo.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    os.lstat(entry.path)
                    count += 1
    return count


def main(argv: list[str]) -> None:
    # What every cold edit imports, before anything is read.
    import vaultmem.adapters.cli
    import vaultmem.index.parallel
    import vaultmem.index.reconcile
    import vaultmem.index.transaction
    import vaultmem.note.parse  # noqa: F401
    from vaultmem.core.config import load_config
    from vaultmem.storage import store

    config = load_config(Path(argv[0]))
    start = time.perf_counter()
    files = _stat_every_file(config.root)
    stat_s = time.perf_counter() - start
    con = store.connect(config.index_path, read_only=False)
    con.execute("BEGIN TRANSACTION")
    con.execute("UPDATE search_stats SET documents = documents")
    con.execute("COMMIT")
    con.close()
    print(json.dumps({"stat_s": stat_s, "files": files}))


def cold_floor(vault: Path, runs: int, cores: int) -> dict[str, Any]:
    """The median of `runs` cold floor processes: their wall time with the stat pass counted
    at 1/`cores` of its single-process time (the walk of a reconcile runs on `cores`)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    walls, stats = [], []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.edit_floor", str(vault)],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.perf_counter() - start)
        stats.append(float(json.loads(done.stdout.strip().splitlines()[-1])["stat_s"]))
    wall, stat = statistics.median(walls), statistics.median(stats)
    return {
        "floor_s": wall - stat + stat / cores,
        "process_s": wall,
        "stat_s": stat,
        "cores": cores,
    }


if __name__ == "__main__":
    main(sys.argv[1:])

"""Where the steady state's time goes: a warm, in-process no-op and one-note edit, by phase.

    python -m benchmarks.bench_steady VAULT [--note REL] [--repeat 3]

VAULT must already be indexed (run `vaultmem reconcile` on a copy first: this appends a line to
one note per edit). Each run prints its wall and CPU seconds and the CPU seconds of every
reconcile step and storage statement group (wrappers around `_Run`'s methods and the storage
functions, so nested phases overlap: `transaction` includes `delete_postings`). CPU seconds
count DuckDB's threads too; on a loaded machine they are the steadier figure. Cold-process
figures (imports included) come from `hyperfine` on the CLI: see docs/architecture.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vaultmem.index import reconcile as rc
from vaultmem.storage import index_writes, search_rows
from vaultmem.vault import Vault

STEPS = ("walk", "steady", "load_state", "prepare", "identities", "transaction", "_reresolve")
STATEMENTS = {
    index_writes: ("read_state", "delete_notes", "load_staged", "links_to_reresolve"),
    search_rows: ("delete_postings", "load_postings", "recount_terms"),
}


def _timer(totals: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.process_time() - start

    return timed


def instrument(totals: dict[str, float]) -> None:
    for name in STEPS:
        setattr(rc._Run, name, _timer(totals, name, getattr(rc._Run, name)))
    rc.plan_changes = _timer(totals, "plan", rc.plan_changes)
    for module, names in STATEMENTS.items():
        for name in names:
            setattr(module, name, _timer(totals, name, getattr(module, name)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--note", help="vault-relative note to edit (default: the middle one)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    vault = Vault(args.vault)
    if args.note:
        note = args.vault / args.note
    else:
        notes = sorted(p for p in args.vault.rglob("*.md") if ".vaultmem" not in p.parts)
        note = notes[len(notes) // 2]
    totals: dict[str, float] = defaultdict(float)
    instrument(totals)

    def edit() -> None:
        with note.open("a", encoding="utf-8") as handle:
            handle.write(f"\nsteady-state benchmark edit {time.time_ns()}\n")

    edit()
    vault.reconcile()  # warm: the parser's and DuckDB's imports are loaded from here on
    for mode in ("no-op", "edit"):
        walls, cpus, phases = [], [], defaultdict(list)
        for _ in range(args.repeat):
            if mode == "edit":
                edit()
            totals.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            report = vault.reconcile()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            assert report.changed == (1 if mode == "edit" else 0), report
            for label, seconds in totals.items():
                phases[label].append(seconds)
        print(
            f"{mode}: wall {statistics.median(walls):.3f} s, CPU {statistics.median(cpus):.3f} s"
            f" (medians of {args.repeat})"
        )
        ranked = sorted(phases.items(), key=lambda kv: -statistics.median(kv[1]))
        print("  " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in ranked))


if __name__ == "__main__":
    main()

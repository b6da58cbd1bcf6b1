"""Where the steady state's time goes: a warm, in-process no-op, one-note edit and one-note
edit named by path (`reconcile --path`, as the watcher runs it), by phase.

    python -m benchmarks.bench_steady [VAULT] [--note REL] [--repeat 3] [--statements 25]
                                      [--quick] [--json]

VAULT must already be indexed (run `vaultmem reconcile` on a copy first: this appends a line to
one note per edit). Without VAULT (as `make bench` runs it) a copy of the generated vault
(10,000 notes; `--quick`: 1,000) is indexed in a temporary folder first. `--json` prints one
JSON object: each mode's median wall and CPU seconds. Each run prints its wall and CPU
seconds and the CPU seconds of every reconcile step and storage statement group (wrappers
around the runner's steps and the storage functions, so nested phases overlap:
`transaction` includes `delete_postings`). CPU seconds count DuckDB's threads too; on a
loaded machine they are the steadier figure. Cold-process
figures (imports included) come from `hyperfine` on the CLI: see benchmarks/HISTORY.md.

`--statements N`: also list the N costliest SQL statements of the last edit, each with its CPU
milliseconds and the minor page faults it took (`getrusage`; opening the index and closing it,
where DuckDB checkpoints, count as statements). Page faults are where a small write's system
time goes: DuckDB touching column data for the first time in the process.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vaultmem.index import preparation, transaction
from vaultmem.index import reconcile as rc
from vaultmem.storage import index_writes, search_rows, store
from vaultmem.vault import Vault

STEPS = {  # each step where the runner (or the transaction) looks it up
    "walk": (rc, "walk"),
    "unite_conflicts": (rc, "_unite_conflicts"),
    "steady": (rc, "_steady"),
    "write_small": (rc, "_write_small"),
    "load_state": (rc, "load_state"),
    "recorded_state": (rc, "recorded_state"),
    "record_state": (rc, "_record_state"),
    "prepare": (preparation, "prepare"),
    "identities": (rc, "identities"),
    "transaction": (transaction, "transaction"),
    "_reresolve": (transaction, "reresolve"),
}
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
    for label, (module, name) in STEPS.items():
        setattr(module, name, _timer(totals, label, getattr(module, name)))
    rc.plan_changes = _timer(totals, "plan", rc.plan_changes)
    for module, names in STATEMENTS.items():
        for name in names:
            setattr(module, name, _timer(totals, name, getattr(module, name)))


Statement = tuple[float, int, str]
"""(CPU seconds, minor page faults, the statement's first words)."""


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class _Timed:
    """A connection that records every statement's CPU and page faults in `log`."""

    def __init__(self, con: Any, log: list[Statement]) -> None:
        self._con = con
        self._log = log

    def _measure(self, label: str, fn: Callable[[], Any]) -> Any:
        cpu, faults = time.process_time(), _faults()
        try:
            return fn()
        finally:
            self._log.append((time.process_time() - cpu, _faults() - faults, label))

    def execute(self, sql: str, *args: Any) -> Any:
        label = " ".join(sql.split())[:100]
        return self._measure(label, lambda: self._con.execute(sql, *args))

    def close(self) -> None:
        self._measure("(close: checkpoint)", self._con.close)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def record_statements(log: list[Statement]) -> None:
    """Route every connection reconcile opens through `_Timed`, its opening timed too."""
    connect = store.connect

    def timed_connect(*args: Any, **kwargs: Any) -> Any:
        cpu, faults = time.process_time(), _faults()
        con = connect(*args, **kwargs)
        log.append((time.process_time() - cpu, _faults() - faults, "(connect)"))
        return _Timed(con, log)

    store.connect = timed_connect  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path, nargs="?", help="an indexed vault (default: generated)")
    parser.add_argument("--note", help="vault-relative note to edit (default: the middle one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--statements", type=int, default=0, metavar="N")
    parser.add_argument("--quick", action="store_true", help="the generated 1,000-note vault")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    args = parser.parse_args(argv)
    if args.vault is not None:
        return measure(args, args.vault)
    from benchmarks.generate_vault import ensure_vault

    source, _, _ = ensure_vault(1_000 if args.quick else 10_000)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-steady-") as tmp:
        copy = Path(tmp) / "vault"
        shutil.copytree(source, copy)
        Vault(copy).reconcile()
        return measure(args, copy)


def measure(args: argparse.Namespace, root: Path) -> int:
    """The three modes on the indexed vault at `root`, printed (or as JSON with `--json`)."""
    vault = Vault(root)
    notes = sorted(p for p in root.rglob("*.md") if ".vaultmem" not in p.parts)
    note = root / args.note if args.note else notes[len(notes) // 2]
    result: dict[str, Any] = {"benchmark": "steady", "notes": len(notes), "repeat": args.repeat}
    say = (lambda _text: None) if args.json else print
    totals: dict[str, float] = defaultdict(float)
    instrument(totals)
    statements: list[Statement] = []
    if args.statements:
        record_statements(statements)

    def edit() -> None:
        with note.open("a", encoding="utf-8") as handle:
            handle.write(f"\nsteady-state benchmark edit {time.time_ns()}\n")

    edit()
    vault.reconcile()  # warm: the parser's and DuckDB's imports are loaded from here on
    rel = note.relative_to(root).as_posix()
    for mode in ("no-op", "edit", "path edit"):
        walls, cpus, phases = [], [], defaultdict(list)
        for _ in range(args.repeat):
            if mode != "no-op":
                edit()
            totals.clear()
            statements.clear()
            faults = _faults()
            wall, cpu = time.perf_counter(), time.process_time()
            report = vault.reconcile(paths=[rel] if mode == "path edit" else None)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            faulted = _faults() - faults
            assert report.changed == (0 if mode == "no-op" else 1), report
            for label, seconds in totals.items():
                phases[label].append(seconds)
        result[mode] = {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus)}
        say(
            f"{mode}: wall {statistics.median(walls):.3f} s, CPU {statistics.median(cpus):.3f} s"
            f" (medians of {args.repeat})"
        )
        ranked = sorted(phases.items(), key=lambda kv: -statistics.median(kv[1]))
        say("  " + ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in ranked))
        if args.statements and statements:
            say(
                f"  last {mode}: {len(statements)} statements, "
                f"{sum(s[0] for s in statements):.3f} s CPU, "
                f"{sum(s[1] for s in statements)} of the run's {faulted} page faults"
            )
            for cpu_s, faults_n, label in sorted(statements, reverse=True)[: args.statements]:
                say(f"  {cpu_s * 1000:6.1f} ms {faults_n:6d} faults  {label}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

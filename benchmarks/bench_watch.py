"""Watch latency: from a note saved to the index reflecting it, with `vaultmem watch` running.

On a copy of the cached generated vault (10,000 notes; `--quick`: 1,000) it starts
`vaultmem watch --json` as a subprocess with the default debounce (300 ms), waits for the
start-up sweep (which builds the index), then `--samples` times (30) appends a unique word to
one note and polls the index read-only (one short connection per poll, as an agent would) until
the word's posting is there. Latency is measured from the end of the write to the first poll
that finds the word, so it includes the debounce, the incremental reconcile and the poll
interval (25 ms). It reports median and p95 (nearest rank), the mean reconcile time the watcher
reported per batch, and the median as a multiple of the same-run floor. Target: median < 1 s.

Script: `python benchmarks/bench_watch.py [--notes 10000] [--samples 30] [--json]`.

`--vault DIR` measures an indexed vault instead, as `make bench-100k` does (`scale_watch`):
`--samples` saves (20 here) and as many new notes, each from the write until searchable,
then a burst of 500 changed notes. It writes into DIR: run it on a copy.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.floor import REPO_ROOT, markdown_files, measure, read_floor
from benchmarks.generate_vault import ensure_vault

NAME = "watch"
QUICK_NOTES = 1_000
FULL_NOTES = 10_000
POLL_S = 0.025
TARGET_S = 1.0
START_TIMEOUT_S = 1_800.0
SAMPLE_TIMEOUT_S = 60.0


class _Watcher:
    """The `vaultmem watch --json` subprocess and the events it has printed so far."""

    def __init__(self, vault: Path, debounce_ms: int) -> None:
        self.events: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vaultmem",
                "watch",
                "--vault",
                str(vault),
                "--json",
                "--debounce-ms",
                str(debounce_ms),
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line)["data"])

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e["kind"] == kind]

    def wait(self, kind: str, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.kinds(kind)) < count:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vaultmem watch exited with {self.proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {kind} event after {timeout:.0f} s")
            time.sleep(0.05)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=60)


def _word(i: int) -> str:
    """A letters-only word no generated note contains (the tokenizer keeps it whole)."""
    letters = []
    n = i + 26 * 26
    while n:
        n, d = divmod(n, 26)
        letters.append(chr(ord("a") + d))
    return "zqwatch" + "".join(letters) + "q"


def _found(index: Path, word: str) -> bool:
    from vaultmem.core.errors import VaultmemError
    from vaultmem.storage import store

    try:
        with store.reading(index, timeout_s=5.0) as con:
            row = con.execute("SELECT 1 FROM postings WHERE term = ? LIMIT 1", [word]).fetchone()
    except VaultmemError:
        return False
    return row is not None


def _index_of(vault: Path) -> Path:
    from vaultmem.core.config import load_config

    return load_config(vault).index_path


def _notes_with(index: Path, word: str) -> int:
    """How many notes' postings hold `word` (0 while the index is busy)."""
    from vaultmem.core.errors import VaultmemError
    from vaultmem.storage import store

    try:
        with store.reading(index, timeout_s=5.0) as con:
            row = con.execute(
                "SELECT count(DISTINCT note_key) FROM postings WHERE term = ?", [word]
            ).fetchone()
    except VaultmemError:
        return 0
    return int(row[0]) if row else 0


def _tree_peak_mb(pid: int) -> float:
    """The largest peak RSS (VmHWM) among `pid` and its descendants, in MB."""
    from benchmarks.floor import _children_of, _hwm_mb

    tree, todo, peak = _children_of(), [pid], 0.0
    while todo:
        current = todo.pop()
        peak = max(peak, _hwm_mb(current) or 0.0)
        todo.extend(tree.get(current, ()))
    return peak


def _until_searchable(watcher: _Watcher, index: Path, word: str, batches: int) -> float:
    """Seconds from now (just after a write) until a search finds `word`; then waits for the
    watcher's batch line, so the next write starts a batch of its own."""
    saved = time.perf_counter()
    deadline = time.monotonic() + SAMPLE_TIMEOUT_S
    while not _found(index, word):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{word} never reached the index")
        time.sleep(POLL_S)
    latency = time.perf_counter() - saved
    watcher.wait("batch", batches + 1, SAMPLE_TIMEOUT_S)
    return latency


def _save_latencies(
    watcher: _Watcher, index: Path, notes: list[Path], saves: int, step: int, first: int = 0
) -> list[float]:
    """Append a new word (`_word(first + i)`) to every `step`-th note, one save at a time,
    each timed from the write until a search finds the word; the next save waits for the
    batch to finish."""
    latencies: list[float] = []
    for i in range(saves):
        batches = len(watcher.kinds("batch"))
        word = _word(first + i)
        with notes[(i * step) % len(notes)].open("a", encoding="utf-8") as handle:
            handle.write(f"\n{word}\n")
        latencies.append(_until_searchable(watcher, index, word, batches))
    return latencies


def _new_note_latencies(
    watcher: _Watcher, index: Path, vault: Path, count: int, first: int
) -> list[float]:
    """Create `count` new notes (a note made in Obsidian, a `store`), one at a time, each
    timed from the write until a search finds its word; they are left in the vault."""
    latencies: list[float] = []
    for i in range(first, first + count):
        batches = len(watcher.kinds("batch"))
        word = _word(i)
        (vault / f"Inbox {word}.md").write_text(f"# {word}\n\n{word} noted.\n", encoding="utf-8")
        latencies.append(_until_searchable(watcher, index, word, batches))
    return latencies


def _p95(latencies: Sequence[float]) -> float:
    """The 95th percentile by nearest rank."""
    ordered = sorted(latencies)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def scale_watch(
    vault: Path, saves: int = 20, burst: int = 500, debounce_ms: int = 300
) -> dict[str, Any]:
    """Issue 28's watch figures on an indexed vault: `saves` single saves, each from the end
    of the write until its word is searchable (median and p95), the same for `saves` new
    notes, then `burst` notes changed at once: until all are searchable, in how many
    batches, and the largest process's peak RSS meanwhile. The vault's index must be
    current: the watcher's start-up sweep is then a no-op."""
    index = _index_of(vault)
    notes = markdown_files(vault)
    step = max(1, len(notes) // max(1, saves + burst))
    run = random.randrange(1 << 40)  # words no earlier run on this vault wrote
    watcher = _Watcher(vault, debounce_ms)
    try:
        watcher.wait("sweep", 1, START_TIMEOUT_S)
        latencies = _save_latencies(watcher, index, notes, saves, step, first=run)
        created = _new_note_latencies(watcher, index, vault, saves, run + saves)
        batches = len(watcher.kinds("batch"))
        word = "zqburst" + _word(run)
        targets = [notes[(saves + i) * step % len(notes)] for i in range(burst)]
        started = time.perf_counter()
        for i, path in enumerate(targets):
            # a line of its own in each note: one line in 500 notes is boilerplate, which the
            # index leaves out of the postings (docs/search.md)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"\n{word} {_word(run + 2 * saves + i)}\n")
        written = time.perf_counter()
        deadline = time.monotonic() + 600
        peak = 0.0
        while _notes_with(index, word) < len(set(targets)):
            peak = max(peak, _tree_peak_mb(watcher.proc.pid))
            if time.monotonic() > deadline:
                raise RuntimeError("the burst never reached the index")
            time.sleep(POLL_S * 4)
        done = time.perf_counter()
        # the index shows the burst at the batch's commit, a moment before the watcher prints
        # that batch's line: wait for the line, or the burst counts 0 batches
        watcher.wait("batch", batches + 1, SAMPLE_TIMEOUT_S)
        burst_events = watcher.kinds("batch")[batches:]
        peak = max(peak, _tree_peak_mb(watcher.proc.pid))
    finally:
        code = watcher.stop()
    ordered = sorted(latencies)
    return {
        "notes": len(notes),
        "saves": saves,
        "median_s": statistics.median(ordered),
        "p95_s": _p95(ordered),
        "max_s": ordered[-1],
        "new_median_s": statistics.median(created),
        "new_p95_s": _p95(created),
        "burst": len(set(targets)),
        "burst_write_s": written - started,
        "burst_searchable_s": done - written,
        "burst_batches": len(burst_events),
        "burst_largest_batch": max((e["paths"] for e in burst_events), default=0),
        "burst_peak_mb": peak,
        "exit_code": code,
    }


def run(n_notes: int, samples: int, debounce_ms: int) -> dict[str, Any]:
    source, counts, _ = ensure_vault(n_notes)
    floor = measure(lambda: read_floor(source), repeat=3, warmup=1)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-watch-") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault)
        index = _index_of(vault)
        notes = markdown_files(vault)
        step = max(1, len(notes) // samples)
        watcher = _Watcher(vault, debounce_ms)
        try:
            started = time.perf_counter()
            watcher.wait("sweep", 1, START_TIMEOUT_S)
            startup_s = time.perf_counter() - started
            latencies = _save_latencies(watcher, index, notes, samples, step)
        finally:
            code = watcher.stop()
        reconciles = [e["duration_s"] for e in watcher.kinds("batch")]
    ordered = sorted(latencies)
    median = statistics.median(ordered)
    return {
        "benchmark": NAME,
        "notes": counts.notes,
        "samples": samples,
        "debounce_ms": debounce_ms,
        "startup_s": startup_s,
        "latency": {
            "median": median,
            "p95": ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)],
            "min": ordered[0],
            "max": ordered[-1],
            "runs": latencies,
        },
        "reconcile_mean_s": statistics.fmean(reconciles) if reconciles else None,
        "floor": floor.to_json(),
        "median_x_floor": median / floor.median,
        "target_s": TARGET_S,
        "met_target": median < TARGET_S,
        "exit_code": code,
    }


def describe_scale(w: dict[str, Any]) -> str:
    """`scale_watch`'s figures in one sentence (this script's `--vault` line and the scale
    report's watch line)."""
    return (
        f"{w['saves']} saves, save -> searchable median {w['median_s']:.2f} s, p95 "
        f"{w['p95_s']:.2f} s; {w['saves']} new notes, median {w['new_median_s']:.2f} s, p95 "
        f"{w['new_p95_s']:.2f} s; a burst of {w['burst']} notes searchable "
        f"{w['burst_searchable_s']:.1f} s after the last write, in {w['burst_batches']} "
        f"batch(es) (largest {w['burst_largest_batch']} paths), largest process "
        f"{w['burst_peak_mb']:.0f} MB"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_NOTES:,} notes")
    parser.add_argument("--notes", type=int, default=None, help=f"default {FULL_NOTES:,}")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--debounce-ms", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--vault", type=Path, help="an indexed vault (a copy: it is written)")
    args = parser.parse_args(argv)
    if args.vault is not None:
        figures = scale_watch(args.vault, saves=min(args.samples, 20))
        text = f"watch on {figures['notes']:,} notes: {describe_scale(figures)}"
        print(json.dumps(figures) if args.json else text)
        return 0 if figures["exit_code"] == 0 else 1
    n = args.notes or (QUICK_NOTES if args.quick else FULL_NOTES)
    result = run(n, args.samples, args.debounce_ms)
    if args.json:
        print(json.dumps(result))
        return 0 if result["exit_code"] == 0 else 1
    lat = result["latency"]
    print(
        f"watch: save → index on {result['notes']:,} notes, {result['samples']} saves, "
        f"debounce {result['debounce_ms']} ms"
    )
    print(f"  start-up sweep (index build)  {result['startup_s']:8.2f} s")
    print(
        f"  latency median                {lat['median'] * 1000:8.0f} ms  "
        f"({result['median_x_floor']:.2f}× floor {result['floor']['median']:.2f} s)"
    )
    print(f"  latency p95                   {lat['p95'] * 1000:8.0f} ms")
    print(f"  latency min / max             {lat['min'] * 1000:8.0f} / {lat['max'] * 1000:.0f} ms")
    if result["reconcile_mean_s"] is not None:
        print(f"  reconcile per batch (mean)    {result['reconcile_mean_s'] * 1000:8.0f} ms")
    verdict = "met" if result["met_target"] else "MISSED"
    print(f"  target median < {TARGET_S:.0f} s: {verdict}; watcher exit code {result['exit_code']}")
    return 0 if result["exit_code"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

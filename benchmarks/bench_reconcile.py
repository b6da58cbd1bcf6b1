"""Reconcile cost on generated vaults of 1,000 and 10,000 notes, beside the same-run floor.

Each size is copied from the cached generated vault into a temporary folder; then, each in a
fresh process so that peak memory is that of a real CLI call:

- full: `vaultmem rebuild` from nothing (parse, resolve, postings, one bulk transaction);
- no-op: `reconcile` with nothing changed (the stat walk and one read of the index state);
- one edit: one note's text changed, then `reconcile`;
- floor: walk, read every note and load its frontmatter with PyYAML's C loader.

Times are medians of `--repeat` runs (the timed span excludes interpreter start-up; the
`cold` column is the whole `vaultmem reconcile` process). Targets from issue 3: full within 3x
the floor; no-op under 10% of a full; one edit under 5% of a full.

`--scale N` (e.g. `make bench-100k`, not in CI) runs the scale report of issue 14 once on an
N-note vault, every step a cold CLI process with the peak RSS of each of its processes (main,
forkserver, workers) polled from `/proc`: full build, no-op, one edit; beside, in the same run,
SQLite FTS5 indexing the same files, the read+YAML floor and mistune's own pass over the text.
Targets at 100,000 notes: peak RSS <= 1 GiB for the largest process, full <= 4x FTS5, no-op
<= 1.0 s; at 10,000: full <= 1.25 x (mistune / workers + floor), no-op <= 0.3 s, edit <= 0.35 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.floor import run_in_subprocess
from benchmarks.generate_vault import ensure_vault

NAME = "reconcile"


def reconcile_entry(args: Sequence[str]) -> dict[str, Any]:
    """`run_in_subprocess` entry: one reconcile (or rebuild) of the vault at args[0]."""
    from vaultmem.vault import Vault

    report = Vault(args[0]).reconcile(rebuild=args[1] == "rebuild")
    return report.to_dict()


def _timed(vault: Path, mode: str) -> tuple[float, float, dict[str, Any]]:
    result = run_in_subprocess("benchmarks.bench_reconcile:reconcile_entry", [str(vault), mode])
    return result.seconds, result.peak_rss_mb, result.result


def _edit_one(vault: Path, i: int) -> None:
    notes = sorted(p for p in vault.rglob("*.md") if ".vaultmem" not in p.parts)
    target = notes[len(notes) // 2]
    with target.open("a", encoding="utf-8") as handle:
        handle.write(f"\nEdited for benchmark run {i}: zebrafish{i}\n")


def _cold_cli(vault: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "vaultmem", "reconcile", "--vault", str(vault)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def bench_size(n: int, repeat: int) -> dict[str, Any]:
    source, _, _ = ensure_vault(n)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault)
        floors, fulls, noops, edits, peaks = [], [], [], [], []
        report: dict[str, Any] = {}
        for i in range(repeat):
            floors.append(run_in_subprocess("benchmarks.floor:floor_entry", [str(vault)]).seconds)
            seconds, peak, report = _timed(vault, "rebuild")
            fulls.append(seconds)
            peaks.append(peak)
            noops.append(_timed(vault, "reconcile")[0])
            _edit_one(vault, i)
            edits.append(_timed(vault, "reconcile")[0])
        cold = _cold_cli(vault)
    floor, full = statistics.median(floors), statistics.median(fulls)
    noop, edit = statistics.median(noops), statistics.median(edits)
    return {
        "notes": n,
        "floor_s": floor,
        "full_s": full,
        "full_x_floor": full / floor,
        "noop_s": noop,
        "noop_pct_of_full": 100 * noop / full,
        "one_edit_s": edit,
        "one_edit_pct_of_full": 100 * edit / full,
        "cold_cli_noop_s": cold,
        "peak_rss_mb": statistics.median(peaks),
        "indexed": report.get("notes"),
        "problems": report.get("problems"),
    }


def fts5_entry(args: Sequence[str]) -> dict[str, Any]:
    """`run_in_subprocess` entry: read every note and index it with SQLite FTS5, on disk."""
    import sqlite3

    from benchmarks.floor import markdown_files

    db = Path(args[1])
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute("CREATE VIRTUAL TABLE fts USING fts5(path UNINDEXED, body)")
    root = Path(args[0])
    with con:
        con.executemany(
            "INSERT INTO fts VALUES (?, ?)",
            (
                (p.relative_to(root).as_posix(), p.read_text("utf-8", "replace"))
                for p in markdown_files(root)
            ),
        )
    con.close()
    db.unlink()
    return {}


def mistune_entry(args: Sequence[str]) -> dict[str, Any]:
    """`run_in_subprocess` entry: mistune's own AST pass over every note, one process; the
    seconds returned exclude reading the files."""
    import mistune

    from benchmarks.floor import markdown_files

    texts = [p.read_text("utf-8", "replace") for p in markdown_files(Path(args[0]))]
    markdown = mistune.create_markdown(renderer=None)
    start, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        markdown(text)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def _cli_tree(vault: Path, command: str) -> Any:
    from benchmarks.floor import run_process_tree

    return run_process_tree(
        [sys.executable, "-m", "vaultmem", command, "--vault", str(vault)], timeout=7200
    )


def _fts5(vault: Path, tmp: Path) -> float:
    return run_in_subprocess(
        "benchmarks.bench_reconcile:fts5_entry", [str(vault), str(tmp / "f.db")], 7200
    ).seconds


def bench_scale(n: int, source: Path | None = None) -> dict[str, Any]:
    """Issue 14's report on an n-note vault (generated, or copied from `source`): one run of
    each step, all in this run."""
    from vaultmem.index.parallel import worker_count

    if source is None:
        source, _, _ = ensure_vault(n)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        floor = run_in_subprocess("benchmarks.floor:floor_entry", [str(vault)], 7200).seconds
        fts5_before = _fts5(vault, Path(tmp))
        # mistune's pass is the 10,000-note target's yardstick; at 100,000 the target is FTS5.
        mistune = (
            run_in_subprocess("benchmarks.bench_reconcile:mistune_entry", [str(vault)], 7200).result
            if n <= 20_000
            else {"seconds": float("nan"), "cpu_s": float("nan")}
        )
        mistune_s = mistune["seconds"]
        full = _cli_tree(vault, "rebuild")
        # FTS5 again right after the build: on a shared machine the load drifts during a long
        # build, so the build is compared with the mean of the two runs that bracket it
        fts5_after = _fts5(vault, Path(tmp))
        fts5 = (fts5_before + fts5_after) / 2
        noop = _cli_tree(vault, "reconcile")
        _edit_one(vault, 0)
        edit = _cli_tree(vault, "reconcile")
    workers = worker_count()
    return {
        "notes": n,
        "workers": workers,
        "floor_s": floor,
        "fts5_s": fts5,
        "fts5_before_after_s": [fts5_before, fts5_after],
        "mistune_s": mistune_s,
        "full_s": full.seconds,
        "full_x_fts5": full.seconds / fts5,
        "full_x_mistune_target": full.seconds / (mistune_s / workers + floor),
        # the build's wall time not explained by mistune's own pass spread over the workers
        "outside_mistune_share": 1 - (mistune_s / workers) / full.seconds,
        # CPU of every process of the build (workers included) against mistune's own pass:
        # the load moves it far less than the wall-clock ratios
        "full_cpu_s": full.cpu_s,
        "mistune_cpu_s": mistune["cpu_s"],
        "full_cpu_x_mistune": full.cpu_s / mistune["cpu_s"],
        "noop_s": noop.seconds,
        "one_edit_s": edit.seconds,
        "main_peak_mb": max(full.main_peak_mb, noop.main_peak_mb, edit.main_peak_mb),
        "largest_peak_mb": max(full.largest_peak_mb, noop.largest_peak_mb, edit.largest_peak_mb),
        "processes": full.processes,
    }


def render_scale(r: dict[str, Any]) -> str:
    return (
        f"scale: {r['notes']} notes, {r['workers']} workers (one run each, cold CLI processes)\n"
        f"  full {r['full_s']:.1f} s = {r['full_x_fts5']:.2f}x FTS5 ({r['fts5_s']:.1f} s, the mean "
        f"of {r['fts5_before_after_s'][0]:.1f} s before and {r['fts5_before_after_s'][1]:.1f} s "
        "after the build) = "
        f"{r['full_x_mistune_target']:.2f}x (mistune {r['mistune_s']:.1f} s / workers + floor "
        f"{r['floor_s']:.1f} s); outside mistune {100 * r['outside_mistune_share']:.0f}% of "
        "the build\n"
        f"  CPU of the full build, every process: {r['full_cpu_s']:.1f} s = "
        f"{r['full_cpu_x_mistune']:.2f}x mistune's own pass ({r['mistune_cpu_s']:.1f} s CPU)\n"
        f"  no-op {r['noop_s']:.2f} s; one edit {r['one_edit_s']:.2f} s\n"
        f"  peak RSS: main {r['main_peak_mb']:.0f} MB, largest process "
        f"{r['largest_peak_mb']:.0f} MB ({r['processes']} processes in the full build)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, help="one scale report on a vault of this size")
    parser.add_argument("--source", type=Path, help="with --scale: copy this vault instead")
    parser.add_argument("--quick", action="store_true", help="1,000 notes only, one run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--notes", type=int, action="append", help="vault sizes (repeatable)")
    args = parser.parse_args(argv)
    if args.scale:
        row = bench_scale(args.scale, args.source)
        print(json.dumps({"benchmark": NAME, "scale": row}) if args.json else render_scale(row))
        return 0
    sizes = args.notes or ([1_000] if args.quick else [1_000, 10_000])
    repeat = 1 if args.quick else args.repeat
    rows = [bench_size(n, repeat) for n in sizes]
    if args.json:
        print(json.dumps({"benchmark": NAME, "rows": rows}))
        return 0
    print(f"reconcile (medians of {repeat}; times exclude interpreter start-up)")
    header = (
        f"{'notes':>7} {'floor':>7} {'full':>7} {'×floor':>7} {'no-op':>7} {'%full':>6} "
        f"{'1 edit':>7} {'%full':>6} {'cold':>6} {'peak MB':>8}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['notes']:>7} {r['floor_s']:>7.3f} {r['full_s']:>7.3f} {r['full_x_floor']:>7.2f} "
            f"{r['noop_s']:>7.3f} {r['noop_pct_of_full']:>5.1f}% {r['one_edit_s']:>7.3f} "
            f"{r['one_edit_pct_of_full']:>5.1f}% {r['cold_cli_noop_s']:>6.2f} "
            f"{r['peak_rss_mb']:>8.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

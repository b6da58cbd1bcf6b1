"""Parse throughput: `vaultmem.note.parse.parse_note` over a generated vault, against the floor.

Rows, each the median of `--repeat` runs over the cached vault `benchmarks/out/vault-<N>-<seed>/`:
(a) the floor (walk, read, frontmatter with PyYAML's C loader), (b) walk, read and `parse_note`
every file in one process, (c) the same with a `ProcessPoolExecutor` (2 workers by default) over
chunks of paths, including pool start-up and pickling the parsed notes back to the parent, as a
reconcile would. Each row gives notes/s, MB/s and its time as a multiple of the floor's. Peak
memory is measured once per row in a fresh process. `--json` prints one JSON object.

Script: `python benchmarks/bench_parse.py --notes 10000 --repeat 3 [--json]`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.floor import (
    Stats,
    markdown_files,
    measure,
    read_floor,
    run_in_subprocess,
)
from benchmarks.generate_vault import ensure_vault

NAME = "parse"
UNAVAILABLE = "vaultmem.note.parse not available yet"
QUICK_NOTES = 1_000


@dataclass(frozen=True, slots=True)
class ParseCount:
    """What a parse pass saw: files parsed, links found, problems reported."""

    notes: int
    links: int
    problems: int


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the report; `stats` is None when the row could not run (`note` says why)."""

    name: str
    stats: Stats | None
    peak_rss_mb: float | None = None
    note: str = ""


def load_parse_note() -> tuple[Callable[..., Any] | None, str]:
    """`vaultmem.note.parse.parse_note`, or None and the reason it cannot be imported yet."""
    try:
        module = importlib.import_module("vaultmem.note.parse")
    except ImportError as exc:
        return None, f"{UNAVAILABLE} ({exc})"
    fn = getattr(module, "parse_note", None)
    return (fn, "") if callable(fn) else (None, f"{UNAVAILABLE} (no parse_note)")


def _parse_paths(parse_note: Callable[..., Any], root: Path, rels: Sequence[str]) -> list[Any]:
    return [parse_note(rel, (root / rel).read_bytes()) for rel in rels]


def _count(parsed: Sequence[Any]) -> ParseCount:
    links = sum(len(p.note.links) for p in parsed)
    return ParseCount(len(parsed), links, sum(len(p.problems) for p in parsed))


def _rel_paths(root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in markdown_files(root)]


def parse_serial(root: Path) -> ParseCount:
    """Walk, read and parse every note in this process."""
    parse_note, why = load_parse_note()
    if parse_note is None:
        raise RuntimeError(why)
    return _count(_parse_paths(parse_note, root, _rel_paths(root)))


def _parse_chunk(root: str, rels: list[str]) -> list[Any]:
    """Worker side of `parse_pool`: the parsed notes go back to the parent (pickled)."""
    parse_note, why = load_parse_note()
    if parse_note is None:
        raise RuntimeError(why)
    return _parse_paths(parse_note, Path(root), rels)


def parse_pool(root: Path, workers: int = 2, chunk_size: int = 250) -> ParseCount:
    """Walk in the parent; read and parse chunks of paths in `workers` processes."""
    rels = _rel_paths(root)
    chunks = [rels[i : i + chunk_size] for i in range(0, len(rels), chunk_size)]
    notes = links = problems = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for parsed in pool.map(_parse_chunk, [str(root)] * len(chunks), chunks):
            count = _count(parsed)
            notes += count.notes
            links += count.links
            problems += count.problems
    return ParseCount(notes, links, problems)


def serial_entry(args: Sequence[str]) -> dict[str, int]:
    """`run_in_subprocess` entry point for the one-process row."""
    count = parse_serial(Path(args[0]))
    return {"notes": count.notes, "links": count.links, "problems": count.problems}


def pool_entry(args: Sequence[str]) -> dict[str, int]:
    """`run_in_subprocess` entry point for the pool row (peak of the parent only)."""
    count = parse_pool(Path(args[0]), int(args[1]), int(args[2]))
    return {"notes": count.notes, "links": count.links, "problems": count.problems}


def _peak(target: str, args: Sequence[str], enabled: bool) -> float | None:
    return run_in_subprocess(target, args).peak_rss_mb if enabled else None


def run(
    n_notes: int, seed: int, repeat: int, workers: int, chunk_size: int, memory: bool
) -> dict[str, Any]:
    """Run every row and return the report as JSON-able data."""
    root, vault, gen_seconds = ensure_vault(n_notes, seed)
    read_floor(root)  # warm the page cache so the first timed run is not an outlier
    floor = measure(lambda: read_floor(root), repeat)
    rows = [
        Row(
            "floor: read + C YAML",
            floor,
            _peak("benchmarks.floor:floor_entry", [str(root)], memory),
        )
    ]
    parse_note, why = load_parse_note()
    counts: dict[str, ParseCount] = {}
    if parse_note is None:
        rows.append(Row("parse_note, 1 process", None, note=why))
        rows.append(Row(f"parse_note, pool of {workers}", None, note=why))
    else:

        def serial() -> None:
            counts["serial"] = parse_serial(root)

        def pooled() -> None:
            counts["pool"] = parse_pool(root, workers, chunk_size)

        me = "benchmarks.bench_parse"
        rows.append(
            Row(
                "parse_note, 1 process",
                measure(serial, repeat),
                _peak(f"{me}:serial_entry", [str(root)], memory),
            )
        )
        rows.append(
            Row(
                f"parse_note, pool of {workers}",
                measure(pooled, repeat),
                _peak(f"{me}:pool_entry", [str(root), str(workers), str(chunk_size)], memory),
                note=f"chunks of {chunk_size}; peak is the parent's",
            )
        )
    mb = vault.bytes / 1_000_000
    return {
        "benchmark": NAME,
        "notes": vault.notes,
        "seed": seed,
        "megabytes": round(mb, 3),
        "repeat": repeat,
        "generated_seconds": None if gen_seconds is None else round(gen_seconds, 3),
        "vault": {k: v for k, v in vault.to_json().items() if k != "root"},
        "parsed": {k: _count_json(v) for k, v in counts.items()},
        "rows": [_row_json(r, vault.notes, mb, floor.median) for r in rows],
    }


def _count_json(count: ParseCount) -> dict[str, int]:
    return {"notes": count.notes, "links": count.links, "problems": count.problems}


def _row_json(row: Row, notes: int, mb: float, floor_median: float) -> dict[str, Any]:
    if row.stats is None:
        return {"name": row.name, "available": False, "note": row.note}
    med = row.stats.median
    return {
        "name": row.name,
        "available": True,
        **row.stats.to_json(),
        "notes_per_s": round(notes / med, 1),
        "mb_per_s": round(mb / med, 2),
        "ratio_to_floor": round(med / floor_median, 2),
        "peak_rss_mb": None if row.peak_rss_mb is None else round(row.peak_rss_mb, 1),
        "note": row.note,
    }


def render(report: dict[str, Any]) -> str:
    """The human table."""
    v = report["vault"]
    gen = report["generated_seconds"]
    lines = [
        f"parse: {report['notes']:,} notes, {report['megabytes']:.1f} MB, {v['links']:,} links "
        f"(seed {report['seed']}, medians of {report['repeat']}"
        + ("" if gen is None else f", vault generated in {gen:.1f} s")
        + ")",
        f"  {'row':<26} {'median s':>9} {'p95 s':>8} {'notes/s':>9} {'MB/s':>7} "
        f"{'x floor':>8} {'peak MB':>8}",
    ]
    for row in report["rows"]:
        if not row["available"]:
            lines.append(f"  {row['name']:<26} {row['note']}")
            continue
        peak = "-" if row["peak_rss_mb"] is None else f"{row['peak_rss_mb']:.0f}"
        lines.append(
            f"  {row['name']:<26} {row['median']:>9.3f} {row['p95']:>8.3f} "
            f"{row['notes_per_s']:>9,.0f} {row['mb_per_s']:>7.1f} "
            f"{row['ratio_to_floor']:>7.2f}x {peak:>8}"
            + (f"  ({row['note']})" if row["note"] else "")
        )
    for name, count in report["parsed"].items():
        lines.append(
            f"  parsed ({name}): {count['notes']:,} notes, {count['links']:,} links, "
            f"{count['problems']:,} problems"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Parse throughput against the read floor.")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=250)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_NOTES:,} notes")
    parser.add_argument("--no-memory", action="store_true", help="skip the fresh-process peaks")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    n_notes = QUICK_NOTES if args.quick else args.notes
    report = run(n_notes, args.seed, args.repeat, args.workers, args.chunk_size, not args.no_memory)
    print(json.dumps(report) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

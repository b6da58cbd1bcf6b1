"""Run every benchmark: each `benchmarks/bench_*.py` module's `main(argv)`, in name order.

A new benchmark is a new `bench_<name>.py` with `main(argv: Sequence[str] | None) -> int` that
accepts `--quick` (small N, for a smoke run) and `--json` (one JSON object on one line); this
runner finds it by name. Usage: `python -m benchmarks.run [--quick] [--json] [--only parse]`;
`--scale 100000` runs only the reconcile scale report.
With `--json` the output is JSON Lines: one object per benchmark.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BENCH_DIR = Path(__file__).resolve().parent


def bench_modules() -> list[str]:
    """The benchmark names (`parse` for `bench_parse.py`), sorted."""
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every vaultmem benchmark in turn.")
    parser.add_argument("--quick", action="store_true", help="small vaults: a smoke run")
    parser.add_argument("--json", action="store_true", help="JSON Lines, one per benchmark")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="e.g. parse")
    parser.add_argument(
        "--scale",
        type=int,
        action="append",
        metavar="N",
        help="only the reconcile scale report on N notes (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.scale:
        from benchmarks import bench_reconcile

        sizes = [flag for n in args.scale for flag in ("--scale", str(n))]
        return bench_reconcile.main([*sizes, *(["--json"] * args.json)])
    names = bench_modules()
    unknown = [n for n in args.only if n not in names]
    if unknown:
        print(
            f"Error: unknown benchmark {', '.join(unknown)}; have {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    passthrough = [flag for flag, on in (("--quick", args.quick), ("--json", args.json)) if on]
    failed: list[str] = []
    for name in args.only or names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        code = module.main(passthrough)
        if code:
            failed.append(name)
        if not args.json:
            print()
    if failed:
        print(f"Error: benchmarks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The full build against its floor on real vaults and on generated vaults of short and long
notes (issue 28: "the floor ratios hold on real vaults ... and on generated vaults of short
notes as well as long ones").

The floor is the one `bench_reconcile --scale` uses, measured in the same run on the same
copy: mistune's own pass over every note divided by the cores the build uses (a build under
`parallel.PARALLEL_MIN_BYTES` of Markdown runs in one process: one core), plus the read+YAML
pass (`floor.read_floor`). The build is a cold `vaultmem rebuild`, the median of `--repeat`
runs, with the CPU of every process of it beside mistune's CPU (steadier under load).
SQLite FTS5 indexing the same files is the third column.

    python -m benchmarks.bench_floors [--quick] [--json] [--repeat 3] [--vault PATH ...]

Vaults: dwarvesf-brain (where `benchmarks/retrieval.py` finds it), the English Obsidian help
and obsidian-hub when `VAULTMEM_OBSIDIAN_HELP` / `VAULTMEM_OBSIDIAN_HUB` name them (skipped
otherwise), a generated
vault of 10,000 notes (`generate_vault`) and one of 20,000 short notes (each generated note
cut after its first paragraph: daily-note length). `--quick`: dwarvesf-brain and 2,000 short
notes, one build each. `--vault PATH` (repeatable) measures those folders instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_reconcile import _cli_tree, _fts5
from benchmarks.floor import markdown_files, run_in_subprocess
from benchmarks.generate_vault import OUT_DIR, ensure_vault

NAME = "floors"
TARGET = 2.0
"""Issue 28: the full build within 2x of the floor."""


def short_vault(n: int) -> Path:
    """A vault of `n` short notes, made once under benchmarks/out: the generated vault of `n`
    notes, each note cut short (`cut_short`)."""
    root = OUT_DIR / f"short-{n}"
    if root.is_dir():
        return root
    source, _, _ = ensure_vault(n)
    tmp = OUT_DIR / f".tmp-short-{n}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    cut_short(tmp)
    tmp.replace(root)
    return root


def cut_short(vault: Path) -> None:
    """Cut every note of `vault` after its frontmatter and first three blocks (the title and
    a paragraph or two): the length of a daily note."""
    for path in markdown_files(vault):
        text = path.read_text("utf-8")
        head, sep, body = text.partition("\n---\n") if text.startswith("---\n") else ("", "", text)
        blocks = body.split("\n\n")
        path.write_text(head + sep + "\n\n".join(blocks[:3]).rstrip() + "\n", "utf-8")


def default_vaults(quick: bool) -> list[tuple[str, Path]]:
    """(label, folder) of the vaults measured by default; external ones only when present."""
    from benchmarks.retrieval import vault_for

    vaults = [("dwarvesf-brain (real)", vault_for("dwarvesf-brain"))]
    if quick:
        return [*vaults, ("generated, 2,000 short notes", short_vault(2_000))]
    for label, name in (
        ("obsidian-help en (real)", "obsidian-help"),
        ("obsidian-hub (real)", "obsidian-hub"),
    ):
        if vault_for(name).is_dir():
            vaults.append((label, vault_for(name)))
    vaults.append(("generated, 10,000 notes", ensure_vault(10_000)[0]))
    vaults.append(("generated, 20,000 short notes", short_vault(20_000)))
    return [(label, path) for label, path in vaults if path.is_dir()]


def measure_vault(label: str, source: Path, repeat: int) -> dict[str, Any]:
    """The floor, mistune's pass, FTS5 and `repeat` cold rebuilds of a copy of `source`."""
    from vaultmem.index.parallel import PARALLEL_MIN_BYTES, worker_count

    with tempfile.TemporaryDirectory(prefix="vaultmem-floors-") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".git", "index.duckdb*"))
        if not (vault / ".vaultmem").is_dir():  # a plain folder of notes: vaultmem's defaults
            subprocess.run(
                [sys.executable, "-m", "vaultmem", "init", str(vault)],
                check=True,
                capture_output=True,
            )
        files = markdown_files(vault)
        size = sum(p.stat().st_size for p in files)
        floor = run_in_subprocess("benchmarks.floor:floor_entry", [str(vault)], 7200).seconds
        mistune = run_in_subprocess(
            "benchmarks.bench_reconcile:mistune_entry", [str(vault)], 7200
        ).result
        fts5 = _fts5(vault, Path(tmp))
        builds = [_cli_tree(vault, "rebuild") for _ in range(repeat)]
    cores = worker_count() if size >= PARALLEL_MIN_BYTES and worker_count() >= 2 else 1
    build = statistics.median(b.seconds for b in builds)
    cpu = statistics.median(b.cpu_s for b in builds)
    yardstick = mistune["seconds"] / cores + floor
    return {
        "vault": label,
        "notes": len(files),
        "mb": size / 1e6,
        "cores": cores,
        "floor_s": floor,
        "mistune_s": mistune["seconds"],
        "yardstick_s": yardstick,
        "fts5_s": fts5,
        "build_s": build,
        "builds_s": [b.seconds for b in builds],
        "build_x_floor": build / yardstick,
        "build_cpu_s": cpu,
        "cpu_x_mistune": cpu / mistune["cpu_s"],
        "met": build / yardstick <= TARGET,
    }


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "full build against the floor (mistune's own pass / cores used + read+YAML), same run;",
        "cold `vaultmem rebuild`, median of the runs; target <= 2.0x",
        f"{'vault':<32} {'notes':>7} {'MB':>6} {'cores':>5} {'floor':>7} {'build':>7} "
        f"{'xfloor':>7} {'CPU/mistune':>11} {'FTS5':>6}",
    ]
    for r in rows:
        verdict = "met" if r["met"] else "NOT MET"
        lines.append(
            f"{r['vault']:<32} {r['notes']:>7} {r['mb']:>6.1f} {r['cores']:>5} "
            f"{r['yardstick_s']:>6.2f}s {r['build_s']:>6.2f}s {r['build_x_floor']:>6.2f}x "
            f"{r['cpu_x_mistune']:>10.2f}x {r['fts5_s']:>5.2f}s  {verdict}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small vaults, one build each")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="cold builds per vault")
    parser.add_argument("--vault", type=Path, action="append", help="measure this folder")
    args = parser.parse_args(argv)
    from benchmarks.floor import ensure_bytecode

    ensure_bytecode()
    if args.vault:
        vaults = [(path.name, path) for path in args.vault]
    else:
        vaults = default_vaults(args.quick)
    repeat = 1 if args.quick else args.repeat
    rows = [measure_vault(label, path, repeat) for label, path in vaults]
    print(json.dumps({"benchmark": NAME, "rows": rows}) if args.json else render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Vaults shaped unlike `generate_vault`'s, where per-vault work once grew faster than the vault.

    python -m benchmarks.bench_shapes [--quick] [--json] [--notes N]

Each shape is written into a temporary folder, built by a cold `vaultmem rebuild` (wall and
largest process), then reconciled cold after the change it is about (benchmarks/HISTORY.md,
session 38, has what each cost before):

- `links`: N notes of 300 wikilinks each. Their staged rows once outgrew what one load
  statement can hold under the write's 512 MiB (`storage/staged_files.py`): the build failed.
- `hub`: one note of 50 sections with block ids, and N notes linking into it six times each
  by heading or block; the change renames one of its headings, so every backlink is
  re-resolved (`transaction.reresolve`, once per distinct answer).
- `readme`: a `README.md` in each of N project folders, each linking to `[[archive/README]]`,
  a path no file ends with (`links._Order`, by bisection); the change adds
  `archive/README.md`, which every one of those links then resolves to.

Each row also gives a cold no-op. `--quick`: 500 notes a shape.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_reconcile import _cli_tree, _cold_cli

NAME = "shapes"
_WORDS = ("alpha", "beta", "gamma", "delta", "vector", "index", "search", "graph", "note")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def write_links(root: Path, notes: int, per_note: int = 300) -> None:
    rng = random.Random(2)
    for i in range(notes):
        links = " ".join(f"[[n{rng.randrange(notes)}]]" for _ in range(per_note))
        (root / f"n{i}.md").write_text(
            f"---\ntags: [t{i % 50}]\n---\n# N{i}\n\n{_words(rng, 50)}\n\n{links}\n", "utf-8"
        )


def write_hub(root: Path, notes: int) -> None:
    rng = random.Random(3)
    sections = "\n\n".join(f"## Section {j}\n\ntext {j} ^b{j}" for j in range(50))
    (root / "Hub.md").write_text(f"# Hub\n\n{sections}\n", "utf-8")
    for i in range(notes):
        links = " ".join(
            f"[[Hub#Section {rng.randrange(60)}]] [[Hub#^b{rng.randrange(60)}]]" for _ in range(3)
        )
        (root / f"n{i}.md").write_text(f"# N{i}\n\n{_words(rng, 40)} {links}\n", "utf-8")


def rename_a_hub_heading(root: Path) -> None:
    hub = root / "Hub.md"
    hub.write_text(hub.read_text("utf-8").replace("## Section 9\n", "## Section nine\n"), "utf-8")


def write_readme(root: Path, notes: int) -> None:
    rng = random.Random(4)
    for i in range(notes):
        folder = root / f"p{i}" / "docs"
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(
            f"# P{i}\n\nsee [[README]], [[p{rng.randrange(notes)}/docs/README]] and "
            "[[archive/README]]\n",
            "utf-8",
        )


def add_archive_readme(root: Path) -> None:
    (root / "archive").mkdir()
    (root / "archive" / "README.md").write_text("# Archive\n", "utf-8")


SHAPES: dict[str, tuple[Callable[[Path, int], None], Callable[[Path], None] | None]] = {
    "links": (write_links, None),
    "hub": (write_hub, rename_a_hub_heading),
    "readme": (write_readme, add_archive_readme),
}
"""name → (write N notes of the shape into a folder, the change timed after the build)."""


def measure_shape(name: str, notes: int) -> dict[str, Any]:
    """Build the shape cold, then time a no-op and its change, each a cold process."""
    from vaultmem.vault import Vault

    write, change = SHAPES[name]
    with tempfile.TemporaryDirectory(prefix=f"vaultmem-shape-{name}-") as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        write(vault, notes)
        Vault.init(vault)
        build = _cli_tree(vault, "rebuild")
        noop = _cold_cli(vault)
        changed = None
        if change is not None:
            change(vault)
            changed = _cold_cli(vault)
        return {
            "shape": name,
            "notes": notes,
            "build_s": build.seconds,
            "largest_mb": build.largest_peak_mb,
            "noop_s": noop,
            "change_s": changed,
        }


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "shapes: cold `vaultmem rebuild`, then cold `reconcile` runs",
        "| shape | notes | build | largest process | no-op | after its change |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        change = "-" if r["change_s"] is None else f"{r['change_s']:.2f} s"
        lines.append(
            f"| {r['shape']} | {r['notes']:,} | {r['build_s']:.2f} s | {r['largest_mb']:.0f} MB "
            f"| {r['noop_s']:.2f} s | {change} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 notes a shape")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--notes", type=int, default=5000, help="notes a shape (default 5,000)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these")
    args = parser.parse_args(argv)
    notes = 500 if args.quick else args.notes
    start = time.perf_counter()
    rows = [measure_shape(name, notes) for name in args.shape or SHAPES]
    if args.json:
        print(json.dumps({"name": NAME, "rows": rows, "seconds": time.perf_counter() - start}))
    else:
        print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

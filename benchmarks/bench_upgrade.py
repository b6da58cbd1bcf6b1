"""A tokenizer-only upgrade against a full build, same run, cold CLI processes (issue 28).

    python -m benchmarks.bench_upgrade [--quick] [--json] [--vault DIR] [--notes N]

On a copy of the vault (the generated N-note vault unless `--vault`): `vaultmem rebuild`
(the full build), then the index's `meta.tokenizer_version` is set to an older value, as a
vaultmem with a new TOKENIZER_VERSION finds it, and `vaultmem reconcile` runs the upgrade: the
search tables made again from the index, no note read (docs/architecture.md). Then the same
for `meta.segment_version` (a new SEGMENT_VERSION): a vault holding no text of an unspaced
script or Hangul keeps its search tables, and only `meta` changes; then, with `SCOPED_NOTES`
notes of Han text added, the same again: only those notes are cut again, in place. Target at
100,000 notes: the upgrade within 0.3x the full build. `measure_upgrade(vault_dir)` is the
entry `make bench-100k` reads; its keys are listed in `KEYS`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.floor import run_process_tree

TARGET_X = 0.3
"""Issue 28: a tokenizer-only upgrade within 0.3x a full build at 100,000 notes."""

KEYS = (
    "notes",
    "full_s",
    "upgrade_s",
    "upgrade_x_full",
    "segment_s",
    "segment_x_full",
    "scoped_notes",
    "scoped_s",
    "scoped_x_full",
    "target_x",
    "full_peak_mb",
    "upgrade_peak_mb",
    "full_cpu_s",
    "upgrade_cpu_s",
    "upgrade_cpu_x_full",
)


def _cli(vault: Path, command: str) -> Any:
    return run_process_tree(
        [sys.executable, "-m", "vaultmem", command, "--vault", str(vault)], timeout=7200
    )


def _age(vault: Path, key: str = "tokenizer_version") -> int:
    """Make the index look built by an older version of `key` in `meta` (the tokenizer's;
    `segment_version`: the analysis of unspaced scripts, Hangul and Cyrillic); return its note
    count."""
    import duckdb

    from vaultmem.core.config import load_config
    from vaultmem.core.models import SEGMENT_VERSION, TOKENIZER_VERSION

    # The version before this code's, as the index of the release before it records: an
    # index of a newer or unknown segment_version is cut whole (`upgrade.segment_only`).
    ours = {"tokenizer_version": TOKENIZER_VERSION, "segment_version": SEGMENT_VERSION}[key]
    index = load_config(vault).index_path
    con = duckdb.connect(str(index))
    try:
        con.execute("UPDATE meta SET value = $2 WHERE key = $1", [key, str(ours - 1)])
        row = con.execute("SELECT count(*) FROM notes").fetchone()
    finally:
        con.close()
    return int(row[0]) if row else 0


SCOPED_NOTES = 100
"""Notes of Han text `add_han_notes` writes for the scoped upgrade's row."""

# Common Han characters, question and locative words among them, so that the segmenter cuts
# words and stop words as in real Chinese text (the text means nothing).
_HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过"
    "子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体"
    "制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内"
    "数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提"
    "笔记同步设备属性链接插件仓库标签文件夹搜索模板快捷键"
)


def add_han_notes(vault: Path, count: int = SCOPED_NOTES, seed: int = 0) -> None:
    """Write `count` notes of generated Han text (~1 KB each, deterministic) under `han/`: a
    vault mostly in another script with a few notes a segmentation change can touch, as real
    vaults are (4 of dwarvesf-brain's 843 notes hold Han, kana or Hangul)."""
    import random

    rng = random.Random(seed)
    folder = vault / "han"
    folder.mkdir(exist_ok=True)
    for i in range(count):
        lines = [f"# 笔记 {i}", ""]
        for _ in range(rng.randint(6, 10)):
            words = ["".join(rng.choices(_HAN, k=rng.randint(1, 3))) for _ in range(12)]
            lines.append("".join(words) + "。")
        (folder / f"han-{i:04d}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _scoped(vault: Path, full_s: float) -> dict[str, Any]:
    """With the vault indexed: `SCOPED_NOTES` notes of Han text added and indexed, then the
    index aged as a new SEGMENT_VERSION finds it; one cold `vaultmem reconcile` cuts those
    notes again, in place (docs/architecture.md, Upgrades)."""
    add_han_notes(vault)
    _cli(vault, "reconcile")
    _age(vault, "segment_version")
    scoped = _cli(vault, "reconcile")
    return {
        "scoped_notes": SCOPED_NOTES,
        "scoped_s": scoped.seconds,
        "scoped_x_full": scoped.seconds / full_s,
    }


def measure_upgrade(vault_dir: Path | str) -> dict[str, Any]:
    """A full build and a tokenizer-only upgrade of a copy of `vault_dir` (left untouched),
    each a cold `vaultmem` process; seconds, their ratio, each run's largest process and the
    CPU seconds of all its processes."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-upgrade-") as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(vault_dir, vault, ignore=shutil.ignore_patterns(".vaultmem"))
        saved = os.environ.get("VAULTMEM_STATE_DIR")
        os.environ["VAULTMEM_STATE_DIR"] = str(Path(tmp) / "state")
        try:
            full = _cli(vault, "rebuild")
            notes = _age(vault)
            upgraded = _cli(vault, "reconcile")
            _age(vault, "segment_version")
            segment = _cli(vault, "reconcile")
            scoped = _scoped(vault, full.seconds)
        finally:
            if saved is None:
                os.environ.pop("VAULTMEM_STATE_DIR", None)
            else:
                os.environ["VAULTMEM_STATE_DIR"] = saved
    return {
        "notes": notes,
        "full_s": full.seconds,
        "upgrade_s": upgraded.seconds,
        "upgrade_x_full": upgraded.seconds / full.seconds,
        # a segmentation-only change: meta alone when no note holds such text (docs/schema.md)
        "segment_s": segment.seconds,
        "segment_x_full": segment.seconds / full.seconds,
        **scoped,
        "target_x": TARGET_X,
        "full_peak_mb": full.largest_peak_mb,
        "upgrade_peak_mb": upgraded.largest_peak_mb,
        # every process's CPU (workers too): on a shared machine, steadier than wall time
        "full_cpu_s": full.cpu_s,
        "upgrade_cpu_s": upgraded.cpu_s,
        "upgrade_cpu_x_full": upgraded.cpu_s / full.cpu_s if full.cpu_s else 0.0,
    }


def scale_row(vault: Path, full_s: float) -> dict[str, Any]:
    """The upgrade on a vault `make bench-100k` has just built (its full build took `full_s`
    in the same run): the index aged as above, then one cold `vaultmem reconcile`, which
    leaves the index current again for whatever the report measures next."""
    _age(vault)
    upgraded = _cli(vault, "reconcile")
    _age(vault, "segment_version")
    segment = _cli(vault, "reconcile")
    return {
        "upgrade_s": upgraded.seconds,
        "x_full": upgraded.seconds / full_s,
        "peak_mb": upgraded.largest_peak_mb,
        "segment_s": segment.seconds,
        "segment_x_full": segment.seconds / full_s,
        **_scoped(vault, full_s),  # last: it adds notes to the vault
    }


def render(r: dict[str, Any]) -> str:
    verdict = "ok" if r["upgrade_x_full"] <= r["target_x"] else "over"
    return (
        f"upgrade: {r['notes']} notes: full build {r['full_s']:.2f} s "
        f"({r['full_peak_mb']:.0f} MB), tokenizer-only upgrade {r['upgrade_s']:.2f} s "
        f"({r['upgrade_peak_mb']:.0f} MB) = {r['upgrade_x_full']:.2f}x the build "
        f"(target <= {r['target_x']}x: {verdict}); CPU of every process {r['full_cpu_s']:.1f} "
        f"and {r['upgrade_cpu_s']:.1f} s = {r['upgrade_cpu_x_full']:.2f}x; a "
        f"segmentation-only upgrade {r['segment_s']:.2f} s = {r['segment_x_full']:.3f}x, with "
        f"{r['scoped_notes']} notes of Han text added {r['scoped_s']:.2f} s = "
        f"{r['scoped_x_full']:.3f}x"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 1,000-note vault")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--vault", type=Path, help="measure a copy of this vault")
    parser.add_argument("--notes", type=int, default=10_000, help="generated vault size")
    args = parser.parse_args(argv)
    source = args.vault
    if source is None:
        from benchmarks.generate_vault import ensure_vault

        source, _, _ = ensure_vault(1_000 if args.quick else args.notes)
    result = measure_upgrade(source)
    print(json.dumps(result) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

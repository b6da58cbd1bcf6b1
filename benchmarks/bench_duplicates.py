"""How well `store`'s duplicate check tells restatements from distinct facts.

`benchmarks/questions/duplicates.jsonl` holds pairs of agent memories (build commands,
conventions, gotchas, preferences), each marked `duplicate` (a restatement: the second store
should append nothing) or not (a distinct fact, many of them near misses: another port, another
version, a negation, a sibling command). The pairs are shuffled with a fixed seed and split into
a tune half and a test half. The threshold is chosen on the tune half (the best F1; ties go to
the higher threshold, which favours precision: a missed duplicate costs a line, a false one
loses a fact); precision and recall are reported on the test half at that threshold and at the
shipped `duplicates.THRESHOLD`.

Usage: `python -m benchmarks.bench_duplicates [--seed 30] [--json]` (`--quick` is accepted for
`benchmarks.run` and changes nothing).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vaultmem.memory import duplicates

PAIRS = Path(__file__).resolve().parent / "questions" / "duplicates.jsonl"
GRID = tuple(round(0.30 + 0.05 * i, 2) for i in range(14))  # 0.30 … 0.95


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def scores(pairs: Sequence[dict[str, Any]], threshold: float) -> dict[str, float]:
    """Precision, recall and F1 of `similarity >= threshold` as the duplicate check."""
    tp = fp = fn = 0
    for pair in pairs:
        said = duplicates.similarity(pair["a"], pair["b"]) >= threshold
        tp += said and pair["duplicate"]
        fp += said and not pair["duplicate"]
        fn += (not said) and pair["duplicate"]
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def run(seed: int = 30) -> dict[str, Any]:
    pairs = load_pairs()
    random.Random(seed).shuffle(pairs)
    tune, test = pairs[: len(pairs) // 2], pairs[len(pairs) // 2 :]
    chosen = max(GRID, key=lambda t: (scores(tune, t)["f1"], t))
    return {
        "pairs": len(pairs),
        "duplicates": sum(1 for p in pairs if p["duplicate"]),
        "seed": seed,
        "tune": {"threshold": chosen, **scores(tune, chosen)},
        "test": {"threshold": chosen, **scores(test, chosen)},
        "shipped": {"threshold": duplicates.THRESHOLD, **scores(test, duplicates.THRESHOLD)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="accepted; changes nothing")
    args = parser.parse_args(argv)
    result = run(args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"duplicate check: {result['pairs']} pairs ({result['duplicates']} restatements)")
    for name in ("tune", "test", "shipped"):
        r = result[name]
        print(
            f"  {name:8} threshold {r['threshold']:.2f}: precision {r['precision']:.3f} "
            f"recall {r['recall']:.3f} F1 {r['f1']:.3f} (tp {r['tp']}, fp {r['fp']}, "
            f"fn {r['fn']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Split every question set in this folder once into a tuning half and a test half.

Run once (``python benchmarks/questions/make_splits.py``) and its output, ``splits.json``, was
committed; do not re-run it to "refresh" the split: a split chosen after seeing results is no
held-out set. Plain stdlib, no vaultmem imports.

For each ``*.jsonl`` file here (set name = file name without ``.jsonl``), questions are numbered
0, 1, 2, ... in file order, skipping blank lines and ``//`` comment lines, which is the order
``benchmarks.retrieval.load_questions`` returns them in. Each set gets its own
``random.Random(20261201)``; its indices are shuffled, grouped by ``kind`` (shuffled order kept
within a kind, kinds in sorted order) and dealt alternately to ``tune`` and ``test``, so both
halves hold every kind and differ in size by at most one. ``n`` and ``sha256`` (of the question
lines, joined by newlines) let a reader notice a set edited after the split: questions appended
later belong to neither half until a new split is made and documented.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

SEED = 20261201
HERE = Path(__file__).resolve().parent


def question_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("//")]


def split(lines: list[str]) -> dict[str, object]:
    kinds = [json.loads(ln).get("kind", "keyword") for ln in lines]
    order = list(range(len(lines)))
    random.Random(SEED).shuffle(order)
    dealt: dict[str, list[int]] = {"tune": [], "test": []}
    turn = 0
    for kind in sorted(set(kinds)):
        for i in (j for j in order if kinds[j] == kind):
            dealt["tune" if turn % 2 == 0 else "test"].append(i)
            turn += 1
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return {
        "tune": sorted(dealt["tune"]),
        "test": sorted(dealt["test"]),
        "n": len(lines),
        "sha256": digest,
    }


def main() -> None:
    out = {p.name[: -len(".jsonl")]: split(question_lines(p)) for p in sorted(HERE.glob("*.jsonl"))}
    text = json.dumps(out, indent=1, sort_keys=True)
    (HERE / "splits.json").write_text(text + "\n", encoding="utf-8")
    for name, s in out.items():
        print(f"{name}: {len(s['tune'])} tune, {len(s['test'])} test")


if __name__ == "__main__":
    main()

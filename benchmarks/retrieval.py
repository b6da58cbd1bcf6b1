"""Retrieval quality: question sets and their metrics (a minimal version of the shared module).

A question set is `benchmarks/questions/<set>.jsonl`, one JSON object per line:
`{"q": "...", "expected": ["vault/relative/path.md", ...], "kind": "..."}`. A question is
answered at rank r when any expected note is the r-th result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Question:
    q: str
    expected: list[str]
    kind: str


def load_questions(path: str | Path) -> list[Question]:
    questions = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            questions.append(Question(item["q"], list(item["expected"]), item.get("kind", "")))
    return questions


def first_rank(ranking: Sequence[str], expected: Sequence[str]) -> int | None:
    """1-based rank of the first expected note in `ranking`, or None."""
    wanted = set(expected)
    return next((i for i, path in enumerate(ranking, start=1) if path in wanted), None)


def metrics(rankings: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, float]:
    """r@1, r@5 (share of questions answered within the first 1 or 5 results) and MRR@10."""
    ranks = [first_rank(r, q.expected) for r, q in zip(rankings, questions, strict=True)]
    n = len(questions) or 1
    return {
        "r@1": sum(1 for r in ranks if r is not None and r <= 1) / n,
        "r@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
    }

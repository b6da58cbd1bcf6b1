"""Retrieval quality: question sets and r@1 / r@5 / MRR@10 over rankings of note paths.

A question set is `benchmarks/questions/<set>.jsonl`, one JSON object per line:
`{"q": "question", "expected": ["vault/relative/path.md", ...], "kind": "..."}`. A ranking is
the list of note paths an engine returned for a question, best first. A question counts as
found at rank k when any expected path is among the first k results.

(Minimal version written on the `recall` branch; the `search` branch owns the full one.)
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
            row = json.loads(line)
            questions.append(Question(row["q"], list(row["expected"]), row.get("kind", "")))
    return questions


def _rank(ranking: Sequence[str], expected: Sequence[str]) -> int | None:
    wanted = set(expected)
    return next((i for i, path in enumerate(ranking, 1) if path in wanted), None)


def metrics(rankings: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, float]:
    """r@1, r@5 and MRR@10 of rankings (one per question, same order)."""
    ranks = [_rank(r, q.expected) for r, q in zip(rankings, questions, strict=True)]
    n = len(ranks) or 1
    return {
        "r@1": sum(1 for r in ranks if r is not None and r <= 1) / n,
        "r@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None and r <= 10) / n,
    }

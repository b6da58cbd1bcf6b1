"""Recall quality beside search on a real vault: r@1, r@5 and MRR@10 per question set.

On a copy of the vault (default: the 843-note dwarvesf-brain) in a temporary folder: `init`
(the whole vault as one project), reconcile, store the set's topics
(`benchmarks/questions/<set>.topics.jsonl`: key, text, scope, scope_id, type), then ask every
question of `benchmarks/questions/<set>.jsonl` through `Vault.search` and `Vault.recall`
(top 10 each) and score both with `benchmarks.retrieval.metrics`, over all questions and per
`kind` (`note`: a person's note answers it; `topic`: a stored topic does). Also reported: the
median latency of each (warm, one read-only connection per call, as the CLI and MCP server do)
as a ratio of recall to search measured in the same run, and whether a second pass of recalls
returned the same order (a hit is not a use).

Usage: `python -m benchmarks.bench_recall [--vault PATH] [--set dwarvesf-recall] [--json]`
(`--quick` is accepted for `benchmarks.run` and changes nothing: the vault has a fixed size; a
missing vault is reported and skipped).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.retrieval import Question, load_questions, metrics, vault_for
from vaultmem.core.errors import QueryError
from vaultmem.vault import Vault

QUESTIONS = Path(__file__).resolve().parent / "questions"
DEFAULT_VAULT = vault_for("dwarvesf-brain")


def prepare(source: Path, target: Path, topics_file: Path) -> Vault:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".vaultmem", ".git"))
    vault = Vault.init(target)
    vault.reconcile()
    if topics_file.exists():
        for line in topics_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                t = json.loads(line)
                vault.store(
                    t["key"], t["text"], scope=t["scope"], scope_id=t["scope_id"], type=t["type"]
                )
    return vault


def rankings(vault: Vault, questions: list[Question]) -> dict[str, Any]:
    search_paths, recall_paths, search_s, recall_s = [], [], [], []
    for q in questions:
        start = time.perf_counter()
        try:
            found = [h.path for h in vault.search(q.q, limit=10)]
        except QueryError:
            found = []
        search_s.append(time.perf_counter() - start)
        search_paths.append(found)
        start = time.perf_counter()
        recall_paths.append([h.path for h in vault.recall(q.q, limit=10)])
        recall_s.append(time.perf_counter() - start)
    again = [[h.path for h in vault.recall(q.q, limit=10)] for q in questions]
    return {
        "search": search_paths,
        "recall": recall_paths,
        "search_median_s": statistics.median(search_s),
        "recall_median_s": statistics.median(recall_s),
        "stable": again == recall_paths,
    }


def report(name: str, questions: list[Question], ranked: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "recall", "set": name, "questions": len(questions)}
    kinds = sorted({q.kind for q in questions})
    for engine in ("search", "recall"):
        out[engine] = {"all": metrics(ranked[engine], questions)}
        for kind in kinds:
            picked = [i for i, q in enumerate(questions) if q.kind == kind]
            out[engine][kind] = metrics(
                [ranked[engine][i] for i in picked], [questions[i] for i in picked]
            )
    out["recall_vs_search_latency"] = ranked["recall_median_s"] / ranked["search_median_s"]
    out["search_median_ms"] = ranked["search_median_s"] * 1000
    out["recall_median_ms"] = ranked["recall_median_s"] * 1000
    out["stable_order"] = ranked["stable"]
    out["misses"] = [
        {"q": q.q, "expected": q.expected, "recall_top3": r[:3]}
        for q, r in zip(questions, ranked["recall"], strict=True)
        if not set(q.expected) & set(r[:5])
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=DEFAULT_VAULT)
    parser.add_argument("--set", default="dwarvesf-recall")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="accepted; changes nothing")
    args = parser.parse_args(argv)
    if not args.vault.is_dir():
        print(f"bench_recall: no vault at {args.vault}; skipped", file=sys.stderr)
        return 0
    questions = load_questions(QUESTIONS / f"{args.set}.jsonl")
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        vault = prepare(args.vault, Path(tmp) / "vault", QUESTIONS / f"{args.set}.topics.jsonl")
        result = report(args.set, questions, rankings(vault, questions))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['set']}: {result['questions']} questions (top 10 each)")
    print(f"{'':16}{'r@1':>7}{'r@5':>7}{'mrr@10':>8}")
    for engine in ("search", "recall"):
        for kind, m in result[engine].items():
            print(f"{engine + ' ' + kind:16}{m['r@1']:7.3f}{m['r@5']:7.3f}{m['mrr@10']:8.3f}")
    print(
        f"median latency: search {result['search_median_ms']:.1f} ms, recall "
        f"{result['recall_median_ms']:.1f} ms (x{result['recall_vs_search_latency']:.2f}; "
        "shared machine, noisy)"
    )
    print(f"second pass, same order: {result['stable_order']}")
    for miss in result["misses"]:
        print(f"miss@5: {miss['q']!r} → {miss['recall_top3']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure the tokenizer on a real vault: retrieval quality per stemmer, and throughput.

Builds a small in-memory BM25 (k1=1.2, b=0.75, plain Python) over the Markdown notes of a vault
(read only) with analyzers that differ only in their stemmer: none, and the English Snowball stemmer
`vaultmem.core.tokenizer` uses by default. Then it runs hand-made queries whose expected
notes were chosen by reading the dwarvesf-brain vault, and
reports recall@3 and MRR (first expected note in the top 10). Finally it times `tokenize` over
the whole vault, cold (empty word cache) and warm.

    .venv/bin/python benchmarks/tokenizer_eval.py [VAULT]   # the vault is only read
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from vaultmem.core import tokenizer as text
from vaultmem.core.tokenizer import _Analyzer, _stemmer

_stem = _stemmer("english")

DEFAULT_VAULT = Path(__file__).resolve().parents[1].parent / "shared" / "vaults" / "dwarvesf-brain"

# query -> notes that answer it (path suffixes; any one of them counts as a hit).
QUERIES: list[tuple[str, tuple[str, ...]]] = [
    ("redis rate limiting", ("Backend/Redis Rate Limiter.md",)),
    ("database lock", ("Backend/Database Locking.md",)),
    ("circuit breakers go", ("Backend/Circuit breaker in Go.md",)),
    (
        "test double stub mock",
        ("Backend/Test Doubles.md", "understanding-test-doubles-an-in-depth-look.md"),
    ),
    ("bloom filters false positive", ("Backend/bloom-filter.md",)),
    ("hive bucket", ("Data/Buckets on Apache Hive.md",)),
    ("hive managed tables vs external tables", ("Data/Managed Table vs External Table.md",)),
    ("hive analytic function window", ("Data/Hive Window and Analytic functions.md",)),
    (
        "chunking strategy context limit llm",
        (
            "AI/Chunking strategies to overcome context limitation in LLM.md",
            "chunking-strategies-to-overcome-context-limitation-in-llm.md",
        ),
    ),
    (
        "select a vector databases for llm",
        (
            "AI/Select Vector Database for LLM.md",
            "select-vector-database-for-llm.md",
            "_radar/vector-database.md",
        ),
    ),
    ("ranking results in rag", ("AI/Re-ranking in RAG.md",)),
    ("solid principle", ("Engineering/SOLID principles.md",)),
    ("entity domain driven design", ("Engineering/Entities in Domain Driven Design.md",)),
    ("avl tree rotation", ("Engineering/Self-balanced BSTs - AVL trees.md",)),
    ("dns cname record", ("Engineering/A and CNAME records in DNS.md",)),
    ("conway law", ("Engineering/Conway's law.md",)),
    ("postgres full text search", ("Engineering/Full-text search with Postgresql.md",)),
    ("caching llm queries", ("AI/LLM query caching.md", "timeline/llm-query-caching.md")),
    ("golang atomic packages", ("Backend/Atomic package in Golang.md",)),
    ("feature flag", ("DevOps/Feature flags.md",)),
    (
        "how discord stores message",
        ("How Discord Stores Messages  Part 1 - From MongoDB To Cassandra.md",),
    ),
    ("flutter stateful widget", ("Mobile/Stateless and Stateful Widgets in Flutter.md",)),
    ("ios secrets management", ("Mobile/Secret Management on iOS.md",)),
    (
        "dark mode flicker",
        ("Frontend/Dark mode flickers a white background for a fraction of a second.md",),
    ),
    ("commit messages convention", ("git-commit-message-convention.md",)),
    (
        "sargable query",
        ("Backend/SQL Sargable Queries and Their Impact on Database Performance.md",),
    ),
    (
        "message queue streaming platform",
        ("message-queues-and-streaming-platforms-eg-kafka-nats-rabbitmq.md",),
    ),
    # Paraphrases: what an agent would ask without knowing the note's title.
    ("count requests per user ip with an expiry", ("Backend/Redis Rate Limiter.md",)),
    ("concurrent transactions updating the same balance", ("Backend/Database Locking.md",)),
    ("half-open state after a failure threshold", ("Backend/Circuit breaker in Go.md",)),
    ("probabilistic membership test with hash function", ("Backend/bloom-filter.md",)),
    ("too many small partitions in hive", ("Data/Buckets on Apache Hive.md",)),
    ("organization structure mirrors software architecture", ("Engineering/Conway's law.md",)),
    ("store an api key secret securely on the client", ("Mobile/Secret Management on iOS.md",)),
    (
        "function call on an indexed column prevents index use",
        ("Backend/SQL Sargable Queries and Their Impact on Database Performance.md",),
    ),
    (
        "cache llm responses by semantic similarity",
        ("AI/LLM query caching.md", "timeline/llm-query-caching.md"),
    ),
    ("toggle a feature for a beta test group", ("DevOps/Feature flags.md",)),
    ("balanced binary search tree rotations", ("Engineering/Self-balanced BSTs - AVL trees.md",)),
]


VARIANTS: dict[str, Callable[[str], str]] = {
    "no stemming": lambda w: w,
    "Snowball english (the default)": _stem,
}


class BM25:
    """Okapi BM25 over term counts, enough to rank a few hundred notes per query."""

    def __init__(self, docs: dict[str, list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = {path: Counter(terms) for path, terms in docs.items()}
        self.length = {path: len(terms) for path, terms in docs.items()}
        self.avgdl = sum(self.length.values()) / len(docs)
        df: Counter[str] = Counter()
        for counts in self.tf.values():
            df.update(counts.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def search(self, terms: list[str], limit: int = 10) -> list[str]:
        scores: dict[str, float] = {}
        for path, counts in self.tf.items():
            norm = self.k1 * (1 - self.b + self.b * self.length[path] / self.avgdl)
            score = 0.0
            for t in terms:
                f = counts.get(t)
                if f:
                    score += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            if score:
                scores[path] = score
        return sorted(scores, key=scores.__getitem__, reverse=True)[:limit]


def read_vault(root: Path) -> dict[str, str]:
    """Note path -> body (the file, frontmatter included)."""
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(root.rglob("*.md"))
    }


def evaluate(notes: dict[str, str], stem: Callable[[str], str]) -> list[int | None]:
    """The rank (1-based, top 10) of the first expected note for each query; None if absent."""
    analyzer = _Analyzer(stem)
    index = BM25({path: analyzer.tokenize(body) for path, body in notes.items()})
    ranks = []
    for query, expected in QUERIES:
        ranked = index.search(list(dict.fromkeys(analyzer.tokenize(query))))
        ranks.append(next((i for i, p in enumerate(ranked, 1) if p.endswith(expected)), None))
    return ranks


def throughput(notes: dict[str, str]) -> tuple[float, float, float]:
    """MB of UTF-8 and MB/s of `tokenize` over all notes: cold (fresh cache), then best warm."""
    bodies = list(notes.values())
    mb = sum(len(b.encode()) for b in bodies) / 1e6
    analyzer = _Analyzer(_stem)
    runs = []
    for _ in range(4):
        start = time.perf_counter()
        for body in bodies:
            analyzer.tokenize(body)
        runs.append(time.perf_counter() - start)
    return mb, mb / runs[0], mb / min(runs[1:])


def report(results: dict[str, list[int | None]]) -> None:
    for name, ranks in results.items():
        at1 = sum(r == 1 for r in ranks) / len(ranks)
        at3 = sum(r is not None and r <= 3 for r in ranks) / len(ranks)
        mrr = sum(1 / r for r in ranks if r) / len(ranks)
        print(f"{name:28} recall@1 {at1:.2f}  recall@3 {at3:.2f}  MRR {mrr:.3f}")
    print("queries whose rank differs between variants (ranks in the order above):")
    for i, (query, _) in enumerate(QUERIES):
        row = [ranks[i] for ranks in results.values()]
        if len(set(row)) > 1:
            print(f"    {query!r}: {row}")


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_VAULT
    notes = read_vault(root)
    found = sum(any(p.endswith(e) for p in notes for e in exp) for _, exp in QUERIES)
    print(f"{len(notes)} notes, {len(QUERIES)} queries ({found} with an expected note present)")
    print(f"tokenizer version {text.TOKENIZER_VERSION}")
    titled = {path: Path(path).stem + "\n" + body for path, body in notes.items()}
    # With the file name as a title the queries are easy; body-only shows the stemmer's effect
    # where the words must be found in the prose.
    for label, corpus in (("title + body", titled), ("body only", notes)):
        print(f"-- {label}")
        report({name: evaluate(corpus, stem) for name, stem in VARIANTS.items()})
    mb, cold, warm = throughput(notes)
    print(f"tokenize: {mb:.1f} MB, cold {cold:.1f} MB/s, warm {warm:.1f} MB/s (one core)")


if __name__ == "__main__":
    main()

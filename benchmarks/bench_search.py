"""Search: BM25 in DuckDB tables against SQLite FTS5 on the same section texts, same run.

For each generated vault (10,000 and 100,000 notes; `--quick`: 1,000 and 10,000), on a
hard-linked copy `benchmarks/out/search-<N>/` so the cached vault keeps no index:

1. Full reconcile (rebuild) and a one-note incremental reconcile, with the BM25 share of each:
   the documents phase (`documents.note_documents` over every parsed note, one process) and
   the table phase (documents + postings loaded and sorted, `terms`/`search_stats` counted, in
   a fresh database); for the one-note edit, the same statements reconcile runs for that
   note's search rows, inside a transaction that is rolled back.
2. Search latency over 50 queries of 1–4 words drawn (seeded) from the vault's own words:
   warm `Vault.search` (its shared read connection and resident index kept between calls,
   secrets redacted), SQLite FTS5 (3. below) and `search.search` on an already-open
   connection (the SQL path), taking turns query by query, after one untimed pass over the
   queries (whose second search loads the
   resident index in a thread: its time and the RSS it adds are reported, and the first
   two searches after a one-note write, both SQL, the second starting the reload); then a
   connection opened and closed per call (what `Vault.search` did before); median and p95
   (nearest rank). Then a cold CLI: `python -m vaultmem search QUERY --json` as a fresh
   process, median of 5 queries (wall, and CPU = user + system), beside `python -c pass` (the
   interpreter alone), same run; and a 60-word prompt (`long_prompt`: the vault's words, one
   in six misspelt), median of 3: what a prompt hook's recall reads and scores.
3. SQLite FTS5 (stdlib `sqlite3`, `porter unicode61`, `bm25()` with heading weight 2, in
   memory): index build over the same documents' text, and the same 50 queries (words OR-ed,
   best section per note, top 10), timed in turn with ours (2. above).
4. Agreement: mean overlap@10 and Jaccard of both engines' top-10 notes.

Usage: `python -m benchmarks.bench_search [--quick] [--json] [--notes N ...]`; `--vault DIR`
instead runs on an existing vault (e.g. a generated one, copied and reconciled once):
its index is brought up to date incrementally and no full build is timed; the note the
one-note edit changes gets its bytes back at the end, and the index is reconciled again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate_vault import OUT_DIR, ensure_vault

NAME = "search"
QUERIES = 50
FULL_NOTES = (10_000, 100_000)
QUICK_NOTES = (1_000, 10_000)
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")


def _stats(runs: Sequence[float]) -> dict[str, float]:
    ordered = sorted(runs)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[max(0, -(-95 * len(ordered) // 100) - 1)] * 1000,
    }


def _join_loader(vault: Any) -> None:
    """Wait for the resident index's loader thread, if a search started one."""
    if vault._loader is not None:
        vault._loader.join()


def _rss_bytes() -> int:
    """This process's resident set size now (Linux `/proc/self/statm`)."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _log(message: str) -> None:
    print(f"[search] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _write_note(path: Path, data: bytes) -> None:
    """Replace the note's bytes through a new file (a new inode: a hard-linked original stays
    untouched) with the old one's permissions."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    shutil.copymode(path, tmp)
    tmp.replace(path)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def search_copy(n_notes: int) -> Path:
    """A hard-linked copy of the cached vault (cheap; edits replace files, never write through)."""
    src, _, _ = ensure_vault(n_notes)
    dst = OUT_DIR / f"search-{n_notes}"
    if not dst.exists():
        shutil.copytree(
            src, dst, copy_function=os.link, ignore=shutil.ignore_patterns("index.duckdb*")
        )
    return dst


def vault_words(texts: Sequence[str]) -> list[str]:
    """The words (not stop words) that occur in at least two of `texts`, sorted: what the
    drawn queries and the long prompt are made of."""
    from vaultmem.core.tokenizer import is_stopword

    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(_WORD.findall(text.lower())))
    return sorted(w for w, c in counts.items() if c >= 2 and not is_stopword(w))


def draw_queries(texts: Sequence[str], seed: int = 0) -> list[str]:
    """50 queries of 1–4 words that occur in at least two documents (not stop words)."""
    return queries_from(vault_words(texts), seed)


def queries_from(words: Sequence[str], seed: int = 0) -> list[str]:
    """`draw_queries` from the words `vault_words` gave."""
    rng = random.Random(seed)
    return [" ".join(rng.sample(words, rng.randint(1, 4))) for _ in range(QUERIES)]


LONG_PROMPT_WORDS = 60
"""Words in the long prompt (`long_prompt`): what a person writes to an agent, which the
prompt hook hands to `recall` whole."""


def long_prompt(words: Sequence[str], seed: int = 0) -> str:
    """A prompt of LONG_PROMPT_WORDS words as a request to an agent reads: the vault's own
    `words` (`vault_words`, common and rare alike) between stop words, and one word in six
    with two letters swapped (a word the index lacks: a typo, or a word no note uses), whose
    lookup and replacement a long prompt pays."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(LONG_PROMPT_WORDS):
        if i % 3 == 1:
            out.append(rng.choice(["the", "and", "please", "with", "before", "about", "we"]))
            continue
        word = rng.choice(words)
        if i % 6 == 0 and len(word) > 4:
            at = rng.randrange(1, len(word) - 2)
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        out.append(word)
    return " ".join(out)


def bm25_build_phases(root: Path) -> dict[str, float]:
    """The BM25 work of a full build, in one process, apart from the rest of reconcile:
    cutting notes into documents, then writing postings and loading the search tables."""
    from vaultmem.core.documents import note_documents, postings_lines
    from vaultmem.note.parse import parse_note
    from vaultmem.storage import index_writes, store
    from vaultmem.storage import search_rows as rc
    from vaultmem.storage.schema import DDL

    notes = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("."):
            notes.append(parse_note(rel, path.read_bytes()).note)
    documents_s, docs = _timed(lambda: [note_documents(n) for n in notes])
    tmp = root / ".vaultmem" / "bench-bm25.duckdb"
    store.remove_index(tmp)
    con = store.connect(tmp, read_only=False)
    try:
        con.execute(DDL)
        ids = [f"n-{i:016x}" for i in range(len(docs))]

        def load() -> None:
            documents = store.new_batch("documents")
            tsv = tmp.with_suffix(".tsv")
            with tsv.open("w", encoding="utf-8", newline="\n") as handle:
                for i, note_docs in enumerate(docs):
                    handle.writelines(postings_lines(i, note_docs))
                    for doc in note_docs:
                        documents.add(
                            ids[i],
                            doc.ord,
                            doc.heading,
                            doc.line,
                            doc.length,
                            doc.text,
                            doc.line_keys,
                        )
            con.execute("BEGIN TRANSACTION")
            store.load(con, documents)
            index_writes.number_notes(con, list(enumerate(ids)))
            rc.build_postings(con, [tsv], max_line_bytes=0)
            con.execute("COMMIT")
            tsv.unlink()

        tables_s, _ = _timed(load)
    finally:
        con.close()
        store.remove_index(tmp)
    return {"documents_s": documents_s, "tables_s": tables_s, "bm25_s": documents_s + tables_s}


def one_note_bm25(index: Path, note_id: str, note: Any) -> float:
    """Seconds for the search-table statements of a one-note change, rolled back."""
    from vaultmem.core.documents import note_documents, postings_lines
    from vaultmem.storage import index_writes, store
    from vaultmem.storage import search_rows as rc

    con = store.connect(index, read_only=False)
    tsv = index.with_suffix(".one.tsv")
    try:
        start = time.perf_counter()
        docs = note_documents(note)
        tsv.write_text("".join(postings_lines(0, docs)), encoding="utf-8")
        con.execute("BEGIN TRANSACTION")
        removed_df = rc.delete_postings(con, [note_id])
        removed = rc.notes_documents(con, [note_id])
        store.delete_where_in(con, "documents", "note_id", [note_id])
        documents = store.new_batch("documents")
        for doc in docs:
            documents.add(
                note_id, doc.ord, doc.heading, doc.line, doc.length, doc.text, doc.line_keys
            )
        store.load(con, documents)
        index_writes.number_notes(con, [(0, note_id)])
        # what an edit's transaction runs (`index.transaction`), boilerplate recount included
        rc.load_changed_postings(
            con, [tsv], removed_df=removed_df, removed=removed, max_line_bytes=0
        )
        seconds = time.perf_counter() - start
        con.execute("ROLLBACK")
    finally:
        con.close()
        tsv.unlink(missing_ok=True)
    return seconds


def fts5_build(texts: Sequence[tuple[str, str, str]]) -> tuple[float, sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(note_id UNINDEXED, heading, body, "
        "tokenize='porter unicode61')"
    )
    start = time.perf_counter()
    with con:
        con.executemany("INSERT INTO fts VALUES (?, ?, ?)", texts)
    return time.perf_counter() - start, con


def fts5_query(con: sqlite3.Connection, query: str) -> list[str]:
    match = " OR ".join(f'"{w}"' for w in query.split())
    rows = con.execute(
        # bm25() cannot feed an aggregate directly: materialise the matches first.
        "WITH m AS MATERIALIZED (SELECT note_id, bm25(fts, 0.0, 2.0, 1.0) AS s FROM fts "
        "WHERE fts MATCH ?) SELECT note_id, min(s) AS best FROM m GROUP BY note_id "
        "ORDER BY best, note_id LIMIT 10",
        [match],
    ).fetchall()
    return [r[0] for r in rows]


def cold_cli(root: Path, queries: Sequence[str], prompt: str = "") -> dict[str, float]:
    """Median wall seconds of a fresh `python -m vaultmem search Q --json` and of `python -c
    pass`, and the search's median CPU seconds (user + system: what a shared machine's load
    moves least), taking turns query by query; then the same for the long `prompt`, three
    times (a prompt hook's question: many words, some the index lacks)."""
    import subprocess

    from benchmarks.ab_cli import children_cpu_s

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }

    def run(args: list[str]) -> tuple[float, float]:
        cpu = children_cpu_s()
        start = time.perf_counter()
        subprocess.run(args, cwd=root, env=env, capture_output=True, check=True)
        return time.perf_counter() - start, children_cpu_s() - cpu

    search_s, search_cpu_s, bare_s = [], [], []
    for q in queries:
        bare_s.append(run([sys.executable, "-c", "pass"])[0])
        wall, cpu = run([sys.executable, "-m", "vaultmem", "search", q, "--json"])
        search_s.append(wall)
        search_cpu_s.append(cpu)
    prompt_s, prompt_cpu_s = [], []
    for _ in range(3 if prompt else 0):
        wall, cpu = run([sys.executable, "-m", "vaultmem", "search", prompt, "--json"])
        prompt_s.append(wall)
        prompt_cpu_s.append(cpu)
    return {
        "cold_cli_search_s": statistics.median(search_s),
        "cold_cli_search_cpu_s": statistics.median(search_cpu_s),
        "cold_python_s": statistics.median(bare_s),
        "cold_cli_long_prompt_s": statistics.median(prompt_s) if prompt_s else 0.0,
        "cold_cli_long_prompt_cpu_s": statistics.median(prompt_cpu_s) if prompt_s else 0.0,
    }


def run_size(n_notes: int, existing: Path | None = None) -> dict[str, Any]:
    from vaultmem.note.parse import parse_note
    from vaultmem.search import query as search
    from vaultmem.storage import store
    from vaultmem.vault import Vault

    root = existing or search_copy(n_notes)
    vault = Vault(root)
    if existing is None:
        _log(f"{n_notes} notes: full reconcile")
        full_s, report = _timed(lambda: vault.reconcile(rebuild=True))
        _log(f"full reconcile {full_s:.2f} s; BM25 build phases")
        phases = bm25_build_phases(root)
    else:
        _log(f"{root}: reconcile (incremental)")
        full_s, report = math.nan, vault.reconcile()
        phases = {"documents_s": math.nan, "tables_s": math.nan, "bm25_s": math.nan}
    _log(f"phases {phases}; one-note edit")

    # One-note edit: append a sentence, reconcile, then measure its search statements alone.
    with store.reading(vault.config.index_path) as con:
        note_id, rel = con.execute("SELECT id, path FROM notes ORDER BY path LIMIT 1").fetchone()
        texts = con.execute(
            "SELECT d.note_id, coalesce(d.heading, ''), d.text FROM documents d "
            "ORDER BY d.note_id, d.ord"
        ).fetchall()
    path = root / rel
    original = path.read_bytes()  # put back at the end: `--vault` is the caller's vault
    try:
        data = original + b"\nAn edited sentence about storage latency.\n"
        _write_note(path, data)
        incremental_s, _ = _timed(lambda: vault.reconcile())
        one_bm25_s = one_note_bm25(vault.config.index_path, note_id, parse_note(rel, data).note)

        _log(f"incremental {incremental_s:.3f} s (BM25 {one_bm25_s:.3f} s); queries")
        words = vault_words([t for _, _, t in texts[:20_000]])
        queries = queries_from(words)
        k1, b = vault.config.bm25_k1, vault.config.bm25_b
        # Warm: imports, the page cache and DuckDB's buffers hold what the queries read; the
        # second search starts loading the resident index (search/resident.py) in a thread: the
        # time until it is loaded and the RSS it adds are measured. Then Vault.search, SQLite FTS5
        # and search.search on an open connection (SQL) take turns query by query, so the
        # machine's load (shared, noisy) and each other's traces in the CPU caches weigh on all
        # three alike. FTS5 timed in a loop of its own, nothing else between its calls, measured
        # ~30% faster: 1.34-1.39 ms against 1.87-1.90 ms at 10,000 notes, same day, quiet machine.
        vault.search(queries[0], limit=10)
        rss_before = _rss_bytes()
        load_s, _ = _timed(lambda: (vault.search(queries[1], limit=10), _join_loader(vault)))
        held = vault._resident
        resident = {
            "resident": held is not None,
            "resident_load_s": load_s,
            "resident_rss_mb": (_rss_bytes() - rss_before) / 1e6,
            "resident_nbytes_mb": held.nbytes / 1e6 if held is not None else 0.0,
        }
        _log("FTS5 build")
        fts_build_s, fts = fts5_build(texts)
        for q in queries:
            vault.search(q, limit=10)
            fts5_query(fts, q)
        open_runs, ours, query_runs, reopen_runs, fts_runs, theirs = [], [], [], [], [], []
        with store.reading(vault.config.index_path) as con:
            for q in queries:
                seconds, hits = _timed(lambda q=q: vault.search(q, limit=10))
                open_runs.append(seconds)
                ours.append([h.note_id for h in hits])
                seconds, top = _timed(lambda q=q: fts5_query(fts, q))
                fts_runs.append(seconds)
                theirs.append(top)
                seconds, _ = _timed(lambda q=q: search.search(con, q, limit=10, k1=k1, b=b))
                query_runs.append(seconds)
        fts.close()
        # After a write the index file differs: two searches read SQL, the second starts the reload.
        data = path.read_bytes() + b"\nOne more edited sentence.\n"
        _write_note(path, data)
        vault.reconcile()
        after_write_s, _ = _timed(lambda: vault.search(queries[2], limit=10))
        second_s, _ = _timed(lambda: vault.search(queries[3], limit=10))
        reload_s, _ = _timed(lambda: _join_loader(vault))
        vault.close()  # else the next opens reuse its open database

        def per_call(q: str) -> None:
            with store.reading(vault.config.index_path) as con:
                search.search(con, q, limit=10, k1=k1, b=b)

        for q in queries:
            seconds, _ = _timed(lambda q=q: per_call(q))
            reopen_runs.append(seconds)
        _log("cold CLI")
        cold = cold_cli(root, queries[:5], long_prompt(words))
    finally:
        if existing is not None:  # leave the vault as found: the note's bytes, then its index
            vault.close()  # idempotent; DuckDB will not open a writer beside its reader
            _write_note(path, original)
            Vault(root).reconcile()

    overlap = [len(set(a) & set(b)) / 10 for a, b in zip(ours, theirs, strict=True)]
    jaccard = [
        len(set(a) & set(b)) / len(set(a) | set(b)) if a or b else 1.0
        for a, b in zip(ours, theirs, strict=True)
    ]
    query = _stats(query_runs)
    fts_query = _stats(fts_runs)
    return {
        "notes": report.notes,
        "documents": len(texts),
        "full_reconcile_s": full_s,
        **{f"full_{k}": v for k, v in phases.items()},
        "incremental_reconcile_s": incremental_s,
        "incremental_bm25_s": one_bm25_s,
        "search_open_and_query": _stats(open_runs),
        "search_query": query,
        **resident,
        "first_search_after_write_s": after_write_s,
        "second_search_after_write_s": second_s,
        "reload_after_write_s": second_s + reload_s,
        "search_connection_per_call": _stats(reopen_runs),
        **cold,
        "fts5_build_s": fts_build_s,
        "fts5_query": fts_query,
        "query_ratio_to_fts5": query["median_ms"] / fts_query["median_ms"],
        "vault_ratio_to_fts5": _stats(open_runs)["median_ms"] / fts_query["median_ms"],
        "build_ratio_to_fts5": phases["bm25_s"] / fts_build_s,
        "overlap_at_10": statistics.mean(overlap),
        "jaccard_at_10": statistics.mean(jaccard),
    }


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        f"{'notes':>7} {'full s':>7} {'bm25 s':>7} {'docs s':>7} {'tables s':>8} "
        f"{'incr s':>7} {'incr bm25':>9} {'fts5 build':>10} {'open+q ms':>15} "
        f"{'query ms':>15} {'fts5 ms':>13} {'×fts5':>6} {'ovl@10':>6}",
    ]
    extra = []
    for r in rows:
        so, sq, fq = r["search_open_and_query"], r["search_query"], r["fts5_query"]
        lines.append(
            f"{r['notes']:>7} {r['full_reconcile_s']:>7.2f} {r['full_bm25_s']:>7.2f} "
            f"{r['full_documents_s']:>7.2f} {r['full_tables_s']:>8.2f} "
            f"{r['incremental_reconcile_s']:>7.3f} {r['incremental_bm25_s']:>9.3f} "
            f"{r['fts5_build_s']:>10.2f} "
            f"{so['median_ms']:>6.1f} / {so['p95_ms']:>6.1f} "
            f"{sq['median_ms']:>6.1f} / {sq['p95_ms']:>6.1f} "
            f"{fq['median_ms']:>5.2f} / {fq['p95_ms']:>5.2f} "
            f"{r['query_ratio_to_fts5']:>6.1f} {r['overlap_at_10']:>6.2f}"
        )
        extra.append(
            f"{r['notes']:>7} Vault.search ×fts5 {r['vault_ratio_to_fts5']:.2f}; connection per "
            f"call {r['search_connection_per_call']['median_ms']:.1f} ms; cold CLI search "
            f"{r['cold_cli_search_s']:.3f} s, CPU {r['cold_cli_search_cpu_s']:.3f} s "
            f"(python -c pass {r['cold_python_s']:.3f} s); a {LONG_PROMPT_WORDS}-word prompt "
            f"{r['cold_cli_long_prompt_s']:.3f} s, CPU {r['cold_cli_long_prompt_cpu_s']:.3f} s"
        )
        extra.append(
            f"{r['notes']:>7} resident index: {'held' if r['resident'] else 'not held (SQL)'}, "
            f"load {r['resident_load_s']:.2f} s, +{r['resident_rss_mb']:.0f} MB RSS "
            f"({r['resident_nbytes_mb']:.0f} MB arrays and texts); after a write: first "
            f"search {r['first_search_after_write_s'] * 1000:.0f} ms, second "
            f"{r['second_search_after_write_s'] * 1000:.0f} ms (SQL; it starts the reload, "
            f"done {r['reload_after_write_s']:.2f} s after it began)"
        )
    lines += extra
    lines.append("(latencies: median / p95 over 50 queries; bm25 s = docs s + tables s)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 notes")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--notes", type=int, nargs="*", help="vault sizes to run")
    parser.add_argument("--vault", type=Path, help="an existing vault instead (no full build)")
    args = parser.parse_args(argv)
    sizes = args.notes or (QUICK_NOTES if args.quick else FULL_NOTES)
    rows = [run_size(0, args.vault)] if args.vault else [run_size(n) for n in sizes]
    if args.json:
        print(json.dumps({"benchmark": NAME, "rows": rows}))
    else:
        print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

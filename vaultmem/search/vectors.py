"""Semantic recall at query time: vectors, and BM25 fused with the vectors (`hybrid`).

What words cannot find is vocabulary mismatch ("money back" vs a note titled *Refund policy*).
Every search document has a unit vector (`embedding.py`: the model, and the parse workers'
hook that fills the index). A query is embedded the same way and the documents closest by
cosine are found in DuckDB (`storage/vector_queries.py`); `hybrid` fuses that ranking with
BM25's by reciprocal rank. Pure parts (no I/O, no numpy): `query_text`, `fuse`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from vaultmem.core.errors import QueryError, SemanticUnavailableError
from vaultmem.core.models import SEARCH_MODE_WHEN_ON, SEARCH_MODES, SearchMode
from vaultmem.search import query
from vaultmem.search.embedding import embedder
from vaultmem.search.query import SearchFilters, SearchHit
from vaultmem.storage import search_queries, vector_queries
from vaultmem.storage.store import Connection
from vaultmem.storage.vector_queries import Ranked

if TYPE_CHECKING:  # numpy: loaded only when a Vault holds the index
    from vaultmem.search.resident import Resident

Mode = SearchMode
MODES = SEARCH_MODES

RRF_K = 60
"""Reciprocal rank fusion's constant: a note at rank r in a ranking earns 1 / (RRF_K + r)."""
DEFAULT_WHEN_ON = SEARCH_MODE_WHEN_ON
"""The mode a search without `--mode` uses when the index holds vectors (else `words`). Set by
the rule in docs/search.md: hybrid becomes it only if it beats words on r@5 AND MRR@10 on every
question set and stays within 2x of words' warm latency. After search v2 it does not
(benchmarks/bench_semantic.py: it loses to words on dwarvesf-brain and example-vault, ties on
example-vault-mismatch's r@5; at 100,000 notes it also costs 2.8x words), so vectors are asked
for explicitly. tests/search/test_vectors.py checks the quality half against this value."""
POOL = 50
"""How many notes each ranking contributes to a fusion (at least; more for a larger limit)."""

_OPERATOR = re.compile(r"(?:^|\s)(?:-\S+|(?:tag|path|type):\S+)", re.I)

# -- pure ----------------------------------------------------------------------------------


def query_text(query: str) -> str:
    """The words of a query without its operators (`tag:x`, `path:p`, `type:t`, `-excluded`),
    which filter rather than describe; quotes are dropped."""
    return " ".join(_OPERATOR.sub(" ", query).replace('"', " ").split())


def fuse(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each ranking (ids, best first) gives an id 1 / (k + rank), rank
    from 1; ids are returned by the sum, best first, ties by id. Equal weights: a words-heavy
    weighting was never measured on questions it was not tuned on, so none is offered."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def embed_query(query: str) -> list[float]:
    """A query's unit vector, as the list DuckDB binds to `FLOAT[256]`."""
    vector: list[Any] = embedder().embed([query_text(query)])[0].tolist()
    return [float(x) for x in vector]


# -- search --------------------------------------------------------------------------------


def semantic_search(
    con: Connection,
    text: str,
    filters: SearchFilters,
    *,
    mode: Literal["vectors", "hybrid"],
    limit: int,
    k1: float,
    b: float,
    language: str,
    clean: Callable[[str], str] | None = None,
    resident: Resident | None = None,
) -> list[SearchHit]:
    """Search by vectors (cosine over the document vectors) or hybrid (BM25's ranking and the
    vectors' fused by reciprocal rank); `search/front.py` dispatches here. Filters, operators
    and -exclusions apply; `"phrases"` constrain the words ranking only."""
    require_vectors(con)
    if not query_text(text):
        raise QueryError(
            f"The query {text!r} has no words to compare by meaning.",
            hint='Ask in words, e.g. vaultmem search "how do I get my money back" --mode vectors',
        )
    parsed = query.parse_query(text, language)
    notes = query.note_filter(parsed, filters)
    pool = limit if mode == "vectors" else max(POOL, limit)
    nearest = vector_queries.nearest_notes(
        con,
        embed_query(text),
        limit=pool,
        where=notes.where,
        params=notes.params,
        excluded=parsed.excluded,
    )
    terms = set(parsed.terms)
    if mode == "vectors":
        return _hits(con, nearest, terms, language, clean, parsed.cjk_words)
    worded: list[search_queries.RankedNote] = []
    if parsed.terms:  # a query of stop words only: the vectors still understand it
        worded, terms = query.ranked_notes(
            con, text, filters, limit=pool, k1=k1, b=b, language=language, resident=resident
        )
    fused = fuse([[note.note_id for note in worded], [note_id for note_id, _ in nearest]])
    # A note's shown section: its best by words when words found it, else by vectors.
    docs = {**dict(nearest), **{note.note_id: note.documents for note in worded}}
    ranked = [(note_id, docs[note_id]) for note_id, _ in fused[:limit]]
    scores = dict(fused)
    return [
        replace(hit, score=round(scores[hit.note_id], 6))
        for hit in _hits(con, ranked, terms, language, clean, parsed.cjk_words)
    ]


def require_vectors(con: Connection) -> None:
    """Fail clearly when the index holds no vectors (semantic recall off for this vault)."""
    if vector_queries.embedding_model(con) == "none":
        raise SemanticUnavailableError(
            "This index has no vectors: semantic recall is off for this vault.",
            hint="Set `semantic = true` under [search] in .vaultmem/config.toml and run "
            "`vaultmem reconcile` (needs pip install 'vaultmem[semantic]'); or use --mode words.",
        )


def _hits(
    con: Connection,
    ranked: Ranked,
    terms: set[str],
    language: str,
    clean: Callable[[str], str] | None,
    words: Sequence[frozenset[str]] = (),
) -> list[SearchHit]:
    """Hits for ranked notes: the best-ranked section with text is the one shown."""
    ids = [note_id for note_id, _ in ranked]
    if not ids:
        return []
    cards = vector_queries.note_cards(con, ids)
    sections = search_queries.note_sections(con, ids)
    hits = []
    for note_id, docs in ranked:
        path, title, scope, scope_id = cards[note_id]
        heading, line, body = query.shown_section(docs, sections.get(note_id, {}))
        if clean is not None:
            body = clean(body)
        hits.append(
            SearchHit(
                note_id=note_id,
                path=path,
                title=title,
                scope=scope,
                scope_id=scope_id,
                heading=heading,
                line=line,
                score=round(docs[0][1], 6) if docs else 0.0,
                snippet=query.snippet(body, terms, language=language, words=words),
                sections=tuple({"ord": o, "score": round(sc, 6)} for o, sc in docs[:5]),
            )
        )
    return hits

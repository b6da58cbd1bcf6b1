"""BM25 of documents and whole notes, computed from the query terms' postings.

The index hands over the rows a query needs as columns (`storage.search_queries.term_postings`:
one row per query term and document, a few hundred for a typical query at 10,000 notes, tens of
thousands for a common word at 100,000) and the collection's statistics; the scoring happens
here. In SQL it took about ten CTE stages that DuckDB planned and ran for every query, several
times the cost of reading the rows.

    bm25(t,u) = qw(t) · idf(t) · tf'(t,u)·(k1+1) / (tf'(t,u) + k1·(1 − b + b·|u|/avgdl))
    idf(t)    = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

computed over documents (N documents, df in documents, |d|) and over whole notes (a note's tf'
summed over its documents, |note| = Σ|d|, N notes, df in notes). A note's score is

    score(note) = max_{section d} bm25(d) + title_weight · bm25(title document)
                  + whole_weight · bm25(note)

One formula, two entry points over one `rank` (`search.query` calls only `rank`):
`rank_rows` in plain Python for up to COLUMNS_FROM rows (and up to COLD_COLUMNS_FROM in a
process that has not loaded numpy), `rank_columns` with numpy above. One scorer cannot serve
both without losing speed either way: numpy's fixed cost per call makes it slower than Python
below ~128 rows (the typical query), a cold CLI's one query would pay numpy's import (~0.07 s,
a quarter of its time), and Python is 5x slower than numpy at ~1,700 rows (COLUMNS_FROM's
measurements). What they share is one function each for the parts that are not per row:
`idf` and `top_documents` (the documents a hit lists), and the order of hits (score
descending, then note key: `heapq` in one, `_top`'s lexsort in the other). The per-row arithmetic is
written twice, in the shape each runtime does fast (dicts of floats; whole-array operations),
and the two group the same products differently, so they agree to ~1e-15, not bit for bit;
folding one into the other's order would change the scores (and so the ties) of the queries it
serves. Each sums in a fixed order (query term order; rows sorted by note, ord, term), so equal
postings give equal floats whatever order the scan returned them in: an incrementally kept
index and a rebuild rank ties alike.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

F = TypeVar("F", float, "npt.NDArray[np.float64]")
"""A float or an array of them: `idf` runs on either."""

POSTING_COLUMNS = ("term", "note_key", "ord", "tf", "length", "note_length")
"""The columns `rank` reads: the query term's index in the query, the note's integer key, the
document's ord, field-weighted tf, document length and note length."""

NOTE_ORDER = "note_order"
"""An optional column of numpy postings: a small integer per note that sorts as `note_key`
does (the resident index's note numbers); with it the rows are sorted on one integer key."""


@dataclass(frozen=True, slots=True)
class Stats:
    """What BM25 needs of the collection the filters keep."""

    documents: float
    avgdl: float
    notes: float
    avgnl: float


@dataclass(frozen=True, slots=True)
class ScoredNote:
    """A note's score with its parts and its best documents as (ord, score), best first."""

    note_key: int
    score: float
    section: float
    title: float
    whole: float
    documents: list[tuple[int, float]]


COLUMNS_FROM = 128
"""From how many postings rows the numpy scorer runs once numpy is loaded: below, plain Python
is as fast. Measured on the 10,000-note vault's postings (3 terms, median of 7, loaded
machine): 124 rows 0.16 ms in Python / 0.12 ms in numpy; 555 rows 1.1 / 0.21 ms; 1,662 rows
2.2 / 0.47 ms (it was 2,000 when each query's rows came from SQL, whose numpy fetch costs more)."""
COLD_COLUMNS_FROM = 50_000
"""The same before numpy is loaded: importing it (~0.07 s idle, a quarter of a cold CLI search)
costs more than scoring this many rows in Python (~1 µs a row). A process that searches a second
time is long-lived and loads it (`warm`), so only a one-query process keeps to this."""
_ranked = 0


def columns_from() -> int:
    """The row count from which to fetch numpy columns, given what this process has loaded."""
    return COLUMNS_FROM if "numpy" in sys.modules else COLD_COLUMNS_FROM


def warm() -> None:
    """Called once per search: from the second one on, load numpy (a long-lived process:
    the MCP server, a library user), so large queries get the numpy scorer."""
    global _ranked
    _ranked += 1
    if _ranked == 2:
        import numpy  # noqa: F401


Row = tuple[int, int, int, float, int, int]
"""One posting as `rank_rows` reads it, in POSTING_COLUMNS order."""


def rank(
    postings: Sequence[Row] | Mapping[str, npt.NDArray[Any]],
    weights: Sequence[float],
    stats: Stats,
    **options: Any,
) -> list[ScoredNote]:
    """`rank_rows` for a list of rows, `rank_columns` for numpy columns (same options)."""
    if isinstance(postings, Mapping):
        return rank_columns(postings, weights, stats, **options)
    return rank_rows(postings, weights, stats, **options)


def rank_rows(
    postings: Iterable[Row],
    weights: Sequence[float],
    stats: Stats,
    *,
    k1: float,
    b: float,
    limit: int,
    whole_weight: float,
    title_weight: float,
    excluded: frozenset[int] = frozenset(),
    only: frozenset[int] | None = None,
    best_documents: int = 5,
) -> list[ScoredNote]:
    """`rank` over rows in plain Python: the same result for a few hundred rows, without
    numpy. Sums run term by term in query order, so they do not depend on row order.

    A cold CLI's query scores up to COLD_COLUMNS_FROM rows here (~22,000 for "meeting notes
    budget" at 10,000 notes), so the loops are shaped for CPython: one comprehension per
    term for the documents' parts, one dict per term for the notes' tf sums, and the hits'
    best documents gathered for the top notes only."""
    by_term: list[list[Row]] = [[] for _ in weights]
    append = [rows.append for rows in by_term]
    for posting in postings:
        append[posting[0]](posting)
    docs: dict[tuple[int, int], float] = {}
    whole: dict[int, float] = {}
    doc_norm = k1 * b / (stats.avgdl or 1.0)
    note_norm = k1 * b / (stats.avgnl or 1.0)
    base = k1 * (1 - b)
    for ti, rows in enumerate(by_term):
        if not rows:
            continue
        factor = weights[ti] * idf(stats.documents, float(len(rows)), math.log) * (k1 + 1)
        # A term has one row per document, so its parts add to the documents' sums once each
        # (the first term's are the sums: 0.0 + part is part).
        parts = [factor * tf / (tf + base + doc_norm * length) for _, _, _, tf, length, _ in rows]
        if docs:
            get = docs.get
            for row, part in zip(rows, parts, strict=True):
                doc = row[1], row[2]
                docs[doc] = get(doc, 0.0) + part
        else:
            docs = {(row[1], row[2]): part for row, part in zip(rows, parts, strict=True)}
        tf_sums: dict[int, float] = {}
        note_lengths: dict[int, int] = {}
        for _, key, _, tf, _, note_length in rows:
            summed = tf_sums.get(key)
            if summed is None:
                tf_sums[key] = tf
                note_lengths[key] = note_length
            else:
                tf_sums[key] = summed + tf
        nfactor = weights[ti] * idf(stats.notes, float(len(tf_sums)), math.log) * (k1 + 1)
        get_whole = whole.get
        for key, tf_sum in tf_sums.items():
            whole[key] = get_whole(key, 0.0) + nfactor * tf_sum / (
                tf_sum + base + note_norm * float(note_lengths[key])
            )
    section: dict[int, float] = {}
    title: dict[int, float] = {}
    get_section = section.get
    for (key, ord_), score in docs.items():
        if ord_ == 0:
            title[key] = score
        elif score > get_section(key, 0.0):
            section[key] = score
    totals = {
        key: section.get(key, 0.0) + title_weight * title.get(key, 0.0) + whole_weight * score
        for key, score in whole.items()
        if key not in excluded and (only is None or key in only)
    }
    top = heapq.nsmallest(limit, totals, key=lambda key: (-totals[key], key))
    best: dict[int, list[tuple[int, float]]] = {key: [] for key in top}
    for (key, ord_), score in docs.items():
        if key in best:
            best[key].append((ord_, score))
    return [
        ScoredNote(
            key,
            totals[key],
            section.get(key, 0.0),
            title.get(key, 0.0),
            whole[key],
            top_documents(best[key], best_documents),
        )
        for key in top
    ]


def idf(n: float, df: F, log: Callable[[F], F]) -> F:
    """BM25's idf of a term in `df` of `n` units (documents or notes): a float, or numpy
    arrays with `log=np.log` (the same operations in the same order, element by element)."""
    return log(1 + (n - df + 0.5) / (df + 0.5))


def top_documents(pairs: Iterable[tuple[int, float]], count: int) -> list[tuple[int, float]]:
    """A hit's `count` best documents as (ord, score): score descending, then ord."""
    return sorted(pairs, key=_document_order)[:count]


def _document_order(pair: tuple[int, float]) -> tuple[float, int]:
    return -pair[1], pair[0]


def _starts(changed: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """Indexes where a run begins, given `changed[i]`: whether row i+1 differs from row i."""
    import numpy as np

    return np.concatenate(([True], changed)).nonzero()[0]


def rank_columns(
    postings: Mapping[str, npt.NDArray[Any]],
    weights: Sequence[float],
    stats: Stats,
    *,
    k1: float,
    b: float,
    limit: int,
    whole_weight: float,
    title_weight: float,
    excluded: frozenset[int] = frozenset(),
    only: frozenset[int] | None = None,
    best_documents: int = 5,
) -> list[ScoredNote]:
    """The `limit` best notes (score descending, then note key), from numpy columns
    (POSTING_COLUMNS). `excluded` and `only` (note
    keys) apply after scoring: they never change the statistics."""
    import numpy as np

    term = np.asarray(postings["term"], dtype=np.intp)
    if not len(term):
        return []
    key = np.asarray(postings["note_key"], dtype=np.int64)
    ord_ = np.asarray(postings["ord"], dtype=np.int64)
    qw = np.asarray(weights, dtype=np.float64)
    n_terms = len(qw)
    if NOTE_ORDER in postings:
        # (note, ord, term) as one integer: one sort instead of lexsort's three, 2-3x faster
        # from ~2,000 rows (the keys are distinct, so the permutation is the same)
        note = np.asarray(postings[NOTE_ORDER], dtype=np.int64)
        order = ((note * (int(ord_.max()) + 1) + ord_) * n_terms + term).argsort(kind="stable")
    elif _in_order(key, ord_, term):
        order = None  # the index read them sorted (`term_postings`: its sort runs on every core)
    else:
        order = np.lexsort((term, ord_, key))
    tf = np.asarray(postings["tf"], dtype=np.float64)
    length = np.asarray(postings["length"], dtype=np.float64)
    note_length = np.asarray(postings["note_length"], dtype=np.float64)
    if order is not None:
        term, key, ord_ = term[order], key[order], ord_[order]
        tf, length, note_length = tf[order], length[order], note_length[order]
    # A typical query has a few hundred rows, where each numpy call's fixed cost
    # outweighs its work: the runs below are found from two comparisons made once, array
    # methods are called rather than numpy's Python wrappers (`flatnonzero` is six calls), and the
    # float operations are exactly those of `rank_rows`' formulas (per-term factors are
    # gathered, not recomputed per row: the same products, so the same bits).
    new_note = key[1:] != key[:-1]
    note_start = np.concatenate(([True], new_note))  # a row that begins a note

    # Documents: df counts the rows of each term; a document's score sums its terms' parts.
    df = np.bincount(term, minlength=n_terms).astype(np.float64)
    part = (qw * idf(stats.documents, df, np.log))[term] * tf * (k1 + 1)
    part /= tf + k1 * (1 - b + b * length / (stats.avgdl or 1.0))
    doc = _starts(new_note | (ord_[1:] != ord_[:-1]))
    doc_score = np.add.reduceat(part, doc)
    doc_ord = ord_[doc]
    per_note = note_start[doc].nonzero()[0]  # where each note's documents begin

    # Whole notes: tf summed over the note's documents per term, df counts notes per term.
    # The rows are sorted by note already: re-sorting them by (note, term, ord) as one integer
    # (the note's run number, term, ord) is ~4x faster than a second three-key lexsort.
    run = note_start.cumsum()
    by_term = ((run * n_terms + term) * (int(ord_.max()) + 1) + ord_).argsort(kind="stable")
    t_key, t_term = key[by_term], term[by_term]
    t_new_note = t_key[1:] != t_key[:-1]
    pair = _starts(t_new_note | (t_term[1:] != t_term[:-1]))
    pair_tf = np.add.reduceat(tf[by_term], pair)
    pair_term, pair_length = t_term[pair], note_length[by_term][pair]
    ndf = np.bincount(pair_term, minlength=n_terms).astype(np.float64)
    whole_part = (qw * idf(stats.notes, ndf, np.log))[pair_term] * pair_tf * (k1 + 1)
    whole_part /= pair_tf + k1 * (1 - b + b * pair_length / (stats.avgnl or 1.0))
    note = np.concatenate(([True], t_new_note))[pair].nonzero()[0]  # a note's pairs
    whole = np.add.reduceat(whole_part, note)
    note_keys = t_key[pair[note]]

    # Per note (the documents' notes and the pairs' notes are the same, in the same order).
    section = np.maximum.reduceat(np.where(doc_ord > 0, doc_score, 0.0), per_note)
    title = np.add.reduceat(np.where(doc_ord == 0, doc_score, 0.0), per_note)
    total = section + title_weight * title + whole_weight * whole
    top = _top(note_keys, total, limit, excluded, only)

    # The best notes' documents, read in one gather (not two slices a note: numpy's fixed
    # cost per call is most of a small query's scoring).
    bounds = [*per_note.tolist(), len(doc)]
    top_list = top.tolist()
    ranges = [range(bounds[i], bounds[i + 1]) for i in top_list]
    rows = [j for r in ranges for j in r]
    ords, scores = doc_ord[rows].tolist(), doc_score[rows].tolist()
    scored = []
    start = 0
    for r, key_, score, best, title_score, whole_score in zip(
        ranges,
        note_keys[top].tolist(),
        total[top].tolist(),
        section[top].tolist(),
        title[top].tolist(),
        whole[top].tolist(),
        strict=True,
    ):
        end = start + len(r)
        kept = top_documents(zip(ords[start:end], scores[start:end], strict=True), best_documents)
        start = end
        scored.append(ScoredNote(key_, score, best, title_score, whole_score, kept))
    return scored


def _in_order(
    key: npt.NDArray[np.int64], ord_: npt.NDArray[np.int64], term: npt.NDArray[np.intp]
) -> bool:
    """Whether the rows are sorted by (note key, ord, term) already: three comparisons of
    neighbours (~1 ms for a million rows, against ~0.4 s for lexsort to sort them)."""
    if len(key) < 2:
        return True
    same_key = key[1:] == key[:-1]
    if not (same_key | (key[1:] > key[:-1])).all():
        return False
    same_doc = same_key & (ord_[1:] == ord_[:-1])
    if not (~same_key | same_doc | (ord_[1:] > ord_[:-1])).all():
        return False
    return bool((~same_doc | (term[1:] > term[:-1])).all())


def _top(
    note_keys: npt.NDArray[np.int64],
    total: npt.NDArray[np.float64],
    limit: int,
    excluded: frozenset[int],
    only: frozenset[int] | None,
) -> npt.NDArray[np.intp]:
    """Positions of the `limit` best notes (score descending, then note key), leaving out
    `excluded` and keeping `only` when given."""
    import numpy as np

    kept = None
    if excluded or only is not None:
        keep = np.ones(len(note_keys), dtype=bool)
        if excluded:
            keep &= ~np.isin(note_keys, np.fromiter(excluded, dtype=np.int64))
        if only is not None:
            keep &= np.isin(note_keys, np.fromiter(only, dtype=np.int64))
        kept = keep.nonzero()[0]
        note_keys, total = note_keys[kept], total[kept]
    if 0 < limit < len(total):
        # Sorting every matched note to keep ten cost more than the scoring: only those
        # scoring at least the limit-th best score can be among the best (ties included).
        floor = float(-np.partition(-total, limit - 1)[limit - 1])
        within = (total >= floor).nonzero()[0]
        best = within[np.lexsort((note_keys[within], -total[within]))[:limit]]
    else:
        best = np.lexsort((note_keys, -total))[:limit]
    return best if kept is None else kept[best]

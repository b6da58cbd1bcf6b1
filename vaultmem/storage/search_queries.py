"""The search SQL: the query terms' postings and the statistics BM25 needs, the ranked notes'
rows, fuzzy term lookup, phrase candidates and hit assembly reads.

Notes are ranked in `search/bm25.py` from the rows `term_postings` returns (numbers only); the
formulas are there. Everything is read at query time from `postings`, `documents`, `notes`
and `search_stats`, so a one-note edit touches only that note's rows and incremental equals
rebuild. Document frequencies are counted from the query terms' own postings, restricted to
the notes the filters keep: under `--folder`/`--scope`/`tag:`… the statistics are those of the
filtered collection, so a word common elsewhere but rare here keeps its weight. Without
filters, N and the average lengths come from `search_stats` (one row). Phrase candidates
(`document_scores`) are still scored in SQL, by the same document formula.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vaultmem.storage.store import Connection

WHOLE_NOTE = 1.0
TITLE_DOCUMENT = 0.0
"""Weight of the whole-note BM25 in a note's score (measured: benchmarks/bench_retrieval)."""

CJK_TITLE_DOCUMENT = 1.0
CJK_WHOLE_NOTE = 0.5
"""The same two weights for a query written in Chinese, Japanese or Korean (a term of Han,
kana or Hangul): chosen on the tune halves of the zh/ja/ko help sets (docs/search.md). A title
of two or three bigrams is a short document that says what the note is about; in English the
title document lost on the tune halves at every weight."""


@dataclass(frozen=True, slots=True)
class NoteFilter:
    """A SQL condition on the note (alias `n`) with its parameters; `true` keeps every note."""

    where: str = "true"
    params: dict[str, Any] | None = None

    @property
    def active(self) -> bool:
        return self.where != "true"


EVERY_NOTE = NoteFilter()


def scopes_where(scopes: Sequence[tuple[str, str | None]], params: dict[str, Any]) -> str:
    """A condition on the note (alias `n`) keeping the notes of any of `scopes` (scope, scope
    id or None for every id; at least one), its parameters added to `params`."""
    anyof: list[str] = []
    for i, (scope, scope_id) in enumerate(scopes):
        params[f"anyscope{i}"] = scope
        if scope_id is None:
            anyof.append(f"n.scope = $anyscope{i}")
        else:
            params[f"anyscope_id{i}"] = scope_id
            anyof.append(f"(n.scope = $anyscope{i} AND n.scope_id = $anyscope_id{i})")
    return "(" + " OR ".join(anyof) + ")"


def scopes_filter(scopes: Sequence[tuple[str, str | None]]) -> NoteFilter:
    """The notes of any of `scopes` (`scopes_where`); none given: every note."""
    params: dict[str, Any] = {}
    return NoteFilter(scopes_where(scopes, params), params) if scopes else EVERY_NOTE


_STATS_ALL = """st AS (SELECT documents::DOUBLE AS n,
                   total_length::DOUBLE / greatest(documents, 1) AS avgdl,
                   notes::DOUBLE AS nn,
                   total_length::DOUBLE / greatest(notes, 1) AS avgnl
            FROM search_stats)"""
_STATS_KEPT = """st AS (SELECT count(*)::DOUBLE AS n,
                   coalesce(sum(d.length), 0)::DOUBLE / greatest(count(*), 1) AS avgdl,
                   count(DISTINCT d.note_id)::DOUBLE AS nn,
                   coalesce(sum(d.length), 0)::DOUBLE
                       / greatest(count(DISTINCT d.note_id), 1) AS avgnl
            FROM documents d SEMI JOIN kept_notes k ON k.id = d.note_id)"""

# Every document of the kept notes matching a query term, scored. Only the query terms'
# postings are read: each row carries its field-weighted tf and both lengths. The literal
# `term IN (...)` list lets DuckDB skip the row groups of other terms (postings are sorted).
# Grouping is on the integer note key; string ids are fetched for the final rows only.
_SCORED = """
WITH {kept_notes}{stats},
q AS (SELECT unnest($terms::VARCHAR[]) AS term, unnest($weights::DOUBLE[]) AS qw),
p AS (SELECT p.term, p.note_key, p.ord, p.tf, p.length, p.note_length
      FROM postings p {semi} WHERE p.term IN ({terms})),
nt AS (SELECT note_key, term, sum(tf) AS tf, any_value(note_length) AS note_length
       FROM p GROUP BY note_key, term),
ddf AS (SELECT term, count(*)::DOUBLE AS df FROM p GROUP BY term),
ndf AS (SELECT term, count(*)::DOUBLE AS ndf FROM nt GROUP BY term),
w AS (SELECT q.term, q.qw,
             ln(1 + (st.n - ddf.df + 0.5) / (ddf.df + 0.5)) AS idf,
             ln(1 + (st.nn - ndf.ndf + 0.5) / (ndf.ndf + 0.5)) AS nidf
      FROM q JOIN ddf USING (term) JOIN ndf USING (term), st),
docs AS (
    SELECT p.note_key, p.ord,
           sum(w.qw * w.idf * p.tf * ($k1 + 1)
               / (p.tf + $k1 * (1 - $b + $b * p.length / st.avgdl))) AS score{doc_extra}
    FROM p JOIN w USING (term), st
    GROUP BY p.note_key, p.ord
)
"""

_DOCUMENTS_SQL = (
    _SCORED
    + """SELECT n.id AS note_id, d.ord, d.score FROM docs d JOIN notes n USING (note_key)
WHERE d.needed = len($needed::VARCHAR[])
ORDER BY d.score DESC, note_id, d.ord"""
)
_DOCUMENTS_EXTRA = """,
           count(*) FILTER (WHERE list_contains($needed::VARCHAR[], p.term)) AS needed"""

NoteRow = tuple[str, str, str, str, str | None]
"""id, path, title, scope, scope_id."""


@dataclass(frozen=True, slots=True)
class RankedNote:
    """A note's score with its parts, and its best documents as (ord, score), best first."""

    note_id: str
    score: float
    section: float
    title: float
    whole: float
    documents: list[tuple[int, float]]
    note: NoteRow


def _sql(template: str, notes: NoteFilter, n_terms: int, post: str = "", extra: str = "") -> str:
    parts = {
        "terms": ", ".join(f"$t{i}" for i in range(n_terms)),
        "post": post,
        "doc_extra": extra,
        "kept_notes": "",
        "stats": _STATS_ALL,
        "semi": "",
    }
    if notes.active:
        parts["kept_notes"] = (
            f"kept_notes AS (SELECT n.id, n.note_key FROM notes n WHERE {notes.where}), "
        )
        parts["stats"] = _STATS_KEPT
        parts["semi"] = "SEMI JOIN kept_notes k ON k.note_key = p.note_key"
    return template.format(**parts)


def _bound(
    terms: list[str], weights: list[float] | None, k1: float, b: float, notes: NoteFilter
) -> dict[str, Any]:
    return {
        **{f"t{i}": term for i, term in enumerate(terms)},
        "terms": terms,
        "weights": weights or [1.0] * len(terms),
        "k1": k1,
        "b": b,
        **(notes.params or {}),
    }


def document_scores(
    con: Connection,
    terms: list[str],
    *,
    k1: float,
    b: float,
    notes: NoteFilter = NoteFilter(),
    weights: list[float] | None = None,
    needed: tuple[str, ...] = (),
) -> list[tuple[str, int, float]]:
    """(note_id, ord, bm25) of every document of the kept notes matching any term, best first;
    `needed` terms must all occur in a returned document."""
    bound = {**_bound(terms, weights, k1, b, notes), "needed": list(needed)}
    sql = _sql(_DOCUMENTS_SQL, notes, len(terms), extra=_DOCUMENTS_EXTRA)
    rows = con.execute(sql, bound).fetchall()
    return [(r[0], int(r[1]), float(r[2])) for r in rows]


def collection_stats(
    con: Connection, notes: NoteFilter = NoteFilter()
) -> tuple[float, float, float, float]:
    """(documents, mean document length, notes, mean note length) of the notes the filter
    keeps: one row of `search_stats` without a filter, counted from `documents` with one."""
    if notes.active:
        sql = f"WITH kept_notes AS (SELECT n.id FROM notes n WHERE {notes.where}), {_STATS_KEPT}"
    else:
        sql = f"WITH {_STATS_ALL}"
    row = con.execute(sql + " SELECT n, avgdl, nn, avgnl FROM st", notes.params or {}).fetchone()
    if row is None:
        return 0.0, 0.0, 0.0, 0.0
    return float(row[0]), float(row[1]), float(row[2]), float(row[3])


def term_postings(
    con: Connection, terms: list[str], notes: NoteFilter = NoteFilter(), *, columns_from: int
) -> list[tuple[Any, ...]] | dict[str, Any]:
    """The postings of `terms` in the kept notes: `term` (its index in `terms`), `note_key`,
    `ord`, `tf`, `length`, `note_length` (`search.bm25.POSTING_COLUMNS`). Fewer than
    `columns_from` rows come as a list of tuples; more as numpy columns (a dict of arrays),
    so numpy is imported only for queries that read many rows.

    Only these rows are read: the literal `term IN (...)` list lets DuckDB skip every row
    group of other terms (a fresh index writes postings sorted by term). No string comes
    back (turning note ids into Python strings cost more than the scan); `note_rows` reads
    the few notes that rank by their key. The rows come sorted by (note key, ord, term), the
    order the scorer needs: DuckDB sorts on every core, where numpy's lexsort ran on one (a
    long prompt's 1.35M rows at 100,000 notes: ~0.19 s more for the read, ~0.4 s less
    scoring).
    """
    params: dict[str, Any] = {f"t{i}": term for i, term in enumerate(terms)}
    params.update(notes.params or {})
    case = " ".join(f"WHEN $t{i} THEN {i}" for i in range(len(terms)))
    kept = ""
    if notes.active:
        kept = (
            f"SEMI JOIN (SELECT n.note_key FROM notes n WHERE {notes.where}) k "
            "ON k.note_key = p.note_key "
        )
    sql = (
        f"SELECT (CASE p.term {case} END)::INTEGER AS term, p.note_key, p.ord, p.tf, p.length, "
        f"p.note_length FROM postings p {kept}"
        f"WHERE p.term IN ({', '.join(f'$t{i}' for i in range(len(terms)))}) "
        "ORDER BY 2, 3, 1"
    )
    cursor = con.execute(sql, params)
    head = cursor.fetchmany(columns_from)
    if len(head) < columns_from:
        return head
    import numpy as np  # only here: a cold CLI's typical query never needs it

    rest = cursor.fetchnumpy()
    names = [d[0] for d in cursor.description or ()]
    return {
        name: np.concatenate([np.array([r[i] for r in head], dtype=rest[name].dtype), rest[name]])
        for i, name in enumerate(names)
    }


def keys_with_terms(con: Connection, terms: tuple[str, ...]) -> frozenset[int]:
    """Note keys of the notes holding any of `terms` (a query's -exclusions)."""
    if not terms:
        return frozenset()
    rows = con.execute(
        f"SELECT DISTINCT note_key FROM postings WHERE term IN ({', '.join('?' * len(terms))})",
        list(terms),
    ).fetchall()
    return frozenset(int(r[0]) for r in rows)


def note_rows(con: Connection, keys: list[int]) -> dict[int, NoteRow]:
    """note key → (id, path, title, scope, scope_id) of these notes (one scan of a BIGINT
    column: `notes` holds each note's key, so the ranked notes need no string lookup)."""
    if not keys:
        return {}
    marks = ", ".join(str(int(k)) for k in keys)
    rows = con.execute(
        f"SELECT note_key, id, path, title, scope, scope_id FROM notes WHERE note_key IN ({marks})"
    ).fetchall()
    return {int(r[0]): (r[1], r[2], r[3], r[4], r[5]) for r in rows}


def index_language(con: Connection) -> str:
    """The stemmer language the index was built with (`meta.tokenizer_version` = `N-language`)."""
    row = con.execute("SELECT value FROM meta WHERE key = 'tokenizer_version'").fetchone()
    version = str(row[0]) if row else ""
    return version.partition("-")[2] or "english"


def known_terms(con: Connection, terms: list[str]) -> dict[str, int]:
    """df of those of `terms` the index holds."""
    if not terms:
        return {}
    marks = ", ".join("?" * len(terms))
    rows = con.execute(f"SELECT term, df FROM terms WHERE term IN ({marks})", terms).fetchall()
    return {r[0]: int(r[1]) for r in rows}


COMPOUND_LIMIT = 40
"""Most compounds a query's words are asked as: the most frequent ones."""


def compounds_ending_with(con: Connection, words: list[str], longer_by: int) -> list[str]:
    """Index terms of letters alone that end with one of `words` and are at least
    `longer_by` letters longer: the compounds whose last word it is (`search/compounds.py`),
    the COMPOUND_LIMIT most frequent."""
    if not words:
        return []
    rows = con.execute(
        "SELECT t.term FROM terms t JOIN (SELECT unnest($1::VARCHAR[]) AS w) q "
        "ON suffix(t.term, q.w) AND length(t.term) >= length(q.w) + $2 "
        "WHERE regexp_full_match(t.term, '\\pL+') "
        "ORDER BY t.df DESC, t.term LIMIT $3",
        [words, longer_by, COMPOUND_LIMIT],
    ).fetchall()
    return [r[0] for r in rows]


def nearest_terms(con: Connection, term: str, max_distance: int, limit: int) -> list[str]:
    """Index terms within `max_distance` edits (Damerau–Levenshtein) of `term`: closest first,
    then the most frequent.

    The distance is computed only for terms that can be that close (`near_pieces`): of the
    123,000 terms of a 100,000-note vault ~440 for a median word (of ~69,000 of a near
    length), where computing it for every term of a near length took ~0.11-0.15 s, for each
    query word the index lacks (a hook's prompt holds several). The candidates are
    materialised first: combined with the filter in one WHERE, DuckDB computed the distance
    for most rows anyway."""
    pieces = near_pieces(term, max_distance)
    near = " OR ".join(
        f"contains(substr(term, $at{i}, $span{i}), $piece{i})" for i in range(len(pieces))
    )
    params: dict[str, object] = {
        "term": term,
        "lo": len(term) - max_distance,
        "hi": len(term) + max_distance,
        "d": max_distance,
        "limit": limit,
    }
    for i, (piece, at, span) in enumerate(pieces):
        params.update({f"piece{i}": piece, f"at{i}": at, f"span{i}": span})
    rows = con.execute(
        "WITH near AS MATERIALIZED (SELECT term, df FROM terms "
        f"WHERE length(term) BETWEEN $lo AND $hi AND ({near or 'true'})) "
        "SELECT term FROM near WHERE damerau_levenshtein(term, $term) <= $d "
        "ORDER BY damerau_levenshtein(term, $term), df DESC, term LIMIT $limit",
        params,
    ).fetchall()
    return [r[0] for r in rows]


def near_pieces(term: str, max_distance: int) -> list[tuple[str, int, int]]:
    """What a term within `max_distance` edits of `term` must hold: `term` cut into
    2·d + 1 pieces, each as (piece, 1-based first position, characters) of the stretch of a
    candidate where it would be found. An insertion, a deletion or a substitution breaks at
    most one piece, a transposition of two neighbours at most two, so one piece at least
    comes through whole; and it moves by at most one position per insertion or deletion, so
    it lies within `max_distance` characters of where it was. Empty: no piece (too short a
    term), every term a candidate."""
    count = 2 * max_distance + 1
    size, extra = divmod(len(term), count)
    out: list[tuple[str, int, int]] = []
    start = 0
    for i in range(count):
        length = size + (1 if i < extra else 0)
        if length == 0:
            return []  # a piece of nothing is in every term: no filter at all
        out.append(
            (
                term[start : start + length],
                max(1, start + 1 - max_distance),
                length + 2 * max_distance,
            )
        )
        start += length
    return out


Section = tuple[str | None, int, str]
"""A section's heading, first line and text."""


def note_sections(con: Connection, note_ids: list[str]) -> dict[str, dict[int, Section]]:
    """Heading, line and text of every section (ord > 0) of these notes.

    The WHERE clause holds only the note-id IN-list: any further condition (even `ord > 0`)
    makes DuckDB scan every document's text instead of using the ART index (26 ms vs 4.5 ms
    at 10,000 notes), so the note-level documents are dropped here.
    """
    rows = con.execute(
        "SELECT note_id, ord, heading, line, text FROM documents "
        f"WHERE note_id IN ({', '.join('?' * len(note_ids))})",
        note_ids,
    ).fetchall()
    out: dict[str, dict[int, Section]] = {}
    for note_id, ord_, heading, line, text in rows:
        if ord_ > 0:
            out.setdefault(note_id, {})[ord_] = (heading, line, text)
    return out


def document_texts(
    con: Connection, keys: list[tuple[str, int]]
) -> dict[tuple[str, int], tuple[str, str]]:
    """Heading and text of documents, for phrase checks."""
    rows = con.execute(
        "SELECT d.note_id, d.ord, coalesce(d.heading, ''), d.text FROM documents d "
        "JOIN (SELECT unnest($1::VARCHAR[]) AS note_id, unnest($2::INTEGER[]) AS ord) k "
        "USING (note_id, ord)",
        [[k[0] for k in keys], [k[1] for k in keys]],
    ).fetchall()
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def kept_note_keys(con: Connection, notes: NoteFilter) -> list[int]:
    """The keys of the notes a filter keeps (the resident index's filters: one read)."""
    rows = con.execute(f"SELECT n.note_key FROM notes n WHERE {notes.where}", notes.params or {})
    return [int(r[0]) for r in rows.fetchall()]


def resident_tables(con: Connection, max_postings: int) -> dict[str, Any] | None:
    """Everything `search/resident.py` holds, read in one go, or None when the index holds
    more than `max_postings` postings (the resident index would be too large: SQL serves).

    `notes`: (note_key, id, path, title, scope, scope_id) by key; `terms`: the postings'
    distinct terms, sorted; `postings`: numpy columns `term` (its index in `terms`),
    `note_key`, `ord`, `tf`, `length`, `note_length`;
    `documents`: (note_key, ord, heading, line, length, text); `stats`: `collection_stats`.
    Postings come in scan order (an ORDER BY over all of them cost twice the read): the
    caller sorts them by term.
    """
    row = con.execute("SELECT count(*) FROM postings").fetchone()
    if row is None or int(row[0]) > max_postings:
        return None
    notes = con.execute(
        "SELECT note_key, id, path, title, scope, scope_id FROM notes ORDER BY note_key"
    ).fetchall()
    terms = [
        r[0] for r in con.execute("SELECT DISTINCT term FROM postings ORDER BY term").fetchall()
    ]
    postings = con.execute(
        "WITH t AS (SELECT unnest($1::VARCHAR[]) AS term, "
        "generate_subscripts($1::VARCHAR[], 1) - 1 AS tid) "
        "SELECT t.tid::INTEGER AS term, p.note_key, p.ord, p.tf, p.length, p.note_length "
        "FROM postings p JOIN t USING (term)",
        [terms],
    ).fetchnumpy()
    documents = con.execute(
        "SELECT n.note_key, d.ord, d.heading, d.line, d.length, d.text "
        "FROM documents d JOIN notes n ON n.id = d.note_id"
    ).fetchall()
    return {
        "notes": notes,
        "terms": terms,
        "postings": postings,
        "documents": documents,
        "stats": collection_stats(con),
    }

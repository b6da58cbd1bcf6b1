"""BM25 search over the index's own tables, with Obsidian-like query operators.

Scoring happens in one SQL statement at query time from `postings`, `documents`, `terms` and
`search_stats`: storing tf and lengths (not precomputed weights) means a one-note edit touches
only that note's rows and the frequencies of its terms, and incremental equals rebuild.

    score(d) = Σ_t idf(t) · tf'(t,d)·(k1+1) / (tf'(t,d) + k1·(1 − b + b·|d|/avgdl))
    idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    tf'(t,d) = Σ_field weight(field) · tf(t, field, d)

A note's score is its best document's; the hit shows that document's heading and a snippet.
Words are OR-ed (ranking, not filtering), so natural-language questions work; `"phrases"`,
`-exclusions`, `tag:`, `path:`, `type:` filter.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vaultmem.db.store import Connection
from vaultmem.documents import FIELD_WEIGHTS
from vaultmem.errors import QueryError
from vaultmem.text import query_terms, tokenize, word_spans

SNIPPET_CHARS = 240


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query string taken apart: scored terms, phrases, exclusions and operator filters."""

    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Filters from command-line options; they AND with the query's own operators."""

    scope: str | None = None
    scope_id: str | None = None
    type: str | None = None
    tag: str | None = None
    folder: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One note in the results, with its best-matching section."""

    note_id: str
    path: str
    title: str
    scope: str
    scope_id: str | None
    heading: str | None
    line: int
    score: float
    snippet: str
    sections: tuple[dict[str, Any], ...] = field(default=())


_OPERATOR = re.compile(r"^(tag|path|type):(.+)$", re.I)


def parse_query(text: str) -> ParsedQuery:
    """Split a query into words, "phrases", -exclusions and tag:/path:/type: operators."""
    try:
        parts = shlex.split(text, posix=True)
    except ValueError:  # an unbalanced quote: treat the quote as an ordinary character
        parts = text.replace('"', " ").split()
    quoted = set(re.findall(r'"([^"]+)"', text))
    terms: list[str] = []
    phrases: list[tuple[str, ...]] = []
    excluded: list[str] = []
    tags: list[str] = []
    paths: list[str] = []
    types: list[str] = []
    for part in parts:
        negative = part.startswith("-") and len(part) > 1
        body = part[1:] if negative else part
        operator = _OPERATOR.match(body)
        if operator and not negative:
            kind, value = operator[1].lower(), operator[2]
            if kind == "tag":
                tags.append(value.lstrip("#").casefold())
            elif kind == "path":
                paths.append(value.strip("/").casefold())
            else:
                types.append(value.casefold())
            continue
        words = tokenize(body)
        if negative:
            excluded.extend(words)
        elif body in quoted and len(words) > 1:
            phrases.append(tuple(words))
            terms.extend(words)
        else:
            terms.extend(words)
    return ParsedQuery(
        tuple(dict.fromkeys(terms)),
        tuple(phrases),
        tuple(dict.fromkeys(excluded)),
        tuple(tags),
        tuple(paths),
        tuple(types),
    )


_WEIGHT_CASE = "CASE p.field " + " ".join(
    f"WHEN '{name}' THEN {weight}" for name, weight in FIELD_WEIGHTS.items()
) + " ELSE 1.0 END"

_SCORE_SQL = f"""
WITH q AS (SELECT unnest($terms::VARCHAR[]) AS term),
st AS (SELECT documents::DOUBLE AS n,
              total_length::DOUBLE / greatest(documents, 1) AS avgdl FROM search_stats),
idf AS (SELECT t.term, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf
        FROM terms t, st WHERE t.term IN (SELECT term FROM q)),
tfw AS (SELECT p.note_id, p.ord, p.term, sum(p.tf * {_WEIGHT_CASE}) AS tf
        FROM postings p WHERE p.term IN (SELECT term FROM q) GROUP BY ALL),
scored AS (
    SELECT tfw.note_id, tfw.ord,
           sum(idf.idf * tfw.tf * ($k1 + 1)
               / (tfw.tf + $k1 * (1 - $b + $b * d.length / st.avgdl))) AS score,
           list(tfw.term) AS matched
    FROM tfw JOIN idf USING (term)
    JOIN documents d ON d.note_id = tfw.note_id AND d.ord = tfw.ord, st
    GROUP BY tfw.note_id, tfw.ord
)
SELECT s.note_id, s.ord, s.score, s.matched
FROM scored s JOIN notes n ON n.id = s.note_id
WHERE {{filters}}
ORDER BY s.score DESC, n.path, s.ord
"""


def document_scores(
    con: Connection, terms: list[str], *, k1: float, b: float, where: str = "true",
    params: dict[str, Any] | None = None,
) -> list[tuple[str, int, float, list[str]]]:
    """(note_id, ord, score, matched terms) for every document matching any term."""
    sql = _SCORE_SQL.format(filters=where)
    return [
        (r[0], r[1], float(r[2]), list(r[3]))
        for r in con.execute(sql, {"terms": terms, "k1": k1, "b": b, **(params or {})}).fetchall()
    ]


def _filters(query: ParsedQuery, filters: SearchFilters) -> tuple[str, dict[str, Any]]:
    clauses = ["true"]
    params: dict[str, Any] = {}
    if filters.scope:
        clauses.append("n.scope = $scope")
        params["scope"] = filters.scope
    if filters.scope_id:
        clauses.append("n.scope_id = $scope_id")
        params["scope_id"] = filters.scope_id
    types = [*query.types, *([filters.type.casefold()] if filters.type else [])]
    for i, value in enumerate(types):
        clauses.append(f"lower(n.type) = $type{i}")
        params[f"type{i}"] = value
    tags = [*query.tags, *([filters.tag.lstrip("#").casefold()] if filters.tag else [])]
    for i, value in enumerate(tags):
        clauses.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.note_id = n.id AND t.tag = $tag{i})")
        params[f"tag{i}"] = value
    folders = [*query.paths, *([filters.folder.strip("/").casefold()] if filters.folder else [])]
    for i, value in enumerate(folders):
        clauses.append(f"starts_with(lower(n.path), $path{i})")
        params[f"path{i}"] = value
    updated = "coalesce(try_cast(n.updated AS TIMESTAMP), make_timestamp(n.mtime_ns // 1000))"
    if filters.since:
        clauses.append(f"{updated} >= $since")
        params["since"] = filters.since.replace(tzinfo=None)
    if filters.until:
        clauses.append(f"{updated} < $until")
        params["until"] = filters.until.replace(tzinfo=None)
    if query.excluded:
        clauses.append(
            "NOT EXISTS (SELECT 1 FROM postings x WHERE x.note_id = n.id "
            "AND x.term IN (SELECT unnest($excluded::VARCHAR[])))"
        )
        params["excluded"] = list(query.excluded)
    return " AND ".join(clauses), params


def search(
    con: Connection,
    text: str,
    filters: SearchFilters = SearchFilters(),
    *,
    limit: int = 10,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[SearchHit]:
    """Run a query; results grouped by note, best first."""
    query = parse_query(text)
    if not query.terms:
        raise QueryError(
            f"The query {text!r} has no searchable words (empty, or only stop words).",
            hint='Add a distinctive word, e.g. vaultmem search "duckdb lock".',
        )
    where, params = _filters(query, filters)
    rows = document_scores(con, list(query.terms), k1=k1, b=b, where=where, params=params)
    best: dict[str, list[tuple[int, float, list[str]]]] = {}
    for note_id, ord_, score, matched in rows:
        best.setdefault(note_id, []).append((ord_, score, matched))
    if query.phrases:
        best = _with_phrases(con, best, query.phrases)
    ranked = sorted(best.items(), key=lambda item: -item[1][0][1])[:limit]
    return _hits(con, ranked, query)


def _with_phrases(
    con: Connection,
    best: dict[str, list[tuple[int, float, list[str]]]],
    phrases: tuple[tuple[str, ...], ...],
) -> dict[str, list[tuple[int, float, list[str]]]]:
    """Keep only documents whose text holds every phrase as consecutive terms."""
    needed = {t for phrase in phrases for t in phrase}
    candidates = [
        (note_id, ord_) for note_id, docs in best.items() for ord_, _, m in docs
        if needed <= set(m)
    ]
    if not candidates:
        return {}
    texts = _texts(con, candidates)
    kept: dict[str, list[tuple[int, float, list[str]]]] = {}
    for note_id, docs in best.items():
        for ord_, score, matched in docs:
            text = texts.get((note_id, ord_))
            if text is not None and all(_has_phrase(tokenize(text), p) for p in phrases):
                kept.setdefault(note_id, []).append((ord_, score, matched))
    return kept


def _has_phrase(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(tokens[i : i + n]) == phrase for i in range(len(tokens) - n + 1))


def _texts(con: Connection, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    rows = con.execute(
        "SELECT d.note_id, d.ord, d.text FROM documents d JOIN (SELECT unnest($1::VARCHAR[]) AS "
        "note_id, unnest($2::INTEGER[]) AS ord) k USING (note_id, ord)",
        [[k[0] for k in keys], [k[1] for k in keys]],
    ).fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def _hits(
    con: Connection,
    ranked: list[tuple[str, list[tuple[int, float, list[str]]]]],
    query: ParsedQuery,
) -> list[SearchHit]:
    if not ranked:
        return []
    note_ids = [note_id for note_id, _ in ranked]
    notes = {
        r[0]: r
        for r in con.execute(
            "SELECT id, path, title, scope, scope_id FROM notes "
            "WHERE id IN (SELECT unnest($1::VARCHAR[]))",
            [note_ids],
        ).fetchall()
    }
    # The snippet comes from the best section; a title-only match shows the first section.
    shown: list[tuple[str, int]] = []
    for note_id, docs in ranked:
        sections = [d for d in docs if d[0] > 0]
        shown.append((note_id, sections[0][0] if sections else 1))
    details = {
        (r[0], r[1]): r
        for r in con.execute(
            "SELECT d.note_id, d.ord, d.heading, d.line, d.text FROM documents d JOIN (SELECT "
            "unnest($1::VARCHAR[]) AS note_id, unnest($2::INTEGER[]) AS ord) k USING (note_id, ord)",
            [[s[0] for s in shown], [s[1] for s in shown]],
        ).fetchall()
    }
    wanted = set(query.terms)
    hits = []
    for (note_id, docs), key in zip(ranked, shown, strict=True):
        _, path, title, scope, scope_id = notes[note_id]
        detail = details.get(key)
        heading, line, text = (detail[2], detail[3], detail[4]) if detail else (None, 1, "")
        hits.append(
            SearchHit(
                note_id=note_id,
                path=path,
                title=title,
                scope=scope,
                scope_id=scope_id,
                heading=heading,
                line=line,
                score=round(docs[0][1], 6),
                snippet=snippet(text, wanted),
                sections=tuple({"ord": o, "score": round(s, 6)} for o, s, _ in docs[:5]),
            )
        )
    return hits


def snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS) -> str:
    """The densest window of `text` around matched words, each marked `**like this**`."""
    spans = [(start, end) for start, end, term in word_spans(text) if term in terms]
    flat = " ".join(text.split())
    if not spans:
        return _clip(flat, 0, width)
    best_start, best_count = spans[0][0], 0
    for i, (start, _) in enumerate(spans):
        count = sum(1 for s, _ in spans[i:] if s < start + width)
        if count > best_count:
            best_start, best_count = start, count
    window_start = max(0, best_start - width // 4)
    window_start = text.rfind(" ", 0, window_start) + 1 if window_start else 0
    window_end = min(len(text), window_start + width)
    out, cursor = [], window_start
    for start, end in spans:
        if start < max(window_start, cursor) or end > window_end:
            continue  # outside the window, or a part of an identifier already marked whole
        out += [text[cursor:start], "**", text[start:end], "**"]
        cursor = end
    out.append(text[cursor:window_end])
    body = " ".join("".join(out).split())
    return ("… " if window_start > 0 else "") + body + (" …" if window_end < len(text) else "")


def _clip(text: str, start: int, width: int) -> str:
    if len(text) <= width:
        return text
    cut = text.rfind(" ", start, start + width)
    return text[start : cut if cut > start else start + width] + " …"


def stats_terms(text: str) -> list[str]:
    """The distinct terms a query string scores with (for `--explain` and tests)."""
    return query_terms(text)

"""Recall: what an agent gets back when it asks its memory a question.

Recall ranks the notes of the requested scopes (agent topics and people's notes alike) five
ways. `metadata` matches a note whose key, title, alias or tag equals a word of the question
(or a run of its words: "release process" finds the key `release-process`); `words`, `vectors`
and `hybrid` are the modes of `vaultmem search` (BM25, semantic vectors, both fused; the last two
need semantic recall on, docs/search.md); `metadata-first`, the default, puts the metadata
matches first and lets BM25 fill the slots left. The selected notes are then ordered by the
requested sort:

    score    = 0.60 · relevance + 0.25 · recency + 0.15 · usage      (each part in 0..1)
    relevance: the search score divided by the best of this recall; a metadata match counts at
               least 1.0 (key or title), 0.9 (alias) or 0.7 (tag). In `metadata-first` they
               stay ahead of the BM25 fill whatever their blended score.
    recency  = 0.5 ** (days since `updated` / 30)                     (a 30-day half-life)
    usage    = min(1, ln(1 + recalls) / ln(1 + 20))                   (saturates at 20 recalls)
    recency  sort: newest `updated` first;   usage sort: most recalled first, then score.

Expired topics (retention by `updated`: session 14 days, project 90 days; the types user and
feedback never expire; people's notes never expire) and forgotten ones (in `.trash/`) are never
returned. Related notes (typed links and the `## See Also` links that accepted edges render) of
the direct hits are appended one level deep, at most `RELATED_PER_HIT` per hit and
`RELATED_TOTAL` in all, marked `related`. Each hit says whether the index entry is `fresh`: the
file's size and mtime still equal what the index recorded (one `stat` per hit).

Counting recalls is the caller's job (the facade records each returned id in the usage log);
this module only reads the counts it is given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from vaultmem.errors import ConfigError, QueryError
from vaultmem.memory import topics
from vaultmem.memory.secrets import SecretPattern, redact
from vaultmem.models import SCOPES
from vaultmem.search import vectors
from vaultmem.search.query import SNIPPET_CHARS, SearchFilters
from vaultmem.search.tokenizer import is_stopword
from vaultmem.storage.store import Connection

Mode = Literal["metadata-first", "metadata", "words", "vectors", "hybrid"]
Sort = Literal["score", "recency", "usage"]
MODES: tuple[Mode, ...] = ("metadata-first", "metadata", "words", "vectors", "hybrid")
Matched = Literal["metadata", "bm25", "vectors", "hybrid", "related"]
"""Why a hit is there: its metadata, the search of its mode (`bm25` for words) or a link."""
SORTS: tuple[Sort, ...] = ("score", "recency", "usage")

WEIGHT_RELEVANCE = 0.60
WEIGHT_RECENCY = 0.25
WEIGHT_USAGE = 0.15
RECENCY_HALF_LIFE_DAYS = 30.0
USAGE_SATURATION = 20
METADATA_STRENGTH = {"key": 1.0, "title": 1.0, "alias": 0.9, "tag": 0.7}

RELATED_PER_HIT = 2
RELATED_TOTAL = 5
TRASH_FOLDER = ".trash"
_MAX_NGRAM = 6


@dataclass(frozen=True, slots=True)
class ScopeSpec:
    """One scope to read: `project` (every project) or `project:atlas` (one scope id)."""

    scope: str
    scope_id: str | None = None

    def matches(self, scope: str, scope_id: str | None) -> bool:
        return scope == self.scope and (self.scope_id is None or self.scope_id == scope_id)

    def __str__(self) -> str:
        return self.scope + (f":{self.scope_id}" if self.scope_id else "")


def parse_scopes(texts: Iterable[str]) -> tuple[ScopeSpec, ...]:
    """`["session", "project:atlas"]` (or one comma-separated string each) as scope specs."""
    specs: list[ScopeSpec] = []
    for text in texts:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            scope, _, scope_id = part.partition(":")
            if scope not in SCOPES:
                raise ConfigError(
                    f"Unknown scope {scope!r} in {part!r}.",
                    hint=f"Use one of {', '.join(SCOPES)}, optionally with :SCOPE_ID.",
                )
            spec = ScopeSpec(scope, scope_id or None)
            if spec not in specs:
                specs.append(spec)
    return tuple(specs)


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled note. `key` is a topic's key (a person's note: its file name)."""

    id: str
    key: str
    scope: str
    scope_id: str | None
    path: str
    title: str
    type: str | None
    managed: bool
    snippet: str
    score: float
    updated: str | None
    fresh: bool
    related: bool
    matched: Matched
    related_to: str | None = None


@dataclass(frozen=True, slots=True)
class NoteInfo:
    """The index row fields recall and context need about one note."""

    id: str
    key: str
    path: str
    title: str
    scope: str
    scope_id: str | None
    type: str | None
    managed: bool
    updated: str | None
    updated_at: datetime
    size: int
    mtime_ns: int


_INFO_SQL = """
SELECT id, coalesce(frontmatter->>'key', regexp_extract(path, '([^/]*)\\.md$', 1)) AS key,
       path, title, scope, scope_id, type, managed, updated, size, mtime_ns
FROM notes
"""


def _info(row: Sequence[Any]) -> NoteInfo:
    id_, key, path, title, scope, scope_id, type_, managed, updated, size, mtime_ns = row
    return NoteInfo(
        id_,
        key or title,
        path,
        title,
        scope,
        scope_id,
        type_,
        bool(managed),
        updated,
        updated_time(updated, mtime_ns),
        int(size),
        int(mtime_ns),
    )


def note_infos(con: Connection, ids: Iterable[str]) -> dict[str, NoteInfo]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    rows = con.execute(_INFO_SQL + "WHERE id IN (SELECT unnest($1::VARCHAR[]))", [wanted])
    return {r[0]: _info(r) for r in rows.fetchall()}


def scope_infos(con: Connection, scopes: Sequence[ScopeSpec]) -> list[NoteInfo]:
    """Every note of the given scopes (all scopes when empty), in path order."""
    rows = [_info(r) for r in con.execute(_INFO_SQL + "ORDER BY path").fetchall()]
    return [r for r in rows if in_scopes(r, scopes)]


def in_scopes(info: NoteInfo, scopes: Sequence[ScopeSpec]) -> bool:
    return not scopes or any(s.matches(info.scope, info.scope_id) for s in scopes)


def updated_time(updated: str | None, mtime_ns: int) -> datetime:
    """`updated` as an aware UTC time; the file's mtime when absent or unreadable."""
    if updated:
        try:
            parsed = datetime.fromisoformat(updated.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)


def is_expired(info: NoteInfo, now: datetime) -> bool:
    """True for a topic past its scope's retention (`topics.is_expired`, the rule `prune`
    applies). People's notes never expire."""
    row = {"scope": info.scope, "type": info.type, "updated": info.updated, "managed": info.managed}
    return topics.is_expired(row, now)


def is_forgotten(info: NoteInfo, managed_folder: str) -> bool:
    """A topic moved to the managed folder's `.trash/` (an index built before it was skipped)."""
    return info.path.startswith(f"{managed_folder}/{TRASH_FOLDER}/")


def recallable(info: NoteInfo, now: datetime, managed_folder: str) -> bool:
    return not is_expired(info, now) and not is_forgotten(info, managed_folder)


def is_fresh(root: Path, info: NoteInfo) -> bool:
    """The file still has the size and mtime the index recorded (one stat)."""
    try:
        st = (root / info.path).stat()
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (info.size, info.mtime_ns)


def recency(info: NoteInfo, now: datetime) -> float:
    days = max(0.0, (now - info.updated_at).total_seconds() / 86400)
    return float(0.5 ** (days / RECENCY_HALF_LIFE_DAYS))


def usage_weight(count: int) -> float:
    return min(1.0, math.log1p(max(count, 0)) / math.log1p(USAGE_SATURATION))


def blended(relevance: float, info: NoteInfo, now: datetime, count: int) -> float:
    return (
        WEIGHT_RELEVANCE * relevance
        + WEIGHT_RECENCY * recency(info, now)
        + WEIGHT_USAGE * usage_weight(count)
    )


_WORD = re.compile(r"[^\W_]+(?:[-_'][^\W_]+)*", re.UNICODE)
_OPERATOR = re.compile(r"^-?(tag|path|type):", re.I)


def metadata_candidates(query: str) -> list[str]:
    """Lower-cased words of the question (stop words dropped) and runs of them joined by a
    hyphen or a space, so that both `release-process` and `Release process` match."""
    words = [
        w.casefold()
        for part in query.split()
        if not _OPERATOR.match(part)
        for w in _WORD.findall(part)
    ]
    out = {w for w in words if not is_stopword(w)}
    for n in range(2, min(_MAX_NGRAM, len(words)) + 1):
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            out.add("-".join(run))
            out.add(" ".join(run))
    return sorted(out)


def metadata_matches(con: Connection, query: str) -> dict[str, float]:
    """note id → strength of its best key/title/alias/tag match with the question."""
    candidates = metadata_candidates(query)
    if not candidates:
        return {}
    rows = con.execute(
        """
        WITH c AS (SELECT unnest($1::VARCHAR[]) AS word)
        SELECT id, 'key' FROM notes WHERE lower(coalesce(frontmatter->>'key',
            regexp_extract(path, '([^/]*)\\.md$', 1))) IN (SELECT word FROM c)
        UNION ALL SELECT id, 'title' FROM notes WHERE lower(title) IN (SELECT word FROM c)
        UNION ALL SELECT note_id, 'alias' FROM aliases WHERE alias_key IN (SELECT word FROM c)
        UNION ALL SELECT note_id, 'tag' FROM tags WHERE tag IN (SELECT word FROM c)
        """,
        [candidates],
    ).fetchall()
    strength: dict[str, float] = {}
    for note_id, field in rows:
        strength[note_id] = max(strength.get(note_id, 0.0), METADATA_STRENGTH[field])
    return strength


def _bm25(
    con: Connection,
    query: str,
    *,
    mode: vectors.Mode,
    pool: int,
    k1: float,
    b: float,
    required: bool,
) -> dict[str, tuple[float, str]]:
    """note id → (search score, snippet) by `vaultmem search`'s `mode`. A question without
    searchable words gives nothing in metadata-first mode (metadata may still match) and a
    `QueryError` otherwise."""
    try:
        hits = vectors.search(con, query, SearchFilters(), mode=mode, limit=pool, k1=k1, b=b)
    except QueryError:
        if required:
            raise
        return {}
    return {h.note_id: (h.score, h.snippet) for h in hits}


def recall(
    con: Connection,
    query: str,
    *,
    root: Path,
    managed_folder: str,
    scopes: Sequence[ScopeSpec] = (),
    mode: Mode = "metadata-first",
    sort: Sort = "score",
    limit: int = 10,
    include_related: bool = False,
    now: datetime | None = None,
    usage_counts: Mapping[str, int] | None = None,
    k1: float = 1.2,
    b: float = 0.75,
    patterns: Sequence[SecretPattern] = (),
) -> list[RecallHit]:
    """Recall up to `limit` notes for a question (plus capped related notes); see the module
    docstring for modes, the score blend and what is never returned."""
    if mode not in MODES:
        raise ConfigError(f"Unknown recall mode {mode!r}.", hint=f"Use one of {', '.join(MODES)}.")
    if sort not in SORTS:
        raise ConfigError(f"Unknown recall sort {sort!r}.", hint=f"Use one of {', '.join(SORTS)}.")
    now = now or datetime.now(UTC)
    counts = usage_counts or {}
    meta = metadata_matches(con, query) if mode in ("metadata-first", "metadata") else {}
    # Scope, expiry and trash are filtered after ranking, so ask search for a generous pool.
    search_mode: vectors.Mode = "words" if mode == "metadata-first" else cast(vectors.Mode, mode)
    bm25 = (
        _bm25(
            con,
            query,
            mode=search_mode,
            pool=limit * 5 + 50,
            k1=k1,
            b=b,
            required=mode != "metadata-first",
        )
        if mode != "metadata"
        else {}
    )
    infos = note_infos(con, [*meta, *bm25])

    def keep(note_id: str) -> bool:
        info = infos.get(note_id)
        return (
            info is not None and in_scopes(info, scopes) and recallable(info, now, managed_folder)
        )

    best = max((s for nid, (s, _) in bm25.items() if keep(nid)), default=0.0) or 1.0

    def relevance(note_id: str) -> float:
        return max(meta.get(note_id, 0.0), bm25.get(note_id, (0.0, ""))[0] / best)

    def score(note_id: str) -> float:
        return blended(relevance(note_id), infos[note_id], now, counts.get(note_id, 0))

    meta_ids = sorted((n for n in meta if keep(n)), key=lambda n: (-score(n), infos[n].path))
    bm25_ids = sorted(
        (n for n in bm25 if keep(n) and n not in meta), key=lambda n: (-score(n), infos[n].path)
    )
    chosen = (meta_ids + bm25_ids)[:limit]
    if sort == "recency":
        chosen.sort(key=lambda n: (-infos[n].updated_at.timestamp(), infos[n].path))
    elif sort == "usage":
        chosen.sort(key=lambda n: (-counts.get(n, 0), -score(n), infos[n].path))

    snippets = latest_contents(con, [n for n in chosen if not bm25.get(n, (0, ""))[1]])
    hits = [
        _hit(
            infos[n],
            root,
            score(n),
            safe_snippet((bm25[n][1] if n in bm25 else "") or snippets.get(n, ""), patterns),
            "metadata" if n in meta else "bm25" if search_mode == "words" else search_mode,
        )
        for n in chosen
    ]
    if include_related:
        hits += _related_hits(
            con,
            hits,
            root=root,
            managed_folder=managed_folder,
            scopes=scopes,
            now=now,
            counts=counts,
            patterns=patterns,
        )
    return hits


def safe_snippet(text: str, patterns: Sequence[SecretPattern] = ()) -> str:
    """A snippet with secrets redacted first, then cut to the snippet width at a word."""
    return clip_words(redact(text, patterns).text, SNIPPET_CHARS + 8)


def _hit(
    info: NoteInfo,
    root: Path,
    score: float,
    snippet: str,
    matched: Matched,
    related_to: str | None = None,
) -> RecallHit:
    return RecallHit(
        id=info.id,
        key=info.key,
        scope=info.scope,
        scope_id=info.scope_id,
        path=info.path,
        title=info.title,
        type=info.type,
        managed=info.managed,
        snippet=snippet,
        score=round(score, 6),
        updated=info.updated or info.updated_at.isoformat().replace("+00:00", "Z"),
        fresh=is_fresh(root, info),
        related=matched == "related",
        matched=matched,
        related_to=related_to,
    )


def related_targets(con: Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    """source id → ids of the notes it relates to: typed links (frontmatter properties and
    inline fields) and the links under its `## See Also` heading, in link order."""
    if not ids:
        return {}
    rows = con.execute(
        """
        WITH see_also AS (
            SELECT note_id, min(line) AS line FROM headings
            WHERE lower(text) = 'see also' AND note_id IN (SELECT unnest($1::VARCHAR[]))
            GROUP BY note_id
        )
        SELECT l.source_id, l.target_id FROM links l LEFT JOIN see_also s
            ON s.note_id = l.source_id
        WHERE l.source_id IN (SELECT unnest($1::VARCHAR[])) AND l.target_id IS NOT NULL
          AND l.target_id <> l.source_id AND NOT l.embed
          AND (l.relation IS NOT NULL OR (s.line IS NOT NULL AND l.line > s.line))
        ORDER BY l.source_id, l.ord
        """,
        [list(ids)],
    ).fetchall()
    out: dict[str, list[str]] = {}
    for source, target in rows:
        targets = out.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return out


def _related_hits(
    con: Connection,
    hits: list[RecallHit],
    *,
    root: Path,
    managed_folder: str,
    scopes: Sequence[ScopeSpec],
    now: datetime,
    counts: Mapping[str, int],
    patterns: Sequence[SecretPattern],
) -> list[RecallHit]:
    targets = related_targets(con, [h.id for h in hits])
    infos = note_infos(con, [t for ts in targets.values() for t in ts])
    seen = {h.id for h in hits}
    picked: list[tuple[str, str]] = []
    for hit in hits:
        taken = 0
        for target in targets.get(hit.id, []):
            info = infos.get(target)
            if (
                target in seen
                or info is None
                or not in_scopes(info, scopes)
                or not recallable(info, now, managed_folder)
            ):
                continue
            seen.add(target)
            picked.append((target, hit.key))
            taken += 1
            if taken == RELATED_PER_HIT or len(picked) == RELATED_TOTAL:
                break
        if len(picked) == RELATED_TOTAL:
            break
    contents = latest_contents(con, [t for t, _ in picked])
    return [
        _hit(
            infos[t],
            root,
            blended(0.0, infos[t], now, counts.get(t, 0)),
            safe_snippet(contents.get(t, ""), patterns),
            "related",
            related_to=source,
        )
        for t, source in picked
    ]


_TIMESTAMP_HEADING = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+)?(?:Z|[+-]\d{2}:?\d{2})?\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_SUPERSEDED = re.compile(r"^> Superseded by \S+\s*$", re.M)
_MARK_LINE = re.compile(r"^(?:> Supersedes \S+|<!-- /?vaultmem:[\w-]+ -->)\s*$", re.M)


def _without_marks(text: str) -> str:
    """A section's text without the lines vaultmem adds (correction marks, See Also markers)."""
    return _MARK_LINE.sub("", text)


def latest_contents(con: Connection, ids: Sequence[str]) -> dict[str, str]:
    """What a note says now, on one line: a topic's latest observation (the section under the
    newest timestamp heading that is not marked superseded); for any other note its title and
    the first sentence of its first non-empty section."""
    if not ids:
        return {}
    rows = con.execute(
        "SELECT d.note_id, d.ord, d.heading, d.text, n.managed, n.title FROM documents d "
        "JOIN notes n ON n.id = d.note_id WHERE d.ord > 0 "
        "AND d.note_id IN (SELECT unnest($1::VARCHAR[])) ORDER BY d.note_id, d.ord",
        [list(ids)],
    ).fetchall()
    sections: dict[str, list[tuple[str | None, str]]] = {}
    kinds: dict[str, tuple[bool, str]] = {}
    for note_id, _, heading, text, managed, title in rows:
        sections.setdefault(note_id, []).append((heading, text))
        kinds[note_id] = (bool(managed), title)
    out: dict[str, str] = {}
    for note_id, parts in sections.items():
        managed, title = kinds[note_id]
        observations = [
            (stamp[0], text)
            for heading, text in parts
            if heading
            and (stamp := _TIMESTAMP_HEADING.match(heading.strip()))
            and not _SUPERSEDED.search(text)
            and _without_marks(text).strip()
        ]
        if managed and observations:
            out[note_id] = one_line(_without_marks(max(observations, key=lambda o: o[0])[1]))
            continue
        body = next((b for h, t in parts if h != "See Also" and (b := plain_text(t))), "")
        out[note_id] = first_sentence(body) or (title if not managed else "")
    return out


_LINE_PREFIX = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|#{1,6}\s+)?")
_EMBED = re.compile(r"!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)")
_WIKILINK = re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def plain_text(markdown: str) -> str:
    """A section's prose on one line: list bullets, quote marks, embeds, fenced code and
    comments dropped, `[[target|shown]]` links shown as their text."""
    kept: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(("<!--", "|")):
            continue
        kept.append(_LINE_PREFIX.sub("", line, count=1))
    text = _EMBED.sub("", " ".join(kept))
    text = _WIKILINK.sub(lambda m: m[2] or m[1], text)
    return one_line(text)


def first_sentence(text: str, minimum: int = 20) -> str:
    """Up to the first `.`, `!` or `?` followed by a space, at or after `minimum` characters."""
    for match in _SENTENCE_END.finditer(text):
        if match.start() >= minimum:
            return text[: match.start()]
    return text


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces."""
    return " ".join(text.split())


def clip_words(text: str, width: int = SNIPPET_CHARS) -> str:
    """At most `width` characters, cut at a word boundary with ` …` (never mid-word)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, max(0, width - 1))
    return (text[:cut].rstrip() + " …") if cut > 0 else ""

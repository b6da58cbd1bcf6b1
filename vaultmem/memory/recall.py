"""Recall: what an agent gets back when it asks its memory a question.

Recall ranks the notes of the requested scopes (agent topics and people's notes alike) on one
blended score, every part bounded in 0..1:

    score     = 0.90 · relevance + 0.05 · recency + 0.05 · usage
    relevance = min(1, bm25 / best bm25 + 0.5 · name)           for every note
              = max(that, coverage)                              for a topic (agent memory)
    name      = strength · share: a key or title (1.0), alias (0.9) or tag (0.7) equal to a
                word of the question or a run of its words ("release process" finds the key
                `release-process`), times the share of the question's words that name covers
    coverage  = the share of the question's search terms a topic holds; a term of 4 letters or
                more found inside a longer word of the topic counts (`test` in `pytest`)
    recency   = 0.5 ** (days since `updated` / 30)                (a 30-day half-life)
    usage     = min(1, ln(1 + uses) / ln(1 + 20)), uses decayed with a 30-day half-life

So a name match adds to BM25 instead of sitting above it (ten notes aliased "Obsidian" do not
fill the list for every question naming Obsidian), a topic of the agent's own memory that holds
every word of the question ranks with the best human note, and recency and usage (together at
most 0.10) reorder near-ties only. That is `blended`, the default mode. `words`, `vectors` and
`hybrid` are `vaultmem search`'s modes alone (BM25; semantic vectors; both fused by reciprocal
rank: the last two need semantic recall on, docs/search.md), relevance being the search score
divided by the best; `metadata` mode is name matches alone. A returned hit is not a use:
`get`, `read` and `used` record uses (`usage.py`), so asking the same question again returns
the same order. `kind` keeps topics, notes or both.

Expired topics (retention by `updated`: session 14 days, project 90 days; the types user and
feedback never expire; people's notes never expire) and forgotten ones (in `.trash/`) are never
returned. Related notes (typed links and the `## See Also` links that accepted edges render) of
the direct hits are appended one level deep, at most `RELATED_PER_HIT` per hit and
`RELATED_TOTAL` in all, marked `related`. Each hit says whether the index entry is `fresh`: the
file's size and mtime still equal what the index recorded (one `stat` per hit). A topic's
snippet is its latest observation, read from its file by the topic reader (`topics.py`). Two
topics whose latest observations nearly repeat each other (`duplicates.is_duplicate`) are one
hit: the better ranked stays, the other gives its place to the next.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast

from vaultmem.core.documents import without_markup
from vaultmem.core.errors import InvalidArgumentError, QueryError
from vaultmem.core.models import SCOPES, RecallMode, RecallSort
from vaultmem.core.names import TRASH
from vaultmem.core.secrets import SecretPattern, redact
from vaultmem.core.tokenizer import is_stopword, tokenize
from vaultmem.memory.duplicates import collapse
from vaultmem.note import topics
from vaultmem.search import front, vectors
from vaultmem.search.query import SNIPPET_CHARS, SearchFilters
from vaultmem.storage import recall_queries as q
from vaultmem.storage.search_queries import EVERY_NOTE, NoteFilter, scopes_filter
from vaultmem.storage.store import Connection

Mode = RecallMode
Sort = RecallSort
Kind = Literal["all", "topics", "notes"]
Matched = Literal["metadata", "bm25", "vectors", "hybrid", "topic", "related"]
"""Why a hit is there: a name, the search of its mode (`bm25` for words), coverage or a link."""
MODES: tuple[Mode, ...] = ("blended", "metadata", "words", "vectors", "hybrid")
SORTS: tuple[Sort, ...] = ("score", "recency", "usage")
KINDS: tuple[Kind, ...] = ("all", "topics", "notes")

WEIGHT_RELEVANCE = 0.90
WEIGHT_RECENCY = 0.05
WEIGHT_USAGE = 0.05
NAME_WEIGHT = 0.5
RECENCY_HALF_LIFE_DAYS = 30.0
USAGE_SATURATION = 20
METADATA_STRENGTH = {"key": 1.0, "title": 1.0, "alias": 0.9, "tag": 0.7}
PART_OF_WORD_MIN = 4
POOL_EXTRA = 10
DUPLICATE_POOL = 5
"""Hits ranked past the limit, to stand in for near-identical topics collapsed into one."""

RELATED_PER_HIT = 2
RELATED_TOTAL = 5
TRASH_FOLDER = TRASH  # defined once, in core/names.py
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
                raise InvalidArgumentError(
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


def _info(row: q.InfoRow) -> NoteInfo:
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
    return {info.id: info for info in map(_info, q.info_rows(con, ids))}


def scope_infos(
    con: Connection, scopes: Sequence[ScopeSpec], *, managed_only: bool = False
) -> list[NoteInfo]:
    """Every note of the given scopes (all scopes when empty), in path order; only the agent
    topics when `managed_only` (a 10,000-note vault's rows cost the context block ~0.1 s)."""
    rows = q.all_info_rows(con, managed_only=managed_only)
    return [i for i in map(_info, rows) if in_scopes(i, scopes)]


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


def usage_weight(uses: float) -> float:
    """Decayed uses as 0..1: saturates at `USAGE_SATURATION`."""
    return min(1.0, math.log1p(max(uses, 0.0)) / math.log1p(USAGE_SATURATION))


def name_only_ceiling(strength: float, uses: float, *, metadata: bool = False) -> float:
    """The most `blended` can give a note matched by name alone with this `strength`: its
    relevance (the name match, halved by `NAME_WEIGHT` but in metadata mode) with the
    greatest recency, known without reading the note."""
    named = strength if metadata else min(1.0, NAME_WEIGHT * strength)
    return WEIGHT_RELEVANCE * named + WEIGHT_RECENCY + WEIGHT_USAGE * usage_weight(uses)


NAME_BATCH = 256
"""Notes matched by name alone read at a time, strongest first, while they can still count."""


def blended(relevance: float, info: NoteInfo, now: datetime, uses: float) -> float:
    return (
        WEIGHT_RELEVANCE * relevance
        + WEIGHT_RECENCY * recency(info, now)
        + WEIGHT_USAGE * usage_weight(uses)
    )


_WORD = re.compile(r"[^\W_]+(?:[-_'][^\W_]+)*", re.UNICODE)
_PART = re.compile(r"[^\W_]+", re.UNICODE)
_OPERATOR = re.compile(r"^-?(tag|path|type):", re.I)


def _question_words(query: str) -> list[str]:
    return [
        w.casefold()
        for part in query.split()
        if not _OPERATOR.match(part)
        for w in _WORD.findall(part)
    ]


def metadata_candidates(query: str) -> list[str]:
    """Lower-cased words of the question (stop words dropped) and runs of them joined by a
    hyphen or a space, so that both `release-process` and `Release process` match."""
    words = _question_words(query)
    out = {w for w in words if not is_stopword(w)}
    for n in range(2, min(_MAX_NGRAM, len(words)) + 1):
        for i in range(len(words) - n + 1):
            run = words[i : i + n]
            out.add("-".join(run))
            out.add(" ".join(run))
    return sorted(out)


def _content_parts(text: str) -> list[str]:
    return [p for p in _PART.findall(text.casefold()) if not is_stopword(p)]


def metadata_matches(
    con: Connection, query: str, notes: NoteFilter = EVERY_NOTE
) -> dict[str, float]:
    """note id → its best name match among the notes the filter keeps: the field's strength
    times the share of the question's words (stop words aside) the matched name covers."""
    asked = len(set(_content_parts(" ".join(_question_words(query))))) or 1
    strength: dict[str, float] = {}
    shares: dict[str, float] = {}  # a tag a question names can match thousands of notes
    for note_id, field, matched in q.name_matches(con, metadata_candidates(query), notes):
        share = shares.get(matched)
        if share is None:
            share = shares[matched] = min(1.0, len(set(_content_parts(matched))) / asked)
        strength[note_id] = max(strength.get(note_id, 0.0), METADATA_STRENGTH[field] * share)
    return strength


def query_terms(query: str) -> list[str]:
    """The question's search terms (the tokenizer's), or none when it uses search operators,
    `"phrases"` or exclusions: then topics enter through BM25 only."""
    if any(_OPERATOR.match(p) or p.startswith("-") for p in query.split()) or '"' in query:
        return []
    return list(dict.fromkeys(tokenize(query)))


def coverage(terms: Sequence[str], text_terms: set[str]) -> float:
    """The share of `terms` found in `text_terms`, a term of `PART_OF_WORD_MIN` letters or more
    also inside a longer word (`test` in `pytest`): agents write tool names, people ask in words."""
    if not terms:
        return 0.0
    found = sum(
        1
        for t in terms
        if t in text_terms or (len(t) >= PART_OF_WORD_MIN and any(t in word for word in text_terms))
    )
    return found / len(terms)


def topic_coverage(con: Connection, query: str, notes: NoteFilter = EVERY_NOTE) -> dict[str, float]:
    """topic id → coverage of the question's terms, for each topic the filter keeps holding
    any of them."""
    terms = query_terms(query)
    if not terms:
        return {}
    out: dict[str, float] = {}
    for note_id, text in q.topic_texts(con, notes):
        share = coverage(terms, set(tokenize(text)))
        if share > 0:
            out[note_id] = share
    return out


def _bm25(
    con: Connection,
    query: str,
    *,
    mode: vectors.Mode,
    pool: int,
    k1: float,
    b: float,
    required: bool,
    filters: SearchFilters,
) -> dict[str, tuple[float, str]]:
    """note id → (search score, snippet) by `vaultmem search`'s `mode`. A question without
    searchable words gives nothing in blended mode (names may still match) and a
    `QueryError` in the search modes."""
    try:
        hits = front.search(con, query, filters, mode=mode, limit=pool, k1=k1, b=b)
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
    mode: Mode = "blended",
    sort: Sort = "score",
    kind: Kind = "all",
    limit: int = 10,
    include_related: bool = False,
    now: datetime | None = None,
    usage_counts: Mapping[str, float] | None = None,
    k1: float = 1.2,
    b: float = 0.75,
    patterns: Sequence[SecretPattern] = (),
) -> list[RecallHit]:
    """Recall up to `limit` notes for a question (plus capped related notes); see the module
    docstring for modes, the score blend and what is never returned."""
    if mode not in MODES:
        raise InvalidArgumentError(
            f"Unknown recall mode {mode!r}.", hint=f"Use one of {', '.join(MODES)}."
        )
    if sort not in SORTS:
        raise InvalidArgumentError(
            f"Unknown recall sort {sort!r}.", hint=f"Use one of {', '.join(SORTS)}."
        )
    if kind not in KINDS:
        raise InvalidArgumentError(
            f"Unknown recall kind {kind!r}.", hint=f"Use one of {', '.join(KINDS)}."
        )
    now = now or datetime.now(UTC)
    counts = usage_counts or {}
    # The scopes asked are a filter of every read, so the statistics and the ranked pool are
    # those scopes' notes: an agent's hook asks its project and the global scope (often its
    # topics alone), and ranking the whole vault first (~0.3 s at 100,000 notes) could fill
    # the pool with notes it then drops.
    asked = tuple((s.scope, s.scope_id) for s in scopes)
    by_name = mode in ("blended", "metadata")
    in_asked = scopes_filter(asked)
    meta = metadata_matches(con, query, in_asked) if by_name else {}
    search_mode = "words" if by_name else cast(vectors.Mode, mode)
    # Expiry and trash are filtered after ranking, so BM25 returns a pool larger than the
    # limit; not much larger: each hit costs a snippet, most of search's time.
    filters = SearchFilters(scopes=asked, folder=managed_folder if kind == "topics" else None)
    bm25 = (
        _bm25(
            con,
            query,
            mode=search_mode,
            pool=limit * 2 + POOL_EXTRA,
            k1=k1,
            b=b,
            required=mode != "blended",
            filters=filters,
        )
        if mode != "metadata"
        else {}
    )
    cover = topic_coverage(con, query, in_asked) if mode == "blended" and kind != "notes" else {}
    infos = note_infos(con, [*bm25, *cover])

    def keep(note_id: str) -> bool:
        info = infos.get(note_id)
        return (
            info is not None
            and (kind == "all" or info.managed == (kind == "topics"))
            and in_scopes(info, scopes)
            and recallable(info, now, managed_folder)
        )

    best = max((s for nid, (s, _) in bm25.items() if keep(nid)), default=0.0) or 1.0

    def relevance(note_id: str) -> float:
        lexical = bm25.get(note_id, (0.0, ""))[0] / best
        named = min(1.0, lexical + NAME_WEIGHT * meta.get(note_id, 0.0))
        if mode == "metadata":
            named = meta.get(note_id, 0.0)
        return max(named, cover.get(note_id, 0.0)) if infos[note_id].managed else named

    def score(notes: Iterable[str]) -> None:
        scores.update(
            (n, blended(relevance(n), infos[n], now, counts.get(n, 0.0))) for n in notes if keep(n)
        )

    # A pool past the limit, so that hits collapsed as near-identical (one fact stored under
    # two topics) leave room for the next ones.
    pool = limit + DUPLICATE_POOL
    scores: dict[str, float] = {}
    score(dict.fromkeys([*bm25, *cover]))
    # A note matched by name alone is read and scored only while the best score it could
    # reach can still enter the pool (`name_only_ceiling`): a long question names tags that
    # thousands of notes carry, each with a share of the question too small to count.
    ceiling = {
        n: name_only_ceiling(meta[n], counts.get(n, 0.0), metadata=mode == "metadata")
        for n in meta
        if n not in bm25 and n not in cover
    }
    named = sorted(ceiling, key=ceiling.__getitem__, reverse=True)
    at = 0
    while at < len(named):
        bar = heapq.nlargest(pool, scores.values())[-1] if len(scores) >= pool else -math.inf
        batch = [n for n in named[at : at + NAME_BATCH] if ceiling[n] >= bar]  # a prefix
        if not batch:
            break
        infos.update(note_infos(con, batch))
        score(batch)
        at += len(batch)
    chosen = sorted(scores, key=lambda n: (-scores[n], infos[n].path))[:pool]
    contents = latest_contents(
        con, root, [n for n in chosen if infos[n].managed or not bm25.get(n, (0, ""))[1]]
    )
    chosen = collapse(chosen, lambda n: contents.get(n) if infos[n].managed else None)[:limit]
    if sort == "recency":
        chosen.sort(key=lambda n: (-infos[n].updated_at.timestamp(), infos[n].path))
    elif sort == "usage":
        chosen.sort(key=lambda n: (-counts.get(n, 0.0), -scores[n], infos[n].path))

    def matched(note_id: str) -> Matched:
        if note_id in meta:
            return "metadata"
        if note_id not in bm25:
            return "topic"
        return "bm25" if search_mode == "words" else search_mode

    hits = [
        _hit(
            infos[n],
            root,
            scores[n],
            safe_snippet(contents.get(n) or (bm25[n][1] if n in bm25 else ""), patterns),
            matched(n),
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
    """A snippet with secrets redacted first, markup a reader never sees taken out
    (`without_markup`), then cut to the snippet width at a word."""
    return clip_words(without_markup(redact(text, patterns).text), SNIPPET_CHARS + 8)


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
    out: dict[str, list[str]] = {}
    for source, target in q.related_pairs(con, ids):
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
    counts: Mapping[str, float],
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
    contents = latest_contents(con, root, [t for t, _ in picked])
    return [
        _hit(
            infos[t],
            root,
            blended(0.0, infos[t], now, counts.get(t, 0.0)),
            safe_snippet(contents.get(t, ""), patterns),
            "related",
            related_to=source,
        )
        for t, source in picked
    ]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def latest_contents(con: Connection, root: Path, ids: Sequence[str]) -> dict[str, str]:
    """What a note says now, on one line: a topic's latest observation that no correction
    replaced (its file read by the topic reader); for any other note, or a topic without one,
    its title and the first sentence of its first non-empty section."""
    if not ids:
        return {}
    infos = note_infos(con, ids)
    out: dict[str, str] = {}
    for note_id, info in infos.items():
        if not info.managed:
            continue
        try:
            text = (root / info.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        latest = topics.read_topic(info.path, text).latest
        if latest and (line := one_line(latest)):
            out[note_id] = line
    sections: dict[str, list[tuple[str | None, str]]] = {}
    for note_id, heading, text in q.section_rows(con, [i for i in ids if i not in out]):
        sections.setdefault(note_id, []).append((heading, text))
    for note_id, parts in sections.items():
        info = infos[note_id]
        body = next((b for h, t in parts if h != topics.SEE_ALSO and (b := plain_text(t))), "")
        out[note_id] = first_sentence(body) or (info.title if not info.managed else "")
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

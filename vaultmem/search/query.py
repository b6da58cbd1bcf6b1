"""BM25 search over the index's own tables, with Obsidian-like query operators.

A query is parsed (words, "phrases", -exclusions, tag:/path:/type: operators), its terms the
index does not hold are replaced by their nearest index terms (typos), adjacent words written as
one are looked for too (`stat blocks` finds `statblocks`), and notes are ranked by

    score(note) = best section's BM25 + title document's BM25 + WHOLE_NOTE · whole note's BM25

with statistics counted over the notes the filters keep (`bm25.py` holds the formulas);
`search` then reorders the best notes by term proximity in the section each shows
(`proximity.py`: score · (1 + 0.05 · share of the query's word pairs found near)). Words are
OR-ed (ranking, not filtering), so natural-language questions work; phrases, exclusions and
operators filter.

Everything a query reads comes through one `reads.SearchReads`, opened once for its filter
(`open_reads`): the index's tables (`storage/search_queries.py` holds the SQL) or the copy a
long-lived process holds in memory (`resident.py`); the algorithm is the same for both.
"""

from __future__ import annotations

import functools
import itertools
import re
import shlex
from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from vaultmem.core import segment
from vaultmem.core.documents import note_key, without_markup
from vaultmem.core.errors import QueryError
from vaultmem.core.tokenizer import DEFAULT_LANGUAGE, WordScan, analyzer
from vaultmem.search import bm25, compounds, proximity
from vaultmem.search.reads import SearchReads, SqlReads
from vaultmem.storage import search_queries as queries
from vaultmem.storage.store import Connection

if TYPE_CHECKING:  # numpy: a one-shot CLI search never loads a resident index
    from vaultmem.search.reads import Postings
    from vaultmem.search.resident import Resident

SNIPPET_CHARS = 240
SNIPPET_SCAN_CHARS = 3000


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query string taken apart: scored terms, phrases, exclusions and operator filters.

    `terms` are distinct, in the order asked; `repeated` maps the ones asked more than once to
    their count, which weighs them as often in the score (BM25's query term frequency)."""

    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...] = ()
    excluded: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    repeated: tuple[tuple[str, int], ...] = ()
    joined: tuple[str, ...] = ()
    """Terms of adjacent query words written as one (`joined_terms`), looked for too."""
    compound_words: tuple[str, ...] = ()
    """Words of a German query that may be a compound's last part (`search/compounds.py`)."""
    cjk_words: tuple[frozenset[str], ...] = ()
    """The terms of each Han, kana or Hangul word asked (`Analyzer.cjk_words`): a snippet
    marks a word of such text by them (`snippet`)."""


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
    scopes: tuple[tuple[str, str | None], ...] = ()
    """Any of these (scope, scope id or None for every id): recall over several scopes, so
    that the statistics and the ranked pool are those scopes' notes, not the whole vault's."""


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
    score_parts: dict[str, float] = field(default_factory=dict)
    """The score's parts: best `section`, `title` document, `whole` note (before its weight),
    and `proximity` (0..1, `search/proximity.py`)."""


_OPERATOR = re.compile(r"^(tag|path|type):(.+)$", re.I)
_SHLEX_SPACE = re.compile("[ \t\r\n]+")  # shlex.whitespace
_QUOTED = re.compile(r'"([^"]+)"')


def parse_query(text: str, language: str = DEFAULT_LANGUAGE) -> ParsedQuery:
    """Split a query into words, "phrases", -exclusions and tag:/path:/type: operators.
    Runs of Han alone are cut as Japanese when the query holds kana, as in a note."""
    cjk = segment.note_cjk(None, text)
    analyse = analyzer(language, cjk)
    if any(c in text for c in "\"'\\"):
        try:
            parts = shlex.split(text, posix=True)
        except ValueError:  # an unbalanced quote: treat the quote as an ordinary character
            parts = text.replace('"', " ").split()
    else:  # what shlex returns without quotes or escapes, without its pure-Python lexer
        parts = [part for part in _SHLEX_SPACE.split(text) if part]
    quoted = set(_QUOTED.findall(text)) if '"' in text else set()
    terms: list[str] = []
    phrases: list[tuple[str, ...]] = []
    excluded: list[str] = []
    tags: list[str] = []
    paths: list[str] = []
    types: list[str] = []
    scored: list[str | None] = []  # the scored words, for `joined_terms`
    cjk_words: list[frozenset[str]] = []
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
        scan = analyse.scan(body)
        found = scan.tokens()
        if negative:
            excluded.extend(found)
            continue
        if body in quoted and len(found) > 1:
            phrases.append(tuple(found))
        terms.extend(found)
        cjk_words += analyse.cjk_words(body)
        # a stop word (no term) is skipped; an identifier (several terms) is never joined
        scored += [
            m.group() if len(t) == 1 else None
            for m, t in zip(scan.words, scan.terms, strict=True)
            if t
        ]
    counts = Counter(terms)
    return ParsedQuery(
        tuple(counts),
        tuple(phrases),
        tuple(dict.fromkeys(excluded)),
        tuple(tags),
        tuple(paths),
        tuple(types),
        tuple((term, n) for term, n in counts.items() if n > 1),
        tuple(joined_terms(scored, counts, language, cjk)),
        compounds.candidate_words(text, tuple(counts)),
        tuple(dict.fromkeys(cjk_words)),
    )


FUZZY_LIMIT = 1
"""How many index terms stand in for a query term the index does not hold: the closest, most
frequent one. With three, `relase` also became `rebas` and `relat` and a note about rebasing
outranked the release checklist; the question sets scored the same either way."""


def max_edits(term: str) -> int:
    """Edits allowed when a query term is not in the index: none for short words, numbers and
    non-alphabetic terms, 1 up to 7 letters, 2 beyond (`corutin` -> `coroutin`)."""
    if len(term) < 4 or not term.isalpha():
        return 0
    return 1 if len(term) <= 7 else 2


def joined_terms(
    words: Sequence[str | None],
    terms: Container[str],
    language: str = DEFAULT_LANGUAGE,
    cjk: str | None = None,
) -> list[str]:
    """Adjacent query words written together (`stat blocks` -> `statblock`): looked for too,
    so split compounds find the note that writes them as one word. `words` are the query's
    scored words in order (stop words, exclusions and operators between two words do not
    separate them; None where a word may not be joined); a pair is joined before stemming,
    since a stem can drop what the compound keeps (`data` + `base` stem as they are, `database`
    to `databas`; `title` to `titl`, `titlebar` as it is). A word twice in a row (`very very`)
    is no compound; terms already asked are left out. `cjk` cuts runs of Han alone as the
    query's other words were (`parse_query`)."""
    tokenize = analyzer(language, cjk).tokenize
    out: dict[str, None] = {}
    for a, b in itertools.pairwise(words):
        if a is not None and b is not None and a.lower() != b.lower():
            joined = tokenize((a + b).lower())
            if len(joined) == 1 and joined[0] not in terms:
                out[joined[0]] = None
    return list(out)


COMPOUND_MIN = 8
"""Letters a query word the index lacks needs before it is read as two words written as one."""
COMPOUND_PART_MIN = 3


def compound_splits(term: str, fold: Callable[[str], str]) -> list[tuple[str, str]]:
    """The two-word readings of a long word (`studentenrabatt` -> `studenten` + `rabatt`):
    the head folded as a word of its own (which also drops a linking `s`: `versions` ->
    `version`), the tail as it is (the compound's stem is its last word's)."""
    if len(term) < COMPOUND_MIN or not term.isalpha():
        return []
    out: list[tuple[str, str]] = []
    for i in range(COMPOUND_PART_MIN, len(term) - COMPOUND_PART_MIN + 1):
        head, tail = term[:i], term[i:]
        out.append((fold(head), tail))
    return out


def expand_terms(
    reads: SearchReads, terms: list[str], fold: Callable[[str], str] | None = None
) -> list[str]:
    """The query's terms with those the index lacks replaced by their nearest index terms.

    One lookup tells which terms the index holds; a term without a near neighbour stays: it
    matches nothing, harmlessly. With `fold`, a long term the index lacks whose two parts it
    holds is asked as the parts.
    """
    unsure = [t for t in terms if max_edits(t)]
    known = reads.known_terms(unsure) if unsure else {}
    lacking = [t for t in unsure if t not in known]
    splits = {t: compound_splits(t, fold) for t in lacking} if fold is not None else {}
    parts = {p for pairs in splits.values() for pair in pairs for p in pair} - known.keys()
    if parts:
        known.update(reads.known_terms(sorted(parts)))
    out: dict[str, None] = {}
    for term in terms:
        if term not in unsure or term in known:
            out[term] = None
            continue
        whole = [
            (min(len(h), len(t)), min(known[h], known[t]), h, t)
            for h, t in splits.get(term, ())
            if h in known and t in known
        ]
        if whole:
            _, _, head, tail = max(whole)
            out.update(dict.fromkeys((head, tail)))
        else:
            nearest = reads.nearest_terms(term, max_edits(term), FUZZY_LIMIT)
            out.update(dict.fromkeys(nearest or [term]))
    return list(out)


def _compound_parts(reads: SearchReads, query: ParsedQuery, documents: float) -> dict[str, float]:
    """The compounds and tails a German query's distinctive words are also asked as, each
    at `compounds.WEIGHT` (`search/compounds.py`); none for any other query."""
    if not query.compound_words:
        return {}
    tails = {word: compounds.tails(word) for word in query.compound_words}
    # one lookup for the words' own document frequencies and the tails the index holds
    known = reads.known_terms([*tails, *(tail for found in tails.values() for tail in found)])
    words = compounds.distinctive(query.compound_words, known, documents)
    if not words:
        return {}
    found = reads.compounds_ending_with(words, compounds.HEAD_MIN)
    found += [tail for word in words for tail in tails[word] if tail in known]
    return {term: compounds.WEIGHT for term in found if term not in query.terms}


def note_filter(query: ParsedQuery, filters: SearchFilters) -> queries.NoteFilter:
    """The query's operators and the options as one condition on the note (alias `n`)."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.scope:
        clauses.append("n.scope = $scope")
        params["scope"] = filters.scope
    if filters.scope_id:
        clauses.append("n.scope_id = $scope_id")
        params["scope_id"] = filters.scope_id
    if filters.scopes:
        clauses.append(queries.scopes_where(filters.scopes, params))
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
    return queries.NoteFilter(" AND ".join(clauses) or "true", params)


def open_reads(
    con: Connection, notes: queries.NoteFilter, resident: Resident | None = None
) -> SearchReads:
    """A query's reads of the kept notes: from the index held in memory when there is one,
    else from the tables on `con`. The one place a query chooses its source."""
    return resident.reads(con, notes) if resident is not None else SqlReads(con, notes)


def search(
    con: Connection,
    text: str,
    filters: SearchFilters = SearchFilters(),
    *,
    limit: int = 10,
    k1: float = 1.2,
    b: float = 0.75,
    whole_weight: float | None = None,
    title_weight: float | None = None,
    language: str | None = None,
    clean: Callable[[str], str] | None = None,
    resident: Resident | None = None,
) -> list[SearchHit]:
    """Run a query; results grouped by note, best first.

    `language` is the stemmer the index was built with (`[search] language`); None reads it
    from the index, one more small statement. `clean` rewrites a section's text before the
    snippet is cut from it (the facade redacts secrets there: cut first, and a token split at
    the window's edge would no longer match its pattern). `resident` is the index held in
    memory (`search/resident.py`), read instead of the tables; the results are the same.
    `whole_weight` and `title_weight` default to the blend of the query's script (`blend`).
    """
    language = language or queries.index_language(con)
    query = _parse(text, language)
    reads = open_reads(con, note_filter(query, filters), resident)
    weights: dict[str, float] = {}
    ranked, wanted = _ranked(
        reads,
        query,
        limit=limit,
        k1=k1,
        b=b,
        whole_weight=whole_weight,
        title_weight=title_weight,
        language=language,
        weights=weights,
    )
    # Proximity reorders the pool by the sections the hits show (fetched once for proximity
    # and the snippets); a query without word pairs tokenizes none of them.
    sections = reads.note_sections([note.note_id for note in ranked])
    query_pairs = proximity.pairs(list(weights))
    japanese = segment.has_kana(text)
    shown = [
        _shown(
            note,
            sections,
            clean,
            language,
            terms=bool(query_pairs) and i < proximity.POOL,
            japanese=japanese,
        )
        for i, note in enumerate(ranked)
    ]
    shares = [
        proximity.proximity(section.terms, query_pairs, weights) if section.terms else 0.0
        for section in shown
    ]
    titles = [0.0] * len(ranked)
    if proximity.TITLE_WEIGHT:  # a title is cut as the query's words are (`section_cjk`)
        titles = [
            proximity.title_named(
                analyzer(language, section_cjk(note.note[2], japanese)).tokenize(note.note[2]),
                weights,
            )
            if i < proximity.POOL
            else 0.0
            for i, note in enumerate(ranked)
        ]
    order = proximity.rerank([note.score for note in ranked], shares, titles)
    return [
        _hit(ranked[i], shown[i], shares[i], wanted, language, titles[i], query.cjk_words)
        for i in order[:limit]
    ]


def ranked_notes(
    con: Connection,
    text: str,
    filters: SearchFilters,
    *,
    limit: int,
    k1: float,
    b: float,
    language: str,
    whole_weight: float | None = None,
    title_weight: float | None = None,
    resident: Resident | None = None,
    weights: dict[str, float] | None = None,
) -> tuple[list[queries.RankedNote], set[str]]:
    """`search`'s ranking without the hits: the best notes and the terms a snippet marks
    (hybrid search, `vectors.py`, fuses this ranking with the vectors'). `weights`, when
    given, receives the query's words in order with their weights (count × idf), and the
    ranking goes on past `limit` with the notes proximity could lift into the first `limit`
    (`proximity.candidates`)."""
    query = _parse(text, language)
    return _ranked(
        open_reads(con, note_filter(query, filters), resident),
        query,
        limit=limit,
        k1=k1,
        b=b,
        whole_weight=whole_weight,
        title_weight=title_weight,
        language=language,
        weights=weights,
    )


@functools.cache
def _cjk() -> re.Pattern[str]:
    """A Han, kana or Hangul character. Compiled on first need: its ranges cost ~2.5 ms to
    compile (the compiler fills a table one code point at a time), and an ASCII term never
    needs it."""
    return re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7a3]")


def blend(terms: Sequence[str]) -> tuple[float, float]:
    """The (title document, whole note) weights of a query's score: the CJK ones when a term
    holds Han, kana or Hangul (`search_queries.CJK_TITLE_DOCUMENT`), else the defaults."""
    if any(not t.isascii() and _cjk().search(t) for t in terms):
        return queries.CJK_TITLE_DOCUMENT, queries.CJK_WHOLE_NOTE
    return queries.TITLE_DOCUMENT, queries.WHOLE_NOTE


def _parse(text: str, language: str) -> ParsedQuery:
    """`parse_query`, refusing a query with nothing to score."""
    query = parse_query(text, language)
    if not query.terms:
        raise QueryError(
            f"The query {text!r} has no searchable words (empty, or only stop words).",
            hint='Add a distinctive word, e.g. vaultmem search "duckdb lock".',
        )
    return query


class _Fetched(NamedTuple):
    """A ranking's query terms and their postings, read before any scoring."""

    terms: list[str]
    counts: Counter[str]
    weighed: dict[str, float]
    unique: list[str]
    postings: Postings


def _ranked(
    reads: SearchReads,
    query: ParsedQuery,
    *,
    limit: int,
    k1: float,
    b: float,
    language: str,
    whole_weight: float | None,
    title_weight: float | None,
    weights: dict[str, float] | None,
) -> tuple[list[queries.RankedNote], set[str]]:
    """`ranked_notes` from `reads` (its docstring)."""
    words = list(query.terms)
    title_blend, whole_blend = blend(words)
    title_weight = title_blend if title_weight is None else title_weight
    whole_weight = whole_blend if whole_weight is None else whole_weight
    bm25.warm()
    only_keys = None
    if query.phrases:
        only = _phrase_notes(reads, query.phrases, language, k1=k1, b=b)
        if not only:
            return [], set(words)
        only_keys = frozenset(note_key(i) for i in only)
    joined = list(query.joined)
    stats = reads.collection_stats()
    excluded = reads.keys_with_terms(query.excluded)
    parts = _compound_parts(reads, query, stats.documents)

    def fetch(terms: list[str]) -> _Fetched:
        # a term asked twice counts twice (FTS5's bm25 sums a repeated query term twice too)
        counts: Counter[str] = Counter([*terms, *joined])
        counts.update({t: n - 1 for t, n in query.repeated if t in counts})
        weighed: dict[str, float] = dict(counts)
        weighed.update({t: w for t, w in parts.items() if t not in counts})
        unique = list(weighed)
        postings = reads.term_postings(unique, columns_from=bm25.columns_from())
        return _Fetched(terms, counts, weighed, unique, postings)

    def rank(got: _Fetched) -> list[queries.RankedNote]:
        terms, counts, weighed, unique, postings = got
        scored = bm25.rank(
            postings,
            [float(weighed[t]) for t in unique],
            stats,
            k1=k1,
            b=b,
            limit=limit if weights is None else max(limit, proximity.POOL),
            whole_weight=whole_weight,
            title_weight=title_weight,
            excluded=excluded,
            only=only_keys,
        )
        if weights is not None:  # only the notes proximity could still lift need their rows
            scored = scored[: proximity.candidates([n.score for n in scored], limit, terms)]
        rows = reads.note_rows([note.note_key for note in scored])
        if weights is not None:
            df = proximity.document_frequencies(postings, unique)
            weights.clear()
            weights.update(proximity.idf_weights(terms, counts, df, stats.documents))
        return [
            queries.RankedNote(
                rows[n.note_key][0],
                n.score,
                n.section,
                n.title,
                n.whole,
                n.documents,
                rows[n.note_key],
            )
            for n in scored
        ]

    # Typos: the words the index lacks are looked up in `terms` (one small statement) and
    # replaced before any postings are read, so a query reads them once and scores once,
    # with the replacements (a long prompt with words the vault lacks read its postings twice
    # when they were judged from a first read: ~0.2-0.35 s a read at 100,000 notes).
    if any(max_edits(t) for t in words):
        words = expand_terms(reads, words, fold=analyzer(language).fold)
    ranked = rank(fetch(words))
    return ranked, {*words, *joined, *parts}  # the compounds asked are marked too


def _phrase_notes(
    reads: SearchReads,
    phrases: tuple[tuple[str, ...], ...],
    language: str,
    *,
    k1: float,
    b: float,
) -> list[str]:
    """Notes with a document holding every phrase as consecutive terms.

    SQL keeps only documents that contain every phrase term; their text is then tokenized
    here to check adjacency, which postings (without positions) cannot tell.
    """
    needed = tuple(dict.fromkeys(t for phrase in phrases for t in phrase))
    rows = reads.phrase_candidates(needed, k1=k1, b=b)
    if not rows:
        return []
    texts = reads.document_texts([(note_id, ord_) for note_id, ord_, _ in rows])
    found: dict[str, None] = {}
    for note_id, ord_, _ in rows:
        fields = [analyzer(language).tokenize(part) for part in texts.get((note_id, ord_), ())]
        if all(any(_has_phrase(tokens, p) for tokens in fields) for p in phrases):
            found[note_id] = None
    return list(found)


def _has_phrase(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(tokens[i : i + n]) == phrase for i in range(len(tokens) - n + 1))


@dataclass(frozen=True, slots=True)
class _Shown:
    """The section a hit shows, cleaned, with the terms of its heading and head in order
    (what proximity reads) and the scan of its head they came from (the snippet reuses it)."""

    heading: str | None
    line: int
    text: str
    terms: list[str]
    head: WordScan | None = None
    cjk: str | None = None
    """How its runs of Han alone are cut (`section_cjk`)."""


def section_cjk(text: str, japanese: bool = False) -> str | None:
    """The segmenter for a shown section's runs of Han alone: Japanese when the query
    (`japanese`) or the section holds kana, else Chinese (None), as `segment.note_cjk` chose
    for the note. So a Japanese search never loads the Chinese segmenter for its snippets."""
    return "ja" if japanese or segment.has_kana(text) else None


def _shown(
    note: queries.RankedNote,
    sections: dict[str, dict[int, queries.Section]],
    clean: Callable[[str], str] | None,
    language: str,
    *,
    terms: bool,
    japanese: bool = False,
) -> _Shown:
    """The section `note` shows, cleaned; with its terms when `terms` (proximity reads them).
    `japanese`: the query holds kana (`section_cjk`).

    Proximity reads the best section with any text, even text a reader does not see (a
    topic's `# key` heading over its `<!-- id: ... -->` header names the topic); the hit
    shows the best one with text to quote (`shown_section`)."""
    own = sections.get(note.note_id, {})
    heading, line, text = shown = shown_section(note.documents, own)
    if clean is not None:
        text = clean(text)
    cjk = section_cjk(text, japanese)
    if not terms:
        return _Shown(heading, line, text, [], cjk=cjk)
    scored = shown_section(note.documents, own, visible=False)
    if scored != shown:  # proximity's section is not the one shown: scan it apart
        scored_heading, _, scored_text = scored
        if clean is not None:
            scored_text = clean(scored_text)
        analyse = analyzer(language, section_cjk(scored_text, japanese))
        scored_terms = analyse.tokenize(scored_heading) if scored_heading else []
        scored_terms += analyse.scan(_snippet_head(scored_text)).tokens()
        return _Shown(heading, line, text, scored_terms, cjk=cjk)
    # One scan of the head gives proximity its terms and the snippet its words (marked with
    # `matching_spans` for the hits actually returned): scanning it twice was a fifth of a
    # warm search.
    analyse = analyzer(language, cjk)
    head = analyse.scan(_snippet_head(text))
    head_terms = analyse.tokenize(heading) if heading else []
    return _Shown(heading, line, text, [*head_terms, *head.tokens()], head, cjk)


def _hit(
    note: queries.RankedNote,
    shown: _Shown,
    share: float,
    wanted: set[str],
    language: str,
    title_named: float = 0.0,
    words: Sequence[frozenset[str]] = (),
) -> SearchHit:
    _, path, title, scope, scope_id = note.note
    return SearchHit(
        note_id=note.note_id,
        path=path,
        title=title,
        scope=scope,
        scope_id=scope_id,
        heading=shown.heading,
        line=shown.line,
        score=round(note.score * proximity.boost(share, title_named), 6),
        snippet=snippet(
            shown.text,
            wanted,
            language=language,
            head=shown.head,
            japanese=shown.cjk == "ja",
            words=words,
        ),
        sections=tuple({"ord": o, "score": round(s, 6)} for o, s in note.documents[:5]),
        score_parts={
            "section": round(note.section, 6),
            "title": round(note.title, 6),
            "whole": round(note.whole, 6),
            "proximity": round(share, 6),
            "title_named": title_named,
        },
    )


def shown_section(
    docs: list[tuple[int, float]], sections: dict[int, queries.Section], *, visible: bool = True
) -> tuple[str | None, int, str]:
    """The section a hit shows: the best-scoring one with text to quote.

    A match on the title (ord 0) or on a heading over a section a reader sees nothing of (a
    topic's `# key` line over its `<!-- id: ... -->` header, a heading over a comment) has
    nothing to quote, so the next best matching section with text is shown, else the note's
    first section with text. `visible=False`: any text counts, markup too (the section
    proximity reads, `_shown`).
    """
    seen = _quotable if visible else str.strip
    for ord_, _ in docs:
        if ord_ in sections and seen(sections[ord_][2]):
            return sections[ord_]
    for ord_ in sorted(sections):
        if seen(sections[ord_][2]):
            return sections[ord_]
    return sections[min(sections)] if sections else (None, 1, "")


def _quotable(text: str) -> bool:
    """Whether a reader sees any of `text` (markup and white space aside)."""
    return bool(text.strip()) and bool(without_markup(text).strip())


def _snippet_head(text: str) -> str:
    """The part of a section's text `snippet` tokenizes first."""
    return without_markup(text).replace("**", "")[:SNIPPET_SCAN_CHARS]


def snippet(
    text: str,
    terms: set[str],
    width: int = SNIPPET_CHARS,
    language: str = DEFAULT_LANGUAGE,
    *,
    head: WordScan | None = None,
    japanese: bool = False,
    words: Sequence[frozenset[str]] = (),
) -> str:
    """The densest window of `text` around matched words, each marked `**like this**`.

    Only the first SNIPPET_SCAN_CHARS are tokenized when a match lies there (the usual case):
    tokenizing whole long sections for every hit was a quarter of a query's time. The note's
    own `**bold**` markers are dropped first: kept, they would nest with ours (`****x**:**`);
    so is markup a reader never sees (HTML tags, callout and quote markers: `without_markup`).
    `head` is the tokenizer's scan of `_snippet_head(text)` when the caller made it already;
    `japanese`: the query holds kana (`section_cjk`); `words`: the query's Han, kana and
    Hangul words (`ParsedQuery.cjk_words`), so that a word of such text is marked when it
    holds one, not when it shares a single bigram with one (`リモート` for `ノート`).
    """
    text = without_markup(text).replace("**", "")
    head_text = text[:SNIPPET_SCAN_CHARS]
    matching = analyzer(language, section_cjk(text, japanese)).matching_spans
    spans: list[tuple[int, int]] = []
    # Whole query words first; a section that shares only bigrams with them (it ranked on
    # those) is still shown where they are, marked as they match.
    for asked in (words, ()) if words else ((),):
        spans = matching(head_text, terms, head, asked)
        if not spans and len(text) > len(head_text):
            spans = matching(text, terms, None, asked)
        if spans:
            break
    if not spans:
        return _clip(" ".join(text.split()), 0, width)
    best_start, best_count = spans[0][0], 0
    for i, (start, _) in enumerate(spans):
        count = sum(1 for s, _ in spans[i:] if s < start + width)
        if count > best_count:
            best_start, best_count = start, count
    window_start = max(0, best_start - width // 4)
    window_start = text.rfind(" ", 0, window_start) + 1 if window_start else 0
    window_end = min(len(text), window_start + width)
    out: list[str] = []
    cursor = window_start
    for start, end in spans:
        if start < max(window_start, cursor) or end > window_end:
            continue  # outside the window, or a part of an identifier already marked whole
        if out and start == cursor:  # adjoins the last mark (words of an unspaced script)
            out[-1:] = [text[start:end], "**"]
        else:
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

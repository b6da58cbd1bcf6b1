"""Search documents: how a note is cut into the units BM25 scores (pure, no I/O).

A note becomes one note-level document (ord 0: its title, aliases and tags) plus one
document per section (ord 1, 2, …: the heading and the text under it). Searching sections
rather than whole notes finds the passage that answers a question, and lets a long note's
unrelated sections stay out of its score. Each document carries its terms with their
frequencies per field; the index stores them as postings.

Boilerplate: a body line found, word for word (case and spacing aside), in at least
`BOILERPLATE_NOTES` notes is a template, a footer or a navigation line, not a passage. Its words
are not postings of the sections holding it (they still count in the section's length and show
in snippets), so they neither match nor inflate a word's document frequency. Which lines are
boilerplate depends on the whole vault, so a section records the keys of its candidate lines
(`line_keys`) and the index decides (`storage.search_rows`): the workers tokenise the full text,
and the load takes out of the few sections that hold boilerplate what those lines add
(`boilerplate_weights`; `section_postings` is the section re-tokenised without them).
Lines inside fenced code are never candidates (`return (` in 15 notes is code, not a template);
a section's heading is one (`## This note in GitHub` over a footer); a line is compared without
its link destinations and URLs (a footer's "Edit on GitHub" link names the note's own file).
"""

from __future__ import annotations

import functools
import itertools
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from hashlib import blake2b
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

from vaultmem.core import segment
from vaultmem.core.tokenizer import DEFAULT_LANGUAGE, analyzer

if TYPE_CHECKING:  # a search redacts and cuts stored text, never a parsed note
    from vaultmem.core.note_model import Note

Field = str
FIELD_WEIGHTS: dict[Field, float] = {
    "title": 3.0,
    "alias": 3.0,
    "heading": 2.0,
    "tag": 1.5,
    "body": 1.0,
}
"""How much one occurrence counts, per field: title and aliases above headings above tags above
body. BM25 sees the weighted sum of a term's frequencies in a document (a BM25F-style blend).
The index stores these sums (`postings.tf`): bump TOKENIZER_VERSION when changing a weight."""


# Markup a reader never sees as text: HTML comments and tags (`<button class="big">`, not an
# autolink `<https://…>` nor `a < b`), callout markers (`[!warning]`, `[!tip]-`) and the `>` of
# quote lines. Snippets drop it; the index keeps the section's text as written. Each pattern
# opens with a literal, which the regex engine scans for quickly, and runs only when its
# opening is in the text.
_TAG = re.compile(r"<(?:!--.*?-->|/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]{0,400})?/?>)", re.S)
_CALLOUT = re.compile(r"\[![A-Za-z0-9_-]+\][+-]?")
_QUOTE = re.compile(r"\n[ \t]*(?:>[ \t]?)+")


def without_markup(text: str) -> str:
    """`text` as a reader sees it, for a snippet or a context line: HTML tags and comments,
    callout markers and quote markers taken out (each tag leaves a space, so words it
    separated stay apart)."""
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "[!" in text:
        text = _CALLOUT.sub("", text)
    if ">" in text:
        text = _QUOTE.sub("\n", "\n" + text)[1:]
    return text


class SearchDocument(NamedTuple):
    """One scored unit: `weights` maps each term to its field-weighted frequency (Σ
    weight(field) · occurrences, `FIELD_WEIGHTS`), terms in field order and sorted within a
    field; `length` counts all terms. Read-only by convention (a dict is cheaper to build)."""

    ord: int
    heading: str | None
    line: int
    text: str
    length: int
    weights: Mapping[str, float]
    line_keys: tuple[int, ...] = ()
    """Sorted keys of the section's candidate boilerplate lines (`line_keys`); none for ord 0."""


def note_documents(note: Note, language: str = DEFAULT_LANGUAGE) -> list[SearchDocument]:
    """The note-level document followed by one document per non-empty section, its words
    stemmed for `language` (`[search] language`). (Boilerplate re-scoring, `section_postings`,
    segments a section's runs of Han alone as Chinese: it does not know the note.)"""
    return documents_of(
        note.title,
        note.aliases,
        note.tags,
        note.sections,
        note.frontmatter.get("lang"),
        language,
    )


class SectionText(Protocol):
    """What a search document needs of a section: `note.Section`, or a stored one."""

    @property
    def heading(self) -> str | None: ...
    @property
    def line(self) -> int: ...
    @property
    def text(self) -> str: ...


def documents_of(
    title: str,
    aliases: Sequence[str],
    tags: Sequence[str],
    sections: Sequence[SectionText],
    lang: object,
    language: str = DEFAULT_LANGUAGE,
    line_keys: Sequence[tuple[int, ...] | None] = (),
) -> list[SearchDocument]:
    """`note_documents` of the parts of a note it reads: its title, aliases, tags, every
    section in order (a section's ord is its 1-based position) and its `lang` property.
    The index holds each of them (`storage.search_upgrade`), so its search tables can be
    made again from it, without the Markdown, when only the tokenizer changed. `line_keys`:
    the sections' `section_line_keys` when known (the index's, kept by an upgrade; None
    for one not known), taken instead of counted."""
    # A run of Han alone is segmented in the note's language: its `lang` property, else
    # Japanese when the note holds kana anywhere (`segment.note_cjk`), else Chinese.
    texts = [title, *(section.text for section in sections)]
    cjk = segment.note_cjk(lang, "\n".join(t for t in texts if not t.isascii()))
    counts = analyzer(language, cjk).counts
    # Words never span a line break, so a field's lines tokenised as one text give the same
    # terms as tokenised one by one (and in any order).
    fields: list[tuple[Field, Counter[str]]] = [
        ("title", counts(title)),
        ("alias", counts("\n".join(aliases))),
        ("tag", counts("\n".join(tags))),
    ]
    head_text = "\n".join([title, *aliases, *("#" + t for t in tags)])
    docs = [_document(0, None, 1, head_text, fields)]
    for i, section in enumerate(sections, start=1):
        heading = section.heading
        body = counts(section.text)
        heading_terms = counts(heading) if heading else None
        if not body and not heading_terms:
            continue  # a termless section: the index keeps it apart (`termless_sections`)
        fields = [("body", body)]
        if heading_terms:
            fields.append(("heading", heading_terms))
        keys = line_keys[i - 1] if line_keys else None
        docs.append(_document(i, heading, section.line, section.text, fields, keys))
    return docs


BOILERPLATE_NOTES = 8
"""A body line in at least this many notes is boilerplate. An absolute count, not a share of
the vault, so a note added or removed can move only its own lines across it, and a line that
crosses re-scores exactly the sections holding it (about this many). At 5, two-word labels
(`**Pros**`) and a reading list's shared entries already qualify on dwarvesf-brain; at 8 its
boilerplate is template headings (`References`, `Description`), a citation in 16 notes, a
navigation line, a template sentence, a signature."""

_FENCES = ("```", "~~~")


# A link's destination and a bare URL often name the note itself (a footer's "Edit on GitHub"
# link to this very file): the key ignores them so the line is the same in every note.
_DESTINATION = re.compile(r"\]\([^)]*\)|\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# Its first branch alone, for a line without `://` (the second branch cannot match there): the
# literal `](` lets the regex engine skip ahead, where the two branches try every position
# (benchmarks/ has the figures).
_LINK_DESTINATION = re.compile(r"\]\([^)]*\)")


_ALNUM = re.compile(r"[^\W_]")
"""A letter or digit (`str.isalnum`: `\\w` is exactly that plus `_`)."""


_LINE_HASH = blake2b(digest_size=8)
"""Copied per line: half the cost of making a hasher with its parameters (~0.5 against ~1.1
µs), for every line of every section a build keys."""


def _line_key(line: str) -> int | None:
    """63 bits of BLAKE2b of the line, link destinations and URLs removed, case-folded, white
    space collapsed; None for a line with no letter or digit (it yields no term either)."""
    if "://" in line:
        line = _DESTINATION.sub("]", line)
    elif "](" in line:
        line = _LINK_DESTINATION.sub("]", line)
    if line.isascii():  # most lines; blank ones are common: test before the work
        if _ALNUM.search(line) is None:
            return None
        norm = " ".join(line.split()).lower()  # ASCII: the same as casefold
    else:  # folding can make a letter of a mark (U+0345): test the folded text
        norm = " ".join(line.split()).casefold()
        if _ALNUM.search(norm) is None:
            return None
    hasher = _LINE_HASH.copy()
    hasher.update(norm.encode())
    return int.from_bytes(hasher.digest(), "big") >> 1


@functools.lru_cache(maxsize=2048)
def _lines_and_keys(text: str) -> tuple[list[str], list[int | None]]:
    """A section's lines and each one's boilerplate key (None: never boilerplate: fenced code,
    its fence lines, lines without a letter or digit). Without a fence every line is a
    candidate and the keys come from one `map`, with no Python step per line (a tenth of
    cutting obsidian-hub's footers).

    The last 2,048 sections' are kept (callers only read them): a build's worker keys a
    chunk's sections when it makes their documents, then cuts the boilerplate of those
    holding a known line (`index.early_cut`), and keying was half of that cut. A chunk holds
    ~1,000 sections; one not kept is keyed again."""
    lines = text.split("\n")
    if "```" not in text and "~~~" not in text:
        return lines, list(map(_line_key, lines))
    keys: list[int | None] = []
    fence: str | None = None
    for line in lines:
        stripped = line.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            keys.append(None)
        elif stripped.startswith(_FENCES):
            fence = stripped[:3]
            keys.append(None)
        else:
            keys.append(_line_key(line))
    return lines, keys


def line_keys(text: str) -> tuple[int, ...]:
    """The sorted distinct keys of a text's candidate boilerplate lines."""
    keys = set(_lines_and_keys(text)[1])
    keys.discard(None)
    return tuple(sorted(cast("set[int]", keys)))


def section_line_keys(heading: str | None, text: str) -> tuple[int, ...]:
    """A section's candidate lines: its heading's (a template's `## This note in GitHub`)
    and its text's."""
    keys = line_keys(text)
    key = _line_key(heading) if heading else None
    if key is None or key in keys:
        return keys
    return tuple(sorted((*keys, key)))


def section_postings(
    heading: str | None, text: str, boilerplate: frozenset[int], language: str = DEFAULT_LANGUAGE
) -> dict[str, float]:
    """A section's postings (term -> field-weighted tf) with its `boilerplate` lines left out.

    With no boilerplate line in the section it is exactly what `note_documents` and
    `postings_lines` produce, which keeps an index that re-scores sections equal to a rebuild.
    """
    tokenize = analyzer(language).tokenize
    lines, keys = _lines_and_keys(text)
    kept = "\n".join(itertools.compress(lines, [key not in boilerplate for key in keys]))
    if heading and _line_key(heading) in boilerplate:
        heading = None
    weighted: dict[str, float] = {}
    for field, terms in (
        ("heading", tokenize(heading) if heading else []),
        ("body", tokenize(kept)),
    ):
        for term, count in Counter(terms).items():
            weighted[term] = weighted.get(term, 0.0) + FIELD_WEIGHTS[field] * count
    return weighted


def boilerplate_weights(
    heading: str | None,
    text: str,
    boilerplate: frozenset[int],
    language: str = DEFAULT_LANGUAGE,
    lines_seen: dict[str, Counter[str]] | None = None,
) -> dict[str, float]:
    """What a section's `boilerplate` lines add to its postings (term -> field-weighted tf):
    the full postings less these are exactly `section_postings`, since no word spans a line
    break. The load subtracts them from the staged postings instead of tokenising the whole
    section again. `lines_seen` memoises a line's terms across calls (boilerplate repeats)."""
    counts = analyzer(language).counts
    seen = lines_seen if lines_seen is not None else {}
    removed: dict[str, float] = {}
    get = removed.get
    if heading and _line_key(heading) in boilerplate:
        weight = FIELD_WEIGHTS["heading"]
        for term, count in counts(heading).items():
            removed[term] = get(term, 0) + weight * count
    weight = FIELD_WEIGHTS["body"]
    for line in _boilerplate_lines(text, boilerplate):
        terms = seen.get(line)
        if terms is None:
            terms = seen[line] = counts(line)
        for term, count in terms.items():
            removed[term] = get(term, 0) + weight * count
    return removed


def _boilerplate_lines(text: str, boilerplate: frozenset[int]) -> list[str]:
    """The lines of a section's text whose key is a `boilerplate` line's, in order, each as
    often as it occurs."""
    lines, keys = _lines_and_keys(text)
    return list(itertools.compress(lines, [key in boilerplate for key in keys]))


def boilerplate_tsv_lines(
    sections: Iterable[tuple[int, int, str | None, str]],
    boilerplate: frozenset[int],
    language: str = DEFAULT_LANGUAGE,
) -> Iterator[str]:
    """`term\tnumber\tord\ttf` lines of what the `boilerplate` lines add to each section
    (number, ord, heading, text), in pieces of whole lines (one per section): the weights a
    build subtracts from its staged postings (`boilerplate_weights`, each distinct line
    tokenised once). Pure, so a pool can cut a large batch in parts."""
    seen: dict[str, Counter[str]] = {}
    for number, ord_, heading, text in sections:
        removed = boilerplate_weights(heading, text, boilerplate, language, seen)
        if removed:  # the section's columns formatted once, not once per term
            mid = f"\t{number}\t{ord_}\t"
            yield "".join([f"{term}{mid}{tf}\n" for term, tf in removed.items()])


def without_boilerplate(
    doc: SearchDocument,
    boilerplate: frozenset[int],
    language: str = DEFAULT_LANGUAGE,
    lines_seen: dict[str, Counter[str]] | None = None,
) -> SearchDocument:
    """`doc` less what its `boilerplate` lines add (`boilerplate_weights`), a term they bring
    to zero left out: the postings a build from nothing loads for it, where the load subtracts
    the same weights in SQL (`storage.search_rows`). Lengths stay as they are, as there."""
    if doc.ord == 0 or boilerplate.isdisjoint(doc.line_keys):
        return doc
    removed = boilerplate_weights(doc.heading, doc.text, boilerplate, language, lines_seen)
    if not removed:
        return doc
    weights: dict[str, float] = {}
    for term, tf in doc.weights.items():
        less = removed.get(term)
        if less is None:
            weights[term] = tf
        elif less != tf:
            weights[term] = tf - less
    return doc._replace(weights=weights)


def _document(
    ord_: int,
    heading: str | None,
    line: int,
    text: str,
    fields: list[tuple[Field, Counter[str]]],
    keys: tuple[int, ...] | None = None,
) -> SearchDocument:
    weights: dict[str, float] = {}
    length = 0
    for field, counts in fields:
        if not counts:
            continue
        length += counts.total()
        weight = FIELD_WEIGHTS[field]
        if not weights:
            # The first field's counts become the weights: as they are for the body (weight 1:
            # an int tf, loaded as the same DOUBLE), scaled otherwise. Weights are multiples of
            # 0.5 and counts small, so the sums are exact in any order.
            weights = cast("dict[str, float]", counts)
            if weight != 1.0:
                weights = {term: weight * count for term, count in counts.items()}
        else:
            get = weights.get
            for term, count in counts.items():
                weights[term] = get(term, 0) + weight * count
    if keys is None:
        keys = section_line_keys(heading, text) if ord_ > 0 else ()
    return SearchDocument(ord_, heading, line, text, length, weights, keys)


def note_key(note_id: str) -> int:
    """The integer key of a note in `postings`: 63 bits of BLAKE2b of its id (stable)."""
    digest = blake2b(note_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def postings_lines(number: int, documents: Sequence[SearchDocument]) -> list[str]:
    """A note's postings as TSV text `term, note number, ord, tf, length, note length`, one
    line per posting, in pieces of whole lines (loaded by `storage.search_rows.load_postings`).

    `tf` is the field-weighted frequency (Σ weight(field) · occurrences); weights are
    multiples of 0.5, so the sums are exact in binary floating point (an integer tf is
    written without a fraction: the same DOUBLE). Terms never hold white space (a tokenizer
    property), so the TSV needs no quoting. Line order carries no meaning.
    """
    note_length = sum(doc.length for doc in documents)
    out: list[str] = []
    for doc in documents:
        # The columns after the term are the document's: format them once. Most terms occur
        # once in the body: their lines are one `join` (half the cost of a line each).
        mid = f"\t{number}\t{doc.ord}\t"
        end = f"\t{doc.length}\t{note_length}\n"
        items = doc.weights.items()
        once = [term for term, tf in items if tf == 1]
        if once:
            sep = f"{mid}1{end}"
            out.append(sep.join(once) + sep)
        if len(once) < len(items):
            out += [f"{term}{mid}{tf}{end}" for term, tf in items if tf != 1]
    return out


POSTINGS_BUCKET_BOUNDS: tuple[str, ...] = (
    *"abcdefhlmprstu",
    "\u0080",  # every term that starts outside ASCII: accented Latin, Cyrillic, Greek, ...
    "\u3000",  # kana, Han, Hangul: the bulk of a Chinese, Japanese or Korean vault
    "\u4e00",
    "\u5a00",
    "\u6600",
    "\u7200",
    "\u8000",
    "\u9000",
    "\uac00",
)
"""The first characters that open a new bucket of a large build's postings
(`bucketed_postings_lines`), in code point order, which is DuckDB's order of VARCHAR: a term's
bucket never decreases as the term grows, so the buckets sorted one after the other are the
postings sorted by term. The cuts keep each bucket of an English vault's terms (and of a
Chinese or Japanese one's) to about a tenth of its postings or less."""

_BUCKET_OF_FIRST: dict[str, int] = {}


def postings_bucket(term: str) -> int:
    """The bucket of `term` (0 .. len(POSTINGS_BUCKET_BOUNDS)), by its first character."""
    first = term[0]
    bucket = _BUCKET_OF_FIRST.get(first)
    if bucket is None:
        bucket = _BUCKET_OF_FIRST[first] = bisect_right(POSTINGS_BUCKET_BOUNDS, first)
    return bucket


def bucketed_postings_lines(
    number: int, documents: Sequence[SearchDocument], buckets: list[list[str]]
) -> None:
    """`postings_lines`, each line appended to the list of its term's bucket
    (`postings_bucket`; `buckets` holds one list per bucket). A build too large to sort its
    postings in memory at once sorts them bucket by bucket instead (`storage.search_rows`)."""
    note_length = sum(doc.length for doc in documents)
    bucket_of = _BUCKET_OF_FIRST
    for doc in documents:
        mid = f"\t{number}\t{doc.ord}\t"
        end = f"\t{doc.length}\t{note_length}\n"
        for term, tf in doc.weights.items():
            bucket = bucket_of.get(term[0])
            if bucket is None:
                bucket = postings_bucket(term)
            buckets[bucket].append(f"{term}{mid}1{end}" if tf == 1 else f"{term}{mid}{tf}{end}")

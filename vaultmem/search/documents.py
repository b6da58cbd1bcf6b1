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
and the load re-tokenises, with `section_postings`, the few sections that hold boilerplate.
Lines inside fenced code are never candidates (`return (` in 15 notes is code, not a template);
a section's heading is one (`## This note in GitHub` over a footer); a line is compared without
its link destinations and URLs (a footer's "Edit on GitHub" link names the note's own file).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from vaultmem.models import Note
from vaultmem.search.tokenizer import DEFAULT_LANGUAGE, analyzer

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


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """One scored unit: `terms` holds (term, field, tf) triples; `length` counts all terms."""

    ord: int
    heading: str | None
    line: int
    text: str
    length: int
    terms: tuple[tuple[str, Field, int], ...]
    line_keys: tuple[int, ...] = ()
    """Sorted keys of the section's candidate boilerplate lines (`line_keys`); none for ord 0."""


def note_documents(note: Note, language: str = DEFAULT_LANGUAGE) -> list[SearchDocument]:
    """The note-level document followed by one document per non-empty section, its words
    stemmed for `language` (`[search] language`)."""
    tokenize = analyzer(language).tokenize
    docs = []
    fields: list[tuple[Field, list[str]]] = [
        ("title", tokenize(note.title)),
        ("alias", [t for alias in note.aliases for t in tokenize(alias)]),
        ("tag", [t for tag in note.tags for t in tokenize(tag)]),
    ]
    head_text = "\n".join([note.title, *note.aliases, *("#" + t for t in note.tags)])
    docs.append(_document(0, None, 1, head_text, fields))
    for i, section in enumerate(note.sections, start=1):
        fields = [
            ("heading", tokenize(section.heading) if section.heading else []),
            ("body", tokenize(section.text)),
        ]
        if not any(terms for _, terms in fields):
            continue
        doc = _document(i, section.heading, section.line, section.text, fields)
        docs.append(doc)
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


def _line_key(line: str) -> int | None:
    """63 bits of BLAKE2b of the line, link destinations and URLs removed, case-folded, white
    space collapsed; None for a line with no letter or digit (it yields no term either)."""
    if "](" in line or "://" in line:
        line = _DESTINATION.sub("]", line)
    norm = " ".join(line.split()).casefold()
    if not any(c.isalnum() for c in norm):
        return None
    digest = hashlib.blake2b(norm.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _keyed_lines(text: str) -> Iterator[tuple[str, int | None]]:
    """Each line of a section's text with its boilerplate key (None: never boilerplate: fenced
    code, its fence lines, lines without a letter or digit)."""
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            yield line, None
        elif stripped.startswith(_FENCES):
            fence = stripped[:3]
            yield line, None
        else:
            yield line, _line_key(line)


def line_keys(text: str) -> tuple[int, ...]:
    """The sorted distinct keys of a text's candidate boilerplate lines."""
    return tuple(sorted({key for _, key in _keyed_lines(text) if key is not None}))


def section_line_keys(heading: str | None, text: str) -> tuple[int, ...]:
    """A section's candidate lines: its heading's (a template's `## This note in GitHub`)
    and its text's."""
    key = _line_key(heading) if heading else None
    return tuple(sorted({*line_keys(text), *([key] if key is not None else [])}))


def section_postings(
    heading: str | None, text: str, boilerplate: frozenset[int], language: str = DEFAULT_LANGUAGE
) -> dict[str, float]:
    """A section's postings (term -> field-weighted tf) with its `boilerplate` lines left out.

    With no boilerplate line in the section it is exactly what `note_documents` and
    `postings_lines` produce, which keeps an index that re-scores sections equal to a rebuild.
    """
    tokenize = analyzer(language).tokenize
    kept = "\n".join(line for line, key in _keyed_lines(text) if key not in boilerplate)
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


def _document(
    ord_: int, heading: str | None, line: int, text: str, fields: list[tuple[Field, list[str]]]
) -> SearchDocument:
    triples = tuple(
        (term, field, count)
        for field, terms in fields
        for term, count in sorted(Counter(terms).items())
    )
    keys = section_line_keys(heading, text) if ord_ > 0 else ()
    return SearchDocument(
        ord_, heading, line, text, sum(len(terms) for _, terms in fields), triples, keys
    )


def note_key(note_id: str) -> int:
    """The integer key of a note in `postings`: 63 bits of BLAKE2b of its id (stable)."""
    digest = hashlib.blake2b(note_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def postings_lines(number: int, documents: Sequence[SearchDocument]) -> Iterator[str]:
    """A note's postings as TSV lines `term, note number, ord, tf, length, note length`
    (loaded by `storage.search_rows.load_postings`).

    `tf` is the field-weighted frequency (Σ weight(field) · occurrences); weights are
    multiples of 0.5, so the sums are exact in binary floating point. Terms never hold white
    space (a tokenizer property), so the TSV needs no quoting.
    """
    note_length = sum(doc.length for doc in documents)
    for doc in documents:
        # the columns after the term are the document's: format them once (a third faster)
        mid = f"\t{number}\t{doc.ord}\t"
        end = f"\t{doc.length}\t{note_length}\n"
        yield from [f"{term}{mid}{tf_w!r}{end}" for term, tf_w in _weighted(doc.terms).items()]


def _weighted(terms: Sequence[tuple[str, Field, int]]) -> dict[str, float]:
    """term -> Σ weight(field) · occurrences."""
    weighted: dict[str, float] = {}
    get = weighted.get
    for term, field, tf in terms:
        weighted[term] = get(term, 0.0) + FIELD_WEIGHTS[field] * tf
    return weighted

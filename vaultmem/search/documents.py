"""Search documents: how a note is cut into the units BM25 scores (pure, no I/O).

A note becomes one note-level document (ord 0: its title, aliases and tags) plus one
document per section (ord 1, 2, …: the heading and the text under it). Searching sections
rather than whole notes finds the passage that answers a question, and lets a long note's
unrelated sections stay out of its score. Each document carries its terms with their
frequencies per field; the index stores them as postings.
"""

from __future__ import annotations

import hashlib
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
        docs.append(_document(i, section.heading, section.line, section.text, fields))
    return docs


def _document(
    ord_: int, heading: str | None, line: int, text: str, fields: list[tuple[Field, list[str]]]
) -> SearchDocument:
    triples = tuple(
        (term, field, count)
        for field, terms in fields
        for term, count in sorted(Counter(terms).items())
    )
    return SearchDocument(
        ord_, heading, line, text, sum(len(terms) for _, terms in fields), triples
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
        weighted: dict[str, float] = {}
        get = weighted.get
        for term, field, tf in doc.terms:
            weighted[term] = get(term, 0.0) + FIELD_WEIGHTS[field] * tf
        # the columns after the term are the document's: format them once (a third faster)
        mid = f"\t{number}\t{doc.ord}\t"
        end = f"\t{doc.length}\t{note_length}\n"
        yield from [f"{term}{mid}{tf_w!r}{end}" for term, tf_w in weighted.items()]

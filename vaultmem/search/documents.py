"""Search documents: how a note is cut into the units BM25 scores (pure, no I/O).

A note becomes one note-level document (ord 0: its title, aliases and tags) plus one
document per section (ord 1, 2, …: the heading and the text under it). Searching sections
rather than whole notes finds the passage that answers a question, and lets a long note's
unrelated sections stay out of its score. Each document carries its terms with their
frequencies per field; the index stores them as postings.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from vaultmem.models import Note
from vaultmem.search.tokenizer import tokenize

Field = str
FIELD_WEIGHTS: dict[Field, float] = {
    "title": 3.0,
    "alias": 3.0,
    "heading": 2.0,
    "tag": 1.5,
    "body": 1.0,
}
"""How much one occurrence counts, per field: title and aliases above headings above tags above
body. BM25 sees the weighted sum of a term's frequencies in a document (a BM25F-style blend)."""


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """One scored unit: `terms` holds (term, field, tf) triples; `length` counts all terms."""

    ord: int
    heading: str | None
    line: int
    text: str
    length: int
    terms: tuple[tuple[str, Field, int], ...]


def note_documents(note: Note) -> list[SearchDocument]:
    """The note-level document followed by one document per non-empty section."""
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

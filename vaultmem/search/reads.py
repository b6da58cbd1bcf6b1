"""What a query reads from the index, behind one interface with two sources.

`query.py` ranks notes from a handful of reads: the statistics of the notes the filters keep,
the query terms' postings in those notes, the notes holding an excluded term, the ranked
notes' rows and the sections their hits show, plus the SQL-only reads of phrases and typos
(index terms near a missing one). `SearchReads` names them; a query makes its choice once,
when it opens them for its filter:

- `SqlReads` reads the index's tables on a DuckDB connection (`storage/search_queries.py`
  holds the SQL): what a one-shot CLI search, and a process's first search, use;
- `resident.ResidentReads` reads the index a long-lived process holds in memory
  (`search/resident.py`), and the phrase and typo reads through `SqlReads`.

Both return the same rows in the same shapes, so `bm25.rank` gives the same results from
either (tests/search/test_resident.py compares them). This module imports neither numpy nor
`resident.py`: a cold CLI search loads only the SQL side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from vaultmem.search.bm25 import Stats
from vaultmem.storage import search_queries as queries

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import TypeAlias

    import numpy.typing as npt

    from vaultmem.search.bm25 import Row
    from vaultmem.storage.store import Connection

    Postings: TypeAlias = Sequence[Row] | Mapping[str, npt.NDArray[Any]]
    """What `bm25.rank` reads: rows as tuples, or the same rows as numpy columns."""


class SearchReads(Protocol):
    """A query's reads of the index, restricted to the notes its filter keeps where a read
    says so. Every method returns what the `storage/search_queries.py` function of the same
    name returns."""

    def collection_stats(self) -> Stats:
        """Statistics of the kept notes."""
        ...

    def term_postings(self, terms: list[str], *, columns_from: int) -> Postings:
        """The postings of `terms` in the kept notes (`bm25.POSTING_COLUMNS`): a list of
        tuples below `columns_from` rows, numpy columns from there."""
        ...

    def keys_with_terms(self, terms: tuple[str, ...]) -> frozenset[int]:
        """Keys of the notes (kept or not) holding any of `terms`: a query's -exclusions."""
        ...

    def note_rows(self, keys: list[int]) -> dict[int, queries.NoteRow]:
        """note key → (id, path, title, scope, scope_id)."""
        ...

    def compounds_ending_with(self, words: list[str], longer_by: int) -> list[str]:
        """Index terms of letters alone ending with one of `words`, `longer_by`+ longer."""
        ...

    def note_sections(self, note_ids: list[str]) -> dict[str, dict[int, queries.Section]]:
        """Heading, line and text of every section (ord > 0) of these notes."""
        ...

    def known_terms(self, terms: list[str]) -> dict[str, int]:
        """df of those of `terms` the index holds."""
        ...

    def nearest_terms(self, term: str, max_distance: int, limit: int) -> list[str]:
        """Index terms within `max_distance` edits of `term`, closest and most frequent first."""
        ...

    def phrase_candidates(
        self, needed: tuple[str, ...], *, k1: float, b: float
    ) -> list[tuple[str, int, float]]:
        """(note_id, ord, bm25) of the kept notes' documents holding every `needed` term."""
        ...

    def document_texts(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, str]]:
        """Heading and text of documents, by (note_id, ord)."""
        ...


class SqlReads:
    """`SearchReads` over the index's tables on one DuckDB connection."""

    __slots__ = ("con", "notes")

    def __init__(self, con: Connection, notes: queries.NoteFilter):
        self.con = con
        self.notes = notes

    def collection_stats(self) -> Stats:
        return Stats(*queries.collection_stats(self.con, self.notes))

    def term_postings(self, terms: list[str], *, columns_from: int) -> Postings:
        return queries.term_postings(self.con, terms, self.notes, columns_from=columns_from)

    def keys_with_terms(self, terms: tuple[str, ...]) -> frozenset[int]:
        return queries.keys_with_terms(self.con, terms)

    def compounds_ending_with(self, words: list[str], longer_by: int) -> list[str]:
        return queries.compounds_ending_with(self.con, words, longer_by)

    def note_rows(self, keys: list[int]) -> dict[int, queries.NoteRow]:
        return queries.note_rows(self.con, keys)

    def note_sections(self, note_ids: list[str]) -> dict[str, dict[int, queries.Section]]:
        return queries.note_sections(self.con, note_ids) if note_ids else {}

    def known_terms(self, terms: list[str]) -> dict[str, int]:
        return queries.known_terms(self.con, terms)

    def nearest_terms(self, term: str, max_distance: int, limit: int) -> list[str]:
        return queries.nearest_terms(self.con, term, max_distance, limit)

    def phrase_candidates(
        self, needed: tuple[str, ...], *, k1: float, b: float
    ) -> list[tuple[str, int, float]]:
        return queries.document_scores(
            self.con, list(needed), needed=needed, k1=k1, b=b, notes=self.notes
        )

    def document_texts(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, str]]:
        return queries.document_texts(self.con, keys)

"""The resident search index: a warm process's copy of what a query reads, held in memory.

A long-lived process (the MCP server, `watch`, a library user) searches many times against an
index that rarely changes. Reading the query terms' postings, the statistics, the ranked notes'
rows and the shown sections from DuckDB cost ~10 ms a query at 10,000 notes, most of it in
statement overhead; from arrays in memory it is a few slices. So a process's second search
(`Vault.search`) starts loading the whole search side of the index, in a thread, once:

- the term dictionary (term → id) and the postings as CSR by term: `offsets[id]:offsets[id+1]`
  index the note (`post_note`, an index into the note arrays), `post_ord`, `post_tf` and
  `post_length` columns;
- the notes by key (`note_keys`, sorted; each note's length; its id, path, title, scope and
  scope id) and every document's note and length (the statistics under filters);
- every section's heading, line and text (snippets).

It is tied to the index file's signature (`store.SharedReader.signature`: inode, size and
mtime of the file and its WAL): when another process writes, the reader reopens with another
signature and the next search loads afresh, so a write is seen exactly when the SQL path sees
it. Only indexes up to MAX_POSTINGS postings are held (+94 MB of RSS at 10,000 generated notes,
2.2 million postings); beyond, for a process's first search (a one-shot CLI) and until a load
is done, SQL serves.

A query reads it through `ResidentReads`, one of the two sources of `search/reads.py`'s
`SearchReads`. Every answer equals the SQL source's (`SqlReads`, `storage/search_queries.py`):
the same posting rows go to the same scorer (`bm25.rank`), statistics are counted the same way,
filters keep the notes one SQL read of `notes` returns. Phrase candidates and fuzzy term lookup
stay in SQL (phrases and typos are rare); exclusions are read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vaultmem.search.bm25 import NOTE_ORDER, Stats
from vaultmem.search.reads import SqlReads
from vaultmem.storage import search_queries as queries

if TYPE_CHECKING:
    import numpy.typing as npt

    from vaultmem.search.bm25 import Row
    from vaultmem.storage.store import Connection

MAX_POSTINGS = 5_000_000
"""The largest index (in postings) held resident: ~200 MB of RSS at this size with generated
notes (measured +94 MB at 2.2 M postings, 10,000 notes; docs/search.md). At 100,000 notes
(22 M postings: +0.9 GB, a 2 GB peak and seconds to load after each write) SQL serves: it is
within 2× of FTS5 there already."""


@dataclass(eq=False, slots=True)
class Resident:
    """One index's search data in memory (module docstring); immutable once loaded."""

    signature: tuple[int, ...]
    terms: dict[str, int]
    offsets: npt.NDArray[np.int64]
    post_note: npt.NDArray[np.int32]
    post_ord: npt.NDArray[np.int32]
    post_tf: npt.NDArray[np.float64]
    post_length: npt.NDArray[np.int32]
    note_keys: npt.NDArray[np.int64]
    note_length: npt.NDArray[np.int64]
    notes: list[queries.NoteRow]
    note_index: dict[str, int]
    doc_note: npt.NDArray[np.int32]
    doc_length: npt.NDArray[np.int64]
    sections: list[dict[int, queries.Section]]
    stats: tuple[float, float, float, float]

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays and the section texts (the bulk of what it holds)."""
        arrays = (
            self.offsets,
            self.post_note,
            self.post_ord,
            self.post_tf,
            self.post_length,
            self.note_keys,
            self.note_length,
            self.doc_note,
            self.doc_length,
        )
        texts = sum(len(s[2]) for note in self.sections for s in note.values())
        return sum(a.nbytes for a in arrays) + texts

    def reads(self, con: Connection, notes: queries.NoteFilter) -> ResidentReads:
        """A query's reads (`search/reads.py`) from this index, for the notes `notes` keeps;
        `con` answers what stays in SQL (the filter's notes, phrases, typos)."""
        return ResidentReads(con, notes, self)


class ResidentReads(SqlReads):
    """`reads.SearchReads` from a `Resident`: statistics, postings, exclusions, note rows and
    sections from its arrays; the filter's notes (one read of `notes`), phrases and typos
    from SQL, as `SqlReads` reads them."""

    __slots__ = ("held", "kept")

    def __init__(self, con: Connection, notes: queries.NoteFilter, held: Resident):
        super().__init__(con, notes)
        self.held = held
        self.kept: npt.NDArray[np.bool_] | None = None
        """Which notes (by index into the note arrays) the filter keeps; None keeps all."""
        if notes.active:
            keys = np.asarray(queries.kept_note_keys(con, notes), dtype=np.int64)
            self.kept = np.zeros(len(held.note_keys), dtype=bool)
            self.kept[np.searchsorted(held.note_keys, keys)] = True  # the same index's notes

    def collection_stats(self) -> Stats:
        """Counted from the kept notes' documents, as `search_queries.collection_stats`."""
        kept, held = self.kept, self.held
        if kept is None:
            return Stats(*held.stats)
        in_kept = kept[held.doc_note]
        n = int(np.count_nonzero(in_kept))
        total = int(held.doc_length[in_kept].sum())
        nn = len(np.unique(held.doc_note[in_kept]))
        return Stats(float(n), float(total) / max(n, 1), float(nn), float(total) / max(nn, 1))

    def term_postings(
        self, terms: list[str], *, columns_from: int
    ) -> list[Row] | dict[str, npt.NDArray[Any]]:
        """The same rows as `search_queries.term_postings`, in the same two shapes."""
        kept, held = self.kept, self.held
        found = [
            (i, tid) for i, term in enumerate(terms) if (tid := held.terms.get(term)) is not None
        ]
        if not found:
            return []
        # Every found term's run of rows (`offsets[t]:offsets[t+1]`) as one index array, built
        # with a fixed number of numpy calls whatever the number of terms.
        tids = np.array([tid for _, tid in found], dtype=np.int64)
        starts, counts = held.offsets[tids], held.offsets[tids + 1] - held.offsets[tids]
        first = np.cumsum(counts) - counts  # each run's first position in `picked`
        picked = np.arange(int(counts.sum())) + np.repeat(starts - first, counts)
        term_index = np.repeat(np.array([i for i, _ in found], dtype=np.int32), counts)
        if kept is not None:
            keep = kept[held.post_note[picked]]
            picked, term_index = picked[keep], term_index[keep]
        if not len(picked):
            return []
        note = held.post_note[picked]
        columns = {
            "term": term_index,
            "note_key": held.note_keys[note],
            "ord": held.post_ord[picked],
            "tf": held.post_tf[picked],
            "length": held.post_length[picked],
            "note_length": held.note_length[note],
        }
        if len(picked) >= columns_from:
            return {**columns, NOTE_ORDER: note}  # note numbers sort as their keys do
        return list(zip(*(c.tolist() for c in columns.values()), strict=True))

    def known_terms(self, terms: list[str]) -> dict[str, int]:
        """A term's df is its run of postings (one row per document), as `terms.df` counts:
        every query asks it, so it is answered from memory too."""
        held = self.held
        offsets = held.offsets
        return {
            term: int(offsets[tid + 1] - offsets[tid])
            for term in terms
            if (tid := held.terms.get(term)) is not None
        }

    def keys_with_terms(self, terms: tuple[str, ...]) -> frozenset[int]:
        held = self.held
        found = [held.terms[t] for t in terms if t in held.terms]
        if not found:
            return frozenset()
        notes = np.concatenate(
            [held.post_note[held.offsets[t] : held.offsets[t + 1]] for t in found]
        )
        return frozenset(held.note_keys[np.unique(notes)].tolist())

    def note_rows(self, keys: list[int]) -> dict[int, queries.NoteRow]:
        held = self.held
        where = np.searchsorted(held.note_keys, np.asarray(keys, dtype=np.int64))
        return {key: held.notes[i] for key, i in zip(keys, where.tolist(), strict=True)}

    def note_sections(self, note_ids: list[str]) -> dict[str, dict[int, queries.Section]]:
        held = self.held
        out: dict[str, dict[int, queries.Section]] = {}
        for note_id in note_ids:
            i = held.note_index.get(note_id)
            if i is not None and held.sections[i]:
                out[note_id] = held.sections[i]
        return out


def load(con: Connection, signature: tuple[int, ...], max_postings: int) -> Resident | None:
    """Read the index's search data into memory; None when it holds more than `max_postings`
    postings, or when its tables disagree (a note key in postings that `notes` lacks)."""
    tables = queries.resident_tables(con, max_postings)
    if tables is None:
        return None
    notes: list[tuple[int, str, str, str, str, str | None]] = tables["notes"]
    note_keys = np.array([n[0] for n in notes], dtype=np.int64)
    postings = tables["postings"]
    order = np.argsort(postings["term"], kind="stable")
    post_keys = postings["note_key"][order]
    post_note = np.searchsorted(note_keys, post_keys)
    if len(post_note) and (
        post_note.max() >= len(note_keys) or not np.array_equal(note_keys[post_note], post_keys)
    ):
        return None
    post_note = post_note.astype(np.int32)
    note_length = np.zeros(len(note_keys), dtype=np.int64)
    note_length[post_note] = postings["note_length"][order]
    counts = np.bincount(postings["term"], minlength=len(tables["terms"]))
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])

    documents: list[tuple[int, int, str | None, int, int, str]] = tables["documents"]
    doc_note = np.searchsorted(note_keys, np.array([d[0] for d in documents], dtype=np.int64))
    sections: list[dict[int, queries.Section]] = [{} for _ in notes]
    for (_, ord_, heading, line, _, text), i in zip(documents, doc_note.tolist(), strict=True):
        if ord_ > 0:
            sections[i][ord_] = (heading, line, text)
    return Resident(
        signature=signature,
        terms={term: i for i, term in enumerate(tables["terms"])},
        offsets=offsets,
        post_note=post_note,
        post_ord=postings["ord"][order].astype(np.int32),
        post_tf=postings["tf"][order].astype(np.float64),
        post_length=postings["length"][order].astype(np.int32),
        note_keys=note_keys,
        note_length=note_length,
        notes=[(n[1], n[2], n[3], n[4], n[5]) for n in notes],
        note_index={n[1]: i for i, n in enumerate(notes)},
        doc_note=doc_note.astype(np.int32),
        doc_length=np.array([d[4] for d in documents], dtype=np.int64),
        sections=sections,
        stats=tables["stats"],
    )

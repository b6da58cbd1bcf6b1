"""How a parsed note becomes index rows: one place that knows the table layout for notes.

Pure formatting, no DuckDB: the parse workers call it, and they never import the database.
A note's rows are *staged* before ids exist (ids are assigned once every note's claim is
known): each row names its note by the note's *number* in the run instead of its id. A chunk
of notes is written as one JSON object per table (`StagedRows.write`), mapping each column
name to the list of its values, so a chunk costs one `json.dumps` per table rather than one
per row (half the formatting time); a process appends its chunks' objects to one file per
table (in parts: `storage.staged_files`). `storage.index_writes.load_staged` bulk-loads the
files with DuckDB's JSON reader, a bounded group a statement, unnests the lists and swaps
numbers for ids with one join. JSON
escapes every character, so no text a note holds (tabs, newlines, quotes) can break a row.

Two columns are left for the load to fill: `links.target_id` (a join on the target's path,
once every note has its id) and, for a link into another note with a heading or block
subpath, `links.subpath_found` (the target's headings are in the index only after the load).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from vaultmem.core.documents import SearchDocument
from vaultmem.core.models import Scope
from vaultmem.core.note_model import Note, Resolution
from vaultmem.note.links import file_name_key, fold_name, link_name_key
from vaultmem.storage.schema import table_docs
from vaultmem.storage.staged_files import part_path

PRECUT_WEIGHTS = ".precut.tsv"
"""The suffix of a parse worker's file of boilerplate weights cut early (`index.early_cut`):
TSV of `term, number, ord, tf`, as `documents.boilerplate_tsv_lines` writes them; the load
reads it (`search_rows`)."""
PRECUT_LINES = ".precut-lines.tsv"
"""The suffix of a parse worker's file of the lines it cut, per section: TSV of `number, ord,
line key`."""

if TYPE_CHECKING:  # a type only: loading the index need not import the topic parser
    from vaultmem.note.topics import Topic

NOTE_TABLES = (
    "notes",
    "aliases",
    "tags",
    "headings",
    "blocks",
    "links",
    "documents",
    "termless_sections",
    "postings",
    "vectors",
)
"""Tables holding one note's rows, keyed by `note_id` (`source_id` for links, the integer
`note_key` for postings: the id string took a third of the index). Postings arrive as TSV files
from the parse workers (`search.documents.postings_lines`), not as staged rows; vectors as
Parquet files, embedded by the parse workers too (`search.embedding.stage_vectors`)."""

STAGED_TABLES = tuple(t for t in NOTE_TABLES if t not in ("postings", "vectors"))

NOTE_KEY = {
    t: "id"
    if t == "notes"
    else "source_id"
    if t == "links"
    else "note_key"
    if t == "postings"
    else "note_id"
    for t in NOTE_TABLES
}
"""The column of each note table that holds the note's id (its number while staged; postings
hold the id's `core.documents.note_key`)."""

COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    t.name: tuple((c.name, c.type) for c in t.columns) for t in table_docs()
}
"""(column, SQL type) of every table, in DDL order: the staged files use the same names."""

COMPUTED = {("notes", "note_key")}
"""Columns the load computes (from the number → id map), never staged."""

STAGED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    t: tuple(c for c in COLUMNS[t] if (t, c[0]) not in COMPUTED) for t in STAGED_TABLES
}
"""(column, SQL type) of each staged table's files: its columns less the computed ones."""


class NoteRecord(NamedTuple):
    """A parsed note with everything a worker decided about it (no id: `number` stands in)."""

    note: Note
    number: int
    scope: Scope
    scope_id: str | None
    managed: bool
    size: int
    mtime_ns: int
    content_hash: str
    claimed_id: str | None
    resolutions: Sequence[Resolution]
    documents: Sequence[SearchDocument]
    topic: Topic | None = None
    """For a managed topic, what its file says of itself (either topic form)."""


STRUCTURE_TABLES = ("aliases", "tags", "headings", "blocks", "links")
"""The note tables whose rows `notes.structure` digests: what an edit of a note's text alone
(the usual save) leaves as it was, so the write leaves them in place (`index_writes`)."""


def structure_digest(children: dict[str, list[tuple[object, ...]]]) -> str:
    """BLAKE2b-64 hex of a note's `STRUCTURE_TABLES` rows as staged, without the note's number
    in the run (the first value of each) and without what a link resolved to (its last three:
    target path, target id, subpath found): those follow the other files and notes, and the
    write keeps them current in stored rows (`index.transaction.reresolve`), so the digest is
    the note's own and equals a rebuild's. Written as JSON: exact for strings, numbers,
    booleans and None, and the same bytes in every process (a pickle is not: it shares an
    object met twice, so equal rows could pickle differently)."""
    rows = [
        [row[1:-3] if table == "links" else row[1:] for row in children[table]]
        for table in STRUCTURE_TABLES
    ]
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class StagedRows:
    """Rows of some notes, table by table, held as tuples until written (then turned into
    column lists in one C-level `zip`: a third of the cost of appending value by value)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[object, ...]]] = {t: [] for t in STAGED_TABLES}

    def add_note(self, rec: NoteRecord) -> str:
        """Stage the note's rows; return its `notes.structure` (`structure_digest`)."""
        note = rec.note
        fm = note.frontmatter
        n = rec.number
        topic = rec.topic
        rows = self.rows
        path = note.path
        children: dict[str, list[tuple[object, ...]]] = {
            "aliases": [(n, alias, name_key(alias)) for alias in note.aliases],
            "tags": [(n, *tag) for tag in expand_tags(note.tags)] if note.tags else [],
            "headings": [
                (n, ord_, h.level, h.text, h.anchor, h.line) for ord_, h in enumerate(note.headings)
            ],
            "blocks": [(n, block.id, block.line) for block in note.blocks],
            "links": [
                (
                    n,
                    ord_,
                    link.kind,
                    link.relation,
                    link.raw,
                    link.target,
                    link.subpath,
                    link.display,
                    link.embed,
                    link.line,
                    link_key(link.target, path),
                    res.path,
                    None,  # target_id: filled by the load
                    res.subpath_found,
                )
                for ord_, (link, res) in enumerate(zip(note.links, rec.resolutions, strict=True))
            ],
        }
        structure = structure_digest(children)
        rows["notes"].append(
            (
                n,
                note.path,
                note.title,
                rec.scope,
                rec.scope_id,
                (topic.type if topic else None) or _string(fm.get("type")),
                rec.managed,
                json.dumps(fm, ensure_ascii=False, sort_keys=True) if fm else None,
                note.frontmatter_status,
                (topic.created if topic else None)
                or _string(fm.get("created"))
                or _string(fm.get("date")),
                (topic.updated if topic else None) or _string(fm.get("updated")),
                rec.size,
                rec.mtime_ns,
                rec.content_hash,
                rec.claimed_id,
                structure,
            )
        )
        for table, staged in children.items():
            rows[table] += staged
        rows["documents"] += [
            (n, doc.ord, doc.heading, doc.line, doc.length, doc.text, doc.line_keys)
            for doc in rec.documents
        ]
        if len(rec.documents) <= len(note.sections):  # a section made no document
            ords = {doc.ord for doc in rec.documents}
            rows["termless_sections"] += [
                (n, ord_, section.heading, section.line, section.text)
                for ord_, section in enumerate(note.sections, start=1)
                if ord_ not in ords
            ]
        return structure

    def write(self, folder: Path, stem: str) -> dict[str, tuple[Path, int]]:
        """Append one object per table that has rows, `{column: [values]}`, to
        `<stem>.<table>.json` (created on first use; from `staged_files.PART_BYTES` on, to a
        next part): {table: (file, the object's bytes)}. A worker appends every chunk of a
        run to the same files (`parallel.process_stem`); DuckDB reads the objects one after
        the other, and its buffer must hold the largest."""
        out: dict[str, tuple[Path, int]] = {}
        for table, rows in self.rows.items():
            if rows:
                path = part_path(folder, stem, table)
                names = [name for name, _ in STAGED_COLUMNS[table]]
                columns = zip(*rows, strict=True)
                text = json.dumps(dict(zip(names, columns, strict=True)))  # ASCII: a char a byte
                with open(path, "a", encoding="utf-8", newline="\n") as handle:
                    handle.write(text)
                out[table] = (path, len(text))
        return out


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def name_key(text: str) -> str:
    return fold_name(text)


def link_key(target: str, source_path: str) -> str:
    """The files.name_key a link can resolve to; a self-link's key is its own note's."""
    return link_name_key(target) if target else file_name_key(source_path)


def expand_tags(tags: Sequence[str]) -> list[tuple[str, str, bool]]:
    """(tag, written, inherited) rows: each tag lower-cased, plus every parent of a nested tag."""
    rows: dict[str, tuple[str, str, bool]] = {}
    for written in tags:
        tag = written.casefold()
        if tag not in rows or rows[tag][2]:
            rows[tag] = (tag, written, False)
        parts = written.split("/")
        for i in range(1, len(parts)):
            parent_written = "/".join(parts[:i])
            parent = parent_written.casefold()
            if parent and parent not in rows:
                rows[parent] = (parent, parent_written, True)
    return list(rows.values())

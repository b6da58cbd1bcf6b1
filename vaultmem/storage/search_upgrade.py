"""The SQL of a search-table upgrade: a new index file made from the old one without the vault.

`index.upgrade` drives it. The new file gets the current schema, the old index attached
read-only (readers go on reading the old file meanwhile), every table but the search ones
copied as it is, and the notes numbered (`note_numbers`, as a build numbers them) so that the
re-cut search documents load as a build loads them: `documents` from the workers' lengths and
line keys joined to the old sections' text, `termless_sections` for the sections left without a
term, then `search_rows.build_postings` (which counts `terms` and `search_stats` too), as in a
build from nothing.

A segmentation-only upgrade works in the index itself instead (`index.upgrade`): the notes
whose text holds a character of the changed scripts are numbered (`number_scoped_notes`),
their sections kept aside (`save_scoped_sections`) while their rows go, and their new
documents loaded from them (`load_scoped_documents`); their postings load as an edit's do.

What a note's documents are made of is all in the index (`core.documents.documents_of`): the
title (`notes.title`), the `lang` property (`notes.frontmatter`), the aliases, the tags as
written (the `tags` rows not inherited), and every section in order: `documents` of ord 1…
and `termless_sections`. Aliases and tags come back in no particular order; their terms are
the same in any order (no word spans a line break), and the ord-0 document's text (which
lists them in the note's order) is copied.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from vaultmem.core.documents import SearchDocument
from vaultmem.storage import store
from vaultmem.storage.schema import DERIVED_TABLES, SEARCH_TABLES, table_docs
from vaultmem.storage.staged_files import statement_groups
from vaultmem.storage.store import Connection

REMADE_TABLES = ("documents", "termless_sections", *SEARCH_TABLES)
"""Tables an upgrade makes again; every other table of the schema is copied."""

COPIED_TABLES = tuple(
    t.name for t in table_docs() if t.name != "meta" and t.name not in REMADE_TABLES
)
assert set(DERIVED_TABLES) <= {*COPIED_TABLES, *REMADE_TABLES}

_OLD = "old_index"


def _sections(
    where: str = "", *, note_level: bool = False, keys: bool = False, old: bool = True
) -> str:
    """Every section of the old index (`old` False: of the connection's own index) with its
    note's number: documents of ord 1… and the termless sections (and, `note_level`, the ord-0
    documents); `keys`: their line keys too (NULL for a termless section, which stores none)."""
    ords = "" if note_level else " WHERE ord > 0"
    stored, none, picked = ("", "", "")
    if keys:
        stored, none, picked = ", line_keys", ", NULL::BIGINT[]", ", s.line_keys"
    schema = f"{_OLD}." if old else ""
    return (
        f"SELECT m.number, s.note_id, s.ord, s.heading, s.line, s.text{picked} FROM ("
        f"SELECT note_id, ord, heading, line, text{stored} FROM {schema}documents{ords} "
        f"UNION ALL SELECT note_id, ord, heading, line, text{none} FROM {schema}termless_sections"
        f") s JOIN note_numbers m USING (note_id){where}"
    )


def attach_old(con: Connection, old: Path) -> None:
    """Attach the index being upgraded, read-only, to the new file's connection."""
    store.SharedReader.release_all(old)  # one DuckDB instance per file in a process
    quoted = str(old).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS {_OLD} (READ_ONLY)")


def detach_old(con: Connection) -> None:
    con.execute(f"DETACH {_OLD}")


def old_boilerplate_lines(con: Connection) -> frozenset[int]:
    """The old index's boilerplate line keys: the lines a build counts again, unless the
    sections holding them changed (a section that gained or lost every term)."""
    rows = con.execute(f"SELECT line_key FROM {_OLD}.boilerplate_lines").fetchall()
    return frozenset(int(k) for (k,) in rows)


def _indexed_texts() -> str:
    """Every text of a note that its search documents are made of, with the note's id."""
    return (
        "SELECT note_id, text AS t FROM documents UNION ALL SELECT note_id, heading FROM "
        "documents UNION ALL SELECT note_id, text FROM termless_sections UNION ALL SELECT "
        "note_id, heading FROM termless_sections UNION ALL SELECT id, title FROM notes "
        "UNION ALL SELECT note_id, alias FROM aliases UNION ALL SELECT note_id, written FROM tags"
    )


def _character_class(ranges: str) -> str:
    """A regex class (RE2, DuckDB's dialect) of `ranges`: characters and `a-z` ranges."""
    return "[" + "".join(c if c == "-" else f"\\x{{{ord(c):x}}}" for c in ranges) + "]"


def number_scoped_notes(con: Connection, ranges: str) -> list[str]:
    """Number the notes of the connection's index whose indexed text holds a character of
    `ranges`, as temp table `note_numbers` (number, note_id, note_key): the notes a scoped
    upgrade cuts again (`note_sources`, `save_scoped_sections`, `load_scoped_documents`, and
    `search_rows.load_postings` all join it). Returns their ids, in number order."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE note_numbers AS SELECT "
        "(row_number() OVER (ORDER BY id) - 1)::INTEGER AS number, id AS note_id, note_key "
        f"FROM notes WHERE id IN (SELECT note_id FROM ({_indexed_texts()}) "
        "WHERE regexp_matches(t, $1))",
        [_character_class(ranges)],
    )
    rows = con.execute("SELECT note_id FROM note_numbers ORDER BY number").fetchall()
    return [str(note_id) for (note_id,) in rows]


def save_scoped_sections(con: Connection) -> None:
    """Keep the numbered notes' sections (every document, ord 0 too, and termless section) in
    temp table `scoped_sections` before their rows go: their new documents take heading, line
    and text from it (`load_scoped_documents`)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE scoped_sections AS " + _sections(note_level=True, old=False)
    )


def drop_scoped_sections(con: Connection) -> None:
    """Delete the numbered notes' documents, termless sections and vectors (their postings go
    with `search_rows.delete_postings`, which counts what they held)."""
    for table in ("documents", "termless_sections", "vectors"):
        con.execute(f"DELETE FROM {table} WHERE note_id IN (SELECT note_id FROM note_numbers)")


def load_scoped_documents(con: Connection, files: Sequence[Path]) -> None:
    """The numbered notes' `documents` from the workers' files (as `load_documents` reads
    them) joined to `scoped_sections`, then their `termless_sections`: the sections that made
    no document now."""
    _insert_cut_documents(con, files, "scoped_sections")
    con.execute(
        "INSERT INTO termless_sections SELECT s.note_id, s.ord, s.heading, s.line, s.text "
        "FROM scoped_sections s ANTI JOIN documents d ON d.note_id = s.note_id AND d.ord = s.ord "
        "WHERE s.ord > 0"
    )
    con.execute("DROP TABLE scoped_sections")


def _insert_cut_documents(con: Connection, files: Sequence[Path], sections: str) -> None:
    """`documents` from the workers' files (number, ord, length, line_keys per document), each
    joined on (number, ord) to the row of `sections` (a table or a parenthesised query with
    number, ord, note_id, heading, line and text) that gives its note, heading, line and
    text."""
    paths = [str(p) for p in files]
    if not paths:
        return
    size = max(max(os.path.getsize(p) for p in paths) + 1, 16 * 1024 * 1024)
    spec = (
        "{'number': 'INTEGER[]', 'ord': 'INTEGER[]', 'length': 'INTEGER[]', "
        "'line_keys': 'BIGINT[][]'}"
    )
    cut = (
        "SELECT unnest(number) AS number, unnest(ord) AS ord, unnest(length) AS length, "
        f"unnest(line_keys) AS line_keys FROM read_json($1, format='unstructured', "
        f"columns={spec}, maximum_object_size={size})"
    )

    def insert(source: str) -> str:
        return (
            "INSERT INTO documents SELECT s.note_id, w.ord, s.heading, s.line, w.length, "
            f"s.text, w.line_keys FROM {source} w "
            f"JOIN {sections} s ON s.number = w.number AND s.ord = w.ord"
        )

    groups = statement_groups(paths)  # DuckDB holds a statement's files whole
    if len(groups) == 1:
        con.execute(insert(f"({cut})"), [groups[0]])
        return
    # More than one statement's worth: the files are read a group at a time into a table of
    # their few columns, so `sections` (every text of the index) is joined once, not per group.
    con.execute(
        "CREATE OR REPLACE TEMP TABLE cut_documents "
        "(number INTEGER, ord INTEGER, length INTEGER, line_keys BIGINT[])"
    )
    for group in groups:
        con.execute(f"INSERT INTO cut_documents {cut}", [group])
    con.execute(insert("cut_documents"))
    con.execute("DROP TABLE cut_documents")


def set_meta(con: Connection, values: Mapping[str, str]) -> None:
    """Set these `meta` keys (added when missing), in place: an upgrade made in the index
    itself (a segmentation-only one, or another release of the same analysis)."""
    for key, value in sorted(values.items()):
        con.execute("DELETE FROM meta WHERE key = $1", [key])
        con.execute("INSERT INTO meta VALUES ($1, $2)", [key, value])


def old_meta(con: Connection) -> dict[str, str]:
    return {k: v for k, v in con.execute(f"SELECT key, value FROM {_OLD}.meta").fetchall()}


def copy_tables(con: Connection, versions: Mapping[str, str]) -> int:
    """The new file's schema and `meta` (these versions, the old file's other keys), every
    table but the remade ones copied, the notes numbered; returns the number of notes."""
    store.create_schema(con, versions)
    con.execute(
        f"INSERT INTO meta SELECT key, value FROM {_OLD}.meta "
        "WHERE key NOT IN (SELECT key FROM meta)"
    )
    for table in COPIED_TABLES:
        con.execute(f"INSERT INTO {table} SELECT * FROM {_OLD}.{table}")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE note_numbers AS SELECT "
        "(row_number() OVER (ORDER BY id) - 1)::INTEGER AS number, id AS note_id, note_key "
        "FROM notes"
    )
    (count,) = con.execute("SELECT count(*) FROM note_numbers").fetchone() or (0,)
    return int(count)


def copy_search_tables(con: Connection) -> None:
    """The old file's documents, termless sections and search tables as they are, but its
    vectors: what semantic recall turned off leaves (no section is cut again)."""
    for table in REMADE_TABLES:
        if table != "vectors":
            con.execute(f"INSERT INTO {table} SELECT * FROM {_OLD}.{table}")


def documents_text_length(con: Connection) -> int:
    """The characters of every document's text: whether embedding them pays a pool."""
    row = con.execute("SELECT coalesce(sum(length(text)), 0) FROM documents").fetchone()
    return int(row[0]) if row else 0


def embedded_documents(
    con: Connection, batch_rows: int = 20_000
) -> Iterator[tuple[int, str, list[SearchDocument]]]:
    """Every note's (number, title, documents) as the copied `documents` hold them, in number
    order: what `search.embedding.stage_vectors` embeds (it reads a document's ord, heading
    and text), so semantic recall turned on needs no section cut again."""
    con.execute(
        "SELECT m.number, n.title, d.ord, d.heading, d.line, d.text, d.length FROM documents d "
        "JOIN note_numbers m ON m.note_id = d.note_id JOIN notes n ON n.id = d.note_id "
        "ORDER BY m.number, d.ord"
    )
    number, title = -1, ""
    docs: list[SearchDocument] = []
    for row in _fetched(con, batch_rows):
        if row[0] != number:
            if docs:
                yield number, title, docs
            number, title, docs = int(row[0]), row[1], []
        docs.append(SearchDocument(row[2], row[3], row[4], row[5], row[6], {}))
    if docs:
        yield number, title, docs


class SectionRow(NamedTuple):
    """A stored section, as `core.documents.documents_of` reads one, with its stored line
    keys when they can be taken as they are (None: count them again)."""

    ord: int
    heading: str | None
    line: int
    text: str
    line_keys: tuple[int, ...] | None = None


class NoteSource(NamedTuple):
    """What the index holds of one note that its search documents are made of."""

    number: int
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    lang: object
    sections: tuple[SectionRow, ...]

    def size(self) -> int:
        return len(self.title) + sum(len(s.text) for s in self.sections)


def note_sources(
    con: Connection, batch_rows: int = 20_000, *, stored_keys: bool = False, old: bool = True
) -> Iterator[NoteSource]:
    """Every numbered note's `NoteSource` (`note_numbers`), in number order, the sections'
    text streamed in batches; `stored_keys`: with the line keys the old index holds (its
    `line_key_version` is the code's), which the cut then takes instead of counting them (~1/6
    of its work); `old` False: the sections of the connection's own index (a scoped upgrade
    in place), not the attached old one's."""
    heads = con.execute(
        "SELECT m.number, n.title, n.frontmatter->'lang', a.aliases, t.tags "
        "FROM notes n JOIN note_numbers m ON m.note_id = n.id "
        "LEFT JOIN (SELECT note_id, list(alias) AS aliases FROM aliases GROUP BY note_id) a "
        "ON a.note_id = n.id "
        "LEFT JOIN (SELECT note_id, list(written) AS tags FROM tags WHERE NOT inherited "
        "GROUP BY note_id) t ON t.note_id = n.id ORDER BY m.number"
    ).fetchall()
    # On `con` itself: a cursor is another connection, which sees no temp table.
    con.execute(_sections(" ORDER BY m.number, s.ord", keys=stored_keys, old=old))
    rows = _fetched(con, batch_rows)
    row = next(rows, None)
    for number, title, lang, aliases, tags in heads:
        sections = []
        while row is not None and row[0] == number:
            keys = tuple(row[6]) if stored_keys and row[6] is not None else None
            sections.append(SectionRow(row[2], row[3], row[4], row[5], keys))
            row = next(rows, None)
        yield NoteSource(
            int(number),
            title,
            tuple(aliases or ()),
            tuple(tags or ()),
            json.loads(lang) if lang is not None else None,
            tuple(sections),
        )


def _fetched(cursor: Connection, batch_rows: int) -> Iterator[Any]:
    while batch := cursor.fetchmany(batch_rows):
        yield from batch


def load_documents(con: Connection, files: Sequence[Path]) -> None:
    """`documents` from the workers' files (number, ord, length, line_keys) joined to the old
    documents' and sections' heading, line and text (the ord-0 document's text too: it lists
    the aliases and tags in the order the note gives them, which the index keeps nowhere
    else); then `termless_sections`: the old sections that made no document now."""
    _insert_cut_documents(con, files, f"({_sections(note_level=True)})")
    con.execute(
        "INSERT INTO termless_sections SELECT s.note_id, s.ord, s.heading, s.line, s.text "
        f"FROM ({_sections()}) s ANTI JOIN documents d ON d.note_id = s.note_id AND d.ord = s.ord"
    )

"""The index schema: one versioned DDL constant, the public interface agents query with SQL.

Every table and column carries a `--` comment; `docs/schema.md` is generated from them
(`python -m vaultmem.storage.schema > docs/schema.md`), and a test fails when the two drift.
Bump SCHEMA_VERSION on a change to a note table, SEARCH_SCHEMA_VERSION on a change to a search
table only: an index with another schema version is rebuilt from the vault, one with another
search schema version has its search tables made again from what it holds (`index.upgrade`);
neither is migrated in place, because every row is derived from the vault.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

SCHEMA_VERSION = 8
"""The note tables' layout (every table but `SEARCH_TABLES`, and `documents`' note_id, ord,
heading, line and text): a change re-parses every note."""

SEARCH_SCHEMA_VERSION = 3
"""The search tables' layout (`SEARCH_TABLES`, and `documents`' length and line_keys): a
change rebuilds them from the index, without reading a note (`index.upgrade`)."""

DDL = """
-- Facts about the index itself: which versions built it. A mismatch means rebuild: of nothing when only vaultmem_version differs (meta alone is updated: a release that changes the index bumps one of the other versions), of the search tables alone when only search_schema_version, tokenizer_version, segment_version, line_key_version or embedding_model differ (and vaultmem_version), else of everything; when only segment_version differs, of the rows of the notes holding text of an unspaced script, Hangul or Cyrillic alone, in place (of nothing when none does: meta alone is updated; of every note when the index's segment_version is newer than the code's).
CREATE TABLE meta (
    key VARCHAR NOT NULL, -- schema_version, search_schema_version, parser_version, tokenizer_version, segment_version, line_key_version, vaultmem_version, config_digest, embedding_model; rename_journal (not a version: what the note ids were assigned from, the rename journal's digest and `:unsalted` or `:salted`, whether a clash gave any note a salted id)
    value VARCHAR NOT NULL -- the version string (for rename_journal: `<digest>:unsalted` or `<digest>:salted`)
);

-- One row per indexed note: a Markdown file inside a mapped folder.
CREATE TABLE notes (
    id VARCHAR NOT NULL, -- stable note id: a managed topic's frontmatter `id`, else derived from the path it was first seen at and kept across renames
    path VARCHAR NOT NULL, -- vault-relative POSIX path, e.g. `Projects/Atlas/Plan.md`
    title VARCHAR NOT NULL, -- frontmatter `title`, else the first H1, else the file stem
    scope VARCHAR NOT NULL, -- memory scope of the mapped folder: session, project, global, agent or federated
    scope_id VARCHAR, -- identity within the scope (project name, session id); NULL for global
    type VARCHAR, -- frontmatter `type` when it is a string
    managed BOOLEAN NOT NULL, -- true inside the managed folder, the only folder vaultmem writes
    frontmatter JSON, -- frontmatter normalised to JSON (dates kept as written); NULL when absent or invalid
    frontmatter_status VARCHAR NOT NULL, -- valid, invalid, empty or none
    created VARCHAR, -- as written: a topic's `created` or first observation, else frontmatter `created` or `date`
    updated VARCHAR, -- as written: a topic's `updated` or latest observation, else frontmatter `updated`; NULL when unknown (search then uses mtime_ns)
    size BIGINT NOT NULL, -- file size in bytes
    mtime_ns BIGINT NOT NULL, -- file modification time in nanoseconds since the epoch
    content_hash VARCHAR NOT NULL, -- BLAKE2b-128 hex digest of the file's bytes
    claimed_id VARCHAR, -- the frontmatter `id` the note asked for (may differ from `id` on a clash)
    structure VARCHAR NOT NULL, -- digest of the note's aliases, tags, headings, blocks and links rows as parsed: an edit that leaves it as it was leaves those rows in place
    note_key BIGINT NOT NULL -- integer key of the note, as in `postings.note_key`: search reads the ranked notes' rows by it
);

CREATE INDEX notes_by_id ON notes (id);

-- Frontmatter aliases. Aliases never resolve links (Obsidian's rule) but `show` finds notes by them.
CREATE TABLE aliases (
    note_id VARCHAR NOT NULL, -- notes.id
    alias VARCHAR NOT NULL, -- the alias as written
    alias_key VARCHAR NOT NULL -- lower-cased NFC alias, for case-insensitive lookup
);

-- Tags from frontmatter and the body, lower-cased; a nested tag `a/b` also adds its parent `a`.
CREATE TABLE tags (
    note_id VARCHAR NOT NULL, -- notes.id
    tag VARCHAR NOT NULL, -- lower-cased tag without `#`, e.g. `project/atlas`
    written VARCHAR NOT NULL, -- the tag as first written in the note
    inherited BOOLEAN NOT NULL -- true for a parent row added for a nested tag (`project` for `project/atlas`)
);

-- Top-level headings in document order.
CREATE TABLE headings (
    note_id VARCHAR NOT NULL, -- notes.id
    ord INTEGER NOT NULL, -- 0-based position among the note's headings
    level INTEGER NOT NULL, -- 1 to 6
    text VARCHAR NOT NULL, -- heading text as written, trimmed
    anchor VARCHAR NOT NULL, -- Obsidian's match key for `[[Note#Heading]]` subpaths
    line INTEGER NOT NULL -- 1-based line number
);

-- Block ids (`^id`) that `[[Note#^id]]` links point at.
CREATE TABLE blocks (
    note_id VARCHAR NOT NULL, -- notes.id
    block_id VARCHAR NOT NULL, -- the id as written, without `^`
    line INTEGER NOT NULL -- 1-based line number
);

-- Every file a link can point at: notes (mapped or not) and attachments.
CREATE TABLE files (
    path VARCHAR NOT NULL, -- vault-relative POSIX path
    name_key VARCHAR NOT NULL, -- lower-cased name a link must end with to reach it (stem for .md)
    is_note BOOLEAN NOT NULL -- true for Markdown files
);

-- Outgoing links of every note, resolved as Obsidian resolves them.
CREATE TABLE links (
    source_id VARCHAR NOT NULL, -- notes.id of the linking note
    ord INTEGER NOT NULL, -- 0-based position among the note's links
    kind VARCHAR NOT NULL, -- wikilink, markdown, property (frontmatter), field (Dataview inline field) or canvas (a canvas file node)
    relation VARCHAR, -- property or field name for typed links (e.g. `supersedes`); NULL for body links
    raw VARCHAR NOT NULL, -- the link as written, e.g. `[[Plan#Goals|goals]]`
    target VARCHAR NOT NULL, -- the link path without subpath; empty for a link to the note itself
    subpath VARCHAR NOT NULL, -- `#Heading#Sub`, `#^block` or empty
    display VARCHAR, -- display text when one was written
    embed BOOLEAN NOT NULL, -- true for `![[...]]` and `![](...)`
    line INTEGER NOT NULL, -- 1-based line (the frontmatter line for property links)
    name_key VARCHAR NOT NULL, -- files.name_key this link can resolve to; used to re-resolve only affected links
    target_path VARCHAR, -- resolved file path (note or attachment); NULL when unresolved
    target_id VARCHAR, -- notes.id when the target is an indexed note, else NULL
    subpath_found BOOLEAN -- whether the subpath exists in the target; NULL when there is no subpath or no target
);

-- Search documents: each note's title/alias/tag document (ord 0) and one per section (ord 1…).
CREATE TABLE documents (
    note_id VARCHAR NOT NULL, -- notes.id
    ord INTEGER NOT NULL, -- 0 for the note-level document, else the section's position (1-based)
    heading VARCHAR, -- the section's heading; NULL for ord 0 and for text before the first heading
    line INTEGER NOT NULL, -- 1-based line where the section starts
    length INTEGER NOT NULL, -- number of terms in the document (all fields), BM25's document length
    text VARCHAR NOT NULL, -- the section's Markdown, for snippets and phrase checks
    line_keys BIGINT[] NOT NULL -- keys of the section's heading and lines that can be boilerplate (63 bits of BLAKE2b of the case-folded line without URLs; not fenced code), sorted; empty for ord 0
);

-- Point lookups of a few notes' documents (snippets, recall) would otherwise scan every
-- document's text: an ART index makes them ~6x faster at 10,000 notes.
CREATE INDEX documents_by_note ON documents (note_id);

-- Sections that are not search documents: no term under the tokenizer that built the index (a rule, an emoji, a lone image). Kept so that the search tables can be made again from the index alone when the tokenizer changes (docs/architecture.md).
CREATE TABLE termless_sections (
    note_id VARCHAR NOT NULL, -- notes.id
    ord INTEGER NOT NULL, -- the section's position (1-based), as documents.ord would be
    heading VARCHAR, -- the section's heading; NULL for text before the first heading
    line INTEGER NOT NULL, -- 1-based line where the section starts
    text VARCHAR NOT NULL -- the section's Markdown
);

-- BM25 postings: one row per term and document, the term's field-weighted frequency with the lengths BM25 needs, so a query reads nothing else. Sorted by term in a fresh index.
CREATE TABLE postings (
    term VARCHAR NOT NULL, -- a tokenizer term (docs/search.md): case-folded, stemmed
    note_key BIGINT NOT NULL, -- notes.note_key of the note (63 bits of BLAKE2b of its id): join `notes` on it for the id
    ord INTEGER NOT NULL, -- documents.ord
    tf DOUBLE NOT NULL, -- Σ field weight × occurrences in that field (title 3, alias 3, heading 2, tag 1.5, body 1)
    length INTEGER NOT NULL, -- documents.length of this document
    note_length INTEGER NOT NULL -- sum of documents.length over the note: the whole note's BM25 length
);

-- Embeddings of the search documents, one row per document, when semantic recall is on
-- (`[search] semantic = true`; docs/search.md). Empty otherwise. Rows are unit vectors, so
-- cosine similarity equals the inner product: `array_cosine_similarity(embedding, $q)`.
CREATE TABLE vectors (
    note_id VARCHAR NOT NULL, -- documents.note_id
    ord INTEGER NOT NULL, -- documents.ord
    embedding FLOAT[256] NOT NULL, -- the mean of the document's static token embeddings, normalised to length 1 (meta.embedding_model)
    head FLOAT[128] NOT NULL -- embedding's first 128 dimensions, normalised to length 1: a search's first stage
);

-- Boilerplate: lines and headings found in at least 8 notes (footers, templates, navigation). Their words are not postings of the sections holding them (docs/search.md).
CREATE TABLE boilerplate_lines (
    line_key BIGINT NOT NULL, -- documents.line_keys element
    notes INTEGER NOT NULL -- number of notes holding the line
);

-- Every candidate boilerplate line with the number of notes holding it, kept by delta: a one-note edit recounts its own lines here, not by unnesting every note's `documents.line_keys`. `boilerplate_lines` is its rows at or above the threshold.
CREATE TABLE line_counts (
    line_key BIGINT NOT NULL, -- documents.line_keys element
    notes INTEGER NOT NULL -- number of notes holding the line (at least 1)
);

-- Document frequency per term: in how many documents the term occurs (any field).
CREATE TABLE terms (
    term VARCHAR NOT NULL, -- postings.term
    df INTEGER NOT NULL -- number of documents containing the term
);

-- Collection statistics for BM25, one row, kept equal to what a rebuild computes.
CREATE TABLE search_stats (
    documents BIGINT NOT NULL, -- number of rows in `documents`
    notes BIGINT NOT NULL, -- number of notes with documents (N of the whole-note score)
    total_length BIGINT NOT NULL -- sum of documents.length (averages = total_length / documents or / notes)
);

-- Trouble with single files: the run carried on without them (or with their metadata only).
CREATE TABLE problems (
    path VARCHAR NOT NULL, -- vault-relative path of the file or folder
    code VARCHAR NOT NULL, -- a code from the closed list in docs/note-model.md
    severity VARCHAR NOT NULL, -- error or warning
    message VARCHAR NOT NULL, -- what is wrong, for a person
    line INTEGER -- 1-based line when known
);

-- One row per reconcile run, newest last. Not part of the rebuild invariant.
CREATE TABLE reconcile_runs (
    started TIMESTAMP NOT NULL, -- UTC start time
    duration_ms DOUBLE NOT NULL, -- wall-clock duration
    mode VARCHAR NOT NULL, -- full (walk), paths (watcher) or rebuild
    added INTEGER NOT NULL, -- notes new to the index
    changed INTEGER NOT NULL, -- notes whose content changed
    removed INTEGER NOT NULL, -- notes gone from the vault
    renamed INTEGER NOT NULL, -- notes moved with their identity kept
    unchanged INTEGER NOT NULL, -- notes left as they were
    problems INTEGER NOT NULL -- problems in the index after the run
);
"""

DERIVED_TABLES: tuple[str, ...] = (
    "notes",
    "aliases",
    "tags",
    "headings",
    "blocks",
    "files",
    "links",
    "documents",
    "termless_sections",
    "postings",
    "terms",
    "search_stats",
    "boilerplate_lines",
    "line_counts",
    "vectors",
    "problems",
)
"""Tables whose contents a rebuild must reproduce exactly (`meta` and `reconcile_runs` excluded)."""

SEARCH_TABLES: tuple[str, ...] = (
    "postings",
    "terms",
    "search_stats",
    "boilerplate_lines",
    "line_counts",
    "vectors",
)
"""Tables made from `documents` and `termless_sections` alone: what a tokenizer change (or
`[search] language`, semantic recall turned on or off) makes again without re-parsing.
`documents` and `termless_sections` themselves are re-cut then (a section may gain or lose
its terms); every other table is copied as it is."""


# Named tuples, not dataclasses: every index user imports this module, and a dataclass compiles
# its methods from source at import.
class ColumnDoc(NamedTuple):
    name: str
    type: str
    doc: str


class TableDoc(NamedTuple):
    name: str
    doc: str
    columns: tuple[ColumnDoc, ...]


_TABLE_RE = re.compile(r"((?:^--[^\n]*\n)+)CREATE TABLE (\w+) \((.*?)\n\);", re.M | re.S)
_COLUMN_RE = re.compile(r"^\s+(\w+) ([A-Z]+(?:\[\d*\])?)[^-]*?(?:-- (.*))?$")


def table_docs(ddl: str = DDL) -> tuple[TableDoc, ...]:
    """Read the table and column comments back out of the DDL, for docs and the drift test."""
    tables = []
    for comment, name, body in _TABLE_RE.findall(ddl):
        doc = " ".join(line.lstrip("- ").strip() for line in comment.strip().splitlines())
        columns = []
        for line in body.strip("\n").splitlines():
            match = _COLUMN_RE.match(line)
            if match:
                columns.append(ColumnDoc(match[1], match[2], (match[3] or "").strip()))
        tables.append(TableDoc(name, doc, tuple(columns)))
    return tuple(tables)


EXAMPLE_QUERIES: tuple[tuple[str, str], ...] = (
    (
        "Notes of one scope, newest first",
        "SELECT path, title, updated FROM notes WHERE scope = 'project' ORDER BY updated DESC LIMIT 10;",
    ),
    (
        "Backlinks of a note",
        "SELECT s.path, l.raw, l.line FROM links l JOIN notes s ON s.id = l.source_id\n"
        "JOIN notes t ON t.id = l.target_id WHERE t.path = 'Knowledge/DuckDB.md';",
    ),
    (
        "Unresolved links",
        "SELECT s.path, l.raw FROM links l JOIN notes s ON s.id = l.source_id\n"
        "WHERE l.target_path IS NULL ORDER BY s.path, l.ord;",
    ),
    (
        "Notes under a nested tag (parents match their children)",
        "SELECT DISTINCT n.path FROM tags t JOIN notes n ON n.id = t.note_id WHERE t.tag = 'project';",
    ),
    (
        "Typed relations between notes",
        "SELECT s.title AS source, l.relation, t.title AS target FROM links l\n"
        "JOIN notes s ON s.id = l.source_id JOIN notes t ON t.id = l.target_id\n"
        "WHERE l.relation IS NOT NULL;",
    ),
    (
        "Links whose heading or block does not exist",
        "SELECT s.path, l.raw FROM links l JOIN notes s ON s.id = l.source_id\n"
        "WHERE l.subpath_found = false;",
    ),
    (
        "Frontmatter properties with DuckDB's JSON functions",
        "SELECT path, frontmatter->>'status' AS status FROM notes WHERE frontmatter->>'status' IS NOT NULL;",
    ),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_schema_doc() -> str:
    """docs/schema.md, generated so that it can never disagree with the DDL."""
    out = [
        "# Index schema",
        "",
        "<!-- Generated by `python -m vaultmem.storage.schema > docs/schema.md`; do not edit. -->",
        "",
        f"Schema version **{SCHEMA_VERSION}**. The index is a view of the vault, kept on each",
        "machine outside the vault (`vaultmem status` names the file, `index_path` in `--json`):",
        "delete it and `vaultmem reconcile` builds the same rows again. When the schema or",
        "parser version recorded in `meta` differs from the running vaultmem, the index is",
        "rebuilt from the vault automatically; when only the search side differs (search schema,",
        "tokenizer, `[search] language`, semantic recall), the search tables are made again from",
        "the index without reading a note (docs/architecture.md). Read it with any DuckDB",
        "client, read-only:",
        "",
        "```sh",
        'vaultmem sql "SELECT count(*) FROM notes"',
        'duckdb -readonly "$(vaultmem status --json | jq -r .data.index_path)"',
        "```",
        "",
        "Open connections only for the length of a query: while a reader holds the file, a",
        "`reconcile` waits for it (and vice versa). Ids are strings; join child tables to",
        "`notes` on `note_id`/`source_id` = `notes.id`. `vaultmem export parquet DIR` writes",
        "every table below as Parquet, each row with the vault's `vault_id` (docs/machines.md).",
        "",
    ]
    for table in table_docs():
        out += [
            f"## `{table.name}`",
            "",
            table.doc,
            "",
            "| column | type | meaning |",
            "|---|---|---|",
        ]
        out += [f"| `{c.name}` | {c.type} | {_cell(c.doc)} |" for c in table.columns]
        out.append("")
    out += ["## Example queries", ""]
    for title, sql in EXAMPLE_QUERIES:
        out += [f"**{title}**", "", "```sql", sql, "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(render_schema_doc())

"""How a parsed note becomes index rows: one place that knows the table layout for notes.

Pure code: it fills column batches (see `store.new_batch`); the store loads them in bulk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from vaultmem.memory.topics import Topic
from vaultmem.models import Note, Problem, Resolution, Scope
from vaultmem.note.links import file_name_key, fold_name, link_name_key
from vaultmem.search.documents import SearchDocument
from vaultmem.storage.store import Batch, new_batch

NOTE_TABLES = (
    "notes",
    "aliases",
    "tags",
    "headings",
    "blocks",
    "links",
    "documents",
    "postings",
    "vectors",
)
"""Tables holding one note's rows, keyed by `note_id` (`source_id` for links). Postings arrive
as TSV files from the parse workers (`parallel.py`) and vectors as one numpy matrix
(`vector_queries.load_vectors`), not through these batches."""


@dataclass(frozen=True, slots=True)
class NoteRecord:
    """A parsed note with everything reconcile decided about it."""

    note: Note
    id: str
    scope: Scope
    scope_id: str | None
    managed: bool
    size: int
    mtime_ns: int
    content_hash: str
    claimed_id: str | None
    resolutions: Sequence[Resolution]
    target_ids: Sequence[str | None]
    documents: Sequence[SearchDocument]
    topic: Topic | None = None
    """For a managed topic, what its file says of itself (either topic form)."""


class NoteBatches:
    """Column batches for every note table plus problems, filled note by note."""

    def __init__(self) -> None:
        self.tables: dict[str, Batch] = {
            t: new_batch(t) for t in (*NOTE_TABLES, "problems") if t not in ("postings", "vectors")
        }

    def add_note(self, rec: NoteRecord) -> None:
        note = rec.note
        fm = note.frontmatter
        self.tables["notes"].add(
            rec.id,
            note.path,
            note.title,
            rec.scope,
            rec.scope_id,
            (rec.topic.type if rec.topic else None) or _string(fm.get("type")),
            rec.managed,
            json.dumps(fm, ensure_ascii=False, sort_keys=True) if fm else None,
            note.frontmatter_status,
            (rec.topic.created if rec.topic else None)
            or _string(fm.get("created"))
            or _string(fm.get("date")),
            (rec.topic.updated if rec.topic else None) or _string(fm.get("updated")),
            rec.size,
            rec.mtime_ns,
            rec.content_hash,
            rec.claimed_id,
        )
        for alias in note.aliases:
            self.tables["aliases"].add(rec.id, alias, name_key(alias))
        for tag, written, inherited in expand_tags(note.tags):
            self.tables["tags"].add(rec.id, tag, written, inherited)
        for ord_, h in enumerate(note.headings):
            self.tables["headings"].add(rec.id, ord_, h.level, h.text, h.anchor, h.line)
        for block in note.blocks:
            self.tables["blocks"].add(rec.id, block.id, block.line)
        links = self.tables["links"]
        for ord_, (link, res, target_id) in enumerate(
            zip(note.links, rec.resolutions, rec.target_ids, strict=True)
        ):
            links.add(
                rec.id,
                ord_,
                link.kind,
                link.relation,
                link.raw,
                link.target,
                link.subpath,
                link.display,
                link.embed,
                link.line,
                link_key(link.target, note.path),
                res.path,
                target_id,
                res.subpath_found,
            )

        documents = self.tables["documents"]
        for doc in rec.documents:
            documents.add(rec.id, doc.ord, doc.heading, doc.line, doc.length, doc.text)

    def add_problem(self, problem: Problem) -> None:
        self.tables["problems"].add(
            problem.path, problem.code, problem.severity, problem.message, problem.line
        )


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

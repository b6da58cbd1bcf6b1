"""Read-side questions about the index as a whole: status, problems, one note, raw SQL.

Every function takes an open read-only connection (the facade opens one per request); the SQL
lives in `storage.catalog_queries`. Whole answers are frozen dataclasses (`NoteRef`, `Status`,
`NoteDetail`, `SqlResult`); the rows inside them (problems, headings, a note's columns) are
plain JSON-ready dicts, fresh on every call, so the CLI, the MCP server and tests see the same
answers and a caller may change its copy without touching anyone else's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.core.errors import AmbiguousError, NotFoundError
from vaultmem.note.links import fold_name
from vaultmem.storage import catalog_queries as queries
from vaultmem.storage.catalog_queries import SqlResult
from vaultmem.storage.store import Connection

__all__ = ["FolderCount", "NoteDetail", "NoteRef", "SqlResult", "Status"]


@dataclass(frozen=True, slots=True)
class NoteRef:
    """Enough to name a note in a listing."""

    id: str
    path: str
    title: str


@dataclass(frozen=True, slots=True)
class FolderCount:
    folder: str
    scope: str
    scope_id: str | None
    notes: int


@dataclass(frozen=True, slots=True)
class Status:
    notes: int
    scopes: dict[str, int]
    folders: tuple[FolderCount, ...]
    links: int
    unresolved_links: int
    problems: int
    last_run: dict[str, Any] | None
    changed_since_last_run: int
    index_bytes: int
    outside_mapping: int = 0
    """Notes (Markdown or canvas) of the vault that no mapped folder holds: not indexed."""
    outside_folders: tuple[str, ...] = ()
    """The top-level folders those notes lie in (`.` for the vault's root)."""
    index_path: str = ""
    """Where this machine keeps the vault's index (outside the vault: docs/machines.md)."""
    project: dict[str, str] | None = None
    """Where a project write without a scope id from here goes: scope_id, source (mapping,
    remote or path) and folder (`memory/identity.py`)."""


def problems(con: Connection, *, code: str | None = None) -> list[dict[str, Any]]:
    return queries.problems(con, code=code)


def counts(con: Connection) -> dict[str, Any]:
    """Counts for `status`: notes per scope, links, problems and the last run."""
    return queries.counts(con)


def note_files(con: Connection) -> list[tuple[str, int, int, str, str | None]]:
    """(path, size, mtime_ns, scope, scope_id) of every indexed note, for `status`."""
    return queries.note_files(con)


def find_note(con: Connection, name: str) -> NoteRef:
    """Find one note by id, path (`.md` optional), title, alias or file name.

    Each kind of name is tried in that order and the first kind with any match decides; more
    than one match of that kind is an `AmbiguousError` listing the candidates.
    """
    text = unicodedata.normalize("NFC", name.strip())
    key = fold_name(text).removesuffix(".md")
    for kind, sql in queries.NAME_LOOKUPS:
        rows = queries.notes_named(con, sql, text if kind == "id" else key)
        if len(rows) == 1:
            return NoteRef(*rows[0])
        if rows:
            raise AmbiguousError(
                f"{name!r} names {len(rows)} notes.",
                [r[1] for r in rows],
                hint="Name the note by one of these paths.",
            )
    raise NotFoundError(f"No note is named {name!r} (by id, path, title, alias or file name).")


@dataclass(frozen=True, slots=True)
class NoteDetail:
    note: dict[str, Any]
    aliases: list[str]
    tags: list[str]
    headings: list[dict[str, Any]]
    blocks: list[str]
    links_out: int
    backlinks: int
    problems: list[dict[str, Any]] = field(default_factory=list)


def note_detail(con: Connection, ref: NoteRef) -> NoteDetail:
    parts = queries.note_parts(con, ref.id, ref.path)
    return NoteDetail(note=queries.note_row(con, ref.id), **parts)


def run_sql(
    index: Path,
    sql: str,
    *,
    limit: int = 1000,
    params: Mapping[str, Any] | None = None,
    timeout_s: float = 10.0,
    lock_path: Path | None = None,
) -> SqlResult:
    """One read-only statement on `index`, in a child process (`storage.sql_process`)."""
    from vaultmem.storage import sql_process

    return sql_process.run(
        index, sql, limit=limit, params=params, timeout_s=timeout_s, lock_path=lock_path
    )

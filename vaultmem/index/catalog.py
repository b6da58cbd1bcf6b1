"""Read-side questions about the index as a whole: status, problems, one note, raw SQL.

Every function takes an open read-only connection (the facade opens one per request) and
returns plain frozen values, so the CLI, the MCP server and tests see the same answers.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import duckdb

from vaultmem.errors import AmbiguousError, NotFoundError, QueryError
from vaultmem.note.links import fold_name
from vaultmem.storage.store import Connection, fetch_dicts


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


def problems(con: Connection, *, code: str | None = None) -> list[dict[str, Any]]:
    where, params = ("WHERE code = ?", [code]) if code else ("", [])
    return fetch_dicts(
        con,
        f"SELECT path, code, severity, message, line FROM problems {where} "
        "ORDER BY path, line NULLS FIRST, code",
        params,
    )


def counts(con: Connection) -> dict[str, Any]:
    """Counts for `status`: notes per scope, links, problems and the last run."""
    scopes = dict(
        con.execute("SELECT scope, count(*) FROM notes GROUP BY scope ORDER BY scope").fetchall()
    )
    (links, unresolved) = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE target_path IS NULL) FROM links"
    ).fetchone() or (0, 0)
    (problem_count,) = con.execute("SELECT count(*) FROM problems").fetchone() or (0,)
    runs = fetch_dicts(
        con,
        "SELECT started, duration_ms, mode, added, changed, removed, renamed, unchanged, "
        "problems FROM reconcile_runs ORDER BY started DESC LIMIT 1",
    )
    last_run = runs[0] if runs else None
    if last_run:
        last_run["started"] = last_run["started"].isoformat() + "Z"
    return {
        "notes": sum(scopes.values()),
        "scopes": scopes,
        "links": int(links),
        "unresolved_links": int(unresolved),
        "problems": int(problem_count),
        "last_run": last_run,
    }


def note_paths(con: Connection) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every indexed note, to count files changed since the run."""
    return [tuple(r) for r in con.execute("SELECT path, size, mtime_ns FROM notes").fetchall()]


def find_note(con: Connection, name: str) -> NoteRef:
    """Find one note by id, path (`.md` optional), title, alias or file name.

    Each kind of name is tried in that order and the first kind with any match decides; more
    than one match of that kind is an `AmbiguousError` listing the candidates.
    """
    text = unicodedata.normalize("NFC", name.strip())
    key = fold_name(text).removesuffix(".md")
    queries = (
        ("SELECT id, path, title FROM notes WHERE id = ?", text),
        ("SELECT id, path, title FROM notes WHERE lower(path) IN (?, ? || '.md')", key),
        ("SELECT id, path, title FROM notes WHERE lower(title) = ?", key),
        (
            "SELECT DISTINCT n.id, n.path, n.title FROM aliases a JOIN notes n ON n.id = a.note_id "
            "WHERE a.alias_key = ?",
            key,
        ),
        (
            "SELECT id, path, title FROM notes "
            "WHERE lower(regexp_extract(path, '([^/]*)\\.md$', 1)) = ?",
            key,
        ),
    )
    for sql, param in queries:
        params = [param, param] if sql.count("?") == 2 else [param]
        rows = con.execute(sql + " ORDER BY path", params).fetchall()
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
    (row,) = fetch_dicts(
        con,
        "SELECT id, path, title, scope, scope_id, type, managed, frontmatter, "
        "frontmatter_status, created, updated, size, mtime_ns, content_hash FROM notes "
        "WHERE id = ?",
        [ref.id],
    )
    row["frontmatter"] = json.loads(row["frontmatter"]) if row["frontmatter"] else None
    aliases = [
        a
        for (a,) in con.execute(
            "SELECT alias FROM aliases WHERE note_id = ? ORDER BY alias", [ref.id]
        ).fetchall()
    ]
    tags = [
        t
        for (t,) in con.execute(
            "SELECT tag FROM tags WHERE note_id = ? AND NOT inherited ORDER BY tag", [ref.id]
        ).fetchall()
    ]
    headings = fetch_dicts(
        con, "SELECT level, text, line FROM headings WHERE note_id = ? ORDER BY ord", [ref.id]
    )
    blocks = [
        b
        for (b,) in con.execute(
            "SELECT block_id FROM blocks WHERE note_id = ? ORDER BY line", [ref.id]
        ).fetchall()
    ]
    (out,) = con.execute("SELECT count(*) FROM links WHERE source_id = ?", [ref.id]).fetchone() or (
        0,
    )
    (back,) = con.execute(
        "SELECT count(*) FROM links WHERE target_id = ? AND source_id <> ?", [ref.id, ref.id]
    ).fetchone() or (0,)
    note_problems = fetch_dicts(
        con,
        "SELECT code, severity, message, line FROM problems WHERE path = ? ORDER BY line",
        [ref.path],
    )
    return NoteDetail(row, aliases, tags, headings, blocks, int(out), int(back), note_problems)


@dataclass(frozen=True, slots=True)
class SqlResult:
    columns: list[str]
    rows: list[list[Any]]


def run_sql(con: Connection, sql: str, *, limit: int = 1000) -> SqlResult:
    """Run one read-only statement on a sandboxed connection; values made JSON-safe."""
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or ()]
        rows = cursor.fetchmany(limit) if columns else []
    except duckdb.Error as error:
        raise QueryError(
            f"SQL failed: {error}",
            hint="Only read-only SELECTs work; see docs/schema.md for the tables.",
        ) from error
    return SqlResult(columns, [[_json_safe(v) for v in row] for row in rows])


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)

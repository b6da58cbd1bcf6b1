"""The SQL behind `index.catalog` and `vaultmem sql`: counts, one note's rows, name lookups and
the sandboxed read-only statement runner.

Every function takes an open read-only connection and returns rows as plain dicts, tuples or
lists; `index.catalog` turns them into its answers. `run_sql` is the only place a statement
written by a user reaches DuckDB: it accepts exactly one statement, binds named parameters,
fetches one row past the limit to tell a full answer from a cut one, and interrupts the
statement after a time limit, because a read connection blocks every writer (reconcile,
store) for as long as it is open.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vaultmem.core.errors import QueryError, QueryTimeoutError
from vaultmem.storage.store import Connection, DatabaseError, QueryInterrupted, fetch_dicts

SQL_HINT = "Only read-only SELECTs work; list the tables with: vaultmem sql 'SHOW TABLES'."


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


def note_files(con: Connection) -> list[tuple[str, int, int, str, str | None]]:
    """(path, size, mtime_ns, scope, scope_id) of every indexed note."""
    return [
        tuple(r)
        for r in con.execute("SELECT path, size, mtime_ns, scope, scope_id FROM notes").fetchall()
    ]


# Each kind of name, in the order `find_note` tries them; `?` is the case-folded name.
# Names are compared folded as `note.links.fold_name` folds them (lower-cased, then NFC), on both
# sides: a file macOS named in NFD (`Cafe\u0301.md`) is found by `Café`, as `[[Café]]` finds it.
NAME_LOOKUPS: tuple[tuple[str, str], ...] = (
    ("id", "SELECT id, path, title FROM notes WHERE id = ?"),
    (
        "path",
        "SELECT id, path, title FROM notes WHERE nfc_normalize(lower(path)) IN (?, ? || '.md')",
    ),
    ("title", "SELECT id, path, title FROM notes WHERE nfc_normalize(lower(title)) = ?"),
    (
        "alias",
        "SELECT DISTINCT n.id, n.path, n.title FROM aliases a JOIN notes n ON n.id = a.note_id "
        "WHERE a.alias_key = ?",
    ),
    (
        "file name",
        "SELECT id, path, title FROM notes "
        "WHERE nfc_normalize(lower(regexp_extract(path, '([^/]*)\\.md$', 1))) = ?",
    ),
)


def notes_named(con: Connection, sql: str, param: str) -> list[tuple[str, str, str]]:
    params = [param] * sql.count("?")
    return [tuple(r) for r in con.execute(sql + " ORDER BY path", params).fetchall()]


def note_row(con: Connection, note_id: str) -> dict[str, Any]:
    (row,) = fetch_dicts(
        con,
        "SELECT id, path, title, scope, scope_id, type, managed, frontmatter, "
        "frontmatter_status, created, updated, size, mtime_ns, content_hash FROM notes "
        "WHERE id = ?",
        [note_id],
    )
    row["frontmatter"] = json.loads(row["frontmatter"]) if row["frontmatter"] else None
    return row


def note_parts(con: Connection, note_id: str, path: str) -> dict[str, Any]:
    """A note's aliases, own tags, headings, block ids, link counts and problems."""

    def column(sql: str, *params: Any) -> list[Any]:
        return [r[0] for r in con.execute(sql, list(params)).fetchall()]

    (out,) = column("SELECT count(*) FROM links WHERE source_id = ?", note_id)
    (back,) = column(
        "SELECT count(*) FROM links WHERE target_id = ? AND source_id <> ?", note_id, note_id
    )
    return {
        "aliases": column("SELECT alias FROM aliases WHERE note_id = ? ORDER BY alias", note_id),
        "tags": column(
            "SELECT tag FROM tags WHERE note_id = ? AND NOT inherited ORDER BY tag", note_id
        ),
        "headings": fetch_dicts(
            con, "SELECT level, text, line FROM headings WHERE note_id = ? ORDER BY ord", [note_id]
        ),
        "blocks": column("SELECT block_id FROM blocks WHERE note_id = ? ORDER BY line", note_id),
        "links_out": int(out),
        "backlinks": int(back),
        "problems": fetch_dicts(
            con,
            "SELECT code, severity, message, line FROM problems WHERE path = ? ORDER BY line",
            [path],
        ),
    }


@dataclass(frozen=True, slots=True)
class SqlResult:
    """`vaultmem sql`: the columns, at most `max_rows` rows, and whether more were cut."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False


def run_sql(
    con: Connection,
    sql: str,
    *,
    limit: int = 1000,
    params: Mapping[str, Any] | None = None,
    timeout_s: float = 10.0,
    max_bytes: int | None = None,
) -> SqlResult:
    """Run exactly one statement on a sandboxed read-only connection; values made JSON-safe.

    `params` bind `$name` placeholders. A statement still running after `timeout_s` is
    interrupted (`QueryTimeoutError`); a timer thread calls `interrupt()`, which DuckDB allows
    while another thread executes on the connection, and which it checks between chunks only
    (`storage/sql_process.py` runs this in a child it can kill). Rows stop at `limit` and once
    their JSON passes `max_bytes`; either cut sets `truncated`."""
    try:
        statements = con.extract_statements(sql)
    except DatabaseError as error:
        raise QueryError(f"SQL failed: {error}", hint=SQL_HINT) from error
    if len(statements) != 1:
        raise QueryError(
            f"Expected exactly one SQL statement, got {len(statements)}.",
            hint="Run one statement per call (no `;` between two).",
        )
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.start()
    try:
        cursor = con.execute(sql, dict(params) if params else None)
        columns = [d[0] for d in cursor.description or ()]
        rows, cut = _fetch(cursor, limit, max_bytes) if columns else ([], False)
    except QueryInterrupted as error:
        raise QueryTimeoutError(
            f"The SQL statement ran longer than {timeout_s:g} s and was interrupted."
        ) from error
    except DatabaseError as error:
        raise QueryError(f"SQL failed: {error}", hint=SQL_HINT) from error
    finally:
        timer.cancel()
    return SqlResult(columns, rows, cut)


_BATCH = 256


def _fetch(cursor: Connection, limit: int, max_bytes: int | None) -> tuple[list[list[Any]], bool]:
    """At most `limit` rows, JSON-safe, whose JSON stays within `max_bytes`; and whether more
    were left (a row past either bound)."""
    rows: list[list[Any]] = []
    size = 0
    while True:
        batch = cursor.fetchmany(min(_BATCH, limit + 1 - len(rows)))
        for raw in batch:
            if len(rows) == limit:
                return rows, True
            row = [_json_safe(v) for v in raw]
            if max_bytes is not None:
                size += len(json.dumps(row, default=str)) + 1
                if size > max_bytes:
                    return rows, True
            rows.append(row)
        if not batch:
            return rows, False


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

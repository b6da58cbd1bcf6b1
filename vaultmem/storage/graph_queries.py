"""The SQL behind the link graph (`index.graph`): a note's links, its backlinks, unresolved
links and the notes within a few hops. Links are resolved at reconcile time, so each question is
one query on `links` joined to `notes`."""

from __future__ import annotations

from typing import Any

from vaultmem.storage.store import Connection, fetch_dicts

_LINK_COLUMNS = (
    "l.kind, l.relation, l.raw, l.target, l.subpath, l.display, l.embed, l.line, "
    "l.target_path, l.subpath_found"
)


def outgoing(con: Connection, note_id: str) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        f"SELECT {_LINK_COLUMNS}, t.title AS target_title FROM links l "
        "LEFT JOIN notes t ON t.id = l.target_id WHERE l.source_id = ? ORDER BY l.ord",
        [note_id],
    )


def backlinks(con: Connection, note_id: str) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        f"SELECT s.path AS source_path, s.title AS source_title, {_LINK_COLUMNS} FROM links l "
        "JOIN notes s ON s.id = l.source_id WHERE l.target_id = ? AND l.source_id <> ? "
        "ORDER BY s.path, l.ord",
        [note_id, note_id],
    )


def unresolved(con: Connection, *, limit: int | None = None) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        "SELECT l.target, count(*) AS links, list(DISTINCT s.path ORDER BY s.path) AS sources "
        "FROM links l JOIN notes s ON s.id = l.source_id WHERE l.target_path IS NULL "
        "GROUP BY l.target ORDER BY links DESC, l.target"
        + (f" LIMIT {int(limit)}" if limit else ""),
    )


def neighbours(con: Connection, note_id: str, depth: int) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        """
        WITH RECURSIVE edges AS (
            SELECT source_id AS a, target_id AS b FROM links WHERE target_id IS NOT NULL
            UNION SELECT target_id, source_id FROM links WHERE target_id IS NOT NULL
        ), walk(id, depth) AS (
            SELECT ?::VARCHAR, 0
            UNION SELECT e.b, w.depth + 1 FROM walk w JOIN edges e ON e.a = w.id
            WHERE w.depth < ?
        )
        SELECT n.path, n.title, min(w.depth) AS depth FROM walk w JOIN notes n ON n.id = w.id
        WHERE w.id <> ? GROUP BY n.path, n.title ORDER BY depth, n.path
        """,
        [note_id, depth, note_id],
    )

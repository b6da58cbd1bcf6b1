"""The SQL behind `read` and `recent`: which notes changed lately. Finding a note by name is
`index/catalog.find_note`; the note's text always comes from its file, never from the index."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vaultmem.storage.store import Connection

RecentRow = tuple[Any, ...]
"""(id, path, title, scope, scope_id, managed, updated, mtime_ns, size)"""


def recent_rows(
    con: Connection, *, since: datetime | None, managed: bool | None, limit: int
) -> list[RecentRow]:
    """Notes by file modification time, newest first (path breaks ties), at most `limit`;
    `since` (aware or naive UTC) keeps those changed at or after it, `managed` topics or notes."""
    clauses = ["true"]
    params: dict[str, Any] = {"limit": limit}
    if since is not None:
        clauses.append("mtime_ns >= $since_ns")
        params["since_ns"] = int(since.timestamp() * 1_000_000_000)
    if managed is not None:
        clauses.append("managed = $managed")
        params["managed"] = managed
    rows = con.execute(
        "SELECT id, path, title, scope, scope_id, managed, updated, mtime_ns, size FROM notes "
        f"WHERE {' AND '.join(clauses)} ORDER BY mtime_ns DESC, path LIMIT $limit",
        params,
    ).fetchall()
    return [tuple(r) for r in rows]

"""The SQL behind finding agent topics (`memory.topic_store`) in the index."""

from __future__ import annotations

from vaultmem.storage.store import Connection


def managed_path_by_id(con: Connection, topic_id: str) -> str | None:
    """The path of the managed note whose id, or claimed id, is `topic_id` (first by path)."""
    row = con.execute(
        "SELECT path FROM notes WHERE managed AND (id = ? OR claimed_id = ?) ORDER BY path LIMIT 1",
        [topic_id, topic_id],
    ).fetchone()
    return str(row[0]) if row is not None else None

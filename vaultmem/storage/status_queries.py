"""The SQL behind `vaultmem status` beyond the catalog's counts: where each indexed note sits."""

from __future__ import annotations

from vaultmem.storage.store import Connection


def note_scopes(con: Connection) -> list[tuple[str, str, str | None]]:
    """(path, scope, scope id) of every indexed note."""
    rows = con.execute("SELECT path, scope, scope_id FROM notes").fetchall()
    return [(path, scope, scope_id) for path, scope, scope_id in rows]

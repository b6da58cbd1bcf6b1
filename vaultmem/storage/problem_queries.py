"""The SQL behind questions about the `problems` table that operations other than the catalog
ask (the watcher re-reads notes that had a given problem)."""

from __future__ import annotations

from vaultmem.storage.store import Connection


def paths_with_problem(con: Connection, code: str) -> list[str]:
    """The distinct paths that have a problem with this code."""
    rows = con.execute("SELECT DISTINCT path FROM problems WHERE code = ?", [code]).fetchall()
    return [str(path) for (path,) in rows]

"""The link graph as stored in the index: outgoing links, backlinks, unresolved links, neighbours.

Links are resolved at reconcile time, so every question here is one query on `links`
(`storage.graph_queries` holds the SQL).
"""

from __future__ import annotations

from typing import Any

from vaultmem.query.catalog import NoteRef
from vaultmem.storage import graph_queries
from vaultmem.storage.store import Connection


def outgoing(con: Connection, ref: NoteRef) -> list[dict[str, Any]]:
    """The note's links in reading order, each with its target's title when it resolved."""
    return graph_queries.outgoing(con, ref.id)


def backlinks(con: Connection, ref: NoteRef) -> list[dict[str, Any]]:
    """Links from other notes to this one, by source path; a note's links to itself are not
    backlinks."""
    return graph_queries.backlinks(con, ref.id)


def unresolved(con: Connection, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Links that point at no file, grouped by what they ask for, most wanted first."""
    return graph_queries.unresolved(con, limit=limit)


def neighbours(con: Connection, ref: NoteRef, depth: int = 1) -> list[dict[str, Any]]:
    """Notes within `depth` link hops of a note, in either direction, nearest first."""
    return graph_queries.neighbours(con, ref.id, depth)

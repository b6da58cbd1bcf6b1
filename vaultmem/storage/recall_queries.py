"""The SQL behind recall and the context block: note facts, name matches, topic texts, related
notes and section texts. Each function is one statement over the index and returns plain rows;
the ranking that uses them lives in `memory/recall.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from vaultmem.storage.search_queries import EVERY_NOTE, NoteFilter
from vaultmem.storage.store import Connection

# A topic's key is its frontmatter `key`; any other note's is its file name without `.md`
# (empty for another file). Written for a scan of every note (`name_matches`): the JSON is
# parsed only where its text holds `"key"`, and the name is cut with string functions, where
# `frontmatter->>'key'` on every row and `regexp_extract(path, '([^/]*)\.md$', 1)` took
# ~0.2 s at 100,000 notes for the same values (tests/storage/test_recall_queries.py).
_KEY = (
    "coalesce(CASE WHEN contains(frontmatter::VARCHAR, '\"key\"') THEN frontmatter->>'key' END, "
    "CASE WHEN suffix(path, '.md') THEN left(split_part(path, '/', -1), -3) ELSE '' END)"
)

_INFO_SQL = f"""
SELECT id, {_KEY} AS key, path, title, scope, scope_id, type, managed, updated, size, mtime_ns
FROM notes
"""

InfoRow = tuple[Any, ...]
"""(id, key, path, title, scope, scope_id, type, managed, updated, size, mtime_ns)"""


def info_rows(con: Connection, ids: Iterable[str]) -> list[InfoRow]:
    """The info row of each given note id that is in the index."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    sql = _INFO_SQL + "WHERE id IN (SELECT unnest($1::VARCHAR[]))"
    return [tuple(r) for r in con.execute(sql, [wanted]).fetchall()]


def all_info_rows(con: Connection, *, managed_only: bool = False) -> list[InfoRow]:
    """Every note's info row (only topics when `managed_only`), in path order."""
    where = "WHERE managed " if managed_only else ""
    return [tuple(r) for r in con.execute(_INFO_SQL + where + "ORDER BY path").fetchall()]


def name_matches(
    con: Connection, candidates: Sequence[str], notes: NoteFilter = EVERY_NOTE
) -> list[tuple[str, str, str]]:
    """(note id, field, matched candidate) for each note the filter keeps whose key, title,
    alias or tag equals one of the lower-cased candidates."""
    if not candidates:
        return []
    only = "AND note_id IN (SELECT id FROM k)" if notes.active else ""  # `k`: the kept notes
    rows = con.execute(
        f"""
        WITH c AS (SELECT unnest($candidates::VARCHAR[]) AS word),
        k AS (SELECT n.id, lower({_KEY}) AS key, lower(n.title) AS title FROM notes n
              WHERE {notes.where})
        SELECT id, 'key', key FROM k WHERE key IN (SELECT word FROM c)
        UNION ALL SELECT id, 'title', title FROM k WHERE title IN (SELECT word FROM c)
        UNION ALL SELECT note_id, 'alias', alias_key FROM aliases
            WHERE alias_key IN (SELECT word FROM c) {only}
        UNION ALL SELECT note_id, 'tag', tag FROM tags WHERE tag IN (SELECT word FROM c) {only}
        """,
        {"candidates": list(candidates), **(notes.params or {})},
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def topic_texts(con: Connection, notes: NoteFilter = EVERY_NOTE) -> list[tuple[str, str]]:
    """(note id, every heading and section text joined) of each topic in the managed folder
    that the filter keeps."""
    rows = con.execute(
        f"""
        SELECT d.note_id, string_agg(coalesce(d.heading, '') || ' ' || d.text, ' ' ORDER BY d.ord)
        FROM documents d
        WHERE d.note_id IN (SELECT n.id FROM notes n WHERE n.managed AND {notes.where})
        GROUP BY d.note_id ORDER BY d.note_id
        """,
        notes.params or {},
    ).fetchall()
    return [(r[0], r[1] or "") for r in rows]


def related_pairs(con: Connection, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(source id, target id) of typed links and links under a `## See Also` heading of the
    given notes, in link order."""
    if not ids:
        return []
    rows = con.execute(
        """
        WITH see_also AS (
            SELECT note_id, min(line) AS line FROM headings
            WHERE lower(text) = 'see also' AND note_id IN (SELECT unnest($1::VARCHAR[]))
            GROUP BY note_id
        )
        SELECT l.source_id, l.target_id FROM links l LEFT JOIN see_also s
            ON s.note_id = l.source_id
        WHERE l.source_id IN (SELECT unnest($1::VARCHAR[])) AND l.target_id IS NOT NULL
          AND l.target_id <> l.source_id AND NOT l.embed
          AND (l.relation IS NOT NULL OR (s.line IS NOT NULL AND l.line > s.line))
        ORDER BY l.source_id, l.ord
        """,
        [list(ids)],
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def section_rows(con: Connection, ids: Sequence[str]) -> list[tuple[str, str | None, str]]:
    """(note id, heading, text) of every section (ord > 0) of the given notes, in order."""
    if not ids:
        return []
    rows = con.execute(
        "SELECT note_id, ord, heading, text FROM documents "
        "WHERE note_id IN (SELECT unnest($1::VARCHAR[])) ORDER BY note_id, ord",
        [list(ids)],
    ).fetchall()
    return [(r[0], r[2], r[3]) for r in rows if r[1] > 0]

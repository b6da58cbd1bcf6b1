"""The SQL behind relationships (`memory.relations`): notes as edge ends, the typed links that
are edges, and pairs of topics sharing rare terms (edge suggestions)."""

from __future__ import annotations

from collections.abc import Sequence

from vaultmem.storage.store import Connection

NoteRow = tuple[str, str, bool, str | None]
"""(id, path, managed, updated) of an indexed note."""

_NOTE_ROW = "SELECT id, path, managed, updated FROM notes"


def _note_rows(rows: list[tuple[str, str, object, str | None]]) -> list[NoteRow]:
    return [(r[0], r[1], bool(r[2]), r[3]) for r in rows]


def notes(con: Connection) -> list[NoteRow]:
    """Every indexed note."""
    return _note_rows(con.execute(_NOTE_ROW).fetchall())


def note_by_path(con: Connection, path: str) -> NoteRow | None:
    found = _note_rows(con.execute(_NOTE_ROW + " WHERE path = ?", [path]).fetchall())
    return found[0] if found else None


def notes_by_id(con: Connection, note_ids: Sequence[str]) -> list[NoteRow]:
    return _note_rows(
        con.execute(
            _NOTE_ROW + " WHERE id IN (SELECT unnest($1::VARCHAR[]))", [list(note_ids)]
        ).fetchall()
    )


def note_path(con: Connection, note_id: str) -> str | None:
    row = con.execute("SELECT path FROM notes WHERE id = ?", [note_id]).fetchone()
    return str(row[0]) if row else None


def note_titles(con: Connection, note_ids: Sequence[str]) -> dict[str, str]:
    rows = con.execute(
        "SELECT id, title FROM notes WHERE id IN (SELECT unnest($1::VARCHAR[]))", [list(note_ids)]
    ).fetchall()
    return dict(rows)


def link_targets(con: Connection, source_id: str) -> dict[str, str]:
    """{link as written: target note id} of a note's resolved body links (the first of each
    spelling)."""
    rows = con.execute(
        "SELECT raw, target_id FROM links WHERE source_id = ? AND target_id IS NOT NULL "
        "AND relation IS NULL ORDER BY ord",
        [source_id],
    ).fetchall()
    out: dict[str, str] = {}
    for raw, target in rows:
        out.setdefault(str(raw), str(target))
    return out


def relation_links(con: Connection) -> list[tuple[str, str, str]]:
    """(source id, relation lower-cased, target id) of every resolved typed link between two
    different notes, once each, sorted."""
    rows = con.execute(
        "SELECT DISTINCT source_id, lower(relation), target_id FROM links "
        "WHERE relation IS NOT NULL AND target_id IS NOT NULL AND target_id <> source_id "
        "ORDER BY 1, 2, 3"
    ).fetchall()
    return [(s, r, t) for s, r, t in rows]


def document_count(con: Connection) -> int:
    """How many search documents the index holds (0 before the first reconcile)."""
    (documents,) = con.execute(
        "SELECT coalesce(max(documents), 0) FROM search_stats"
    ).fetchone() or (0,)
    return int(documents)


def shared_rare_terms(
    con: Connection, note_ids: Sequence[str], *, rare_df: int, min_shared: int, limit: int
) -> list[tuple[str, str, int, list[str]]]:
    """Pairs (a < b) of the given notes sharing at least `min_shared` rare terms (document
    frequency at most `rare_df`) anywhere in the note, ignoring numbers and words under three
    letters: (a, b, shared count, the shared terms sorted), most shared first."""
    rows = con.execute(
        """
        WITH tt AS (
            SELECT DISTINCT p.term, n.id AS note_id FROM postings p
            JOIN notes n ON n.note_key = p.note_key
            WHERE n.id IN (SELECT unnest($1::VARCHAR[]))
              AND length(p.term) >= 3 AND NOT regexp_full_match(p.term, '[0-9]+')
        ), rare AS (SELECT term FROM terms WHERE df <= $2)
        SELECT a.note_id, b.note_id, count(*) AS shared, list(a.term ORDER BY a.term)
        FROM tt a JOIN tt b ON a.term = b.term AND a.note_id < b.note_id
        WHERE a.term IN (SELECT term FROM rare)
        GROUP BY a.note_id, b.note_id HAVING count(*) >= $3
        ORDER BY shared DESC, a.note_id, b.note_id LIMIT $4
        """,
        [list(note_ids), rare_df, min_shared, limit],
    ).fetchall()
    return [(a, b, int(shared), list(terms)) for a, b, shared, terms in rows]

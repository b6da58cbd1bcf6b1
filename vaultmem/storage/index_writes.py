"""Every SQL statement reconcile runs: reading the index's state, and the one write transaction.

Reconcile (`index.reconcile`) decides; this module only says it in SQL. The reads are cheap
on purpose: a no-op reconcile is the stat walk plus `read_state`. The writes are set-based:
each is one statement over a list parameter or a staged file, never a row at a time, so a
one-note edit costs in proportion to that note and a full build runs at DuckDB's load speed.

Staged rows (JSON Lines, `storage.rows.StagedRows`) and postings (TSV, `parallel.postings_lines`)
name notes by their number in the run; `number_notes` stores number → id once, and each load
joins through it. Rows of a number missing from that table (a note re-read under the lock
because it changed after its worker read it) are dropped by the join.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from vaultmem.models import Block, Heading, Problem
from vaultmem.storage.rows import COLUMNS, NOTE_KEY, NOTE_TABLES, STAGED_TABLES
from vaultmem.storage.store import Batch, Connection, delete_where_in, load, new_batch


@dataclass(frozen=True, slots=True)
class IndexState:
    """What reconcile reads of the index before deciding anything.

    `notes` rows are (path, id, size, mtime_ns, content_hash, claimed_id); `scan_problems`
    the stored problems a scan (not a parse) can produce, to tell a no-op from a change.
    """

    notes: list[tuple[str, str, int, int, str, str | None]]
    files: set[str]
    scan_problems: set[tuple[str, str, str]]
    problem_count: int


def read_state(con: Connection, scan_codes: Sequence[str]) -> IndexState:
    notes = con.execute(
        "SELECT path, id, size, mtime_ns, content_hash, claimed_id FROM notes"
    ).fetchall()
    files = {p for (p,) in con.execute("SELECT path FROM files").fetchall()}
    problems = con.execute(
        "SELECT path, code, message FROM problems WHERE code IN (SELECT unnest($1::VARCHAR[]))",
        [list(scan_codes)],
    ).fetchall()
    (count,) = con.execute("SELECT count(*) FROM problems").fetchone() or (0,)
    return IndexState(notes, files, {(p, c, m) for p, c, m in problems}, int(count))


def bound_memory(con: Connection, limit_mb: int, spill_dir: Path) -> None:
    """Cap DuckDB's memory for this connection and let big sorts and joins spill to disk.

    By default DuckDB may take 80% of the machine; a 100,000-note build then peaks at several
    GB in the loads (the postings sort above all). Insertion order is irrelevant to the index.
    """
    spill_dir.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET memory_limit = '{int(limit_mb)}MB'")
    con.execute("SET temp_directory = $1", [str(spill_dir)])
    con.execute("SET preserve_insertion_order = false")


# -- note rows ------------------------------------------------------------------------------


def delete_notes(con: Connection, note_ids: Iterable[str]) -> None:
    """Delete every row of these notes from every note table."""
    ids = sorted(note_ids)
    for table in NOTE_TABLES:
        delete_where_in(con, table, NOTE_KEY[table], ids)


def replace_problems(
    con: Connection,
    *,
    paths: Iterable[str],
    read_paths: Iterable[str],
    codes: Sequence[str],
    read_codes: Sequence[str],
    problems: Iterable[Problem],
) -> None:
    """Drop the problems this run re-examined, then insert the run's new ones.

    `paths`: every problem of these paths goes (parsed or gone notes); `read_paths`: only their
    read problems go (touched or unreadable notes keep their parse problems, as a rebuild
    would find them); `codes`: problems with these codes go wherever they are.
    """
    con.execute(
        "DELETE FROM problems WHERE path IN (SELECT unnest($1::VARCHAR[])) "
        "OR code IN (SELECT unnest($2::VARCHAR[])) "
        "OR (path IN (SELECT unnest($3::VARCHAR[])) AND code IN (SELECT unnest($4::VARCHAR[])))",
        [sorted(paths), list(codes), sorted(read_paths), list(read_codes)],
    )
    batch = new_batch("problems")
    for p in problems:
        batch.add(p.path, p.code, p.severity, p.message, p.line)
    load(con, batch)


def change_ids(con: Connection, id_changes: Mapping[str, str]) -> None:
    """Rare: a clash resolved differently moved an unchanged note to another id."""
    if not id_changes:
        return
    old, new = list(id_changes), list(id_changes.values())
    mapping = "(SELECT unnest($1::VARCHAR[]) AS old, unnest($2::VARCHAR[]) AS new) m"
    for table in NOTE_TABLES:
        column = NOTE_KEY[table]
        con.execute(
            f"UPDATE {table} SET {column} = m.new FROM {mapping} WHERE {column} = m.old",
            [old, new],
        )
    con.execute(
        f"UPDATE links SET target_id = m.new FROM {mapping} WHERE target_id = m.old", [old, new]
    )


def number_notes(con: Connection, numbers: Sequence[tuple[int, str]]) -> None:
    """Record (note number, id) for this run's staged rows, as temp table `note_numbers`."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE note_numbers AS SELECT unnest($1::INTEGER[]) AS number, "
        "unnest($2::VARCHAR[]) AS note_id",
        [[n for n, _ in numbers], [i for _, i in numbers]],
    )


def load_staged(con: Connection, files: Mapping[str, Sequence[Path]], max_row_bytes: int) -> None:
    """Load the staged JSON Lines files table by table, numbers joined to ids.

    Notes load first: a link's `target_id` is the id of the note at its target path, so the
    links' load joins `notes` once every note, new or kept, is there.
    """
    con.execute("SET enable_progress_bar = false")
    for table in STAGED_TABLES:
        paths = [str(p) for p in files.get(table, ())]
        if not paths:
            continue
        columns = COLUMNS[table]
        key = NOTE_KEY[table]
        # A JSON column is staged as its text: read as JSON it would come back double-encoded.
        spec = "{" + ", ".join(f"'{c}': '{_staged_type(t)}'" for c, t in columns) + "}"
        select = ", ".join(
            "m.note_id"
            if c == key
            else "t.id"
            if (table, c) == ("links", "target_id")
            else f"s.{c}"
            for c, _ in columns
        )
        target = " LEFT JOIN notes t ON t.path = s.target_path" if table == "links" else ""
        con.execute(
            f"INSERT INTO {table} SELECT {select} FROM read_json($1, format='newline_delimited', "
            f"columns={spec}, maximum_object_size={max_row_bytes}) s "
            f"JOIN note_numbers m ON m.number = s.{key}{target}",
            [paths],
        )


def _staged_type(sql_type: str) -> str:
    return "VARCHAR" if sql_type == "JSON" else sql_type


def update_fingerprints(con: Connection, touched: Sequence[tuple[str, int, int]]) -> None:
    """New (size, mtime_ns) for notes whose bytes did not change."""
    if not touched:
        return
    con.execute(
        "UPDATE notes SET size = u.size, mtime_ns = u.mtime_ns FROM (SELECT "
        "unnest($1::VARCHAR[]) AS path, unnest($2::BIGINT[]) AS size, "
        "unnest($3::BIGINT[]) AS mtime_ns) u WHERE notes.path = u.path",
        [[t[0] for t in touched], [t[1] for t in touched], [t[2] for t in touched]],
    )


def replace_files(
    con: Connection, removed: Iterable[str], added: Iterable[tuple[str, str, bool]]
) -> None:
    """Update the `files` table: drop removed paths, add (path, name_key, is_note) rows."""
    delete_where_in(con, "files", "path", sorted(removed))
    batch = new_batch("files")
    for row in sorted(added):
        batch.add(*row)
    load(con, batch)


# -- links ----------------------------------------------------------------------------------


StoredLink = tuple[str, int, str, str, str, str | None, str | None, bool | None]
"""(source_id, ord, target, subpath, source path, target_path, target_id, subpath_found)."""


def links_to_reresolve(
    con: Connection, name_keys: Iterable[str], target_paths: Iterable[str], skip: Iterable[str]
) -> list[StoredLink]:
    """Stored links whose answer can have changed: by name key or by target path, except
    those of the notes in `skip` (just loaded, resolved already)."""
    rows = con.execute(
        "SELECT l.source_id, l.ord, l.target, l.subpath, n.path, l.target_path, "
        "l.target_id, l.subpath_found FROM links l JOIN notes n ON n.id = l.source_id "
        "WHERE (l.name_key IN (SELECT unnest($1::VARCHAR[])) "
        "OR l.target_path IN (SELECT unnest($2::VARCHAR[]))) "
        "AND l.source_id NOT IN (SELECT unnest($3::VARCHAR[]))",
        [sorted(name_keys), sorted(target_paths), sorted(skip)],
    ).fetchall()
    return [tuple(r) for r in rows]


def update_links(
    con: Connection, updates: Sequence[tuple[str, int, str | None, str | None, bool | None]]
) -> None:
    """Set (target_path, target_id, subpath_found) of links given as (source_id, ord, ...)."""
    if not updates:
        return
    batch = Batch(
        "u",
        ["source_id", "ord", "target_path", "target_id", "subpath_found"],
        ["VARCHAR", "INTEGER", "VARCHAR", "VARCHAR", "BOOLEAN"],
    )
    for row in updates:
        batch.add(*row)
    con.execute(
        "UPDATE links SET target_path = u.target_path, target_id = u.target_id, "
        "subpath_found = u.subpath_found FROM (SELECT unnest($1::VARCHAR[]) AS source_id, "
        "unnest($2::INTEGER[]) AS ord, unnest($3::VARCHAR[]) AS target_path, "
        "unnest($4::VARCHAR[]) AS target_id, unnest($5::BOOLEAN[]) AS subpath_found) u "
        "WHERE links.source_id = u.source_id AND links.ord = u.ord",
        batch.data,
    )


def set_subpaths_found(con: Connection, updates: Sequence[tuple[str, int, bool | None]]) -> None:
    """Set `subpath_found` of links given as (source_id, ord, found)."""
    if not updates:
        return
    con.execute(
        "UPDATE links SET subpath_found = u.found FROM (SELECT unnest($1::VARCHAR[]) AS source_id, "
        "unnest($2::INTEGER[]) AS ord, unnest($3::BOOLEAN[]) AS found) u "
        "WHERE links.source_id = u.source_id AND links.ord = u.ord",
        [[u[0] for u in updates], [u[1] for u in updates], [u[2] for u in updates]],
    )


def headings_by_path(
    con: Connection, paths: Sequence[str]
) -> dict[str, tuple[list[Heading], list[Block]]]:
    """Headings and blocks of the indexed notes at `paths`; a path not indexed is absent."""
    if not paths:
        return {}
    found: dict[str, tuple[list[Heading], list[Block]]] = {
        p: ([], [])
        for (p,) in con.execute(
            "SELECT path FROM notes WHERE path IN (SELECT unnest($1::VARCHAR[]))", [list(paths)]
        ).fetchall()
    }
    for path, level, text, line, anchor in con.execute(
        "SELECT n.path, h.level, h.text, h.line, h.anchor FROM headings h "
        "JOIN notes n ON n.id = h.note_id WHERE n.path IN (SELECT unnest($1::VARCHAR[])) "
        "ORDER BY n.path, h.ord",
        [list(paths)],
    ).fetchall():
        found[path][0].append(Heading(level, text, line, anchor))
    for path, block_id, line in con.execute(
        "SELECT n.path, b.block_id, b.line FROM blocks b JOIN notes n ON n.id = b.note_id "
        "WHERE n.path IN (SELECT unnest($1::VARCHAR[]))",
        [list(paths)],
    ).fetchall():
        found[path][1].append(Block(block_id, line))
    return found


# -- the run's record -----------------------------------------------------------------------


def counts(con: Connection) -> tuple[int, int]:
    """(problems, notes) in the index."""
    (problems,) = con.execute("SELECT count(*) FROM problems").fetchone() or (0,)
    (notes,) = con.execute("SELECT count(*) FROM notes").fetchone() or (0,)
    return int(problems), int(notes)


def record_run(con: Connection, started: datetime, duration_ms: float, *values: Any) -> None:
    """Append the run's row to `reconcile_runs` (mode, then the counts in column order)."""
    runs = new_batch("reconcile_runs")
    runs.add(started, duration_ms, *values)
    load(con, runs)


# -- search tables --------------------------------------------------------------------------


def document_frequencies(con: Connection, note_ids: Iterable[str]) -> Counter[str]:
    """For each term, in how many of these notes' documents it occurs (before they go)."""
    ids = sorted(note_ids)
    if not ids:
        return Counter()
    rows = con.execute(
        "SELECT term, count(*) FROM (SELECT DISTINCT term, note_id, ord FROM postings "
        "WHERE note_id IN (SELECT unnest($1::VARCHAR[]))) GROUP BY term",
        [ids],
    ).fetchall()
    return Counter({term: int(n) for term, n in rows})


def load_postings(
    con: Connection, files: Sequence[Path], *, create: bool, max_line_bytes: int
) -> Counter[str]:
    """Load the workers' postings files; return, per term, how many new documents hold it.

    Numbers join to ids through `note_numbers`. A fresh index stores postings sorted by term,
    so zone maps skip other terms' row groups. `max_line_bytes` lifts DuckDB's 2 MB default
    line limit: a single "word" as long as a note must not fail the load.
    """
    files = [f for f in files if f.stat().st_size]
    if not files:
        return Counter()
    con.execute(
        "CREATE OR REPLACE TEMP TABLE staged_postings AS SELECT * FROM read_csv($1, "
        "delim='\t', header=false, quote='', escape='', columns={'term': 'VARCHAR', "
        "'number': 'INTEGER', 'ord': 'INTEGER', 'field': 'VARCHAR', 'tf': 'INTEGER'}, "
        f"max_line_size={max(max_line_bytes, 2_097_152)})",
        [[str(f) for f in files]],
    )
    order = " ORDER BY s.term, m.note_id, s.ord" if create else ""
    con.execute(
        "INSERT INTO postings SELECT s.term, m.note_id, s.ord, s.field, s.tf "
        f"FROM staged_postings s JOIN note_numbers m USING (number){order}"
    )
    added: Counter[str] = Counter()
    if not create:
        rows = con.execute(
            "SELECT term, count(*) FROM (SELECT DISTINCT s.term, s.number, s.ord FROM "
            "staged_postings s JOIN note_numbers m USING (number)) GROUP BY term"
        ).fetchall()
        added.update({term: int(n) for term, n in rows})
    con.execute("DROP TABLE staged_postings")
    return added


def recount_terms(con: Connection, delta: Counter[str] | None) -> None:
    """Keep `terms.df` and `search_stats` exactly what a rebuild computes.

    `delta` None counts everything (a fresh build). Otherwise it holds, per term, the documents
    added minus the documents removed that contain it; applying it touches only those terms,
    so a one-note edit costs in proportion to that note, not to the vault.
    """
    if delta is None:
        con.execute("DELETE FROM terms")
        con.execute(
            "INSERT INTO terms SELECT term, count(*)::INTEGER FROM "
            "(SELECT DISTINCT term, note_id, ord FROM postings) GROUP BY term ORDER BY term"
        )
    else:
        moved = sorted((term, n) for term, n in delta.items() if n)
        if moved:
            con.execute(
                "CREATE TEMP TABLE df_delta AS SELECT unnest($1::VARCHAR[]) AS term, "
                "unnest($2::INTEGER[]) AS d",
                [[t for t, _ in moved], [n for _, n in moved]],
            )
            con.execute(
                "UPDATE terms SET df = terms.df + x.d FROM df_delta x WHERE terms.term = x.term"
            )
            con.execute(
                "INSERT INTO terms SELECT x.term, x.d FROM df_delta x "
                "ANTI JOIN terms t ON t.term = x.term"
            )
            con.execute("DELETE FROM terms WHERE df <= 0")
            con.execute("DROP TABLE df_delta")
    con.execute("DELETE FROM search_stats")
    con.execute("INSERT INTO search_stats SELECT count(*), coalesce(sum(length), 0) FROM documents")

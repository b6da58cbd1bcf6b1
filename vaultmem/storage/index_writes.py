"""Every SQL statement reconcile runs: reading the index's state, and the one write transaction.

Reconcile (`index.reconcile`) decides; this module only says it in SQL. The reads are cheap
on purpose: a no-op reconcile is the stat walk plus `read_state`. The writes are set-based:
each is one statement over a list parameter or a staged file, never a row at a time, so a
one-note edit costs in proportion to that note and a full build runs at DuckDB's load speed.

Staged rows (JSON column lists, `storage.rows.StagedRows`) and postings (TSV,
`search.documents.postings_lines`, loaded by `storage.search_rows`) name notes by their number in
the run; `number_notes` stores number → id once, and each load joins through it. Rows of a number
missing from that table (a note re-read under the lock because it changed after its worker read it)
are dropped by the join.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from vaultmem.core.documents import note_key
from vaultmem.core.note_model import Block, Heading, Problem
from vaultmem.storage.rows import (
    COLUMNS,
    NOTE_KEY,
    NOTE_TABLES,
    STAGED_COLUMNS,
    STAGED_TABLES,
    STRUCTURE_TABLES,
)
from vaultmem.storage.staged_files import statement_groups
from vaultmem.storage.store import (
    Batch,
    Connection,
    build_side_as_written,
    delete_where_in,
    load,
    new_batch,
    scanning_once,
)


class IndexState(NamedTuple):
    """What reconcile reads of the index before deciding anything.

    `notes` rows are (path, id, size, mtime_ns, content_hash, claimed_id); `scan_problems`
    the stored problems a scan (not a parse) can produce, to tell a no-op from a change;
    `journal` the digest of the rename journal the ids were assigned with (`record_journal`).
    A named tuple: a dataclass would compile its methods from source at every run's import.
    """

    notes: list[tuple[str, str, int, int, str, str | None]]
    files: frozenset[str]
    scan_problems: set[tuple[str, str, str]]
    problem_count: int
    journal: str | None


def read_state(con: Connection, scan_codes: Sequence[str]) -> IndexState:
    notes = con.execute(
        "SELECT path, id, size, mtime_ns, content_hash, claimed_id FROM notes"
    ).fetchall()
    files = frozenset(map(itemgetter(0), con.execute("SELECT path FROM files").fetchall()))
    problems = con.execute(
        "SELECT path, code, message FROM problems WHERE code IN (SELECT unnest($1::VARCHAR[]))",
        [list(scan_codes)],
    ).fetchall()
    (count,) = con.execute("SELECT count(*) FROM problems").fetchone() or (0,)
    journal = con.execute(f"SELECT value FROM meta WHERE key = '{_JOURNAL_KEY}'").fetchone()
    return IndexState(
        notes,
        files,
        {(p, c, m) for p, c, m in problems},
        int(count),
        None if journal is None else str(journal[0]),
    )


_JOURNAL_KEY = "rename_journal"


def record_journal(con: Connection, digest: str) -> None:
    """Record in `meta` the digest of the rename journal this run assigned ids with."""
    con.execute(f"DELETE FROM meta WHERE key = '{_JOURNAL_KEY}'")
    con.execute(f"INSERT INTO meta VALUES ('{_JOURNAL_KEY}', $1)", [digest])


def bound_memory(con: Connection, limit_mb: int, spill_dir: Path) -> None:
    """Cap DuckDB's memory for this connection and let big sorts and joins spill to disk.

    By default DuckDB may take 80% of the machine; a 100,000-note build then peaks at several
    GB in the loads (the postings sort above all). Insertion order is irrelevant to the index.
    """
    spill_dir.mkdir(parents=True, exist_ok=True)
    # In MiB: DuckDB prints the setting back exactly then, so `scanning_once` restores it.
    con.execute(f"SET memory_limit = '{int(limit_mb)}MiB'")
    con.execute("SET temp_directory = $1", [str(spill_dir)])
    con.execute("SET preserve_insertion_order = false")


# -- note rows ------------------------------------------------------------------------------


class Deleted(NamedTuple):
    """What `delete_notes` hands back of the rows it deleted (with `outlines`): each note's
    headings and blocks by id, and the stored answer of each subpath link they made,
    {(target path, subpath): found}."""

    outlines: dict[str, tuple[list[Heading], list[Block]]]
    subpaths: dict[tuple[str, str], bool]
    kept: frozenset[str] = frozenset()
    """The notes whose `STRUCTURE_TABLES` rows stayed (`delete_notes`' `structures`)."""


def delete_notes(
    con: Connection,
    note_ids: Iterable[str],
    *,
    postings: bool = True,
    outlines: bool = False,
    structures: Mapping[str, str] | None = None,
) -> Deleted:
    """Delete every row of these notes from every note table (but `postings` when False:
    reconcile deletes those with `search_rows.delete_postings`, which counts them too); with
    `outlines`, return each note's headings and blocks as they were, by id, and what their
    subpath links found (from the deletes themselves, `RETURNING`: no other read; levels,
    texts and lines, block ids: what a subpath is checked against).

    Postings go by their integer `note_key`: the table is sorted by term, so every one of its
    ~22M rows (100,000 notes) is looked at, and comparing a BIGINT costs a fifth of comparing
    the id string (measured: 0.1 s against 0.5 s of CPU). The key is unique per note already
    (search groups on it).

    `structures`: the new `notes.structure` of notes parsed again under the same id. A note
    whose stored structure is that one keeps its `STRUCTURE_TABLES` rows (the load then
    stages none of them, `number_notes`' `kept`): an edit of its text alone rewrites no link,
    heading, block, tag or alias, and scans none of those tables (they have no index by note).
    """
    ids = sorted(note_ids)
    was = Deleted({i: ([], []) for i in ids}, {})
    kept: frozenset[str] = frozenset()
    for table in NOTE_TABLES:
        if table == "postings":
            if ids and postings:
                con.execute(
                    "DELETE FROM postings WHERE note_key IN (SELECT unnest($1::BIGINT[]))",
                    [[note_key(i) for i in ids]],
                )
        elif table == "notes" and structures:  # first of NOTE_TABLES: `kept` is known below
            stored = delete_where_in(con, table, NOTE_KEY[table], ids, "id, structure")
            kept = frozenset(i for i, old in stored if structures.get(i) == old)
        else:
            gone = [i for i in ids if i not in kept] if table in STRUCTURE_TABLES else ids
            returning = _OUTLINE_RETURNING.get(table, "") if outlines else ""
            for row in delete_where_in(con, table, NOTE_KEY[table], gone, returning):
                if table == "headings":
                    was.outlines[row[0]][0].append(Heading(row[1], row[2], row[3], ""))
                elif table == "blocks":
                    was.outlines[row[0]][1].append(Block(row[1], 0))
                elif row[0] and row[1] and row[2] is not None:  # a checked subpath link
                    was.subpaths[(row[0], row[1])] = bool(row[2])
    return was._replace(kept=kept) if outlines else Deleted({}, {}, kept)


_OUTLINE_RETURNING = {
    "headings": "note_id, level, text, line",
    "blocks": "note_id, block_id",
    "links": "target_path, subpath, subpath_found",
}


def replace_problems(
    con: Connection,
    *,
    paths: Iterable[str],
    read_paths: Iterable[str],
    codes: Sequence[str],
    read_codes: Sequence[str],
    problems: Iterable[Problem],
    stored: Collection[tuple[str, str, str]] | None = None,
) -> None:
    """Drop the problems this run re-examined, then insert the run's new ones.

    `paths`: every problem of these paths goes (parsed or gone notes); `read_paths`: only their
    read problems go (touched or unreadable notes keep their parse problems, as a rebuild
    would find them); `codes`: problems with these codes go wherever they are.

    `stored`: the (path, code, message) rows the index holds with one of `codes`, when known
    (the index state). Then a row the run finds again stays as it is and only the difference
    is written: a whole-vault walk re-examines every scan problem, and rewriting them all made
    a one-note edit cost as much as the vault's conflict copies (3,064 rows at 100,000
    generated notes). Duplicates or a line number among them: every row is written again.
    """
    problems = list(problems)
    paths, read_paths = sorted(paths), sorted(read_paths)
    delta = _problem_delta(stored, paths, read_paths, codes, read_codes, problems)
    kept, gone = delta if delta is not None else (frozenset(), [])
    con.execute(  # with a delta, no row goes for its code alone: `gone` names those
        "DELETE FROM problems WHERE path IN (SELECT unnest($1::VARCHAR[])) "
        "OR code IN (SELECT unnest($2::VARCHAR[])) "
        "OR (path IN (SELECT unnest($3::VARCHAR[])) AND code IN (SELECT unnest($4::VARCHAR[])))",
        [paths, list(codes) if delta is None else [], read_paths, list(read_codes)],
    )
    if gone:
        con.execute(
            "DELETE FROM problems p USING (SELECT unnest($1::VARCHAR[]) AS path, "
            "unnest($2::VARCHAR[]) AS code, unnest($3::VARCHAR[]) AS message) g "
            "WHERE p.path = g.path AND p.code = g.code AND p.message = g.message",
            [[g[0] for g in gone], [g[1] for g in gone], [g[2] for g in gone]],
        )
    batch = new_batch("problems")
    for p in problems:
        if (p.path, p.code, p.message) not in kept:
            batch.add(p.path, p.code, p.severity, p.message, p.line)
    load(con, batch)


def _problem_delta(
    stored: Collection[tuple[str, str, str]] | None,
    paths: Sequence[str],
    read_paths: Sequence[str],
    codes: Sequence[str],
    read_codes: Sequence[str],
    problems: Sequence[Problem],
) -> tuple[frozenset[tuple[str, str, str]], list[tuple[str, str, str]]] | None:
    """(the stored rows of `codes` the run finds again, which stay; the others, which go), or
    None when the difference cannot stand for the rows (nothing known, or found problems of
    `codes` that repeat or carry a line, which a (path, code, message) key cannot tell)."""
    if stored is None or not codes:
        return None
    wanted = set(codes)
    mine = [p for p in problems if p.code in wanted]
    again = {(p.path, p.code, p.message) for p in mine}
    if len(again) != len(mine) or any(p.line is not None for p in mine):
        return None
    dropped, read, read_only = set(paths), set(read_paths), set(read_codes)
    left = [
        s
        for s in stored
        if s[1] in wanted and not (s[0] in dropped or (s[0] in read and s[1] in read_only))
    ]
    kept = frozenset(s for s in left if s in again)
    return kept, sorted(s for s in left if s not in kept)


def problems_after(
    stored: Iterable[tuple[str, str, str]],
    kept_codes: Sequence[str],
    *,
    paths: Iterable[str],
    read_paths: Iterable[str],
    codes: Sequence[str],
    read_codes: Sequence[str],
    problems: Iterable[Problem],
) -> set[tuple[str, str, str]]:
    """What `replace_problems` leaves of the `stored` (path, code, message) problems with a
    code in `kept_codes`, given the same arguments: the index's state after the write
    without reading it back (`storage.index_state`)."""
    dropped_paths, read = set(paths), set(read_paths)
    dropped_codes, read_only = set(codes), set(read_codes)
    kept = set(kept_codes)
    out = {
        (p, c, m)
        for p, c, m in stored
        if not (p in dropped_paths or c in dropped_codes or (p in read and c in read_only))
    }
    out.update((p.path, p.code, p.message) for p in problems if p.code in kept)
    return out


def change_ids(con: Connection, id_changes: Mapping[str, str]) -> None:
    """Rare: a clash resolved differently moved an unchanged note to another id."""
    if not id_changes:
        return
    old, new = list(id_changes), list(id_changes.values())
    mapping = "(SELECT unnest($1::VARCHAR[]) AS old, unnest($2::VARCHAR[]) AS new) m"
    for table in NOTE_TABLES:
        if table == "postings":
            continue  # keyed by the id's hash: below
        column = NOTE_KEY[table]
        con.execute(
            f"UPDATE {table} SET {column} = m.new FROM {mapping} WHERE {column} = m.old",
            [old, new],
        )
    con.execute(
        f"UPDATE links SET target_id = m.new FROM {mapping} WHERE target_id = m.old", [old, new]
    )
    con.execute(  # the integer key derives from the id
        "UPDATE notes SET note_key = m.note_key FROM (SELECT unnest($1::VARCHAR[]) AS id, "
        "unnest($2::BIGINT[]) AS note_key) m WHERE notes.id = m.id",
        [new, [note_key(i) for i in new]],
    )
    con.execute(  # a swap of two ids is one pass: each row matches its old key only
        "UPDATE postings SET note_key = m.new FROM (SELECT unnest($1::BIGINT[]) AS old, "
        "unnest($2::BIGINT[]) AS new) m WHERE postings.note_key = m.old",
        [[note_key(i) for i in old], [note_key(i) for i in new]],
    )


def number_notes(
    con: Connection, numbers: Sequence[tuple[int, str]], kept: Collection[str] = ()
) -> None:
    """Record (note number, id, integer note key, whether its structure rows were kept) for
    this run's staged rows, as temp table `note_numbers`: staged rows and postings join it to
    learn their note's id; `kept` (`Deleted.kept`): the notes whose `STRUCTURE_TABLES` rows
    stayed in the index, whose staged ones the load leaves out."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE note_numbers AS SELECT unnest($1::INTEGER[]) AS number, "
        "unnest($2::VARCHAR[]) AS note_id, unnest($3::BIGINT[]) AS note_key, "
        "unnest($4::BOOLEAN[]) AS kept",
        [
            [n for n, _ in numbers],
            [i for _, i in numbers],
            [note_key(i) for _, i in numbers],
            [i in kept for _, i in numbers],
        ],
    )


def load_staged(
    con: Connection,
    files: Mapping[str, Sequence[Path]],
    largest: Mapping[str, int] | None = None,
    *,
    structure: bool = True,
) -> None:
    """Load the staged files table by table, numbers joined to ids.

    Each file holds JSON objects of column lists (`storage.rows.StagedRows.write`), one per
    chunk: each read as one row of lists, then unnested, the lists zipped position by
    position. `largest`: each table's largest object in bytes (else the largest file's size
    stands for it). Notes load first: a link's `target_id` is the id of the note at its
    target path, so the links' load joins `notes` once every note, new or kept, is there.
    `structure=False`: every note of the run kept its `STRUCTURE_TABLES` rows (`Deleted.kept`),
    so their files are not read at all (an edit of a paragraph: 4-11 ms a table saved).
    """
    con.execute("SET enable_progress_bar = false")
    for table in STAGED_TABLES:
        paths = [str(p) for p in files.get(table, ())]
        if not paths or (not structure and table in STRUCTURE_TABLES):
            continue
        # DuckDB reads a JSON object whole: its buffer must hold the largest one
        known = None if largest is None else largest.get(table)
        biggest = known if known is not None else max(os.path.getsize(p) for p in paths)
        size = max(biggest + 1, _JSON_OBJECT_BYTES)
        columns = COLUMNS[table]
        staged = STAGED_COLUMNS[table]
        key = NOTE_KEY[table]
        # A JSON column is staged as its text: read as JSON it would come back double-encoded.
        spec = "{" + ", ".join(f"'{c}': '{_staged_type(t)}[]'" for c, t in staged) + "}"
        unnested = ", ".join(f"unnest({c}) AS {c}" for c, _ in staged)
        select = ", ".join(
            "m.note_id"
            if c == key
            else "m.note_key"  # computed with the number → id map, never staged
            if (table, c) == ("notes", "note_key")
            else "t.id"
            if (table, c) == ("links", "target_id")
            else f"s.{c}"
            for c, _ in columns
        )
        target = " LEFT JOIN notes t ON t.path = s.target_path" if table == "links" else ""
        if table in STRUCTURE_TABLES:  # a note whose structure stayed keeps its rows
            target += " WHERE NOT m.kept"
        # A large load is probed by its files, as many threads as files (`build_side_as_written`);
        # not the documents: their insert is one thread's work either way (one thread writing
        # compressed rows, or the commit merging two threads' row groups: benchmarks/HISTORY.md).
        parallel = table != "documents" and sum(map(os.path.getsize, paths)) > _PARALLEL_LOAD_BYTES
        with build_side_as_written(con) if parallel else nullcontext():
            for group in statement_groups(paths):  # DuckDB holds a statement's files whole
                con.execute(
                    f"INSERT INTO {table} SELECT {select} FROM (SELECT {unnested} FROM "
                    f"read_json($1, format='unstructured', columns={spec}, "
                    f"maximum_object_size={size})) s "
                    f"JOIN note_numbers m ON m.number = s.{key}{target}",
                    [group],
                )


_JSON_OBJECT_BYTES = 16 * 1024 * 1024
"""DuckDB's default `maximum_object_size`, kept as the least buffer."""

_PARALLEL_LOAD_BYTES = 1024 * 1024
"""A table's staged files from this size on are the load's probe side; below it the plan hardly
matters, and an edit's load keeps its few statements."""


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


RELINKED = "relinked_links"
"""The temp table `links_to_reresolve` keeps the whole rows it found in (with their row ids),
for `update_links` in the same transaction."""


def links_to_reresolve(
    con: Connection, name_keys: Iterable[str], target_paths: Iterable[str], skip: Iterable[str]
) -> list[StoredLink]:
    """Stored links whose answer can have changed: by name key or by target path, except
    those of the notes in `skip` (just loaded, resolved already). The whole rows stay in the
    temp table `RELINKED` for `update_links`.

    The links are filtered first and their notes' paths looked up after: joining every link
    to `notes` before the filter cost twice as much at 650,000 links. The lists are hash
    joins, not `list_contains`, which compares each row with every element: a folder of 2,948
    notes moved at 100,000 notes asked ~6,000 keys and paths, 9.9 s against 0.6 s."""
    with scanning_once(con):
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {RELINKED} AS SELECT rowid AS row_id, * "
            "FROM links WHERE (name_key IN (SELECT unnest($1::VARCHAR[])) "
            "OR target_path IN (SELECT unnest($2::VARCHAR[]))) "
            "AND source_id NOT IN (SELECT unnest($3::VARCHAR[]))",
            [sorted(name_keys), sorted(target_paths), sorted(skip)],
        )
    rows = con.execute(
        "SELECT source_id, ord, target, subpath, target_path, target_id, subpath_found "
        f"FROM {RELINKED}"
    ).fetchall()
    if not rows:
        return []
    paths = dict(
        con.execute(
            "SELECT id, path FROM notes WHERE id IN (SELECT unnest($1::VARCHAR[]))",
            [sorted({r[0] for r in rows})],
        ).fetchall()
    )
    return [(s, o, t, sp, paths[s], tp, ti, f) for s, o, t, sp, tp, ti, f in rows if s in paths]


def update_links(
    con: Connection, updates: Sequence[tuple[str, int, str | None, str | None, bool | None]]
) -> None:
    """Set (target_path, target_id, subpath_found) of links given as (source_id, ord, ...),
    each one of the rows `links_to_reresolve` found in this transaction.

    The rows are deleted by row id and inserted again with the new answers, not UPDATEd:
    DuckDB's checkpoint rewrites every updated column of each row group an UPDATE touched, so
    60 links re-resolved at 100,000 notes (a note deleted, or created with backlinks waiting)
    made the close take 0.4-0.6 s; deleted and inserted, 16-33 ms. The whole rows come from
    `RELINKED`: reading them again from `links` cost ~0.14 s. Nothing reads links in their
    stored order."""
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
        "CREATE OR REPLACE TEMP TABLE answered_links AS SELECT DISTINCT ON (r.row_id) "
        "r.* REPLACE (u.target_path AS target_path, u.target_id AS target_id, "
        "u.subpath_found AS subpath_found) "
        f"FROM {RELINKED} r JOIN (SELECT unnest($1::VARCHAR[]) AS source_id, "
        "unnest($2::INTEGER[]) AS ord, unnest($3::VARCHAR[]) AS target_path, "
        "unnest($4::VARCHAR[]) AS target_id, unnest($5::BOOLEAN[]) AS subpath_found) u "
        "USING (source_id, ord)",
        batch.data,
    )
    con.execute("DELETE FROM links WHERE rowid IN (SELECT row_id FROM answered_links)")
    con.execute("INSERT INTO links SELECT * EXCLUDE (row_id) FROM answered_links")
    con.execute(f"DROP TABLE answered_links; DROP TABLE {RELINKED}")


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


class StoredOutline(NamedTuple):
    """What a subpath into one indexed note is checked against: its headings' anchors and
    levels in line order, and its block ids as written."""

    anchors: list[str]
    levels: list[int]
    block_ids: list[str]


def outlines_by_path(con: Connection, paths: Sequence[str]) -> dict[str, StoredOutline]:
    """The stored outline of each indexed note at `paths`; a path not indexed is absent.

    Grouped in one statement, so the rows reach Python as one list per note (a build checks
    the subpaths into ~53,000 notes at 100,000: 0.33 s so against 0.65-0.8 s for a row per
    heading turned into `Heading` objects, benchmarks/HISTORY.md)."""
    if not paths:
        return {}
    rows = con.execute(
        "WITH t AS (SELECT id, path FROM notes WHERE path IN (SELECT unnest($1::VARCHAR[]))), "
        "h AS (SELECT note_id, list(anchor ORDER BY line, ord) AS anchors, "
        "list(level ORDER BY line, ord) AS levels FROM headings "
        "WHERE note_id IN (SELECT id FROM t) GROUP BY note_id), "
        "b AS (SELECT note_id, list(block_id) AS ids FROM blocks "
        "WHERE note_id IN (SELECT id FROM t) GROUP BY note_id) "
        "SELECT t.path, h.anchors, h.levels, b.ids FROM t "
        "LEFT JOIN h ON h.note_id = t.id LEFT JOIN b ON b.note_id = t.id",
        [list(paths)],
    ).fetchall()
    return {
        path: StoredOutline(anchors or [], levels or [], ids or [])
        for path, anchors, levels, ids in rows
    }


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

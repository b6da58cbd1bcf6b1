"""Loading the BM25 tables: postings from the parse workers' TSV files, `terms` and `search_stats`.

Layout, chosen so a query reads only its terms' postings and nothing else:

- one `postings` row per (term, document) with the **field-weighted** tf already summed
  (`documents.FIELD_WEIGHTS`; changing a weight changes the tokenizer version, so the index
  is rebuilt), the document's length and the whole note's length copied in, and an integer
  `note_key` (63 bits of BLAKE2b of the note id) to group on instead of the string id; the
  workers write the rows as TSV (`search.documents.postings_lines`);
- a fresh index writes postings sorted by term, so DuckDB's zone maps skip every row group
  that cannot hold a query term; a one-note edit appends that note's rows (a small unsorted
  tail until the next rebuild).

`terms.df` and `search_stats` stay exactly what a rebuild computes: a fresh build counts them,
an incremental run applies per-term deltas (documents added minus documents removed).

Boilerplate (`search.documents.BOILERPLATE_NOTES`): the workers cannot know which lines the rest of
the vault repeats, so they write every section's full postings and its candidate line keys
(`documents.line_keys`). Between staging and inserting the postings, `load_postings` recounts, in
how many notes, the lines of the notes loaded now and of the notes gone (`notes_documents`, read
before their rows go), as a delta on `line_counts`, which holds every line's count;
`boilerplate_lines` keeps the lines at or above the threshold. Then it takes out of the staged
sections holding one what those lines add (`boilerplate_weights`: what is left is
`section_postings`, the section without them) and re-tokenises, when a line crossed the threshold
either way, every stored section holding that line. A line crosses one note at a time, so that
costs about `BOILERPLATE_NOTES` sections; a vault without boilerplate pays the delta's joins with
`line_counts` per run. A build from nothing (`build_postings`) has no stored sections and nothing
to recount: it subtracts the boilerplate weights while it reads the workers' files into `postings`,
with no staged table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from vaultmem.core.documents import (
    BOILERPLATE_NOTES,
    boilerplate_tsv_lines,
    note_key,
    section_postings,
)
from vaultmem.core.tokenizer import DEFAULT_LANGUAGE
from vaultmem.storage.rows import PRECUT_LINES, PRECUT_WEIGHTS
from vaultmem.storage.store import Connection, scanning_once


def delete_postings(con: Connection, note_ids: Iterable[str]) -> Counter[str]:
    """Delete these notes' postings; return, per term, in how many of their documents it
    occurred (before they go).

    One scan of the table instead of two: the rows of the notes' integer keys are set aside
    (rowid, term), counted, then deleted by rowid (~0.06 s of CPU against ~0.09 s for counting
    and deleting by key at 22M postings).
    """
    keys = sorted(note_key(i) for i in note_ids)
    if not keys:
        return Counter()
    # One key (a one-note edit) is compared in the scan: cheaper than joining a list.
    one = len(keys) == 1
    match = "= $1" if one else "IN (SELECT unnest($1::BIGINT[]))"
    with scanning_once(con):
        con.execute(
            "CREATE OR REPLACE TEMP TABLE gone_postings AS SELECT rowid AS r, term FROM postings "
            f"WHERE note_key {match}",
            [keys[0] if one else keys],
        )
    if one:  # one note's few hundred rows: counted here, a GROUP BY costs more to set up
        counts = Counter(t for (t,) in con.execute("SELECT term FROM gone_postings").fetchall())
    else:
        rows = con.execute("SELECT term, count(*) FROM gone_postings GROUP BY term").fetchall()
        counts = Counter({term: int(n) for term, n in rows})
    con.execute("DELETE FROM postings WHERE rowid IN (SELECT r FROM gone_postings)")
    con.execute("DROP TABLE gone_postings")
    return counts


class NotesDocuments(NamedTuple):
    """What notes' documents move `search_stats` and `line_counts` by, when they go or come:
    their `Stats`, and each candidate boilerplate line key with how many of the notes hold it."""

    stats: Stats
    lines: list[tuple[int, int]]


FEW_DOCUMENTS = 2_000
"""Up to this many documents, `notes_documents` reads them once and counts here."""


def notes_documents(
    con: Connection, note_ids: Collection[str] | None = None, *, few: int = FEW_DOCUMENTS
) -> NotesDocuments:
    """`document_stats` of these notes (`note_ids` None: the notes staged in this run,
    `note_numbers`), and their candidate boilerplate line keys, each with how many of the notes
    hold it (read before the rows of notes that go: what `line_counts` loses with them). In
    one read when they hold at most `few` documents: a one-note edit reads its few rows once
    (1.5 ms) instead of aggregating them twice (4-5 ms at 10,000 and at 100,000 notes). More
    documents are aggregated by DuckDB, as before."""
    if note_ids is not None and not note_ids:
        return NotesDocuments(Stats(0, 0, 0), [])
    where, params = _documents_of(note_ids)
    many = note_ids is not None and len(note_ids) > few  # every note has a document at least
    rows = (
        []
        if many
        else con.execute(
            f"SELECT note_id, ord, length, line_keys FROM documents WHERE {where} LIMIT {few + 1}",
            params,
        ).fetchall()
    )
    if many or len(rows) > few:
        ids = None if note_ids is None else list(note_ids)
        return NotesDocuments(document_stats(con, ids), _line_keys(con, where, params))
    holding: dict[int, set[str]] = {}
    for note_id, _, _, keys in rows:
        for k in keys or ():
            holding.setdefault(int(k), set()).add(note_id)
    stats = Stats(len(rows), sum(1 for r in rows if r[1] == 0), sum(int(r[2]) for r in rows))
    return NotesDocuments(stats, sorted((k, len(held)) for k, held in holding.items()))


def _documents_of(note_ids: Collection[str] | None) -> tuple[str, list[object]]:
    """The WHERE clause, and its parameters, of these notes' documents (None: the staged ones)."""
    if note_ids is None:
        return "note_id IN (SELECT note_id FROM note_numbers)", []
    return "note_id IN (SELECT unnest($1::VARCHAR[]))", [sorted(note_ids)]


def _line_keys(con: Connection, where: str, params: list[object]) -> list[tuple[int, int]]:
    """Each candidate line key of the documents `where` selects, with how many notes hold it."""
    rows = con.execute(
        "SELECT k, count(DISTINCT note_id) FROM (SELECT note_id, unnest(line_keys) AS k "
        f"FROM documents WHERE {where}) GROUP BY k",
        params,
    ).fetchall()
    return sorted((int(k), int(n)) for k, n in rows)


def load_postings(
    con: Connection,
    files: Sequence[Path],
    *,
    max_line_bytes: int,
    gone_lines: Sequence[tuple[int, int]],
    staged_lines: Sequence[tuple[int, int]],
    language: str = DEFAULT_LANGUAGE,
) -> Counter[str]:
    """Load the workers' postings files into an index that has notes (a build from nothing
    takes `build_postings`), boilerplate lines left out; return, per term, how many
    documents hold it now minus before, for the new notes and the stored sections re-scored.

    The files number notes by their number in the run; the temp table `note_numbers`
    (`index_writes.number_notes`) maps numbers to ids and keys. `max_line_bytes` lifts
    DuckDB's 2 MB default line limit: one "word" as long as a note must not fail the load.
    `gone_lines` and `staged_lines`: the line keys of the notes deleted in this run (changed
    ones included) and of the notes staged now (`notes_documents` of each).
    """
    files = [f for f in files if f.stat().st_size]
    if not files:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE staged_postings (term VARCHAR, number INTEGER, "
            "ord INTEGER, tf DOUBLE, length INTEGER, note_length INTEGER)"
        )
    else:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE staged_postings AS SELECT * FROM "
            + _read_postings(max_line_bytes),
            [[str(f) for f in files]],
        )
    rescored = _Rescore(language, files[0].parent if files else None, max_line_bytes)
    shift = _drop_boilerplate(con, staged_lines, gone_lines, rescore=rescored)
    con.execute(
        "INSERT INTO postings SELECT s.term, m.note_key, s.ord, s.tf, s.length, "
        "s.note_length FROM staged_postings s JOIN note_numbers m USING (number)"
    )
    added: Counter[str] = Counter()
    rows = con.execute(
        "SELECT s.term, count(*) FROM staged_postings s JOIN note_numbers m USING (number) "
        "GROUP BY s.term"
    ).fetchall()
    added.update({term: int(n) for term, n in rows})
    added.update(shift)
    con.execute("DROP TABLE staged_postings")
    return added


def load_changed_postings(
    con: Connection,
    files: Sequence[Path],
    *,
    removed_df: Counter[str],
    removed: NotesDocuments,
    max_line_bytes: int,
    language: str = DEFAULT_LANGUAGE,
) -> None:
    """The staged notes' postings (`load_postings`), then `terms` and `search_stats` moved by
    the change alone: documents added minus documents removed. `removed_df` and `removed`
    are what `delete_postings` and `notes_documents` read of the notes whose rows went (an
    edit's changed and gone notes, a scoped upgrade's notes)."""
    added = notes_documents(con)
    added_df = load_postings(
        con,
        files,
        max_line_bytes=max_line_bytes,
        gone_lines=removed.lines,
        staged_lines=added.lines,
        language=language,
    )
    added_df.subtract(removed_df)
    recount_terms(
        con,
        added_df,
        Stats(*(a - r for a, r in zip(added.stats, removed.stats, strict=True))),
    )


def build_postings(
    con: Connection,
    files: Sequence[Path],
    *,
    max_line_bytes: int,
    language: str = DEFAULT_LANGUAGE,
    scored: Sequence[tuple[Any, Any]] | None = None,
    cut: BoilerplateCut | None = None,
    precut: Sequence[Path] = (),
) -> None:
    """A fresh build's postings, then its `terms` and `search_stats` counted from them
    (`recount_terms(con, None)`): what a build from nothing and an upgrade of the search
    tables both end with. `scored`: the (line key, notes) of `count_boilerplate_lines`, when
    the files' postings already lack those lines' weights (`documents.without_boilerplate`,
    an upgrade's workers): they are then loaded as they are. `cut`: where many sections'
    boilerplate weights are cut (a pool's parts), else this process. `precut`: the weights
    the workers cut while they parsed, and the lines they cut (`index.early_cut`)."""
    _insert_fresh_postings(
        con,
        files,
        max_line_bytes=max_line_bytes,
        language=language,
        scored=scored,
        cut=cut,
        precut=precut,
    )
    recount_terms(con, None)


def _insert_fresh_postings(
    con: Connection,
    files: Sequence[Path],
    *,
    max_line_bytes: int,
    language: str,
    scored: Sequence[tuple[Any, Any]] | None = None,
    cut: BoilerplateCut | None = None,
    precut: Sequence[Path] = (),
) -> None:
    """The workers' TSV files, boilerplate lines taken out, joined to note ids and sorted by
    term, in one INSERT straight from the files.

    `load_postings` stages the files in a temp table and corrects it in place; a fresh build
    has nothing to compare with, so it reads them once instead: the boilerplate weights
    (`boilerplate_weights` of every staged section holding a line found in
    `BOILERPLATE_NOTES` notes) are subtracted in the INSERT by a LEFT JOIN, and a posting they
    bring to zero is left out, as `load_postings`' DELETE and UPDATE leave it. On the 10,000-note
    generated vault the postings took 2.5-2.8 s of CPU that way, 2.0-2.2 s this way
    (benchmarks/HISTORY.md). Files whose postings are `scored` already need neither.
    The temp table `note_numbers` maps the files' note numbers to ids and keys.
    """
    files = [f for f in files if f.stat().st_size]
    counts = count_boilerplate_lines(con) if scored is None else list(scored)
    con.execute("DELETE FROM boilerplate_lines")
    _insert_boilerplate_lines(con, counts)
    if not files:
        return
    lines = frozenset(int(k) for k, _ in counts)
    weights = (
        scored is None
        and bool(lines)
        and _stage_boilerplate_weights(
            con, lines, files[0].parent, language, max_line_bytes, cut, precut
        )
    )
    tf, join, keep = "s.tf", "", ""
    if weights:
        tf = "s.tf - coalesce(b.tf, 0)"
        join = (
            " LEFT JOIN fresh_boilerplate b "
            "ON b.number = s.number AND b.ord = s.ord AND b.term = s.term"
        )
        keep = " WHERE b.tf IS NULL OR b.tf <> s.tf"
    for run in postings_runs(files):
        con.execute(
            f"INSERT INTO postings SELECT s.term, m.note_key, s.ord, {tf}, s.length, "
            f"s.note_length FROM {_read_postings(max_line_bytes)} s "
            f"JOIN note_numbers m USING (number){join}{keep} ORDER BY s.term",
            [[str(f) for f in run]],
        )
    if weights:
        con.execute("DROP TABLE fresh_boilerplate")


_BUCKET_FILE = re.compile(r"\.postings\.(\d+)\.tsv$")


def postings_runs(files: Sequence[Path]) -> list[list[Path]]:
    """The postings files in the runs a fresh build sorts one after the other: one run per
    term bucket, in bucket order, when every file is a bucket's (`<stem>.postings.<bucket>.tsv`,
    `core.documents.bucketed_postings_lines`); else one run of them all. A bucket's terms all
    sort after the previous bucket's, so appending the sorted runs in order is the table sorted
    by term, and each sort is a fraction of the whole one (which spilled at 22M postings)."""
    buckets: dict[int, list[Path]] = {}
    for path in files:
        found = _BUCKET_FILE.search(path.name)
        if found is None:
            return [list(files)]
        buckets.setdefault(int(found.group(1)), []).append(path)
    return [buckets[b] for b in sorted(buckets)]


# The staged sections holding a line of `boilerplate_lines`: their keys unnested and
# semi-joined: far less CPU than `list_has_any` with the lines as a list.
_FRESH_SECTIONS = """SELECT m.number, d.ord, d.heading, d.text FROM documents d
JOIN note_numbers m USING (note_id)
SEMI JOIN (SELECT x.note_id, x.ord FROM (
    SELECT note_id, ord, unnest(line_keys) AS k FROM documents WHERE ord > 0) x
    SEMI JOIN boilerplate_lines b ON b.line_key = x.k) h
ON h.note_id = d.note_id AND h.ord = d.ord"""

# The sections whose weights the workers cut (`index.early_cut`) under exactly their
# boilerplate lines: no line of theirs cut that is not one, none of theirs left uncut.
_PRECUT_DONE = """CREATE OR REPLACE TEMP TABLE precut_done AS
WITH held AS (
    SELECT m.number, x.ord, x.k FROM (
        SELECT note_id, ord, unnest(line_keys) AS k FROM documents WHERE ord > 0) x
    SEMI JOIN boilerplate_lines b ON b.line_key = x.k
    JOIN note_numbers m USING (note_id)),
cut AS (SELECT DISTINCT number, ord, k FROM read_csv($1, delim='\t', header=false, quote='',
    escape='', columns={'number': 'INTEGER', 'ord': 'INTEGER', 'k': 'BIGINT'}))
SELECT number, ord FROM cut
EXCEPT SELECT number, ord FROM (SELECT * FROM held EXCEPT SELECT * FROM cut)
EXCEPT SELECT number, ord FROM (SELECT * FROM cut EXCEPT SELECT * FROM held)"""


BoilerplateCut = Callable[[Sequence[tuple[Any, ...]], frozenset[int], str, Path], list[Path]]
"""Writes `documents.boilerplate_tsv_lines` of the sections (number, ord, heading, text) for
the boilerplate lines and language given into TSV files under the folder, and returns them:
`index.parallel.cut_boilerplate`, the parse pool's server forking workers for it."""

CUT_APART_SECTIONS = 4_000
"""From this many staged sections holding a boilerplate line, their weights are cut apart
(`BoilerplateCut`). On obsidian-hub, whose every note ends in a footer naming the note's own
file (a distinct line per note), 23,854 sections took ~2.1 s of CPU in one process, a fifth of
the build; a few hundred are cut faster here than workers start. Where the lines repeat (the
generated 100,000 notes: 88,479 sections, ~17 µs each) the workers only break even."""


def _stage_boilerplate_weights(
    con: Connection,
    lines: frozenset[int],
    folder: Path,
    language: str,
    max_line_bytes: int,
    cut: BoilerplateCut | None = None,
    precut: Sequence[Path] = (),
) -> bool:
    """Temp table `fresh_boilerplate` (term, number, ord, tf): what the boilerplate `lines`
    add to each staged section holding one (`documents.boilerplate_tsv_lines`), written as
    TSV into the staging `folder` (by `cut`'s workers for many sections) and read back (~10x
    faster than list parameters). A section the workers cut already under exactly its lines
    (`precut`: `index.early_cut`'s weights and lines files) takes their weights instead.
    False when no staged section holds a boilerplate line (no table then)."""
    weights = [str(p) for p in precut if p.name.endswith(PRECUT_WEIGHTS) and p.stat().st_size]
    cut_lines = [str(p) for p in precut if p.name.endswith(PRECUT_LINES)]
    early = bool(weights) and bool(cut_lines)
    if early:
        con.execute(_PRECUT_DONE, [cut_lines])
        rows = con.execute(
            f"SELECT * FROM ({_FRESH_SECTIONS}) s "
            "ANTI JOIN precut_done p ON p.number = s.number AND p.ord = s.ord"
        ).fetchall()
    else:
        rows = con.execute(_FRESH_SECTIONS).fetchall()
    if not rows and not early:
        return False
    parts = _cut_sections(rows, lines, language, folder, cut) if rows else []
    try:
        filled = [str(part) for part in parts if part.stat().st_size]
        selects: list[str] = []
        params: list[list[str]] = []
        if filled:
            params.append(filled)
            selects.append(f"SELECT * FROM {_read_weights(len(params), max_line_bytes)}")
        if early:
            params.append(weights)
            selects.append(
                f"SELECT w.* FROM {_read_weights(len(params), max_line_bytes)} w "
                "SEMI JOIN precut_done p ON p.number = w.number AND p.ord = w.ord"
            )
        if not selects:
            return False
        con.execute(
            "CREATE OR REPLACE TEMP TABLE fresh_boilerplate AS " + " UNION ALL ".join(selects),
            params,
        )
        return True
    finally:
        for part in parts:
            part.unlink(missing_ok=True)
        if early:
            con.execute("DROP TABLE precut_done")


def _cut_sections(
    rows: Sequence[tuple[Any, ...]],
    lines: frozenset[int],
    language: str,
    folder: Path,
    cut: BoilerplateCut | None,
) -> list[Path]:
    """The boilerplate weights of `rows` written as TSV under `folder`: by `cut`'s workers for
    many sections, else here."""
    if cut is not None and len(rows) >= CUT_APART_SECTIONS:
        return cut(rows, lines, language, folder)
    part = folder / "fresh-boilerplate.tsv"
    with part.open("w", encoding="utf-8") as out:
        out.writelines(boilerplate_tsv_lines(rows, lines, language))
    return [part]


def _read_weights(param: int, max_line_bytes: int) -> str:
    """`read_csv` of boilerplate weights TSV files (list parameter `$param`): term, number,
    ord, tf (`documents.boilerplate_tsv_lines`)."""
    return (
        f"read_csv(${param}, delim='\t', header=false, quote='', escape='', columns={{'term': "
        "'VARCHAR', 'number': 'INTEGER', 'ord': 'INTEGER', 'tf': 'DOUBLE'}, "
        f"max_line_size={max(max_line_bytes, 2_097_152)})"
    )


def _read_postings(max_line_bytes: int) -> str:
    """`read_csv` of postings TSV files (list parameter $1) as staged_postings' columns."""
    return (
        "read_csv($1, delim='\t', header=false, quote='', escape='', columns={'term': 'VARCHAR', "
        "'number': 'INTEGER', 'ord': 'INTEGER', 'tf': 'DOUBLE', 'length': 'INTEGER', "
        f"'note_length': 'INTEGER'}}, max_line_size={max(max_line_bytes, 2_097_152)})"
    )


class _Rescore(NamedTuple):
    """How to re-score sections: the stemmer language, and where re-scored staged postings
    go as TSV (the workers' staging folder; None: no staged postings this run)."""

    language: str
    folder: Path | None
    max_line_bytes: int


def count_boilerplate_lines(con: Connection) -> list[tuple[Any, Any]]:
    """Count every line of `documents` into `line_counts` (a build from nothing, an upgrade);
    return the (line key, notes) of those found in at least `BOILERPLATE_NOTES` notes (what
    `boilerplate_lines` then holds)."""
    con.execute("DELETE FROM line_counts")
    con.execute(
        "INSERT INTO line_counts SELECT k, count(DISTINCT note_id) FROM (SELECT note_id, "
        "unnest(line_keys) AS k FROM documents) GROUP BY k ORDER BY k"
    )
    return con.execute(
        "SELECT line_key, notes FROM line_counts WHERE notes >= $1", [BOILERPLATE_NOTES]
    ).fetchall()


def _insert_boilerplate_lines(con: Connection, counts: Sequence[tuple[Any, Any]]) -> None:
    if counts:
        con.execute(
            "INSERT INTO boilerplate_lines SELECT unnest($1::BIGINT[]), unnest($2::INTEGER[])",
            [[int(k) for k, _ in counts], [int(n) for _, n in counts]],
        )


def _drop_boilerplate(
    con: Connection,
    staged_lines: Sequence[tuple[int, int]],
    gone_lines: Sequence[tuple[int, int]],
    *,
    rescore: _Rescore,
) -> Counter[str]:
    """Recount the lines this run can move, keep `boilerplate_lines` current, re-score the
    sections holding boilerplate: staged ones in `staged_postings`, stored ones (a line that
    crossed the threshold) in `postings`. Returns the stored sections' df change per term.

    The recount is a delta on `line_counts`: the loaded notes' lines in (`staged_lines`), the
    gone notes' (`gone_lines`), each with how many of the notes hold it, out. Counting the
    touched lines over every note's `documents.line_keys` instead was a scan of them all
    (~0.045 s at 100,000 notes)."""
    delta: Counter[int] = Counter()
    for k, n in staged_lines:
        delta[k] += n
    for k, n in gone_lines:
        delta[k] -= n
    keys = sorted(delta)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE touched_lines AS SELECT unnest($1::BIGINT[]) AS k", [keys]
    )
    # Joined with the few touched keys, `line_counts` is probed, not built into a hash table.
    stored = {
        int(k): int(n)
        for k, n in con.execute(
            "SELECT c.line_key, c.notes FROM line_counts c SEMI JOIN touched_lines t "
            "ON t.k = c.line_key"
        ).fetchall()
    }
    now = {k: stored.get(k, 0) + d for k, d in delta.items() if d}
    if restated := sorted(k for k in now if k in stored):
        con.execute(
            "DELETE FROM line_counts WHERE line_key IN (SELECT unnest($1::BIGINT[]))", [restated]
        )
    if kept := sorted((k, n) for k, n in now.items() if n > 0):
        con.execute(
            "INSERT INTO line_counts SELECT unnest($1::BIGINT[]), unnest($2::INTEGER[])",
            [[k for k, _ in kept], [n for _, n in kept]],
        )
    counts = [(k, n) for k in keys if (n := now.get(k, stored.get(k, 0))) >= BOILERPLATE_NOTES]
    was = {
        int(k)
        for (k,) in con.execute(
            "SELECT line_key FROM boilerplate_lines SEMI JOIN touched_lines t ON t.k = line_key"
        ).fetchall()
    }
    crossed = sorted(was ^ {int(k) for k, _ in counts})
    con.execute("DELETE FROM boilerplate_lines WHERE line_key IN (SELECT k FROM touched_lines)")
    con.execute("DROP TABLE touched_lines")
    _insert_boilerplate_lines(con, counts)
    lines = frozenset(
        int(k) for (k,) in con.execute("SELECT line_key FROM boilerplate_lines").fetchall()
    )
    if lines and rescore.folder is not None:
        _rescore_staged(con, lines, rescore)
    if crossed:
        return _rescore_stored(con, lines, crossed, rescore.language)
    return Counter()


# The sections of `notes` holding any of the keys $1, with their note's length. Filtering
# before the note lengths keeps a fresh build from reading every section's text twice.
_SECTIONS = """WITH hit AS (
    SELECT note_id, ord, heading, text, length FROM documents
    WHERE ord > 0 AND list_has_any(line_keys, $1::BIGINT[]) AND note_id IN ({notes})),
lengths AS (
    SELECT note_id, sum(length) AS note_length FROM documents
    WHERE note_id IN (SELECT note_id FROM hit) GROUP BY note_id)
SELECT h.note_id, h.ord, h.heading, h.text, h.length, l.note_length
FROM hit h JOIN lengths l USING (note_id)"""


# The staged sections (notes numbered in `note_numbers`) holding any of the keys $1, in one
# statement: what `_few_staged_sections` returns (its tests compare the two). Not run: DuckDB
# runs `list_has_any` over every stored section before the join keeps the staged ones.
_STAGED_SECTIONS = (
    "SELECT m.number, d.ord, d.heading, d.text FROM documents d "
    "JOIN note_numbers m USING (note_id) "
    "WHERE d.ord > 0 AND list_has_any(d.line_keys, $1::BIGINT[])"
)


def _rescore_staged(con: Connection, lines: frozenset[int], rescore: _Rescore) -> None:
    """Staged sections holding a boilerplate line lose what those lines add to their postings.

    A large batch may re-score thousands of sections (a vault given a footer in every note):
    only their boilerplate lines are tokenised
    (`boilerplate_weights`, each distinct line once), their weights staged as TSV (which loads
    ~10x faster than list parameters) and subtracted, a posting left at zero deleted. The
    result is `section_postings` of each section, with half the tokenising of the section."""
    if rescore.folder is None:  # no staged postings this run, so none to re-score
        return
    rows = _few_staged_sections(con, lines)
    if not rows:
        return
    tsv = rescore.folder / "boilerplate-postings.tsv"
    with tsv.open("w", encoding="utf-8") as out:
        out.writelines(boilerplate_tsv_lines(rows, lines, rescore.language))
    if tsv.stat().st_size:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE boilerplate_postings AS SELECT * FROM read_csv($1, "
            "delim='\t', header=false, quote='', escape='', columns={'term': 'VARCHAR', "
            "'number': 'INTEGER', 'ord': 'INTEGER', 'tf': 'DOUBLE'}, "
            f"max_line_size={max(rescore.max_line_bytes, 2_097_152)})",
            [[str(tsv)]],
        )
        match = "s.number = b.number AND s.ord = b.ord AND s.term = b.term"
        con.execute(
            f"DELETE FROM staged_postings s USING boilerplate_postings b WHERE {match} "
            "AND s.tf = b.tf"
        )
        con.execute(
            f"UPDATE staged_postings s SET tf = s.tf - b.tf FROM boilerplate_postings b "
            f"WHERE {match}"
        )
        con.execute("DROP TABLE boilerplate_postings")
    tsv.unlink()


FEW_STAGED_NOTES = 16
"""Up to this many staged notes, an incremental run tests their sections' line keys in Python."""


def _few_staged_sections(con: Connection, lines: frozenset[int]) -> list[tuple[Any, ...]]:
    """`_rescore_staged`'s sections in an incremental run: (number, ord, heading, text) of the
    staged sections holding a line of `lines`.

    Python tests the staged sections' line keys: in SQL (`_STAGED_SECTIONS`), DuckDB runs
    `list_has_any` over every stored section before the join with `note_numbers` keeps the
    staged ones (1.6-8 ms warm at 10,000 notes; 3.4-5.1 s at 100,000 generated notes, 1,037
    boilerplate lines, for 100 staged notes, against 13 ms for their keys alone). With a few
    staged notes (a one-note edit) their sections come back whole in one statement; with
    more, their keys first, then the text of the sections that hold a line.
    """
    (staged,) = con.execute("SELECT count(*) FROM note_numbers").fetchone() or (0,)
    if staged > FEW_STAGED_NOTES:
        keyed = con.execute(
            "SELECT m.number, d.ord, d.line_keys FROM documents d "
            "JOIN note_numbers m USING (note_id) WHERE d.ord > 0"
        ).fetchall()
        hits = [(n, o) for n, o, keys in keyed if keys and not lines.isdisjoint(keys)]
        if not hits:
            return []
        return con.execute(
            "SELECT m.number, d.ord, d.heading, d.text FROM documents d "
            "JOIN note_numbers m USING (note_id) JOIN (SELECT unnest($1::INTEGER[]) AS number, "
            "unnest($2::INTEGER[]) AS ord) h ON h.number = m.number AND h.ord = d.ord",
            [[n for n, _ in hits], [o for _, o in hits]],
        ).fetchall()
    rows = con.execute(
        "SELECT m.number, d.ord, d.heading, d.text, d.line_keys FROM documents d "
        "JOIN note_numbers m USING (note_id) WHERE d.ord > 0"
    ).fetchall()
    return [row[:4] for row in rows if row[4] and not lines.isdisjoint(row[4])]


def _columns(rows: Iterable[tuple[object, ...]], width: int = 6) -> list[list[object]]:
    """Rows as `width` column lists (list parameters for `unnest`); empty lists for no rows."""
    columns = [list(column) for column in zip(*rows, strict=True)]
    return columns or [[] for _ in range(width)]


def _rescore_stored(
    con: Connection, lines: frozenset[int], crossed: list[int], language: str
) -> Counter[str]:
    """Stored sections (of notes not loaded now) holding a line that crossed the threshold
    get their postings again under the current boilerplate; returns the df change per term."""
    rows = con.execute(
        _SECTIONS.format(
            notes="SELECT note_id FROM documents WHERE list_has_any(line_keys, $1::BIGINT[]) "
            "EXCEPT SELECT note_id FROM note_numbers"
        ),
        [crossed],
    ).fetchall()
    if not rows:
        return Counter()
    section_keys, ords = [note_key(r[0]) for r in rows], [r[1] for r in rows]
    keys = "(SELECT unnest($1::BIGINT[]) AS note_key, unnest($2::INTEGER[]) AS ord)"
    before = con.execute(
        f"SELECT p.term, count(*) FROM postings p JOIN {keys} k USING (note_key, ord) "
        "GROUP BY p.term",
        [section_keys, ords],
    ).fetchall()
    shift: Counter[str] = Counter()
    shift.subtract({term: int(n) for term, n in before})
    con.execute(
        f"DELETE FROM postings p USING {keys} k WHERE p.note_key = k.note_key AND p.ord = k.ord",
        [section_keys, ords],
    )
    fresh = [
        (term, note_key(note_id), ord_, tf, length, note_length)
        for note_id, ord_, heading, text, length, note_length in rows
        for term, tf in section_postings(heading, text, lines, language).items()
    ]
    shift.update(row[0] for row in fresh)
    out = _columns(fresh, width=6)
    con.execute(
        "INSERT INTO postings SELECT unnest($1::VARCHAR[]), unnest($2::BIGINT[]), "
        "unnest($3::INTEGER[]), unnest($4::DOUBLE[]), unnest($5::INTEGER[]), "
        "unnest($6::INTEGER[])",
        out,
    )
    return shift


def document_stats(con: Connection, note_ids: Iterable[str] | None = None) -> Stats:
    """(documents, notes with documents, total length) of these notes' documents (read
    before they go), or, `note_ids` None, of the notes staged in this run (`note_numbers`).

    Through `documents_by_note`: a few notes' rows, never the whole table."""
    ids = None if note_ids is None else sorted(note_ids)
    if ids is not None and not ids:
        return Stats(0, 0, 0)
    where, params = _documents_of(ids)
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE ord = 0), coalesce(sum(length), 0) "
        f"FROM documents WHERE {where}",
        params,
    ).fetchone() or (0, 0, 0)
    return Stats(int(row[0]), int(row[1]), int(row[2]))


class Stats(NamedTuple):
    """`search_stats`' one row, or a change to it."""

    documents: int
    notes: int
    total_length: int


def recount_terms(con: Connection, delta: Counter[str] | None, stats: Stats | None = None) -> None:
    """Keep `terms.df` and `search_stats` exactly what a rebuild computes.

    `delta` None counts everything (a fresh build). Otherwise it holds, per term, the documents
    added minus the documents removed that contain it, and `stats` the documents' change
    (added minus removed, `document_stats`); applying them touches only those terms and the
    one row, so a one-note edit costs in proportion to that note, not to the vault.
    """
    if delta is None:
        con.execute("DELETE FROM terms")
        con.execute(
            "INSERT INTO terms SELECT term, count(*)::INTEGER FROM postings "
            "GROUP BY term ORDER BY term"
        )
        # The notes with documents are the note-level documents (ord 0): every note's
        # documents start with one (`note_documents`), so no `DISTINCT note_id` is needed.
        con.execute("DELETE FROM search_stats")
        con.execute(
            "INSERT INTO search_stats SELECT count(*), count(*) FILTER (WHERE ord = 0), "
            "coalesce(sum(length), 0) FROM documents"
        )
        return
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
        # Only the moved terms can have reached zero: no scan of the whole table.
        con.execute("DELETE FROM terms WHERE df <= 0 AND term IN (SELECT term FROM df_delta)")
        con.execute("DROP TABLE df_delta")
    if stats is None:
        raise ValueError("an incremental recount needs the documents' change (`stats`)")
    if any(stats):
        con.execute(
            "UPDATE search_stats SET documents = documents + $1, notes = notes + $2, "
            "total_length = total_length + $3",
            list(stats),
        )

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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from vaultmem.search.documents import note_key
from vaultmem.storage.store import Connection


def document_frequencies(con: Connection, note_ids: Iterable[str]) -> Counter[str]:
    """For each term, in how many of these notes' documents it occurs (before they go)."""
    ids = sorted(note_ids)
    if not ids:
        return Counter()
    rows = con.execute(
        "SELECT term, count(*) FROM postings "
        "WHERE note_id IN (SELECT unnest($1::VARCHAR[])) GROUP BY term",
        [ids],
    ).fetchall()
    return Counter({term: int(n) for term, n in rows})


def load_postings(
    con: Connection, files: Sequence[Path], *, create: bool, max_line_bytes: int
) -> Counter[str]:
    """Load the workers' postings files; for an incremental run, return per term how many
    new documents hold it (a fresh build counts `terms` from `postings` afterwards).

    The files number notes by their number in the run; the temp table `note_numbers`
    (`index_writes.number_notes`) maps numbers to ids and keys. `max_line_bytes` lifts
    DuckDB's 2 MB default line limit: one "word" as long as a note must not fail the load.
    """
    files = [f for f in files if f.stat().st_size]
    if not files:
        return Counter()
    staged = (
        "read_csv($1, delim='\t', header=false, quote='', escape='', columns={'term': 'VARCHAR', "
        "'number': 'INTEGER', 'ord': 'INTEGER', 'tf': 'DOUBLE', 'length': 'INTEGER', "
        f"'note_length': 'INTEGER'}}, max_line_size={max(max_line_bytes, 2_097_152)})"
    )
    paths = [[str(f) for f in files]]
    insert = (
        "INSERT INTO postings SELECT s.term, m.note_id, m.note_key, s.ord, s.tf, s.length, "
        "s.note_length FROM {} s JOIN note_numbers m USING (number)"
    )
    if create:
        # Straight from the files, sorted by term alone: zone maps need only the term order,
        # and at 100,000 notes (~22M rows) sorting on (term, note, ord) cost ~30% more CPU.
        con.execute(insert.format(staged) + " ORDER BY s.term", paths)
        return Counter()
    con.execute(f"CREATE OR REPLACE TEMP TABLE staged_postings AS SELECT * FROM {staged}", paths)
    con.execute(insert.format("staged_postings"))
    rows = con.execute(
        "SELECT s.term, count(*) FROM staged_postings s JOIN note_numbers m USING (number) "
        "GROUP BY s.term"
    ).fetchall()
    con.execute("DROP TABLE staged_postings")
    return Counter({term: int(n) for term, n in rows})


def rekey_postings(con: Connection, note_ids: list[str]) -> None:
    """Set `postings.note_key` again for notes whose id changed (it derives from the id)."""
    if note_ids:
        con.execute(
            "UPDATE postings SET note_key = m.note_key FROM (SELECT unnest($1::VARCHAR[]) AS id, "
            "unnest($2::BIGINT[]) AS note_key) m WHERE postings.note_id = m.id",
            [note_ids, [note_key(i) for i in note_ids]],
        )


def recount_terms(con: Connection, delta: Counter[str] | None) -> None:
    """Keep `terms.df` and `search_stats` exactly what a rebuild computes.

    `delta` None counts everything (a fresh build). Otherwise it holds, per term, the documents
    added minus the documents removed that contain it; applying it touches only those terms,
    so a one-note edit costs in proportion to that note, not to the vault.
    """
    if delta is None:
        con.execute("DELETE FROM terms")
        con.execute(
            "INSERT INTO terms SELECT term, count(*)::INTEGER FROM postings "
            "GROUP BY term ORDER BY term"
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
    con.execute(
        "INSERT INTO search_stats SELECT count(*), count(DISTINCT note_id), "
        "coalesce(sum(length), 0) FROM documents"
    )

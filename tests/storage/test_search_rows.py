"""`storage.search_rows`' statistics: `terms` and `search_stats` moved by deltas on an
incremental run, never recounted from the whole tables (issue 28)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from vaultmem.core.documents import note_key
from vaultmem.storage import search_rows, store
from vaultmem.storage.store import Connection


def _index(tmp_path: Path) -> Connection:
    con = store.connect(tmp_path / "index.duckdb", read_only=False)
    store.create_schema(con, {})
    con.execute(
        "INSERT INTO documents VALUES ('a', 0, NULL, 1, 2, '', []), ('a', 1, 'H', 2, 5, 'x', []), "
        "('b', 0, NULL, 1, 3, '', [])"
    )
    con.execute("INSERT INTO terms VALUES ('alpha', 2), ('beta', 1), ('stale', 0)")
    con.execute("INSERT INTO search_stats VALUES (3, 2, 10)")
    return con


def test_document_stats_count_only_the_named_notes(tmp_path: Path) -> None:
    con = _index(tmp_path)
    assert search_rows.document_stats(con, ["a"]) == search_rows.Stats(2, 1, 7)
    assert search_rows.document_stats(con, []) == search_rows.Stats(0, 0, 0)


def test_an_incremental_recount_applies_the_deltas_only(tmp_path: Path) -> None:
    con = _index(tmp_path)
    # The stored row is made wrong on purpose: a recount from `documents` would repair it,
    # a delta leaves the error as it is (so this fails on the old full recount).
    con.execute("UPDATE search_stats SET total_length = 100")
    search_rows.recount_terms(
        con, Counter({"alpha": -2, "beta": 1, "gamma": 1}), search_rows.Stats(1, 0, 4)
    )
    assert con.execute("SELECT * FROM terms ORDER BY term").fetchall() == [
        ("beta", 2),
        ("gamma", 1),
        ("stale", 0),  # not a moved term: an incremental run does not scan for it
    ]
    assert con.execute("SELECT * FROM search_stats").fetchall() == [(4, 2, 104)]


def test_a_fresh_recount_counts_everything(tmp_path: Path) -> None:
    con = _index(tmp_path)
    con.execute("INSERT INTO postings VALUES ('alpha', 1, 1, 1.0, 5, 7)")
    search_rows.recount_terms(con, None)
    assert con.execute("SELECT * FROM terms").fetchall() == [("alpha", 1)]
    assert con.execute("SELECT * FROM search_stats").fetchall() == [(3, 2, 10)]


def test_notes_documents_reads_as_the_two_aggregates_do(tmp_path: Path) -> None:
    """Counted here (few documents) or by DuckDB (more than `few`), the same figures."""
    con = _index(tmp_path)
    con.execute(
        "INSERT INTO documents VALUES ('c', 0, NULL, 1, 4, '', [7, 8]), "
        "('c', 1, 'H', 3, 6, 'y', [8, 9]), ('d', 0, NULL, 1, 1, '', [8])"
    )
    con.execute("UPDATE documents SET line_keys = [7] WHERE note_id = 'a' AND ord = 1")
    ids = ["a", "c", "d"]
    expected = search_rows.NotesDocuments(search_rows.Stats(5, 3, 18), [(7, 2), (8, 2), (9, 1)])
    assert search_rows.document_stats(con, ids) == expected.stats
    for few in (0, 2, 100):
        assert search_rows.notes_documents(con, ids, few=few) == expected
    assert search_rows.notes_documents(con, []) == ((0, 0, 0), [])
    con.execute(
        "CREATE TEMP TABLE note_numbers AS "
        "SELECT * FROM (VALUES (1, 'c'), (2, 'd')) t(number, note_id)"
    )
    staged = search_rows.NotesDocuments(search_rows.Stats(3, 2, 11), [(7, 1), (8, 2), (9, 1)])
    for few in (0, 100):
        assert search_rows.notes_documents(con, few=few) == staged


def test_deleting_postings_counts_and_removes_exactly_the_named_notes_rows(
    tmp_path: Path,
) -> None:
    """One note (its key compared in the scan) or several (a list joined): per term, the
    documents of theirs that held it, and only their rows go."""
    con = _index(tmp_path)
    rows = {  # note -> (term, ord) postings; `alpha` in two documents of `a`, and in `b` and `c`
        "a": [("alpha", 0), ("alpha", 1), ("beta", 1)],
        "b": [("alpha", 0), ("gamma", 0)],
        "c": [("alpha", 2), ("beta", 0), ("delta", 2)],
    }
    for note, postings in rows.items():
        for term, ord_ in postings:
            con.execute(
                "INSERT INTO postings VALUES ($1, $2, $3, 1.0, 5, 7)",
                [term, note_key(note), ord_],
            )
    names = {note_key(n): n for n in rows}

    def left() -> list[tuple[str, str, int]]:
        found = con.execute("SELECT note_key, term, ord FROM postings").fetchall()
        return sorted((names[k], t, o) for k, t, o in found)

    assert search_rows.delete_postings(con, ["a"]) == Counter({"alpha": 2, "beta": 1})
    assert left() == [
        ("b", "alpha", 0),
        ("b", "gamma", 0),
        ("c", "alpha", 2),
        ("c", "beta", 0),
        ("c", "delta", 2),
    ]
    assert search_rows.delete_postings(con, ["missing"]) == Counter()
    assert search_rows.delete_postings(con, ["c", "b", "a"]) == Counter(
        {"alpha": 2, "beta": 1, "gamma": 1, "delta": 1}
    )
    assert left() == []
    assert search_rows.delete_postings(con, []) == Counter()

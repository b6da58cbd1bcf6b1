"""The resident search index (search/resident.py): the same results as the SQL path for every
filter, operator and scorer, loaded from a Vault's second search on, bounded in size, and
dropped when another process writes the index."""

from __future__ import annotations

import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core.config import FolderMapping
from vaultmem.search import bm25, resident
from vaultmem.search.query import SearchFilters, search
from vaultmem.vault import Vault

MAPPINGS = [
    FolderMapping("Projects/Alpha", "project", "alpha"),
    FolderMapping("Projects/Beta", "project", "beta"),
    FolderMapping("Knowledge", "global", None),
    FolderMapping("agent-memory", "project", "alpha"),
    FolderMapping("Journal", "global", None),
]

NOTES = {
    "Projects/Alpha/Locks.md": "---\ntype: decision\ntags: [duckdb, locks]\n"
    "updated: 2026-01-05\n---\n# Locks\n\nOne writer per DuckDB file; readers retry the lock.\n\n"
    "## Backoff\nThe lock retry backs off up to a bound, then the writer reports the holder.\n",
    "Projects/Alpha/Release checklist.md": "---\ntype: checklist\ntags: [release]\n---\n"
    "# Release checklist\n\nTag the release, build the wheel, publish it.\n\n"
    "## Lock files\nRefresh the lock file before the release build.\n",
    "Projects/Beta/Search.md": "---\ntype: decision\ntags: [search]\nupdated: 2025-11-01\n---\n"
    "# Search\n\nBM25 over postings; the lock on the index is shared by readers.\n\n"
    "## Statblocks\nStat blocks render creature statistics.\n",
    "Knowledge/DuckDB.md": "---\ntags: [duckdb, database]\naliases: [Duck DB]\n---\n"
    "# DuckDB\n\nAn in-process database. DuckDB files hold tables; one writer per file.\n\n"
    "## Locks\nA second writer gets a lock error; readers retry the lock.\n\n"
    "## Empty\n",
    "Knowledge/Glossary.md": "# Glossary\n\nPosting: a term in a document. Lock: see DuckDB.\n"
    "Footer shared by many notes.\n",
    "Journal/2026-01-02.md": "---\ntags: [journal]\ntitle: Friday notes\n---\n"
    "Paired on the flaky lock test. The lock test is flaky, flaky, flaky.\n"
    "Footer shared by many notes.\n",
    "Journal/2026-01-03.md": "Release day: the database migration ran; locks held.\n"
    "Footer shared by many notes.\n",
}

QUERIES = [
    "lock",
    "duckdb lock writer",
    "release build",
    "lock lock retry",
    "stat blocks",
    "databse",  # a typo: fuzzy expansion
    "lockretry",  # one word the index lacks, asked as the two it holds (`lock` + `retry`)
    '"lock test"',
    '"one writer" duckdb',
    "lock -flaky",
    "lock tag:duckdb",
    "lock path:projects/alpha",
    "lock type:decision",
    "footer shared",
    '"lock retry" -flaky',  # a phrase with an exclusion
    "lock -release tag:duckdb",  # an exclusion under an operator
    "writer lock path:knowledge type:decision",  # operators that keep nothing together
    "zeppelinx quasar",  # no term in the index, one past fuzzy reach
    "duckdb database lock writer readers retry release",  # many words: proximity's pairs
]

FILTERS = [
    SearchFilters(),
    SearchFilters(scope="project"),
    SearchFilters(scope="project", scope_id="beta"),
    SearchFilters(type="decision"),
    SearchFilters(tag="duckdb"),
    SearchFilters(folder="Knowledge"),
    SearchFilters(since=datetime(2026, 1, 1)),
    SearchFilters(until=datetime(2026, 1, 1)),
    SearchFilters(folder="Nowhere"),
]


def make_vault(root: Path) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    vault = Vault.init(root, mappings=MAPPINGS)
    for rel, text in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    vault.reconcile()
    return vault


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    return make_vault(tmp_path_factory.mktemp("resident") / "vault")


@pytest.mark.slow
@pytest.mark.parametrize("columns_from", [2000, 1], ids=["rows", "columns"])
def test_resident_results_equal_the_sql_path(
    vault: Vault, columns_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "COLUMNS_FROM", columns_from)
    import numpy  # noqa: F401  (columns_from() counts on it being loaded)

    compared = 0
    with vault._reading() as con:
        assert vault._reader is not None
        held = resident.load(con, vault._reader.signature, resident.MAX_POSTINGS)
        assert held is not None
        for text in QUERIES:
            for filters in FILTERS:
                for limit in (1, 10):
                    sql = search(con, text, filters, limit=limit, language="english")
                    mem = search(con, text, filters, limit=limit, language="english", resident=held)
                    assert mem == sql, (text, filters, limit)
                    compared += bool(sql)
    assert compared > 80  # most combinations find something: the comparison is not vacuous


@pytest.mark.slow
def test_resident_ranking_equals_the_sql_path_under_other_weights(vault: Vault) -> None:
    """The hybrid search's ranking (`ranked_notes`, no proximity pool) and other BM25 weights
    rank the same from either source."""
    from vaultmem.search.query import ranked_notes

    with vault._reading() as con:
        assert vault._reader is not None
        held = resident.load(con, vault._reader.signature, resident.MAX_POSTINGS)
        assert held is not None
        for text in QUERIES:
            for filters in FILTERS[:6]:
                scoring: dict[str, Any] = {
                    "limit": 3,
                    "k1": 0.9,
                    "b": 0.4,
                    "language": "english",
                    "whole_weight": 0.3,
                    "title_weight": 0.5,
                }
                sql = ranked_notes(con, text, filters, **scoring)
                mem = ranked_notes(con, text, filters, **scoring, resident=held)
                assert mem == sql, (text, filters)
                del scoring["language"]
                hits = search(con, text, filters, language="english", **scoring)
                assert (
                    search(con, text, filters, language="english", resident=held, **scoring) == hits
                )


def test_both_sources_read_the_same_rows(vault: Vault) -> None:
    """Each read of `SearchReads` returns the same rows from the tables and from memory (the
    posting rows in another order: the scorer sorts them)."""
    from vaultmem.search.query import note_filter, parse_query
    from vaultmem.search.reads import SqlReads

    terms = ["lock", "duckdb", "footer", "statblock", "nosuchterm"]
    with vault._reading() as con:
        assert vault._reader is not None
        held = resident.load(con, vault._reader.signature, resident.MAX_POSTINGS)
        assert held is not None
        read_rows = 0
        for filters in FILTERS:
            notes = note_filter(parse_query("lock"), filters)
            sql, mem = SqlReads(con, notes), held.reads(con, notes)
            for columns_from in (10_000, 1):
                rows = [
                    _rows(r.term_postings(terms, columns_from=columns_from)) for r in (sql, mem)
                ]
                assert rows[0] == rows[1], filters
                read_rows += len(rows[0])
            assert mem.collection_stats() == sql.collection_stats()
            assert mem.keys_with_terms(("flaky", "footer")) == sql.keys_with_terms(
                ("flaky", "footer")
            )
            # every query asks which of its words the index holds, and their df
            assert mem.known_terms(terms) == sql.known_terms(terms)
            assert len(sql.known_terms(terms)) == 4 and "nosuchterm" not in sql.known_terms(terms)
        keys = sorted(held.note_keys.tolist())
        assert mem.note_rows(keys) == sql.note_rows(keys) and len(keys) == len(NOTES)
        ids = [row[0] for row in sql.note_rows(keys).values()] + ["missing.md"]
        assert mem.note_sections(ids) == sql.note_sections(ids)
        assert mem.note_sections([]) == sql.note_sections([]) == {}
    assert read_rows > 50


def _rows(postings: Any) -> list[tuple[Any, ...]]:
    """Posting rows as sorted tuples, whether they came as tuples or as numpy columns."""
    if isinstance(postings, dict):
        postings = list(zip(*(postings[c].tolist() for c in bm25.POSTING_COLUMNS), strict=True))
    return sorted(tuple(row) for row in postings)


def test_resident_statistics_follow_the_filters(vault: Vault) -> None:
    from vaultmem.search.query import note_filter, parse_query
    from vaultmem.search.reads import SqlReads

    with vault._reading() as con:
        assert vault._reader is not None
        held = resident.load(con, vault._reader.signature, resident.MAX_POSTINGS)
        assert held is not None
        seen = set()
        for filters in FILTERS:
            notes = note_filter(parse_query("lock"), filters)
            stats = held.reads(con, notes).collection_stats()
            assert stats == SqlReads(con, notes).collection_stats()
            seen.add(stats)
    assert len(seen) > 3


def _loaded(vault: Vault) -> resident.Resident | None:
    """The resident index once the loader thread a search started has finished."""
    assert vault._loader is not None
    vault._loader.join(timeout=60)
    return vault._resident


def test_a_vault_holds_the_index_from_its_second_search(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    first = vault.search("duckdb lock")
    assert vault._loader is None  # a one-shot CLI's only search reads SQL, loads nothing
    second = vault.search("duckdb lock")  # SQL too, while the loader thread starts
    assert _loaded(vault) is not None
    assert vault.search("duckdb lock") == second == first
    filters = SearchFilters(scope="project")
    assert vault.search("release", filters) == Vault(tmp_path / "v").search("release", filters)


def test_a_search_during_the_load_reads_sql_instead_of_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loader reads through a cursor of its own: a search made while it loads (held here
    until the search is done) answers from SQL on the shared connection. Were the loader
    holding the shared reader, this search would wait for it and the test would time out."""
    import threading

    vault = make_vault(tmp_path / "v")
    first = vault.search("duckdb lock")
    release = threading.Event()
    loading = threading.Event()
    real_load = resident.load

    def slow_load(*args: object, **kwargs: object) -> resident.Resident | None:
        loading.set()
        assert release.wait(60), "the search never finished while the load waited"
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resident, "load", slow_load)
    assert vault.search("duckdb lock") == first  # starts the loader
    assert loading.wait(60)
    done: list[object] = []
    searcher = threading.Thread(target=lambda: done.append(vault.search("duckdb lock")))
    searcher.start()
    searcher.join(30)
    release.set()
    assert done == [first]  # answered while the loader still held its cursor
    assert _loaded(vault) is not None


def test_a_write_in_this_process_during_the_load_interrupts_it(tmp_path: Path) -> None:
    """DuckDB refuses to close a connection one of its cursors is using: a reconcile in the
    process that is loading (the MCP server storing, `watch`) must get the file anyway, and
    the next searches see its rows. The load is made long (a large index, held open by an
    endless statement on the cursor) so the write certainly comes during it."""
    import threading

    vault = make_vault(tmp_path / "v")
    first = vault.search("lock")
    reader = vault._reader  # made by the search above
    assert reader is not None
    started = threading.Event()
    outcome: list[str] = []

    def long_read() -> None:
        try:
            with reader.cursor() as cursor:
                started.set()
                cursor.execute("SELECT count(*) FROM range(10000000000)").fetchall()
            outcome.append("finished")
        except Exception as error:  # the interrupt surfaces as DuckDB's InterruptException
            outcome.append(type(error).__name__)

    thread = threading.Thread(target=long_read)
    thread.start()
    assert started.wait(30)
    (tmp_path / "v" / "Knowledge" / "Zeppelin.md").write_text("# Zeppelin\n\nA lock.\n")
    vault.reconcile()  # releases the shared reader: interrupts the cursor first
    thread.join(30)
    assert outcome == ["InterruptException"]
    assert "Knowledge/Zeppelin.md" in {h.path for h in vault.search("lock", limit=20)}
    assert "Knowledge/Zeppelin.md" not in {h.path for h in first}


def test_an_index_over_the_bound_is_searched_in_sql(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    vault.resident_max_postings = 10
    first = vault.search("lock")
    assert vault.search("lock") == first
    assert _loaded(vault) is None
    loader = vault._loader
    assert vault.search("lock") == first
    assert vault._loader is loader  # too large: not tried again until the index changes


def test_a_vault_that_never_holds_the_index_starts_no_loader(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    vault.resident_max_postings = 0
    first = vault.search("lock")
    assert vault.search("lock") == vault.search("lock") == first
    assert vault._loader is None and vault._resident is None


WRITER = """
import sys
from pathlib import Path
from typing import Any
from vaultmem.vault import Vault
root = Path(sys.argv[1])
(root / "Knowledge" / "Zeppelin.md").write_text("# Zeppelin\\n\\nA zeppelin lock.\\n")
(root / "Knowledge" / "Glossary.md").unlink()
Vault(root).reconcile()
"""


@pytest.mark.slow
def test_a_write_by_another_process_is_seen_on_the_next_search(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    vault.search("lock")
    vault.search("lock")
    held = _loaded(vault)
    assert held is not None
    before = vault.search("zeppelin posting")  # from memory
    assert not any(h.path == "Knowledge/Zeppelin.md" for h in before)
    assert any(h.path == "Knowledge/Glossary.md" for h in before)

    subprocess.run([sys.executable, "-c", WRITER, str(tmp_path / "v")], check=True, timeout=120)

    after = vault.search("zeppelin posting")
    assert vault._resident is None  # the first search after a write reads SQL
    assert after[0].path == "Knowledge/Zeppelin.md"
    assert not any(h.path == "Knowledge/Glossary.md" for h in after)
    assert vault.search("zeppelin posting") == after
    reloaded = _loaded(vault)
    assert reloaded is not None and reloaded is not held
    assert vault.search("zeppelin posting") == after  # from the reloaded index
    assert after == Vault(tmp_path / "v").search("zeppelin posting")  # a fresh process's SQL


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from(list(" \t\r\n\x0b\x0c\xa0ab-:#\u2003é")), max_size=30))
def test_a_query_without_quotes_splits_as_shlex_splits_it(text: str) -> None:
    from vaultmem.search.query import _SHLEX_SPACE

    assert [part for part in _SHLEX_SPACE.split(text) if part] == shlex.split(text, posix=True)


@settings(max_examples=300, deadline=None)  # the first Han text loads a segmenter
@given(
    st.text(max_size=200),
    st.sets(st.sampled_from(["lock", "test", "vault", "root", "東京", "pager"]), max_size=3),
)
def test_matching_spans_are_the_spans_of_the_wanted_terms(text: str, terms: set[str]) -> None:
    from vaultmem.core.tokenizer import analyzer

    text += " vault_root TestPagerOrder locks 東京都 testing"
    words = analyzer()
    expected = [(start, end) for start, end, term in words.spans(text) if term in terms]
    assert words.matching_spans(text, terms) == expected

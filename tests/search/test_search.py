"""Search: BM25 scores checked against an independent computation, every operator and filter,
incremental postings equal to rebuilt ones, and a relevance check over example-vault."""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.retrieval import QUESTIONS_DIR, Question, fts5_rank, load_questions, metrics
from vaultmem.adapters.cli import main
from vaultmem.core.config import FolderMapping
from vaultmem.core.documents import FIELD_WEIGHTS, note_documents
from vaultmem.core.errors import QueryError
from vaultmem.core.tokenizer import fold, tokenize
from vaultmem.note.parse import parse_note
from vaultmem.search import bm25 as bm25_module
from vaultmem.search import compounds
from vaultmem.search.proximity import WEIGHT as PROXIMITY_WEIGHT
from vaultmem.search.query import (
    SearchFilters,
    SearchHit,
    compound_splits,
    expand_terms,
    joined_terms,
    max_edits,
    note_filter,
    parse_query,
    snippet,
)
from vaultmem.search.reads import SqlReads
from vaultmem.storage import store
from vaultmem.storage.search_queries import (
    CJK_TITLE_DOCUMENT,
    CJK_WHOLE_NOTE,
    TITLE_DOCUMENT,
    WHOLE_NOTE,
    NoteFilter,
    document_scores,
)
from vaultmem.vault import Vault

K1, B = 1.2, 0.75


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_vault(root: Path, notes: dict[str, str], mappings: list[FolderMapping] = ()) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    vault = Vault.init(root, mappings=list(mappings))
    for rel, text in notes.items():
        write(root, rel, text)
    vault.reconcile()
    return vault


# -- (a) the SQL scores equal a textbook BM25 computed from the notes ------------------------

CORPUS = {
    "DuckDB.md": "---\ntags: [database, duckdb]\naliases: [Duck DB]\n---\n# DuckDB\n\n"
    "An in-process database. DuckDB files hold tables; one writer per file.\n\n"
    "## Locks\nA second writer gets a lock error; readers retry the lock.\n",
    "Search/BM25 ranking.md": "---\ntags: [search/bm25]\n---\n# BM25 ranking\n\n"
    "BM25 scores documents by term frequency and inverse document frequency.\n\n"
    "## Parameters\n`k1` limits term frequency; `b` normalises document length.\n\n"
    "## Tables\nPostings and terms live in DuckDB tables: `postings(term, doc, tf)`.\n",
    "Search/Tokenizer.md": "# Tokenizer\n\nThe `TestPagerOrder` identifier is split; "
    "`vault_root` too.\nQueries and query terms fold plurals: migrations, migration.\n\n"
    "## Empty\n\n## Bigrams\n東京都 text.\n",
    "Journal/2026-01-02.md": "---\ntags: [journal]\ntitle: Friday notes\n---\n"
    "Paired on the flaky lock test. The lock test is flaky, flaky, flaky.\n",
    "Long note.md": "# Long note\n\n" + "A long section about storage and files and tables. " * 30,
}
QUERIES = [
    "duckdb",
    "lock writer",
    "bm25 term frequency",
    "flaky lock test",
    "pager root migrations",
    "東京 storage tables",
    "document length duckdb files",
]


def textbook_scores(root: Path, query: str) -> dict[tuple[str, int], float]:
    """BM25 for every document, from the notes' text: nothing read from the index."""
    return bm25(textbook_documents(root), list(dict.fromkeys(tokenize(query))))


@pytest.fixture(scope="module")
def corpus_vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    return make_vault(tmp_path_factory.mktemp("corpus") / "vault", CORPUS)


@pytest.mark.parametrize("query", QUERIES)
def test_sql_scores_equal_textbook_bm25(corpus_vault: Vault, query: str) -> None:
    expected = textbook_scores(corpus_vault.root, query)
    assert expected, "every query must match something"
    with store.reading(corpus_vault.config.index_path) as con:
        paths = dict(con.execute("SELECT id, path FROM notes").fetchall())
        rows = document_scores(con, list(parse_query(query).terms), k1=K1, b=B)
    got = {(paths[note_id], ord_): score for note_id, ord_, score in rows}
    assert got.keys() == expected.keys()
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, abs=1e-9, rel=0), key


def textbook_documents(root: Path) -> dict[tuple[str, int], tuple[int, Counter[str]]]:
    """(path, ord) -> (length, field-weighted term counts), from the notes' text."""
    docs: dict[tuple[str, int], tuple[int, Counter[str]]] = {}
    for rel in CORPUS:
        note = parse_note(rel, (root / rel).read_bytes()).note
        for doc in note_documents(note):
            if doc.ord == 0:
                fields = {
                    "title": tokenize(note.title),
                    "alias": [t for alias in note.aliases for t in tokenize(alias)],
                    "tag": [t for tag in note.tags for t in tokenize(tag)],
                }
            else:
                section = note.sections[doc.ord - 1]
                fields = {
                    "heading": tokenize(section.heading or ""),
                    "body": tokenize(section.text),
                }
            weighted: Counter[str] = Counter()
            for name, tokens in fields.items():
                for token in tokens:
                    weighted[token] += FIELD_WEIGHTS[name]
            docs[(rel, doc.ord)] = (sum(len(t) for t in fields.values()), weighted)
    return docs


def bm25(units: dict[Any, tuple[int, Counter[str]]], terms: list[str]) -> dict[Any, float]:
    """Textbook BM25 of every unit (document or note) matching any term."""
    n = len(units)
    avgdl = sum(length for length, _ in units.values()) / n
    df = {t: sum(1 for _, w in units.values() if w[t] > 0) for t in terms}
    out = {}
    for key, (length, weighted) in units.items():
        matched = [t for t in terms if weighted[t] > 0]
        if matched:
            out[key] = sum(
                math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                * weighted[t]
                * (K1 + 1)
                / (weighted[t] + K1 * (1 - B + B * length / avgdl))
                for t in matched
            )
    return out


@pytest.mark.parametrize(
    ("query", "weights"),
    [
        ("duckdb lock test tables", (TITLE_DOCUMENT, WHOLE_NOTE)),
        ("lock duckdb tables lock", (TITLE_DOCUMENT, WHOLE_NOTE)),
        # a query holding Han, kana or Hangul weighs the title document (docs/search.md)
        ("東京 duckdb tables", (CJK_TITLE_DOCUMENT, CJK_WHOLE_NOTE)),
    ],
)
def test_note_score_is_section_plus_title_plus_whole_note(
    corpus_vault: Vault, query: str, weights: tuple[float, float]
) -> None:
    """score = best section + TITLE_DOCUMENT · title document + WHOLE_NOTE · BM25 of the whole
    note, where the whole note's statistics are over notes (N notes, df in notes, mean note
    length). A term asked twice adds its share twice (query term frequency), as FTS5's bm25
    does. A Chinese, Japanese or Korean query has weights of its own."""
    title_weight, whole_weight = weights
    terms = tokenize(query)
    docs = textbook_documents(corpus_vault.root)
    per_doc = bm25(docs, terms)
    notes: dict[str, tuple[int, Counter[str]]] = {}
    for (path, _), (length, weighted) in docs.items():
        old_length, old = notes.get(path, (0, Counter()))
        notes[path] = (old_length + length, old + weighted)
    whole = bm25(notes, terms)
    expected = {}
    for path, whole_score in whole.items():
        section = max((s for (p, o), s in per_doc.items() if p == path and o > 0), default=0.0)
        title = per_doc.get((path, 0), 0.0)
        expected[path] = section + title_weight * title + whole_weight * whole_score
    hits = corpus_vault.search(query, limit=20)
    assert {h.path for h in hits} == expected.keys()
    # The proximity factor (tests/search/test_proximity.py) multiplies BM25 for the first POOL
    # notes.
    near = {h.path: 1 + PROXIMITY_WEIGHT * h.score_parts["proximity"] for h in hits}
    assert any(factor > 1 for factor in near.values())
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.path] * near[hit.path], abs=1e-5), hit.path
        assert hit.score_parts["whole"] == pytest.approx(whole[hit.path], abs=1e-5)
    assert [h.path for h in hits] == sorted(
        expected, key=lambda p: (-expected[p] * near[p], -expected[p], p)
    )


# -- (b) operators, filters, grouping, snippets, errors --------------------------------------

FILTER_NOTES = {
    "Projects/Alpha/Plan.md": "---\ntype: plan\ntags: [project/alpha/api]\n"
    "updated: 2026-01-10\n---\n"
    "# Alpha plan\n\n## Goals\nRaise the lock timeout for the DuckDB writer.\n",
    "Projects/Beta/Plan.md": "---\ntype: plan\ntags: [project/beta]\nupdated: 2025-06-01\n---\n"
    "# Beta plan\n\n## Goals\nA timeout on the lock of DuckDB; Kafka consumers too.\n",
    "Knowledge/Storage.md": "---\ntype: reference\ntags: [storage]\nupdated: 2024-03-03\n---\n"
    "# Storage\n\n## Intro\nDuckDB stores tables in one file.\n\n"
    "## Locking\nThe lock timeout bounds a wait: lock timeout, lock retries, lock holders.\n",
    "Knowledge/Kafka.md": "---\ntype: reference\ntags: [kafka]\nupdated: 2023-01-01\n---\n"
    "# Kafka\n\nConsumers read topics. No database here.\n",
}
FILTER_MAPPINGS = [
    FolderMapping("Projects/Alpha", "project", "alpha"),
    FolderMapping("Projects/Beta", "project", "beta"),
    FolderMapping("Knowledge", "global", None),
    FolderMapping("agent-memory", "project", "alpha"),
]
ALPHA, BETA = "Projects/Alpha/Plan.md", "Projects/Beta/Plan.md"
STORAGE, KAFKA = "Knowledge/Storage.md", "Knowledge/Kafka.md"


@pytest.fixture(scope="module")
def filter_vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("filters") / "vault"
    return make_vault(root, FILTER_NOTES, FILTER_MAPPINGS)


def paths_of(hits: list[SearchHit]) -> set[str]:
    return {h.path for h in hits}


def test_words_are_ored_and_ranked(filter_vault: Vault) -> None:
    assert paths_of(filter_vault.search("duckdb kafka")) == {ALPHA, BETA, STORAGE, KAFKA}


def test_phrase_matches_adjacent_terms_only(filter_vault: Vault) -> None:
    assert paths_of(filter_vault.search('"lock timeout"')) == {ALPHA, STORAGE}
    assert paths_of(filter_vault.search('duckdb "lock timeout"')) == {ALPHA, STORAGE}
    assert paths_of(filter_vault.search('"writer lock"')) == set()
    # Stop words and punctuation are not terms, so they neither break nor make a phrase.
    assert paths_of(filter_vault.search('"timeout on the lock"')) == {BETA, STORAGE}


def test_excluded_word_removes_the_note(filter_vault: Vault) -> None:
    assert paths_of(filter_vault.search("duckdb -kafka")) == {ALPHA, STORAGE}
    assert paths_of(filter_vault.search("lock -Kafka -storage")) == {ALPHA}


@pytest.mark.parametrize(
    ("query", "filters", "expected"),
    [
        ("duckdb tag:project", SearchFilters(), {ALPHA, BETA}),
        ("duckdb tag:#project/alpha", SearchFilters(), {ALPHA}),
        ("duckdb", SearchFilters(tag="project"), {ALPHA, BETA}),
        ("duckdb", SearchFilters(tag="#Project/Beta"), {BETA}),
        ("duckdb path:Projects/", SearchFilters(), {ALPHA, BETA}),
        ("duckdb path:projects/beta", SearchFilters(), {BETA}),
        ("duckdb", SearchFilters(folder="Knowledge/"), {STORAGE}),
        ("duckdb type:plan", SearchFilters(), {ALPHA, BETA}),
        ("duckdb kafka", SearchFilters(type="reference"), {STORAGE, KAFKA}),
        ("duckdb kafka", SearchFilters(scope="global"), {STORAGE, KAFKA}),
        ("duckdb kafka", SearchFilters(scope="project"), {ALPHA, BETA}),
        ("duckdb kafka", SearchFilters(scope_id="beta"), {BETA}),
        ("duckdb kafka", SearchFilters(since=datetime(2025, 1, 1)), {ALPHA, BETA}),
        ("duckdb kafka", SearchFilters(until=datetime(2025, 1, 1)), {STORAGE, KAFKA}),
        (
            "duckdb kafka",
            SearchFilters(since=datetime(2024, 1, 1), until=datetime(2026, 1, 1)),
            {BETA, STORAGE},
        ),
        ("duckdb kafka type:plan", SearchFilters(scope_id="alpha"), {ALPHA}),
    ],
)
def test_filters(
    filter_vault: Vault, query: str, filters: SearchFilters, expected: set[str]
) -> None:
    assert paths_of(filter_vault.search(query, filters)) == expected


def test_limit(filter_vault: Vault) -> None:
    full = filter_vault.search("duckdb kafka lock")
    assert len(full) == 4
    assert filter_vault.search("duckdb kafka lock", limit=2) == full[:2]


def test_results_grouped_by_note_best_section_first(filter_vault: Vault) -> None:
    hits = filter_vault.search("lock timeout")
    assert len({h.path for h in hits}) == len(hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    storage = next(h for h in hits if h.path == STORAGE)
    assert storage.heading == "Locking"
    assert storage.line == 11  # the heading's line
    scores = [s["score"] for s in storage.sections]
    assert scores == sorted(scores, reverse=True)
    parts = storage.score_parts
    assert scores[0] == parts["section"]
    plain = parts["section"] + TITLE_DOCUMENT * parts["title"] + WHOLE_NOTE * parts["whole"]
    near = 1 + PROXIMITY_WEIGHT * parts["proximity"]
    assert storage.score == pytest.approx(plain * near, abs=1e-5)
    assert (storage.scope, storage.scope_id, storage.title) == ("global", None, "Storage")


def test_snippet_marks_matched_words(filter_vault: Vault) -> None:
    hit = filter_vault.search("lock timeout", SearchFilters(folder="Knowledge"))[0]
    assert "**lock** **timeout**" in hit.snippet
    assert "**" not in snippet("nothing here", {"lock"})
    # The matched part of an identifier is marked; plural forms match their singular.
    assert snippet("call TestPagerOrder now", {"pager"}) == "call Test**Pager**Order now"
    assert snippet("call TestPagerOrder now", {fold("testpagerorder"), "pager"}) == (
        "call **TestPagerOrder** now"
    )
    assert snippet("two migrations ran", {fold("migration")}) == "two **migrations** ran"
    # The note's own bold is dropped, so marks never nest (`****Consistency**:**`).
    assert snippet("- **Consistency**: reads", {fold("consistency")}) == (
        "- **Consistency**: reads"
    )


def test_title_match_shows_a_section_with_text(corpus_vault: Vault) -> None:
    (hit,) = corpus_vault.search("tokenizer")
    # The title and the heading over the intro matched; the word is in neither text, so the
    # intro is quoted whole, unmarked.
    assert [s["ord"] for s in hit.sections] == [0, 1]
    assert (hit.heading, hit.line, hit.snippet) == (
        "Tokenizer",
        1,
        "The `TestPagerOrder` identifier is split; `vault_root` too. "
        "Queries and query terms fold plurals: migrations, migration.",
    )


@pytest.mark.parametrize("query", ["", "   ", "the of and", '"" -', "-duckdb", "tag:project"])
def test_query_without_searchable_words_is_an_error(filter_vault: Vault, query: str) -> None:
    with pytest.raises(QueryError) as info:
        filter_vault.search(query)
    assert info.value.code == "query_invalid"
    assert info.value.hint


def test_parse_query_operators() -> None:
    parsed = parse_query('Locks "lock timeout" -Kafka tag:#Project/Alpha path:/Projects/ type:Plan')
    assert parsed.terms == ("lock", "timeout")
    assert parsed.phrases == (("lock", "timeout"),)
    assert parsed.excluded == ("kafka",)
    assert (parsed.tags, parsed.paths, parsed.types) == (
        ("project/alpha",),
        ("projects",),
        ("plan",),
    )


def test_cli_search_json(filter_vault: Vault, capsys: pytest.CaptureFixture[str]) -> None:
    vault = str(filter_vault.root)
    assert main(["search", "lock timeout", "--vault", vault, "--json", "--limit", "1"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["ok"] is True
    (first,) = envelope["data"]["hits"]  # one shape with MCP's memory_search
    assert {"path", "title", "scope", "heading", "score", "snippet"} <= first.keys()
    assert main(["search", "the", "--vault", vault, "--json"]) == 1
    error = json.loads(capsys.readouterr().out)
    assert (error["ok"], error["error"]["code"]) == (False, "query_invalid")


# -- (c) incremental postings equal rebuilt postings ---------------------------------------

WORDS = [
    "lock",
    "locks",
    "timeout",
    "DuckDB",
    "vault_root",
    "TestPager",
    "query",
    "queries",
    "東京",
]
TABLE_DUMPS = {
    "documents": "SELECT n.path, d.ord, d.heading, d.line, d.length, d.text "
    "FROM documents d JOIN notes n ON n.id = d.note_id",
    "postings": "SELECT p.term, n.path, p.note_key, p.ord, p.tf, p.length, p.note_length "
    "FROM postings p JOIN notes n ON n.note_key = p.note_key",
    "terms": "SELECT term, df FROM terms",
    "search_stats": "SELECT documents, notes, total_length FROM search_stats",
}

note_text = st.builds(
    lambda title, tags, sections: (
        ("---\n" + (f"title: {title}\n" if title else "") + f"tags: [{', '.join(tags)}]\n---\n")
        + "".join(
            f"## {h}\n{' '.join(body)}\n\n" if h else " ".join(body) + "\n\n"
            for h, body in sections
        )
    ),
    st.sampled_from(["", "Lock notes", "Queries"]),
    st.lists(st.sampled_from(["db", "db/duckdb", "search"]), max_size=2),
    st.lists(
        st.tuples(
            st.sampled_from(["", "Locks", "Query plan"]),
            st.lists(st.sampled_from(WORDS), max_size=6),
        ),
        max_size=3,
    ),
)
edit = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 3), note_text),
    st.tuples(st.just("delete"), st.integers(0, 3), st.just("")),
    st.tuples(st.just("rename"), st.integers(0, 3), st.integers(0, 3).map(str)),
)


def dump(vault: Vault) -> dict[str, list[tuple[object, ...]]]:
    with store.reading(vault.config.index_path) as con:
        return {
            name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in TABLE_DUMPS.items()
        }


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(edits=st.lists(edit, min_size=1, max_size=6))
def test_incremental_postings_equal_rebuild(edits: list[tuple[str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        vault = make_vault(root, {"n0.md": "# Start\nlock timeout\n", "n1.md": "queries\n"})
        clock = itertools.count(1_700_000_000_000_000_000, 1_000_000_000)

        def touch(rel: str) -> None:
            stamp = next(clock)
            os.utime(root / rel, ns=(stamp, stamp))

        for action, index, arg in edits:
            rel = f"n{index}.md"
            if action == "write":
                write(root, rel, arg)
                touch(rel)
            elif action == "delete":
                (root / rel).unlink(missing_ok=True)
            elif (root / rel).exists() and not (root / f"n{arg}.md").exists():
                (root / rel).rename(root / f"n{arg}.md")
            vault.reconcile()
        incremental, answers = dump(vault), ranked_answers(vault)
        vault.reconcile(rebuild=True)
        assert incremental == dump(vault)
        assert answers == ranked_answers(vault)


def ranked_answers(vault: Vault) -> list[list[tuple[object, ...]]]:
    """Every note each query finds, by path (ids differ after renames, so ties may order
    differently): path, score, shown section and snippet."""
    out = []
    for query in ("lock", "timeout queries", "duckdb plan search", '"query plan"', "lock -db"):
        try:
            hits = vault.search(query, limit=50)
        except QueryError:
            hits = []
        out.append(sorted((h.path, h.score, h.heading, h.line, h.snippet) for h in hits))
    return out


# -- (d) relevance over example-vault ------------------------------------------------------

RELEVANCE = load_questions(QUESTIONS_DIR / "example-vault.jsonl")


@pytest.fixture(scope="module")
def example_index(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    import shutil

    from tests.conftest import EXAMPLE_VAULT

    target = tmp_path_factory.mktemp("example") / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns("index.duckdb*"))
    vault = Vault(target)
    vault.reconcile()
    return vault


@pytest.mark.parametrize("question", RELEVANCE, ids=[q.q for q in RELEVANCE])
def test_relevance_expected_note_in_top_3(example_index: Vault, question: Question) -> None:
    top = [hit.path for hit in example_index.search(question.q, limit=3)]
    assert set(question.expected) & set(top), f"{question.expected} not in top 3: {top}"


def test_relevance_not_below_the_fts5_baseline(example_index: Vault) -> None:
    ours = metrics([[h.path for h in example_index.search(q.q)] for q in RELEVANCE], RELEVANCE)
    base = metrics(fts5_rank(example_index.root, RELEVANCE), RELEVANCE)
    assert ours["r@5"] >= base["r@5"] and ours["mrr@10"] >= base["mrr@10"], (ours, base)


# -- (e) fuzzy terms, joined terms, statistics under filters --------------------------------


def test_misspelt_terms_expand_to_the_nearest_index_terms(corpus_vault: Vault) -> None:
    with store.reading(corpus_vault.config.index_path) as con:
        reads = SqlReads(con, NoteFilter())
        assert expand_terms(reads, ["lock", "flaki"]) == ["lock", "flaki"]  # both in the index
        assert expand_terms(reads, tokenize("tabels")) == [fold("tables")]  # one edit away
        assert expand_terms(reads, ["duckbd"]) == ["duckdb"]  # a transposition is one edit
        assert expand_terms(reads, ["tokeniz"]) == ["tokeniz"]  # in the index
        # Short words and words with digits are never expanded; far-off words stay as typed.
        assert expand_terms(reads, ["lok", "v1.3", "zzzzzzzz"]) == ["lok", "v1.3", "zzzzzzzz"]
    assert corpus_vault.search("duckbd")[0].path == "DuckDB.md"
    assert max_edits("abc") == 0 and max_edits("abcd") == 1 and max_edits("abcdefgh") == 2


def test_a_misspelt_word_stands_for_one_index_term(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path / "vault",
        {
            "Release checklist.md": "# Release checklist\n\nSteps to release a version.\n",
            "Git.md": "# Git\n\nRebase often. Related: rebasing, relations.\n",
        },
    )
    assert [h.path for h in vault.search("relase")] == ["Release checklist.md"]


def test_a_query_with_a_typo_is_scored_once(
    corpus_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The words the index lacks are found by a lookup in `terms` and replaced before any
    postings are read: the query reads its postings once and is scored once (they were read
    twice, and before that scored twice)."""
    from vaultmem.search import resident
    from vaultmem.search.reads import SqlReads

    scorings: list[int] = []
    reads: list[list[str]] = []
    score = bm25_module.rank

    def counted(postings: Any, *args: Any, **kwargs: Any) -> Any:
        scorings.append(len(postings))
        return score(postings, *args, **kwargs)

    for source in (SqlReads, resident.ResidentReads):

        def read(
            self: Any, terms: list[str], *, columns_from: int, _read: Any = source.term_postings
        ) -> Any:
            reads.append(list(terms))
            return _read(self, terms, columns_from=columns_from)

        monkeypatch.setattr(source, "term_postings", read)
    monkeypatch.setattr(bm25_module, "rank", counted)
    assert corpus_vault.search("duckbd lock")[0].path == "DuckDB.md"
    assert len(reads) == 1 and "duckbd" not in reads[0] and "duckdb" in reads[0], reads
    assert len(scorings) == 1, scorings
    scorings.clear()
    reads.clear()
    corpus_vault.search("duckdb lock")  # every word known: one scoring, as always
    assert len(scorings) == 1, scorings
    assert len(reads) == 1, reads


@pytest.mark.parametrize(
    ("query", "compound", "note"),
    [
        ("stat blocks", "statblocks", "Render statblocks of monsters."),
        # the words' stems (`titl`, `data`) do not make the compound's (`titlebar`, `databas`)
        ("hide the title bar", "titlebar", "Hide the titlebar of the window."),
        ("data base", "database", "Pick a database for monsters."),
    ],
)
def test_adjacent_terms_also_match_their_joined_form(
    tmp_path: Path, query: str, compound: str, note: str
) -> None:
    first, second = query.split()[-2:]
    vault = make_vault(
        tmp_path / "vault",
        {
            "Compound.md": f"# {compound.capitalize()}\n\n{note}\n",
            "First.md": f"# One\n\nA {first} here.\n",
            "Second.md": f"# Two\n\nA {second} there.\n",
            "Both.md": f"# Notes\n\nA {first}, a {second}.\n",
        },
    )
    assert fold(compound) in parse_query(query).joined
    assert vault.search(query)[0].path == "Compound.md"


def test_a_long_word_the_index_lacks_is_asked_as_the_two_words_it_holds(tmp_path: Path) -> None:
    """The reverse of joined terms: `Studentenrabatt` written as one word finds the note that
    has `Studenten` and `Rabatte` apart (German writes compounds as one word, notes often
    not), and the split is read before any typo lookup."""
    vault = make_vault(
        tmp_path / "vault",
        {
            "Discounts.md": "# Rabatte\n\nStudenten bekommen Rabatte auf Sync.\n",
            "Sync.md": "# Sync\n\nSync hält Notizen gleich. Studentinnen lesen hier.\n",
            "Plans.md": "# Tarife\n\nRabatt nur im Jahrestarif.\n",
        },
    )
    with store.reading(vault.config.index_path) as con:
        reads = SqlReads(con, NoteFilter())
        assert expand_terms(reads, ["studentenrabatt"], fold=fold) == [fold("studenten"), "rabatt"]
        # the head is folded as a word: a linking `s` goes (`Jahrestarif`: `jahr` + `tarif`)
        assert ("jahr", "tarif") in compound_splits("jahrestarif", fold)
        # without the fold the word is a typo as before: no index term is two edits from it
        assert expand_terms(reads, ["studentenrabatt"]) == ["studentenrabatt"]
    assert vault.search("Gibt es einen Studentenrabatt?")[0].path == "Discounts.md"
    assert compound_splits("release", fold) == []  # shorter than a compound


GERMAN_NOTES = {
    "Bearbeitung.md": "# Bearbeitung\n\nBearbeitungskürzel stehen in den Einstellungen.\n",
    "Darstellung.md": "# Darstellung\n\nDas Design lässt sich oben schalten.\n",
    "Liste.md": "# Liste\n\nListe ohne Tasten.\n",
}


def test_a_german_query_word_also_asks_the_compounds_ending_in_it(tmp_path: Path) -> None:
    """German writes compounds as one word: a question saying *Kürzel* finds the note that only
    writes *Bearbeitungskürzel*, and one saying *einschalten* the note that writes its tail
    *schalten* as a word, each at a fraction of a word's weight; no other word of either
    question is in any note, and the compound is marked in the snippet."""
    vault = make_vault(tmp_path / "vault", GERMAN_NOTES)
    assert parse_query("Wo finde ich die Kürzel?").compound_words == ("kürzel",)
    hits = vault.search("Wo finde ich die Kürzel?")
    assert [h.path for h in hits] == ["Bearbeitung.md"]
    assert "**Bearbeitungskürzel**" in hits[0].snippet
    assert [h.path for h in vault.search("Dunkelmodus einschalten für alle")] == ["Darstellung.md"]
    assert vault.search("dark einschalten") == []  # not German: no tail is asked
    with store.reading(vault.config.index_path) as con:
        reads = SqlReads(con, NoteFilter())
        assert reads.compounds_ending_with(["kürzel"], compounds.HEAD_MIN) == ["bearbeitungskürzel"]
        # a word of its own is no compound of itself
        assert reads.compounds_ending_with(["liste"], compounds.HEAD_MIN) == []


def test_only_german_queries_read_words_as_compound_parts() -> None:
    """An English word's look-alike endings (*sever* in *persever*, *index* in *tabindex*) are
    no compounds: an English query asks none, nor a short or common word of a German one."""
    assert compounds.is_german("Wie füge ich Fußnoten ein?")
    assert compounds.is_german("Rückverweise anzeigen")  # an umlaut alone
    assert compounds.is_german("Notizen als Favoriten markieren")
    for english in ("how do I index tables", "die hard server settings", "was it a persever"):
        assert not compounds.is_german(english)
        assert parse_query(english).compound_words == ()
    assert parse_query("Wo ist das Menü?").compound_words == ()  # five letters or fewer
    assert compounds.distinctive(("notizen", "kürzel"), {"notizen": 216}, 1751.0) == ["kürzel"]
    # a whole prompt of German text reads its rarest MAX_WORDS words only
    many = tuple(f"wortteil{chr(97 + i)}" for i in range(compounds.MAX_WORDS + 3))
    df = {w: i for i, w in enumerate(reversed(many))}  # the last words are the rarest
    assert compounds.distinctive(many, df, 1e6) == list(many[3:])
    assert compounds.tails("einschalten") == ["schalten", "chalten", "halten", "alten"]


def test_joined_terms_join_words_before_stemming() -> None:
    assert joined_terms(["title", "bar"], ()) == [fold("titlebar")] == ["titlebar"]
    assert joined_terms(["Data", "Base"], ()) == [fold("database")]
    assert joined_terms(["stat", None, "blocks"], ()) == []  # an identifier between them
    assert joined_terms(["stat", "blocks"], {fold("statblocks")}) == []  # asked already
    assert joined_terms(["very", "Very", "big"], ()) == [fold("verybig")]  # no `veryveri`


def test_statistics_are_those_of_the_filtered_notes(corpus_vault: Vault) -> None:
    """Under a folder filter, N, df and the mean length count only that folder's documents:
    the SQL equals textbook BM25 over the kept documents, and differs from the vault-wide one."""
    query = "duckdb tables term"
    terms = list(dict.fromkeys(tokenize(query)))
    kept = {
        k: v for k, v in textbook_documents(corpus_vault.root).items() if k[0].startswith("Search/")
    }
    expected = bm25(kept, terms)
    notes = note_filter(parse_query(query), SearchFilters(folder="Search"))
    with store.reading(corpus_vault.config.index_path) as con:
        paths = dict(con.execute("SELECT id, path FROM notes").fetchall())
        rows = document_scores(con, terms, k1=K1, b=B, notes=notes)
        everywhere = document_scores(con, terms, k1=K1, b=B)
    got = {(paths[note_id], ord_): score for note_id, ord_, score in rows}
    assert got.keys() == expected.keys()
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, abs=1e-9, rel=0), key
    vault_wide = {(paths[n], o): s for n, o, s in everywhere}
    assert any(abs(vault_wide[k] - got[k]) > 1e-6 for k in got)
    hits = corpus_vault.search(query, SearchFilters(folder="Search"))
    assert {h.path for h in hits} == {k[0] for k in expected}


def test_a_polish_vault_finds_another_case_of_the_word_with_the_polish_stemmer(
    tmp_path: Path,
) -> None:
    """`[search] language = "polish"` (PyStemmer 3.1): a question in the instrumental plural
    finds the note that says the word in the accusative, which the English default cannot
    (the Polish help measured 0.55 -> 0.73 at r@1 on its test half, docs/search.md)."""
    root = tmp_path / "vault"
    note = "# Eksport\n\nZapisz każdy dokument jako PDF.\n"
    vault = make_vault(root, {"Eksport.md": note})
    assert vault.search("dokumentami") == []  # three letters apart: past typo tolerance
    config = vault.config.config_path
    config.write_text(
        config.read_text(encoding="utf-8").replace("[search]\n", '[search]\nlanguage = "polish"\n'),
        encoding="utf-8",
    )
    vault = Vault(root)
    vault.reconcile()
    assert [h.path for h in vault.search("dokumentami")] == ["Eksport.md"]


def test_stemmer_language_comes_from_config(tmp_path: Path) -> None:
    """`[search] language = "french"`: notes and queries use the French stemmer, the index
    records it, and changing it rebuilds the index."""
    root = tmp_path / "vault"
    vault = make_vault(root, {"Chevaux.md": "# Écurie\n\nLes chevaux mangent.\n"})
    assert vault.search("cheval") == []  # English keeps `chevaux` whole
    config = vault.config.config_path
    config.write_text(
        config.read_text(encoding="utf-8").replace("[search]\n", '[search]\nlanguage = "french"\n'),
        encoding="utf-8",
    )
    vault = Vault(root)
    assert vault.config.search_language == "french"
    vault.reconcile()
    assert [h.path for h in vault.search("cheval")] == ["Chevaux.md"]
    with store.reading(vault.config.index_path) as con:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        assert meta["tokenizer_version"].endswith("-french")
        # Without the language given, search reads it from the index.
        from vaultmem.search.query import search

        assert [h.path for h in search(con, "cheval")] == ["Chevaux.md"]


def test_a_russian_question_finds_the_other_forms_of_its_words(tmp_path: Path) -> None:
    """`шаблонами` (instrumental plural, three letters from `шаблон`: past the typo lookup's
    reach) finds the note that writes `Шаблон`, with the default `[search] language`
    (English): Russian words are stemmed as Russian."""
    vault = make_vault(
        tmp_path / "vault",
        {
            "Шаблоны.md": "# Заготовки\n\nОткройте шаблон.\n",
            "Графы.md": "# Граф\n\nСвязи между файлами.\n",
        },
    )
    hits = vault.search("Как пользоваться шаблонами?")
    assert [h.path for h in hits] == ["Шаблоны.md"]
    assert "**шаблон**" in hits[0].snippet


def test_unknown_stemmer_language_is_a_config_error(tmp_path: Path) -> None:
    from vaultmem.core.errors import ConfigError

    root = tmp_path / "vault"
    vault = make_vault(root, {})
    config = vault.config.config_path
    config.write_text(
        config.read_text(encoding="utf-8").replace("[search]\n", '[search]\nlanguage = "elvish"\n'),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="elvish"):
        Vault(root)


def test_an_index_of_the_previous_tokenizer_rebuilds_and_segmented_search_works(
    tmp_path: Path,
) -> None:
    """An index written by tokenizer version 2 (Chinese as plain bigrams, question words as
    content) is rebuilt on the next reconcile: its postings become this tokenizer's."""
    from vaultmem.core.models import TOKENIZER_VERSION

    root = tmp_path / "vault"
    vault = make_vault(
        root,
        {
            "同步.md": "# 在多个设备之间同步笔记\n\n使用 Obsidian Sync 同步笔记。\n",
            "属性.md": "# 属性\n\n怎么办都可以：属性是笔记的元数据。\n",
        },
    )
    con = store.connect(vault.config.index_path, read_only=False)
    try:
        con.execute(
            "UPDATE meta SET value = $v WHERE key = 'tokenizer_version'",
            {"v": f"{TOKENIZER_VERSION - 1}-english"},
        )
        con.execute("INSERT INTO postings SELECT '么使', note_key, 1, 1, 1, 1 FROM notes")
    finally:
        con.close()
    assert TOKENIZER_VERSION >= 3
    report = Vault(root).reconcile()
    assert report.notes == 2
    with store.reading(vault.config.index_path) as con:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        stale = con.execute("SELECT count(*) FROM postings WHERE term = '么使'").fetchone()
        question = con.execute("SELECT count(*) FROM postings WHERE term = '怎么'").fetchone()
    assert meta["tokenizer_version"] == f"{TOKENIZER_VERSION}-english"
    assert stale == (0,) and question == (0,)
    hits = Vault(root).search("怎么在多个设备之间同步")
    assert hits[0].path == "同步.md"
    assert "**同步笔记**" in hits[0].snippet or "**同步**" in hits[0].snippet


def test_a_japanese_hit_marks_the_words_asked_not_words_sharing_a_bigram(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path / "v",
        {
            "同期.md": "# ノートの同期\n\nリモートの保管庫とサポートについて。"
            "ノートを同期するにはSyncを使います。\n",
            "別.md": "# 別のノート\n\n関係のない文章です。\n",
        },
    )
    hit = vault.search("ノートを同期する方法")[0]
    assert hit.path == "同期.md"
    assert "**ノート**" in hit.snippet and "**同期**" in hit.snippet
    assert "リモート**" not in hit.snippet and "サポート**" not in hit.snippet


def test_a_heading_over_a_comment_shows_the_next_section_and_keeps_its_score(
    tmp_path: Path,
) -> None:
    """A note may open with `# key` over an HTML comment (example-vault's topics carry their
    `<!-- id: ... -->` header so): that section holds text but none a reader sees. A search
    matching the heading shows the next best section with text, not an empty snippet, while
    proximity still reads the heading (the pair `release process` stands there), so the
    score is what it was."""
    note = (
        "# release-process\n<!-- id: c4e2 | scope: project | scope_id: atlas -->\n\n"
        "## 2026-09-14\nCut from main by pushing a tag; CI publishes it.\n\n"
        "## See also\nThe release notes.\n"
    )
    vault = make_vault(
        tmp_path / "vault", {"release-process.md": note, "Other.md": "# Other\n\nNothing.\n"}
    )
    [hit] = vault.search("release process")
    assert hit.heading == "See also" and hit.snippet == "The **release** notes."
    assert hit.score_parts["proximity"] == 1.0  # read off the heading: both words, in order

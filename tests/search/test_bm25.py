"""The two BM25 scorers (plain Python rows, numpy columns) give the same ranking, whatever the
postings and their order; and a search gives the same hits through either."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.search import bm25
from vaultmem.search.bm25 import POSTING_COLUMNS, Row, Stats
from vaultmem.vault import Vault

STATS = Stats(documents=40.0, avgdl=12.5, notes=9.0, avgnl=55.0)


def postings_strategy() -> st.SearchStrategy[list[Row]]:
    """Unique (term, note, ord) postings; a note's note_length is one value for all its rows."""
    cell = st.tuples(
        st.integers(0, 3), st.integers(1, 8), st.integers(0, 4), st.sampled_from([0.5, 1, 3, 4.5])
    )

    def build(cells: list[tuple[int, int, int, float]]) -> list[Row]:
        seen: dict[tuple[int, int, int], Row] = {}
        for term, note, ord_, tf in cells:
            seen[term, note, ord_] = (term, note * 7919, ord_, tf, 3 + ord_ * 5, 40 + note)
        return list(seen.values())

    return st.lists(cell, max_size=60).map(build)


def columns(rows: list[Row]) -> dict[str, np.ndarray]:
    return {name: np.array([r[i] for r in rows]) for i, name in enumerate(POSTING_COLUMNS)}


@settings(max_examples=200, deadline=None)
@given(
    postings_strategy(),
    st.lists(st.sampled_from([1.0, 2.0]), min_size=4, max_size=4),
    st.integers(1, 12),
    st.sampled_from([(1.0, 0.0), (2.0, 1.0)]),
    st.frozensets(st.sampled_from([7919 * n for n in range(1, 9)]), max_size=2),
    st.randoms(use_true_random=False),
)
def test_both_scorers_agree(
    rows: list[Row],
    weights: list[float],
    limit: int,
    blend: tuple[float, float],
    excluded: frozenset[int],
    rnd: random.Random,
) -> None:
    kw: dict[str, Any] = dict(
        k1=1.2, b=0.75, limit=limit, whole_weight=blend[0], title_weight=blend[1]
    )
    plain = bm25.rank_rows(rows, weights, STATS, excluded=excluded, **kw)
    shuffled = rows[:]
    rnd.shuffle(shuffled)  # the scan's order must not matter
    vector = bm25.rank_columns(
        columns(shuffled),
        weights,
        STATS,
        excluded=excluded,
        **kw,
    )
    # Rows the index read in order skip the sort: the same result, exactly.
    in_order = sorted(rows, key=lambda r: (r[1], r[2], r[0]))
    assert bm25._in_order(*(np.array([r[i] for r in in_order], dtype=np.int64) for i in (1, 2, 0)))
    assert bm25.rank_columns(columns(in_order), weights, STATS, excluded=excluded, **kw) == vector
    # The resident index adds note numbers that sort as the keys do: the same result, exactly.
    by_number = columns(shuffled)
    by_number[bm25.NOTE_ORDER] = np.unique(by_number["note_key"], return_inverse=True)[1]
    assert bm25.rank_columns(by_number, weights, STATS, excluded=excluded, **kw) == vector
    assert [n.note_key for n in plain] == [n.note_key for n in vector]
    for a, b in zip(plain, vector, strict=True):
        assert a.score == pytest.approx(b.score, rel=1e-12)
        assert (a.section, a.title, a.whole) == pytest.approx((b.section, b.title, b.whole))
        assert [o for o, _ in a.documents] == [o for o, _ in b.documents]
        assert a.note_key not in excluded


def test_search_gives_the_same_hits_through_either_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "v"
    root.mkdir()
    vault = Vault.init(root)
    words = [
        "lantern",
        "kettle",
        "harbor",
        "copper",
        "meadow",
        "signal",
        "ledger",
        "orbit",
        "quartz",
        "velvet",
    ]
    rnd = random.Random(7)
    for i in range(60):
        body = "\n\n".join(
            f"## {rnd.choice(words).title()}\n" + " ".join(rnd.choices(words, k=rnd.randint(3, 30)))
            for _ in range(rnd.randint(1, 4))
        )
        (root / f"Note {i}.md").write_text(f"# Note {i} {rnd.choice(words)}\n\n{body}\n", "utf-8")
    vault.reconcile()
    queries = [
        "lantern",
        "kettle harbor",
        "copper -meadow",
        "signal ledger orbit",
        '"quartz velvet"',
        "lantren kettle harbor",  # a typo: replaced before the postings are read
    ]
    monkeypatch.setattr(bm25, "columns_from", lambda: 10**9)
    plain = [vault.search(q, limit=20) for q in queries]
    for columns_from in (0, 3):  # all rows as columns; the first rows as tuples, then columns
        monkeypatch.setattr(bm25, "columns_from", lambda n=columns_from: n)
        assert [vault.search(q, limit=20) for q in queries] == plain
    assert all(plain)


@settings(max_examples=200, deadline=None)
@given(postings_strategy(), st.randoms(use_true_random=False))
def test_rows_count_as_in_order_only_when_sorted_by_note_ord_term(
    rows: list[Row], rnd: random.Random
) -> None:
    """The scorer skips its sort for rows the index read in order: any other order must be
    sorted (a row out of place would be summed into the wrong document)."""
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    expected = shuffled == sorted(shuffled, key=lambda r: (r[1], r[2], r[0]))
    cols = [np.array([r[i] for r in shuffled], dtype=np.int64) for i in (1, 2, 0)]
    assert bm25._in_order(*cols) == expected


def test_a_row_out_of_place_anywhere_is_not_in_order() -> None:
    def check(rows: list[tuple[int, int, int]]) -> bool:  # (note key, ord, term)
        return bm25._in_order(*(np.array([r[i] for r in rows], dtype=np.int64) for i in range(3)))

    ordered = [(5, 0, 0), (5, 0, 2), (5, 1, 1), (9, 0, 0), (9, 2, 0), (9, 2, 3)]
    assert check(ordered)
    for i in range(len(ordered) - 1):  # two neighbours swapped: terms, documents or notes
        swapped = ordered[:]
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        assert not check(swapped), swapped
    assert not check([(5, 0, 1), (5, 0, 1)])  # one posting twice is no order of postings


def test_idf_is_one_formula_for_a_float_and_an_array() -> None:
    """Both scorers take idf from `bm25.idf`: a float with `math.log`, an array with `np.log`,
    the same value element by element."""
    import math

    dfs = [1.0, 2.0, 7.0, 40.0]
    arrays = bm25.idf(40.0, np.array(dfs), np.log).tolist()
    assert arrays == pytest.approx([bm25.idf(40.0, df, math.log) for df in dfs], rel=1e-15)
    assert bm25.idf(40.0, 40.0, math.log) == pytest.approx(math.log(1 + 0.5 / 40.5))


def test_top_documents_are_best_first_then_by_ord() -> None:
    pairs = [(3, 0.5), (1, 0.9), (0, 0.5), (2, 0.1)]
    assert bm25.top_documents(pairs, 3) == [(1, 0.9), (0, 0.5), (3, 0.5)]

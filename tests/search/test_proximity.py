"""Term proximity (`search/proximity.py`): the pair share, and the reordering it makes of
BM25's best notes in a real vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.core.tokenizer import tokenize
from vaultmem.search import proximity
from vaultmem.vault import Vault


def test_pairs_are_the_query_adjacent_words_once() -> None:
    assert proximity.pairs(["rank", "player", "score", "sort", "set"]) == [
        ("player", "rank"),
        ("player", "score"),
        ("score", "sort"),
        ("set", "sort"),
    ]
    assert proximity.pairs(["lock"]) == []
    assert proximity.pairs(["lock", "lock"]) == []
    assert proximity.pairs(["a", "b", "a", "b"]) == [("a", "b")]


def test_share_counts_pairs_within_the_window_in_either_order() -> None:
    pairs = [("languag", "model"), ("json", "languag")]
    weights = {"json": 2.0, "languag": 1.0, "model": 3.0}
    total = 1.0 * 3.0 + 2.0 * 1.0
    near = tokenize("large language models")
    assert proximity.proximity(near, pairs, weights) == pytest.approx(3.0 / total)
    reversed_ = tokenize("models of language and json")
    assert proximity.proximity(reversed_, pairs, weights) == pytest.approx(1.0)
    far = ["languag", *["x"] * proximity.WINDOW, "model"]
    assert proximity.proximity(far, pairs, weights) == 0.0
    edge = ["languag", *["x"] * (proximity.WINDOW - 1), "model"]
    assert proximity.proximity(edge, pairs, weights) == pytest.approx(3.0 / total)
    assert proximity.proximity(near, [], weights) == 0.0
    # A pair of a word no document holds weighs nothing.
    assert proximity.proximity(near, [("languag", "model")], {"languag": 1.0}) == 0.0


def test_rerank_multiplies_scores_and_keeps_ties_in_bm25_order() -> None:
    bonus = 1 + proximity.WEIGHT
    assert proximity.rerank([10.0, 9.99, 5.0], [0.0, 1.0, 1.0]) == [1, 0, 2]
    assert proximity.rerank([10.0, 10.0 / bonus], [0.0, 1.0]) == [0, 1]  # equal: BM25 order
    assert proximity.rerank([10.0, 8.0], [0.0, 1.0]) == [0, 1]  # too far behind to move


def test_idf_weights_from_postings_rows() -> None:
    rows = [(0, 1, 1, 1.0, 3, 3), (0, 2, 1, 1.0, 3, 3), (1, 2, 1, 2.0, 3, 3)]
    df = proximity.document_frequencies(rows, ["a", "b", "c"])
    assert df == {"a": 2, "b": 1, "c": 0}
    weights = proximity.idf_weights(["a", "b", "c"], {"b": 2}, df, 10.0)
    assert weights["c"] == 0.0
    assert weights["b"] > 2 * weights["a"] > 0  # rarer, and asked twice


TWINS = {
    # The same words, the same counts and lengths: BM25 cannot tell the two notes apart.
    "Apart.md": "# Notes alpha\n\nThe sorted shelf holds one old blue book near the window "
    "today. Another set of rules applies to the garden.\n",
    "Together.md": "# Notes bravo\n\nThe shelf holds one old blue book near the window "
    "today. Another sorted set of rules applies to the garden.\n",
    "Other.md": "# Other\n\nNothing about any of it.\n",
}


def indexed_vault(root: Path, notes: dict[str, str]) -> Vault:
    """A new vault of these notes (path -> text), reconciled."""
    root.mkdir()
    vault = Vault.init(root)
    for rel, text in notes.items():
        (root / rel).write_text(text, encoding="utf-8")
    vault.reconcile()
    return vault


@pytest.fixture
def twins(tmp_path: Path) -> Vault:
    return indexed_vault(tmp_path / "vault", TWINS)


def test_the_note_with_the_words_together_ranks_first(twins: Vault) -> None:
    hits = twins.search("sorted set")
    assert [h.path for h in hits] == ["Together.md", "Apart.md"]
    together, apart = hits
    assert (together.score_parts["proximity"], apart.score_parts["proximity"]) == (1.0, 0.0)
    plain = {h.path: h.score_parts["section"] + h.score_parts["whole"] for h in hits}
    assert plain["Together.md"] == pytest.approx(plain["Apart.md"], rel=1e-9)
    assert together.score == pytest.approx(plain["Together.md"] * (1 + proximity.WEIGHT))
    assert apart.score == pytest.approx(plain["Apart.md"], abs=1e-6)
    # One word: no pair, plain BM25 (ties go to the smaller note key).
    assert all(h.score_parts["proximity"] == 0.0 for h in twins.search("sorted"))


def test_a_smaller_limit_is_a_prefix_of_a_larger_one(twins: Vault) -> None:
    full = twins.search("sorted set rules")
    assert len(full) == 2
    assert twins.search("sorted set rules", limit=1) == full[:1]


def test_proximity_off_is_plain_bm25_order(twins: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proximity, "WEIGHT", 0.0)
    hits = twins.search("sorted set")
    assert {h.path for h in hits} == {"Together.md", "Apart.md"}
    assert hits[0].score == pytest.approx(hits[1].score, rel=1e-9)


def test_candidates_are_the_notes_a_boost_can_lift_into_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    most = proximity.boost(1.0, 1.0)  # every pair near, and the title named
    assert most == 1 + proximity.WEIGHT + proximity.TITLE_WEIGHT
    scores = [10.0, 9.0, 8.0, 8.0 / most, 8.0 / most - 0.01, 1.0]
    words = ["sort", "set"]
    assert proximity.candidates(scores, 3, words) == 4  # the 4th reaches 8.0 at most
    assert proximity.candidates(scores, 10, words) == len(scores)
    assert proximity.candidates(scores, 5, words) == 5
    assert proximity.candidates([5.0] * 30, 2, words) == proximity.POOL  # never past the pool
    assert proximity.candidates([], 3, words) == 0
    # One word has no pair, but its note's title can still be named.
    assert proximity.candidates(scores, 3, ["sort"]) == 4
    monkeypatch.setattr(proximity, "TITLE_WEIGHT", 0.0)
    assert proximity.candidates([5.0] * 30, 2, ["sort"]) == 2  # nothing can boost it


def test_title_named_needs_every_word_of_the_title() -> None:
    words = ["use", "properti"]
    assert proximity.title_named(["properti"], words) == 1.0
    assert proximity.title_named(["properti", "properti"], words) == 1.0
    assert proximity.title_named(["formula", "properti"], words) == 0.0  # a part is not enough
    assert proximity.title_named([], words) == 0.0  # a title of stop words names nothing


NAMED = {
    # BM25 puts Formulas first for "properties" (its title and body say it more often); the
    # question names the other note's whole title.
    "Properties.md": "# Properties\n\nProperties hold structured data about a note: text, dates "
    "and numbers.\n",
    "Formulas.md": "# Formula properties\n\nA formula reads the properties of each note and "
    "computes a value from those properties.\n",
    "属性.md": "# 属性\n\n属性保存笔记的结构化数据。\n",
    "公式.md": "# 公式属性\n\n公式读取每篇笔记的属性，并根据这些属性计算一个值。\n",
}


@pytest.fixture
def named(tmp_path: Path) -> Vault:
    return indexed_vault(tmp_path / "vault", NAMED)


def test_the_note_the_question_names_ranks_first(
    named: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = named.search("how do I use properties")
    assert [h.path for h in hits[:2]] == ["Properties.md", "Formulas.md"]
    first, second = hits[:2]
    assert (first.score_parts["title_named"], second.score_parts["title_named"]) == (1.0, 0.0)
    parts = first.score_parts
    boost = 1 + proximity.WEIGHT * parts["proximity"] + proximity.TITLE_WEIGHT
    assert first.score == pytest.approx((parts["section"] + parts["whole"]) * boost, rel=1e-5)
    # a Chinese title is cut as the query is: 属性 is a word of 怎么使用属性, 公式属性 is not
    named_zh = {h.path: h.score_parts["title_named"] for h in named.search("怎么使用属性")}
    assert (named_zh["属性.md"], named_zh["公式.md"]) == (1.0, 0.0)
    monkeypatch.setattr(proximity, "TITLE_WEIGHT", 0.0)
    assert named.search("how do I use properties")[0].path == "Formulas.md"

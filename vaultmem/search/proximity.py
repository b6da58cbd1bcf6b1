"""Term proximity: BM25's best notes reordered by how close the question's word pairs stand in
the section each note shows (pure, no I/O).

BM25 scores each word apart, so a long note that mentions `language` in one paragraph and
`model` in another ties with the note that says "language model". Following the sequential
dependence model (Metzler & Croft, 2005), the pairs that count are the query's **adjacent** words
(`rank players by score with sorted sets` gives rank·player, player·score, score·sort,
sort·set), and a pair is found when both words occur within WINDOW terms of each other, in
either order. A note's proximity is the share of its query's pairs found, each pair weighted by
the product of its words' query weights (count in the query × idf):

    proximity(note) = Σ_{found pairs (a,b)} w(a)·w(b) / Σ_{pairs (a,b)} w(a)·w(b)     (0..1)
    score'(note)    = score(note) · (1 + WEIGHT · proximity(note))

It is measured on the section the hit shows (its best section with text: heading and the
first `SNIPPET_SCAN_CHARS` of its text, the part the snippet tokenizes anyway), for the POOL
best notes by BM25. A fixed pool keeps `--limit 1` the first note of `--limit 10`; notes below
the pool keep BM25's order. A query of one word has no pair: its ranking is plain BM25.
WEIGHT and WINDOW were measured with `python -m benchmarks.bench_retrieval --proximity`
(docs/search.md). A note of the pool whose whole title is among the query's words gains
TITLE_WEIGHT more (`title_named`), a one-word query too:

    score'(note)    = score(note) · (1 + WEIGHT · proximity(note) + TITLE_WEIGHT · named(note))
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

POOL = 10
"""How many of BM25's best notes proximity may reorder (those whose sections a hit list
fetches anyway at the default limit)."""
WINDOW = 8
"""Two words at most this many terms apart are near (SDM's unordered window)."""
WEIGHT = 0.05
"""How much a note whose shown section holds every pair near raises its score (by 5 %): a
tie-breaker between notes BM25 scores alike (docs/search.md has the sweep)."""


def pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """The query's adjacent word pairs, in query order, each once (a pair of one word twice
    is none)."""
    out: dict[tuple[str, str], None] = {}
    for a, b in itertools.pairwise(words):
        if a != b:
            out[min(a, b), max(a, b)] = None
    return list(out)


def proximity(
    tokens: Sequence[str],
    query_pairs: Sequence[tuple[str, str]],
    weights: Mapping[str, float],
    window: int | None = None,
) -> float:
    """The weighted share of `query_pairs` whose words occur within `window` positions of
    each other in `tokens` (0..1; 0 without pairs)."""
    window = WINDOW if window is None else window
    total = sum(weights.get(a, 0.0) * weights.get(b, 0.0) for a, b in query_pairs)
    if total <= 0:
        return 0.0
    wanted = {t for pair in query_pairs for t in pair}
    # the query's words among hundreds of tokens, picked out in C (no Python step per token)
    hits = list(map(wanted.__contains__, tokens))
    indexes = itertools.compress(itertools.count(), hits)
    positions = list(zip(indexes, itertools.compress(tokens, hits), strict=True))
    near: set[tuple[str, str]] = set()
    for k, (i, a) in enumerate(positions):
        for j, b in positions[k + 1 :]:
            if j - i > window:
                break
            if a != b:
                near.add((min(a, b), max(a, b)))
    found = sum(weights.get(a, 0.0) * weights.get(b, 0.0) for a, b in query_pairs if (a, b) in near)
    return found / total


TITLE_WEIGHT = 0.075
"""How much a note whose whole title is among the query's words raises its score (by 7.5 %):
the note named for the question (*快捷键* for "如何自定义快捷键", *Formulas* for "remove duplicate
values from a list in a base formula") over a longer note that repeats the question's words.
Chosen on the tuning halves (no set lost from 0.03 to 0.1; example-vault lost r@1 at 0.125)
and checked on the test halves: `python -m benchmarks.bench_retrieval --title`,
docs/search.md."""


def boost(share: float, named: float) -> float:
    """A note's factor from its proximity share and whether the query names its title (0..1)."""
    return 1 + WEIGHT * share + TITLE_WEIGHT * named


def title_named(title_terms: Sequence[str], words: Iterable[str]) -> float:
    """1.0 when every term of the title is one of the query's `words`, else 0.0. Whole titles
    only: a share of the title (or of the query held by the title, a boost measured before)
    lifts the notes that merely share a common word with the question."""
    held = set(title_terms)
    return 1.0 if held and held.issubset(words) else 0.0


def candidates(scores: Sequence[float], limit: int, words: Sequence[str]) -> int:
    """How many of the notes (BM25 order) can end among the first `limit` after `rerank`: the
    first `limit`, and those after them in the pool whose score times the largest boost
    reaches the `limit`-th score (a boost never lowers a score, so no other note can pass it);
    none after them for a query that nothing can boost. Only their sections need reading."""
    if len(scores) <= limit or (not pairs(words) and not TITLE_WEIGHT):
        return min(len(scores), limit)
    floor = scores[limit - 1]
    k = limit
    while k < min(len(scores), POOL) and scores[k] * boost(1.0, 1.0) >= floor:
        k += 1
    return k


def rerank(
    scores: Sequence[float], shares: Sequence[float], titles: Sequence[float] | None = None
) -> list[int]:
    """Positions of the notes (BM25 order, best first) by score · `boost`(share, title named),
    best first; equal scores keep BM25's order."""
    titles = titles if titles is not None else [0.0] * len(scores)
    boosted = [s * boost(p, t) for s, p, t in zip(scores, shares, titles, strict=True)]
    return sorted(range(len(boosted)), key=lambda i: (-boosted[i], i))


def idf_weights(
    terms: Sequence[str], counts: Mapping[str, int], df: Mapping[str, int], documents: float
) -> dict[str, float]:
    """Each query term's weight: its count in the query × its idf (BM25's, over documents); a
    term no document holds weighs nothing."""
    return {
        t: counts.get(t, 1) * math.log(1 + (documents - df[t] + 0.5) / (df[t] + 0.5))
        if df.get(t)
        else 0.0
        for t in terms
    }


def document_frequencies(
    postings: Sequence[tuple[Any, ...]] | Mapping[str, Any], terms: Sequence[str]
) -> dict[str, int]:
    """In how many documents each query term occurs, counted from the rows `term_postings`
    returned (a list of rows or numpy columns; column 0 is the term's index in `terms`)."""
    if isinstance(postings, Mapping):
        import numpy as np

        found = np.bincount(np.asarray(postings["term"], dtype=np.intp), minlength=len(terms))
        return {t: int(c) for t, c in zip(terms, found.tolist(), strict=False)}
    counted = Counter(row[0] for row in postings)
    return {t: counted[i] for i, t in enumerate(terms)}

"""When two memories say the same thing: the duplicate check of `store`, recall and context.

Agents restate what they already stored ("Run the tests with `uv run pytest -q`" a week after
"Tests: uv run pytest -q"), and a recall that returns both wastes the agent's budget. Two texts
are duplicates when they are equal once normalised (`normalise`: Unicode NFKC, case folded,
punctuation and whitespace runs become one space) or when they nearly repeat each other: the
Jaccard similarity of their content words (`words`: the normalised words, a plural `s` and a
handful of function words dropped) reaches `THRESHOLD`. Two guards keep distinct facts apart
however many words they share: a text that negates (`not`, `never`, `don't`…) is never a
duplicate of one that does not, and two texts whose numbers differ (`timeout 30 s` against
`timeout 60 s`, `python 3.11` against `3.12`) are distinct facts, the later one an update.

`THRESHOLD` was chosen on the tune half of benchmarks/questions/duplicates.jsonl and is
reported on its test half by benchmarks/bench_duplicates.py (docs/memory.md, "No duplicates").
Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from vaultmem.core.tokenizer import analyzer

THRESHOLD = 0.65
"""The least word-set similarity at which two texts count as one memory."""

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_APOSTROPHES = re.compile(r"(?<=\w)['’](?=\w)")
_NEGATIONS = frozenset(
    {
        "not", "no", "never", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent",
        "cannot", "cant", "wont", "shouldnt", "mustnt", "without", "avoid", "nor", "neither",
        "nothing", "none", "stop",
    }
)  # fmt: skip
# Function words that restatements add or drop freely ("the tests are run with" / "run tests").
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "is", "are", "was", "were", "be", "been", "to", "of", "for", "in",
        "on", "at", "by", "with", "and", "or", "it", "its", "this", "that", "these", "those",
        "we", "you", "our", "your", "i", "should", "must", "always", "so", "as", "from", "via",
        "using", "use", "uses", "used", "need", "needs", "has", "have", "do", "does", "can",
        "will", "then", "there", "here", "into", "when", "which", "also", "just", "only",
    }
)  # fmt: skip

T = TypeVar("T")


def normalise(text: str) -> str:
    """The text as the exact check compares it: NFKC, case folded, apostrophes inside words
    dropped, every run of punctuation and whitespace one space."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _APOSTROPHES.sub("", folded)
    return " ".join(_WORD_RE.findall(folded))


def words(text: str) -> frozenset[str]:
    """The content words of a text: the search tokenizer's terms (English stems, stop words
    and `_FUNCTION_WORDS` left out, `uv.lock` also as `uv` and `lock`)."""
    terms = analyzer("english").tokenize(text)
    # Numbers (and stamps, versions: `2026-01-01t00`, `3.11`) are compared by the guard, in
    # order; as words they would make any two dated texts look alike.
    return frozenset(t for t in terms if t not in _FUNCTION_WORDS and not t[:1].isdigit())


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' content words, 0.0 to 1.0 (1.0 when equal once
    normalised); 0.0 when the guards tell them apart (negation, numbers)."""
    na, nb = normalise(a), normalise(b)
    if na == nb:
        return 1.0
    if _negates(na) != _negates(nb) or _numbers(na) != _numbers(nb):
        return 0.0
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def is_duplicate(a: str, b: str, threshold: float = THRESHOLD) -> bool:
    """Do `a` and `b` say the same thing (equal once normalised, or similar enough)?"""
    return similarity(a, b) >= threshold


def duplicate_of(text: str, candidates: Iterable[tuple[str, str]]) -> str | None:
    """The name (an observation's stamp) of the first `(name, text)` candidate that `text`
    repeats, or None."""
    for name, other in candidates:
        if is_duplicate(text, other):
            return name
    return None


def collapse(items: Sequence[T], text_of: Callable[[T], str | None]) -> list[T]:
    """`items` in order without those that repeat an earlier kept item's text (an item whose
    text is None or empty is always kept)."""
    kept: list[T] = []
    texts: list[str] = []
    for item in items:
        text = text_of(item)
        if text and any(is_duplicate(text, seen) for seen in texts):
            continue
        kept.append(item)
        if text:
            texts.append(text)
    return kept


def _negates(normalised: str) -> bool:
    return any(word in _NEGATIONS for word in normalised.split())


def _numbers(normalised: str) -> tuple[str, ...]:
    """The words that are numbers, in order (`8080`, the `3` and `11` of `3.11`; not the 2 of
    `e2e`): `worker 1 step 0` and `worker 0 step 1` are two facts."""
    return tuple(w for w in normalised.split() if w.isdigit())

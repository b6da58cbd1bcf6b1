"""German compounds in a query: a distinctive word also asked as part of the vault's compounds.

German writes compounds as one word (*Tastenkürzel*, *Bearbeitungskürzel*), so a question that
says *Kürzel* shares no term with a note that only writes *Bearbeitungskürzel*, and one that
says *einschalten* none with one that writes *schalten*. FTS5's trigram tokenizer matches
inside such words; whole-word terms cannot. So a German query also asks, at `WEIGHT` of a
word's weight:

- the **compounds** the index holds that end in one of its words (the last part of a German
  compound is its head: *kürzel* → *tastenkürzel*, *bearbeitungskürzel*), 3+ letters longer;
- the **tails** of one of its words that the index holds as words of their own (*einschalten*
  → *schalten*), of `TAIL_MIN` letters or more.

Only distinctive words are read this way (`MIN_LETTERS` letters or more, in at most
`MAX_SHARE` of the documents): a common word (*Notizen*, in 216 of the German help's 1,751
sections) already matches plenty, and its compounds pulled one unrelated note up for four
questions. English queries are never read this way: an English word's look-alike endings
(*sever* in *persever*, *index* in *tabindex*) cost the English sets first places when every
query was (docs/search.md, session 20). A query counts as German when it holds ä, ö, ü or ß
or one of `GERMAN_WORDS`, function words no English query uses.

Chosen on the tune halves (weight 0.2–0.5 × distinctive-word rules), checked on the test
halves (docs/search.md, "Round 4").
"""

from __future__ import annotations

import re

WEIGHT = 0.4
"""A compound's or tail's weight in the query, against 1.0 for a word asked."""
MIN_LETTERS = 6
"""Letters a query word needs before its compounds and tails are asked."""
MAX_SHARE = 0.05
"""The share of documents a query word may be in and still be read as a compound's part."""
TAIL_MIN = 5
"""The shortest tail of a word asked as a word (`HEAD_MIN` letters or more cut off before it)."""
HEAD_MIN = 3
"""The shortest head cut off before a tail (*ein* of *einschalten*), and how much longer than
a word a compound ending in it must be."""
MAX_WORDS = 8
"""Most words of one query read as compound parts, the rarest first: each costs a suffix scan of
`terms`, and a hook may ask with a whole prompt of German text."""

_DE = """
    der das den dem des ein eine einen einem einer eines ich du wir ihr mein meine meinen
    meinem meiner meines dein deine wie wo warum welche welcher welchen welches wann nicht
    kein keine mit für fürs auf aus und oder ist sind wird werden kann können muss soll
    gibt zum zur im ins vom beim als auch nur bei nach über unter zwischen
"""
GERMAN_WORDS = frozenset(_DE.split())
"""German function words that are no English word (*die*, *was*, *man*, *will* are)."""
_GERMAN_LETTERS = frozenset("äöüß")
_WORD = re.compile(r"[^\W\d_]+")


def is_german(text: str) -> bool:
    """Whether a query reads as German: an umlaut or ß, or one of `GERMAN_WORDS`."""
    folded = text.casefold()
    if not _GERMAN_LETTERS.isdisjoint(folded):
        return True
    return any(word in GERMAN_WORDS for word in _WORD.findall(folded))


def candidate_words(text: str, terms: tuple[str, ...]) -> tuple[str, ...]:
    """The query's terms that may be read as compound parts: none unless the query is
    German; else its terms of letters alone, `MIN_LETTERS` or more."""
    if not is_german(text):
        return ()
    return tuple(t for t in terms if len(t) >= MIN_LETTERS and t.isalpha())


def distinctive(words: tuple[str, ...], df: dict[str, int], documents: float) -> list[str]:
    """Those of `words` in at most `MAX_SHARE` of the documents (`df`: their document
    frequencies; a word the index lacks is in none), at most `MAX_WORDS` of them: the
    rarest, in the query's order."""
    kept = [w for w in words if df.get(w, 0) <= MAX_SHARE * documents]
    if len(kept) > MAX_WORDS:
        rarest = set(sorted(kept, key=lambda w: df.get(w, 0))[:MAX_WORDS])
        kept = [w for w in kept if w in rarest]
    return kept


def tails(word: str) -> list[str]:
    """The tails of `word` that could be a compound's last word (`TAIL_MIN`+ letters, after
    a head of `HEAD_MIN`+ letters): *einschalten* → *schalten*, *chalten*, ..."""
    return [word[i:] for i in range(HEAD_MIN, len(word) - TAIL_MIN + 1)]

"""The tokenizer: turns note text and query strings into index terms (pure, no I/O).

Notes and queries go through the same analysis, so a term found in a note is found by a query
that spells the word the same way up to Unicode compatibility forms, case and word endings.

- A word is a run of word characters (letters, digits, `_`, combining marks; soft hyphen and
  zero-width joiners are allowed and dropped) with single internal `-` `.` `/` `'` between runs.
  Each word is NFKC-normalised and case-folded (`str.casefold`); normalisation runs per word,
  and spans always point into the original text.
- An identifier is kept whole and also split into its parts at `_ - . /` and at case changes:
  `TestPagerOrder` gives `testpagerorder test pager order`, `vault_root` gives
  `vault_root vault root`. Edge underscores (`__init__`, Markdown `_emphasis_`) are stripped.
- A dot between two digits does not split: `3.11`, `v1.2` and `1.0.0` stay single terms; other
  numbers are ordinary words (`2026`; `2026-01-02` also gives `2026 01 02`).
- Apostrophes: a final `'s` is dropped (`OpenAI's` -> `openai`, `it's` -> `it`), other
  apostrophes are removed (`don't` -> `dont`, a stop word); curly `'` counts as `'`.
- About 120 English stop words count for nothing: they are removed before stemming.
- Stemming is Snowball (PyStemmer's C stemmers), English by default, on words of more than
  three letters without digits: `synced`/`sync`, `listed`/`list`, `queries`/`query` fold
  together. `analyzer(language)` gives the other Snowball languages (`LANGUAGES`; `none` turns
  stemming off). A Russian or Ukrainian word is stemmed as Russian (`script_language`).
  `benchmarks/tokenizer_eval.py` compares no stemming with the default on a real vault; the
  question sets of `benchmarks/bench_retrieval.py` judge the whole ranking.
- Chinese and Japanese (a run of Han and kana) are cut into words by a dictionary segmenter
  (`core/segment.py`: rjieba, SudachiPy; each loaded on the first such run) and give their
  character bigrams; in Chinese those touching a question or function word are left out:
  `如何在多个设备之间同步笔记` gives `多个 个设 设备 备之 之间 间同 同步 步笔 笔记`. Every such
  term's span covers the whole words it touches. Other scripts written without spaces (Thai, Lao,
  Khmer, Myanmar) become overlapping character bigrams per run (a lone character is a
  unigram). A script change ends a run (`DuckDB索引` gives `duckdb duck db 索引`). Hangul is
  spaced and tokenised as words; a word of three or more syllables also gives its bigrams.

Speed: one regex `findall` over the text, then one dict lookup per word in a memo of analysed
words (the analysis runs once per distinct word). On dwarvesf-brain (3.2 MB, 30k distinct
words) CPython does 4-7 MB/s cold and 9-17 MB/s warm on one shared core, so 20 MB of notes take
~2-4 s. Importing the module costs ~2 ms: the word pattern with the mark table (~10 ms to build)
is compiled on the first text holding a combining mark.
`TOKENIZER_VERSION` (kept in `core/models.py`) must be bumped whenever any output changes: the index
records it and rebuilds on mismatch; a change confined to text of `SEGMENTED_CHARS` (the unspaced
scripts, Hangul and Cyrillic) bumps `SEGMENT_VERSION` instead, which leaves the search tables of
a vault without such text as they are. Output also depends on the Unicode database of the running
Python (`\\w`, NFKC).
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from typing import NamedTuple

from vaultmem.core import segment
from vaultmem.core.config import DEFAULT_SEARCH_LANGUAGE, SEARCH_LANGUAGES
from vaultmem.core.models import TOKENIZER_VERSION

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "SEGMENTED_CHARS",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "analyzer",
    "fold",
    "is_stopword",
    "query_terms",
    "tokenize",
    "word_spans",
]


LANGUAGES = SEARCH_LANGUAGES
"""Stemmer languages (`[search] language` in config.toml): PyStemmer's Snowball stemmers;
`none` turns stemming off."""
DEFAULT_LANGUAGE = DEFAULT_SEARCH_LANGUAGE

_STOPWORD_LIST = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    dont doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt shouldnt im ive youre
    youve theyre theyve weve
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_LIST.split())
"""Surface forms (case-folded, apostrophes removed) that never become terms (English; Korean
question words are `segment.KO_STOPWORDS`, Chinese and Japanese ones `segment.STOPWORDS`)."""

Span = tuple[int, int, str]


def _is_mark(c: int) -> bool:
    """Whether code point `c` is in the mark table: a combining mark (Mn, Mc) of the BMP blocks
    scanned, not a variation selector. `\\w` lacks them, yet Indic, Arabic or decomposed Latin
    words need them; supplementary-plane marks (historic scripts) split words, the same way for
    notes and queries."""
    return (
        (0x300 <= c < 0x3400 or 0xA000 <= c < 0xAC00 or 0xF900 <= c < 0x10000)
        and not 0xFE00 <= c <= 0xFE0F
        and unicodedata.category(chr(c)) in ("Mn", "Mc")
    )


def _mark_ranges() -> str:
    """Character-class ranges of every mark of the table (`_is_mark`); scanning the BMP costs
    a few ms, so only the first text holding a mark pays it (`_word_pattern`)."""
    marks = [
        c
        for lo, hi in ((0x300, 0x3400), (0xA000, 0xAC00), (0xF900, 0x10000))
        for c in range(lo, hi)
        if _is_mark(c)
    ]
    parts: list[str] = []
    start = prev = marks[0]
    for c in [*marks[1:], -1]:
        if c != prev + 1:
            parts.append(f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
            start = c
        prev = c
    return "".join(parts)


# Scripts without spaces between words; each group is its own run so a script change splits.
_NOSPACE_GROUPS = (
    # Han (with extensions and compatibility ideographs), kana, half-width kana, 々〆〇.
    "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f",
    "\u0e00-\u0e7f",  # Thai
    "\u0e80-\u0eff",  # Lao
    "\u1780-\u17ff",  # Khmer
    "\u1000-\u109f",  # Myanmar
)
_NOSPACE_CHARS = "".join(_NOSPACE_GROUPS)
SEGMENTED_CHARS = _NOSPACE_CHARS + "\uac00-\ud7a3" + "\u0400-\u04ff"
"""The characters (a regex class's ranges, `-` always between two ends) whose words `segment`,
the bigram rule, the Hangul rule or a script's own stemmer (`script_language`: Russian and
Ukrainian) analyse: text holding none of them has terms that SEGMENT_VERSION changes cannot move."""
# Soft hyphen, ZWNJ, ZWJ: invisible, found inside words (Persian, hyphenated exports).
_IGNORABLE = "\u00ad\u200c\u200d"
# Internal separators, full-width forms included (NFKC maps them to ASCII afterwards).
_SEP = "[-./'\u2019\u2010\u2011\uff0d\uff0e\uff0f\uff07\uff3f]"


def _word_regex(word_char: str) -> re.Pattern[str]:
    """Words: runs of `word_char` with single internal separators."""
    return re.compile(rf"{word_char}+(?:{_SEP}{word_char}+)*")


# The word pattern without the mark table: in a text holding no mark, `\w` and the ignorables
# are all the word characters there are, so it finds exactly the words the full pattern finds.
# Compiling the full one (hundreds of mark ranges, twice) and scanning the BMP for the table was
# most of this module's import: a cold one-note edit of ASCII or
# mark-free notes never pays it.
_PLAIN_WORD = _word_regex(rf"[\w{_IGNORABLE}]")
# In ASCII text the word characters are exactly these: a class of ranges is tested by a table
# lookup where `\w` calls a Unicode predicate per character, so it scans faster (a warm
# search scans each hit's section, a build every note); the same words either way.
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+(?:[-./'][A-Za-z0-9_]+)*")
_full_word: re.Pattern[str] | None = None
# Looking for a mark (`set(text)`) costs more than the match: a process
# looks through this many characters of non-ASCII text, then compiles the full pattern once
# and stops looking. A cold one-note edit stays well within it; a build of a
# non-Latin vault (Cyrillic has no marks either) pays the compile, not a look per text.
_MARK_LOOK_BUDGET = 1 << 16
_mark_look_left = _MARK_LOOK_BUDGET


@functools.cache
def _full_word_pattern() -> re.Pattern[str]:
    """The word pattern with the mark table: what a text holding a mark needs."""
    return _word_regex(rf"[\w{_mark_ranges()}{_IGNORABLE}]")


def _holds_mark(text: str) -> bool:
    """Whether `text` holds a character of the mark table (one look per distinct character)."""
    return not text.isascii() and any(c >= "\u0300" and _is_mark(ord(c)) for c in set(text))


def _word_pattern(text: str) -> re.Pattern[str]:
    """The pattern that finds the words of `text`: the ASCII one for ASCII text, the plain
    one within the look budget for text holding no mark (the same words either way); else
    the full one, which from then on serves every non-ASCII text."""
    global _full_word, _mark_look_left
    if text.isascii():
        return _ASCII_WORD
    if _full_word is not None:
        return _full_word
    if len(text) <= _mark_look_left:
        _mark_look_left -= len(text)
        if not _holds_mark(text):
            return _PLAIN_WORD
    _full_word = _full_word_pattern()
    return _full_word


@functools.cache
def _has_nospace() -> re.Pattern[str]:
    """A character of a script without spaces. Compiled on first need, like `_script_run`:
    the compiler fills its table one code point at a time (~28,000 for the Han ranges), ~3 ms
    each, and an ASCII word never needs them."""
    return re.compile(f"[{_NOSPACE_CHARS}]")


@functools.cache
def _han_kana() -> re.Pattern[str]:
    """A character of the Han and kana group (what `segment` cuts into words)."""
    return re.compile(f"[{_NOSPACE_GROUPS[0]}]")


@functools.cache
def _hangul() -> re.Pattern[str]:
    """A Hangul syllable (compiled on first need: ~0.6 ms, which an ASCII word never needs)."""
    return re.compile("[\uac00-\ud7a3]")


@functools.cache
def _script_run() -> re.Pattern[str]:
    """A run of one no-space script group, or of anything else."""
    return re.compile("|".join(f"[{g}]+" for g in _NOSPACE_GROUPS) + f"|[^{_NOSPACE_CHARS}]+")


# Parts of an identifier: runs between `_ - . /`, except that a dot between digits joins.
_PIECE = re.compile(r"(?:[^-_/.\u2010\u2011]|(?<=\d)\.(?=\d))+")
_DROP = str.maketrans("", "", _IGNORABLE + "'\u2019\u02bc")
_PIECE_SEPS = "_-./\u2010\u2011"
_EDGES = _PIECE_SEPS + "'\u2019"  # trimmed off a word's ends before it is split


@functools.cache
def _snowball(language: str) -> Callable[[str], str]:
    """The Snowball stemmer of `language` (PyStemmer, C); imported on first use."""
    # PyStemmer ships no type hints.
    import Stemmer  # type: ignore[import-not-found]

    try:
        return Stemmer.Stemmer(language).stemWord  # type: ignore[no-any-return]
    except KeyError:
        raise ValueError(
            f"unknown stemmer language {language!r}; have {', '.join(LANGUAGES)}"
        ) from None


_RUSSIAN_STEMMED = frozenset("ёіїєґ")
"""Beside а-я, the first letters of the words the Russian stemmer takes: Russian's ё and
Ukrainian's і ї є ґ (Ukrainian's endings are largely Russian's: its question set gained with
them stemmed, docs/search.md round 4)."""


def script_language(word: str) -> str | None:
    """The Snowball language a case-folded word's script says it is written in, whatever
    `[search] language` is: `russian` for a word starting with a letter of the Russian or
    Ukrainian alphabet (`а`-`я`, `_RUSSIAN_STEMMED`); None for any other word (its stemmer is
    the vault's). Greek, measured the same way, lost on its test half (docs/search.md, round
    4), so Greek words keep the vault's stemmer, which leaves them whole."""
    first = word[0]
    if "а" <= first <= "я" or first in _RUSSIAN_STEMMED:
        return "russian"
    return None


def _stemmer(language: str) -> Callable[[str], str]:
    """A stem function for the case-folded words of `language` (`none`: no stemming).

    Words holding a digit are never stemmed (`v1.2`, `abc1`, `2026s`): they are names. A
    Russian or Ukrainian word is stemmed as Russian whatever `language` is (`script_language`):
    the script says which language it is, and the English stemmer leaves Cyrillic as it is, so
    *заметки* would never meet *заметка*.
    """
    if language == "none":
        return lambda word: word
    snowball = _snowball(language)

    def stem(word: str) -> str:
        if len(word) <= 3 or not word.isalpha():
            return word
        if not word.isascii() and (own := script_language(word)) is not None:
            # a stemmer may leave nothing of a word (Greek's did, of `όταν`): it stays a term
            return _snowball(own)(word) or word
        return snowball(word)

    return stem


def _normalise(word: str) -> str:
    """NFKC, case-fold, drop a final `'s` and any other apostrophe or invisible joiner."""
    word = unicodedata.normalize("NFKC", word).casefold()
    if len(word) > 2 and word[-1] == "s" and word[-2] in "'\u2019\u02bc":
        word = word[:-2]
    return word.translate(_DROP)


def is_stopword(word: str) -> bool:
    """Whether `word` (any case, any compatibility form) is on the stop list."""
    return _normalise(word) in STOPWORDS


def _camel_split(piece: str) -> list[tuple[int, int]]:
    """Offsets of the case-change parts of `piece`: `HTTPServer` -> HTTP, Server."""
    if piece.islower() or piece.isupper() or (piece[:1].isupper() and piece[1:].islower()):
        return [(0, len(piece))]
    bounds = [0]
    last = len(piece) - 1
    for i in range(1, len(piece)):
        c, p = piece[i], piece[i - 1]
        if c.isupper() and (
            p.islower() or p.isdigit() or (p.isupper() and i < last and piece[i + 1].islower())
        ):
            bounds.append(i)
    bounds.append(len(piece))
    parts = list(itertools.pairwise(bounds))
    if len(parts) == 2 and all(_is_capitalised(piece[s:e]) for s, e in parts):
        # Two capitalised words run together are a name (GitHub, JavaScript, YouTube), not an
        # identifier: their parts would be noise (`git` in every note with a GitHub link).
        return [(0, len(piece))]
    return parts


def _is_capitalised(word: str) -> bool:
    return len(word) > 1 and word[0].isupper() and word[1:].islower()


_SIMPLE = re.compile("[A-Za-z]?[a-z0-9]*")
_GROUP = re.Match.group  # for `map`: a word's text, without a Python call per word
# Distinct words kept before the memo starts over: ~40 MB at worst, ~300k words in 20 MB notes.
_MEMO_LIMIT = 1 << 18


class WordScan(NamedTuple):
    """A text's words as the tokenizer's regex found them, and each word's terms (`scan`)."""

    words: list[re.Match[str]]
    terms: list[tuple[str, ...]]

    def tokens(self) -> list[str]:
        """`tokenize(text)`: the terms in order."""
        return list(itertools.chain.from_iterable(self.terms))


class _Memo(dict[str, tuple[str, ...]]):
    """Word -> terms. A dict with `__missing__` rather than `lru_cache`: a hit through
    `map(memo.__getitem__, ...)` stays in C, which is most of the tokenizer's speed."""

    def __init__(self, compute: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, raw: str) -> tuple[str, ...]:
        terms = self[raw] = self._compute(raw)
        return terms


class _Analyzer:
    """The analysis pipeline with a pluggable stemmer; `benchmarks/tokenizer_eval.py` builds
    variants to measure stemming, the module-level functions use the one default instance."""

    def __init__(self, stem: Callable[[str], str], cjk: str | None = None) -> None:
        self._stem = stem
        self._cjk = cjk  # the language of a run of Han alone: `segment.note_cjk`
        self.fold: Callable[[str], str] = functools.lru_cache(maxsize=1 << 16)(self._fold)
        self._memo = _Memo(self._word_terms)
        self._span_memo: dict[str, tuple[Span, ...]] = {}
        self._mark_memo: dict[str, tuple[tuple[int, int, frozenset[str]], ...]] = {}
        # an identifier's part -> its term, or () for none; parts recur across identifiers
        self._part_terms: dict[str, tuple[str, ...]] = {}
        # a piece of an ASCII identifier -> its terms (`_ascii_terms`): one of several pieces,
        # its own term and its case-change parts'; a lone piece, its parts' alone
        self._pieces = _Memo(self._piece_terms)
        self._lone_pieces = _Memo(self._camel_terms)

    def _fold(self, word: str) -> str:
        return self._stem(_normalise(word))

    def _word_terms(self, raw: str) -> tuple[str, ...]:
        if _SIMPLE.fullmatch(raw):  # most words: ASCII, one case change at most, nothing to split
            word = raw.lower()
            return () if word in STOPWORDS else (self._stem(word),)
        if raw.isascii():
            return self._ascii_terms(raw)
        return tuple(term for _, _, term in self.word(raw, spans=False))

    def _ascii_terms(self, raw: str) -> tuple[str, ...]:
        """`word(raw, spans=False)`'s terms for an ASCII identifier, URL or path, in the same
        order, without their offsets: the whole word's term, then each piece's terms from a
        memo (`github`, `com`, `obsidian` recur across thousands of distinct URLs). Two thirds
        of obsidian-hub's distinct words take this path; through `_latin`'s spans they were
        ~40% of its tokenizer's CPU (benchmarks/HISTORY.md)."""
        word = raw.strip(_EDGES)
        if not word:
            return ()
        pieces = _PIECE.findall(word)
        memo = self._pieces if len(pieces) > 1 else self._lone_pieces
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        return self._part(word) + tuple(
            itertools.chain.from_iterable(map(memo.__getitem__, pieces))
        )

    def _piece_terms(self, piece: str) -> tuple[str, ...]:
        return self._part(piece) + self._camel_terms(piece)

    def _camel_terms(self, piece: str) -> tuple[str, ...]:
        camel = _camel_split(piece)
        if len(camel) == 1:
            return ()
        return tuple(itertools.chain.from_iterable(self._part(piece[s:e]) for s, e in camel))

    def _terms(self, text: str) -> Iterator[str]:
        """The terms of `text`, lazily: findall, then one C-level dict lookup per word, so no
        Python code runs for a word already analysed."""
        memo = self._memo
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        return itertools.chain.from_iterable(
            map(memo.__getitem__, _word_pattern(text).findall(text))
        )

    def tokenize(self, text: str) -> list[str]:
        return list(self._terms(text))

    def counts(self, text: str) -> Counter[str]:
        """How often each term of `text` occurs: `Counter(tokenize(text))` without the list."""
        return Counter(self._terms(text))

    def spans(self, text: str) -> list[Span]:
        out: list[Span] = []
        memo = self._span_memo
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        for m in _word_pattern(text).finditer(text):
            base, raw = m.start(), m.group()
            spans = memo.get(raw)
            if spans is None:  # snippets tokenize hit sections on every query: memoize words
                spans = memo[raw] = tuple(self.word(raw))
            out += [(base + s, base + e, t) for s, e, t in spans]
        return out

    def scan(self, text: str) -> WordScan:
        """The words of `text` with their terms: one regex scan and one memo lookup per word
        that `WordScan.tokens` and `matching_spans` share (a search reads each hit's section
        for proximity's terms and for its snippet's marks)."""
        memo = self._memo
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        words = list(_word_pattern(text).finditer(text))
        return WordScan(words, list(map(memo.__getitem__, map(_GROUP, words))))

    def matching_spans(
        self,
        text: str,
        terms: Container[str],
        scan: WordScan | None = None,
        words: Sequence[frozenset[str]] = (),
    ) -> list[tuple[int, int]]:
        """(start, end) of the words of `text` whose terms are in `terms`: `spans` filtered,
        without building a span for every other word (snippets mark a few words of many).
        `scan` is `scan(text)` when the caller has it already. `words`: the query's Han, kana
        and Hangul words (`cjk_words`); with them a word of such text is marked as
        `_marked_words` decides."""
        if scan is None:
            scan = self.scan(text)
        if isinstance(terms, set | frozenset):
            wanted: set[str] | frozenset[str] = terms
        else:  # `isdisjoint` below needs a set: the text's terms that `terms` holds
            wanted = {t for word in scan.terms for t in word if t in terms}
        # Which words hold a wanted term is decided in C (a word's terms are the terms of its
        # spans), so the Python loop runs for those few words only, not for every word.
        misses = map(wanted.isdisjoint, scan.terms)
        out: list[tuple[int, int]] = []
        memo = self._span_memo
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        for m in itertools.compress(scan.words, map(operator.not_, misses)):
            raw = m.group()
            if words and not raw.isascii() and _marks_by_word(raw):
                base = m.start()
                out += [(base + s, base + e) for s, e in self._marked_words(raw, wanted, words)]
                continue
            spans = memo.get(raw)
            if spans is None:
                spans = memo[raw] = tuple(self.word(raw))
            base = m.start()
            out += [(base + s, base + e) for s, e, t in spans if t in wanted]
        return out

    def cjk_words(self, text: str) -> list[frozenset[str]]:
        """The terms of each Han, kana or Hangul word of `text` that is no stop word (a Han or
        kana run's words: `segment.word_terms`): what a query asks whole, for
        `matching_spans`."""
        if text.isascii():
            return []
        out: list[frozenset[str]] = []
        for m in _word_pattern(text).finditer(text):
            raw = m.group()
            if not raw.isascii() and _marks_by_word(raw):
                # a Latin word beside them (`Obsidian에서`'s parts) is marked by its terms
                out += [
                    held
                    for _, _, held in self._word_marks(raw)
                    if not all(t.isascii() for t in held)
                ]
        return out

    def _marked_words(
        self, raw: str, wanted: Container[str], words: Sequence[frozenset[str]]
    ) -> list[tuple[int, int]]:
        """(start, end) of the words of one regex word `raw` holding Han, kana or Hangul to
        mark (`_word_marks`): one that holds a query word whole, shares two terms with one
        (`동기화는` with `동기화하는`: an ending of its own), or whose every term is asked.
        Bigrams alone mark too much: `ート` of the query's `ノート` is in `リモート` and
        `サポート`, `에서` of `기기에서` in `오프라인에서도`."""
        if len(self._mark_memo) > _MEMO_LIMIT:
            self._mark_memo.clear()
        marks = self._mark_memo.get(raw)
        if marks is None:
            marks = self._mark_memo[raw] = tuple(self._word_marks(raw))
        out: list[tuple[int, int]] = []
        for start, end, held in marks:
            if all(t in wanted for t in held) or any(
                q <= held or len(q & held) >= 2 for q in words
            ):
                out.append((start, end))
        return out

    def _word_marks(self, raw: str) -> list[tuple[int, int, frozenset[str]]]:
        """The words of `raw` with their terms: a Han/kana run's as `segment.word_terms` cuts
        them, any other part's as `word` spans them (a Hangul word's term and bigrams share
        the word's extent; a Thai bigram is a word of its own)."""
        han_kana, has_nospace = _han_kana(), _has_nospace()
        if not han_kana.search(raw):
            return _by_extent(self.word(raw))
        out: list[tuple[int, int, frozenset[str]]] = []
        for m in _script_run().finditer(raw):
            run, base = m.group(), m.start()
            if han_kana.match(run):
                out += [(base + s, base + e, t) for s, e, t in segment.word_terms(run, self._cjk)]
            else:
                spans = _bigrams(run) if has_nospace.match(run) else self._latin(run)
                out += [(base + s, base + e, t) for s, e, t in _by_extent(spans)]
        return out

    def word(self, raw: str, spans: bool = True) -> list[Span]:
        """Terms of one regex word with offsets relative to it; with `spans` False, the
        offsets of a Han or kana run are the run's (`segment.terms`: no segmenter where the
        words cannot change the terms), for callers that keep the terms alone."""
        if raw.isascii():
            return self._latin(raw)
        if _has_nospace().search(raw) is None:
            latin = self._latin(raw)
            if _hangul().search(raw) is None:
                return latin
            return latin + [(s, e, b) for s, e, t in latin for b in segment.hangul_bigrams(t)]
        out: list[Span] = []
        has_nospace, han_kana = _has_nospace(), _han_kana()
        for m in _script_run().finditer(raw):
            run, base = m.group(), m.start()
            if han_kana.match(run):
                if spans:
                    out += [(base + s, base + e, t) for s, e, t in segment.spans(run, self._cjk)]
                else:
                    out += [(base, base + len(run), t) for t in segment.terms(run, self._cjk)]
            elif has_nospace.match(run):
                out += [(base + s, base + e, t) for s, e, t in _bigrams(run)]
            else:
                out += [(base + s, base + e, t) for s, e, t in self._latin(run)]
        return out

    def _latin(self, raw: str) -> list[Span]:
        # A script split can leave separators at the edges (`索引-v2`); trim them and `_`.
        left = len(raw) - len(raw.lstrip(_EDGES))
        word = raw.strip(_EDGES)
        if not word:
            return []
        whole = (left, left + len(word))
        if not word.isascii() and not unicodedata.is_normalized("NFKC", word):
            norm = unicodedata.normalize("NFKC", word)
            if _word_pattern(norm).fullmatch(norm) is None or _has_nospace().search(norm):
                # NFKC made punctuation or spaces (`⑴` -> `(1)`): analyse the normalised text,
                # every term pointing at the whole original word.
                return [(*whole, t) for t in self.tokenize(norm)]
            if not _maps_one_to_one(word):
                return [(*whole, t) for _, _, t in self._latin(norm)]
        out: list[Span] = []
        self._emit(out, word, left)
        pieces = [(m.start(), m.group()) for m in _PIECE.finditer(word)]
        for start, piece in pieces:
            if len(pieces) > 1:
                self._emit(out, piece, left + start)
            camel = _camel_split(piece)
            if len(camel) > 1:
                for s, e in camel:
                    self._emit(out, piece[s:e], left + start + s)
        return out

    def _emit(self, out: list[Span], word: str, start: int) -> None:
        term = self._part(word)
        if term:
            out.append((start, start + len(word), term[0]))

    def _part(self, word: str) -> tuple[str, ...]:
        """The term of one part of a word (the whole word, a piece, a case-change part), or ()."""
        terms = self._part_terms
        term = terms.get(word)
        if term is None:
            if len(terms) > _MEMO_LIMIT:
                terms.clear()
            norm = _normalise(word)
            # A word of marks alone (a stray accent, `ﹰ` after NFKC) carries no letter: none.
            keep = (
                norm not in STOPWORDS
                and any(c.isalnum() for c in norm)
                and (norm.isascii() or norm not in segment.KO_STOPWORDS)
            )
            term = terms[word] = (self._stem(norm),) if keep else ()
        return term


def _maps_one_to_one(word: str) -> bool:
    """Whether NFKC maps `word` char by char, so offsets in the normal form are original ones."""
    return all(len(unicodedata.normalize("NFKC", c)) == 1 for c in word) and len(
        unicodedata.normalize("NFKC", word)
    ) == len(word)


def _marks_by_word(raw: str) -> bool:
    """Whether a snippet marks `raw` word by word (`_Analyzer._marked_words`): it holds Han,
    kana or Hangul, whose terms include bigrams that other words share."""
    return _han_kana().search(raw) is not None or _hangul().search(raw) is not None


def _by_extent(spans: Iterable[Span]) -> list[tuple[int, int, frozenset[str]]]:
    """Spans grouped by their (start, end): each extent's terms together."""
    grouped: dict[tuple[int, int], set[str]] = {}
    for start, end, term in spans:
        grouped.setdefault((start, end), set()).add(term)
    return [(s, e, frozenset(terms)) for (s, e), terms in grouped.items()]


def _bigrams(run: str) -> list[Span]:
    """Overlapping character bigrams of a no-space script run (a lone character: a unigram)."""
    norm = unicodedata.normalize("NFKC", run).casefold()
    if len(norm) == 1:
        return [(0, len(run), norm)]
    if len(norm) != len(run):  # half-width kana with voicing marks: no per-char offsets
        return [(0, len(run), norm[i : i + 2]) for i in range(len(norm) - 1)]
    return [(i, i + 2, norm[i : i + 2]) for i in range(len(norm) - 1)]


def analyzer(language: str = DEFAULT_LANGUAGE, cjk: str | None = None) -> _Analyzer:
    """The analysis pipeline stemming with `language` (one instance per language); `cjk`
    (`zh`, `ja`) segments runs of Han alone as that language (None: Chinese), see
    `segment.note_cjk`."""
    return _analyzer(language, cjk)


@functools.cache
def _analyzer(language: str, cjk: str | None) -> _Analyzer:
    """One instance, and so one memo of analysed words, per (language, cjk), however the
    caller spelled them: cached on `analyzer` itself, `analyzer()`, `analyzer("english")`
    and `analyzer("english", None)` were three instances, and a build's worker analysed
    every word of a boilerplate line again for its cut."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown stemmer language {language!r}; have {', '.join(LANGUAGES)}")
    return _Analyzer(_stemmer(language), cjk)


_DEFAULT = analyzer()


def fold(word: str) -> str:
    """Normalise and stem one word (NFKC, case-fold, apostrophes, plural ending); cached.

    It does not split identifiers or check stop words: `fold("Queries")` is `query`.
    """
    return _DEFAULT.fold(word)


def tokenize(text: str) -> list[str]:
    """The terms of `text` in order, duplicates kept (callers count term frequency)."""
    return _DEFAULT.tokenize(text)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query string, in first-seen order."""
    return list(dict.fromkeys(_DEFAULT.tokenize(text)))


def word_spans(text: str) -> list[Span]:
    """`(start, end, term)` for every term `tokenize(text)` yields, in the same order.

    Offsets index the original `text`. An identifier yields its whole span and then one
    nested span per part, so a snippet builder marks the spans whose term is a query term and
    merges overlaps. A word that NFKC reshapes (`ﬁle`) keeps the span of the original word.
    """
    return _DEFAULT.spans(text)

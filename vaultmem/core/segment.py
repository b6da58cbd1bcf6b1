"""Word segmentation of Chinese and Japanese runs for the tokenizer (pure, no I/O).

A run of Han and kana (the tokenizer's first no-space script group) is cut into words by a
dictionary segmenter: rjieba (jieba's dictionary, inside its wheel) for Chinese, SudachiPy with
`sudachidict_small` in mode C for Japanese (`sudachidict_core`, the `cjk-full` extra, is used
when installed). A run holding kana is Japanese; a run of Han alone is the note's language
when known (`note_cjk`), else Chinese. Each segmenter is imported on the first run that needs
it: an English note or query never loads one. A process's first `SLICE_BUDGET` characters of
Chinese are cut by rjieba's engine from the slices of jieba's dictionary they need
(`jieba_slice`: the same words, without building the whole dictionary at import).

The terms of a run are its **character bigrams** (what matches across segmentations: a query
and a note can be cut differently, and a typo such as 属姓 still shares a bigram with 属性).
In Chinese, a word on `ZH_STOPWORDS` (怎么, 如何, 吗, 的 ...: how people ask, not what answers)
gives no term and takes the bigrams that overlap it along: `怎么使用属性` gives 使用 用属 属性,
not 怎么 么使; a lone character between such words is a unigram. Japanese keeps every bigram:
leaving out its function words (`JA_STOPWORDS`) lost on the held-out half of the Japanese
questions (docs/search.md). Every term's span covers the whole words it touches, in both
languages, so a snippet marks whole words (`**设备**`, not `**在多****个设**`).

Korean (Hangul) is spaced: its words stay words (`tokenizer`), and a word of three or more
syllables also gives its syllable bigrams, so `노트를` (note + object particle) meets `노트`.

A change to what this module gives (a stop word, a segmenter's mode) bumps `SEGMENT_VERSION`
(`core/models.py`), not `TOKENIZER_VERSION`: the next reconcile then cuts again only the notes
holding such text (`index.upgrade.segment_only`), and none in a vault without any.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

Span = tuple[int, int, str]

_ZH = """
    怎么 怎样 怎么办 如何 为什么 什么 哪些 哪个 哪里 哪 吗 呢 吧 啊 的 了 地 得
    在 和 与 是 我 我的 你 能 能不能 可以 可不可以 需要 要 有没有 一下 这个 那个 把 给 方法 办法
    里 上 下 中 内 外
"""
ZH_STOPWORDS = frozenset(_ZH.split())
"""Chinese question and function words (words rjieba isolates in how people ask), and the
locative particles rjieba leaves as words of their own (`手机|上`, `文件夹|里`): "on the phone"
and "in the folder" name the phone and the folder, and a bigram across the particle (`机上`,
`夹里`) matches text about something else."""

_JA = """
    の使い方 使い方 方法 やり方 仕方 には するには する した して ですか ますか でしょうか 何 なに
    どう どうやって どこ どれ とは について たい できる できますか
    は が を に で と も の か や な ね よ
"""
JA_STOPWORDS = frozenset(_JA.split())
"""Japanese question words, particles and endings (Sudachi cuts `使い方` as 使い|方 and
`するには` as する|に|は: a sequence of up to three words on the list counts as one). Measured,
not applied: see the module docstring."""

_KO = "방법 어떻게 무엇 뭐예요 하는 하기 하려면 있나요 있어요 수"
KO_STOPWORDS = frozenset(_KO.split())
"""Korean question words and endings, as whole spaced words."""

STOPWORDS = ZH_STOPWORDS | JA_STOPWORDS
_JOIN_STOP = 3  # the longest run of words checked as one stop word

LANGS = ("zh", "ja")


_KANA = re.compile("[\u3040-\u30ff\uff66-\uff9f]")


def has_kana(text: str) -> bool:
    """Whether `text` holds Hiragana or Katakana (half-width included): Japanese."""
    return not text.isascii() and _KANA.search(text) is not None


def note_cjk(lang: object, text: str) -> str | None:
    """The segmenter for a note's Han-only runs: its `lang` property when it names Chinese
    or Japanese (`zh`, `zh-TW`, `ja`, `japanese` ...), else `ja` when the note holds kana,
    else None (Chinese, the default)."""
    if isinstance(lang, str) and lang.strip():
        code = lang.strip().lower()
        if code.startswith(("ja", "jp")):
            return "ja"
        if code.startswith(("zh", "chinese", "cn")):
            return "zh"
    return "ja" if has_kana(text) else None


@functools.cache
def _jieba() -> Callable[[str], list[tuple[str, int, int]]]:
    import rjieba

    tokenize: Callable[[str], list[tuple[str, int, int]]] = rjieba.tokenize
    return tokenize


SLICE_BUDGET = 1 << 14
"""Characters of Chinese a process cuts from the dictionary's slices (`jieba_slice`: ~4-5 µs a
character, nothing to load) before it loads rjieba's whole dictionary (~0.2-0.4 s, then ~1 µs
a character): a search's query and snippets (~1,300 characters), or a one-note edit, stay
within it; a build passes it early and pays ~0.05-0.1 s for it."""
_slice_left = SLICE_BUDGET


def _chinese_words(run: str) -> list[tuple[str, int, int]]:
    """rjieba's words of a Han run: from the slices while the budget lasts and rjieba's
    dictionary is not loaded anyway; the same words either way."""
    global _slice_left
    if len(run) <= _slice_left and "rjieba" not in sys.modules:
        from vaultmem.core import jieba_slice

        try:
            words = jieba_slice.tokenize(run)
        except (OSError, ValueError, ImportError):  # a damaged install: the whole dictionary
            _slice_left = 0
        else:
            _slice_left -= len(run)
            return words
    return _jieba()(run)


@functools.cache
def _sudachi() -> Any:
    from sudachipy import Dictionary, SplitMode

    try:
        dictionary = Dictionary(dict="core")
    except Exception:  # the extra is not installed: the small dictionary of the base install
        dictionary = Dictionary(dict="small")
    return dictionary.tokenizer(mode=SplitMode.C)


# Sudachi refuses inputs above ~49 KB of UTF-8: longer runs are cut at this many characters
# (a "word" that long is a pasted blob, not prose).
_SUDACHI_CHUNK = 4096


def words(run: str, lang: str) -> list[tuple[int, int]]:
    """(start, end) of the words of a Han/kana `run` (already NFKC and case-folded)."""
    if lang == "ja":
        tokenizer = _sudachi()
        out: list[tuple[int, int]] = []
        for base in range(0, len(run), _SUDACHI_CHUNK):
            chunk = run[base : base + _SUDACHI_CHUNK]
            out += [(base + m.begin(), base + m.end()) for m in tokenizer.tokenize(chunk)]
        return out
    return [(s, e) for _, s, e in _chinese_words(run)]


def _stopped(norm: str, bounds: list[tuple[int, int]]) -> list[bool]:
    """Which words are stop words, alone or as a sequence of up to `_JOIN_STOP` words."""
    stop = [norm[s:e] in STOPWORDS for s, e in bounds]
    for i in range(len(bounds)):
        for n in range(2, _JOIN_STOP + 1):
            j = i + n
            if j <= len(bounds) and norm[bounds[i][0] : bounds[j - 1][1]] in STOPWORDS:
                stop[i:j] = [True] * n
    return stop


def spans(run: str, lang: str | None) -> list[Span]:
    """The terms of a Han/kana run with spans into it (the module docstring's rule); `lang`
    is the note's language for a run of Han alone (None: Chinese)."""
    norm = unicodedata.normalize("NFKC", run).casefold()
    if len(norm) != len(run):  # half-width kana with voicing marks: no per-char offsets
        return [(0, len(run), norm[i : i + 2]) for i in range(len(norm) - 1)] or [
            (0, len(run), norm)
        ]
    japanese = has_kana(norm) or lang == "ja"
    bounds = [(s, e) for s, e in words(norm, "ja" if japanese else "zh") if e > s]
    # Japanese: every bigram counts (leaving out the function words lost on the test half,
    # docs/search.md); the words only widen the spans
    stop = [False] * len(bounds) if japanese else _stopped(norm, bounds)
    word_of = [0] * len(norm)  # each character's word
    for w, (s, e) in enumerate(bounds):
        word_of[s:e] = [w] * (e - s)
    out: list[Span] = []
    for w, (s, e) in enumerate(bounds):
        if stop[w]:
            continue
        for i in range(s, e):
            if i + 1 < len(norm) and not stop[word_of[i + 1]]:
                out.append((s, bounds[word_of[i + 1]][1], norm[i : i + 2]))
        lone = e - s == 1 and (w == 0 or stop[w - 1]) and (w + 1 == len(bounds) or stop[w + 1])
        if lone:
            out.append((s, e, norm[s]))
    return out


def word_terms(run: str, lang: str | None) -> list[tuple[int, int, frozenset[str]]]:
    """Each word of a Han/kana `run` that is no stop word, as (start, end, the terms inside
    it: its character bigrams, a one-character word itself). What a snippet marks by
    (`Analyzer.matching_spans` with the query's words): a word holding a whole word of the
    query, not one that shares a bigram with it (`リモート` holds `ート` of `ノート`). Stop
    words are left out in Japanese too, where their bigrams still count for ranking: `する`
    or `方法` marked in every hit tells a reader nothing."""
    norm = unicodedata.normalize("NFKC", run).casefold()
    if len(norm) != len(run):  # no per-character offsets (`spans`): the run is one word
        return [(0, len(run), frozenset(t for _, _, t in spans(run, lang)))]
    bounds = words(norm, "ja" if has_kana(norm) or lang == "ja" else "zh")
    out: list[tuple[int, int, frozenset[str]]] = []
    for (s, e), stopped in zip(bounds, _stopped(norm, bounds), strict=True):
        if not stopped and e > s:
            word = norm[s:e]
            held = frozenset(word[i : i + 2] for i in range(len(word) - 1))
            out.append((s, e, held or frozenset((word,))))
    return out


_STOP_CHARS = frozenset("".join(STOPWORDS))
"""Every character of a stop word: a run holding none of them has no stop word to cut."""


@functools.cache
def _stop_word() -> re.Pattern[str]:
    """Any stop word, as a substring (compiled on the first run holding a stop word's
    character)."""
    return re.compile("|".join(map(re.escape, sorted(STOPWORDS, key=len, reverse=True))))


def terms(run: str, lang: str | None) -> list[str]:
    """The terms of `spans(run, lang)` alone, without the segmenter when the words cannot
    change them: a Japanese run keeps every bigram (its words only widen the spans), and a
    Chinese run that holds no stop word has none to take out (a word the segmenter could cut
    as one, or a sequence of such words, is a substring of the run), so every bigram counts.
    What the index and a query's terms need; a snippet's marks take `spans`. So an English
    note that names 東京, or quotes a `个` in code, loads no dictionary (~0.2 s), and a
    Japanese vault's build cuts no words."""
    norm = unicodedata.normalize("NFKC", run).casefold()
    if (
        len(norm) != len(run)
        or lang == "ja"
        or has_kana(norm)
        or _STOP_CHARS.isdisjoint(norm)
        or _stop_word().search(norm) is None
    ):
        return [norm[i : i + 2] for i in range(len(norm) - 1)] or [norm]
    return [term for _, _, term in spans(run, lang)]


def hangul_bigrams(word: str) -> list[str]:
    """The syllable bigrams of a Hangul word of three or more syllables (else none)."""
    if len(word) < 3 or not all("\uac00" <= c <= "\ud7a3" for c in word):
        return []
    return [word[i : i + 2] for i in range(len(word) - 1)]

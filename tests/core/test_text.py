"""The tokenizer: one test per rule, span offsets, and properties over arbitrary text."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultmem.core.tokenizer import (
    STOPWORDS,
    TOKENIZER_VERSION,
    analyzer,
    fold,
    is_stopword,
    query_terms,
    tokenize,
    word_spans,
)


def test_version_is_a_positive_int() -> None:
    assert isinstance(TOKENIZER_VERSION, int) and TOKENIZER_VERSION >= 1


# --- normalisation -------------------------------------------------------------------------


def test_nfkc_full_width_letters() -> None:
    assert tokenize("ＤｕｃｋＤＢ") == tokenize("DuckDB") == ["duckdb", "duck", "db"]


def test_nfkc_ligature() -> None:
    assert tokenize("ﬁle") == ["file"]


def test_nfkc_composes_combining_accents() -> None:
    assert tokenize("cafe\u0301") == tokenize("café") == ["café"]


def test_casefold_sharp_s() -> None:
    assert tokenize("Groß") == tokenize("GROSS") == ["gross"]


def test_marks_stay_inside_words() -> None:
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


# --- identifiers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("TestPagerOrder", ["testpagerord", "test", "pager", "order"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("getHTTPResponse", ["gethttprespons", "get", "http", "respons"]),
        ("vault_root", ["vault_root", "vault", "root"]),
        ("snake-case", ["snake-case", "snake", "case"]),
        ("mistune.plugins", ["mistune.plugins", "mistun", "plugin"]),
        ("a/b", ["a/b", "b"]),
        ("src/vaultmem/text.py", ["src/vaultmem/text.py", "src", "vaultmem", "text", "py"]),
        ("vault_root.TestPager", ["vault_root.testpager", "vault", "root", "testpag"]),
        # Two capitalised words run together are a name, kept whole: no `git` in GitHub.
        ("GitHub", ["github"]),
        ("JavaScript", ["javascript"]),
        ("DuckDB", ["duckdb", "duck", "db"]),
    ],
)
def test_identifiers_kept_whole_and_split(text: str, terms: list[str]) -> None:
    got = tokenize(text)
    assert got[0] == terms[0]
    assert set(terms) <= set(got)


def test_identifier_splits_nest_camel_case_inside_separators() -> None:
    assert tokenize("my_TestPagerOrder") == [
        "my_testpagerorder",
        "testpagerord",
        "test",
        "pager",
        "order",
    ]


def test_plain_words_are_not_split() -> None:
    assert tokenize("Python NASA python") == ["python", "nasa", "python"]


def test_edge_underscores_are_markup() -> None:
    assert tokenize("__init__ _emphasis_") == ["init", "emphasi"]


def test_trailing_punctuation_is_not_part_of_a_word() -> None:
    assert tokenize("the end. (vault_root), 'quoted'") == [
        "end",
        "vault_root",
        "vault",
        "root",
        "quot",
    ]


# --- numbers -------------------------------------------------------------------------------


def test_numbers_are_terms() -> None:
    assert tokenize("2026 42") == ["2026", "42"]


def test_dot_between_digits_does_not_split() -> None:
    assert tokenize("Python 3.11 v1.2 1.0.0") == ["python", "3.11", "v1.2", "1.0.0"]


def test_dates_give_whole_and_parts() -> None:
    assert tokenize("2026-01-02") == ["2026-01-02", "2026", "01", "02"]


def test_decade_plural() -> None:
    assert tokenize("1990s") == ["1990s"]  # a word holding digits is a name: not stemmed


# --- apostrophes ---------------------------------------------------------------------------


def test_possessive_s_dropped() -> None:
    assert tokenize("OpenAI's model") == ["openai", "open", "ai", "model"]
    assert tokenize("Conway’s law") == tokenize("conway law")


def test_contractions_fold_to_stop_words() -> None:
    assert tokenize("don't it's we're can’t") == []


def test_inner_apostrophes_removed() -> None:
    assert tokenize("O'Reilly rock'n'roll") == ["oreilli", "rocknrol"]


# --- stop words ----------------------------------------------------------------------------


def test_stopwords_removed() -> None:
    assert tokenize("The index of a vault") == ["index", "vault"]


def test_stopword_list_is_small_and_casefolded() -> None:
    assert 90 <= len(STOPWORDS) <= 150
    assert all(w == w.casefold() and w.isalpha() for w in STOPWORDS)


def test_is_stopword_normalises() -> None:
    assert is_stopword("THE") and is_stopword("Don’t") and is_stopword("ｔｈｅ")
    assert not is_stopword("vault")


# --- stemming ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plural", "singular"),
    [
        ("migrations", "migration"),  # -s
        ("queries", "query"),  # -ies -> -y
        ("cookies", "cookie"),  # -ies after consonant, singular in -ie
        ("statuses", "status"),  # -uses of a Latin -us noun
        ("classes", "class"),  # -sses
        ("boxes", "box"),  # sibilant + es
        ("matches", "match"),
        ("cases", "case"),  # sibilant + e + s
        ("ties", "tie"),  # short -ies keeps its e
        ("uses", "use"),
    ],
)
def test_plural_and_singular_fold_together(plural: str, singular: str) -> None:
    assert fold(plural) == fold(singular)


@pytest.mark.parametrize("word", ["status", "class", "bus", "gas", "its", "this"])
def test_words_ending_in_s_that_are_not_plurals(word: str) -> None:
    assert fold(word) == word


def test_english_snowball_stems_verb_forms() -> None:
    # The misses with the old plural-only stemmer.
    assert fold("synced") == fold("sync") and fold("listed") == fold("list")
    assert fold("published") == fold("publish") and fold("filtered") == fold("filter")
    assert fold("running") == fold("run") and fold("indexed") == fold("index")


def test_other_languages_and_none() -> None:
    assert analyzer("french").tokenize("maisons") == ["maison"]
    # Polish inflects a noun through seven cases; its stemmer (PyStemmer 3.1) joins them
    polish = analyzer("polish").tokenize
    assert polish("notatki") == polish("notatkami") == polish("notatkach") != ["notatki"]
    assert analyzer("none").tokenize("queries running") == ["queries", "running"]
    with pytest.raises(ValueError, match="klingon"):
        analyzer("klingon")


def test_russian_and_ukrainian_words_are_stemmed_as_russian_whatever_the_language() -> None:
    """The script says the language: the English stemmer leaves Cyrillic as it is, so the forms
    of a Russian word would never meet. Ukrainian words (і, ї, є, ґ included) take the Russian
    stemmer too; a word starting with a letter of neither alphabet (Serbian љ) stays whole, and
    `none` still stems nothing."""
    forms = ["заметка", "заметки", "заметку", "заметкой", "Заметках"]
    assert len({fold(word) for word in forms}) == 1
    assert analyzer("french").tokenize("заметки")[0] == fold("заметку")
    assert fold("нотатки") == fold("нотатку")
    assert fold("україна") == fold("україну") != "україна"
    assert fold("љубав") == "љубав"
    assert analyzer("none").tokenize("заметки") == ["заметки"]
    assert fold("notes") == "note"  # English words as before


def test_digits_are_not_stemmed() -> None:
    assert fold("3.11") == "3.11" and fold("abc1") == "abc1"


def test_fold_normalises_then_stems() -> None:
    assert fold("ＱＵＥＲＩＥＳ") == fold("query") == "queri"
    assert fold("OpenAI's") == "openai"


# --- scripts without spaces ----------------------------------------------------------------


def test_cjk_bigrams() -> None:
    assert tokenize("東京都") == ["東京", "京都"]


def test_single_cjk_char_is_a_unigram() -> None:
    assert tokenize("本") == ["本"]


def test_kana_and_han_share_a_run() -> None:
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]


def test_cjk_punctuation_breaks_runs() -> None:
    assert tokenize("東京、大阪") == ["東京", "大阪"]


def test_thai_bigrams() -> None:
    assert tokenize("ภาษา") == ["ภา", "าษ", "ษา"]


def test_hangul_is_spaced() -> None:
    # words, and the syllable bigrams of a word of three syllables or more
    assert tokenize("한국어 텍스트") == ["한국어", "한국", "국어", "텍스트", "텍스", "스트"]
    assert tokenize("노트 노트를") == ["노트", "노트를", "노트", "트를"]


def test_mixed_scripts_split_at_the_boundary() -> None:
    assert tokenize("DuckDB索引") == ["duckdb", "duck", "db", "索引"]
    assert tokenize("东京ภาษา") == ["东京", "ภา", "าษ", "ษา"]


def test_half_width_katakana_matches_full_width() -> None:
    assert tokenize("ｶﾀｶﾅ") == tokenize("カタカナ")


# --- edge cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\t  \u3000", "—!?…"])
def test_empty_and_whitespace_only(text: str) -> None:
    assert tokenize(text) == [] and query_terms(text) == [] and word_spans(text) == []


def test_emoji_is_not_a_term_and_separates_words() -> None:
    assert tokenize("🎉") == []
    assert tokenize("ship🚀fast 1️⃣") == ["ship", "fast", "1"]


def test_compatibility_forms_that_become_punctuation() -> None:
    assert tokenize("⑴ ﹰ") == ["1"]


# --- query_terms ---------------------------------------------------------------------------


def test_query_terms_dedup_in_order() -> None:
    assert query_terms("Migrations migration the Vault vault") == ["migrat", "vault"]


def test_query_terms_match_note_terms() -> None:
    assert set(query_terms("test pager")) <= set(tokenize("def TestPagerOrder(): ..."))


# --- word_spans ----------------------------------------------------------------------------


def test_word_spans_offsets_point_into_the_original() -> None:
    text = "See TestPager, then the DuckDB索引."
    spans = word_spans(text)
    assert [(text[s:e], t) for s, e, t in spans] == [
        ("See", "see"),
        ("TestPager", "testpag"),
        ("DuckDB", "duckdb"),
        ("Duck", "duck"),
        ("DB", "db"),
        ("索引", "索引"),
    ]


def test_word_spans_after_nfkc_changes_lengths() -> None:
    text = "the ﬁle Straße ＡＢＣ ⑴ end"
    got = [(text[s:e], t) for s, e, t in word_spans(text)]
    assert got == [
        ("ﬁle", "file"),
        ("Straße", "strass"),
        ("ＡＢＣ", "abc"),
        ("⑴", "1"),
        ("end", "end"),
    ]


def test_word_spans_terms_are_tokenize() -> None:
    text = "Queries about vault_root.TestPager in 東京都, v1.2 don't"
    assert [t for _, _, t in word_spans(text)] == tokenize(text)


# ASCII identifiers, URLs and paths: `tokenize` takes their terms from a memo of pieces
# (`_ascii_terms`), spans from the word's analysis with offsets; the two must agree, in order.
_identifiers = st.lists(
    st.sampled_from(
        [
            *("Test", "PAGER", "pager", "HTTPServer", "x", "iOS", "v2", "3", "11", "The", "s"),
            *("_", "-", ".", "/", "'", "__", "://", "github", "com", "and", " ", "\n"),
        ]
    ),
    min_size=1,
    max_size=14,
).map("".join)


@given(_identifiers, st.sampled_from(["english", "none", "german", "polish"]))
def test_identifier_terms_are_the_spans_terms(text: str, language: str) -> None:
    analysis = analyzer(language)
    assert analysis.tokenize(text) == [t for _, _, t in analysis.spans(text)]


# --- properties ----------------------------------------------------------------------------

_texts = st.text(max_size=200) | st.lists(
    st.sampled_from(["Test", "Pager", "_", "-", ".", "/", "'", "s", "東", "京", "ภ", " ", "3", "ß"])
).map("".join)


@given(_texts)
def test_terms_are_nonempty_casefolded_without_whitespace(text: str) -> None:
    for term in tokenize(text):
        assert term
        assert not any(c.isspace() for c in term)
        assert term == term.casefold()


@given(_texts)
def test_query_terms_subset_of_tokenize(text: str) -> None:
    terms = query_terms(text)
    assert set(terms) <= set(tokenize(text))
    assert len(terms) == len(set(terms))


@given(_texts)
def test_word_spans_agree_with_tokenize(text: str) -> None:
    spans = word_spans(text)
    assert [t for _, _, t in spans] == tokenize(text)
    for start, end, _ in spans:
        assert 0 <= start < end <= len(text)
        assert not text[start:end].isspace()


@given(_texts, _texts)
def test_whitespace_ends_every_word(left: str, right: str) -> None:
    """Texts joined by a space give the terms of each in turn: no analysis reaches across a
    space, so a section's terms do not depend on its neighbours."""
    assert tokenize(left + " " + right) == tokenize(left) + tokenize(right)


# --- the word pattern without the mark table ------------------------------------------------

_ALPHABET = st.sampled_from(
    [
        *"aZ9_ -./'\n\u2019\u00e9\u0301\u093f\u0915\u0652\u0644\u00ad\u200c\u200d",
        *"\ufe0f\uff0e\u6771\u0e01\u2014\U00011000",
    ]
)


@given(st.one_of(st.text(), st.text(_ALPHABET)))
def test_plain_word_pattern_finds_the_full_patterns_words(text: str) -> None:
    """The tokenizer matches with `\\w` alone unless a text holds a mark: exactly the words
    (spans included) the pattern with the mark table finds."""
    from vaultmem.core import tokenizer

    full = tokenizer._full_word_pattern()
    chosen = tokenizer._PLAIN_WORD if not tokenizer._holds_mark(text) else full
    spans = [m.span() for m in chosen.finditer(text)]
    assert spans == [m.span() for m in full.finditer(text)]


@given(st.one_of(st.text(st.characters(max_codepoint=127)), st.text(_ALPHABET)))
def test_ascii_word_pattern_finds_the_plain_patterns_words(text: str) -> None:
    """ASCII text is matched with a pattern of ASCII ranges: the same spans as `\\w`."""
    from vaultmem.core import tokenizer

    text = "".join(c for c in text if c.isascii())
    spans = [m.span() for m in tokenizer._ASCII_WORD.finditer(text)]
    assert spans == [m.span() for m in tokenizer._PLAIN_WORD.finditer(text)]
    assert tokenizer._word_pattern(text) is tokenizer._ASCII_WORD


def test_a_mark_needs_the_full_pattern() -> None:
    from vaultmem.core import tokenizer

    text = "ki\u0301ll \u0915\u093f\u0924\u093e\u092c"
    assert tokenizer._holds_mark(text) and not tokenizer._holds_mark("caf\u00e9 \u2014 don\u2019t")
    assert tokenizer._PLAIN_WORD.findall(text) != tokenizer._full_word_pattern().findall(text)
    assert tokenize(text) == ["kíll", "किताब"]


def test_import_compiles_no_mark_table_until_a_text_holds_a_mark() -> None:
    """A cold process tokenising ASCII text compiles neither the mark table nor the no-space
    script classes (~10 ms of compiling together); mark-free text skips the mark table."""
    script = (
        "from vaultmem.core import tokenizer as t\n"
        "t.tokenize('plain ASCII text, vault_root TestPagerOrder v1.2')\n"
        "assert t._has_nospace.cache_info().misses == 0\n"
        "t.word_spans('caf\\u00e9 \\u2014 x \\u6771\\u4eac')\n"
        "assert t._full_word is None and t._full_word_pattern.cache_info().misses == 0\n"
        "assert t.tokenize('cafe\\u0301') == ['caf\\u00e9'] and t._full_word is not None\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_mark_free_text_past_the_look_budget_compiles_the_full_pattern() -> None:
    """Looking for marks is bounded: past the budget the full pattern serves, same terms."""
    script = (
        "from vaultmem.core import tokenizer as t\n"
        "text = '\\u041f\\u0440\\u0438\\u0432\\u0435\\u0442 caf\\u00e9 \\u2014 ' * 100\n"
        "first = t.tokenize(text)\n"
        "while t._full_word is None:\n"
        "    assert t.tokenize(text) == first\n"
        "assert t._mark_look_left < len(text) and t.tokenize(text) == first\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)

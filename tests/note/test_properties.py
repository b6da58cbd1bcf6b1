"""Frontmatter: the split at byte 0, safe YAML loading, normalisation and special keys."""

from __future__ import annotations

import pytest

from vaultmem.core.models import JSON
from vaultmem.note.properties import (
    Frontmatter,
    load_frontmatter,
    special_properties,
    split_frontmatter,
)


def load(text: str) -> Frontmatter:
    block = split_frontmatter(text)
    assert block is not None
    return load_frontmatter(block)


def data(text: str) -> dict[str, JSON]:
    fm = load(text)
    assert fm.status == "valid", fm.problems
    return fm.data


# --- rule 10: the block ---


def test_split_basic_and_body_line() -> None:
    block = split_frontmatter("---\na: 1\n---\nbody\n")
    assert block is not None
    assert (block.yaml_text, block.body, block.body_line) == ("a: 1\n", "body\n", 4)


def test_closing_line_may_have_trailing_spaces() -> None:
    block = split_frontmatter("---  \na: 1\n---   \nbody")
    assert block is not None and block.body == "body"


@pytest.mark.parametrize(
    "text",
    ["\n---\na: 1\n---\n", " ---\na: 1\n---\n", "---\na: 1\n", "--- a\n---\n", "----\n---\n"],
)
def test_no_frontmatter(text: str) -> None:
    assert split_frontmatter(text) is None


def test_empty_block() -> None:
    fm = load("---\n---\nbody")
    assert (fm.status, fm.data) == ("empty", {})
    assert load("---\n# just a comment\n---\n").status == "empty"


def test_json_frontmatter() -> None:
    assert data('---\n{"a": 1, "b": [true, null], "c": "x"}\n---\n') == {
        "a": 1,
        "b": [True, None],
        "c": "x",
    }


# --- normalisation ---


def test_dates_kept_as_written() -> None:
    got = data(
        "---\nd: 2024-01-02\nt: 2024-01-02 10:00:00 +02:00\niso: 2024-01-02T10:00:00Z\n"
        "q: '2024-01-02'\n---\n"
    )
    assert got == {
        "d": "2024-01-02",
        "t": "2024-01-02 10:00:00 +02:00",
        "iso": "2024-01-02T10:00:00Z",
        "q": "2024-01-02",
    }


def test_scalars_stay_json_types() -> None:
    got = data("---\nb: true\ni: 0x1F\nf: 1.5\nn: ~\ninf: .inf\nbig: " + "9" * 5000 + "\n---\n")
    assert got["b"] is True and got["i"] == 31 and got["f"] == 1.5 and got["n"] is None
    assert got["inf"] == ".inf"
    assert got["big"] == "9" * 5000


# Issue 18 point 8. Obsidian reads properties as YAML 1.2 (spec rule 11); the YAML 1.2.2 core
# schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution) makes only true/false booleans,
# only ~/null/empty nulls, decimal, 0o and 0x ints: YAML 1.1's `NO`, `on`, `1:20` (base 60),
# `010` (octal) and `1_000` are not what PyYAML's default loader makes of them.
@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("NO", "NO"),
        ("yes", "yes"),
        ("on", "on"),
        ("Off", "Off"),
        ("True", True),
        ("FALSE", False),
        ("1:20", "1:20"),
        ("010", 10),
        ("1_000", "1_000"),
        ("0b101", "0b101"),
        ("0o17", 15),
        ("0x1DA9430", 0x1DA9430),
        ("+12", 12),
        ("1e3", 1000.0),
        ("-.5", -0.5),
        ("Null", None),
        ("", None),
        ("2024-01-02", "2024-01-02"),
        ("'NO'", "NO"),
    ],
)
def test_yaml_1_2_core_schema(written: str, value: JSON) -> None:
    got = data(f"---\nk: {written}\n---\n")["k"]
    assert got == value and type(got) is type(value)


def test_yaml_1_2_core_schema_inside_lists() -> None:
    assert data("---\nanswers: [yes, no, y, n, true]\n---\n") == {
        "answers": ["yes", "no", "y", "n", True]
    }


def test_keys_are_strings_and_merge_keys_work() -> None:
    got = data("---\n1: one\nbase: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n---\n")
    assert got == {"1": "one", "base": {"x": 1, "y": 2}, "m": {"x": 1, "y": 3}}


def test_custom_tags_do_not_fail() -> None:
    assert data("---\na: !custom value\nb: !!binary aGk=\n---\n") == {"a": "value", "b": "aGk="}


# --- bad YAML ---


def test_invalid_yaml_has_line() -> None:
    fm = load("---\na: 1\nb: [unclosed\nc: 2\n---\n")
    assert fm.status == "invalid"
    ((code, _, line),) = fm.problems
    assert code == "frontmatter_invalid"
    assert line is not None and line >= 3


@pytest.mark.parametrize("text", ["---\n- a\n- b\n---\n", "---\njust text\n---\n"])
def test_not_a_mapping(text: str) -> None:
    fm = load(text)
    assert fm.status == "invalid"
    assert [p[0] for p in fm.problems] == ["frontmatter_not_mapping"]


@pytest.mark.timeout(60)  # a hang guard: without the node budget this would not finish
def test_billion_laughs_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    fm = load("---\n" + "\n".join(lines) + "\n---\n")
    assert fm.status == "invalid"
    assert [p[0] for p in fm.problems] == ["frontmatter_unsafe"]


@pytest.mark.timeout(60)
def test_aliases_of_long_text_refused() -> None:
    # Issue 16: node counting alone let 100 aliases of a 1 MB-expanded string through (a 115 KB
    # note became a 500 MB value); the expanded text is bounded too.
    text = "---\na: &a " + "x" * 20_000 + "\nb: &b [" + ", ".join(["*a"] * 50) + "]\n"
    text += "c: [" + ", ".join(["*b"] * 50) + "]\n---\n"
    fm = load(text)
    assert fm.status == "invalid"
    assert [p[0] for p in fm.problems] == ["frontmatter_unsafe"]
    assert "characters" in fm.problems[0][1]


def test_long_text_without_aliases_allowed() -> None:
    assert data("---\na: " + "x" * 1_500_000 + "\n---\n")["a"] == "x" * 1_500_000


def test_small_aliases_allowed() -> None:
    assert data("---\na: &x [1, 2]\nb: *x\n---\n") == {"a": [1, 2], "b": [1, 2]}


def test_deep_nesting_refused() -> None:
    text = "---\n" + "".join(" " * i + f"k{i}:\n" for i in range(300)) + "---\n"
    fm = load(text)
    assert fm.status == "invalid"
    assert fm.problems[0][0] in ("frontmatter_unsafe", "frontmatter_invalid")


# --- rule 11: tags, aliases, cssclasses ---


def specials(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], list[str]]:
    sp = special_properties(load(text))
    return sp.tags, sp.aliases, sp.cssclasses, [p[0] for p in sp.problems]


def test_tags_list_string_hash_and_case_insensitive_key() -> None:
    assert specials("---\nTags: [a, '#b', c/d]\n---\n")[0] == ("a", "b", "c/d")
    assert specials("---\ntags: single\n---\n")[0] == ("single",)


# Issue 18 point 2. obsidian.d.ts (obsidian-api) declares the helper behind frontmatter tags,
# `parseFrontMatterStringArray(frontmatter, key, nospaces?)`: a string value is a list written
# inline, split at commas (and at whitespace with `nospaces`, which tags use: a tag holds no
# space), so `tags: a, b` is two tags, not an error.
@pytest.mark.parametrize(
    "written",
    ["tags: ux, design", "tags: 'ux,design'", "tags: ux design", "tags: '#ux, #design'"],
)
def test_tags_comma_string_is_a_list(written: str) -> None:
    assert specials(f"---\n{written}\n---\n") == (("ux", "design"), (), (), [])


def test_tags_empty_items_dropped_silently() -> None:
    # A template's `tags:` followed by `- ` (a null item) shows nothing in Obsidian and is
    # nothing to warn about (6,852 warnings on obsidian-hub before); the same for aliases.
    text = "---\ntags:\n  - \n  - ok\n  -\naliases:\n  -\ncssclasses: ['', x]\n---\n"
    assert specials(text) == (("ok",), (), ("x",), [])


def test_tags_non_string_and_unquoted_hash_dropped() -> None:
    # the only warnings left: values Obsidian shows as no tag at all
    tags, _, _, problems = specials("---\ntags:\n  - ok\n  - 12\n  - #x\n  - 'has space'\n---\n")
    assert tags == ("ok",)
    assert problems == ["property_invalid"] * 2


# Issue 18 point 9: nothing in YAML ends a tag early, and Obsidian keeps `.` and `+` in
# frontmatter tags (spec rule 11: "tag values may hold `.` and `+`").
def test_tags_with_dot_and_plus_kept() -> None:
    assert specials("---\ntags: [gpt-4.1, n+1, v2.0/beta]\n---\n")[0] == (
        "gpt-4.1",
        "n+1",
        "v2.0/beta",
    )


def test_tags_empty_value_is_fine() -> None:
    assert specials("---\ntags:\n---\n") == ((), (), (), [])


def test_aliases_and_cssclasses() -> None:
    _, aliases, css, problems = specials(
        "---\naliases: [Doggo, 2024, Doggo]\ncssclasses: wide\n---\n"
    )
    assert aliases == ("Doggo", "2024")
    assert css == ("wide",)
    assert problems == []


# Issue 18 point 4, spec rule 11: Obsidian 1.9 dropped the singular `tag`, `alias` and
# `cssclass` keys (release notes v1.9.0; the Properties help page lists only the plural ones).
def test_legacy_singular_keys_are_ordinary_properties() -> None:
    fm = load("---\ntag: old\nalias: Pup\ncssclass: narrow\n---\n")
    assert specials("---\ntag: old\nalias: Pup\ncssclass: narrow\n---\n") == ((), (), (), [])
    assert fm.data == {"tag": "old", "alias": "Pup", "cssclass": "narrow"}


def test_hash_word_in_other_property_is_not_a_tag() -> None:
    assert specials("---\nsummary: about #topic\n---\n")[0] == ()


# --- rule 8: property link candidates ---


def test_link_candidates_with_relation_and_line() -> None:
    fm = load("---\nup: '[[Parent]]'\nrelated:\n  - '[[A]]'\n  - x: '[[B]]'\nplain: text\n---\n")
    assert fm.strings == (("up", "[[Parent]]", 2), ("related", "[[A]]", 4), ("related", "[[B]]", 5))

"""Frontmatter: the split at byte 0, safe YAML loading, normalisation and special keys."""

from __future__ import annotations

import pytest

from vaultmem.models import JSON
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
    got = data("---\nb: yes\ni: 0x1F\nf: 1.5\nn: ~\ninf: .inf\nbig: " + "9" * 5000 + "\n---\n")
    assert got["b"] is True and got["i"] == 31 and got["f"] == 1.5 and got["n"] is None
    assert got["inf"] == ".inf"
    assert got["big"] == "9" * 5000


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


def test_tags_comma_string_is_invalid() -> None:
    tags, _, _, problems = specials("---\ntags: a, b\n---\n")
    assert tags == () and problems == ["property_invalid"]


def test_tags_non_string_and_unquoted_hash_dropped() -> None:
    tags, _, _, problems = specials("---\ntags:\n  - ok\n  - 12\n  - #x\n  - 'has space'\n---\n")
    assert tags == ("ok",)
    assert problems == ["property_invalid"] * 3


def test_tags_empty_value_is_fine() -> None:
    assert specials("---\ntags:\n---\n") == ((), (), (), [])


def test_aliases_and_cssclasses() -> None:
    tags, aliases, css, problems = specials(
        "---\naliases: [Doggo, 2024, Doggo]\ncssclasses: wide\ntag: old\nalias: Pup\n---\n"
    )
    assert tags == ("old",)
    assert aliases == ("Doggo", "2024", "Pup")
    assert css == ("wide",)
    assert problems == []


def test_hash_word_in_other_property_is_not_a_tag() -> None:
    assert specials("---\nsummary: about #topic\n---\n")[0] == ()


# --- rule 8: property link candidates ---


def test_link_candidates_with_relation_and_line() -> None:
    fm = load("---\nup: '[[Parent]]'\nrelated:\n  - '[[A]]'\n  - x: '[[B]]'\nplain: text\n---\n")
    assert fm.strings == (("up", "[[Parent]]", 2), ("related", "[[A]]", 4), ("related", "[[B]]", 5))

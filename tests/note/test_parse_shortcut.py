"""The parser's cheap path (skipping the inline parse of plain paragraphs) changes no model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.generate_vault import generate_vault
from vaultmem.note import markdown
from vaultmem.note.parse import parse_note

EXAMPLE = Path(__file__).resolve().parents[2] / "example-vault"

_PIECES = st.sampled_from(
    [
        "plain words here",
        "[[Link]]",
        "![[Embed#Head]]",
        "#tag",
        "`code [[x]]`",
        "$x [[y]]$",
        "key:: [[Z]]",
        "[t](Note.md)",
        "^block-1",
        "\n\n",
        "\n",
        "> quote\n",
        "- item\n",
        "# Heading\n",
        "```\n[[fenced]]\n```\n",
        "%%comment [[c]]%%",
        "<!-- [[hidden]] -->",
        "\\[[escaped]]",
    ]
)


def _with_and_without(shortcut: str, path: str, data: bytes) -> tuple[object, object]:
    """The note parsed with the `markdown` module's `shortcut` switch on, then off."""
    fast = parse_note(path, data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, shortcut, False)
        full = parse_note(path, data)
    return fast, full


def _both(path: str, data: bytes) -> tuple[object, object]:
    return _with_and_without("SKIP_PLAIN_PARAGRAPHS", path, data)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=25).map(" ".join))
def test_cheap_path_gives_identical_models_on_generated_text(text: str) -> None:
    fast, full = _both("Note.md", text.encode())
    assert fast == full


def test_cheap_path_gives_identical_models_on_real_vaults(tmp_path: Path) -> None:
    generated = tmp_path / "gen"
    generate_vault(generated, 150, seed=7)
    files = [*EXAMPLE.rglob("*.md"), *generated.rglob("*.md")]
    assert len(files) > 150
    for file in files:
        fast, full = _both(file.name, file.read_bytes())
        assert fast == full, file


def test_the_switch_is_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard against a switch that no longer controls anything: count the inline parses."""
    calls = 0
    real = markdown._MD.inline

    def counting(text: str, env: dict[str, object]) -> object:
        nonlocal calls
        calls += 1
        return real(text, env)

    monkeypatch.setattr(markdown._MD, "inline", counting)
    parse_note("N.md", b"plain paragraph\n\nanother one\n")
    assert calls == 0
    monkeypatch.setattr(markdown, "SKIP_PLAIN_PARAGRAPHS", False)
    parse_note("N.md", b"plain paragraph\n\nanother one\n")
    assert calls == 2


# --- the block scanners' line-start search ------------------------------------------------------

_LINE_CHOICES = [
    "plain words",
    "`code` first, then [[A]]",
    "**bold** opener #tag",
    "[t](B.md) opens the line",
    "[ref]: C.md",
    "[^1]: [[Foot]]",
    "<div>[[html]]</div>",
    "    indented [[code]]",
    "\tindented by a tab",
    "1. item [[D]]",
    "- item",
    "  - nested [[E]]",
    "> quote [[F]]",
    "> [!note] callout",
    "# Heading",
    "Setext",
    "===",
    "---",
    "***",
    "```",
    "~~~",
    "$$",
    "x^2 $$ y",
    "| a | b |",
    "",
    "   ",
    "text ^block-id",
]
_LINES = st.sampled_from(_LINE_CHOICES)


def _both_searches(path: str, data: bytes) -> tuple[object, object]:
    return _with_and_without("LINE_START_SEARCH", path, data)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=30).map("\n".join))
def test_line_start_search_gives_identical_models_on_generated_lines(text: str) -> None:
    fast, full = _both_searches("Note.md", text.encode())
    assert fast == full


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="`*[]()#>-=~$^:|<!/ \t\n\r\\x1.", max_size=120))
def test_line_start_search_gives_identical_models_on_arbitrary_text(text: str) -> None:
    fast, full = _both_searches("Note.md", text.encode())
    assert fast == full


def test_line_start_search_gives_identical_models_on_real_vaults(tmp_path: Path) -> None:
    generated = tmp_path / "gen"
    generate_vault(generated, 150, seed=11)
    files = [*EXAMPLE.rglob("*.md"), *generated.rglob("*.md")]
    for file in files:
        fast, full = _both_searches(file.name, file.read_bytes())
        assert fast == full, file


def _anchored(pattern: list[tuple[Any, Any]]) -> bool:
    """Whether a parsed regex can only match at a `^`: its first item is one, or a group,
    a repeat of at least one or a branch whose every arm starts with one."""
    from re import _constants as c  # type: ignore[attr-defined]

    if not pattern:
        return False
    op, arg = pattern[0]
    if op is c.AT:
        return arg is c.AT_BEGINNING
    if op is c.SUBPATTERN:
        return _anchored(list(arg[3]))
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        low, _high, sub = arg
        return bool(low >= 1 and _anchored(list(sub)))
    if op is c.ATOMIC_GROUP:
        return _anchored(list(arg))
    if op is c.BRANCH:
        return all(_anchored(list(arm)) for arm in arg[1])
    return False


def test_every_block_scanner_is_anchored_at_line_starts() -> None:
    """The premise of the line-start search: every alternative of every scanner mistune asks
    for begins with `^` in multi-line mode (a new or changed mistune rule would fail here)."""
    from re import _parser  # type: ignore[attr-defined]

    for file in EXAMPLE.rglob("*.md"):  # fill the parser's scanner cache the real way
        parse_note(file.name, file.read_bytes())
    parse_note("N.md", "\n".join(_LINE_CHOICES).encode())
    scanners = markdown._MD.block._scanners  # type: ignore[attr-defined]
    assert len(scanners) >= 3
    for scanner in scanners.values():
        pattern = scanner._pattern
        assert pattern.flags & re.MULTILINE
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        assert _anchored(list(parsed)), pattern.pattern[:80]
    assert not _anchored(list(_parser.parse("a|^b", re.M)))  # the check can fail


def test_the_line_start_switch_is_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """A paragraph opening with a backtick makes mistune search for its end."""
    seen: list[bool] = []
    real = markdown._LineStartScanner.search

    def spy(self: markdown._LineStartScanner, string: str, pos: int = 0) -> object:
        seen.append(markdown.LINE_START_SEARCH)
        return real(self, string, pos)

    monkeypatch.setattr(markdown._LineStartScanner, "search", spy)
    parse_note("N.md", b"`code` first\nmore\n\n# H\n")
    assert seen == [True]


def test_the_list_break_scanner_cached_per_indent_is_mistunes() -> None:
    """Our parser builds mistune's list-item break scanner once per indent: the same pattern."""
    from mistune import list_parser
    from mistune.block_parser import BlockParser

    parse_note("N.md", b"- a\n  - b\n    - c\n1. d\n")
    assert list_parser._compile_list_break_sc is markdown._list_break_sc
    block = markdown._MD.block
    for width in range(8):
        cached = markdown._list_break_sc(block, width)
        plain = markdown._plain_list_break_sc(block, width)
        assert (cached.pattern, cached.flags) == (plain.pattern, plain.flags)
        assert markdown._list_break_sc(block, width) is cached
    assert set(block._list_breaks) == set(range(8))  # type: ignore[attr-defined]
    other = BlockParser()  # any other parser takes mistune's own function, uncached
    assert (
        markdown._list_break_sc(other, 2).pattern == markdown._plain_list_break_sc(other, 2).pattern
    )


def test_the_cached_inline_trigger_pattern_is_mistunes() -> None:
    """The inline parser's fast-text pattern, reused without re-sorting its characters, is the
    one mistune would build from them, and a registered rule still resets it."""
    from mistune.inline_parser import InlineParser

    parse_note("N.md", b"a [[link]] and #tag and `code` [t](x.md)\n")
    inline = markdown._MD.inline
    chars = inline._get_fast_trigger_chars()
    assert chars is not None
    cached = inline._get_fast_trigger_re(chars)
    assert cached.pattern == InlineParser._get_fast_trigger_re(InlineParser(), chars).pattern
    assert inline._get_fast_trigger_re({"x"}).pattern == "[x]"  # other characters: their own
    assert inline._get_fast_trigger_re(chars) is cached
    assert inline._get_fast_trigger_re(set(chars)).pattern == cached.pattern


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t\nab#>-`", max_size=60))
def test_the_indented_code_test_on_the_first_character_is_mistunes(text: str) -> None:
    """Our parser rules out indented code from a block's first character; mistune slices and
    tests the whole line. Both, at every line start: the same answer and the same tokens."""
    from mistune.block_parser import BlockParser

    block = markdown._MD.block
    src = text if text.endswith("\n") else text + "\n"
    starts = [0, *(i + 1 for i, c in enumerate(src) if c == "\n")]
    for pos in starts:
        got, want = markdown._State(), markdown._State()
        for state in (got, want):
            state.process(src)
            state.cursor = pos
        assert block._parse_indent_code_fast(got) == BlockParser._parse_indent_code_fast(
            block, want
        )
        assert got.tokens == want.tokens


_HREF_TEXT = st.text(
    alphabet=st.sampled_from(list("ab/:.%<>()\\ \t\n\r\f\x0b\x00\x7f\u00a0\u2028é)\"'[]")),
    max_size=40,
)


@settings(max_examples=400)
@given(_HREF_TEXT, st.integers(0, 45), st.booleans(), st.integers(0, 3))
def test_the_fast_link_destination_scanner_is_mistunes(
    src: str, start: int, block: bool, nested: int
) -> None:
    """A destination taken in one regex match is what mistune's character loop returns, for
    any text, start, block or inline use and nesting limit (core/compat.py)."""
    start = min(start, len(src))
    assert markdown._link_href(
        src, start, block=block, max_nested_level=nested
    ) == markdown._plain_link_href(src, start, block=block, max_nested_level=nested)


def test_the_fast_link_destination_scanner_is_installed_and_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mistune's helpers call ours; a plain URL never reaches mistune's character loop, an
    angle-bracketed destination does."""
    from mistune import helpers

    assert helpers._parse_link_href is markdown._link_href
    handed: list[str] = []

    def spy(src: str, start: int, block: bool = False, **kwargs: Any) -> Any:
        handed.append(src[start : start + 12])
        return markdown._plain_link_href(src, start, block, **kwargs)

    monkeypatch.setattr(helpers, "_parse_link_href", markdown._fast_link_href(spy))
    text = b"[a](notes/x_y.md) [b](<spaced name.md>) [c](https://example.com/page)\n"
    note = parse_note("N.md", text).note
    assert [link.target for link in note.links][:2] == ["notes/x_y.md", "spaced name.md"]
    assert handed == ["<spaced name"], handed

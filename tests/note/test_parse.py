"""parse_note end to end: the Note model, bad input, and properties that must always hold."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core.models import PROBLEM_CODES
from vaultmem.core.note_model import ParsedNote
from vaultmem.note.parse import parse_note

DOC = Path(__file__).resolve().parents[2] / "docs" / "note-model.md"


def parse(text: str, path: str = "Folder/My Note.md") -> ParsedNote:
    return parse_note(path, text.encode("utf-8"))


def codes(parsed: ParsedNote) -> list[str]:
    return [p.code for p in parsed.problems]


# --- title ---


def test_title_from_frontmatter_then_h1_then_stem() -> None:
    assert parse("---\ntitle: Given\n---\n# Head\n").note.title == "Given"
    assert parse("## Two\n# Head\n").note.title == "Head"
    assert parse("no heading\n").note.title == "My Note"
    assert parse("x", path="v1.2 Release.md").note.title == "v1.2 Release"


# --- frontmatter through parse_note ---


def test_bom_crlf_frontmatter() -> None:
    data = "\ufeff---\r\ntags: [a]\r\n---\r\n# T\r\nx [[L]]\r\n".encode()
    note = parse_note("n.md", data).note
    assert note.frontmatter_status == "valid"
    assert note.tags == ("a",)
    assert [(h.text, h.line) for h in note.headings] == [("T", 4)]
    assert [x.line for x in note.links] == [5]


def test_cr_only_line_endings() -> None:
    note = parse_note("n.md", b"---\rtitle: T\r---\r\r[[A]]\r").note
    assert (note.title, [x.line for x in note.links]) == ("T", [5])


def test_blank_line_before_dashes_means_no_frontmatter() -> None:
    note = parse("\n---\ntitle: x\n---\n").note
    assert (note.frontmatter_status, note.frontmatter) == ("none", {})


def test_statuses() -> None:
    assert parse("---\n---\n").note.frontmatter_status == "empty"
    assert parse("body").note.frontmatter_status == "none"
    bad = parse("---\na: [\n---\n[[Still]] #parsed\n")
    assert bad.note.frontmatter_status == "invalid"
    assert codes(bad) == ["frontmatter_invalid"]
    assert [x.target for x in bad.note.links] == ["Still"]
    assert bad.note.tags == ("parsed",)
    assert codes(parse("---\n- a\n---\n")) == ["frontmatter_not_mapping"]


def test_dates_not_reformatted() -> None:
    fm = parse("---\ncreated: 2024-03-05 9:30\nd: 2024-03-05\n---\n").note.frontmatter
    assert fm == {"created": "2024-03-05 9:30", "d": "2024-03-05"}


def test_frontmatter_is_json_safe() -> None:
    note = parse("---\na: 2020-01-01\nb: [1, 1.5, yes, null, {c: .nan}]\n---\n").note
    json.dumps(note.frontmatter, allow_nan=False)
    # Dates become their text, `yes` stays text (YAML 1.2 core); `.nan` (not JSON) stays the text
    # that was written.
    assert note.frontmatter == {"a": "2020-01-01", "b": [1, 1.5, "yes", None, {"c": ".nan"}]}


# --- tags ---


def test_tags_frontmatter_first_then_body_deduplicated() -> None:
    note = parse("---\ntags: [Project, '#x/y']\n---\n#project #new #X/Y #New\n").note
    assert note.tags == ("Project", "x/y", "new")


def test_invalid_frontmatter_tag_is_a_warning() -> None:
    parsed = parse("---\ntags: [a, 1984]\n---\n")
    assert parsed.note.tags == ("a",)
    (problem,) = parsed.problems
    assert (problem.code, problem.severity, problem.line) == ("property_invalid", "warning", 2)


# --- links: property, body, field ---


def test_property_links() -> None:
    note = parse(
        "---\nup: '[[Parent|P]]'\nrelated:\n  - '[[A#H]]'\n  - \"see [[B]]\"\n"
        "unquoted: [[C]]\nmd: '[t](Doc.md)'\n---\nbody [[D]]\n"
    ).note
    got = [(x.target, x.subpath, x.kind, x.relation, x.line) for x in note.links]
    assert got == [
        ("Parent", "", "property", "up", 2),
        ("A", "#H", "property", "related", 4),
        ("Doc.md", "", "property", "md", 7),
        ("D", "", "wikilink", None, 9),
    ]


def test_link_fields_complete() -> None:
    (link,) = parse("x\n\nkey:: ![[Img.png|30]]\n").note.links
    assert dataclasses.asdict(link) == {
        "target": "Img.png",
        "subpath": "",
        "display": "30",
        "embed": True,
        "line": 3,
        "kind": "field",
        "relation": "key",
        "raw": "![[Img.png|30]]",
    }


# --- bad input ---


def test_empty_file() -> None:
    parsed = parse_note("Empty.md", b"")
    assert parsed.problems == ()
    assert parsed.note.title == "Empty" and parsed.note.sections == ()


def test_invalid_utf8_is_replaced() -> None:
    parsed = parse_note("n.md", b"ok\n\xff\xfe [[A]]\n")
    assert codes(parsed) == ["encoding_invalid"]
    assert parsed.problems[0].line == 2
    assert [x.target for x in parsed.note.links] == ["A"]


def test_too_large_is_metadata_only() -> None:
    parsed = parse_note("dir/Big.md", b"# T\n[[A]]\n" * 10, max_bytes=50)
    assert codes(parsed) == ["file_too_large"]
    assert parsed.problems[0].severity == "warning"
    assert (parsed.note.title, parsed.note.links, parsed.note.frontmatter_status) == (
        "Big",
        (),
        "none",
    )


def test_binary_is_metadata_only() -> None:
    parsed = parse_note("Bin.md", b"# T\n\x00\x01[[A]]")
    assert codes(parsed) == ["file_binary"]
    assert (parsed.note.title, parsed.note.links) == ("Bin", ())
    assert codes(parse_note("late.md", b"x" * 9000 + b"\x00")) == []


def test_billion_laughs_through_parse_note() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    parsed = parse("---\n" + "\n".join(lines) + "\n---\nbody [[A]]\n")
    assert codes(parsed) == ["frontmatter_unsafe"]
    assert parsed.note.frontmatter == {}
    assert [x.target for x in parsed.note.links] == ["A"]


def test_recursive_alias_refused() -> None:
    parsed = parse("---\na: &x\n  b: *x\n---\n")
    assert codes(parsed) == ["frontmatter_unsafe"]


def test_long_line_and_many_links_are_all_parsed() -> None:
    parsed = parse("x" * 200_000 + "\n" + "[[A]] #t " * 20_000 + "\n")
    links = parsed.note.links
    assert (len(links), {x.target for x in links}, {x.line for x in links}) == (20_000, {"A"}, {2})
    assert (parsed.note.tags, codes(parsed)) == (("t",), [])


def test_json_shape() -> None:
    shape = dataclasses.asdict(parse("---\na: 1\n---\n# H\ntext ^b\n").note)
    assert list(shape) == [
        "path",
        "frontmatter",
        "frontmatter_status",
        "title",
        "aliases",
        "tags",
        "cssclasses",
        "headings",
        "blocks",
        "links",
        "sections",
    ]
    assert shape["headings"] == ({"level": 1, "text": "H", "line": 4, "anchor": "h"},)
    assert shape["blocks"] == ({"id": "b", "line": 5},)
    json.dumps(shape)


# --- documentation ---


def test_every_problem_code_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [code for code in PROBLEM_CODES if f"`{code}`" not in text]
    assert missing == []


# --- properties (hypothesis) ---


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_never_raises_on_bytes(data: bytes) -> None:
    parse_note("x.md", data)


_MD_ALPHABET = st.sampled_from(
    [
        *"[]()#!|\\^:%$`*_-<>/ \n\t\r>aZ9é\u00a0=~{}\"'&",
        "[[",
        "]]",
        "---\n",
        "```",
        "    ",
        "- ",
        "> ",
        "1. ",
        "<!--",
        "-->",
        "::",
        "$$",
        "\ufeff",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_MD_ALPHABET, max_size=60).map("".join))
def test_never_raises_on_markdownish_text(text: str) -> None:
    parse(text)
    parse("---\n" + text + "\n---\n" + text)


_INNER = st.text(alphabet="[]#!|^:aZ9 é-_/.", min_size=1, max_size=30)
_PLAIN = st.text(alphabet="abc xyz", max_size=20)


@settings(max_examples=200, deadline=None)
@given(_PLAIN, _INNER, _PLAIN)
def test_nothing_found_in_inline_code(before: str, inner: str, after: str) -> None:
    note = parse(f"x{before} `[[{inner}]] #{inner}` {after}\n").note
    assert (note.links, note.tags) == ((), ())


@settings(max_examples=200, deadline=None)
@given(st.lists(_INNER, min_size=1, max_size=5), st.sampled_from(["```", "~~~", "````"]))
def test_nothing_found_in_fenced_code(lines: list[str], fence: str) -> None:
    body = "\n".join(f"[[{x}]] #{x} ![[{x}]] [a]({x}.md)" for x in lines)
    note = parse(f"intro\n\n{fence}\n{body}\n{fence}\n").note
    assert (note.links, note.tags) == ((), ())


_BLOCK = st.sampled_from(
    [
        "para [[{n}]] text",
        "- item [[{n}]]",
        "  - nested [[{n}]]",
        "> quote [[{n}]]",
        "> > deep ![[{n}]]",
        "1. ordered [[{n}]]",
        "lazy [[{n}]]",
        "# head [[{n}]]",
        "key:: [[{n}]]",
        "| a | [[{n}]] |",
        "",
        "```",
        "    indented",
        "---",
        "text",
        "====",
        "<div>",
        "[^1]: [[{n}]]",
        "   - [ ] t [[{n}]]",
        "> - q [[{n}]]",
        "-",
        "  cont [[{n}]]",
        "    more [[{n}]]",
        "\t- tab [[{n}]]",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCK, max_size=25))
def test_link_lines_point_at_their_source(blocks: list[str]) -> None:
    lines = [b.format(n=f"L{i}") for i, b in enumerate(blocks)]
    note = parse("\n".join(lines) + "\n").note
    for link in note.links:
        assert link.raw in lines[link.line - 1]
        assert re.fullmatch(r"L\d+", link.target)


# --- canvas files (issue 18 point 7, spec rule 18) ---


def test_canvas_links_tags_and_sections() -> None:
    canvas = {
        "nodes": [
            {"id": "1", "type": "file", "file": "Projects/Plan.md", "subpath": "#Goals"},
            {"id": "2", "type": "file", "file": "img/a.png"},
            {"id": "3", "type": "text", "text": "see [[Alpha|A]] #Idea #idea\n\n- [m](Beta.md)"},
            {"id": "4", "type": "link", "url": "https://example.com"},
        ]
    }
    parsed = parse_note("Boards/Plan board.canvas", json.dumps(canvas).encode())
    note = parsed.note
    assert parsed.problems == ()
    assert note.title == "Plan board" and note.tags == ("Idea",)
    assert [(x.kind, x.target, x.subpath, x.embed) for x in note.links] == [
        ("canvas", "/Projects/Plan.md", "#Goals", True),
        ("canvas", "/img/a.png", "", True),
        ("wikilink", "Alpha", "", False),
        ("markdown", "Beta.md", "", False),
    ]
    assert [s.text for s in note.sections] == ["see [[Alpha|A]] #Idea #idea\n\n- [m](Beta.md)"]


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '{"nodes": 3}',
        '{"nodes": [1, null, {"type": "file", "file": 3}, {"type": "text", "text": []}]}',
        "[" * 5000,
    ],
)
def test_bad_canvas_never_raises(text: str) -> None:
    parsed = parse_note("b.canvas", text.encode())
    assert parsed.note.links == () and parsed.note.title == "b"
    assert [p.code for p in parsed.problems] in ([], ["canvas_invalid"])


def test_canvas_guards_like_a_note() -> None:
    assert [p.code for p in parse_note("b.canvas", b"\x00{}").problems] == ["file_binary"]
    empty = parse_note("b.canvas", b"")
    assert empty.problems == () and empty.note.links == ()

"""Body grammar: links, tags, headings, blocks, fields and the places nothing is found."""

from __future__ import annotations

import pytest

from vaultmem.note.markdown import (
    field_key,
    heading_anchor,
    markdown_link_target,
    scan_body,
    split_wikilink,
)


def links(body: str) -> list[tuple[str, str, str | None, bool]]:
    return [(x.target, x.subpath, x.display, x.embed) for x in scan_body(body).links]


def targets(body: str) -> list[str]:
    return [x.target for x in scan_body(body).links]


def tags(body: str) -> list[str]:
    return scan_body(body).tags


# --- rule 1: wikilink syntax ---


def test_wikilink_and_embed() -> None:
    assert links("see [[Alpha]] and ![[pic.png]]") == [
        ("Alpha", "", "Alpha", False),
        ("pic.png", "", "pic.png", True),
    ]


def test_wikilink_contents_trimmed_and_first_close_wins() -> None:
    assert targets("[[  Alpha  ]] [[A]]]]") == ["Alpha", "A"]


def test_wikilink_must_be_on_one_line() -> None:
    assert targets("[[Al\npha]]") == []


def test_inner_wikilink_wins() -> None:
    (link,) = scan_body("x [[a [[Beta]] y").links
    assert (link.target, link.raw) == ("Beta", "[[Beta]]")


def test_empty_wikilink_is_text() -> None:
    assert targets("[[]] [[ ]]") == []


def test_adjacent_wikilinks() -> None:
    assert targets("[[A]][[B]]") == ["A", "B"]


# --- rule 2: display ---


def test_alias_split_at_first_pipe() -> None:
    assert links("[[A|b|c]]") == [("A", "", "b|c", False)]


def test_table_escaped_pipe() -> None:
    assert links("| x | [[Note\\|alias]] |") == [("Note", "", "alias", False)]


def test_image_size_lands_in_alias() -> None:
    assert links("![[pic.png|100x50]]") == [("pic.png", "", "100x50", True)]


def test_display_without_alias_shows_subpath_chain() -> None:
    assert links("[[A#B#C]]") == [("A", "#B#C", "A > B > C", False)]


def test_split_wikilink_pipe_at_start_is_not_alias() -> None:
    assert split_wikilink("|x") == ("|x", "", "|x")


# --- rule 3: cleaning ---


def test_nbsp_and_nfc() -> None:
    assert targets("[[Cafe\u0301\u00a0]] [[a\u00a0b]]") == ["Café", "a b"]


def test_leading_slash_and_dots_kept() -> None:
    assert targets("[[/Top]] [[./Here]] [[../Up]]") == ["/Top", "./Here", "../Up"]


# --- rule 4: subpaths ---


def test_subpaths() -> None:
    assert links("[[#Heading]] [[#^id]] [[Note^id]] [[Doc.pdf#page=3]]") == [
        ("", "#Heading", "Heading", False),
        ("", "#^id", "^id", False),
        ("Note^id", "", "Note^id", False),
        ("Doc.pdf", "#page=3", "Doc.pdf > page=3", False),
    ]


# --- rule 5: Markdown links ---


def test_markdown_links_internal_only() -> None:
    body = (
        '[a](Alpha.md) [b](Beta) ![c](img/pic%20one.png) [d](<My Note.md> "title")\n'
        "[e](https://x.org/a.md) [f](mailto:a@b.c) [g](obsidian://open?x) [h](#anchor)\n"
        "[i](./sub/x:y.md) [j](50%.md) [k]()"
    )
    assert links(body) == [
        ("Alpha.md", "", "a", False),
        ("Beta", "", "b", False),
        ("img/pic one.png", "", "c", True),
        ("My Note.md", "", "d", False),
        ("", "#anchor", "h", False),
        ("./sub/x:y.md", "", "i", False),
    ]


def test_markdown_link_subpath_percent_decoded() -> None:
    assert links("[x](Note.md#My%20Heading)") == [("Note.md", "#My Heading", "x", False)]


def test_markdown_link_raw_and_reference_links() -> None:
    (a, b) = scan_body("see [t](A.md 'ti') and [ref]\n\n[ref]: B.md\n").links
    assert a.raw == "[t](A.md 'ti')"
    assert (b.target, b.kind) == ("B.md", "markdown")


def test_markdown_link_target_helper() -> None:
    assert markdown_link_target("a%2Fb.md") == ("a/b.md", "")
    assert markdown_link_target("%FF.md") is None
    assert markdown_link_target("C:/x.md") is None


# --- rule 9: where links count, and where they do not ---


def test_links_count_in_containers() -> None:
    body = (
        "# H [[InHeading]]\n\n"
        "- item [[InList]]\n- [ ] task [[InTask]]\n\n"
        "> [!note] Title\n> callout [[InCallout]]\n\n"
        "**bold [[InBold]]**\n\n"
        "text[^1]\n\n[^1]: note [[InFootnote]]\n"
    )
    assert targets(body) == [
        "InHeading",
        "InList",
        "InTask",
        "InCallout",
        "InBold",
        "InFootnote",
    ]


def test_footnote_definition_link_counted_once() -> None:
    assert targets("[^1]: [[Only]]\n") == ["Only"]


@pytest.mark.parametrize(
    "body",
    [
        "```\n[[A]] #a\n```\n",
        "~~~md\n[[A]] #a\n~~~\n",
        "    [[A]] #a\n",
        "x `[[A]] #a` y\n",
        "x ``a ` [[A]] #a`` y\n",
        "<div>\n[[A]] #a\n</div>\n",
        "<!-- [[A]] #a -->\n",
        "<!--\n\n[[A]] #a\n\n-->\n",
        "text <!-- [[A]] #a --> more\n",
        "\\[[A]] \\#a\n",
        "$$\n[[A]] #a\n$$\n",
        "x $[[A]] #a$ y\n",
    ],
)
def test_nothing_found_in_code_html_escapes_math(body: str) -> None:
    scan = scan_body(body)
    assert (scan.links, scan.tags) == ([], [])


def test_unclosed_fence_runs_to_end() -> None:
    assert targets("```\n[[A]]\n\n[[B]]\n") == []


def test_obsidian_comments_are_indexed() -> None:
    scan = scan_body("%% hidden [[A]] #secret %%\n\n%%\nblock [[B]]\n%%\n")
    assert [x.target for x in scan.links] == ["A", "B"]
    assert scan.tags == ["secret"]


# --- rule 12: tags ---


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("#tag", ["tag"]),
        ("a #tag b", ["tag"]),
        ("#1984", []),
        ("#y1984", ["y1984"]),
        ("#1984a", ["1984a"]),
        ("word#x", []),
        ("(#x)", []),
        ("C# is", []),
        ("##x", []),
        ("\\#x", []),
        ("https://example.com/page#frag", []),
        ("see #a/b/c", ["a/b/c"]),
        ("#snake_case #kebab-case", ["snake_case", "kebab-case"]),
        ("#end. #comma, #quote' #dash—x", ["end", "comma", "quote", "dash"]),
        ("#emoji🎉 #日本語", ["emoji🎉", "日本語"]),
        ("#a\u2026b", ["a"]),
        ("# heading", []),
        ("#NoSpace", ["NoSpace"]),
        ("- #inlist\n> #inquote\n> [!tip]\n> #incallout", ["inlist", "inquote", "incallout"]),
        ("[[Note#NotATag]]", []),
    ],
)
def test_inline_tags(body: str, expected: list[str]) -> None:
    assert tags(body) == expected


# --- rules 13, 14: headings ---


def test_atx_and_setext_headings() -> None:
    body = (
        "# One #\n"
        "   ## Two ##  \n"
        "####### seven\n"
        "#NoSpace\n\n"
        "Setext one\n===\n\n"
        "Setext two\n---\n"
        "> # quoted\n"
        "- # listed\n"
    )
    got = [(h.level, h.text, h.line) for h in scan_body(body).headings]
    assert got == [(1, "One", 1), (2, "Two", 2), (1, "Setext one", 6), (2, "Setext two", 9)]


def test_heading_text_is_raw_and_anchor_matches_rule_14() -> None:
    (h,) = scan_body("# A **bold** [[Link|x]]: #tag\n").headings
    assert h.text == "A **bold** [[Link|x]]: #tag"
    assert h.anchor == heading_anchor("a bold link x tag")
    assert heading_anchor("  Hello,  World! (v2.0)  ") == "hello world v2 0"
    assert heading_anchor("Line\nbreak") == "line break"
    assert heading_anchor("Keep-dash_and'quote") == "keep-dash_and'quote"


def test_headings_in_code_are_not_headings() -> None:
    assert scan_body("```\n# no\n```\n").headings == []


# --- rule 15: block ids ---


def test_block_ids() -> None:
    body = (
        "A paragraph. ^para-1\n\n"
        "- item ^item1\n- other\n\n"
        "> quote\n\n^quote-id\n\n"
        "| a | b |\n| - | - |\n^table\n\n"
        "not^inword\n\n"
        "middle ^mid text\n\n"
        "```\ncode ^code\n```\n"
    )
    got = [(b.id, b.line) for b in scan_body(body).blocks]
    assert got == [("para-1", 1), ("item1", 3), ("quote-id", 8), ("table", 12)]


def test_block_id_chars() -> None:
    assert [b.id for b in scan_body("x ^AbC-9\n\ny ^a_b\n").blocks] == ["AbC-9"]


# --- rule 16: Dataview inline fields ---


def test_dataview_fields() -> None:
    body = (
        "Key:: [[X]], [[Y]]\n\n"
        "- **Due Date**:: [[Z]]\n"
        "- [ ] task:: [[NotField]]\n\n"
        "text [rel:: [[A]]] and (Other Key:: [b](B.md)) and [[Plain]]\n\n"
        "single: [[Colon]]\n"
    )
    got = [(x.target, x.kind, x.relation) for x in scan_body(body).links]
    assert got == [
        ("X", "field", "key"),
        ("Y", "field", "key"),
        ("Z", "field", "due-date"),
        ("NotField", "wikilink", None),
        ("A", "field", "rel"),
        ("B.md", "field", "other-key"),
        ("Plain", "wikilink", None),
        ("Colon", "wikilink", None),
    ]


def test_field_key_canonical() -> None:
    assert field_key("**Due  Date**") == "due-date"
    assert field_key("snake_key") == "snake_key"


# --- lines ---


def test_lines_in_nested_containers() -> None:
    body = (
        "intro\n"  # 1
        "\n"  # 2
        "- a [[L3]]\n"  # 3
        "  - nested\n"  # 4
        "    [[L5]]\n"  # 5
        "- \n"  # 6
        "  [[L7]]\n"  # 7
        "\n"  # 8
        "> q\n"  # 9
        "> > [[L10]]\n"  # 10
        "lazy [[L11]]\n"  # 11
        "\n"  # 12
        "1. one\n"  # 13
        "2. two\n"  # 14
        "   > [[L15]]\n"  # 15
        "\n"  # 16
        "para\n"  # 17
        "more `code\n"  # 18
        "span` [[L19]]\n"  # 19
    )
    assert [(x.target, x.line) for x in scan_body(body, 1).links] == [
        ("L3", 3),
        ("L5", 5),
        ("L7", 7),
        ("L10", 10),
        ("L11", 11),
        ("L15", 15),
        ("L19", 19),
    ]


def test_first_line_offset() -> None:
    assert [x.line for x in scan_body("\n[[A]]\n", 10).links] == [11]


# --- sections ---


def test_sections() -> None:
    body = "\nintro\n\n# One\n\ntext 1\n\n## Two\ntext 2\n\nSet\n---\nlast\n"
    got = [(s.heading, s.level, s.line, s.text) for s in scan_body(body, 5).sections]
    assert got == [
        (None, 0, 6, "intro"),
        ("One", 1, 8, "text 1"),
        ("Two", 2, 12, "text 2"),
        ("Set", 2, 15, "last"),
    ]


def test_empty_leading_section_omitted() -> None:
    got = [(s.heading, s.text) for s in scan_body("\n\n# A\n").sections]
    assert got == [("A", "")]


# --- issue 18: Obsidian fidelity round 2 ---


# Point 5. CommonMark 0.30 §5.1 (block quotes): only paragraph continuation text can be lazy,
# and an ATX heading can never be paragraph continuation (§4.2), so `# After` right under a
# quote or callout line is a heading (spec rule 19). mistune 3 continued the quote lazily.
@pytest.mark.parametrize(
    "body",
    [
        "> [!note] x\n> body\n# After\ntext\n",
        "> quote\n# After\ntext\n",
        ">quote\n> > nested\n# After\ntext\n",
    ],
)
def test_heading_right_after_a_quote_line(body: str) -> None:
    scan = scan_body(body)
    assert [(h.level, h.text, h.line) for h in scan.headings] == [
        (1, "After", body.count("\n") - 1)
    ]
    assert [s.heading for s in scan.sections] == [None, "After"]
    assert scan.sections[1].text == "text"


def test_text_right_after_a_quote_line_is_still_lazy() -> None:
    # the laziness CommonMark keeps: a paragraph line continues the quote; `#tag` is no heading
    scan = scan_body("> quote\nmore #tag\n")
    assert scan.headings == [] and scan.tags == ["tag"]


# Point 6. Spec rule 15, and the help vault's own `![[image.png]]^id` embeds (33 links in it
# point at such ids): a block id may follow a closing `]]` with no space.
@pytest.mark.parametrize("body", ["![[image.png]]^fig-1\n", "see [[Other]]^fig-1\n"])
def test_block_id_right_after_a_link(body: str) -> None:
    scan = scan_body(body)
    assert [b.id for b in scan.blocks] == ["fig-1"]
    assert len(scan.links) == 1 and scan.links[0].target in ("image.png", "Other")


def test_block_id_glued_to_a_word_is_not_one() -> None:
    assert scan_body("word^id\n").blocks == []


# Issue 16: a run of wikilink openers without a closer used to rescan the rest of the line at
# every opener (40 KB took 10 s, 200 KB 176 s). The timeout is a hang guard, not a timing.
@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("run", ["[[", "[", "![[", "[[a|", "[[x]", "[a", "![a", "[[a]b "])
def test_bracket_runs_parse_in_linear_time(run: str) -> None:
    body = run * (200_000 // len(run)) + " [[End]]\n"
    assert targets(body)[-1] == "End"

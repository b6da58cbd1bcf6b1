"""Obsidian-flavoured Markdown: one mistune pass that finds headings, block ids, links and tags.

This module owns the body grammar of a note (spec rules 1–5, 9, 12–16 in
docs/note-model.md). A single module-level mistune 3 instance parses the block
structure; custom inline rules recognise wikilinks and embeds, inline `#tags` and math (so
`$…$` hides tags), and a wrapper around mistune's link closer records Markdown links with
their source position. mistune tokens carry no line numbers, so a `BlockState` subclass stamps
every block token with its absolute line as it is created, and child states (quotes, list
items) learn the line their source starts on; inline rules add the newlines they pass.
Everything mistune treats as code, HTML or an escape is skipped for free, which is how
rule 9's exclusions hold. `%%comments%%` need no rule: Obsidian indexes their links and tags,
so they are parsed like any other text. The block parser also takes three shortcuts around
mistune's per-block costs (scanners that search line starts only, the list-item break
scanner built once per indent, indented code ruled out by a block's first character), each
proved to give mistune's own result by tests/note/test_parse_shortcut.py. No I/O happens here.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable
from re import Match
from typing import Any, NamedTuple, cast
from urllib.parse import unquote_to_bytes

from mistune import Markdown
from mistune.block_parser import BlockParser
from mistune.core import BlockState, InlineState
from mistune.inline_parser import InlineParser

from vaultmem.core.compat import (
    LinkHrefScanner,
    ListBreakScanner,
    replace_link_href,
    replace_list_break_scanner,
)
from vaultmem.core.models import LinkKind
from vaultmem.core.note_model import Block, Heading, Link, Section

__all__ = [
    "BodyScan",
    "clean_link_path",
    "field_key",
    "heading_anchor",
    "is_valid_tag",
    "markdown_link_target",
    "property_link",
    "scan_body",
    "split_wikilink",
]

# --- rule 14: heading match key ------------------------------------------------------------

_HEADING_STRIP = re.compile(r"[!\"#$%&()*+,.:;<=>?@^`{|}~/\[\]\\\r\n]")
_SPACES = re.compile(r"\s+")


def heading_anchor(text: str) -> str:
    """Obsidian's match key for a heading or a `#Heading` subpath part (spec rule 14).

    The listed punctuation and line breaks become spaces (as Obsidian's `stripHeading` does),
    whitespace collapses, the result is trimmed and lower-cased. No slugs.
    """
    return _SPACES.sub(" ", _HEADING_STRIP.sub(" ", text)).strip().lower()


# --- rule 12: tags ---------------------------------------------------------------------------

# Tag characters: not whitespace, not ASCII punctuation other than - _ /, not in the general
# punctuation (U+2000–U+206F) or supplemental punctuation (U+2E00–U+2E7F) blocks.
_TAG_CHARS = r"[^\s!-,.:-@\[-\^`{-~\u2000-\u206f\u2e00-\u2e7f]+"
_TAG_FULL = re.compile(_TAG_CHARS)
_ALL_DIGITS = re.compile(r"[0-9]+")


def is_valid_tag(tag: str) -> bool:
    """True when `tag` (without `#`) could be written inline: allowed characters, not all digits."""
    return bool(_TAG_FULL.fullmatch(tag)) and not _ALL_DIGITS.fullmatch(tag)


# --- rules 2–5: link text --------------------------------------------------------------------


def clean_link_path(text: str) -> str:
    """Rule 3: no-break spaces become spaces, then trim, then Unicode NFC."""
    return unicodedata.normalize("NFC", text.replace("\xa0", " ").strip())


def _clean_subpath(text: str) -> str:
    return unicodedata.normalize("NFC", text.replace("\xa0", " ").rstrip())


def _split_subpath(linkpath: str) -> tuple[str, str]:
    """Rule 4: the subpath starts at the first `#` and keeps it; "" when there is none."""
    hash_at = linkpath.find("#")
    if hash_at < 0:
        return clean_link_path(linkpath), ""
    return clean_link_path(linkpath[:hash_at]), _clean_subpath(linkpath[hash_at:])


def _derived_display(target: str, subpath: str) -> str:
    # Rule 2: with no alias Obsidian shows the link text with each `#` as ` > `.
    parts = [target, *subpath.split("#")[1:]] if subpath else [target]
    return " > ".join(p.strip() for p in parts if p.strip())


def split_wikilink(contents: str) -> tuple[str, str, str] | None:
    """Split the inside of `[[...]]` into (target, subpath, display); None if it is no link.

    Rule 2: split at the first `|` not at position 0; a trailing `\\` on the target (tables)
    is dropped; without an alias the display is derived (`A > B`).
    """
    contents = contents.strip()
    if not contents:
        return None
    bar = contents.find("|", 1)
    alias: str | None = None
    linkpath = contents
    if bar > 0:
        linkpath, alias = contents[:bar].rstrip(), contents[bar + 1 :].strip()
    if linkpath.endswith("\\"):
        linkpath = linkpath[:-1]
    target, subpath = _split_subpath(linkpath)
    if not target and not subpath:
        return None
    display = alias if alias else _derived_display(target, subpath)
    return target, subpath, display


_PCT_BAD = re.compile(r"%(?![0-9A-Fa-f]{2})")


def markdown_link_target(url: str) -> tuple[str, str] | None:
    """Rule 5 and 3 for a Markdown link destination: (target, subpath), or None if external.

    Internal means no `:` (no scheme) or a leading `./`/`../`. The destination is
    percent-decoded; a destination that does not decode (`50%.md`) is not a link.
    """
    url = url.strip()
    if not url:
        return None
    if ":" in url and not url.startswith(("./", "../")):
        return None
    if _PCT_BAD.search(url):
        return None
    try:
        decoded = unquote_to_bytes(url).decode("utf-8")
    except UnicodeDecodeError:
        return None
    target, subpath = _split_subpath(decoded)
    if not target and not subpath:
        return None
    return target, subpath


_PROPERTY_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^<>\n]*>|[^\s()<>]*)(?:\s+[^\n]*)?\)")


def property_link(value: str, relation: str, line: int) -> Link | None:
    """Rule 8: a frontmatter string that is exactly one `[[...]]` (or `[t](x)`) is a link."""
    text = value.strip()
    if text.startswith("[[") and text.endswith("]]"):
        contents = text[2:-2]
        if "]]" in contents:
            return None  # "[[a]] and [[b]]" is text, not one link
        inner = contents.rfind("[[")
        if inner >= 0:
            contents = contents[inner + 2 :]
        parts = split_wikilink(contents)
        if parts is None:
            return None
        return Link(parts[0], parts[1], parts[2], False, line, "property", relation, value)
    m = _PROPERTY_MD_LINK.fullmatch(text)
    if m is None:
        return None
    dest = m.group(3)
    if dest.startswith("<"):
        dest = dest[1:-1]
    found = markdown_link_target(dest)
    if found is None:
        return None
    display = m.group(2).strip() or None
    return Link(found[0], found[1], display, m.group(1) == "!", line, "property", relation, value)


# --- rule 16: Dataview inline fields -----------------------------------------------------------

_FIELD_KEY = r"[^:\[\]()\n`|]+?"
_FIELD_LINE = re.compile(r"^[ \t]*(?P<key>" + _FIELD_KEY + r")::(?P<value>[^\n]*)$", re.M)
_FIELD_VALUE = r"(?:\[\[[^\n]*?\]\]|\[[^\[\]\n]*\]\([^()\n]*\)|[^\[\]()\n])*"
_FIELD_INLINE = re.compile(
    r"\[(?P<k1>" + _FIELD_KEY + r")::" + _FIELD_VALUE + r"\]"
    r"|\((?P<k2>" + _FIELD_KEY + r")::" + _FIELD_VALUE + r"\)"
)
_FORMATTING = re.compile(r"[*~=`]+|(?<![^\W_])_+|_+(?![^\W_])")


def field_key(raw: str) -> str:
    """Dataview's canonical key: formatting stripped, lower-cased, whitespace runs to `-`."""
    return _SPACES.sub("-", _FORMATTING.sub("", raw).strip()).lower()


class _FieldSpans:
    """Where Dataview fields lie in one text, for "is this link inside a field?" in log time.

    Inline fields (`[key:: value]`, `(key:: value)`) come first: a link inside one belongs to
    it even when its line is also a line field. Each kind's spans are disjoint and sorted, so a
    position is looked up by bisection; a scan of every span per link made a note of 20,000
    `fN:: [[xN]]` lines quadratic (22 s).
    """

    __slots__ = ("_inline", "_inline_starts", "_line", "_line_starts")

    def __init__(self, text: str) -> None:
        self._inline: list[tuple[int, int, str]] = []
        for m in _FIELD_INLINE.finditer(text):
            if key := field_key(m.group("k1") or m.group("k2")):
                self._inline.append((m.start(), m.end(), key))
        self._inline_starts = [start for start, _, _ in self._inline]
        self._line: list[tuple[int, int, str]] = []
        for m in _FIELD_LINE.finditer(text):
            key = field_key(m.group("key"))
            # an inline field already covers its own links; a line field must be a whole line
            if key and self._inline_at(m.start("key")) is None:
                self._line.append((m.start(), m.end(), key))
        self._line_starts = [start for start, _, _ in self._line]

    def _inline_at(self, pos: int) -> str | None:
        return _span_at(self._inline, self._inline_starts, pos)

    def key_at(self, pos: int) -> str | None:
        """The key of the field `pos` lies in, inline fields first; None outside every field."""
        key = self._inline_at(pos)
        return key if key is not None else _span_at(self._line, self._line_starts, pos)


def _span_at(spans: list[tuple[int, int, str]], starts: list[int], pos: int) -> str | None:
    """The key of the span holding `pos` among disjoint spans sorted by start."""
    index = bisect.bisect_right(starts, pos) - 1
    if index >= 0 and pos < spans[index][1]:
        return spans[index][2]
    return None


# --- the mistune instance ----------------------------------------------------------------------


class _Collector:
    """Per-call sink for what inline rules find; lives in the mistune env under `vm`."""

    __slots__ = ("_cline", "_cpos", "base", "fields", "found", "src", "tags")

    def __init__(self) -> None:
        self.found: list[tuple[int, Link]] = []
        self.tags: list[tuple[str, int]] = []
        self.fields: _FieldSpans | None = None
        self.src = ""
        self.base = 1
        self._cpos = 0
        self._cline = 1

    def start(self, src: str, base: int) -> None:
        self.src, self.base, self._cpos, self._cline = src, base, 0, base
        self.fields = _FieldSpans(src) if "::" in src else None
        self.found = []

    def line_of(self, pos: int) -> int:
        # inline rules fire in increasing position, so count only the newly passed newlines
        if pos < self._cpos:
            self._cpos, self._cline = 0, self.base
        self._cline += self.src.count("\n", self._cpos, pos)
        self._cpos = pos
        return self._cline

    def add_link(
        self,
        pos: int,
        target: str,
        subpath: str,
        display: str | None,
        embed: bool,
        kind: LinkKind,
        raw: str,
    ) -> None:
        relation = self.fields.key_at(pos) if self.fields is not None else None
        if relation is not None:
            kind = "field"
        link = Link(target, subpath, display, embed, self.line_of(pos), kind, relation, raw)
        self.found.append((pos, link))


def _collector(state: InlineState) -> _Collector:
    return cast(_Collector, state.env["vm"])


# Rule 1: a wikilink closes at the first `]]` on its line. The contents may not hold another `[[`:
# the lazy `[^\n]*?\]\]` this replaces rescanned the rest of the line at every opener of a run
# (`[[[[…` without `]]`: 200 KB took minutes). Stopping at the next `[[` bounds every scan by the
# next opener, so a line costs linear time; the inner `[[Beta]]` of `[[a [[Beta]]` then matches
# on its own, which is rule 1's "only the inner link counts".
_WIKILINK = r"!?\[\[(?:[^\n\[\]]|\[(?!\[)|\](?!\]))*\]\]"


def _parse_wikilink(inline: InlineParser, m: Match[str], state: InlineState) -> int | None:
    raw = m.group(0)
    embed = raw.startswith("!")
    contents = raw[3:-2] if embed else raw[2:-2]
    parts = split_wikilink(contents)
    if parts is None:
        return None
    _collector(state).add_link(m.start(), parts[0], parts[1], parts[2], embed, "wikilink", raw)
    state.append_token({"type": "wikilink", "raw": raw})
    return m.end()


_TAG = r"(?<![^\s])#(?P<vm_tag_name>" + _TAG_CHARS + ")"


def _parse_tag(inline: InlineParser, m: Match[str], state: InlineState) -> int | None:
    tag = m.group("vm_tag_name")
    if _ALL_DIGITS.fullmatch(tag):
        return None  # `#1984` is text
    col = _collector(state)
    col.tags.append((tag, col.line_of(m.start())))
    state.append_token({"type": "tag", "raw": m.group(0)})
    return m.end()


# `$$…$$` may span lines inside a paragraph; `$…$` must hug its content and not precede a digit
_INLINE_MATH = r"\$\$(?:\\.|[^\\$])+?\$\$|\$(?=[^\s$])(?:\\.|[^\\$\n])+?(?<=\S)\$(?!\d)"


def _parse_inline_math(inline: InlineParser, m: Match[str], state: InlineState) -> int:
    state.append_token({"type": "inline_math", "raw": m.group(0)})
    return m.end()


def _plain(tokens: Iterable[dict[str, Any]]) -> str:
    out: list[str] = []
    for tok in tokens:
        if "children" in tok:
            out.append(_plain(tok["children"]))
        elif isinstance(tok.get("raw"), str):
            out.append(tok["raw"])
        elif tok["type"] in ("softbreak", "linebreak"):
            out.append(" ")
    return "".join(out)


def _parse_link_close(inline: InlineParser, m: Match[str], state: InlineState) -> int:
    # each `]` of the match closes or retires at most one opener, the innermost first: only the
    # last len(match) openers can make this link (all of them made a run of `[` quadratic)
    openers = {b.token_index: b for b in state.brackets[-len(m.group(0)) :]}
    end = inline.parse_link_close(m, state)
    if not state.tokens:
        return end
    tok = state.tokens[-1]
    if tok["type"] in ("link", "image") and "_vm" not in tok:
        tok["_vm"] = True
        opener = openers.get(len(state.tokens) - 1)
        url = tok["attrs"].get("url")
        found = markdown_link_target(url) if opener is not None and url else None
        if opener is not None and found is not None:
            start = opener.start - (2 if opener.image else 1)
            display = _plain(tok["children"]).strip() or None
            _collector(state).add_link(
                start,
                found[0],
                found[1],
                display,
                opener.image,
                "markdown",
                state.src[start:end],
            )
    return end


_LIST_MARKER_ONLY = re.compile(r"[ \t]*(?:[*+-]|[0-9]{1,9}[.)])[ \t]*(?:\n|$)")


class _State(BlockState):
    """A BlockState that stamps each token with its absolute 1-based line (`_line`)."""

    def __init__(self, parent: Any | None = None) -> None:
        super().__init__(parent)
        self.line_base = 1
        self.starts: list[int] = []
        self.rule_names: list[str] = []
        self.item_pos = 0
        self._cpos = 0
        self._cline = 1

    def line_at(self, pos: int) -> int:
        if pos < self._cpos:
            self._cpos, self._cline = 0, self.line_base
        self._cline += self.src.count("\n", self._cpos, pos)
        self._cpos = pos
        return self._cline

    def _start(self) -> int:
        # inside a rule dispatch the block starts where the rule matched; the fast
        # indented-code path appends without dispatch, at the cursor
        return self.starts[-1] if self.starts else self.cursor

    def append_token(self, token: dict[str, Any]) -> None:
        if "_line" not in token:
            token["_line"] = self.line_at(self._start())
        self.tokens.append(token)

    def prepend_token(self, token: dict[str, Any]) -> None:
        if "_line" not in token:
            token["_line"] = self.line_at(self._start())
        self.tokens.insert(len(self.tokens) - 1, token)

    # mistune merges text into the last paragraph even when a block quote was slipped in
    # before it (`prepend_token`), which joins non-adjacent lines; `_end` records where a
    # paragraph's text stops so only adjacent text continues it.
    def _open_paragraph(self) -> dict[str, Any] | None:
        last = self.last_token()
        if last and last["type"] == "paragraph" and last.get("_end") == self.cursor:
            return cast(dict[str, Any], last)
        return None

    def add_paragraph(self, text: str) -> None:
        last = self._open_paragraph()
        if last is not None:
            last["text"] += text
            last["_end"] += len(text)
        else:
            line = self.line_at(self.cursor)
            end = self.cursor + len(text)
            self.tokens.append({"type": "paragraph", "text": text, "_line": line, "_end": end})

    def append_paragraph(self) -> int | None:
        last = self._open_paragraph()
        if last is None:
            return None
        pos = self.find_line_end()
        last["text"] += self.get_text(pos)
        last["_end"] = pos
        return pos

    def child_state(self, src: str, lazy_line_starts: set[int] | None = None) -> BlockState:
        child = cast(_State, super().child_state(src, lazy_line_starts))
        rule = self.rule_names[-1] if self.rule_names else ""
        if rule == "list":
            # list items are parsed one after another; each child starts at its marker line,
            # or the line after it when the marker line holds no text
            base = self.line_at(self.item_pos)
            if _LIST_MARKER_ONLY.match(self.src, self.item_pos):
                base += 1
            self.item_pos = self.src.rfind("\n", 0, max(self.cursor - 1, 0)) + 1
        else:
            base = self.line_at(self._start())
        child.line_base = child._cline = base
        return child


# The rules that end a block quote's lazy continuation in mistune 3 (`extract_block_quote`).
# CommonMark (0.30, §5.1, "laziness" applies to paragraph continuation text only) and Obsidian
# also end it at an ATX heading: `> quote` then `# After` is a quote and a heading.
_QUOTE_BREAK_RULES = ("blank_line", "thematic_break", "fenced_code", "list", "block_html")


LINE_START_SEARCH = True
"""Block scanners look for the next block at line starts only (`_LineStartScanner`);
tests/note/test_parse_shortcut.py proves the models are identical either way."""


class _LineStartScanner:
    """A block scanner (what `compile_sc` gives) whose `search` tries the line starts only.

    Every block rule is anchored at a line start (`^`, multi-line; a test checks each rule), so
    the leftmost match is the first line start where the pattern matches. The regex engine's
    own search tries every character against each of a dozen rules: when a paragraph does not
    open like plain text (a backtick, a `[`, `**`), mistune searches for its end that way, ~30
    µs a paragraph, several times per note. `match` is the pattern's own (no Python frame)."""

    __slots__ = ("_pattern", "match")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._pattern = pattern
        self.match = pattern.match

    def search(self, string: str, pos: int = 0) -> Match[str] | None:
        if not LINE_START_SEARCH:
            return self._pattern.search(string, pos)
        match, find = self.match, string.find
        if pos > 0 and string[pos - 1] != "\n":
            pos = find("\n", pos) + 1  # `^` holds at line starts only
            if pos == 0:
                return None
        while True:
            m = match(string, pos)
            if m is not None:
                return m
            pos = find("\n", pos) + 1
            if pos == 0:
                return None


class _BlockParser(BlockParser):
    state_cls = _State

    def __init__(self) -> None:
        self._scanners: dict[tuple[str, ...] | None, _LineStartScanner] = {}
        self._list_breaks: dict[int, re.Pattern[str]] = {}
        super().__init__()

    def compile_sc(self, rules: list[str] | None = None) -> re.Pattern[str]:
        key = tuple(rules) if rules is not None else None
        scanner = self._scanners.get(key)
        if scanner is None:
            if rules is not None and key == _QUOTE_BREAK_RULES:
                rules = [*rules, "atx_heading"]
            scanner = self._scanners[key] = _LineStartScanner(super().compile_sc(rules))
        # mistune calls only `match` and `search(string, pos)` on a block scanner
        return cast(re.Pattern[str], scanner)

    def _parse_indent_code_fast(self, state: BlockState) -> int | None:
        # mistune slices the line at every block start to test it for indented code, which
        # needs a space or a tab first (`_is_indent_code_line`): test that character alone.
        # Overrides a private method of mistune's (core/compat.py).
        if state.src[state.cursor : state.cursor + 1] not in (" ", "\t"):
            return None
        return super()._parse_indent_code_fast(state)

    def register(self, *args: Any, **kwargs: Any) -> None:
        self._scanners.clear()  # as mistune drops its compiled scanners
        self._list_breaks.clear()
        super().register(*args, **kwargs)

    def parse_method(self, m: Match[str], state: BlockState) -> int | None:
        st = cast(_State, state)
        name = m.lastgroup or ""
        st.starts.append(m.start())
        st.rule_names.append(name)
        # a rule dispatched while a list is open (a quote ending an item can itself dispatch
        # a list) must not move that list's item cursor
        saved_item = st.item_pos
        if name == "list":
            st.item_pos = m.start()
        try:
            return super().parse_method(m, state)
        finally:
            st.starts.pop()
            st.rule_names.pop()
            st.item_pos = saved_item


def _cached_list_breaks(plain: ListBreakScanner) -> ListBreakScanner:
    """mistune's scanner for what ends a list item, built once per indent for our parser.

    mistune builds it for every list item: a regex source of ~1,500 characters from the
    rules, then `re.compile`'s cache lookup, which hashes that new string. The pattern depends
    only on the parser's rules and the indent, and ours change only through `register`, which
    empties the cache. Other parsers (a plain mistune `Markdown`) still take mistune's own
    function (`plain`). A private hook of mistune's: core/compat.py."""

    def scanner(block: BlockParser, leading_width: int) -> re.Pattern[str]:
        if not isinstance(block, _BlockParser):
            return cast(re.Pattern[str], plain(block, leading_width))
        breaks = block._list_breaks
        sc = breaks.get(leading_width)
        if sc is None:
            sc = breaks[leading_width] = plain(block, leading_width)
        return cast(re.Pattern[str], sc)

    return scanner


_plain_list_break_sc, _list_break_sc = replace_list_break_scanner(_cached_list_breaks)

# A destination's run of characters mistune's loop only steps over: no white space, parenthesis,
# backslash or control character (each of which it treats apart).
_PLAIN_HREF = re.compile(r"[^ \t\n\r\f()\\\x00-\x1f\x7f]+")
_HREF_ENDS = frozenset(" \t\n\r\f)")


def _fast_link_href(plain: LinkHrefScanner) -> LinkHrefScanner:
    """mistune's scanner of a link destination, `[t](dest)` and `[ref]: dest`, with the usual
    destination taken in one regex match.

    mistune steps through a destination one character at a time in Python (a third of
    obsidian-hub's parse, whose notes link to long URLs). A destination that starts with a
    character of `_PLAIN_HREF` other than `<` and whose run of them ends the text or meets
    white space or `)` is exactly what that loop returns: it has nothing to skip, no level to
    count and nothing to refuse. Every other one (`<...>`, leading white space, a parenthesis,
    an escape, a control character) goes to mistune's own (`plain`). A private hook of
    mistune's: core/compat.py; tests/note/test_parse_shortcut.py compares the two."""

    def scanner(
        src: str, start_pos: int, block: bool = False, **kwargs: Any
    ) -> tuple[Any, Any, int]:
        run = _PLAIN_HREF.match(src, start_pos)
        if run is not None and src[start_pos] != "<":
            end = run.end()
            if end == len(src) or src[end] in _HREF_ENDS:
                return src[start_pos:end], end, end
        return plain(src, start_pos, block, **kwargs)

    return scanner


_plain_link_href, _link_href = replace_link_href(_fast_link_href)


_FOOTNOTE_DEF = r"^ {0,3}\[\^[^\]\n]+\]:(?P<vm_fn_text>[^\n]*)$"


def _parse_footnote_def(block: BlockParser, m: Match[str], state: BlockState) -> int:
    # rule 9: links in footnote definitions count (once); without this rule mistune would
    # read `[^1]: [[X]]` as a link reference definition and drop the link
    state.append_token({"type": "paragraph", "text": m.group("vm_fn_text") + "\n"})
    return m.end() + 1


_BLOCK_MATH = r"^ {0,3}\$\$"


def _parse_block_math(block: BlockParser, m: Match[str], state: BlockState) -> int | None:
    close = state.src.find("$$", m.end())
    if close < 0:
        return None
    end = state.find_line_end_at(close)
    if state.src[close + 2 : end].strip():
        return None  # text after the closing `$$`: leave it to the paragraph rules
    state.append_token({"type": "block_math", "raw": state.src[m.end() : close]})
    return end


class _InlineParser(InlineParser):
    # Emphasis and line breaks change no link, tag or line, and emphasis resolution was the
    # largest single cost in profiles; `*`, `_` and newlines stay plain text.
    DEFAULT_RULES = tuple(  # type: ignore[assignment]
        r for r in InlineParser.DEFAULT_RULES if r not in ("emphasis", "linebreak")
    )

    def __init__(self) -> None:
        self._vm_trigger: tuple[set[str], re.Pattern[str]] | None = None
        super().__init__()
        if "softbreak" in self.rules:
            self.rules.remove("softbreak")

    def finalize_tokens(self, tokens: list[dict[str, Any]], depth: int) -> list[dict[str, Any]]:
        return tokens  # no emphasis to resolve; the token list is only read for link text

    def _get_fast_trigger_re(self, chars: set[str]) -> re.Pattern[str]:
        # mistune sorts the trigger characters into a key at every text position to check its
        # cached pattern; the set is built once and replaced (not changed) when a rule is
        # registered, so the pattern made for this very set object is still the right one
        made = self._vm_trigger
        if made is not None and made[0] is chars:
            return made[1]
        trigger = super()._get_fast_trigger_re(chars)  # mistune's private hook: core/compat.py
        self._vm_trigger = (chars, trigger)
        return trigger


def _build() -> Markdown:
    block = _BlockParser()
    inline = _InlineParser()
    md = Markdown(renderer=None, block=block, inline=inline)
    for name, pattern, func in (
        ("vm_footnote_def", _FOOTNOTE_DEF, _parse_footnote_def),
        ("vm_block_math", _BLOCK_MATH, _parse_block_math),
    ):
        block.register(name, pattern, func, before="ref_link")
        for rules in (block.block_quote_rules, block.list_rules):
            block.insert_rule(rules, name, before="ref_link")
    inline.register(
        "vm_wikilink", _WIKILINK, _parse_wikilink, before="link", start_chars=("[", "!")
    )
    inline.register("vm_math", _INLINE_MATH, _parse_inline_math, before="link", start_chars="$")
    inline.register("vm_tag", _TAG, _parse_tag, before="link", start_chars="#")
    inline.register(
        "link_close",
        InlineParser.SPECIFICATION["link_close"],
        _parse_link_close,
        start_chars="]",
    )
    return md


_MD = _build()


# --- the body scan -----------------------------------------------------------------------------


class BodyScan(NamedTuple):
    """What one pass over a note body finds, in document order."""

    headings: list[Heading]
    blocks: list[Block]
    links: list[Link]
    tags: list[str]
    sections: list[Section]


SKIP_PLAIN_PARAGRAPHS = True
"""The cheap path: a paragraph with no `[` and no `#` holds no link or tag, so its inline parse
is skipped. tests/note/test_parse_shortcut.py proves the models are identical either way."""

# Rule 15: after whitespace, at a line start, or right after a link or embed (`![[a.png]]^id`)
_BLOCK_ID = re.compile(r"(?:^|[ \t]|(?<=\]\]))\^([A-Za-z0-9-]+)[ \t]*$", re.M)


def _block_id(text: str, start: int) -> Match[str] | None:
    # most last lines hold no `^`: one C-level find skips the regex (run once per paragraph)
    if text.find("^", start) < 0:
        return None
    return _BLOCK_ID.search(text, start)


_INLINE_STRIP = " \t\f\n"


class _Walker:
    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.col = _Collector()
        env["vm"] = self.col
        self.headings: list[Heading] = []
        self.blocks: list[Block] = []
        self.links: list[Link] = []
        self.tags: list[str] = []
        # (start line, last line, level, text) of each top-level heading, for sections
        self.cuts: list[tuple[int, int, int, str]] = []

    def inline(self, text: str, line: int) -> str:
        stripped = text.lstrip(_INLINE_STRIP)
        line += text.count("\n", 0, len(text) - len(stripped))
        stripped = stripped.rstrip(_INLINE_STRIP)
        if SKIP_PLAIN_PARAGRAPHS and "[" not in stripped and "#" not in stripped:
            # every link needs a `[` and every tag a `#`: nothing to find, skip the parse
            return stripped
        col = self.col
        col.start(stripped, line)
        _MD.inline(stripped, self.env)
        if col.found:
            col.found.sort(key=lambda item: item[0])
            self.links.extend(link for _, link in col.found)
        self.tags.extend(tag for tag, _ in col.tags)
        col.tags.clear()
        return stripped

    def walk(self, tokens: list[dict[str, Any]], top: bool) -> None:
        for tok in tokens:
            kind = tok["type"]
            if kind in ("paragraph", "block_text"):
                line = tok["_line"]
                text = self.inline(tok["text"], line)
                last_nl = text.rfind("\n")
                m = _block_id(text, last_nl + 1)
                if m:
                    self.blocks.append(Block(m.group(1), line + text.count("\n")))
            elif kind == "heading":
                line = tok["_line"]
                raw = tok["text"]
                self.inline(raw, line)
                if top:
                    level = tok["attrs"]["level"]
                    text = raw.strip()
                    last = line
                    if tok.get("style") == "setext":
                        last = line + raw.rstrip("\n").count("\n") + 1
                    self.headings.append(Heading(level, text, line, heading_anchor(text)))
                    self.cuts.append((line, last, level, text))
            elif "children" in tok:
                self.walk(tok["children"], False)


def _sections(body: str, first_line: int, cuts: list[tuple[int, int, int, str]]) -> list[Section]:
    lines = body.split("\n")
    out: list[Section] = []

    def add(heading: str | None, level: int, line: int, lo: int, hi: int) -> None:
        # lo..hi are absolute line numbers, inclusive; trim blank lines at both ends
        part = lines[max(lo - first_line, 0) : max(hi - first_line + 1, 0)]
        start = 0
        while start < len(part) and not part[start].strip():
            start += 1
        end = len(part)
        while end > start and not part[end - 1].strip():
            end -= 1
        text = "\n".join(part[start:end])
        if heading is None:
            if not text:
                return  # no empty leading section
            line = lo + start
        out.append(Section(heading, level, line, text))

    last_line = first_line + len(lines) - 1
    first_cut = cuts[0][0] if cuts else last_line + 1
    add(None, 0, first_line, first_line, first_cut - 1)
    for i, (line, end, level, text) in enumerate(cuts):
        nxt = cuts[i + 1][0] - 1 if i + 1 < len(cuts) else last_line
        add(text, level, line, end + 1, nxt)
    return out


def scan_body(body: str, first_line: int = 1) -> BodyScan:
    """Parse a note body (LF line endings, frontmatter already removed) in one mistune pass.

    `first_line` is the absolute line number of the body's first line, so every line in the
    result is a line of the file. Tags come without `#`, in body order, not deduplicated.
    """
    src = body if body.endswith("\n") else body + "\n"
    state = cast(_State, _MD.block.state_cls())
    state.process(src)
    state.line_base = state._cline = first_line
    _MD.block.parse(state)
    walker = _Walker(cast(dict[str, Any], state.env))
    walker.walk(state.tokens, True)
    sections = _sections(body, first_line, walker.cuts)
    return BodyScan(walker.headings, walker.blocks, walker.links, walker.tags, sections)

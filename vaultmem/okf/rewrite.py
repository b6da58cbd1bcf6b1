"""Body rewriting between vault Markdown and OKF Markdown; pure, no I/O.

Export: `%%comments%%` are dropped, wikilinks and embeds become bundle-rooted Markdown links
(or plain text when the target is not in the bundle), internal Markdown links likewise.
Import: bundle links (rooted or relative) to concepts become wikilinks to their topic keys, and
structural markers a topic parser would obey (`## <timestamp>` headings, `<!-- id: … -->`
headers, `## See Also`) are escaped unless the `vaultmem:` block declares them.
Code (fenced, indented by a fence, inline) and HTML comments are left untouched throughout,
as Obsidian does not parse links there either (spec rule 9).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from vaultmem.note.links import join_relative
from vaultmem.note.markdown import markdown_link_target, split_wikilink

__all__ = [
    "Rewritten",
    "bundle_url",
    "code_segments",
    "drop_comments",
    "escape_markers",
    "export_links",
    "import_links",
    "plain_text",
    "timestamp_headings",
]

_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1|<!--.*?-->", re.S)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_ANY_LINK = re.compile(
    f"(?P<w>{_WIKILINK.pattern})|(?P<m>{_MD_LINK.pattern})".replace("(!?)", "!?")
)
_COMMENT = re.compile(r"%%.*?%%", re.S)
_STAMP = r"\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TIMESTAMP_HEADING = re.compile(rf"^[ ]{{0,3}}(#{{1,6}})[ \t]+({_STAMP})[ \t]*#*[ \t]*$")
_SEE_ALSO = re.compile(r"^[ ]{0,3}#{1,6}[ \t]+see also[ \t]*#*[ \t]*$", re.I)
_ID_HEADER = re.compile(r"<!--(?=\s*id\s*:)", re.I)


@dataclass(frozen=True, slots=True)
class Rewritten:
    text: str
    rewritten: int = 0
    plain: int = 0


def code_segments(text: str) -> list[tuple[str, bool]]:
    """Split text into (chunk, is_code) pieces: fenced blocks, inline code, HTML comments."""
    out: list[tuple[str, bool]] = []
    lines = text.splitlines(keepends=True)
    prose: list[str] = []
    fence: str | None = None
    block: list[str] = []
    for line in lines:
        if fence is None:
            m = _FENCE.match(line)
            if m:
                fence = m.group(1)
                block = [line]
            else:
                prose.append(line)
            continue
        block.append(line)
        stripped = line.strip()
        if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
            out.extend(_inline_segments("".join(prose)))
            prose = []
            out.append(("".join(block), True))
            fence, block = None, []
    out.extend(_inline_segments("".join(prose)))
    if block:
        out.append(("".join(block), True))
    return [seg for seg in out if seg[0]]


def _inline_segments(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in _INLINE_CODE.finditer(text):
        out.append((text[pos : m.start()], False))
        out.append((m.group(0), True))
        pos = m.end()
    out.append((text[pos:], False))
    return out


def _map_prose(text: str, fn: Callable[[str], str]) -> str:
    return "".join(chunk if code else fn(chunk) for chunk, code in code_segments(text))


def drop_comments(text: str) -> str:
    """Remove Obsidian `%%comments%%` (inline or spanning lines) outside code."""
    return _map_prose(text, lambda chunk: _COMMENT.sub("", chunk))


def bundle_url(concept: str, subpath: str = "") -> str:
    """`/<concept id>.md` percent-encoded, plus a `#fragment` for a heading or block subpath."""
    url = "/" + quote(concept + ".md", safe="/")
    if subpath:
        url += "#" + quote(subpath.lstrip("#"), safe="#^")
    return url


def _escape_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def export_links(
    text: str,
    target_of: Callable[[str, str], str | None],
) -> Rewritten:
    """Rewrite wikilinks, embeds and internal Markdown links for a bundle.

    `target_of(link_path, subpath)` returns the bundle URL of the linked concept or None when
    the target is outside the bundle; such a link becomes its display text (counted as plain).
    """
    counts = [0, 0]

    def link(embed: str, display: str, target: str, subpath: str) -> str:
        url = target_of(target, subpath)
        if url is None:
            counts[1] += 1
            return display
        counts[0] += 1
        return f"{embed}[{_escape_text(display)}]({url})"

    def wiki(m: re.Match[str]) -> str:
        parts = split_wikilink(m.group(2))
        if parts is None:
            return m.group(0)
        target, subpath, display = parts
        return link(m.group(1), display, target, subpath)

    def markdown(m: re.Match[str]) -> str:
        dest = m.group(3)
        dest = dest[1:-1] if dest.startswith("<") else dest
        found = markdown_link_target(dest)
        if found is None or dest.startswith("#"):
            return m.group(0)
        display = m.group(2) or found[0]
        return link(m.group(1), display, found[0], found[1])

    def either(m: re.Match[str]) -> str:
        # One pass over both syntaxes, so a link written by `wiki` is never rewritten again.
        if m.group("w") is not None:
            return wiki(_WIKILINK.fullmatch(m.group(0)))  # type: ignore[arg-type]
        return markdown(_MD_LINK.fullmatch(m.group(0)))  # type: ignore[arg-type]

    def chunk(prose: str) -> str:
        return _ANY_LINK.sub(either, prose)

    out = _map_prose(text, chunk)
    return Rewritten(out, counts[0], counts[1])


def import_links(
    text: str,
    concept: str,
    key_of: Callable[[str], str | None],
) -> Rewritten:
    """Rewrite Markdown links to concepts of the bundle as wikilinks to their topic keys.

    Bundle-rooted (`/a/b.md`) and relative (`b.md`, `../a/b.md`) links are resolved against
    the bundle; `key_of(concept id)` gives the topic key, or None for a concept not imported
    (the link is then left as written: broken links are tolerated by OKF).
    """
    folder = concept.rsplit("/", 1)[0] if "/" in concept else ""
    count = 0

    def markdown(m: re.Match[str], in_table: bool) -> str:
        nonlocal count
        dest = m.group(3)
        dest = dest[1:-1] if dest.startswith("<") else dest
        if ":" in dest.split("/", 1)[0] or dest.startswith("#"):
            return m.group(0)
        path, _, fragment = dest.partition("#")
        path = unquote(path)
        if not path.endswith(".md"):
            return m.group(0)
        resolved = _join(folder, path)
        key = None if resolved is None else key_of(resolved[:-3])
        if key is None:
            return m.group(0)
        count += 1
        sub = "#" + unquote(fragment) if fragment else ""
        display = m.group(2).replace("\\[", "[").replace("\\]", "]")
        bar = "\\|" if in_table else "|"
        return (
            f"{m.group(1)}[[{key}{sub}{bar}{display}]]"
            if display
            else f"{m.group(1)}[[{key}{sub}]]"
        )

    def chunk(prose: str) -> str:
        out: list[str] = []
        for line in prose.splitlines(keepends=True):
            in_table = line.lstrip().startswith("|")
            out.append(_MD_LINK.sub(lambda m: markdown(m, in_table), line))  # noqa: B023
        return "".join(out)

    out = _map_prose(text, chunk)
    return Rewritten(out, count, 0)


def _join(folder: str, path: str) -> str | None:
    """A bundle link's target: bundle-rooted when it starts with `/`, else relative."""
    joined = join_relative("" if path.startswith("/") else folder, path.lstrip("/"))
    return joined or None


def timestamp_headings(text: str) -> list[str]:
    """The timestamps of `## <timestamp>`-style headings outside code, in order."""
    found: list[str] = []
    for chunk, code in code_segments(text):
        if code:
            continue
        for line in chunk.splitlines():
            m = _TIMESTAMP_HEADING.match(line)
            if m:
                found.append(m.group(2))
    return found


def escape_markers(text: str) -> tuple[str, int]:
    """Escape what a topic parser would take for structure: timestamp headings, `See Also`
    headings and `<!-- id: … -->` headers. Returns the text and how many were escaped."""
    count = 0

    def chunk(prose: str) -> str:
        nonlocal count
        out: list[str] = []
        for line in prose.splitlines(keepends=True):
            if _TIMESTAMP_HEADING.match(line.rstrip("\n")) or _SEE_ALSO.match(line.rstrip("\n")):
                line = "\\" + line.lstrip(" ")
                count += 1
            out.append(line)
        return "".join(out)

    escaped = _map_prose(text, chunk)
    # The comment-form topic header is an HTML comment, which `_segments` treats as code.
    escaped, n = _ID_HEADER.subn("&lt;!--", escaped)
    return escaped, count + n


_WIKI_TEXT = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_MD_TEXT = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\n]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|~~|==)")


def plain_text(text: str) -> str:
    """Prose without link syntax or emphasis markers, for descriptions."""

    def wiki(m: re.Match[str]) -> str:
        parts = split_wikilink(m.group(1))
        return parts[2] if parts else m.group(0)

    text = _MD_TEXT.sub(lambda m: m.group(1), _WIKI_TEXT.sub(wiki, text))
    return _EMPHASIS.sub("", text)

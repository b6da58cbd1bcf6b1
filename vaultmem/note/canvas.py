"""Canvas files: a `.canvas` (JSON Canvas 1.0) is a link source, as in Obsidian since 1.12.

This module owns spec rule 18. A canvas holds nodes; two kinds carry links:

- a **file node** (`{"type": "file", "file": "Folder/Note.md", "subpath": "#Heading"}`) shows a
  vault file on the canvas: one link of kind `canvas` to that vault path (an embed, since the
  canvas shows the file's content);
- a **text node** (`{"type": "text", "text": "…"}`) is Markdown: its wikilinks, Markdown links
  and `#tags` count exactly as in a note body (`markdown.scan_body`).

Link nodes (web pages), groups and edges carry no vault link. The canvas's text nodes are its
sections, so search finds a canvas by what is written on it. Canvas JSON has no useful line
numbers: every link and section is on line 1. Invalid JSON or an unexpected shape is a
`canvas_invalid` problem and an empty model; nothing raises. No I/O happens here.
"""

from __future__ import annotations

import json
import unicodedata

from vaultmem.core.models import JSON
from vaultmem.core.note_model import Link, Note, ParsedNote, Problem, Section
from vaultmem.note.markdown import scan_body

__all__ = ["CANVAS_SUFFIX", "is_canvas", "parse_canvas"]

CANVAS_SUFFIX = ".canvas"


def is_canvas(path: str) -> bool:
    """True for a JSON Canvas file (by its extension, case-insensitively, as Obsidian)."""
    return path.lower().endswith(CANVAS_SUFFIX)


def _stem(path: str) -> str:
    name = path[path.rfind("/") + 1 :]
    return name[: -len(CANVAS_SUFFIX)] or name


def _file_link(node: dict[str, JSON]) -> Link | None:
    file = node.get("file")
    if not isinstance(file, str) or not file.strip():
        return None
    target = unicodedata.normalize("NFC", file.strip())
    subpath = node.get("subpath")
    sub = subpath if isinstance(subpath, str) and subpath.startswith("#") else ""
    # a file node names a full vault path; a leading `/` makes the resolver take it exactly
    return Link("/" + target.lstrip("/"), sub, None, True, 1, "canvas", None, target + sub)


def parse_canvas(path: str, text: str) -> ParsedNote:
    """The links, tags and text of one canvas (decoded text; `parse_note` dispatches here).

    Pure and total: bad input yields a problem. Tags are in node order, not deduplicated.
    """
    title = _stem(path)
    try:
        data = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        message = f"not valid JSON Canvas: {str(exc).split(chr(10), 1)[0]}"
        return ParsedNote(_empty(path, title), (Problem(path, "canvas_invalid", message, 1),))
    nodes = data.get("nodes", []) if isinstance(data, dict) else None
    if not isinstance(nodes, list):
        message = "not valid JSON Canvas: no list of nodes"
        return ParsedNote(_empty(path, title), (Problem(path, "canvas_invalid", message, 1),))
    links: list[Link] = []
    tags: list[str] = []
    sections: list[Section] = []
    for node in nodes:
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind == "file":
            link = _file_link(node)
            if link is not None:
                links.append(link)
        elif kind == "text" and isinstance(node.get("text"), str):
            body = str(node["text"])
            scan = scan_body(body)
            links.extend(scan.links)
            tags.extend(scan.tags)
            if body.strip():
                sections.append(Section(None, 0, 1, body.strip()))
    note = Note(path, {}, "none", title, (), tuple(tags), (), (), (), tuple(links), tuple(sections))
    return ParsedNote(note, ())


def _empty(path: str, title: str) -> Note:
    return Note(path, {}, "none", title, (), (), (), (), (), (), ())

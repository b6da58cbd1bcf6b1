"""parse_note: bytes of one note in, its `Note` model and problems out; pure, never raises.

This module owns the guard rails and the assembly: size and binary checks, UTF-8 decoding
with replacement, BOM and line-ending normalisation, then the frontmatter (`properties`) and
the body (`markdown`, one mistune pass) are combined into a `Note`. Title, tag order and
deduplication are decided here. Bad input becomes a `Problem`, never an exception, so a
reconcile over a vault always finishes. No I/O happens here: the scanner reads the bytes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import replace

from vaultmem.core import models
from vaultmem.core.models import JSON, FrontmatterStatus
from vaultmem.core.note_model import Link, Note, ParsedNote, Problem
from vaultmem.core.secrets import SecretPattern, redact_note
from vaultmem.note.canvas import is_canvas, parse_canvas
from vaultmem.note.markdown import heading_anchor, property_link, scan_body
from vaultmem.note.properties import (
    as_problems,
    load_frontmatter,
    special_properties,
    split_frontmatter,
)

__all__ = [
    "BINARY_SNIFF_BYTES",
    "MAX_BYTES",
    "PARSER_VERSION",
    "note_stem",
    "parse_note",
    "redacted_note",
]

PARSER_VERSION = models.PARSER_VERSION  # bump it there when parse_note's output changes

MAX_BYTES = 5_000_000
"""Default size above which a note is indexed by metadata only."""
BINARY_SNIFF_BYTES = 8192
"""A NUL byte within this many leading bytes marks the file as binary (as git does)."""
MAX_TAG_LEVELS = 32
"""A nested tag with more `/` levels is dropped: each level is an index row of its own (every
parent of `a/b/c` is a tag too), so a 30,000-level tag asked for 30,000 rows of up to 60 KB."""
MAX_TAG_CHARS = 512
"""A longer tag is dropped for the same reason: its parents' rows grow with its length."""


def note_stem(path: str) -> str:
    """The file name without its extension: the title when nothing better is written."""
    return posixpath.splitext(posixpath.basename(path))[0] or posixpath.basename(path)


def _metadata_only(path: str, problem: Problem) -> ParsedNote:
    note = Note(path, {}, "none", note_stem(path), (), (), (), (), (), (), ())
    return ParsedNote(note, (problem,))


def _decode(path: str, data: bytes, problems: list[Problem]) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"not valid UTF-8 (byte {exc.start}); undecodable bytes were replaced"
        problems.append(Problem(path, "encoding_invalid", message, line))
        text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        # CRLF and lone CR both end a line; one LF form keeps positions and lines simple
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _dedupe_tags(path: str, tags: list[str], problems: list[Problem]) -> tuple[str, ...]:
    """Tags are case-insensitive; the first spelling met wins (frontmatter before body). A tag
    past `MAX_TAG_LEVELS` or `MAX_TAG_CHARS` is dropped with one `tag_too_large` problem."""
    seen: set[str] = set()
    out: list[str] = []
    dropped = 0
    for tag in tags:
        if len(tag) > MAX_TAG_CHARS or tag.count("/") >= MAX_TAG_LEVELS:
            dropped += 1
            continue
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            out.append(tag)
    if dropped:
        problems.append(
            Problem(
                path,
                "tag_too_large",
                f"{dropped} tag(s) over {MAX_TAG_LEVELS} levels or {MAX_TAG_CHARS} characters "
                "dropped; shorten them to index them",
            )
        )
    return tuple(out)


def parse_note(path: str, data: bytes, *, max_bytes: int = MAX_BYTES) -> ParsedNote:
    """Parse one note's bytes into its model. Pure and total: bad input yields problems.

    `path` is the vault-relative POSIX path (used for the title fallback and in problems). A
    `.canvas` path is read as JSON Canvas (`canvas.parse_canvas`): its links and text only.
    A file larger than `max_bytes`, or with a NUL byte in its first 8 KiB, is returned
    metadata-only (title from the file name, nothing parsed).
    """
    if len(data) > max_bytes:
        message = f"{len(data)} bytes is over the {max_bytes}-byte limit; metadata only"
        return _metadata_only(path, Problem(path, "file_too_large", message))
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        message = "a NUL byte in the first 8 KiB: not a text note; metadata only"
        return _metadata_only(path, Problem(path, "file_binary", message))

    problems: list[Problem] = []
    text = _decode(path, data, problems)
    if is_canvas(path):
        canvas = parse_canvas(path, text)
        note = canvas.note
        note = Note(
            path,
            {},
            "none",
            note.title,
            (),
            _dedupe_tags(path, list(note.tags), problems),
            (),
            (),
            (),
            note.links,
            note.sections,
        )
        return ParsedNote(note, (*problems, *canvas.problems))

    frontmatter: dict[str, JSON] = {}
    status: FrontmatterStatus = "none"
    body, body_line = text, 1
    links: list[Link] = []
    fm_tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    cssclasses: tuple[str, ...] = ()
    title: str | None = None
    block = split_frontmatter(text)
    if block is not None:
        body, body_line = block.body, block.body_line
        fm = load_frontmatter(block)
        frontmatter, status = fm.data, fm.status
        problems.extend(as_problems(path, fm.problems))
        special = special_properties(fm)
        problems.extend(as_problems(path, special.problems))
        fm_tags, aliases, cssclasses, title = (
            special.tags,
            special.aliases,
            special.cssclasses,
            special.title,
        )
        for relation, value, line in fm.strings:
            link = property_link(value, relation, line)
            if link is not None:
                links.append(link)

    scan = scan_body(body, body_line)
    links.extend(scan.links)
    if title is None:
        title = next((h.text for h in scan.headings if h.level == 1 and h.text), None)
    note = Note(
        path=path,
        frontmatter=frontmatter,
        frontmatter_status=status,
        title=title or note_stem(path),
        aliases=aliases,
        tags=_dedupe_tags(path, [*fm_tags, *scan.tags], problems),
        cssclasses=cssclasses,
        headings=tuple(scan.headings),
        blocks=tuple(scan.blocks),
        links=tuple(links),
        sections=tuple(scan.sections),
    )
    return ParsedNote(note, tuple(problems))


def redacted_note(note: Note, patterns: Sequence[SecretPattern] = ()) -> Note:
    """`core.secrets.redact_note`, with the anchor of each heading it changed made again from
    the redacted text: an anchor is lower-cased, and `akia…` no longer looks like the key it
    holds. What the index stores of a note, and what `parse` shows."""
    clean = redact_note(note, patterns)
    if clean is note or clean.headings == note.headings:
        return clean
    headings = tuple(
        h if h.text == old.text else replace(h, anchor=heading_anchor(h.text))
        for h, old in zip(clean.headings, note.headings, strict=True)
    )
    return replace(clean, headings=headings)

"""The parsed note: a note, its headings, blocks, links and sections, the problems found on
the way, and where a link resolves.

Frozen, slotted dataclasses, so values can cross process boundaries (parsing runs in worker
processes) and never change under a reader. Apart from `core.models` (the vocabulary), so
that a command that never builds a note (a search, a hook) never creates these classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vaultmem.core.models import JSON, FrontmatterStatus, LinkKind, ProblemCode, Severity


@dataclass(frozen=True, slots=True)
class Heading:
    """A top-level ATX or setext heading. `anchor` is Obsidian's match key (spec rule 14)."""

    level: int
    text: str
    line: int
    anchor: str


@dataclass(frozen=True, slots=True)
class Block:
    """A `^block-id` marker; `id` keeps its case, lookup folds it."""

    id: str
    line: int


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link as written, before resolution.

    `target` is the cleaned link path (NFC, trimmed, percent-decoded for Markdown links) without
    its subpath; it is "" for a link to the note itself (`[[#Heading]]`). `subpath` is "" or the
    text after the first `#`, including that `#` (`#Heading#Sub`, `#^block`). `display` is the
    explicit alias or link text when one was written, else None. `relation` is the property or
    inline-field name for `property`/`field` links (the key path for nested properties, e.g.
    `related.0` gives relation `related`), None for body links.
    """

    target: str
    subpath: str
    display: str | None
    embed: bool
    line: int
    kind: LinkKind
    relation: str | None
    raw: str


@dataclass(frozen=True, slots=True)
class Section:
    """A run of body text under one heading (or before the first heading: heading None).

    `text` is the section's Markdown source without the heading line, used for search.
    """

    heading: str | None
    level: int
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Note:
    """The parsed model of one note: everything the index stores about it."""

    path: str
    frontmatter: Mapping[str, JSON]
    frontmatter_status: FrontmatterStatus
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    cssclasses: tuple[str, ...]
    headings: tuple[Heading, ...]
    blocks: tuple[Block, ...]
    links: tuple[Link, ...]
    sections: tuple[Section, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """Trouble with one file. It is reported and the run carries on."""

    path: str
    code: ProblemCode
    message: str
    line: int | None = None

    @property
    def severity(self) -> Severity:
        return "warning" if self.code in _WARNING_CODES else "error"


_WARNING_CODES: frozenset[str] = frozenset(
    {
        "property_invalid",
        "file_too_large",
        "file_unstable",
        "encoding_invalid",
        "tag_too_large",
        "conflict_copy",
        "conflict_markers",
    }
)


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """What `parse_note` returns: the model plus every problem found on the way."""

    note: Note
    problems: tuple[Problem, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a link points after Obsidian's resolution rules.

    `path` is the vault-relative path of the target file (a note or an attachment) or None when
    unresolved. `subpath_found` is None when the link has no subpath, else whether the heading
    chain or block id exists in the target note.
    """

    path: str | None
    subpath_found: bool | None

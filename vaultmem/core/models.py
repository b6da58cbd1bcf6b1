"""The vocabulary every layer shares: scopes, link kinds, problem codes, modes, versions, the
facade's defaults, and what a write published.

Closed `Literal`s and constants, and one frozen, slotted dataclass (`Published`). The parsed
note's own types are in `core.note_model`: creating a dataclass costs ~1 ms at import on
Python 3.11, and a search or a hook never builds a note. Paths inside the engine are
vault-relative POSIX strings; `pathlib.Path` stays at the edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None
"""A JSON-safe value: what frontmatter is normalised to before it leaves `parse`."""

Scope = Literal["session", "project", "global", "agent", "federated"]
SCOPES: tuple[Scope, ...] = get_args(Scope)

FrontmatterStatus = Literal["valid", "invalid", "empty", "none"]
"""valid: a YAML mapping; invalid: unparseable or not a mapping; empty: an empty block;
none: absent."""

LinkKind = Literal["wikilink", "markdown", "property", "field", "canvas"]
"""wikilink: `[[X]]`/`![[X]]` in the body; markdown: `[t](X.md)` in the body;
property: a frontmatter value `"[[X]]"`; field: a Dataview inline field `key:: [[X]]`;
canvas: a `.canvas` file node showing the vault file X (links in text nodes are wikilinks)."""

ProblemCode = Literal[
    "frontmatter_invalid",
    "frontmatter_not_mapping",
    "frontmatter_unsafe",
    "property_invalid",
    "canvas_invalid",
    "encoding_invalid",
    "file_too_large",
    "tag_too_large",
    "file_binary",
    "file_unreadable",
    "file_vanished",
    "file_unstable",
    "symlink_refused",
    "config_folder_missing",
    "secret_in_name",
    "conflict_copy",
    "conflict_markers",
]
PROBLEM_CODES: tuple[ProblemCode, ...] = get_args(ProblemCode)

Severity = Literal["error", "warning"]


# Defaults shared by a capability and the facade's signatures, kept here so that importing the
# facade (every cold CLI command does) need not load the capability (`index.reading`: mistune).
READ_MAX_BYTES = 64_000  # `read`: characters of a note returned at most
CONTEXT_SCOPES: tuple[str, ...] = ("session", "project", "global")  # `context`: scopes shown
CONTEXT_PER_SCOPE = 10  # `context`: entries per scope
CONTEXT_BUDGET_CHARS = 3000  # `context`: characters of the whole block

# The choices the adapters offer, kept here (and re-exported by the capabilities that own them)
# so that building the CLI's commands does not import every capability.
TopicType = Literal["user", "feedback", "project", "reference"]  # memory.topics
TOPIC_TYPES: tuple[TopicType, ...] = get_args(TopicType)
EdgeStatus = Literal["active", "proposed", "rejected", "stale"]  # memory.relations
EDGE_STATUSES: tuple[EdgeStatus, ...] = get_args(EdgeStatus)
RecallMode = Literal["blended", "metadata", "words", "vectors", "hybrid"]  # memory.recall
RecallSort = Literal["score", "recency", "usage"]  # memory.recall
ContextTarget = Literal["claude", "codex", "kiro"]  # memory.context
ExportFormat = Literal["dir", "tar.gz", "zip"]  # okf.export
SearchMode = Literal["words", "vectors", "hybrid"]  # search.vectors
SEARCH_MODES: tuple[SearchMode, ...] = ("words", "vectors", "hybrid")
SEARCH_MODE_WHEN_ON: SearchMode = "words"  # search.vectors: the mode when semantic recall is on

PARSER_VERSION = 4
"""Bump whenever `note.parse.parse_note`'s output changes, or what the index keeps of it (4:
bounded tags, and rows redacted by `core.secrets.redact_note`; bump it too when a built-in
secret pattern changes):
the index records it and rebuilds on a mismatch. Kept here (re-exported by `note.parse`) so
that a no-op reconcile, which compares it, need not import the parser (mistune)."""

TOKENIZER_VERSION = 3
"""Bump whenever `search.tokenizer`'s output changes (it re-exports this): the index records it
and rebuilds on a mismatch. Kept here so that a no-op reconcile need not import the tokenizer."""

SEGMENT_VERSION = 4
"""Bump instead of TOKENIZER_VERSION when a change alters only the terms of text in a script
written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar), in Hangul or in Cyrillic:
`core.segment`'s words and stop words, the bigram and Hangul rules of `core.tokenizer` and its
script stemmers (3: Russian words stemmed as Russian; 4: Ukrainian ones too). The next
reconcile then cuts again only the notes holding such a character
(`core.tokenizer.SEGMENTED_CHARS`): none, and only the index's `meta` is brought up to date
(`index.upgrade`)."""

LINE_KEY_VERSION = 1
"""Bump whenever `core.documents.section_line_keys`' output changes (the boilerplate keys of a
section's lines, `documents.line_keys`): the index records it, and an upgrade of its search
tables takes the stored keys as they are only when it is this one."""


@dataclass(frozen=True, slots=True)
class Published:
    """Files a write published into the vault (vault-relative paths), not yet in the index.

    Memory and OKF writes return it; `Vault` alone brings the index up to date for `paths` and
    turns a failure into `PartialWriteError` with `phases` as the phases done. `what` names the
    change for that error message."""

    paths: tuple[str, ...]
    phases: tuple[str, ...]
    what: str

    def __add__(self, other: Published) -> Published:
        paths = self.paths + tuple(p for p in other.paths if p not in self.paths)
        phases = self.phases + tuple(p for p in other.phases if p not in self.phases)
        return Published(paths, phases, f"{self.what}; {other.what}")


NOTHING_PUBLISHED = Published((), (), "nothing")

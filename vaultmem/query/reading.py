"""Reading a note's text for an agent: `read NOTE[#Heading|#^block]` and `recent`.

`read` names a note as `show` does (id, path, title, alias or file name, so a topic by its key)
and returns its text from the file, not the index, so an edit made since the last reconcile is
seen. A note whose name holds a secret, never indexed, is found by the id its `secret_in_name`
problem names, and by nothing else. The frontmatter comes back apart from the body, parsed. A
subpath narrows the text to one part, as an Obsidian link would: `#Heading` (or `#H1#H2`, each
deeper than the last, matched like link subpaths) is that heading's section, up to the next
heading of the same or a higher level; `#^id` is the block carrying that id: the paragraph or
list item it ends, or the block just above a line holding only `^id`.

Secrets are redacted (built-in and configured patterns) before anything is cut. A long text
comes back in pieces of at most `max_bytes` UTF-8 bytes, cut after a line when one ends in the
piece's second half, never inside a character; `next_offset` is where the next piece starts
(pass it as `offset`), None on the last one. Offsets count bytes of the redacted text.

`recent` lists notes by file modification time, newest first: what changed while an agent was
away.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from vaultmem.core.config import Config
from vaultmem.core.errors import InvalidArgumentError, NotFoundError, QueryError
from vaultmem.core.models import JSON, READ_MAX_BYTES
from vaultmem.core.note_model import Heading, Problem
from vaultmem.core.secrets import SecretPattern, redact
from vaultmem.files.scan import is_eligible_note, read_note, secret_named_note
from vaultmem.note.markdown import heading_anchor
from vaultmem.note.parse import parse_note
from vaultmem.note.properties import load_frontmatter, split_frontmatter
from vaultmem.query.catalog import find_note
from vaultmem.storage import reading_queries as q
from vaultmem.storage.store import Connection

DEFAULT_MAX_BYTES = READ_MAX_BYTES
_NOTE_ID = re.compile(r"n-[0-9a-f]{16}")
"""A human note's id (`core.names.default_note_id`)."""
Kind = Literal["all", "topics", "notes"]


@dataclass(frozen=True, slots=True)
class NoteText:
    """One piece of a note's text. Lines are the file's, 1-based; `total_bytes` is the size
    of the whole (redacted) body or section this piece is cut from."""

    id: str | None
    path: str
    title: str
    managed: bool
    subpath: str | None
    frontmatter: dict[str, JSON]
    text: str
    start_line: int
    end_line: int
    offset: int
    next_offset: int | None
    total_bytes: int
    redacted: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["truncated"] = self.next_offset is not None
        data["redacted"] = list(self.redacted)
        return data


@dataclass(frozen=True, slots=True)
class RecentNote:
    id: str
    path: str
    title: str
    scope: str
    scope_id: str | None
    managed: bool
    updated: str | None
    modified: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_name(name: str) -> tuple[str, str | None]:
    """`Note#Heading` → ("Note", "#Heading"); a name without `#` has no subpath."""
    head, sep, tail = name.partition("#")
    return head.strip(), (sep + tail) if sep and tail.strip() else None


def locate(con: Connection | None, config: Config, name: str) -> tuple[str | None, str, str]:
    """(id, path, title) of the named note. A path to a note not yet indexed (or with no index
    at all) is still found, so a note written a moment ago can be read, and so is a note whose
    name holds a secret, by the id its `secret_in_name` problem gives (`secret_named_note`,
    a walk of the vault, taken only when the id is not in the index); its path and title are
    the real ones here, the caller redacts them."""
    if con is not None:
        try:
            ref = find_note(con, name)
            return ref.id, ref.path, ref.title
        except NotFoundError:
            pass
    if _NOTE_ID.fullmatch(name) and (hidden := secret_named_note(config, name)) is not None:
        # A note whose name holds a secret is never indexed; its id alone finds it (the
        # caller shows its path and title redacted), never its path or title.
        return name, hidden, hidden.rsplit("/", 1)[-1].removesuffix(".md")
    rel = name.strip().strip("/")
    rel = rel if rel.endswith(".md") else rel + ".md"
    if is_eligible_note(config, rel) and (config.root / rel).is_file():
        return None, rel, rel.rsplit("/", 1)[-1].removesuffix(".md")
    if (outside := unmapped_note(config, name)) is not None:
        raise outside
    raise NotFoundError(
        f"No note is named {name!r} (by id, path, title, alias or file name).",
        hint="Try `vaultmem search` or `vaultmem recall` to find it, or reconcile first.",
    )


def unmapped_note(config: Config, name: str) -> NotFoundError | None:
    """The error to give when `name` is the path of a note that no mapped folder holds (a
    first run's `--map` leaves the rest of the vault out), else None."""
    rel = name.strip().strip("/")
    rel = rel if rel.lower().endswith(".md") else f"{rel}.md"
    if config.mapping_for(rel) is not None or not (config.root / rel).is_file():
        return None
    folder = rel.rpartition("/")[0] or "."
    return NotFoundError(
        f"{rel} is outside the mapped folders, so it is not in the index.",
        hint=f"Map its folder to index it: `vaultmem init --map {folder}=project:NAME --force` "
        "(keep your other --map options); `vaultmem status` lists what is mapped.",
    )


def read_text(
    config: Config,
    con: Connection | None,
    name: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    offset: int = 0,
    patterns: tuple[SecretPattern, ...] = (),
) -> NoteText:
    """The text of `NOTE[#subpath]`, redacted, one piece of at most `max_bytes`."""
    if max_bytes < 1 or offset < 0:
        raise InvalidArgumentError(
            "--max-bytes must be positive and --offset not negative.",
            hint="e.g. --max-bytes 20000 --offset 0",
        )
    note_name, subpath = split_name(name)
    note_id, path, title = locate(con, config, note_name)
    # A path holds no secret unless the note was found by the id its name's problem gives:
    # then what leaves names it redacted, here and in every error.
    shown = redact(path, patterns).text
    data = read_note(config, path)
    if isinstance(data, Problem):
        raise NotFoundError(f"Cannot read {shown}: {data.message}.", hint="Check the file.")
    parsed = parse_note(path, data, max_bytes=config.max_note_bytes).note
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    block = split_frontmatter(text)
    frontmatter = load_frontmatter(block).data if block is not None else {}
    body_first = block.body_line if block is not None else 1
    if subpath is None:
        first, last = body_first, len(lines)
    else:
        first, last = _subpath_lines(subpath, parsed.headings, parsed.blocks, lines, body_first)
    raw = "\n".join(lines[first - 1 : last])
    part = raw.strip("\n")
    clean = redact(part, patterns)
    fm_clean, fm_found = _redact_json(frontmatter, patterns)
    encoded = clean.text.encode("utf-8")
    if offset > len(encoded):
        raise QueryError(
            f"--offset {offset} is past the end of the text ({len(encoded)} bytes).",
            hint="Pass the next_offset of the previous piece.",
        )
    piece, end = _piece(encoded, offset, max_bytes)
    # Line numbers count the redacted text: a multi-line secret shifts later lines.
    skipped = first + (len(raw) - len(raw.lstrip("\n"))) + encoded[:offset].count(b"\n")
    return NoteText(
        id=note_id,
        path=shown,
        title=redact(parsed.title or title, patterns).text,
        managed=config.is_managed(path),
        subpath=subpath,
        frontmatter=fm_clean,
        text=piece,
        start_line=skipped,
        end_line=skipped + piece.count("\n") - piece.endswith("\n"),
        offset=offset,
        next_offset=end if end < len(encoded) else None,
        total_bytes=len(encoded),
        redacted=tuple(sorted({*clean.found, *fm_found})),
    )


def _piece(encoded: bytes, offset: int, max_bytes: int) -> tuple[str, int]:
    """The bytes from `offset`, at most `max_bytes`, ended after a newline in the second half
    when there is one, and never inside a UTF-8 sequence."""
    end = min(len(encoded), offset + max_bytes)
    if end < len(encoded):
        newline = encoded.rfind(b"\n", offset + max_bytes // 2, end)
        if newline >= 0:
            end = newline + 1
        while end > offset and (encoded[end] & 0xC0) == 0x80:
            end -= 1  # a continuation byte: step back to the character's start
        if end == offset:
            end = min(len(encoded), offset + 4)  # max_bytes below one character: send it whole
    return encoded[offset:end].decode("utf-8", "replace"), end


def _redact_json(value: Any, patterns: tuple[SecretPattern, ...]) -> tuple[Any, set[str]]:
    if isinstance(value, str):
        r = redact(value, patterns)
        return r.text, set(r.found)
    if isinstance(value, list):
        found: set[str] = set()
        out = []
        for item in value:
            clean, hit = _redact_json(item, patterns)
            out.append(clean)
            found |= hit
        return out, found
    if isinstance(value, dict):
        found = set()
        mapped = {}
        for key, item in value.items():
            clean, hit = _redact_json(item, patterns)
            mapped[key] = clean
            found |= hit
        return mapped, found
    return value, set()


def _subpath_lines(
    subpath: str,
    headings: tuple[Heading, ...],
    blocks: tuple[Any, ...],
    lines: list[str],
    body_first: int,
) -> tuple[int, int]:
    """First and last line (1-based, inclusive) of the part a subpath names."""
    body = subpath.lstrip("#")
    if body.startswith("^"):
        wanted = body[1:].strip().lower()
        for found in blocks:
            if found.id.lower() == wanted:
                return _block_lines(found.line, lines, body_first)
        raise NotFoundError(f"No block ^{body[1:]} in this note.", hint="Check the block id.")
    parts = [heading_anchor(p) for p in body.split("#") if heading_anchor(p)]
    ordered = sorted(headings, key=lambda h: h.line)
    index, level, match = 0, 0, None
    for heading in ordered:
        if parts and heading.level > level and heading_anchor(heading.text) == parts[index]:
            index += 1
            level = heading.level
            if index == len(parts):
                match = heading
                break
    if match is None:
        raise NotFoundError(
            f"No heading {subpath!r} in this note.",
            hint="Name a heading as a link would: NOTE#Heading or NOTE#Parent#Child.",
        )
    end = len(lines)
    for later in ordered:
        if later.line > match.line and later.level <= match.level:
            end = later.line - 1
            break
    return match.line, end


def _block_lines(line: int, lines: list[str], body_first: int) -> tuple[int, int]:
    """The paragraph or list item ending at `line`; the one above when the line is only the
    `^id`."""
    last = line
    if lines[line - 1].strip().startswith("^"):
        last = line - 1
        while last >= body_first and not lines[last - 1].strip():
            last -= 1
    first = last
    item = lines[last - 1].lstrip().startswith(("- ", "* ", "+ ")) if last >= 1 else False
    while not item and first - 1 >= body_first:
        above = lines[first - 2]
        if not above.strip() or above.lstrip().startswith("#"):
            break
        first -= 1
        if above.lstrip().startswith(("- ", "* ", "+ ")):
            break
    return max(first, body_first), max(line, last)


def recent(
    con: Connection,
    *,
    since: datetime | None = None,
    kind: Kind = "all",
    limit: int = 20,
) -> list[RecentNote]:
    """Notes by file modification time, newest first."""
    if kind not in ("all", "topics", "notes"):
        raise InvalidArgumentError(f"Unknown kind {kind!r}.", hint="Use all, topics or notes.")
    if limit < 1:
        raise InvalidArgumentError("--limit must be positive.", hint="e.g. --limit 20")
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    managed = None if kind == "all" else kind == "topics"
    return [
        RecentNote(
            id=r[0],
            path=r[1],
            title=r[2],
            scope=r[3],
            scope_id=r[4],
            managed=bool(r[5]),
            updated=r[6],
            modified=datetime.fromtimestamp(r[7] / 1e9, tz=UTC)
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
            size=int(r[8]),
        )
        for r in q.recent_rows(con, since=since, managed=managed, limit=limit)
    ]

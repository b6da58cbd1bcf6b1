"""The topic file format: how one agent memory reads and writes as Markdown. Pure, no I/O.

A topic is a note at `<managed>/<scope>/[<scope_id>/]<key>.md`. The current form is YAML
frontmatter holding the topic's stable facts (`id`, `key`, `scope`, `scope_id`, `type`, `tags`,
`created`, `source`, in that order, timestamps as quoted ISO UTC strings: properties Obsidian
shows and Bases can sort by), an `# <key>` H1, one `## <timestamp>` section per observation and
a `## See Also` section at the end. Nothing in it changes on every append: `updated` is the
newest section's stamp (an older topic's `updated:` line is read, and dropped by its next
append), and sections are read in stamp order, so two machines' appends merge line by line
(git's `merge=union`) and read back in the order they were made. The older comment form (an H1, then
`<!-- id: … | scope: … | type: … | tags: … -->`, then `### <timestamp>` sections) is read too, and
appended to in its own form: vaultmem never converts a person's file.

Every change here is an edit of the existing text, never a re-render: `append_observation`
inserts a section before `## See Also` (and drops an older topic's `updated:` line);
`supersede` does the same and adds one `> Superseded by <ts>` line under the corrected section's
heading (its text is kept byte for byte; the new section opens with `> Supersedes <ts>`);
`replace_see_also` only touches the lines between the `<!-- vaultmem:see-also -->` markers, so
links a person wrote under `## See Also` stay where they are.

Boundaries are unambiguous, so what `store` writes `get` returns byte for byte (after CR and CRLF
line endings become LF and leading and trailing blank lines are dropped). Only four kinds of line
are structure: a heading whose text is a timestamp, a `See Also` heading, a `> Superseded by` /
`> Supersedes` line and the see-also markers (plus, in the comment form, the `<!-- id: … -->`
header). An observation runs from its timestamp heading to the next one or to `## See Also`;
any other heading (`# Title`, `## Steps`) is part of its text. On write every line of the text
that would read as structure gets one more leading backslash (before `## 2026-…`), and a line that
already is backslashes plus structure gets one more too; on read one is taken off again
(`escape_line` and `unescape_line`, the same predicate both ways). Fences do not hide structure:
the writer escapes inside code blocks too, so an unclosed fence in one observation cannot swallow
the next. Timestamps are UTC with milliseconds, made unique within a topic under its lock
(`observation_stamp`), so `> Supersedes <ts>` names one section; older second-precision stamps
are read as before.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeAlias

from vaultmem.core import models
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.models import JSON, SCOPES, Scope
from vaultmem.core.names import KEY_RE, KEY_RULE, is_reserved_name
from vaultmem.note.properties import load_frontmatter, split_frontmatter

TopicType = models.TopicType
TOPIC_TYPES = models.TOPIC_TYPES
TopicForm = Literal["frontmatter", "comment"]

TAG_RE = re.compile(r"[A-Za-z0-9_/-]{1,64}")
SEE_ALSO = "See Also"
SEE_ALSO_START = "<!-- vaultmem:see-also -->"
SEE_ALSO_END = "<!-- /vaultmem:see-also -->"

# Retention by scope in days (None: permanent); types user and feedback never expire.
RETENTION_DAYS: Mapping[str, int | None] = {
    "session": 14,
    "project": 90,
    "global": None,
    "agent": None,
    "federated": None,
}
PERMANENT_TYPES: frozenset[str] = frozenset({"user", "feedback"})

_TS = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"
_TS_RE = re.compile(_TS)
_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE_RE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_COMMENT_RE = re.compile(r"^<!--(.*?)-->\s*$")
_SUPERSEDED_RE = re.compile(rf"^> Superseded by ({_TS})\s*$")
_SUPERSEDES_RE = re.compile(rf"^> Supersedes ({_TS})\s*$")
_UPDATED_RE = re.compile(r"^updated[ \t]*:.*$")
_PLAIN_YAML = re.compile(r"[a-z][a-z0-9-]*")
_YAML_WORDS = frozenset({"yes", "no", "on", "off", "true", "false", "null", "y", "n", "none"})

Row: TypeAlias = Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Observation:
    """One timestamped section. `superseded_by` is the timestamp of the correction, if any."""

    timestamp: str
    text: str
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic file read back. `observations` are in file order."""

    id: str | None
    key: str
    scope: Scope | None
    scope_id: str | None
    type: str | None
    tags: tuple[str, ...]
    created: str | None
    updated: str | None
    source: str | None
    observations: tuple[Observation, ...]
    form: TopicForm

    @property
    def latest(self) -> str | None:
        """The newest observation that no correction replaced."""
        live = [o for o in self.observations if o.superseded_by is None]
        return live[-1].text if live else None

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "key": self.key,
            "scope": self.scope,
            "scope_id": self.scope_id,
            "type": self.type,
            "tags": list(self.tags),
            "created": self.created,
            "updated": self.updated,
            "source": self.source,
            "form": self.form,
            "latest": self.latest,
            "observations": [
                {"timestamp": o.timestamp, "text": o.text, "superseded_by": o.superseded_by}
                for o in self.observations
            ],
        }


# ---------------------------------------------------------------------------------------------
# Keys, tags, timestamps


def check_key(key: str) -> str:
    """`key` unchanged when it follows the rule; otherwise an error that states the rule."""
    if not KEY_RE.fullmatch(key) or is_reserved_name(key):
        raise InvalidArgumentError(
            f"The key {key[:80]!r} is not valid: a key is {KEY_RULE}.",
            hint="Choose a key such as `build-commands`; vaultmem never rewrites a key for you.",
        )
    return key


def derive_key(text: str, *, max_words: int = 6) -> str:
    """A key from the first words of the content (accents dropped); a digest when none fit."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())[:max_words]
    key = ""
    for word in words:
        candidate = f"{key}-{word}" if key else word
        if len(candidate) > 60:
            break
        key = candidate
    if not key:
        key = "topic-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:8]
    if is_reserved_name(key):
        key += "-topic"  # `con`, `aux`... cannot be file names on Windows
    return key[:60]


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags without `#`, each Obsidian-valid (letters, digits, `_`, `-`, `/`, not all digits)."""
    out: list[str] = []
    for raw in tags:
        tag = raw.strip().lstrip("#")
        if not tag:
            continue
        if not TAG_RE.fullmatch(tag) or tag.isdigit():
            raise InvalidArgumentError(
                f"The tag {raw[:80]!r} is not valid.",
                hint="Tags hold letters, digits, '_', '-' and '/', and not only digits.",
            )
        if tag not in out:
            out.append(tag)
    return tuple(out)


def observation_stamp(moment: datetime, taken: Sequence[str] = ()) -> str:
    """`2026-11-29T21:04:05.123Z`: millisecond precision, UTC, and none of `taken` (the stamps
    already in the topic): a clash moves it on by a millisecond, so every section's stamp is
    unique and `> Supersedes <ts>` is never ambiguous."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    used = set(taken)
    while True:
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        if stamp not in used:
            return stamp
        moment += timedelta(milliseconds=1)


def iso_utc(moment: datetime) -> str:
    """`2026-11-29T21:04:05Z`: second precision, always UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """An aware datetime from an ISO string (a bare date or naive time counts as UTC)."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# Retention


def expires_at(scope: object, type_: object, updated: object) -> datetime | None:
    """When a topic stops being recalled; None when it never expires (or `updated` is unknown:
    vaultmem never expires a topic on a guess)."""
    if type_ in PERMANENT_TYPES or not isinstance(scope, str):
        return None
    days = RETENTION_DAYS.get(scope)
    moment = parse_time(updated)
    if days is None or moment is None:
        return None
    return moment + timedelta(days=days)


def is_expired(topic: Topic | Row, now: datetime) -> bool:
    """Has the topic passed its retention? Takes a `Topic` or an index `notes` row (a mapping
    with `scope`, `type`, `updated` and, optionally, `managed`: human notes never expire)."""
    scope: object
    type_: object
    updated: object
    if isinstance(topic, Topic):
        scope, type_, updated = topic.scope, topic.type, topic.updated
    else:
        if topic.get("managed") is False:
            return False
        scope, type_, updated = topic.get("scope"), topic.get("type"), topic.get("updated")
    limit = expires_at(scope, type_, updated)
    return limit is not None and now >= limit


# ---------------------------------------------------------------------------------------------
# Rendering


def _yaml_scalar(value: str | None) -> str:
    if value is None:
        return "null"
    if _PLAIN_YAML.fullmatch(value) and value not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


def render_topic(
    *,
    id: str,
    key: str,
    scope: str,
    scope_id: str | None,
    type: str,
    tags: Sequence[str],
    source: str | None,
    timestamp: str,
    text: str,
) -> str:
    """A new topic file holding one observation."""
    tag_list = ", ".join(_yaml_scalar(t) for t in tags)
    lines = [
        "---",
        f"id: {_yaml_scalar(id)}",
        f"key: {_yaml_scalar(key)}",
        f"scope: {scope}",
        f"scope_id: {_yaml_scalar(scope_id)}",
        f"type: {type}",
        f"tags: [{tag_list}]",
        f'created: "{timestamp}"',
        f"source: {_yaml_scalar(source)}",
        "---",
        f"# {key}",
        "",
        f"## {timestamp}",
        _body(text),
        "",
    ]
    return "\n".join(lines)


def normalise_text(text: str) -> str:
    """The text an observation holds: `\n` line endings, no leading or trailing blank lines.
    `get` returns exactly this for what `store` was given."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")


def _is_structure(line: str) -> bool:
    """Would the reader take this line for structure? (The one predicate of both directions.)"""
    heading = _HEADING_RE.match(line)
    if heading is not None:
        title = heading.group(2).strip()
        return _TS_RE.fullmatch(title) is not None or title.casefold() == SEE_ALSO.casefold()
    if _SUPERSEDED_RE.match(line) or _SUPERSEDES_RE.match(line):
        return True
    stripped = line.strip()
    if stripped in (SEE_ALSO_START, SEE_ALSO_END):
        return True
    return _header_fields(stripped) is not None


def escape_line(line: str) -> str:
    """`line` as observation text: structure, or backslashes then structure, gain a backslash."""
    return "\\" + line if _is_structure(line.lstrip("\\")) else line


def unescape_line(line: str) -> str:
    """The inverse of `escape_line`."""
    if line.startswith("\\") and _is_structure(line.lstrip("\\")):
        return line[1:]
    return line


def escape_observation(text: str) -> tuple[str, int]:
    """The normalised text with every structural line escaped, and how many were."""
    lines = normalise_text(text).split("\n")
    out = [escape_line(line) for line in lines]
    return "\n".join(out), sum(1 for a, b in zip(lines, out, strict=True) if a != b)


def _body(text: str) -> str:
    return escape_observation(text)[0]


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True, slots=True)
class _Heading:
    index: int  # line index in the text
    level: int
    text: str


def _headings(lines: Sequence[str], start: int) -> list[_Heading]:
    """ATX headings outside fenced code, from line `start` on."""
    out: list[_Heading] = []
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        fence_match = _FENCE_RE.match(line)
        if fence_match:
            mark = fence_match.group(1)
            if fence is None:
                fence = mark[0] * len(mark)
            elif mark[0] == fence[0] and len(mark) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        match = _HEADING_RE.match(line)
        if match:
            out.append(_Heading(i, len(match.group(1)), match.group(2).strip()))
    return out


def _body_start(lines: Sequence[str]) -> int:
    """Index of the first body line (after a frontmatter block, if any)."""
    if lines and lines[0].rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                return i + 1
    return 0


def _observation_level(form: TopicForm) -> int:
    return 2 if form == "frontmatter" else 3


def read_topic(path: str, text: str) -> Topic:
    """A topic from its file text, in either form. Never raises: missing fields are None."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    data: dict[str, JSON] = {}
    block = split_frontmatter(text)
    if block is not None:
        data = load_frontmatter(block).data
    start = _body_start(lines) if block is not None else 0
    comment = _header_comment(lines, start)
    form: TopicForm = "comment" if comment is not None and not data else "frontmatter"
    if form == "comment" and comment is not None:
        data = dict(comment)
    # In stamp order: a merge (git's union driver, a sync tool's copy united) may leave two
    # machines' sections in either order; the stamps say which came first.
    observations = sorted(_observations(lines, start, form), key=_stamp_key)
    tags = data.get("tags")
    if isinstance(tags, str):
        tag_list = tuple(t.strip().lstrip("#") for t in tags.split(",") if t.strip())
    elif isinstance(tags, list):
        tag_list = tuple(str(t).lstrip("#") for t in tags if isinstance(t, str | int))
    else:
        tag_list = ()
    scope = data.get("scope")
    stamps = [o.timestamp for o in observations]
    key = data.get("key")
    return Topic(
        id=_str(data.get("id")),
        key=key if isinstance(key, str) and key else stem,
        scope=scope if scope in SCOPES else None,
        scope_id=_str(data.get("scope_id")),
        type=_str(data.get("type")),
        tags=tag_list,
        created=_str(data.get("created")) or (stamps[0] if stamps else None),
        updated=_newest(_str(data.get("updated")), stamps[-1] if stamps else None),
        source=_str(data.get("source")),
        observations=tuple(observations),
        form=form,
    )


def _stamp_key(observation: Observation) -> datetime:
    return parse_time(observation.timestamp) or datetime.min.replace(tzinfo=UTC)


def _newest(written: str | None, newest_section: str | None) -> str | None:
    """`updated`: the newest section's stamp; an older topic's `updated:` property when it is
    newer (a person's edit), read but never rewritten."""
    if written is None or newest_section is None:
        return newest_section or written
    a, b = parse_time(written), parse_time(newest_section)
    if a is None or b is None:
        return newest_section
    return written if a > b else newest_section


def _str(value: JSON) -> str | None:
    if value is None or isinstance(value, list | dict) or value == "":
        return None
    return str(value) if not isinstance(value, bool) else None


def _header_fields(line: str) -> dict[str, JSON] | None:
    """The fields of a `<!-- id: … | scope: … -->` header line, or None."""
    match = _COMMENT_RE.match(line)
    if not match:
        return None
    fields: dict[str, JSON] = {}
    for part in match.group(1).split("|"):
        name, sep, value = part.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return fields if "id" in fields or "scope" in fields else None


def _header_comment(lines: Sequence[str], start: int) -> dict[str, JSON] | None:
    """The `<!-- id: … | scope: … -->` header within the first lines of the body."""
    for line in lines[start : start + 6]:
        fields = _header_fields(line.strip())
        if fields is not None:
            return fields
    return None


def _boundaries(lines: Sequence[str], start: int, level: int) -> list[_Heading]:
    """The structural headings from line `start` on: timestamp headings at the observation
    level and `## See Also`. Fences are not tracked (the writer escapes inside code too)."""
    out: list[_Heading] = []
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.startswith("#"):
            continue
        match = _HEADING_RE.match(line)
        if match is None:
            continue
        depth, title = len(match.group(1)), match.group(2).strip()
        if depth == level and _TS_RE.fullmatch(title):
            out.append(_Heading(i, depth, title))
        elif depth == 2 and title.casefold() == SEE_ALSO.casefold():
            out.append(_Heading(i, depth, SEE_ALSO))
    return out


def _observations(lines: Sequence[str], start: int, form: TopicForm) -> list[Observation]:
    level = _observation_level(form)
    bounds = _boundaries(lines, start, level)
    found: list[tuple[str, list[str]]] = []
    for n, heading in enumerate(bounds):
        if heading.text == SEE_ALSO:
            continue
        end = bounds[n + 1].index if n + 1 < len(bounds) else len(lines)
        found.append((heading.text, list(lines[heading.index + 1 : end])))
    superseded: dict[int, str] = {}
    out: list[Observation] = []
    for i, (stamp, body) in enumerate(found):
        marked_by = None
        kept: list[str] = []
        for line in body:
            by = _SUPERSEDED_RE.match(line)
            of = _SUPERSEDES_RE.match(line)
            if by:
                marked_by = by.group(1)
            elif of:
                # The latest earlier section with that timestamp is the one corrected.
                for j in range(i - 1, -1, -1):
                    if found[j][0] == of.group(1):
                        superseded.setdefault(j, stamp)
                        break
            else:
                kept.append(unescape_line(line))
        out.append(Observation(stamp, "\n".join(kept).strip("\n"), marked_by))
    return [
        Observation(o.timestamp, o.text, o.superseded_by or superseded.get(i))
        for i, o in enumerate(out)
    ]


# ---------------------------------------------------------------------------------------------
# Editing an existing topic


def _see_also_index(lines: Sequence[str], start: int) -> int | None:
    """Line index of the last `## See Also` heading, if any (the reader's boundary rule)."""
    found = None
    for heading in _boundaries(lines, start, 0):
        found = heading.index
    return found


def _insert_section(text: str, section: str) -> str:
    """`text` with `section` inserted before `## See Also` (or at the end): the bytes before the
    insertion point and from it on are kept as they were."""
    lines = text.split("\n")
    at = _see_also_index(lines, _body_start(lines))
    if at is None:
        head, tail = text, ""
    else:
        offset = sum(len(line) + 1 for line in lines[:at])
        head, tail = text[:offset], text[offset:]
    if head and not head.endswith("\n"):
        head += "\n"
    if head and not head.endswith("\n\n"):
        head += "\n"
    block = section if not tail else section + "\n"
    return head + block + tail


def _drop_updated(text: str) -> str:
    """The text without the frontmatter's `updated:` line, which older topics carry: `updated`
    is the newest section's stamp, so no line changes on every append (two machines' appends
    to one topic then merge without a conflict). Dropped once; nothing else is touched."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return text
    end = _body_start(lines) - 1
    for i in range(1, max(end, 1)):
        if _UPDATED_RE.match(lines[i]):
            return "\n".join(lines[:i] + lines[i + 1 :])
    return text


def append_observation(text: str, timestamp: str, body: str) -> str:
    """The topic text with one more observation; everything already there is kept."""
    topic = read_topic("", text)
    mark = "#" * _observation_level(topic.form)
    section = f"{mark} {timestamp}\n{_body(body)}\n"
    new = _insert_section(text, section)
    return _drop_updated(new) if topic.form == "frontmatter" else new


def supersede(text: str, timestamp: str, body: str) -> str:
    """Correct the latest live observation: it keeps its text and gains a `> Superseded by`
    line under its heading; the correction is appended, opening with `> Supersedes <ts>`."""
    topic = read_topic("", text)
    live = [i for i, o in enumerate(topic.observations) if o.superseded_by is None]
    if not live:
        return append_observation(text, timestamp, body)
    old = topic.observations[live[-1]].timestamp
    lines = text.split("\n")
    level = _observation_level(topic.form)
    # The last section headed by that stamp (sections are read in stamp order, not file order).
    at = [h.index for h in _boundaries(lines, _body_start(lines), level) if h.text == old]
    if at:
        lines.insert(at[-1] + 1, f"> Superseded by {timestamp}")
    marked = "\n".join(lines)
    mark = "#" * level
    section = f"{mark} {timestamp}\n> Supersedes {old}\n\n{_body(body)}\n"
    new = _insert_section(marked, section)
    return _drop_updated(new) if topic.form == "frontmatter" else new


def _see_also_block(lines: Sequence[str]) -> tuple[int | None, int, int]:
    """The See Also heading's line and the marker lines of its generated block (-1, -1 when
    there is none). Markers count only under the heading: a marker line in an observation (a
    person's file, an imported body) is text, never the place to rewrite."""
    section = _see_also_index(lines, _body_start(lines))
    try:
        start = lines.index(SEE_ALSO_START, len(lines) if section is None else section)
        return section, start, lines.index(SEE_ALSO_END, start)
    except ValueError:
        return section, -1, -1


def see_also_entries(text: str) -> list[str]:
    """The lines of the generated See Also block (between the markers), in order."""
    lines = text.split("\n")
    _, start, end = _see_also_block(lines)
    return lines[start + 1 : end] if start >= 0 else []


def map_see_also(text: str, entry: Callable[[str], str]) -> str:
    """`text` with each line of the generated See Also block replaced by `entry(line)`; every
    other line is kept as it was."""
    lines = text.split("\n")
    _, start, end = _see_also_block(lines)
    if start < 0:
        return text
    return "\n".join([*lines[: start + 1], *map(entry, lines[start + 1 : end]), *lines[end:]])


def replace_see_also(text: str, entries: Sequence[str]) -> str:
    """Put `entries` (Markdown list lines) between the see-also markers, creating the section
    or the markers when missing. Lines outside the markers are never touched."""
    lines = text.split("\n")
    block = [SEE_ALSO_START, *entries, SEE_ALSO_END] if entries else []
    section, start, end = _see_also_block(lines)
    if start >= 0:
        return "\n".join(lines[:start] + block + lines[end + 1 :])
    if not entries:
        return text
    at = section
    if at is None:
        body = text.rstrip("\n")
        return body + "\n\n## See Also\n" + "\n".join(block) + "\n"
    # After the last non-blank line of the existing See Also section.
    end_of_section = len(lines)
    for heading in _headings(lines, at + 1):
        end_of_section = heading.index
        break
    last = at
    for i in range(at + 1, end_of_section):
        if lines[i].strip():
            last = i
    return "\n".join(lines[: last + 1] + block + lines[last + 1 :])


# ---------------------------------------------------------------------------------------------
# What Obsidian and git are told about topics (generated files of the managed folder)


def topics_base(managed_folder: str) -> str:
    """The Bases view (`<managed>/topics.base`) of every topic: a table grouped by scope,
    newest first, and one of all topics by creation; it reads only the stable properties and
    the file's own modification time, so nothing in it changes when a topic is read."""
    folder = json.dumps(managed_folder)
    columns = ["file.name", "note.scope", "note.scope_id", "note.type", "note.tags",
               "note.created", "file.mtime"]  # fmt: skip
    order = "".join(f"      - {c}\n" for c in columns)
    return (
        "# Generated by vaultmem: the agent memories of this folder. vaultmem rewrites it when\n"
        "# its layout changes; to customise, save a copy under another name.\n"
        "filters:\n"
        "  and:\n"
        f"    - file.inFolder({folder})\n"
        "    - 'file.ext == \"md\"'\n"
        "    - 'file.name != \"_decisions\"'\n"
        "views:\n"
        "  - type: table\n"
        "    name: By scope, newest first\n"
        "    groupBy:\n"
        "      property: note.scope\n"
        "      direction: ASC\n"
        "    order:\n"
        f"{order}"
        "    sort:\n"
        "      - property: file.mtime\n"
        "        direction: DESC\n"
        "  - type: table\n"
        "    name: Newest topics\n"
        "    order:\n"
        f"{order}"
        "    sort:\n"
        "      - property: note.created\n"
        "        direction: DESC\n"
    )


GIT_ATTRIBUTES = (
    "# Generated by vaultmem (`vaultmem init --git`): topics only ever gain sections, so two\n"
    "# machines' appends merge by keeping both sides' lines; readers order them by stamp.\n"
    "*.md merge=union\n"
)
"""The managed folder's `.gitattributes`: git's union merge for every topic under it."""

STATE_GITIGNORE = (
    "# Generated by vaultmem (`vaultmem init --git`): the index, locks and logs are this\n"
    "# machine's; only the configuration is shared.\n"
    "*\n"
    "!.gitignore\n"
    "!config.toml\n"
)
"""`.vaultmem/.gitignore`: machine-local state stays out of the repository."""


# ---------------------------------------------------------------------------------------------
# Uniting two versions of one topic (a sync tool's conflict copy, git's conflict markers)

_CONFLICT_START = re.compile(r"^<{7}(?: |$)")
_CONFLICT_MIDDLE = re.compile(r"^={7}$")
_CONFLICT_END = re.compile(r"^>{7}(?: |$)")


def has_conflict_markers(text: str) -> bool:
    """Does the text hold a git conflict block (`<<<<<<<`, `=======`, `>>>>>>>` lines)?"""
    lines = text.split("\n")
    return any(_CONFLICT_START.match(line) for line in lines) and any(
        _CONFLICT_END.match(line) for line in lines
    )


def conflict_sides(text: str) -> tuple[str, str]:
    """The two versions a conflicted file holds: the lines outside every block plus each
    block's first side, and the same with each block's second side."""
    ours: list[str] = []
    theirs: list[str] = []
    side = 0  # 0 outside, 1 first side, 2 second side
    for line in text.split("\n"):
        if side == 0 and _CONFLICT_START.match(line):
            side = 1
        elif side == 1 and _CONFLICT_MIDDLE.match(line):
            side = 2
        elif side == 2 and _CONFLICT_END.match(line):
            side = 0
        else:
            if side in (0, 1):
                ours.append(line)
            if side in (0, 2):
                theirs.append(line)
    return "\n".join(ours), "\n".join(theirs)


def unite(base: str, other: str) -> str:
    """`base` with every observation of `other` whose stamp it lacks appended (each once, the
    reader orders them by stamp); `base` itself is kept byte for byte before the insertions."""
    have = {o.timestamp for o in read_topic("", base).observations}
    topic = read_topic("", base)
    mark = "#" * _observation_level(topic.form)
    out = base
    for observation in read_topic("", other).observations:
        if observation.timestamp in have:
            continue
        marker = (
            f"> Superseded by {observation.superseded_by}\n" if observation.superseded_by else ""
        )
        section = f"{mark} {observation.timestamp}\n{marker}{_body(observation.text)}\n"
        out = _insert_section(out, section)
        have.add(observation.timestamp)
    return out

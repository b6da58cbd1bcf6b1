"""The topic file format: how one agent memory reads and writes as Markdown. Pure, no I/O.

A topic is a note at `<managed>/<scope>/[<scope_id>/]<key>.md`. The current form is YAML
frontmatter (`id`, `key`, `scope`, `scope_id`, `type`, `tags`, `created`, `updated`, `source`, in
that order, timestamps as quoted ISO UTC strings), an `# <key>` H1, one `## <timestamp>` section
per observation and a `## See Also` section at the end. The older comment form (an H1, then
`<!-- id: … | scope: … | type: … | tags: … -->`, then `### <timestamp>` sections) is read too, and
appended to in its own form: vaultmem never converts a person's file.

Every change here is an edit of the existing text, never a re-render: `append_observation`
inserts a section before `## See Also` and rewrites only the `updated:` line of the frontmatter;
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
from collections.abc import Mapping, Sequence
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
        f'updated: "{timestamp}"',
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
    observations = _observations(lines, start, form)
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
        created=_str(data.get("created")) or (min(stamps) if stamps else None),
        updated=_str(data.get("updated")) or (max(stamps) if stamps else None),
        source=_str(data.get("source")),
        observations=tuple(observations),
        form=form,
    )


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


def _touch_updated(text: str, timestamp: str) -> str:
    """Rewrite only the frontmatter's `updated:` line (added before the closing `---`)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return text
    end = _body_start(lines) - 1
    if end <= 0:
        return text
    for i in range(1, end):
        if _UPDATED_RE.match(lines[i]):
            lines[i] = f'updated: "{timestamp}"'
            return "\n".join(lines)
    lines.insert(end, f'updated: "{timestamp}"')
    return "\n".join(lines)


def append_observation(text: str, timestamp: str, body: str) -> str:
    """The topic text with one more observation; everything already there is kept."""
    topic = read_topic("", text)
    mark = "#" * _observation_level(topic.form)
    section = f"{mark} {timestamp}\n{_body(body)}\n"
    new = _insert_section(text, section)
    return _touch_updated(new, timestamp) if topic.form == "frontmatter" else new


def supersede(text: str, timestamp: str, body: str) -> str:
    """Correct the latest live observation: it keeps its text and gains a `> Superseded by`
    line under its heading; the correction is appended, opening with `> Supersedes <ts>`."""
    topic = read_topic("", text)
    live = [i for i, o in enumerate(topic.observations) if o.superseded_by is None]
    if not live:
        return append_observation(text, timestamp, body)
    target = live[-1]
    old = topic.observations[target].timestamp
    lines = text.split("\n")
    level = _observation_level(topic.form)
    count = -1
    for heading in _boundaries(lines, _body_start(lines), level):
        if heading.text != SEE_ALSO:
            count += 1
            if count == target:
                lines.insert(heading.index + 1, f"> Superseded by {timestamp}")
                break
    marked = "\n".join(lines)
    mark = "#" * level
    section = f"{mark} {timestamp}\n> Supersedes {old}\n\n{_body(body)}\n"
    new = _insert_section(marked, section)
    return _touch_updated(new, timestamp) if topic.form == "frontmatter" else new


def replace_see_also(text: str, entries: Sequence[str]) -> str:
    """Put `entries` (Markdown list lines) between the see-also markers, creating the section
    or the markers when missing. Lines outside the markers are never touched."""
    lines = text.split("\n")
    block = [SEE_ALSO_START, *entries, SEE_ALSO_END] if entries else []
    # Markers count only under the See Also heading: a marker line in an observation (a person's
    # file, an imported body) is text, never the place to rewrite.
    section = _see_also_index(lines, _body_start(lines))
    try:
        start = lines.index(SEE_ALSO_START, len(lines) if section is None else section)
        end = lines.index(SEE_ALSO_END, start)
    except ValueError:
        start = end = -1
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

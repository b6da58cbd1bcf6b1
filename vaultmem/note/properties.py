"""Frontmatter: finding the block, loading its YAML safely, and normalising it to JSON values.

This module owns spec rules 8, 10 and 11 (as listed in docs/note-model.md). The block is split
by hand rather than with python-frontmatter (docs/note-model.md says why). The YAML is only
*composed* (libyaml's C parser when available) with YAML 1.2 core schema resolvers, as
Obsidian reads properties: `NO` and `on` stay text, `1:20` is text, `0x1F` and `0o17` are
numbers. The node graph is converted here: timestamps stay the exact source text, non-finite
floats and binary stay strings, and the walk has a node budget, a budget of expanded text and
a depth limit, so alias bombs ("billion laughs", or a few aliases of a long string) and
recursive aliases fail fast as `frontmatter_unsafe` instead of expanding. No I/O happens here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import BaseResolver

from vaultmem.core.compat import yaml_c_parser
from vaultmem.core.models import JSON, FrontmatterStatus, ProblemCode

if TYPE_CHECKING:  # made in `as_problems` only: a recall reads topics' properties, no problems
    from vaultmem.core.note_model import Problem

__all__ = [
    "Frontmatter",
    "FrontmatterBlock",
    "SpecialProperties",
    "is_property_tag",
    "load_frontmatter",
    "special_properties",
    "split_frontmatter",
]

_TAG = "tag:yaml.org,2002:"


class _Core12Resolver(BaseResolver):
    """YAML 1.2 core schema tags for plain scalars (YAML 1.2.2 §10.3.2), plus merge keys.

    PyYAML resolves YAML 1.1 (`yes`/`NO`/`on` booleans, `1:20` sexagesimal, `010` octal,
    `1_000`); Obsidian reads properties as YAML 1.2, where all of those are text.
    """


for _tag, _pattern, _first in (
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", list("-+0123456789")),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN",
        list("-+.0123456789"),
    ),
    ("merge", r"<<", ["<"]),
):
    _Core12Resolver.add_implicit_resolver(_TAG + _tag, re.compile(f"^(?:{_pattern})$"), _first)

try:
    if TYPE_CHECKING:  # the stubs' type for the class compat hands over
        from yaml._yaml import CParser
    else:
        CParser = yaml_c_parser()

    class _Core12Loader(CParser, _Core12Resolver):
        """libyaml's C parser and composer with the 1.2 core resolver (nothing is constructed)."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _Core12Resolver.__init__(self)

except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Core12Loader(Reader, Scanner, Parser, Composer, _Core12Resolver):  # type: ignore[no-redef]
        """The pure-Python parser and composer with the 1.2 core resolver."""

        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)
            _Core12Resolver.__init__(self)


def _compose(text: str) -> Node | None:
    """`yaml.compose` with the 1.2 core loader: the node graph, nothing constructed."""
    loader = _Core12Loader(text)
    try:
        node: Node | None = loader.get_single_node()
        return node
    finally:
        loader.dispose()


MAX_NODES = 100_000
"""Most nodes a frontmatter may expand to (aliases count every time they are used)."""
MAX_EXPANSION_CHARS = 1_000_000
"""Most characters of keys and scalars aliases may add beyond the frontmatter's own length: a
few aliases of one long string (a 115 KB note once expanded to a 500 MB value) are refused."""
MAX_DEPTH = 100
"""Deepest nesting of lists and maps accepted."""

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^---[ \t]*$", re.M)


class FrontmatterBlock(NamedTuple):
    """The frontmatter text and the body, split at the closing `---` line."""

    yaml_text: str
    yaml_line: int
    """Line of the file where `yaml_text` starts (the line after the opening `---`)."""
    body: str
    body_line: int
    """Line of the file where `body` starts."""


def split_frontmatter(text: str) -> FrontmatterBlock | None:
    """Rule 10: a block opened by `---` at the very start (text without BOM, LF endings).

    None when there is no block: no `---` line first, or no closing `---` line.
    """
    opened = _OPEN.match(text)
    if opened is None:
        return None
    closed = _CLOSE.search(text, opened.end())
    if closed is None:
        return None
    body_start = min(closed.end() + 1, len(text))
    return FrontmatterBlock(
        yaml_text=text[opened.end() : closed.start()],
        yaml_line=2,
        body=text[body_start:],
        body_line=text.count("\n", 0, body_start) + 1,
    )


class Frontmatter(NamedTuple):
    """A loaded frontmatter: JSON-safe data, status, candidate property links and problems."""

    data: dict[str, JSON]
    status: FrontmatterStatus
    strings: tuple[tuple[str, str, int], ...] = ()
    """(top-level key, string value, line) for each string that may be a property link."""
    key_lines: Mapping[str, int] = MappingProxyType({})
    problems: tuple[tuple[ProblemCode, str, int | None], ...] = ()


class _Unsafe(Exception):
    """The node graph expands too far, nests too deep or refers to itself."""


class _Converter:
    """Turns a composed YAML node graph into JSON values, keeping source text where it matters."""

    def __init__(self, first_line: int, source_chars: int) -> None:
        self.first_line = first_line
        self.budget = MAX_NODES
        self.chars = source_chars + MAX_EXPANSION_CHARS
        self.active: set[int] = set()
        self.strings: list[tuple[str, str, int]] = []
        self.key_lines: dict[str, int] = {}

    def top(self, node: MappingNode) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        self._enter(node, 0)
        for key, value in self._pairs(node, 0):
            self.key_lines.setdefault(key, self.first_line + value[0].start_mark.line)
            out[key] = self.convert(value[1], 1, key)
        return out

    def _pairs(self, node: MappingNode, depth: int) -> list[tuple[str, tuple[Node, Node]]]:
        # YAML merge keys (`<<: *base`): explicit keys win over merged ones, as in PyYAML
        merged: list[tuple[str, tuple[Node, Node]]] = []
        explicit: list[tuple[str, tuple[Node, Node]]] = []
        for key_node, value_node in node.value:
            self._spend(key_node)
            if key_node.tag == _TAG + "merge":
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if isinstance(source, MappingNode):
                        self._enter(source, depth + 1)
                        try:
                            merged.extend(self._pairs(source, depth + 1))
                        finally:
                            self.active.discard(id(source))
                continue
            if not isinstance(key_node, ScalarNode):
                continue  # a list or map used as a key has no JSON spelling
            explicit.append((str(key_node.value), (key_node, value_node)))
        if not merged:
            return explicit
        names = {name for name, _ in explicit}
        return [item for item in merged if item[0] not in names] + explicit

    def _spend(self, node: Node) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise _Unsafe(f"expand to more than {MAX_NODES} nodes")
        if isinstance(node, ScalarNode):
            self.chars -= len(node.value)
            if self.chars < 0:
                raise _Unsafe(f"expand to more than {MAX_EXPANSION_CHARS} characters of text")

    def _enter(self, node: Node, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Unsafe(f"nest deeper than {MAX_DEPTH} levels")
        if id(node) in self.active:
            raise _Unsafe("refer to themselves")
        self.active.add(id(node))

    def convert(self, node: Node, depth: int, relation: str) -> JSON:
        self._spend(node)
        if isinstance(node, ScalarNode):
            return self._scalar(node, relation)
        self._enter(node, depth)
        try:
            if isinstance(node, SequenceNode):
                return [self.convert(item, depth + 1, relation) for item in node.value]
            if isinstance(node, MappingNode):
                return {
                    name: self.convert(pair[1], depth + 1, relation)
                    for name, pair in self._pairs(node, depth)
                }
            return None
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: ScalarNode, relation: str) -> JSON:
        tag, value = node.tag, str(node.value)
        if tag == _TAG + "str":
            if value.lstrip().startswith("["):
                self.strings.append((relation, value, self.first_line + node.start_mark.line))
            return value
        if tag == _TAG + "null":
            return None
        if tag == _TAG + "bool":
            return value in ("true", "True", "TRUE")
        try:
            if tag == _TAG + "int":
                return _core_int(value)
            if tag == _TAG + "float":
                number = float(value)
                return number if math.isfinite(number) else value
        except (ValueError, OverflowError):
            # `.inf`/`.nan` spellings, an int longer than Python's digit limit: keep the text
            return value
        # timestamps (kept exactly as written), binary, custom tags: the source text
        return value


def _core_int(value: str) -> int:
    """An int of the YAML 1.2 core schema: decimal (a leading 0 is still decimal), 0o, 0x."""
    if value.startswith("0o"):
        return int(value[2:], 8)
    if value.startswith("0x"):
        return int(value[2:], 16)
    return int(value, 10)


def _json_safe(value: object) -> JSON:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return str(value)


def _from_json(text: str) -> dict[str, JSON] | None:
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(loaded, dict):
        return None
    data = _json_safe(loaded)
    return data if isinstance(data, dict) else None


def _candidate_strings(data: dict[str, JSON], line: int) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []

    def visit(value: JSON, relation: str) -> None:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                out.append((relation, value, line))
        elif isinstance(value, list):
            for item in value:
                visit(item, relation)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item, relation)

    for key, value in data.items():
        visit(value, key)
    return out


def load_frontmatter(block: FrontmatterBlock) -> Frontmatter:
    """Load the YAML of a frontmatter block; never raises. Rule 10 decides the status."""
    text = block.yaml_text
    if not text.strip():
        return Frontmatter({}, "empty")
    first = block.yaml_line
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first + mark.line if mark is not None else first
        # JSON that PyYAML's YAML 1.1 parser rejects (rare escapes) is still frontmatter
        data = _from_json(text)
        if data is not None:
            return Frontmatter(data, "valid", tuple(_candidate_strings(data, first)))
        return Frontmatter({}, "invalid", problems=(("frontmatter_invalid", _brief(exc), line),))
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        return Frontmatter({}, "invalid", problems=(("frontmatter_invalid", _brief(exc), first),))
    if node is None:
        return Frontmatter({}, "empty")  # only comments
    if not isinstance(node, MappingNode):
        kind = "list" if isinstance(node, SequenceNode) else "scalar"
        message = f"frontmatter is a YAML {kind}, not a mapping of properties"
        return Frontmatter({}, "invalid", problems=(("frontmatter_not_mapping", message, first),))
    converter = _Converter(first, len(text))
    try:
        data = converter.top(node)
    except _Unsafe as exc:
        message = f"frontmatter refused: its YAML anchors and nodes {exc}"
        return Frontmatter({}, "invalid", problems=(("frontmatter_unsafe", message, first),))
    return Frontmatter(data, "valid", tuple(converter.strings), converter.key_lines)


def _brief(exc: BaseException) -> str:
    # the first line of a YAML error names the problem without echoing note contents
    problem = getattr(exc, "problem", None)
    text = problem if isinstance(problem, str) and problem else str(exc).split("\n", 1)[0]
    return f"invalid YAML in frontmatter: {text}"


# --- rule 11: tags, aliases, cssclasses -----------------------------------------------------

# Obsidian 1.9 dropped the singular `tag`, `alias` and `cssclass` (release notes v1.9.0, the
# Properties help page): they are ordinary properties now, with no special meaning.
_TAG_KEYS = ("tags",)
_ALIAS_KEYS = ("aliases",)
_CSS_KEYS = ("cssclasses",)

# A `tags` string is a list written inline. obsidian.d.ts declares the helper behind it,
# `parseFrontMatterStringArray(frontmatter, key, nospaces?)`: a string value is split at commas,
# and with `nospaces` (tags hold no space) at whitespace too: `tags: a, b` and `tags: a b` are
# two tags each. Re-implementations of the API for plugin tests do the same.
_TAG_SPLIT = re.compile(r"[,\s]+")
_ALL_DIGITS = re.compile(r"[0-9]+")


def is_property_tag(tag: str) -> bool:
    """True when a frontmatter tag (without `#`) is one Obsidian shows and finds.

    Looser than an inline `#tag`: `.` and `+` are kept (`gpt-4.1`, `n+1`) because nothing in
    YAML ends the tag early. Whitespace splits tags, and an all-digit value is a number.
    """
    return bool(tag) and not any(c.isspace() for c in tag) and not _ALL_DIGITS.fullmatch(tag)


class SpecialProperties(NamedTuple):
    """The values of the properties Obsidian treats specially, plus the dropped ones."""

    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    cssclasses: tuple[str, ...]
    title: str | None
    problems: tuple[tuple[ProblemCode, str, int | None], ...]


def _values(data: dict[str, JSON], names: tuple[str, ...]) -> list[tuple[str, JSON]]:
    # keys compare case-insensitively (`Tags:` is `tags`), as Obsidian's parseFrontMatterEntry
    out: list[tuple[str, JSON]] = []
    for name in names:
        out.extend((key, value) for key, value in data.items() if key.lower() == name)
    return out


def _items(value: JSON) -> list[JSON]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _tag_items(value: JSON) -> list[JSON]:
    if isinstance(value, str):
        return [part for part in _TAG_SPLIT.split(value) if part]
    return _items(value)


def special_properties(fm: Frontmatter) -> SpecialProperties:
    """Rule 11: lists are canonical, a string is split, bad items are dropped.

    Empty items (`tags:` then `- `, a template's placeholder) are dropped silently, as Obsidian
    does; a problem is reported only for a value Obsidian shows as no tag at all: a number, a
    map, a tag with a space or all digits.
    """
    problems: list[tuple[ProblemCode, str, int | None]] = []
    tags: list[str] = []
    for key, value in _values(fm.data, _TAG_KEYS):
        line = fm.key_lines.get(key)
        for item in _tag_items(value):
            if item is None:
                continue
            if not isinstance(item, str):
                problems.append(("property_invalid", f"non-text tag in '{key}' dropped", line))
                continue
            tag = item.strip()
            tag = tag[1:] if tag.startswith("#") else tag
            if not tag:
                continue
            if not is_property_tag(tag):
                problems.append(("property_invalid", f"invalid tag {item!r} in '{key}'", line))
                continue
            tags.append(tag)
    aliases = _strings(fm, _ALIAS_KEYS, problems)
    cssclasses = _strings(fm, _CSS_KEYS, problems)
    title_value = fm.data.get("title")
    title = title_value.strip() if isinstance(title_value, str) and title_value.strip() else None
    return SpecialProperties(tuple(tags), tuple(aliases), tuple(cssclasses), title, tuple(problems))


def _strings(
    fm: Frontmatter,
    names: tuple[str, ...],
    problems: list[tuple[ProblemCode, str, int | None]],
) -> list[str]:
    out: list[str] = []
    for key, value in _values(fm.data, names):
        for item in _items(value):
            # a number is a fine alias or class name once spelled as text
            if isinstance(item, int | float) and not isinstance(item, bool):
                item = str(item)
            if item is None:
                continue  # an empty list item: nothing written, nothing to report
            if not isinstance(item, str):
                message = f"non-text item {_shown(item)} in '{key}' dropped"
                problems.append(("property_invalid", message, fm.key_lines.get(key)))
                continue
            text = item.strip()
            if text and text not in out:
                out.append(text)
    return out


_SHOWN_CHARS = 40


def _shown(value: JSON) -> str:
    """A property value for a problem message: as JSON, secrets redacted (built-in patterns;
    the index redacts by the config's too), then cut to a few dozen characters."""
    from vaultmem.core.secrets import redact

    text = redact(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)).text
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def as_problems(path: str, found: tuple[tuple[ProblemCode, str, int | None], ...]) -> list[Problem]:
    """Attach the note path to (code, message, line) triples."""
    from vaultmem.core.note_model import Problem

    return [Problem(path, code, message, line) for code, message, line in found]

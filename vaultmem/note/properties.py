"""Frontmatter: finding the block, loading its YAML safely, and normalising it to JSON values.

This module owns spec rules 8, 10 and 11 (`/work/shared/spec/obsidian.md`). The block is split
by hand rather than with python-frontmatter, because that library strips leading whitespace
(a blank line before `---` must mean "no frontmatter"), does not accept a trailing-space
`---` line, and constructs YAML timestamps into `date` objects. The YAML is only *composed*
(libyaml's C parser when available) and the node graph is converted here: timestamps stay the
exact source text, non-finite floats and binary stay strings, and the walk has a node budget
and a depth limit so alias bombs ("billion laughs") and recursive aliases fail fast as
`frontmatter_unsafe` instead of expanding. No I/O happens here.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from vaultmem.models import JSON, FrontmatterStatus, Problem, ProblemCode
from vaultmem.note.markdown import is_valid_tag

__all__ = [
    "Frontmatter",
    "FrontmatterBlock",
    "SpecialProperties",
    "load_frontmatter",
    "special_properties",
    "split_frontmatter",
]

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR = SafeConstructor()

MAX_NODES = 100_000
"""Most nodes a frontmatter may expand to (aliases count every time they are used)."""
MAX_DEPTH = 100
"""Deepest nesting of lists and maps accepted."""

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^---[ \t]*$", re.M)

_TAG = "tag:yaml.org,2002:"


@dataclass(frozen=True, slots=True)
class FrontmatterBlock:
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


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """A loaded frontmatter: JSON-safe data, status, candidate property links and problems."""

    data: dict[str, JSON]
    status: FrontmatterStatus
    strings: tuple[tuple[str, str, int], ...] = ()
    """(top-level key, string value, line) for each string that may be a property link."""
    key_lines: dict[str, int] = field(default_factory=dict)
    problems: tuple[tuple[ProblemCode, str, int | None], ...] = ()


class _Unsafe(Exception):
    """The node graph expands too far, nests too deep or refers to itself."""


class _Converter:
    """Turns a composed YAML node graph into JSON values, keeping source text where it matters."""

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.budget = MAX_NODES
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
            return bool(_CONSTRUCTOR.construct_yaml_bool(node))
        try:
            if tag == _TAG + "int":
                return int(_CONSTRUCTOR.construct_yaml_int(node))
            if tag == _TAG + "float":
                number = float(_CONSTRUCTOR.construct_yaml_float(node))
                return number if math.isfinite(number) else value
        except (ValueError, OverflowError):
            # e.g. an int longer than Python's digit limit: keep the text
            return value
        # timestamps (kept exactly as written), binary, custom tags: the source text
        return value


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
        node = yaml.compose(text, Loader=_LOADER)
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
    converter = _Converter(first)
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

_TAG_KEYS = ("tags", "tag")
_ALIAS_KEYS = ("aliases", "alias")
_CSS_KEYS = ("cssclasses", "cssclass")


@dataclass(frozen=True, slots=True)
class SpecialProperties:
    """The values of the properties Obsidian treats specially, plus the dropped ones."""

    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    cssclasses: tuple[str, ...]
    title: str | None
    problems: tuple[tuple[ProblemCode, str, int | None], ...]


def _values(data: dict[str, JSON], names: tuple[str, ...]) -> list[tuple[str, JSON]]:
    # canonical key first, then the pre-1.9 singular synonym; keys compare case-insensitively
    out: list[tuple[str, JSON]] = []
    for name in names:
        out.extend((key, value) for key, value in data.items() if key.lower() == name)
    return out


def _items(value: JSON) -> list[JSON]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def special_properties(fm: Frontmatter) -> SpecialProperties:
    """Rule 11: lists are canonical, one string is accepted, bad items are dropped and reported."""
    problems: list[tuple[ProblemCode, str, int | None]] = []
    tags: list[str] = []
    for key, value in _values(fm.data, _TAG_KEYS):
        line = fm.key_lines.get(key)
        for item in _items(value):
            if item is None:
                problems.append(
                    ("property_invalid", f"empty item in '{key}' (quote '#tag' items)", line)
                )
                continue
            if not isinstance(item, str):
                problems.append(("property_invalid", f"non-text tag in '{key}' dropped", line))
                continue
            tag = item.strip()
            tag = tag[1:] if tag.startswith("#") else tag
            if not is_valid_tag(tag):
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
            if not isinstance(item, str):
                problems.append(("property_invalid", f"non-text item in '{key}' dropped", None))
                continue
            text = item.strip()
            if text and text not in out:
                out.append(text)
    return out


def as_problems(path: str, found: tuple[tuple[ProblemCode, str, int | None], ...]) -> list[Problem]:
    """Attach the note path to (code, message, line) triples."""
    return [Problem(path, code, message, line) for code, message, line in found]

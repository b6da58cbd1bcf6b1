"""The one contract behind both adapters: every operation's parameters, bounds and result.

The CLI (`cli.py`) and the MCP server (`mcp_server.py`) restate nothing: each click command
and each MCP tool is generated from an `Operation` of the table the registry
(`adapters/commands/__init__.py`) gathers from the command modules. A `Param` declares a
name, a type, a default, bounds (range, length, item count, pattern, choices), help text and,
for dates, ISO parsing; `bind` checks a call's arguments against it the same way for both
adapters (a failure is `InvalidArgumentError`, code `invalid_argument`: exit 2 in the CLI, a
tool error over MCP), and `json_schema` renders the MCP tool's input schema from the same
table, so the limits a client sees are the limits the server enforces. `data` renders a result
as the JSON both adapters return: the CLI's `--json` envelope carries exactly the object the
MCP tool returns. An operation shared with MCP returns a JSON object (MCP's structured content
must be one), so hit lists come wrapped: `{"hits": [...]}` for `recall` and `search` alike.

How to add an operation is told once, in `adapters/commands/__init__.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from vaultmem.adapters.output import to_jsonable
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.vault import Vault

if TYPE_CHECKING:  # a type only: a CLI search need not import reconcile
    from vaultmem.index.reconcile import PhaseProgress

Kind = Literal["str", "int", "float", "bool", "strs", "path", "pairs"]
UNSET: Any = object()
JSON_HELP = "Print one JSON envelope (agents)."
Renderer = Callable[[Any, dict[str, Any]], None]
"""How a result prints without --json: `render(result, bound_args)`."""


# The table's values and results are named tuples, not dataclasses: every command imports this
# module, and a dataclass compiles its methods from source at import (~2.9M instructions each).
class Param(NamedTuple):
    """One parameter of an operation, as both adapters show and check it."""

    name: str  # the Python keyword and the MCP argument name
    kind: Kind
    help: str
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None  # a string's length, or each item's in a list
    max_items: int | None = None
    pattern: str | None = None  # a string's (or each item's) full-match regex
    iso_date: bool = False  # a string parsed as an ISO date or time
    flags: tuple[str, ...] = ()  # CLI spellings; default `--name-with-hyphens`
    positional: bool = False  # a CLI argument rather than an option
    metavar: str | None = None
    cli: bool = True
    mcp: bool = True
    cli_required: bool = False  # required in the CLI only (store's KEY: '' derives one)
    cli_default: Any = UNSET  # when the CLI's default differs (store's TEXT `-` = stdin)
    mcp_default: Any = UNSET  # when the MCP tool's default differs (store's source `mcp`)
    stdin_dash: bool = False  # CLI: `-` reads the value from stdin
    comma_lists: bool = False  # CLI: items may also be comma-separated (`--tags a,b`)
    # A "pairs" param's first flag takes `NAME VALUE` (two words), any other `NAME=VALUE`.

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def cli_label(self) -> str:
        return self.metavar or self.name.upper() if self.positional else self.cli_flags[0]

    def bounds_text(self) -> str:
        """`(1-50)`, `one of a, b`, `at most 32`: appended to help in both adapters."""
        parts = []
        if self.choices:
            parts.append("one of " + ", ".join(self.choices))
        if self.minimum is not None and self.maximum is not None:
            parts.append(f"{_num(self.minimum)}-{_num(self.maximum)}")
        elif self.minimum is not None:
            parts.append(f"at least {_num(self.minimum)}")
        if self.max_items is not None:
            parts.append(f"at most {self.max_items} items")
        return f" ({'; '.join(parts)})" if parts else ""


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class Call(NamedTuple):
    """One bound call: the opened vault (None for operations that need none) and arguments."""

    vault: Vault | None
    args: dict[str, Any]
    progress: PhaseProgress | None = None
    as_json: bool = False  # the CLI's --json (an operation that prints as it goes reads it)

    @property
    def v(self) -> Vault:
        if self.vault is None:  # pragma: no cover - a table error, caught by tests
            raise RuntimeError("this operation declared needs_vault=False")
        return self.vault


class Operation(NamedTuple):
    """A command of the CLI and, when `tool` is set, an MCP tool: the same params and data."""

    name: str  # the CLI command; "export okf" is the `okf` command of the `export` group
    summary: str  # the first line of help
    panel: str  # the CLI help panel: Index, Query, Memory, OKF or Agents
    params: tuple[Param, ...]
    run: Callable[[Call], Any]
    examples: tuple[str, ...] = ()
    tool: str | None = None
    tool_title: str = ""
    tool_description: str = ""
    read_only: bool = True
    destructive: bool = False
    idempotent: bool | None = None  # MCP's idempotentHint; None: the same as read_only
    needs_vault: bool = True
    exit_code: Callable[[Any], int] | None = None  # a non-zero exit for some results
    render: Renderer | None = None  # the CLI's text output; None prints the JSON indented
    json_help: str | None = JSON_HELP  # the CLI's --json option; None: the command has none
    progress: bool = False  # the CLI draws a progress bar on a terminal (reconcile)
    streams: bool = False  # the run prints as it goes (watch, mcp): no envelope or text after it

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


# -- results that render their own JSON ------------------------------------------------------


class Hits(NamedTuple):
    """Search or recall hits: `{"hits": [...]}` for the CLI's --json and the MCP tool alike."""

    hits: Sequence[Any]

    def to_dict(self) -> dict[str, Any]:
        return {"hits": list(self.hits)}


class Links(NamedTuple):
    """A note's links in one direction (`links`, `memory_links`)."""

    note: Any
    direction: str
    links: Sequence[Any]

    def to_dict(self) -> dict[str, Any]:
        return {"note": self.note, "direction": self.direction, "links": list(self.links)}


class Initialised(NamedTuple):
    """`init`: the config written, and what the user should know about it."""

    vault: Path
    config: Path
    managed_folder: str
    mappings: Sequence[Any]
    warnings: Sequence[str] = ()
    written: Sequence[str] = ()


def data(result: Any) -> Any:
    """The JSON value of a result: the `data` of the CLI envelope and the MCP tool's object."""
    return to_jsonable(result)


# -- checking a call's arguments ---------------------------------------------------------------


def bind(
    op: Operation, raw: Mapping[str, Any], *, adapter: Literal["cli", "mcp"]
) -> dict[str, Any]:
    """Check `raw` against `op`'s params and return the values its `run` takes.

    Missing params get their default; every failure is an `InvalidArgumentError` naming the
    option (`--limit`) or argument (`limit`) as that adapter's user spells it."""
    params = [p for p in op.params if (p.cli if adapter == "cli" else p.mcp)]
    known = {p.name for p in params}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise InvalidArgumentError(
            f"Unknown argument {unknown[0]!r} for {op.tool or op.name}.",
            hint=f"Arguments: {', '.join(sorted(known)) or 'none'}.",
        )
    bound: dict[str, Any] = {}
    for p in op.params:
        label = p.cli_label() if adapter == "cli" else p.name
        offered = p.cli if adapter == "cli" else p.mcp
        value = raw.get(p.name) if offered else None
        if value is None:
            if p.required and offered:
                raise InvalidArgumentError(f"{label} is required.", hint=_hint(op, p, adapter))
            default = p.mcp_default if adapter == "mcp" and p.mcp_default is not UNSET else None
            bound[p.name] = p.default if default is None else default
            continue
        bound[p.name] = _check(p, value, label, _hint(op, p, adapter))
    return bound


def _hint(op: Operation, p: Param, adapter: str) -> str:
    where = f"`vaultmem {op.name} --help`" if adapter == "cli" else f"the {op.tool} input schema"
    return f"{p.help}{p.bounds_text()} See {where}."


def _check(p: Param, value: Any, label: str, hint: str) -> Any:
    def fail(what: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{label}: {what}", hint=hint)

    if p.kind == "bool":
        if not isinstance(value, bool):
            raise fail(f"expected true or false, got {_show(value)}.")
        return value
    if p.kind in ("int", "float"):
        number_ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not number_ok or (p.kind == "int" and not float(value).is_integer()):
            raise fail(
                f"expected {'an integer' if p.kind == 'int' else 'a number'}, got {_show(value)}."
            )
        if not math.isfinite(value):  # nan passes every bound check, and inf is no duration
            raise fail(f"expected a finite number, got {_show(value)}.")
        if p.minimum is not None and value < p.minimum:
            raise fail(f"{_num(value)} is below the minimum {_num(p.minimum)}.")
        if p.maximum is not None and value > p.maximum:
            raise fail(f"{_num(value)} is above the maximum {_num(p.maximum)}.")
        return int(value) if p.kind == "int" else float(value)
    if p.kind == "path":
        if isinstance(value, str | Path) and str(value):
            _utf8(str(value), fail)
            return Path(value)
        raise fail(f"expected a path, got {_show(value)}.")
    if p.kind == "pairs":
        if not isinstance(value, list | tuple) or (p.max_items and len(value) > p.max_items):
            raise fail(f"at most {p.max_items} name-value pairs.")
        pairs: dict[str, str] = {}
        for pair in value:
            if not (isinstance(pair, list | tuple) and len(pair) == 2):
                raise fail("each item is a NAME VALUE pair.")
            name, val = (_string(p, item, fail) for item in pair)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
                raise fail(f"{name!r} is not a parameter name (letters, digits, _).")
            pairs[name] = val
        return pairs
    if p.kind == "strs":
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise fail(f"expected a list of strings, got {_show(value)}.")
        if p.max_items is not None and len(value) > p.max_items:
            raise fail(f"{len(value)} items; at most {p.max_items}.")
        return tuple(_string(p, item, fail) for item in value)
    text = _string(p, value, fail)
    if p.iso_date:
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            raise fail(f"{text!r} is not an ISO date or time (e.g. 2026-11-01).") from None
    return text


def _utf8(value: str, fail: Callable[[str], InvalidArgumentError]) -> None:
    """Refuse text holding bytes that are not UTF-8: a command line's `$'\\xff'` arrives as
    lone surrogates (Python's surrogateescape), which no file, index row or JSON can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise fail("is not valid UTF-8 text; nothing was done.") from None


def _string(p: Param, value: Any, fail: Callable[[str], InvalidArgumentError]) -> str:
    if not isinstance(value, str):
        raise fail(f"expected a string, got {_show(value)}.")
    _utf8(value, fail)
    if p.max_length is not None and len(value) > p.max_length:
        raise fail(f"{len(value)} characters; at most {p.max_length}.")
    if p.min_length is not None and len(value) < p.min_length:
        raise fail("must not be empty." if p.min_length == 1 else f"at least {p.min_length}.")
    if p.choices and value not in p.choices:
        raise fail(f"{value!r} is not one of {', '.join(p.choices)}.")
    if p.pattern is not None and not re.fullmatch(p.pattern.strip("^$"), value):
        raise fail(f"{value!r} does not match {p.pattern}.")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- the MCP input schema, from the same table ---------------------------------------------------


def json_schema(op: Operation) -> dict[str, Any]:
    """The tool's input schema (JSON Schema 2020-12): types, bounds and defaults of the table."""
    properties: dict[str, Any] = {}
    for p in op.params:
        if not p.mcp:
            continue
        string: dict[str, Any] = {"type": "string"}
        if p.choices:
            string["enum"] = list(p.choices)
        if p.pattern:
            string["pattern"] = p.pattern
        if p.min_length is not None:
            string["minLength"] = p.min_length
        if p.max_length is not None:
            string["maxLength"] = p.max_length
        spec: dict[str, Any]
        if p.kind == "strs":
            spec = {"type": "array", "items": string}
            if p.max_items is not None:
                spec["maxItems"] = p.max_items
        elif p.kind in ("int", "float"):
            spec = {"type": "integer" if p.kind == "int" else "number"}
            if p.minimum is not None:
                spec["minimum"] = p.minimum
            if p.maximum is not None:
                spec["maximum"] = p.maximum
        elif p.kind == "bool":
            spec = {"type": "boolean"}
        else:
            spec = string
        spec["description"] = p.help
        default = p.mcp_default if p.mcp_default is not UNSET else p.default
        if default is not None:
            spec["default"] = list(default) if isinstance(default, tuple) else default
        properties[p.name] = spec
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in op.params if p.required and p.mcp],
        "additionalProperties": False,
    }

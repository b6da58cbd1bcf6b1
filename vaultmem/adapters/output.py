"""How results reach a terminal or an agent: the JSON envelope, rich tables and plain lines.

`--json` output is always one envelope on stdout: `{"ok": true, "data": ...}` on success and
`{"ok": false, "error": {"code", "message", "hint"}}` on failure. Text output goes to stdout,
errors to stderr. On a terminal tables are drawn by rich; when stdout is a pipe or a file they
are plain tab-separated lines (a header, then one line per row, never wrapped) so that `grep`,
`cut` and `sort` work. rich honours `NO_COLOR`. Text a user or a note supplied is never parsed
as rich markup. Only the adapters (CLI, MCP) import this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from vaultmem.core.errors import VaultmemError

if TYPE_CHECKING:
    from rich.console import Console

    console: Console
    err_console: Console

# rich loads on first use of `console`/`err_console` (module `__getattr__` below): a `--json`
# command never draws with it, and importing rich's console is ~15 ms of a cold start.
_CONSOLES: dict[str, Console] = {}


def _console(name: str) -> Console:
    if name not in _CONSOLES:
        from rich.console import Console

        # NO_COLOR (https://no-color.org): rich drops colours but keeps bold and dim; we drop
        # every escape sequence, so the output is the same bytes a pipe would get, minus the
        # tables' boxes.
        plain: dict[str, Any] = {"color_system": None} if os.environ.get("NO_COLOR") else {}
        _CONSOLES[name] = Console(
            stderr=name == "err_console", highlight=False, soft_wrap=True, **plain
        )
    return _CONSOLES[name]


def stdout_is_terminal() -> bool:
    """Whether text goes to a terminal (rich draws it) or a pipe (plain lines), answered
    without importing rich when stdout is plainly not a terminal: rich's console is ~25 ms of a
    cold command whose whole output is one line for an agent or a script. Where rich would
    answer otherwise (`TTY_COMPATIBLE`, `FORCE_COLOR`, a console already made) it decides."""
    if "console" in _CONSOLES or "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return _console("console").is_terminal
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        if isatty is None or not isatty():
            return False
    except ValueError:  # closed under us: no terminal to draw on
        return False
    return _console("console").is_terminal


def __getattr__(name: str) -> Any:
    if name in ("console", "err_console"):
        return _console(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")

_UNSHOWABLE = re.compile(
    "[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]"
)
"""Control characters (all but tab and line feed) and bidirectional overrides: a title or file
name holding `ESC [2J` or U+202E would clear or reorder the user's terminal."""


def visible(text: str) -> str:
    """Text with every control and bidi character written as its escape (`\\x1b`, `\\u202e`),
    so what a note holds is shown, never executed by the terminal. JSON escapes them already."""
    if text.isascii() and text.isprintable():
        return text
    return _UNSHOWABLE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(markup: str) -> str:
    """Text made safe to embed in rich markup: `rich.markup.escape`, restated so that help
    texts and messages can be escaped without importing rich (a test compares the two)."""

    def double(match: re.Match[str]) -> str:
        backslashes, text = match.groups()
        return f"{backslashes}{backslashes}\\{text}"

    markup = _MARKUP_TAG.sub(double, visible(markup))
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


def to_jsonable(value: Any) -> Any:
    """Values with a `to_dict()`, dataclasses and named tuples (as objects), paths and
    datetimes made JSON-safe, recursively."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, type):
        return str(value)
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    if dataclasses.is_dataclass(value):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return to_jsonable(value._asdict())
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


class OutputClosed(Exception):
    """Standard output is closed, full or its reader went away: nothing printed can arrive."""


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """Turn a failed write to stdout into `OutputClosed`, so the CLI says so once and exits
    instead of printing a traceback (`status --json >&-`, `>/dev/full`, `| head -c 10`)."""
    if sys.stdout is None or sys.stdout.closed:
        raise OutputClosed("standard output is closed")
    try:
        yield
    except (OSError, ValueError) as error:  # ValueError: the stream was closed under us
        raise OutputClosed(str(error)) from error


def write(text: str) -> None:
    """Write `text` to stdout as is, or raise `OutputClosed`."""
    with _writing():
        sys.stdout.write(text)
        sys.stdout.flush()


def give_up_on_stdout(failure: BaseException) -> int:
    """After stdout failed: one line on stderr (none for a reader that left, as `head` does),
    and stdout pointed at /dev/null so the interpreter's last flush cannot fail again."""
    cause = failure.__cause__ or failure
    if not (isinstance(cause, OSError) and cause.errno == errno.EPIPE):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(f"vaultmem: cannot write the output: {cause}\n")
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    return 1


def emit_json(data: Any) -> None:
    write(json.dumps({"ok": True, "data": to_jsonable(data)}, ensure_ascii=False) + "\n")


def emit_error(error: VaultmemError, *, as_json: bool) -> None:
    if as_json:
        write(json.dumps({"ok": False, "error": error.to_dict()}, ensure_ascii=False) + "\n")
        return
    err_console = _console("err_console")
    err_console.print(f"[bold red]Error:[/] {escape(error.message)}", markup=True)
    candidates = getattr(error, "candidates", None)
    if candidates:
        for candidate in candidates:
            err_console.print(f"  - {visible(str(candidate))}", markup=False)
    if error.hint:
        err_console.print(f"[dim]Hint:[/] {escape(error.hint)}", markup=True)


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 problem`, `2 problems`, `0 problems` (`many` for irregular words)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    empty: str | None = None,
) -> None:
    """Print rows as a table; cells are shown as plain text, never as rich markup. With no
    rows, `empty` (a sentence) is printed instead. Off a terminal: tab-separated lines."""
    if not rows and empty is not None:
        line(empty)
        return
    if not stdout_is_terminal():
        line("\t".join(columns))
        for row in rows:
            line("\t".join(_cell(v) for v in row))
        return
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        grid.add_column(column, overflow="fold")
    for row in rows:
        grid.add_row(*(Text("" if v is None else visible(str(v))) for v in row))
    _console("console").print(grid)


def _cell(value: Any) -> str:
    """One plain cell: tabs and line breaks made visible so a row stays one line."""
    text = "" if value is None else str(value)
    text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return visible(text)


def marked(snippet: str) -> str:
    """A snippet's `**matched**` words as rich bold; everything else escaped."""
    parts = snippet.split("**")
    return "".join(
        escape(p) if i % 2 == 0 else f"[bold yellow]{escape(p)}[/]" for i, p in enumerate(parts)
    )


def line(text: str) -> None:
    """One line of plain text (never markup), its control characters shown as escapes."""
    text = visible(text)
    if stdout_is_terminal():
        with _writing():
            _console("console").print(text, markup=False)
    else:
        write(text + "\n")

"""The `vaultmem` command line: click commands built from the operation table, rendered as text.

Every command is an `Operation` of the registry (`adapters/commands/`), plus `mcp` (declared
here: the server imports the registry, so the registry cannot import the server). Its options,
defaults, bounds and help come from that table through click's public API (`click.Command`,
`click.Option`, `click.Argument`), so the CLI and the MCP server cannot drift. The top-level
group builds a command only when click looks it up (`Group.get_command`, click's way to load
subcommands lazily): a cold process turns one operation into a click command, help and shell
completion all of them. A command binds its options (`contract.bind`: click parses, the
contract checks), opens the vault, runs the operation, and prints either the JSON envelope
(`--json`: the same data the MCP tool returns) or the operation's text renderer.

Failures are handled in one place (`main`): a `VaultmemError` prints `Error: …` and a hint to
stderr (exit 1), or, with `--json`, exactly one error envelope on stdout. Usage errors (an
unknown option, a value out of bounds, a choice not offered: code `invalid_argument`) exit 2,
with an envelope too when `--json` was asked for. No failure prints a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from vaultmem.adapters import commands, contract, output
from vaultmem.adapters.commands.params import VAULT
from vaultmem.adapters.contract import UNSET, Call, Operation, Param
from vaultmem.adapters.output import OutputClosed
from vaultmem.core.errors import FileAccessError, InternalError, InvalidArgumentError, VaultmemError
from vaultmem.core.version import __version__
from vaultmem.vault import Vault

PROG = "vaultmem"
HELP = (
    "An Obsidian vault as the memory of AI agents: index, search and recall notes.\n\n"
    "Every command takes --json (one envelope on stdout, for agents); `vaultmem COMMAND -h` "
    "shows its options and examples."
)
_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def _serve_mcp(call: Call) -> None:
    if call.args.get("http") is not None:
        from vaultmem.adapters.mcp_server import serve_http

        return serve_http(call.args["vault"], call.args["http"])
    from vaultmem.adapters.mcp_server import serve

    serve(call.args["vault"])


MCP = Operation(
    "mcp",
    "Serve the memory tools over MCP on stdio (for Claude Code, Codex, Kiro) or HTTP.",
    "Agents",
    (
        VAULT,
        Param(
            "http",
            "str",
            "Serve over streamable HTTP at /mcp instead of stdio (host default 127.0.0.1; a "
            "bearer token is always required: its file is printed at start).",
            metavar="[HOST:]PORT",
            max_length=300,
            mcp=False,
        ),
    ),
    _serve_mcp,
    examples=(
        "claude mcp add vaultmem -- vaultmem mcp --vault ~/Notes",
        "vaultmem mcp --http 127.0.0.1:8765 --vault ~/Notes",
    ),
    needs_vault=False,
    json_help=None,
    streams=True,
)
OPERATIONS: tuple[Operation, ...] = (*commands.OPERATIONS, MCP)
"""Every command of the CLI, in help order within each panel."""
BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
PANELS = ("Index", "Query", "Memory", "Agents", "OKF", "")


class _Run:
    """Per-invocation output mode, set by each command before it can fail."""

    json = False


# -- click commands from the table ----------------------------------------------------------

_TYPES: dict[str, click.ParamType[Any]] = {"int": click.INT, "float": click.FLOAT}


def _click_params(p: Param) -> list[click.Parameter]:
    """The click parameters of one contract param: types and help; `bind` checks bounds."""
    default: Any = p.cli_default if p.cli_default is not UNSET else p.default
    help_text = p.help + p.bounds_text()
    if p.positional:
        required = (p.required or p.cli_required) and p.cli_default is UNSET
        # No `default=None`: click counts an explicit None as a default, and a required
        # argument with a default is never missing.
        given = {} if required or default is None else {"default": str(default)}
        return [
            click.Argument(
                [p.name], required=required, metavar=p.metavar or p.name.upper(), **given
            )
        ]
    names = [*p.cli_flags, p.name]
    if p.kind == "bool":
        return [click.Option(names, is_flag=True, default=bool(default), help=help_text)]
    if p.kind == "pairs":  # the first flag takes NAME VALUE, the others NAME=VALUE
        first, *others = p.cli_flags
        pairs = click.Option([first, p.name], nargs=2, multiple=True, metavar=p.metavar)
        pairs.help = help_text
        if not others:
            return [pairs]
        joined = click.Option(
            [*others, f"{p.name}__joined"],
            multiple=True,
            metavar="NAME=VALUE",
            help=f"The same as {first}, as one word.",
        )
        return [pairs, joined]
    if p.kind == "strs":
        return [
            click.Option(
                names,
                multiple=True,
                metavar=p.metavar,
                help=help_text,
                show_default=",".join(default) if default else False,
            )
        ]
    return [
        click.Option(
            names,
            type=_TYPES.get(p.kind, click.STRING),
            metavar=p.metavar,
            help=help_text,
            show_default=default is not None,
            required=p.required,
            **({} if default is None else {"default": default}),
        )
    ]


class _Command(click.Command):
    """An operation's command: click's help plus the arguments' help and the examples."""

    def __init__(self, name: str, op: Operation) -> None:
        params = [c for p in op.params if p.cli for c in _click_params(p)]
        if op.json_help:
            params.append(click.Option(["--json", "as_json"], is_flag=True, help=op.json_help))
        super().__init__(
            name,
            params=params,
            callback=lambda **values: _invoke(op, values),
            help=op.summary,
            short_help=op.summary,
            context_settings=_SETTINGS,
        )
        self.op = op

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [_argument_help(p) for p in self.op.params if p.positional and p.cli]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)
        super().format_options(ctx, formatter)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.op.examples:
            with formatter.section("Examples"):
                for example in self.op.examples:
                    formatter.write(f"{'':>{formatter.current_indent}}$ {example}\n")


def _argument_help(p: Param) -> tuple[str, str]:
    default = p.cli_default if p.cli_default is not UNSET else p.default
    required = (p.required or p.cli_required) and p.cli_default is UNSET
    tail = " [required]" if required else f" [default: {default}]" if default is not None else ""
    return p.metavar or p.name.upper(), p.help + p.bounds_text() + tail


class _Group(click.Group):
    """A level of commands (the top, or a group such as `export`) whose commands are built
    from the table when click looks one up, never all at once for a single command."""

    def __init__(self, name: str, prefix: str, **kwargs: Any) -> None:
        super().__init__(name, no_args_is_help=True, context_settings=_SETTINGS, **kwargs)
        self.prefix = prefix  # "" at the top, "export " for the export group

    def list_commands(self, ctx: click.Context) -> list[str]:
        words = (
            op.name.removeprefix(self.prefix).split(" ")[0]
            for op in OPERATIONS
            if op.name.startswith(self.prefix)
        )
        return list(dict.fromkeys(words))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        op = BY_NAME.get(self.prefix + name)
        if op is not None:
            return _Command(name, op)
        if not self.prefix and name in commands.GROUPS:
            return _Group(name, f"{name} ", help=commands.GROUPS[name])
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands under their panel's heading (Index, Query, ...)."""
        panels: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None:  # pragma: no cover - list_commands names only real ones
                continue
            op = BY_NAME.get(self.prefix + name)
            panel = op.panel if op and not self.prefix else "OKF" if not self.prefix else ""
            panels.setdefault(panel, []).append((name, command.get_short_help_str(limit=70)))
        for panel in sorted(panels, key=lambda p: PANELS.index(p) if p in PANELS else 99):
            with formatter.section(panel or "Commands"):
                formatter.write_dl(panels[panel])


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        output.line(f"{PROG} {__version__}")
        ctx.exit(0)


def _completion(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from vaultmem.adapters import completion

        action = completion.install if param.name == "install_completion" else completion.show
        output.line(action(ctx.command, PROG))
        ctx.exit(0)


def build_cli() -> click.Group:
    """The `vaultmem` group; its commands are built as click looks them up."""
    return _Group(
        PROG,
        "",
        help=HELP,
        params=[
            click.Option(
                ["--version", "-V"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_show_version,
                help="Print the version.",
            ),
            click.Option(
                ["--install-completion"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_completion,
                help="Install completion for the current shell (bash, zsh or fish).",
            ),
            click.Option(
                ["--show-completion"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_completion,
                help="Print the completion script for the current shell.",
            ),
        ],
    )


def _invoke(op: Operation, values: dict[str, Any]) -> None:
    as_json = bool(values.pop("as_json", False))
    _Run.json = as_json
    raw: dict[str, Any] = {}
    for p in op.params:
        if not p.cli:
            continue
        value = values.get(p.name)
        if p.kind == "pairs":
            joined = [item.partition("=")[::2] for item in values.get(f"{p.name}__joined", ())]
            value = [list(pair) for pair in (*(value or ()), *joined)]
        if value is None:
            continue
        if p.stdin_dash and value == "-":
            value = _read_stdin(p.max_length)
        if p.comma_lists:
            value = [part.strip() for item in value for part in item.split(",") if part.strip()]
        raw[p.name] = list(value) if p.kind in ("strs", "pairs") else value
    args = contract.bind(op, raw, adapter="cli")
    vault = Vault(args.get("vault")) if op.needs_vault else None
    bar, update = _progress_bar(op.progress and not as_json)
    if op.progress and as_json:
        update = _progress_lines(_progress_min_notes())
    try:
        result = op.run(Call(vault, args, progress=update, as_json=as_json))
    finally:
        if bar is not None:
            bar.stop()
    if op.streams:
        pass
    elif as_json:
        output.emit_json(contract.data(result))
    else:
        (op.render or _render_json)(result, args)
    code = op.exit_code(result) if op.exit_code else 0
    if code:
        raise click.exceptions.Exit(code)


def _read_stdin(limit: int | None) -> str:
    """Standard input as text, reading at most `limit + 1` characters: enough for the bound
    check to refuse an oversized value without holding all of it (`/dev/zero` never ends)."""
    if sys.stdin is None or sys.stdin.closed:
        raise InvalidArgumentError(
            "Standard input is closed, so `-` has nothing to read.",
            hint="Pipe the text in (`echo … | vaultmem store KEY -`) or pass it as an argument.",
        )
    try:
        return sys.stdin.read(-1 if limit is None else limit + 1)
    except UnicodeDecodeError as error:
        raise InvalidArgumentError(
            f"Standard input is not valid UTF-8 (byte {error.start}).",
            hint="Convert the text to UTF-8 first (e.g. with iconv).",
        ) from error


def _undecodable(args: Sequence[str]) -> InvalidArgumentError | None:
    """An error naming the first argument that was not valid UTF-8, or None. Python hands such
    bytes over as lone surrogates (`\\udcff`), which no name, key or query can hold."""
    for position, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return InvalidArgumentError(
                f"Argument {position} ('{shown}') is not valid UTF-8.",
                hint="Pass names, keys and text as UTF-8 (check the terminal's locale).",
            )
    return None


def _render_json(result: Any, args: dict[str, Any]) -> None:
    output.line(json.dumps(contract.data(result), indent=2, ensure_ascii=False))


PROGRESS_MIN_NOTES = 500
"""Runs over fewer notes show no progress: they end before a bar or a line would help.
`VAULTMEM_PROGRESS_MIN_NOTES` changes it (a test's small vault sets it low)."""


def _progress_min_notes() -> int:
    value = os.environ.get("VAULTMEM_PROGRESS_MIN_NOTES", "")
    return int(value) if value.isdigit() else PROGRESS_MIN_NOTES


def _progress_bar(enabled: bool) -> Any:
    """A rich progress callback for large runs on a terminal; None otherwise."""
    if not enabled or not sys.stderr.isatty():
        return None, None
    from rich.progress import Progress

    bar = Progress(console=output.err_console, transient=True)
    task = bar.add_task("Parsing", total=None)
    state = {"started": False}
    minimum = _progress_min_notes()
    labels = {"parse": "Parsing", "search": "Search tables"}

    def update(phase: str, done: int, total: int) -> None:
        if total < minimum:
            return
        if not state["started"]:
            bar.start()
            state["started"] = True
        bar.update(task, completed=done, total=total, description=labels.get(phase, phase))

    return bar, update


def _progress_lines(minimum: int) -> Callable[[str, int, int], None]:
    """`--json`'s progress: one JSON line on stderr each time a phase passes another tenth,
    `{"progress": {"phase": "parse", "done": N, "total": M}}` (docs/agents.md), for runs of
    at least `minimum` notes; stdout keeps the one result object."""
    shown: dict[str, int] = {}

    def update(phase: str, done: int, total: int) -> None:
        if total < max(minimum, 1):
            return
        tenth = done * 10 // total  # the last line, done == total, is the tenth tenth
        if tenth <= shown.get(phase, 0):
            return
        shown[phase] = tenth
        line = {"progress": {"phase": phase, "done": done, "total": total}}
        sys.stderr.write(json.dumps(line) + "\n")
        sys.stderr.flush()

    return update


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the command line and turn every failure into an exit code and one
    message (click's standalone mode off: the errors are ours to render)."""
    args = list(sys.argv[1:] if argv is None else argv)
    _Run.json = False

    def as_json() -> bool:  # read after the command ran: it sets _Run.json
        return _Run.json or "--json" in args

    if (undecodable := _undecodable(args)) is not None:
        return _report(undecodable, as_json(), 2)
    try:
        code = build_cli().main(args=args, prog_name=PROG, standalone_mode=False)
        if isinstance(code, int) and code:
            return code  # a command's `Exit(n)`, which click returns in this mode
    except InvalidArgumentError as error:
        return _report(error, as_json(), 2)
    except VaultmemError as error:
        return _report(error, as_json(), 1)
    except OutputClosed as failure:
        return output.give_up_on_stdout(failure)
    except OSError as error:
        return _report(FileAccessError.from_os_error(error), as_json(), 1)
    except (click.Abort, KeyboardInterrupt):
        return 130
    except click.UsageError as error:
        if as_json() and not isinstance(error, click.exceptions.NoArgsIsHelpError):
            where = error.ctx.command_path if error.ctx else PROG
            hint = f"See `{where} --help`."
            output.emit_error(InvalidArgumentError(error.format_message(), hint=hint), as_json=True)
        else:
            error.show()
        return error.exit_code
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except Exception as error:
        return _report(InternalError(f"{type(error).__name__}: {error}"), as_json(), 1)
    return 0


def _report(error: VaultmemError, as_json: bool, code: int) -> int:
    """Print the error where it belongs and return the exit status; when stdout itself is
    gone (closed, full, a reader that went away) say so once on stderr instead."""
    try:
        output.emit_error(error, as_json=as_json)
    except OutputClosed as failure:
        output.give_up_on_stdout(failure)
    return code


if __name__ == "__main__":
    sys.exit(main())

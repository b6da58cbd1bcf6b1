"""The `vaultmem` command line: commands generated from the shared contract, rendered as text.

Every command but `watch`, `mcp` and `version` is an `Operation` of `adapters/operations.py`:
its options, defaults, bounds and help come from that table, so the CLI and the MCP server
cannot drift. A command binds its options (`contract.bind`), opens the vault, runs the
operation, and prints either the JSON envelope (`--json`: the same data the MCP tool returns)
or the text renderer registered here with `@text_renderer(name)`.

Failures are handled in one place (`main`): a `VaultmemError` prints `Error: …` and a hint to
stderr (exit 1), or, with `--json`, exactly one error envelope on stdout. Usage errors (an
unknown option, a value out of bounds, a choice not offered: code `invalid_argument`) exit 2,
with an envelope too when `--json` was asked for. No failure prints a traceback.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from vaultmem import __version__
from vaultmem.adapters import contract, operations, output
from vaultmem.adapters.contract import Call, Operation, Param
from vaultmem.adapters.output import escape
from vaultmem.core.errors import FileAccessError, InternalError, InvalidArgumentError, VaultmemError
from vaultmem.vault import Vault

if TYPE_CHECKING:  # the watcher (and watchfiles) load only for `vaultmem watch`
    from vaultmem.index.watch import WatchEvent

_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
# Typer's help prints an argument's type (`<str>`) next to its metavar (`KEY`), which only
# repeats it; options show their metavar (`N`, `SCOPE`) and flags nothing (`metavar=""`).
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
_option_type = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = (  # type: ignore[method-assign]
    lambda self, ctx: "" if self.is_flag else _option_type(self, ctx)
)


class _PlainValues:
    """Typer coerces every parameter's value through a pydantic `TypeAdapter`; importing pydantic
    and building the adapters is ~0.1 s of every cold command. A value already of the
    parameter's plain type (a `str` for `str`, the default `10` for `int`, None) comes out of
    that unchanged, so it is returned as is, and a path's text becomes the `Path` the coercion
    would make (`--vault DIR`); any other value (`--limit 5` arrives as "5") goes
    through typer's own coercion, errors and all."""

    _PLAIN = (str, int, float)

    def __init__(self, param: Any) -> None:
        self._param = param

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        ann = param.type_descriptor.annotation
        if ann is Path and type(value) is str:
            return Path(value)  # what the coercion makes of it (`--vault DIR`)
        if value is None or (ann in self._PLAIN and type(value) is ann):
            multi = param.multiple or param.nargs == -1
            if value is None and multi:
                return ()
            return value
        return _runtime_param(self._param).coerce(value, param=param, ctx=ctx)


_parameter_class: Any = getattr(typer.core, "_TyperParameter", None)
_runtime_param: Any = getattr(_parameter_class, "get_runtime_param", None)
if _runtime_param is not None:  # a typer without it coerces as it does
    _parameter_class.get_runtime_param = lambda self: _PlainValues(self)


_GROUPS = {
    "export": "Export memory from the vault (OKF bundles).",
    "import": "Import memory into the vault (OKF bundles).",
    "validate": "Validate files vaultmem reads or writes.",
}


class _Run:
    """Per-invocation output mode, set by each command before it can fail."""

    json = False


def _show_version(value: bool) -> None:
    if value:
        output.line(f"vaultmem {__version__}")
        raise typer.Exit(0)


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_show_version,
            help="Print the version.",
            metavar="",
        ),
    ] = False,
) -> None:
    """An Obsidian vault as the memory of AI agents: index, search and recall notes."""


# -- commands generated from the contract ----------------------------------------------------

_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "strs": list[str],
    "path": Path,
    "pairs": list[str],  # NAME=VALUE; main() joins `-p NAME VALUE` (typer has no nargs=2 lists)
}
Renderer = Callable[[Any, dict[str, Any]], None]
_RENDERERS: dict[str, Renderer] = {}


def text_renderer(name: str) -> Callable[[Renderer], Renderer]:
    """Register how operation `name` prints without --json."""

    def register(render: Renderer) -> Renderer:
        _RENDERERS[name] = render
        return render

    return register


def _help(p: Param) -> str:
    return escape(p.help + p.bounds_text())


def _parameter(p: Param) -> inspect.Parameter:
    """A typer parameter for one contract param: type and help only; `bind` checks bounds."""
    kind = _TYPES[p.kind]
    default: Any = p.cli_default if p.cli_default is not contract.UNSET else p.default
    if p.kind in ("strs", "pairs"):
        show: bool | str = bool(default) and ",".join(default)
        default = None
    else:
        show = default is not None and default is not False
    required = (p.required or p.cli_required) and p.cli_default is contract.UNSET
    info: Any
    if p.positional:
        info = typer.Argument(help=_help(p), metavar=p.metavar, show_default=show)
    elif p.kind == "bool":
        info = typer.Option(*p.cli_flags, help=_help(p), metavar="")
    else:
        info = typer.Option(*p.cli_flags, help=_help(p), metavar=p.metavar, show_default=show)
    annotation = Annotated[kind if required or default is not None else kind | None, info]  # type: ignore[valid-type]
    return inspect.Parameter(
        p.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if required else default,
        annotation=annotation,
    )


_JSON_PARAM = inspect.Parameter(
    "as_json",
    inspect.Parameter.KEYWORD_ONLY,
    default=False,
    annotation=Annotated[
        bool, typer.Option("--json", help="Print one JSON envelope (agents).", metavar="")
    ],
)


def _register(op: Operation, app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    parameters = [_parameter(p) for p in op.params if p.cli] + [_JSON_PARAM]

    def command(**kwargs: Any) -> None:
        _invoke(op, kwargs)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__name__ = op.name.replace(" ", "_")
    group, _, name = op.name.rpartition(" ")
    examples = "\n\n".join(f"[dim]$[/] {escape(e)}" for e in op.examples)
    (groups[group] if group else app).command(
        name,
        help=escape(op.summary),
        epilog=f"[bold]Examples[/]\n\n{examples}" if examples else None,
        rich_help_panel=None if group else op.panel,
    )(command)


def _invoke(op: Operation, kwargs: dict[str, Any]) -> None:
    as_json = bool(kwargs.pop("as_json", False))
    _Run.json = as_json
    raw: dict[str, Any] = {}
    for p in op.params:
        value = kwargs.get(p.name)
        if value is None or not p.cli:
            continue
        if p.stdin_dash and value == "-":
            value = sys.stdin.read()
        if p.comma_lists:
            value = [part.strip() for item in value for part in item.split(",") if part.strip()]
        if p.kind == "pairs":
            value = [item.partition("=")[::2] for item in value]
        raw[p.name] = list(value) if p.kind in ("strs", "pairs") else value
    args = contract.bind(op, raw, adapter="cli")
    vault = Vault(args.get("vault")) if op.needs_vault else None
    bar, update = _progress_bar(op.name in ("reconcile", "rebuild") and not as_json)
    try:
        result = op.run(Call(vault, args, progress=update))
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        output.emit_json(contract.data(result))
    else:
        _RENDERERS.get(op.name, _render_json)(result, args)
    code = op.exit_code(result) if op.exit_code else 0
    if code:
        raise typer.Exit(code)


def _render_json(result: Any, args: dict[str, Any]) -> None:
    output.line(json.dumps(contract.data(result), indent=2, ensure_ascii=False))


def _progress_bar(enabled: bool) -> Any:
    """A rich progress callback for large runs on a terminal; None otherwise."""
    if not enabled or not sys.stderr.isatty():
        return None, None
    from rich.progress import Progress

    bar = Progress(console=output.err_console, transient=True)
    task = bar.add_task("Parsing", total=None)
    state = {"started": False}

    def update(done: int, total: int) -> None:
        if total < 500:
            return
        if not state["started"]:
            bar.start()
            state["started"] = True
        bar.update(task, completed=done, total=total)

    return bar, update


# -- text renderers -----------------------------------------------------------------------------

P = output.plural


@text_renderer("init")
def _init_text(result: contract.Initialised, args: dict[str, Any]) -> None:
    for warning in result.warnings:
        output.err_console.print(f"[yellow]Warning:[/] {escape(warning)}")
    output.line(f"Initialised {result.config}")
    for m in result.mappings:
        where = f"{m.scope}:{m.scope_id}" if m.scope_id else m.scope
        output.line(f"  {m.folder or '(whole vault)'} → {where}")
    for path in result.written:
        output.line(f"Wrote {path}")
    output.line(f"Next: vaultmem reconcile --vault {result.vault}")


@text_renderer("reconcile")
@text_renderer("rebuild")
def _reconcile_text(report: Any, args: dict[str, Any]) -> None:
    for warning in report.warnings:
        output.err_console.print(f"[yellow]Warning:[/] {escape(warning)}")
    output.line(
        f"{report.mode}: {P(report.notes, 'note')} — {report.added} added, {report.changed} "
        f"changed, {report.removed} removed, {report.renamed} renamed, {report.unchanged} "
        f"unchanged; {P(report.problems, 'problem')}; {report.duration_s:.2f} s"
    )


@text_renderer("status")
def _status_text(result: Any, args: dict[str, Any]) -> None:
    output.table(
        "Mapped folders",
        ["folder", "scope", "scope id", "notes"],
        [(f.folder or "(vault)", f.scope, f.scope_id, f.notes) for f in result.folders],
        empty="No notes indexed yet.",
    )
    output.line(
        f"{P(result.notes, 'note')}, {P(result.links, 'link')} ({result.unresolved_links} "
        f"unresolved), {P(result.problems, 'problem')}; index {result.index_bytes / 1e6:.1f} MB"
    )
    run = result.last_run
    if run:
        output.line(
            f"Last reconcile {run['started']} ({run['mode']}, {run['duration_ms']:.0f} ms); "
            f"{P(result.changed_since_last_run, 'file')} changed since"
        )
    if result.project:
        rule = {"mapping": "its mapped folder", "remote": "its git remote", "path": "its path"}
        output.line(
            f"A project write from here goes to project:{result.project['scope_id']} "
            f"(named by {rule.get(result.project['source'], result.project['source'])})"
        )


@text_renderer("problems")
def _problems_text(rows: list[dict[str, Any]], args: dict[str, Any]) -> None:
    output.table(
        P(len(rows), "problem"),
        ["path", "line", "code", "message"],
        [(r["path"], r["line"], r["code"], r["message"]) for r in rows],
        empty="No problems: every file was read fully.",
    )


@text_renderer("show")
def _show_text(detail: Any, args: dict[str, Any]) -> None:
    n = detail.note
    output.line(f"{n['title']}  ({n['path']})")
    output.line(
        f"id {n['id']} · scope {n['scope']}"
        + (f":{n['scope_id']}" if n["scope_id"] else "")
        + (" · managed" if n["managed"] else "")
        + f" · frontmatter {n['frontmatter_status']}"
    )
    if detail.aliases:
        output.line("aliases: " + ", ".join(detail.aliases))
    if detail.tags:
        output.line("tags: " + ", ".join("#" + t for t in detail.tags))
    for h in detail.headings:
        output.line(f"{'  ' * (h['level'] - 1)}{'#' * h['level']} {h['text']}  (line {h['line']})")
    output.line(f"{P(detail.links_out, 'outgoing link')}, {P(detail.backlinks, 'backlink')}")
    for p in detail.problems:
        output.line(f"problem: {p['code']} (line {p['line']}): {p['message']}")


def _link_rows(rows: list[dict[str, Any]], source: bool) -> list[tuple[Any, ...]]:
    return [
        (
            *((r["source_path"],) if source else ()),
            r["line"],
            r["kind"]
            + (f":{r['relation']}" if r["relation"] else "")
            + (" embed" if r["embed"] else ""),
            r["raw"],
            r["target_path"] or "(unresolved)",
            {None: "", True: "yes", False: "MISSING"}[r["subpath_found"]],
        )
        for r in rows
    ]


@text_renderer("links")
def _links_text(result: contract.Links, args: dict[str, Any]) -> None:
    path = result.note.path
    if result.direction == "neighbours":
        output.table(
            f"Neighbours of {path}",
            ["depth", "path", "title"],
            [(r["depth"], r["path"], r["title"]) for r in result.links],
            empty=f"No note is linked to or from {path}.",
        )
    elif result.direction == "backlinks":
        _backlinks_text({"note": result.note, "backlinks": result.links}, args)
    else:
        output.table(
            f"Links from {path}",
            ["line", "kind", "link", "target", "subpath"],
            _link_rows(list(result.links), source=False),
            empty=f"{path} has no outgoing links.",
        )


@text_renderer("backlinks")
def _backlinks_text(result: dict[str, Any], args: dict[str, Any]) -> None:
    path = result["note"].path
    output.table(
        f"Backlinks to {path}",
        ["source", "line", "kind", "link", "target", "subpath"],
        _link_rows(result["backlinks"], source=True),
        empty=f"No note links to {path}.",
    )


@text_renderer("unresolved")
def _unresolved_text(rows: list[dict[str, Any]], args: dict[str, Any]) -> None:
    output.table(
        "Unresolved links",
        ["target", "links", "from"],
        [
            (
                r["target"],
                r["links"],
                ", ".join(r["sources"][:3]) + (" …" if len(r["sources"]) > 3 else ""),
            )
            for r in rows
        ],
        empty="No unresolved links: every link points at a file.",
    )


@text_renderer("search")
def _search_text(result: contract.Hits, args: dict[str, Any]) -> None:
    if not result.hits:
        return output.line("No notes match.")
    for i, hit in enumerate(result.hits, 1):
        # The section under the note's own H1 is named by the title already.
        where = f" › {hit.heading}" if hit.heading and hit.heading != hit.title else ""
        _ranked_hit(
            i,
            hit.title,
            where,
            f"{hit.path}:{hit.line} · {hit.scope} · {hit.score:.3f}",
            hit.snippet,
        )


def _ranked_hit(rank: int, name: str, after: str, where: str, snippet: str) -> None:
    """One search or recall hit: `N. name after  where`, then its snippet indented. Plain text
    when stdout is not a terminal; user text escaped before rich styles the rest."""
    if not output.console.is_terminal:
        output.line(f"{rank}. {name}{after}  {where}")
        output.line("   " + snippet)
        return
    output.console.print(f"{rank}. [bold]{escape(name)}[/]{escape(after)}  [dim]{escape(where)}[/]")
    output.console.print("   " + output.marked(snippet))


@text_renderer("sql")
def _sql_text(result: Any, args: dict[str, Any]) -> None:
    if args["jsonl"]:
        for row in result.rows:
            output.line(json.dumps(dict(zip(result.columns, row, strict=True)), ensure_ascii=False))
    elif args["csv"] or args["tsv"]:
        writer = csv.writer(
            sys.stdout, dialect="excel-tab" if args["tsv"] else "excel", lineterminator="\n"
        )
        writer.writerow(result.columns)
        writer.writerows(
            [json.dumps(v) if isinstance(v, list | dict) else v for v in row] for row in result.rows
        )
    else:
        output.table(None, result.columns, result.rows, empty="(no rows)")
    if result.truncated:
        output.err_console.print(
            f"Warning: only the first {P(len(result.rows), 'row')} are shown "
            "(--max-rows raises the limit).",
            markup=False,
        )


@text_renderer("store")
@text_renderer("correct")
def _store_text(result: Any, args: dict[str, Any]) -> None:
    if result.duplicate_of:
        output.line("Already stored, nothing appended: " + _topic_line(result))
        return
    verb = "Corrected " if result.corrected else "Created " if result.created else "Appended to "
    output.line(verb + _topic_line(result))
    if result.redacted:
        output.line("Redacted: " + ", ".join(result.redacted))


def _topic_line(result: Any) -> str:
    where = result.scope + (f":{result.scope_id}" if result.scope_id else "")
    return f"{result.key} ({where}) {result.path} @ {result.timestamp}"


@text_renderer("get")
def _get_text(view: Any, args: dict[str, Any]) -> None:
    t = view.topic
    output.line(
        f"{t.key}  ({view.path}) · {t.type} · tags {', '.join(t.tags) or '-'}"
        f" · recalled {view.usage.count if view.usage else 0}×"
    )
    for obs in t.observations:
        mark = f"  [superseded by {obs.superseded_by}]" if obs.superseded_by else ""
        output.line(f"\n{obs.timestamp}{mark}\n{obs.text}")


@text_renderer("forget")
def _forget_text(result: Any, args: dict[str, Any]) -> None:
    output.line(f"Moved {result.path} to {result.trashed_to}")


@text_renderer("prune")
def _prune_text(result: Any, args: dict[str, Any]) -> None:
    output.table(
        P(len(result.items), "expired topic") + ("" if args["apply"] else " (not moved)"),
        ["path", "type", "updated", "expired", "moved to"],
        [(i.path, i.type, i.updated, i.expired_at, i.trashed_to) for i in result.items],
        empty="No expired topics.",
    )


def _edge_table(title: str, rows: list[Any]) -> None:
    output.table(
        title,
        ["edge", "type", "source", "target", "origin", "status"],
        [(e.id, e.type, e.source_path, e.target_path, e.origin, e.status) for e in rows],
        empty="No edges.",
    )


text_renderer("relate")(lambda edge, args: _edge_table("Recorded", [edge]))
text_renderer("accept")(lambda edge, args: _edge_table("Accepted", [edge]))
text_renderer("reject")(lambda edge, args: _edge_table("Rejected", [edge]))
text_renderer("edges")(lambda rows, args: _edge_table(P(len(rows), "edge"), rows))


@text_renderer("recall")
def _recall_text(result: contract.Hits, args: dict[str, Any]) -> None:
    if not result.hits:
        return output.line("Nothing recalled.")
    for i, hit in enumerate(result.hits, 1):
        where = hit.scope + (f":{hit.scope_id}" if hit.scope_id else "")
        flags = (" [related]" if hit.related else "") + ("" if hit.fresh else " [stale]")
        _ranked_hit(i, hit.key, flags, f"{hit.path} · {where} · {hit.score:.3f}", hit.snippet)


@text_renderer("read")
def _read_text(result: Any, args: dict[str, Any]) -> None:
    sys.stdout.write(result.text + ("" if result.text.endswith("\n") else "\n"))
    if result.next_offset is not None:
        sys.stderr.write(
            f"[{result.next_offset} of {result.total_bytes} bytes; "
            f"continue with --offset {result.next_offset}]\n"
        )


@text_renderer("recent")
def _recent_text(result: dict[str, Any], args: dict[str, Any]) -> None:
    notes = result["notes"]
    output.table(
        P(len(notes), "recently changed note"),
        ["modified", "path", "scope"],
        [(n.modified, n.path, n.scope + (f":{n.scope_id}" if n.scope_id else "")) for n in notes],
    )


text_renderer("used")(lambda ref, args: output.line(f"Used {ref.path}"))


@text_renderer("context")
def _context_text(result: Any, args: dict[str, Any]) -> None:
    if args["write"] is None:
        return output.line(result.text)
    verb = "Created" if result.created else "Updated" if result.changed else "Unchanged:"
    output.line(f"{verb} {result.path} ({P(len(result.block.entries), 'entry', 'entries')})")


@text_renderer("export okf")
def _export_text(report: Any, args: dict[str, Any]) -> None:
    output.line(
        f"{P(report.concepts, 'concept')} → {report.out}: {P(len(report.written), 'file')} "
        f"written, {report.unchanged} unchanged, {len(report.pruned)} pruned; "
        f"{P(report.links_rewritten, 'link')} rewritten, {report.links_outside} outside the "
        "bundle made plain text"
    )
    for item in report.skipped:
        output.line(f"skipped {item['path']}: holds a secret ({item['patterns']})")


@text_renderer("import okf")
def _import_text(report: Any, args: dict[str, Any]) -> None:
    output.line(
        ("Dry run: " if report.dry_run else "")
        + f"{report.imported} imported, {report.replaced} replaced, {report.merged} merged, "
        f"{report.skipped} skipped, {len(report.rejected)} rejected; "
        f"{P(report.links_rewritten, 'link')} rewritten, "
        f"{P(report.timestamps_clamped, 'timestamp')} clamped"
    )
    for item in report.rejected:
        output.line(f"rejected {item['path']}: {item['reason']}")


@text_renderer("validate okf")
def _validate_text(report: Any, args: dict[str, Any]) -> None:
    for f in report.findings:
        output.line(f"{f.level}: {f.path}: {f.message}")
    output.line(
        f"{P(report.concepts, 'concept')}, {P(len(report.errors), 'error')}, "
        f"{P(len(report.warnings), 'warning')}"
    )


# -- commands with adapter-only behaviour: a stream of events, a server, the version ------------

VaultOpt = Annotated[
    Path | None, typer.Option("--vault", help=escape(operations.VAULT.help), metavar="DIR")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="One JSON envelope per event and line.", metavar="")
]


def _render_watch_event(event: WatchEvent, *, as_json: bool) -> None:
    """One line per event: a JSON envelope with `--json`, else `12:01:03 batch: …`."""
    if as_json:
        output.emit_json(event)
    else:
        counts = [
            (n, w)
            for n, w in (
                (event.added, "added"),
                (event.changed, "changed"),
                (event.removed, "removed"),
                (event.renamed, "renamed"),
            )
            if n
        ]
        what = ", ".join(f"{n} {w}" for n, w in counts) or "no note changed"
        stamp = event.at.astimezone().strftime("%H:%M:%S")
        if event.kind in ("batch", "sweep") or (event.kind == "config" and event.notes):
            paths = f"{P(event.paths, 'path')} — " if event.kind == "batch" else ""
            text = (
                f"{stamp} {event.kind}: {paths}{what}; {P(event.notes, 'note')}, "
                f"{P(event.problems, 'problem')}; {event.duration_s * 1000:.0f} ms"
            )
            if event.message:
                text += f" ({event.message})"
        else:
            text = f"{stamp} {event.kind}: {event.message}"
        if event.kind == "error":
            output.err_console.print(text, markup=False)
        else:
            output.line(text)
    sys.stdout.flush()


def watch(
    vault: VaultOpt = None,
    debounce_ms: Annotated[
        int,
        typer.Option(
            "--debounce-ms",
            min=1,
            metavar="MS",
            help="Gather a burst of changes for at most this long.",
        ),
    ] = 300,
    sweep_s: Annotated[
        float,
        typer.Option("--sweep-s", min=1.0, metavar="S", help="Seconds between full reconciles."),
    ] = 300,
    as_json: JsonOpt = False,
) -> None:
    """Keep the index current while the vault changes, until SIGINT or SIGTERM (exit 0)."""
    _Run.json = as_json
    v = Vault(vault)
    operations.check_is_a_vault(v)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _signum, _frame: stop.set())
    v.watch(
        debounce_ms=debounce_ms,
        sweep_s=sweep_s,
        stop=stop,
        emit=lambda event: _render_watch_event(event, as_json=as_json),
    )


def mcp(vault: VaultOpt = None) -> None:
    """Serve the memory tools over MCP on stdio (for Claude Code, Codex, Kiro)."""
    from vaultmem.adapters.mcp_server import serve

    serve(vault)


def version() -> None:
    """Print the version (as --version does)."""
    output.line(f"vaultmem {__version__}")


_ADAPTER_COMMANDS: dict[str, tuple[Callable[..., None], dict[str, Any]]] = {
    "watch": (
        watch,
        {
            "rich_help_panel": "Index",
            "epilog": "[bold]Examples[/]\n\n[dim]$[/] vaultmem watch --vault ~/Notes --json",
        },
    ),
    "mcp": (
        mcp,
        {
            "rich_help_panel": "Agents",
            "epilog": "[bold]Examples[/]\n\n[dim]$[/] claude mcp add vaultmem -- vaultmem mcp "
            "--vault ~/Notes",
        },
    ),
    "version": (version, {}),
}


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app: every command, or only the command named `only` (`search`, `export
    okf`). A cold process runs one command, and turning ~30 commands into click commands
    (signatures, options, help) costs more than its own parse; `main` builds the full app
    whenever the command line names no single known command (help, completion, a typo)."""
    app = typer.Typer(
        name="vaultmem",
        help="An Obsidian vault as the memory of AI agents: index, search and recall notes.\n\n"
        "Every command takes --json (one envelope on stdout, for agents); `vaultmem COMMAND -h` "
        "shows its options and examples.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
        add_completion=True,
        context_settings=_SETTINGS,
        rich_markup_mode="rich",
    )
    app.callback()(_root)
    group_of = only.rpartition(" ")[0] if only else None
    groups: dict[str, typer.Typer] = {}
    for name, help_text in _GROUPS.items():
        if only is None or name == group_of:
            groups[name] = typer.Typer(
                help=help_text, no_args_is_help=True, context_settings=_SETTINGS
            )
            app.add_typer(groups[name], name=name, rich_help_panel="OKF")
    for op in operations.OPERATIONS:
        if only is None or op.name == only:
            _register(op, app, groups)
    for name, (function, settings) in _ADAPTER_COMMANDS.items():
        if only is None or name == only:
            app.command(**settings)(function)
    return app


_COMMANDS = frozenset(operations.BY_NAME) | frozenset(_ADAPTER_COMMANDS)


def __getattr__(name: str) -> Any:
    if name == "app":  # the full app, for tests and tools that inspect it
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_of(argv: list[str]) -> str:
    words = [a for a in argv if not a.startswith("-")][:2]
    return " ".join(words[:2] if words and words[0] in _GROUPS else words[:1])


def _join_pairs(args: list[str]) -> list[str]:
    """`-p NAME VALUE` → `-p NAME=VALUE`: the one option that takes two values."""
    joined: list[str] = []
    i = 0
    while i < len(args):
        pair = args[i + 1 : i + 3]
        if args[i] in ("-p", "--param") and len(pair) == 2 and "=" not in pair[0]:
            joined += [args[i], "=".join(pair)]
            i += 3
        else:
            joined.append(args[i])
            i += 1
    return joined


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn every failure into an exit code and one message."""
    args = _join_pairs(sys.argv[1:] if argv is None else list(argv))
    _Run.json = False

    def as_json() -> bool:  # read after the command ran: it sets _Run.json
        return _Run.json or "--json" in args

    command = _command_of(args)
    completing = "_VAULTMEM_COMPLETE" in os.environ  # shell completion needs every command
    app = build_app(command if command in _COMMANDS and not completing else None)
    try:
        code = app(args=args, standalone_mode=False, prog_name="vaultmem")
        if isinstance(code, int) and code:
            return code  # a command's `typer.Exit(n)`, which click returns in this mode
    except InvalidArgumentError as error:
        output.emit_error(error, as_json=as_json())
        return 2
    except VaultmemError as error:
        output.emit_error(error, as_json=as_json())
        return 1
    except OSError as error:
        output.emit_error(FileAccessError.from_os_error(error), as_json=as_json())
        return 1
    except typer.Exit as done:
        return done.exit_code
    except (typer.Abort, KeyboardInterrupt):
        return 130
    except typer.TyperException as error:
        # Typer vendors click: usage errors are its exceptions, not the `click` package's.
        if as_json() and error.exit_code == 2:
            command = _command_of(args)
            if command.split(" ")[0] not in _COMMANDS | _GROUPS.keys():
                command = ""  # a misspelt command or an option's value: the top-level help
            output.emit_error(
                InvalidArgumentError(
                    error.format_message(),
                    hint=f"See `vaultmem {command} --help`.".replace("  ", " "),
                ),
                as_json=True,
            )
            return 2
        show = getattr(error, "show", None)
        if callable(show):
            show()
        else:
            output.err_console.print(f"Error: {error.format_message()}", markup=False)
        return error.exit_code
    except Exception as error:
        output.emit_error(InternalError(f"{type(error).__name__}: {error}"), as_json=as_json())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

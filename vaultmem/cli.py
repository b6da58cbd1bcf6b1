"""The `vaultmem` command line: parse options, call one `Vault` method, render the result.

Errors are handled in one place (`main`): a `VaultmemError` prints `Error: …` and a hint to
stderr (exit 1), or the JSON error envelope with `--json`. Usage errors exit 2.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.markup import escape

from vaultmem import __version__, output
from vaultmem.config import FolderMapping
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.models import SCOPES
from vaultmem.search import SearchFilters
from vaultmem.vault import Vault

app = typer.Typer(
    name="vaultmem",
    help="An Obsidian vault as the memory of AI agents: index, search and recall notes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class _Run:
    """Per-invocation output mode, set by each command before it can fail."""

    json = False


VaultOpt = Annotated[
    Path | None,
    typer.Option("--vault", help="Vault folder (default: $VAULTMEM_VAULT, else the nearest "
                 "folder above the working directory holding .vaultmem/)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON envelope for agents.")]
LimitOpt = Annotated[int, typer.Option("--limit", min=1, help="At most this many rows.")]


def _vault(path: Path | None, as_json: bool) -> Vault:
    _Run.json = as_json
    return Vault(path)


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="The vault folder.")] = Path("."),
    managed_folder: Annotated[
        str, typer.Option("--managed-folder", help="The one folder vaultmem writes into.")
    ] = "agent-memory",
    map_: Annotated[
        list[str] | None,
        typer.Option("--map", help="FOLDER=SCOPE[:SCOPE_ID], repeatable (default: whole vault "
                     "as one project scope)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing config.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Create .vaultmem/config.toml and the managed folder in a vault."""
    _Run.json = as_json
    mappings = [_parse_mapping(m) for m in map_ or []]
    vault = Vault.init(path, managed_folder=managed_folder, mappings=mappings, force=force)
    data = {
        "vault": str(vault.root),
        "config": str(vault.config.config_path),
        "managed_folder": vault.config.managed_folder,
        "mappings": vault.config.mappings,
    }
    if as_json:
        return output.emit_json(data)
    output.line(f"Initialised {vault.config.config_path}")
    for m in vault.config.mappings:
        output.line(f"  {m.folder or '(whole vault)'} → {m.scope}"
                    + (f":{m.scope_id}" if m.scope_id else ""))
    output.line("Next: vaultmem reconcile")


def _parse_mapping(text: str) -> FolderMapping:
    folder, sep, rest = text.partition("=")
    scope, _, scope_id = rest.partition(":")
    if not sep or scope not in SCOPES:
        raise ConfigError(
            f"--map {text!r} is not FOLDER=SCOPE[:SCOPE_ID].",
            hint=f"SCOPE is one of {', '.join(SCOPES)}; e.g. --map Projects=project:atlas",
        )
    return FolderMapping(folder.strip("/"), scope, scope_id or None)


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


def _run_reconcile(vault: Vault, *, rebuild: bool, as_json: bool) -> None:
    bar, update = _progress_bar(not as_json)
    try:
        report = vault.reconcile(rebuild=rebuild, progress=update)
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        return output.emit_json(report)
    for warning in report.warnings:
        output.err_console.print(f"[yellow]Warning:[/] {warning}")
    output.line(
        f"{report.mode}: {report.notes} notes — {report.added} added, {report.changed} changed, "
        f"{report.removed} removed, {report.renamed} renamed, {report.unchanged} unchanged; "
        f"{report.problems} problems; {report.duration_s:.2f} s"
    )


@app.command()
def reconcile(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Bring the index up to date with the vault (only what changed is re-read)."""
    _run_reconcile(_vault(vault, as_json), rebuild=False, as_json=as_json)


@app.command()
def rebuild(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Build the index from nothing (the same rows as any sequence of reconciles)."""
    _run_reconcile(_vault(vault, as_json), rebuild=True, as_json=as_json)


@app.command()
def status(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Notes per scope and folder, the last run, files changed since, problems, index size."""
    result = _vault(vault, as_json).status()
    if as_json:
        return output.emit_json(result)
    output.table(
        "Mapped folders",
        ["folder", "scope", "scope id", "notes"],
        [(f.folder or "(vault)", f.scope, f.scope_id, f.notes) for f in result.folders],
    )
    run = result.last_run or {}
    output.line(
        f"{result.notes} notes, {result.links} links ({result.unresolved_links} unresolved), "
        f"{result.problems} problems; index {result.index_bytes / 1e6:.1f} MB"
    )
    if run:
        output.line(f"Last reconcile {run['started']} ({run['mode']}, {run['duration_ms']:.0f} ms); "
                    f"{result.changed_since_last_run} files changed since")


@app.command()
def problems(
    vault: VaultOpt = None,
    code: Annotated[str | None, typer.Option("--code", help="Only this problem code.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Files the index could not read fully, with the reason."""
    rows = _vault(vault, as_json).problems(code=code)
    if as_json:
        return output.emit_json(rows)
    output.table(f"{len(rows)} problems", ["path", "line", "code", "message"],
                 [(r["path"], r["line"], r["code"], r["message"]) for r in rows])


@app.command()
def show(
    note: Annotated[str, typer.Argument(help="Path, title, alias, file name or id.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One note's metadata as the index holds it."""
    detail = _vault(vault, as_json).show(note)
    if as_json:
        return output.emit_json(detail)
    n = detail.note
    output.line(f"{n['title']}  ({n['path']})")
    output.line(f"id {n['id']} · scope {n['scope']}" + (f":{n['scope_id']}" if n["scope_id"] else "")
                + (" · managed" if n["managed"] else "") + f" · frontmatter {n['frontmatter_status']}")
    if detail.aliases:
        output.line("aliases: " + ", ".join(detail.aliases))
    if detail.tags:
        output.line("tags: " + ", ".join("#" + t for t in detail.tags))
    for h in detail.headings:
        output.line(f"{'  ' * (h['level'] - 1)}{'#' * h['level']} {h['text']}  (line {h['line']})")
    output.line(f"{detail.links_out} outgoing links, {detail.backlinks} backlinks")
    for p in detail.problems:
        output.line(f"problem: {p['code']} (line {p['line']}): {p['message']}")


def _link_rows(rows: list[dict[str, Any]], source: bool) -> list[tuple[Any, ...]]:
    return [
        (
            *((r["source_path"],) if source else ()),
            r["line"],
            r["kind"] + (f":{r['relation']}" if r["relation"] else "") + (" embed" if r["embed"] else ""),
            r["raw"],
            r["target_path"] or "(unresolved)",
            {None: "", True: "yes", False: "MISSING"}[r["subpath_found"]],
        )
        for r in rows
    ]


@app.command()
def links(
    note: Annotated[str, typer.Argument(help="Path, title, alias, file name or id.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A note's outgoing links and where each resolves."""
    ref, rows = _vault(vault, as_json).links(note)
    if as_json:
        return output.emit_json({"note": ref, "links": rows})
    output.table(f"Links from {ref.path}", ["line", "kind", "link", "target", "subpath"],
                 _link_rows(rows, source=False))


@app.command()
def backlinks(
    note: Annotated[str, typer.Argument(help="Path, title, alias, file name or id.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Notes that link to a note."""
    ref, rows = _vault(vault, as_json).backlinks(note)
    if as_json:
        return output.emit_json({"note": ref, "backlinks": rows})
    output.table(f"Backlinks to {ref.path}", ["source", "line", "kind", "link", "target", "subpath"],
                 _link_rows(rows, source=True))


@app.command()
def unresolved(vault: VaultOpt = None, limit: LimitOpt = 100, as_json: JsonOpt = False) -> None:
    """Links that point at no file, most-wanted first."""
    rows = _vault(vault, as_json).unresolved(limit=limit)
    if as_json:
        return output.emit_json(rows)
    output.table("Unresolved links", ["target", "links", "from"],
                 [(r["target"], r["links"], ", ".join(r["sources"][:3])
                   + (" …" if len(r["sources"]) > 3 else "")) for r in rows])


def _when(text: str | None, option: str) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"{option} {text!r} is not an ISO date or time.", hint=f"e.g. {option} 2026-11-01"
        ) from None


@app.command()
def search(
    query: Annotated[str, typer.Argument(help='Words, "phrases", -excluded, tag:x, path:f/, type:y.')],
    vault: VaultOpt = None,
    scope: Annotated[str | None, typer.Option("--scope", help="Only this scope.")] = None,
    scope_id: Annotated[str | None, typer.Option("--scope-id", help="Only this scope id.")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="Only notes of this type.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only notes with this tag "
                                             "(a parent tag matches nested ones).")] = None,
    folder: Annotated[str | None, typer.Option("--folder", help="Only notes under this folder.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Updated at or after (ISO).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Updated before (ISO).")] = None,
    limit: LimitOpt = 10,
    as_json: JsonOpt = False,
) -> None:
    """BM25 search over every note's sections; results grouped by note, best first."""
    v = _vault(vault, as_json)
    filters = SearchFilters(scope, scope_id, type_, tag, folder, _when(since, "--since"),
                            _when(until, "--until"))
    hits = v.search(query, filters, limit=limit)
    if as_json:
        return output.emit_json(hits)
    if not hits:
        return output.line("No notes match.")
    for i, hit in enumerate(hits, 1):
        where = f" › {hit.heading}" if hit.heading else ""
        output.console.print(f"[bold]{i}. {escape(hit.title)}[/]{escape(where)}  "
                             f"[dim]{escape(hit.path)}:{hit.line} · {hit.scope} · {hit.score:.3f}[/]")
        output.console.print("   " + output.marked(hit.snippet))


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="One read-only SQL statement (docs/schema.md).")],
    vault: VaultOpt = None,
    limit: LimitOpt = 1000,
    as_json: JsonOpt = False,
) -> None:
    """Run read-only SQL on the index (file access is disabled)."""
    result = _vault(vault, as_json).sql(query, limit=limit)
    if as_json:
        return output.emit_json(result)
    output.table(None, result.columns, result.rows)


@app.command()
def parse(
    note: Annotated[Path, typer.Argument(help="A note file, relative to the vault or cwd.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Debugging view: one note's model, links resolved against the vault."""
    view = _vault(vault, as_json).parse(note)
    data = view.to_dict()
    if as_json:
        return output.emit_json(data)
    output.line(json.dumps(data, indent=2, ensure_ascii=False))


@app.command()
def version() -> None:
    """Print the version."""
    output.line(f"vaultmem {__version__}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn every expected failure into an exit code."""
    try:
        app(args=argv, standalone_mode=False)
    except VaultmemError as error:
        output.emit_error(error, as_json=_Run.json or "--json" in (argv or sys.argv))
        return 1
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort:
        output.err_console.print("Aborted.")
        return 130
    except click.ClickException as error:
        error.show()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

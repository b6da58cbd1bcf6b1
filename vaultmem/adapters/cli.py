"""The `vaultmem` command line: parse options, call one `Vault` method, render the result.

Errors are handled in one place (`main`): a `VaultmemError` prints `Error: …` and a hint to
stderr (exit 1), or the JSON error envelope with `--json`. Usage errors exit 2.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.markup import escape

from vaultmem import __version__
from vaultmem.adapters import output
from vaultmem.config import FolderMapping
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.index.watch import WatchEvent
from vaultmem.models import SCOPES
from vaultmem.search.query import SearchFilters
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
    typer.Option(
        "--vault",
        help="Vault folder (default: $VAULTMEM_VAULT, else the nearest "
        "folder above the working directory holding .vaultmem/).",
    ),
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
        typer.Option(
            "--map",
            help="FOLDER=SCOPE[:SCOPE_ID], repeatable (default: whole vault as one project scope).",
        ),
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
        output.line(
            f"  {m.folder or '(whole vault)'} → {m.scope}"
            + (f":{m.scope_id}" if m.scope_id else "")
        )
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
        output.line(
            f"Last reconcile {run['started']} ({run['mode']}, {run['duration_ms']:.0f} ms); "
            f"{result.changed_since_last_run} files changed since"
        )


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
    output.table(
        f"{len(rows)} problems",
        ["path", "line", "code", "message"],
        [(r["path"], r["line"], r["code"], r["message"]) for r in rows],
    )


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
    output.line(f"{detail.links_out} outgoing links, {detail.backlinks} backlinks")
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
    output.table(
        f"Links from {ref.path}",
        ["line", "kind", "link", "target", "subpath"],
        _link_rows(rows, source=False),
    )


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
    output.table(
        f"Backlinks to {ref.path}",
        ["source", "line", "kind", "link", "target", "subpath"],
        _link_rows(rows, source=True),
    )


@app.command()
def unresolved(vault: VaultOpt = None, limit: LimitOpt = 100, as_json: JsonOpt = False) -> None:
    """Links that point at no file, most-wanted first."""
    rows = _vault(vault, as_json).unresolved(limit=limit)
    if as_json:
        return output.emit_json(rows)
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
    )


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
    query: Annotated[
        str, typer.Argument(help='Words, "phrases", -excluded, tag:x, path:f/, type:y.')
    ],
    vault: VaultOpt = None,
    scope: Annotated[str | None, typer.Option("--scope", help="Only this scope.")] = None,
    scope_id: Annotated[str | None, typer.Option("--scope-id", help="Only this scope id.")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="Only notes of this type.")] = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Only notes with this tag (a parent tag matches nested ones)."),
    ] = None,
    folder: Annotated[
        str | None, typer.Option("--folder", help="Only notes under this folder.")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="Updated at or after (ISO).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Updated before (ISO).")] = None,
    limit: LimitOpt = 10,
    mode: Annotated[
        Literal["words", "vectors", "hybrid"] | None,
        typer.Option(
            "--mode",
            help="words: BM25; vectors: by meaning; hybrid: both, fused. "
            "Default: hybrid when semantic recall is on, else words.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search every note's sections; results grouped by note, best first."""
    v = _vault(vault, as_json)
    filters = SearchFilters(
        scope, scope_id, type_, tag, folder, _when(since, "--since"), _when(until, "--until")
    )
    hits = v.search(query, filters, limit=limit, mode=mode)
    if as_json:
        return output.emit_json(hits)
    if not hits:
        return output.line("No notes match.")
    for i, hit in enumerate(hits, 1):
        where = f" › {hit.heading}" if hit.heading else ""
        output.console.print(
            f"[bold]{i}. {escape(hit.title)}[/]{escape(where)}  "
            f"[dim]{escape(hit.path)}:{hit.line} · {hit.scope} · {hit.score:.3f}[/]"
        )
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
            paths = f"{event.paths} paths — " if event.kind == "batch" else ""
            text = (
                f"{stamp} {event.kind}: {paths}{what}; {event.notes} notes, "
                f"{event.problems} problems; {event.duration_s * 1000:.0f} ms"
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


@app.command()
def watch(
    vault: VaultOpt = None,
    debounce_ms: Annotated[
        int,
        typer.Option(
            "--debounce-ms", min=1, help="Gather a burst of changes for at most this long."
        ),
    ] = 300,
    sweep_s: Annotated[
        float,
        typer.Option(
            "--sweep-s", min=1.0, help="Seconds between full reconciles (dropped events)."
        ),
    ] = 300,
    as_json: JsonOpt = False,
) -> None:
    """Keep the index current while the vault changes, until SIGINT or SIGTERM (exit 0)."""
    v = _vault(vault, as_json)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _signum, _frame: stop.set())
    v.watch(
        debounce_ms=debounce_ms,
        sweep_s=sweep_s,
        stop=stop,
        emit=lambda event: _render_watch_event(event, as_json=as_json),
    )


ScopesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--scope",
        "--scopes",
        help="SCOPE or SCOPE:SCOPE_ID; repeatable or "
        "comma-separated (e.g. session,project:atlas,global).",
    ),
]


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="The question or keywords.")],
    vault: VaultOpt = None,
    scope: ScopesOpt = None,
    mode: Annotated[
        Literal["metadata-first", "metadata", "words", "vectors", "hybrid"],
        typer.Option(
            "--mode",
            help="metadata-first: key/title/alias/tag matches, then BM25; words, vectors, "
            "hybrid: as in search.",
        ),
    ] = "metadata-first",
    sort: Annotated[
        Literal["score", "recency", "usage"],
        typer.Option("--sort", help="score blends relevance, recency and usage (docs/agents.md)."),
    ] = "score",
    limit: LimitOpt = 10,
    include_related: Annotated[
        bool,
        typer.Option("--include-related", help="Add notes linked from the hits, one level deep."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Recall memories for a question: topics and notes of the given scopes, never expired."""
    hits = _vault(vault, as_json).recall(
        query,
        scopes=scope or (),
        mode=mode,
        sort=sort,
        limit=limit,
        include_related=include_related,
    )
    if as_json:
        return output.emit_json(hits)
    if not hits:
        return output.line("Nothing recalled.")
    for i, hit in enumerate(hits, 1):
        where = hit.scope + (f":{hit.scope_id}" if hit.scope_id else "")
        flags = (" [related]" if hit.related else "") + ("" if hit.fresh else " [stale]")
        output.console.print(
            f"[bold]{i}. {escape(hit.key)}[/]{escape(flags)}  [dim]"
            f"{escape(hit.path)} · {where} · {hit.score:.3f}[/]"
        )
        output.console.print("   " + output.marked(hit.snippet))


@app.command()
def context(
    vault: VaultOpt = None,
    scopes: ScopesOpt = None,
    per_scope: Annotated[
        int, typer.Option("--per-scope", min=1, help="At most this many entries per scope.")
    ] = 10,
    budget_chars: Annotated[
        int,
        typer.Option("--budget-chars", min=1, help="Size limit of the whole block, in characters."),
    ] = 3000,
    write: Annotated[
        Literal["claude", "codex", "kiro"] | None,
        typer.Option(
            "--write",
            help="Write the block between markers into .claude/CLAUDE.md (claude), "
            "AGENTS.md (codex) or .kiro/steering/vaultmem-memory.md (kiro).",
        ),
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project", help="Project folder for --write (default: the working directory)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the <vaultmem-memory> context block, or write it into an agent's file."""
    v = _vault(vault, as_json)
    chosen = scopes or ["session,project,global"]
    if write is None:
        block = v.context(scopes=chosen, per_scope=per_scope, budget_chars=budget_chars)
        return output.emit_json(block) if as_json else output.line(block.text)
    done = v.write_context(
        write, project_dir=project, scopes=chosen, per_scope=per_scope, budget_chars=budget_chars
    )
    if as_json:
        return output.emit_json(done)
    verb = "Created" if done.created else "Updated" if done.changed else "Unchanged:"
    output.line(f"{verb} {done.path} ({len(done.block.entries)} entries)")


@app.command()
def mcp(vault: VaultOpt = None) -> None:
    """Serve the memory tools over MCP on stdio (for Claude Code, Codex, Kiro; docs/agents.md)."""
    try:
        from vaultmem.adapters.mcp_server import serve
    except ImportError as error:
        raise ConfigError(
            f"The MCP server needs the `mcp` package ({error.msg}).",
            hint="pip install 'vaultmem[mcp]'",
        ) from error
    serve(vault)


# -- agent memory: topics in the managed folder (docs/memory.md) -----------------------------

ScopeOpt = Annotated[
    str | None, typer.Option("--scope", help="session, project, global, agent or federated.")
]
ScopeIdOpt = Annotated[
    str | None,
    typer.Option(
        "--scope-id",
        help="Which session, project or agent (project default: the git remote of "
        "the working directory, else a digest of its path).",
    ),
]


def _topic_line(result: Any) -> str:
    where = result.scope + (f":{result.scope_id}" if result.scope_id else "")
    return f"{result.key} ({where}) {result.path} @ {result.timestamp}"


@app.command()
def store(
    key: Annotated[str, typer.Argument(help="Topic key (\\[a-z0-9-]{1,60}); '' derives one.")],
    text: Annotated[str, typer.Argument(help="The observation; '-' reads stdin.")] = "-",
    vault: VaultOpt = None,
    scope: ScopeOpt = "project",
    scope_id: ScopeIdOpt = None,
    type_: Annotated[
        str, typer.Option("--type", help="user, feedback, project or reference.")
    ] = "project",
    tags: Annotated[str, typer.Option("--tags", help="Comma-separated tags.")] = "",
    source: Annotated[str | None, typer.Option("--source", help="The agent or tool.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Save an observation: appended to the topic's file (created when new), secrets redacted."""
    v = _vault(vault, as_json)
    body = sys.stdin.read() if text == "-" else text
    result = v.store(
        key or None,
        body,
        scope=scope or "project",
        scope_id=scope_id,
        type=type_,
        tags=[t for t in tags.split(",") if t.strip()],
        source=source,
    )
    if as_json:
        return output.emit_json(result)
    output.line(("Created " if result.created else "Appended to ") + _topic_line(result))
    if result.redacted:
        output.line("Redacted: " + ", ".join(result.redacted))


@app.command()
def correct(
    key: Annotated[str, typer.Argument(help="Topic key or id.")],
    text: Annotated[str, typer.Argument(help="The corrected observation; '-' reads stdin.")],
    vault: VaultOpt = None,
    scope: ScopeOpt = None,
    scope_id: ScopeIdOpt = None,
    source: Annotated[str | None, typer.Option("--source", help="The agent or tool.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Supersede a topic's latest observation; the old one stays visible, marked."""
    v = _vault(vault, as_json)
    body = sys.stdin.read() if text == "-" else text
    result = v.correct(key, body, scope=scope, scope_id=scope_id, source=source)
    if as_json:
        return output.emit_json(result)
    output.line("Corrected " + _topic_line(result))


@app.command()
def forget(
    key: Annotated[str, typer.Argument(help="Topic key or id.")],
    vault: VaultOpt = None,
    scope: ScopeOpt = None,
    scope_id: ScopeIdOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move a topic to the managed folder's .trash/ and drop it from the index."""
    result = _vault(vault, as_json).forget(key, scope=scope, scope_id=scope_id)
    if as_json:
        return output.emit_json(result)
    output.line(f"Moved {result.path} to {result.trashed_to}")


@app.command()
def get(
    key: Annotated[str, typer.Argument(help="Topic key or id.")],
    vault: VaultOpt = None,
    scope: ScopeOpt = None,
    scope_id: ScopeIdOpt = None,
    include_expired: Annotated[
        bool, typer.Option("--include-expired", help="Also show a topic past its retention.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """One topic, read from its file, with every observation (counts as a recall)."""
    view = _vault(vault, as_json).get(
        key, scope=scope, scope_id=scope_id, include_expired=include_expired
    )
    if as_json:
        return output.emit_json(view)
    t = view.topic
    output.line(
        f"{t.key}  ({view.path}) · {t.type} · tags {', '.join(t.tags) or '-'}"
        f" · recalled {view.usage.count if view.usage else 0}×"
    )
    for obs in t.observations:
        mark = f"  [superseded by {obs.superseded_by}]" if obs.superseded_by else ""
        output.line(f"\n{obs.timestamp}{mark}\n{obs.text}")


@app.command()
def prune(
    vault: VaultOpt = None,
    apply: Annotated[bool, typer.Option("--apply", help="Move them to .trash/.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List topics past their retention (session 14 d, project 90 d); --apply trashes them."""
    result = _vault(vault, as_json).prune(apply=apply)
    if as_json:
        return output.emit_json(result)
    output.table(
        f"{len(result.items)} expired topics" + ("" if apply else " (not moved)"),
        ["path", "type", "updated", "expired", "moved to"],
        [(i.path, i.type, i.updated, i.expired_at, i.trashed_to) for i in result.items],
    )


def _edge_table(title: str, rows: list[Any]) -> None:
    output.table(
        title,
        ["edge", "type", "source", "target", "origin", "status"],
        [(e.id, e.type, e.source_path, e.target_path, e.origin, e.status) for e in rows],
    )


@app.command()
def relate(
    a: Annotated[str, typer.Argument(help="Source: topic key or id, or a note.")],
    b: Annotated[str, typer.Argument(help="Target: topic key or id, or a note.")],
    vault: VaultOpt = None,
    type_: Annotated[
        str,
        typer.Option(
            "--type", help="relates_to, supersedes, contradicts or another relation name."
        ),
    ] = "relates_to",
    as_json: JsonOpt = False,
) -> None:
    """Record an edge A → B (kept in agent-memory/_decisions.md) and add it to A's See Also."""
    edge = _vault(vault, as_json).relate(a, b, type=type_)
    if as_json:
        return output.emit_json(edge)
    _edge_table("Recorded", [edge])


@app.command()
def edges(
    vault: VaultOpt = None,
    status: Annotated[
        str | None, typer.Option("--status", help="active, proposed, rejected or stale.")
    ] = None,
    stale: Annotated[bool, typer.Option("--stale", help="Only stale edges.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Typed edges between notes: from links, people's decisions and suggestions."""
    rows = _vault(vault, as_json).edges(status=status, stale=stale)
    if as_json:
        return output.emit_json(rows)
    _edge_table(f"{len(rows)} edges", rows)


@app.command()
def accept(
    edge: Annotated[str, typer.Argument(help="Edge id (from `vaultmem edges`).")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Accept a proposed edge: it becomes active and joins the topic's See Also."""
    result = _vault(vault, as_json).accept(edge)
    if as_json:
        return output.emit_json(result)
    _edge_table("Accepted", [result])


@app.command()
def reject(
    edge: Annotated[str, typer.Argument(help="Edge id (from `vaultmem edges`).")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reject an edge: it is never proposed again."""
    result = _vault(vault, as_json).reject(edge)
    if as_json:
        return output.emit_json(result)
    _edge_table("Rejected", [result])


export_app = typer.Typer(help="Export memory from the vault (OKF bundles).", no_args_is_help=True)
import_app = typer.Typer(help="Import memory into the vault (OKF bundles).", no_args_is_help=True)
validate_app = typer.Typer(help="Validate files vaultmem reads or writes.", no_args_is_help=True)
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")
app.add_typer(validate_app, name="validate")


@export_app.command("okf")
def export_okf(
    out: Annotated[Path, typer.Argument(help="Bundle folder or archive, outside the vault.")],
    vault: VaultOpt = None,
    scope: Annotated[str | None, typer.Option("--scope", help="This scope's topics.")] = None,
    scope_id: Annotated[str | None, typer.Option("--scope-id", help="Only this scope id.")] = None,
    folder: Annotated[
        str | None, typer.Option("--folder", help="Export the notes of this mapped folder.")
    ] = None,
    include_private: Annotated[
        bool, typer.Option("--include-private", help="Allow session and agent scopes.")
    ] = False,
    redact: Annotated[
        bool, typer.Option("--redact", help="Redact secrets instead of skipping the note.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete files an earlier export wrote, this one not.")
    ] = False,
    format_: Annotated[str, typer.Option("--format", help="dir, tar.gz or zip.")] = "dir",
    as_json: JsonOpt = False,
) -> None:
    """Write topics or notes as an OKF v0.2 bundle (docs/okf.md)."""
    report = _vault(vault, as_json).export_okf(
        out,
        scope=scope,
        scope_id=scope_id,
        folder=folder,
        include_private=include_private,
        redact=redact,
        prune=prune,
        format=format_,
    )
    if as_json:
        return output.emit_json(report)
    output.line(
        f"{report.concepts} concepts → {report.out}: {len(report.written)} files written, "
        f"{report.unchanged} unchanged, {len(report.pruned)} pruned; {report.links_rewritten} "
        f"links rewritten, {report.links_outside} outside the bundle made plain text"
    )
    for item in report.skipped:
        output.line(f"skipped {item['path']}: holds a secret ({item['patterns']})")


@import_app.command("okf")
def import_okf(
    source: Annotated[Path, typer.Argument(help="Bundle folder, .tar.gz or .zip.")],
    scope: Annotated[str, typer.Option("--scope", help="The target scope (required).")],
    vault: VaultOpt = None,
    scope_id: Annotated[str | None, typer.Option("--scope-id", help="The target scope id.")] = None,
    conflict: Annotated[
        str, typer.Option("--conflict", help="When the topic exists: skip, replace or merge.")
    ] = "skip",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only; write nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Import an OKF bundle's concepts as topics of one scope."""
    report = _vault(vault, as_json).import_okf(
        source, scope=scope, scope_id=scope_id, conflict=conflict, dry_run=dry_run
    )
    if as_json:
        return output.emit_json(report)
    output.line(
        ("Dry run: " if report.dry_run else "")
        + f"{report.imported} imported, {report.replaced} replaced, {report.merged} merged, "
        f"{report.skipped} skipped, {len(report.rejected)} rejected; {report.links_rewritten} "
        f"links rewritten, {report.timestamps_clamped} timestamps clamped"
    )
    for item in report.rejected:
        output.line(f"rejected {item['path']}: {item['reason']}")


@validate_app.command("okf")
def validate_okf(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder.")],
    as_json: JsonOpt = False,
) -> None:
    """Check a bundle folder against OKF v0.2; exit 1 when it has errors."""
    _Run.json = as_json
    report = Vault.validate_okf(bundle)
    if as_json:
        output.emit_json(report)
    else:
        for f in report.findings:
            output.line(f"{f.level}: {f.path}: {f.message}")
        output.line(
            f"{report.concepts} concepts, {len(report.errors)} errors, "
            f"{len(report.warnings)} warnings"
        )
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print the version."""
    output.line(f"vaultmem {__version__}")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app and turn every expected failure into an exit code."""
    try:
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            return code  # a command's `typer.Exit(n)`, which click returns in this mode
    except VaultmemError as error:
        output.emit_error(error, as_json=_Run.json or "--json" in (argv or sys.argv))
        return 1
    except typer.Exit as done:
        return done.exit_code
    except typer.Abort:
        output.err_console.print("Aborted.")
        return 130
    except typer.TyperException as error:
        # Typer vendors click: usage errors are its exceptions, not the `click` package's.
        show = getattr(error, "show", None)
        if callable(show):
            show()
        else:
            output.err_console.print(f"Error: {error.message}", markup=False)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())

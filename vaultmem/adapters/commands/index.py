"""Index commands: `init`, `reconcile`, `rebuild`, `status`, `problems` and `watch`.

Each operation holds its params, its run (one call to `Vault`) and its text renderer; the
registry (`commands/__init__.py`) gathers them.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import MAX_NAME, VAULT, text
from vaultmem.adapters.contract import Call, Initialised, Operation, Param
from vaultmem.adapters.output import escape
from vaultmem.core.config import DEFAULT_MANAGED_FOLDER, parse_mapping
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.models import PROBLEM_CODES
from vaultmem.vault import Vault

if TYPE_CHECKING:  # the watcher (and watchfiles) load only for `vaultmem watch`
    from vaultmem.index.watch import WatchEvent

P = output.plural


def _init(call: Call) -> Initialised:
    a = call.args
    a["path"] = _init_folder(a["path"], a["vault"])
    mappings = [parse_mapping(spec) for spec in a["map"]]
    existing = (Path(a["path"]).expanduser() / ".vaultmem" / "config.toml").is_file()
    if a["git"] and existing and not a["force"] and not mappings:
        vault = Vault(a["path"])  # an existing vault: only the git files are added
    else:
        vault = Vault.init(
            a["path"], managed_folder=a["managed_folder"], mappings=mappings, force=a["force"]
        )
    written = tuple(vault.write_generated(git=a["git"]))
    c = vault.config
    return Initialised(
        vault.root, c.config_path, c.managed_folder, c.mappings, vault.init_warnings, written
    )


def _init_folder(path: Path | str, vault: Path | str | None) -> Path | str:
    """The vault folder `init` works on: DIR, or `--vault DIR` as every other command takes
    it (`vaultmem init --vault ~/Notes` was refused as an unknown option); both, only when
    they name the same folder."""
    if vault is None:
        return path
    if Path(path) != Path(".") and Path(path).expanduser() != Path(vault).expanduser():
        raise InvalidArgumentError(
            f"Two vault folders were given: {path} and --vault {vault}.",
            hint="Name the vault once: `vaultmem init DIR` or `vaultmem init --vault DIR`.",
        )
    return vault


def _init_text(result: Initialised, args: dict[str, Any]) -> None:
    for warning in result.warnings:
        output.err_console.print(f"[yellow]Warning:[/] {escape(warning)}")
    output.line(f"Initialised {result.config}")
    for m in result.mappings:
        where = f"{m.scope}:{m.scope_id}" if m.scope_id else m.scope
        output.line(f"  {m.folder or '(whole vault)'} → {where}")
    for path in result.written:
        output.line(f"Wrote {path}")
    output.line(f"Next: vaultmem reconcile --vault {result.vault}")


RECONCILE_LOCK_S = 10.0
"""How long an MCP reconcile waits for another writer's lock (then `locked`); the CLI waits
30 s like every writer."""


def _reconcile(call: Call) -> Any:
    call.v.check_is_a_vault()
    return call.v.reconcile(
        rebuild=call.args.get("rebuild", False),
        paths=call.args.get("paths") or None,
        progress=call.progress,
        lock_timeout_s=call.args.get("lock_timeout_s") or 30.0,
    )


def _reconcile_text(report: Any, args: dict[str, Any]) -> None:
    for warning in report.warnings:
        output.err_console.print(f"[yellow]Warning:[/] {escape(warning)}")
    output.line(
        f"{report.mode}: {P(report.notes, 'note')} — {report.added} added, {report.changed} "
        f"changed, {report.removed} removed, {report.renamed} renamed, {report.unchanged} "
        f"unchanged; {P(report.problems, 'problem')}; {report.duration_s:.2f} s"
    )
    if report.outside_mapping:
        _outside_line(report.outside_mapping, report.outside_folders)


def _outside_line(count: int, folders: tuple[str, ...]) -> None:
    """What a mapping of only some folders leaves out (reconcile and status say it alike)."""
    output.line(
        f"{P(count, 'note')} outside the mapped folders, not indexed (in {', '.join(folders)}): "
        "map a folder with `vaultmem init --map FOLDER=SCOPE[:ID] --force` to index it"
    )


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
    output.line(f"Index: {result.index_path}")
    run = result.last_run
    if run:
        output.line(
            f"Last reconcile {run['started']} ({run['mode']}, {run['duration_ms']:.0f} ms); "
            f"{P(result.changed_since_last_run, 'file')} changed since"
        )
    if result.outside_mapping:
        _outside_line(result.outside_mapping, result.outside_folders)
    if result.project:
        rule = {"mapping": "its mapped folder", "remote": "its git remote", "path": "its path"}
        output.line(
            f"A project write from here goes to project:{result.project['scope_id']} "
            f"(named by {rule.get(result.project['source'], result.project['source'])})"
        )


def _problems_text(rows: list[dict[str, Any]], args: dict[str, Any]) -> None:
    output.table(
        P(len(rows), "problem"),
        ["path", "line", "code", "message"],
        [(r["path"], r["line"], r["code"], r["message"]) for r in rows],
        empty="No problems: every file was read fully.",
    )


def _watch(call: Call) -> None:
    """Follow the vault until SIGINT or SIGTERM, printing each event as it happens."""
    call.v.check_is_a_vault()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _signum, _frame: stop.set())
    call.v.watch(
        debounce_ms=call.args["debounce_ms"],
        sweep_s=call.args["sweep_s"],
        stop=stop,
        emit=lambda event: _render_watch_event(event, as_json=call.as_json),
    )


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
            line = (
                f"{stamp} {event.kind}: {paths}{what}; {P(event.notes, 'note')}, "
                f"{P(event.problems, 'problem')}; {event.duration_s * 1000:.0f} ms"
            )
            if event.message:
                line += f" ({event.message})"
        else:
            line = f"{stamp} {event.kind}: {event.message}"
        if event.kind == "error":
            output.err_console.print(line, markup=False)
        else:
            output.line(line)
    sys.stdout.flush()


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "init",
        "Create .vaultmem/config.toml and the managed folder in a vault.",
        "Index",
        (
            Param(
                "path",
                "path",
                "The vault folder.",
                Path("."),
                positional=True,
                metavar="DIR",
                mcp=False,
            ),
            VAULT._replace(help="The vault folder, as DIR (every other command's option)."),
            Param(
                "managed_folder",
                "str",
                "The one folder vaultmem writes into.",
                DEFAULT_MANAGED_FOLDER,
                metavar="FOLDER",
                max_length=MAX_NAME,
                mcp=False,
            ),
            Param(
                "map",
                "strs",
                "FOLDER=SCOPE[:SCOPE_ID], repeatable (default: the whole "
                "vault as one project scope). The managed folder is mapped as project when "
                "no --map covers it.",
                (),
                metavar="FOLDER=SCOPE[:ID]",
                max_items=256,
                mcp=False,
            ),
            Param("force", "bool", "Overwrite an existing config.", False, mcp=False),
            Param(
                "git",
                "bool",
                "The vault is a git repository: topics merge with git's union driver "
                "(.gitattributes in the managed folder) and .vaultmem/ keeps only the config "
                "(its .gitignore). On an existing vault, adds just these.",
                False,
                mcp=False,
            ),
        ),
        _init,
        examples=(
            "vaultmem init ~/Notes --map Projects=project:work --map Knowledge=global",
            "vaultmem init .",
            "vaultmem init ~/Notes --git",
        ),
        needs_vault=False,
        read_only=False,
        render=_init_text,
    ),
    Operation(
        "reconcile",
        "Bring the index up to date with the vault (only what changed is re-read).",
        "Index",
        (
            VAULT,
            Param(
                "paths",
                "strs",
                "Only this note or folder (repeatable): what changed, when the caller knows "
                "it. The vault is not walked, so the work is that of these paths alone; a "
                "plain reconcile (or `watch`) catches anything else.",
                (),
                flags=("--path",),
                metavar="PATH",
                max_items=32,
                max_length=4096,
            ),
            # Not an option: a tool call waits a bounded time for another writer.
            Param(
                "lock_timeout_s",
                "float",
                "",
                None,
                cli=False,
                mcp=False,
                mcp_default=RECONCILE_LOCK_S,
            ),
        ),
        _reconcile,
        examples=(
            "vaultmem reconcile --vault ~/Notes",
            'vaultmem reconcile --vault ~/Notes --path "Projects/Plan.md"',
        ),
        tool="memory_reconcile",
        tool_title="Bring the index up to date",
        tool_description="Re-read what changed in the vault since the last run (people's edits, "
        "another machine's stores, sync-conflict copies of topics) and update the index, under "
        "the index's write lock (waits at most 10 s for another writer). Run it when a result "
        "says it is stale or after `partial_write`; a second run is a no-op.",
        read_only=False,
        idempotent=True,
        render=_reconcile_text,
        progress=True,
    ),
    Operation(
        "rebuild",
        "Build the index from nothing (the same rows as any sequence of reconciles).",
        "Index",
        (VAULT, Param("rebuild", "bool", "", True, cli=False, mcp=False)),
        _reconcile,
        read_only=False,
        render=_reconcile_text,
        progress=True,
    ),
    Operation(
        "status",
        "Notes per scope and folder, the last run, files changed since, problems, index size.",
        "Index",
        (VAULT,),
        lambda call: call.v.status(),
        examples=("vaultmem status --json",),
        tool="memory_status",
        tool_title="Index status",
        tool_description="How many notes the index holds per scope and folder, link and "
        "problem counts, the last reconcile and how many files changed since (stale results "
        "are possible when that is not 0).",
        render=_status_text,
    ),
    Operation(
        "problems",
        "Files the index could not read fully, with the reason.",
        "Index",
        (VAULT, text("code", "Only this problem code.", metavar="CODE", choices=PROBLEM_CODES)),
        lambda call: call.v.problems(code=call.args["code"]),
        examples=("vaultmem problems --code frontmatter_invalid",),
        render=_problems_text,
    ),
    Operation(
        "watch",
        "Keep the index current while the vault changes, until SIGINT or SIGTERM (exit 0).",
        "Index",
        (
            VAULT,
            Param(
                "debounce_ms",
                "int",
                "Gather a burst of changes for at most this long.",
                300,
                minimum=1,
                metavar="MS",
                mcp=False,
            ),
            Param(
                "sweep_s",
                "float",
                "Seconds between full reconciles.",
                300,
                minimum=1.0,
                metavar="S",
                mcp=False,
            ),
        ),
        _watch,
        examples=("vaultmem watch --vault ~/Notes --json",),
        read_only=False,
        json_help="One JSON envelope per event and line.",
        streams=True,
    ),
)

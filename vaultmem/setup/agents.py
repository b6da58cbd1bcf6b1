"""What each agent reads, and vaultmem's entries in it: the MCP server and the hooks.

- claude, project: the server in `DIR/.mcp.json` (`mcpServers.vaultmem`), approved in
  `DIR/.claude/settings.local.json` (`enabledMcpjsonServers`), which also gets the hooks.
- claude, user: the server in `~/.claude.json` (`mcpServers.vaultmem`, what
  `claude mcp add --scope user` writes), the hooks in `~/.claude/settings.json`.
- codex, user (its default) or project: `[mcp_servers.vaultmem]` in `~/.codex/config.toml`
  (`$CODEX_HOME`) or `DIR/.codex/config.toml`, the hooks in `hooks.json` beside it.
- kiro, project or user: `mcpServers.vaultmem` in `.kiro/settings/mcp.json` of the workspace
  or of the home folder; no hooks.

Claude Code counts an approval in `.claude/settings.local.json` only in a git work tree where
that file is not tracked (it runs `git ls-files --error-unmatch` on it): the local file is the
machine's own, never committed. Elsewhere the server stays "pending approval" until approved in
`claude` once, and the plan says so. Codex reads a project's `.codex/` only once the project is
trusted, and runs any hook only once it is trusted by hash (`/hooks` in `codex`); `codex` is
set up for the user by default for that reason. Kiro's hooks live in its IDE agent files, so only
its MCP server is written.

The commands name the vaultmem executable and the vault by absolute path, so they run in the
agent's own environment (no `VAULTMEM_VAULT`, a `PATH` without vaultmem's virtualenv).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vaultmem.core.errors import InvalidArgumentError, NotFoundError
from vaultmem.setup import edit
from vaultmem.setup.edit import FileChange, PlannedFile

Agent = Literal["claude", "codex", "kiro"]
Scope = Literal["project", "user"]
AGENTS: tuple[Agent, ...] = ("claude", "codex", "kiro")
DEFAULT_SCOPE: dict[Agent, Scope] = {"claude": "project", "codex": "user", "kiro": "project"}
SERVER = "vaultmem"
HOOK_TIMEOUT_S = 10
"""What the agent waits for a hook at most; the hook's own time budget is well below it."""
HOOKS: dict[str, str] = {
    "SessionStart": "session-start",
    "UserPromptSubmit": "prompt",
    "PreCompact": "pre-compact",
}
"""The agent's event → `vaultmem hook NAME`."""
READ_ONLY_TOOLS = (
    "memory_recall",
    "memory_get",
    "memory_search",
    "memory_links",
    "memory_context",
    "memory_status",
    "memory_read",
    "memory_recent",
)


@dataclass(frozen=True, slots=True)
class Launch:
    """How an agent starts vaultmem: the executable (absolute) and the vault (absolute)."""

    program: tuple[str, ...]
    vault: Path

    @classmethod
    def current(cls, vault: Path) -> Launch:
        """This installation: the `vaultmem` script beside the running interpreter (the
        virtualenv's `bin/`), else `python -m vaultmem` with that interpreter."""
        python = Path(sys.executable).absolute()
        script = python.parent / "vaultmem"
        if script.is_file() and os.access(script, os.X_OK):
            return cls((str(script),), vault.resolve())
        return cls((str(python), "-m", "vaultmem"), vault.resolve())

    def mcp_argv(self) -> tuple[str, list[str]]:
        return self.program[0], [*self.program[1:], "mcp", "--vault", str(self.vault)]

    def hook_command(self, name: str) -> str:
        argv = [*self.program, "hook", name, "--vault", str(self.vault)]
        return " ".join(shlex.quote(a) for a in argv)


def is_our_hook(command: object) -> bool:
    """A hook command vaultmem setup wrote: `…/vaultmem hook NAME …` or `python -m vaultmem
    hook NAME …` (any vault, any path)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if words[:1] and Path(words[0]).name == "vaultmem":
        rest = words[1:]
    elif words[1:3] == ["-m", "vaultmem"]:
        rest = words[3:]
    else:
        return False
    return rest[:1] == ["hook"] and rest[1:2] != [] and rest[1] in HOOKS.values()


def _is_our_group(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return (
        isinstance(hooks, list)
        and bool(hooks)
        and all(isinstance(h, dict) and is_our_hook(h.get("command")) for h in hooks)
    )


# -- document edits (they mutate the parsed document) ----------------------------------------


def _child(doc: Any, key: str) -> Any:
    if key not in doc or not hasattr(doc[key], "keys"):
        doc[key] = {}
    return doc[key]


def _set_server(doc: Any, entry: dict[str, Any], key: str = "mcpServers") -> None:
    servers = _child(doc, key)
    if servers.get(SERVER) != entry:
        servers[SERVER] = entry


def _drop_server(doc: Any, key: str = "mcpServers") -> None:
    servers = doc.get(key)
    if hasattr(servers, "keys") and SERVER in servers:
        del servers[SERVER]
        if not servers:
            del doc[key]


def _set_hooks(doc: Any, launch: Launch) -> None:
    hooks = _child(doc, "hooks")
    for event, name in HOOKS.items():
        group = {
            "hooks": [
                {"type": "command", "command": launch.hook_command(name), "timeout": HOOK_TIMEOUT_S}
            ]
        }
        groups = hooks.get(event)
        if not isinstance(groups, list):
            hooks[event] = [group]
            continue
        ours = [i for i, g in enumerate(groups) if _is_our_group(g)]
        if ours and groups[ours[0]] == group and len(ours) == 1:
            continue
        for i in reversed(ours[1:]):
            del groups[i]
        if ours:
            groups[ours[0]] = group
        else:
            groups.append(group)


def _drop_hooks(doc: Any) -> None:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in HOOKS:
        groups = hooks.get(event)
        if isinstance(groups, list):
            kept = [g for g in groups if not _is_our_group(g)]
            if len(kept) != len(groups):
                if kept:
                    hooks[event] = kept
                else:
                    del hooks[event]
    if not hooks:
        del doc["hooks"]


def _approve(doc: Any) -> None:
    names = doc.get("enabledMcpjsonServers")
    if not isinstance(names, list):
        doc["enabledMcpjsonServers"] = [SERVER]
    elif SERVER not in names:
        names.append(SERVER)


def _unapprove(doc: Any) -> None:
    names = doc.get("enabledMcpjsonServers")
    if isinstance(names, list) and SERVER in names:
        names.remove(SERVER)
        if not names:
            del doc["enabledMcpjsonServers"]


def _both(*edits: Any) -> Any:
    def run(doc: Any) -> None:
        for change in edits:
            change(doc)

    return run


def _set_toml_server(doc: Any, launch: Launch) -> None:
    import tomlkit

    command, args = launch.mcp_argv()
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    current = servers.get(SERVER)
    if current is not None and current.get("command") == command and current.get("args") == args:
        return
    table = tomlkit.table()
    table["command"] = command
    table["args"] = args
    servers[SERVER] = table


def _drop_toml_server(doc: Any) -> None:
    servers = doc.get("mcp_servers")
    if servers is not None and SERVER in servers:
        del servers[SERVER]
        if not servers:
            del doc["mcp_servers"]


# -- the plans ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentPlan:
    agent: Agent
    scope: Scope
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...]


def plan(
    agent: Agent,
    scope: Scope,
    launch: Launch,
    *,
    project_dir: Path,
    home: Path,
    environ: Mapping[str, str] | None = None,
) -> AgentPlan:
    """The files vaultmem's entries go into for `agent` at `scope`, and what to tell the user."""
    env = os.environ if environ is None else environ
    command, args = launch.mcp_argv()
    if agent == "claude":
        return _claude(scope, launch, command, args, project_dir, home)
    if agent == "codex":
        codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        folder = codex_home if scope == "user" else project_dir / ".codex"
        notes = [
            "Codex runs hooks only once you trust them: open `codex` and review them with /hooks."
        ]
        if scope == "project":
            notes.insert(
                0,
                f"Codex reads {folder} only when the project is trusted (trust it when codex "
                f'asks, or `[projects."{project_dir}"] trust_level = "trusted"` in '
                f"{codex_home / 'config.toml'}).",
            )
        return AgentPlan(
            agent,
            scope,
            (
                FileChange(
                    folder / "config.toml",
                    "toml",
                    ("mcp_servers.vaultmem",),
                    lambda doc: _set_toml_server(doc, launch),
                    _drop_toml_server,
                ),
                FileChange(
                    folder / "hooks.json",
                    "json",
                    tuple(f"hooks.{e}" for e in HOOKS),
                    lambda doc: _set_hooks(doc, launch),
                    _drop_hooks,
                ),
            ),
            tuple(notes),
        )
    base = home if scope == "user" else project_dir
    entry = {"command": command, "args": args, "disabled": False, "autoApprove": [*READ_ONLY_TOOLS]}
    return AgentPlan(
        agent,
        scope,
        (
            FileChange(
                base / ".kiro" / "settings" / "mcp.json",
                "json",
                ("mcpServers.vaultmem",),
                lambda doc: _set_server(doc, entry),
                _drop_server,
            ),
        ),
        (
            "Kiro: no hooks installed (Kiro's hooks live in its IDE agent files); for start-up "
            "memory run `vaultmem context --write kiro`.",
        ),
    )


def _claude(
    scope: Scope, launch: Launch, command: str, args: list[str], project_dir: Path, home: Path
) -> AgentPlan:
    entry = {"type": "stdio", "command": command, "args": args}
    hook_entries = tuple(f"hooks.{e}" for e in HOOKS)
    if scope == "user":
        return AgentPlan(
            "claude",
            scope,
            (
                FileChange(
                    home / ".claude.json",
                    "json",
                    ("mcpServers.vaultmem",),
                    lambda doc: _set_server(doc, entry),
                    _drop_server,
                ),
                FileChange(
                    home / ".claude" / "settings.json",
                    "json",
                    hook_entries,
                    lambda doc: _set_hooks(doc, launch),
                    _drop_hooks,
                ),
            ),
            (),
        )
    local = project_dir / ".claude" / "settings.local.json"
    notes: list[str] = []
    gated = _local_settings_gated(project_dir)
    if gated:
        notes.append(
            f"Claude Code ignores the approval in {local} here ({gated}): approve the "
            "vaultmem server once in `claude` (/mcp), or run `vaultmem setup claude --user`."
        )
    return AgentPlan(
        "claude",
        scope,
        (
            FileChange(
                project_dir / ".mcp.json",
                "json",
                ("mcpServers.vaultmem",),
                lambda doc: _set_server(doc, entry),
                _drop_server,
            ),
            FileChange(
                local,
                "json",
                ("enabledMcpjsonServers: vaultmem", *hook_entries),
                _both(_approve, lambda doc: _set_hooks(doc, launch)),
                _both(_unapprove, _drop_hooks),
            ),
        ),
        tuple(notes),
    )


def _local_settings_gated(project_dir: Path) -> str | None:
    """Why Claude Code would not count `.claude/settings.local.json` here, or None."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--error-unmatch", ".claude/settings.local.json"],
            cwd=project_dir,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "git is not available to tell"
    if done.returncode == 0:
        return "the file is tracked by git"
    if b"not a git repository" in done.stderr or done.returncode == 128:
        return "not a git work tree"
    return None


@dataclass(frozen=True, slots=True)
class SetupResult:
    """What `vaultmem setup` did (or would do, with `dry_run`)."""

    agent: Agent
    scope: Scope
    vault: str
    program: tuple[str, ...]
    remove: bool
    dry_run: bool
    files: tuple[PlannedFile, ...]
    notes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "vault": self.vault,
            "command": list(self.program),
            "remove": self.remove,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "files": [f.to_dict() for f in self.files],
            "notes": list(self.notes),
        }


def setup(
    agent: Agent,
    launch: Launch,
    *,
    scope: Scope | None = None,
    project_dir: Path,
    home: Path,
    remove: bool = False,
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> SetupResult:
    """Plan vaultmem's entries for `agent` (or their removal) and, unless `dry_run`, write them:
    each edited file is backed up first (`edit.apply`). Every file is planned before any is
    written, so a file that cannot be parsed stops the run before anything changes."""
    if agent not in AGENTS:
        raise InvalidArgumentError(
            f"Unknown agent {agent!r}.", hint=f"Use one of {', '.join(AGENTS)}."
        )
    chosen: Scope = scope or DEFAULT_SCOPE[agent]
    project = project_dir.resolve()
    if chosen == "project" and not project.is_dir():
        raise NotFoundError(
            f"The project folder {project} does not exist.",
            hint="Pass --project with an existing folder (default: the working directory).",
        )
    agent_plan = plan(agent, chosen, launch, project_dir=project, home=home, environ=environ)
    planned = [
        (edit.plan_remove if remove else edit.plan_add)(change) for change in agent_plan.changes
    ]
    if not dry_run:
        planned = [edit.apply(p) for p in planned]
    notes = agent_plan.notes if not remove else ()
    return SetupResult(
        agent, chosen, str(launch.vault), launch.program, remove, dry_run, tuple(planned), notes
    )

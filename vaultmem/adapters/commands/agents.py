"""Commands for agents: `recall`, `read`, `recent`, `used`, `context`, `setup` and `hook`, and
the MCP server (`mcp`). Each operation holds its params, its run and its text renderer.

`hook` is the agents' own command: `vaultmem/__main__.py` sends `vaultmem hook …` straight to
`adapters/hook.py` without building the CLI, and its operation here gives it help, docs and the
same behaviour when the CLI is called as a library (`cli.main`)."""

from __future__ import annotations

import sys
from typing import Any, get_args

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import (
    KIND,
    LIMIT,
    MAX_ID,
    MAX_NAME,
    MAX_QUERY,
    SCOPE_SPEC,
    SCOPES_PARAM,
    VAULT,
    text,
)
from vaultmem.adapters.commands.search import ranked_hit
from vaultmem.adapters.contract import Call, Hits, Operation, Param
from vaultmem.core.models import (
    CONTEXT_BUDGET_CHARS,
    CONTEXT_PER_SCOPE,
    CONTEXT_SCOPES,
    READ_MAX_BYTES,
    ContextTarget,
    RecallMode,
    RecallSort,
)

P = output.plural
MODES: tuple[RecallMode, ...] = get_args(RecallMode)
SORTS: tuple[RecallSort, ...] = get_args(RecallSort)
TARGETS: tuple[ContextTarget, ...] = get_args(ContextTarget)


def _recall(call: Call) -> Hits:
    a = call.args
    hits = call.v.recall(
        a["query"],
        scopes=a["scopes"] or (),
        mode=a["mode"],
        sort=a["sort"],
        kind=a["kind"],
        limit=a["limit"],
        include_related=a["include_related"],
    )
    return Hits(hits)


def _recall_text(result: Hits, args: dict[str, Any]) -> None:
    if not result.hits:
        return output.line("Nothing recalled.")
    for i, hit in enumerate(result.hits, 1):
        where = hit.scope + (f":{hit.scope_id}" if hit.scope_id else "")
        flags = (" [related]" if hit.related else "") + ("" if hit.fresh else " [stale]")
        # The note's title, as `search` shows it; a topic's key too when the title differs
        # (the key is what `get` and `store` take).
        name = hit.title or hit.key
        if hit.managed and hit.key != name:
            flags = f" ({hit.key})" + flags
        ranked_hit(i, name, flags, f"{hit.path} · {where} · {hit.score:.3f}", hit.snippet)


def _read_text(result: Any, args: dict[str, Any]) -> None:
    text = output.visible(result.text)
    output.write(text + ("" if text.endswith("\n") else "\n"))
    if result.next_offset is not None:
        sys.stderr.write(
            f"[{result.next_offset} of {result.total_bytes} bytes; "
            f"continue with --offset {result.next_offset}]\n"
        )


def _recent(call: Call) -> dict[str, Any]:
    a = call.args
    return {"notes": call.v.recent(since=a["since"], kind=a["kind"], limit=a["limit"])}


def _recent_text(result: dict[str, Any], args: dict[str, Any]) -> None:
    notes = result["notes"]
    output.table(
        P(len(notes), "recently changed note"),
        ["modified", "path", "scope"],
        [(n.modified, n.path, n.scope + (f":{n.scope_id}" if n.scope_id else "")) for n in notes],
    )


def _context(call: Call) -> Any:
    a = call.args
    scopes = a["scopes"] or CONTEXT_SCOPES
    size = {"per_scope": a["per_scope"], "budget_chars": a["budget_chars"]}
    where = {"project_dir": a["project"], "session": a["session"]}
    if a.get("write") is None:
        return call.v.context(scopes=scopes, **where, **size)
    target: ContextTarget = a["write"]
    return call.v.write_context(target, scopes=scopes, **where, **size)


def _context_text(result: Any, args: dict[str, Any]) -> None:
    if args["write"] is None:
        return output.line(result.text)
    verb = "Created" if result.created else "Updated" if result.changed else "Unchanged:"
    output.line(f"{verb} {result.path} ({P(len(result.block.entries), 'entry', 'entries')})")


_PAST = {"create": "created", "update": "updated", "delete": "deleted", "restore": "restored"}
AGENT_NAMES = ("claude", "codex", "kiro")  # setup.agents.AGENTS, without importing setup here


def _setup(call: Call) -> Any:
    from pathlib import Path

    from vaultmem.core.errors import InvalidArgumentError
    from vaultmem.setup import agents

    a = call.args
    vault = call.v
    vault.check_is_a_vault()
    if a["user"] and a["project"] is not None:
        raise InvalidArgumentError(
            "--project and --user exclude each other.", hint="Pass one of them, or neither."
        )
    scope: agents.Scope | None = "user" if a["user"] else None
    if a["project"] is not None:
        scope = "project"
    return agents.setup(
        a["agent"],
        agents.Launch.current(vault.root),
        scope=scope,
        project_dir=Path(a["project"] or Path.cwd()),
        home=Path.home(),
        remove=a["remove"],
        dry_run=a["dry_run"],
    )


def _setup_text(result: Any, args: dict[str, Any]) -> None:
    verb = "remove from" if result.remove else "set up"
    if not result.changed:
        output.line(f"vaultmem setup {result.agent} ({result.scope}): {verb} nothing to change.")
    for f in result.files:
        if not f.changed:
            output.line(f"  unchanged  {f.path}")
            continue
        done = ("would " + f.action) if result.dry_run else _PAST[f.action]
        output.line(f"  {done:<14} {f.path}  ({', '.join(f.entries)})")
        if f.backup:
            output.line(f"  {'backup':<14} {f.backup}")
        for diff_line in f.diff().splitlines():
            output.line(f"    {diff_line}")
    for note in result.notes:
        output.line(f"Note: {note}")
    if result.dry_run and result.changed:
        output.line("Dry run: nothing was written.")


def _hook(call: Call) -> None:
    from vaultmem.adapters import hook

    a = call.args
    hook.run(
        a["event"],
        vault=None if a["vault"] is None else str(a["vault"]),
        budget_chars=a["budget_chars"],
        time_budget_s=a["time_budget_s"],
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "recall",
        "Recall memories for a question: topics and notes of the given scopes, never expired.",
        "Agents",
        (
            text(
                "query",
                "The question or keywords, e.g. how do I run the tests.",
                required=True,
                positional=True,
                metavar="QUERY",
                min_length=1,
                max_length=MAX_QUERY,
            ),
            VAULT,
            SCOPES_PARAM,
            Param(
                "mode",
                "str",
                "blended: BM25 blended with name matches and the agent's own topics; metadata: "
                "name matches only; words, vectors, hybrid: search's modes alone (vectors and "
                "hybrid need semantic recall on).",
                "blended",
                choices=MODES,
                metavar="MODE",
            ),
            KIND,
            Param(
                "sort",
                "str",
                "score blends relevance 90 %, recency 5 %, usage 5 %.",
                "score",
                choices=SORTS,
                metavar="SORT",
            ),
            LIMIT(10, 100),
            Param(
                "include_related",
                "bool",
                "Also return up to 5 notes linked from the hits "
                "(typed relations and See Also), one level deep.",
                False,
            ),
        ),
        _recall,
        examples=(
            'vaultmem recall "how do I run the tests" --scope project:atlas --scope global',
            'vaultmem recall "release process" --include-related --json',
        ),
        tool="memory_recall",
        tool_title="Recall memories",
        tool_description="Find the memories (agent topics and people's notes) that answer a "
        "question. Blended mode (the default) ranks BM25 full-text matches blended with name "
        "matches (key, title, alias, tag) and weighs the agent's own topics: one holding "
        "every word of the question ranks with the best note; words, vectors and hybrid are "
        "memory_search's modes alone. Expired and forgotten topics are never returned. "
        "Each hit has id, key, scope, scope_id, path, title, snippet, score, updated, `fresh` "
        "(false when the file changed since it was indexed) and `related` (pulled in by a link "
        "from another hit). Read a hit in full with memory_read. Not a use: the same question "
        "gives the same order; call memory_used for a note that helped.",
        render=_recall_text,
    ),
    Operation(
        "read",
        "A note's text from its file (frontmatter apart, secrets redacted); counts as a use.",
        "Agents",
        (
            text(
                "note",
                "NOTE, NOTE#Heading, NOTE#Parent#Child or NOTE#^block: path, title, alias, "
                "file name, topic key or id.",
                required=True,
                positional=True,
                metavar="NOTE",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
            Param(
                "max_bytes",
                "int",
                "At most this many bytes of text; the rest comes with offset=next_offset.",
                READ_MAX_BYTES,
                minimum=1,
                maximum=1_000_000,
                metavar="N",
            ),
            Param(
                "offset",
                "int",
                "Start here: the next_offset of a capped read.",
                0,
                minimum=0,
                maximum=1_000_000_000,
                metavar="N",
            ),
        ),
        lambda call: call.v.read(
            call.args["note"], max_bytes=call.args["max_bytes"], offset=call.args["offset"]
        ),
        examples=(
            'vaultmem read "Runbook - Running tests#Quick run"',
            "vaultmem read build-commands --json",
        ),
        tool="memory_read",
        tool_title="Read a note",
        tool_description="Read any note of the vault (a person's note or a memory topic) as "
        "text, straight from its file: name it by path, title, alias, file name, topic key or "
        "id, optionally with `#Heading` (`#Parent#Child`) or `#^block` for that part alone. "
        "Frontmatter comes back apart; secrets are redacted. A long text comes in pieces of "
        "max_bytes: when `next_offset` is not null, call again with offset=next_offset. Counts "
        "as a use.",
        read_only=False,  # it records a use (<state>/usage.jsonl)
        render=_read_text,
    ),
    Operation(
        "recent",
        "Notes changed most recently (file modification time), newest first.",
        "Agents",
        (
            VAULT,
            text(
                "since",
                "Changed at or after this ISO date or time (UTC).",
                iso_date=True,
                metavar="DATE",
                max_length=64,
            ),
            KIND,
            LIMIT(20, 500),
        ),
        _recent,
        examples=("vaultmem recent --since 2026-11-01 --kind topics",),
        tool="memory_recent",
        tool_title="Recently changed notes",
        tool_description="Notes by file modification time, newest first: what changed while "
        "you were away. Each has id, path, title, scope, scope_id, managed (a memory topic), "
        "updated, modified and size.",
        render=_recent_text,
    ),
    Operation(
        "used",
        "Record that a note helped: one use, a bounded tie-breaker in recall.",
        "Agents",
        (
            text(
                "note",
                "Topic key, or a note's id, path, title or alias.",
                required=True,
                positional=True,
                metavar="NOTE",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
        ),
        lambda call: call.v.used(call.args["note"]),
        examples=("vaultmem used build-commands",),
        tool="memory_used",
        tool_title="Mark a note as used",
        tool_description="Record that a note or topic helped answer (one use). Uses decay over "
        "30 days and reorder only near-ties in memory_recall.",
        read_only=False,  # it records a use (<state>/usage.jsonl)
        render=lambda ref, args: output.line(f"Used {ref.path}"),
    ),
    Operation(
        "context",
        "Print the <vaultmem-memory> context block, or write it into an agent's file.",
        "Agents",
        (
            VAULT,
            Param(
                "scopes",
                "strs",
                "Scopes in block order, SCOPE or SCOPE:SCOPE_ID.",
                CONTEXT_SCOPES,
                flags=("--scopes", "--scope"),
                metavar="SCOPE[:ID]",
                pattern=SCOPE_SPEC,
                max_length=MAX_ID + 12,
                max_items=16,
                comma_lists=True,
            ),
            Param(
                "per_scope",
                "int",
                "At most this many entries per scope.",
                CONTEXT_PER_SCOPE,
                minimum=1,
                maximum=50,
                metavar="N",
            ),
            Param(
                "budget_chars",
                "int",
                "Size limit of the whole block, in characters; each "
                "scope gets an equal share that is not lent to another.",
                CONTEXT_BUDGET_CHARS,
                minimum=200,
                maximum=100_000,
                metavar="N",
            ),
            Param(
                "write",
                "str",
                "Write the block between markers into .claude/CLAUDE.md "
                "(claude), AGENTS.md (codex) or .kiro/steering/vaultmem-memory.md (kiro).",
                choices=TARGETS,
                metavar="AGENT",
                mcp=False,
            ),
            Param(
                "project",
                "path",
                "The project folder: whose project memories the block holds and, with "
                "--write, where the file goes (default: the working directory).",
                metavar="DIR",
                mcp=False,
            ),
            Param(
                "session",
                "str",
                "The session whose memories come first (a bare `session` scope is left out "
                "without it).",
                metavar="ID",
                max_length=MAX_ID,
            ),
        ),
        _context,
        examples=(
            "vaultmem context --scopes session,project:atlas,global --budget-chars 1500",
            "vaultmem context --write claude --project ~/code/atlas",
        ),
        tool="memory_context",
        tool_title="Memory context block",
        tool_description="A compact `<vaultmem-memory>` block of the most useful memories, "
        "scope by scope (default: this project's, the client's root deciding which; then "
        "global; a session's first when `session` names it), for the start of a task. Each line "
        "is `- [scope] key: latest content`; `[related]` marks notes linked from a chosen "
        "topic. Secrets are redacted; the block never exceeds budget_chars.",
        render=_context_text,
    ),
    Operation(
        "setup",
        "Register the MCP server and the hooks in an agent's own config (previewed, backed "
        "up, idempotent; --remove undoes it).",
        "Agents",
        (
            Param(
                "agent",
                "str",
                "The agent: claude, codex or kiro.",
                required=True,
                positional=True,
                choices=AGENT_NAMES,
                metavar="AGENT",
            ),
            VAULT,
            Param(
                "project",
                "path",
                "Set up this project's config (default for claude and kiro: the working "
                "directory).",
                metavar="DIR",
            ),
            Param("user", "bool", "Set up the user's config (default for codex).", False),
            Param("dry_run", "bool", "Show the change; write nothing.", False),
            Param("remove", "bool", "Take vaultmem's entries out again.", False),
        ),
        _setup,
        examples=(
            "vaultmem setup claude --vault ~/Notes",
            "vaultmem setup codex --dry-run",
            "vaultmem setup claude --remove",
        ),
        read_only=False,
        render=_setup_text,
    ),
    Operation(
        "hook",
        "Print memory for an agent's hook; the event's JSON comes on stdin (always exits 0).",
        "Agents",
        (
            Param(
                "event",
                "str",
                "The hook: session-start, prompt or pre-compact.",
                required=True,
                positional=True,
                metavar="EVENT",
                max_length=40,
            ),
            VAULT,
            Param(
                "budget_chars",
                "int",
                "The session-start block's size; a prompt's memories get a third of it.",
                10_000,
                minimum=200,
                maximum=100_000,
                metavar="N",
            ),
            Param(
                "time_budget_s",
                "float",
                "Give up, printing one line, after this many seconds.",
                5.0,
                minimum=0.000001,
                maximum=60,
                metavar="S",
            ),
        ),
        _hook,
        examples=('echo \'{"cwd": "/repo"}\' | vaultmem hook session-start --vault ~/Notes',),
        needs_vault=False,
        json_help=None,
        streams=True,
    ),
)

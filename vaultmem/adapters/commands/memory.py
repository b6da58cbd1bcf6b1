"""Memory commands: topics (`store`, `correct`, `get`, `forget`, `prune`) and typed edges
(`relate`, `edges`, `accept`, `reject`). Each operation holds its params, its run and its text
renderer."""

from __future__ import annotations

from typing import Any

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import (
    KEY_OR_ID,
    MAX_ID,
    MAX_ITEMS,
    MAX_NAME,
    MAX_TEXT,
    SCOPE,
    SCOPE_ID,
    SOURCE,
    VAULT,
    text,
)
from vaultmem.adapters.contract import Call, Operation, Param
from vaultmem.core.config import DEFAULT_MANAGED_FOLDER
from vaultmem.core.models import EDGE_STATUSES, SCOPES, TOPIC_TYPES
from vaultmem.core.names import KEY_PATTERN

P = output.plural


def _store(call: Call) -> Any:
    a = call.args
    return call.v.store(
        a["key"] or None,
        a["content"],
        scope=a["scope"],
        scope_id=a["scope_id"],
        type=a["type"],
        tags=a["tags"],
        source=a["source"],
    )


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


def _get_text(view: Any, args: dict[str, Any]) -> None:
    t = view.topic
    output.line(
        f"{t.key}  ({view.path}) · {t.type} · tags {', '.join(t.tags) or '-'}"
        f" · recalled {view.usage.count if view.usage else 0}×"
    )
    for obs in t.observations:
        mark = f"  [superseded by {obs.superseded_by}]" if obs.superseded_by else ""
        output.line(f"\n{obs.timestamp}{mark}\n{obs.text}")


def _forget_text(result: Any, args: dict[str, Any]) -> None:
    output.line(f"Moved {result.path} to {result.trashed_to}")


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


EDGE = text(
    "edge",
    "Edge id (from vaultmem edges).",
    required=True,
    positional=True,
    metavar="EDGE",
    min_length=1,
    max_length=MAX_ID,
)
"""The edge `accept` and `reject` act on."""

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "store",
        "Save an observation: appended to the topic's file (created when new), secrets redacted.",
        "Memory",
        (
            Param(
                "key",
                "str",
                "Topic key: 1-60 lower-case letters, digits, hyphens; '' (or "
                "omitted over MCP) derives one from the content.",
                positional=True,
                cli_required=True,
                metavar="KEY",
                max_length=60,
                pattern=f"^({KEY_PATTERN})?$",
            ),
            Param(
                "content",
                "str",
                "The observation, in Markdown: one self-contained fact ('-' reads stdin).",
                required=True,
                positional=True,
                cli_default="-",
                stdin_dash=True,
                metavar="TEXT",
                min_length=1,
                max_length=MAX_TEXT,
            ),
            VAULT,
            Param(
                "scope",
                "str",
                "Where the fact applies: session (kept 14 days), project "
                "(90 days), global (every project), agent, federated.",
                "project",
                choices=SCOPES,
                metavar="SCOPE",
            ),
            SCOPE_ID,
            Param(
                "type",
                "str",
                "user (a preference) and feedback (a correction) never "
                "expire; project and reference follow the scope's retention.",
                "project",
                choices=TOPIC_TYPES,
                metavar="TYPE",
            ),
            Param(
                "tags",
                "strs",
                "Tags without # (repeatable or comma-separated).",
                (),
                metavar="TAGS",
                pattern=r"^[A-Za-z0-9_/-]{1,64}$",
                max_length=64,
                max_items=MAX_ITEMS,
                comma_lists=True,
            ),
            Param(
                "source",
                "str",
                "The agent or tool that stores it.",
                None,
                mcp_default="mcp",
                metavar="NAME",
                max_length=MAX_ID,
            ),
        ),
        _store,
        examples=(
            'vaultmem store ci-cache "CI caches the uv download folder." --scope-id atlas '
            "--tags ci,build",
            'echo "A fact" | vaultmem store "" --scope session --scope-id s1 --json',
        ),
        tool="memory_store",
        tool_title="Store a memory",
        tool_description="Save one observation into a memory topic (a Markdown note in the "
        "vault's managed folder). The same key and scope append a new timestamped section to "
        "the existing topic; it never creates a second one. Store reusable conclusions "
        "(decisions, working commands, preferences, corrections), not transcripts. Secrets are "
        "redacted; a secret in a global or federated write is rejected (code "
        "`secret_detected`). On a `partial_write` error the note is saved but the index is "
        "stale: do not retry.",
        read_only=False,
        idempotent=True,  # the same text again appends nothing (duplicate_of)
        render=_store_text,
    ),
    Operation(
        "correct",
        "Supersede a topic's latest observation; the old one stays visible, marked.",
        "Memory",
        (
            KEY_OR_ID,
            Param(
                "content",
                "str",
                "The corrected observation ('-' reads stdin).",
                required=True,
                positional=True,
                stdin_dash=True,
                metavar="TEXT",
                min_length=1,
                max_length=MAX_TEXT,
            ),
            VAULT,
            SCOPE,
            SCOPE_ID,
            SOURCE,
        ),
        lambda call: call.v.correct(
            call.args["key"],
            call.args["content"],
            scope=call.args["scope"],
            scope_id=call.args["scope_id"],
            source=call.args["source"],
        ),
        examples=('vaultmem correct ci-cache "Cache key is the uv.lock hash."',),
        tool="memory_correct",
        tool_title="Correct a memory",
        tool_description="Correct a topic whose latest observation is wrong: the old one stays "
        "in the file marked `Superseded by`, the correction is appended and becomes what recall "
        "and memory_get return as latest. Name the topic by key (with scope/scope_id when the "
        "key exists in several scopes) or id. On `partial_write` do not retry.",
        read_only=False,
        render=_store_text,
    ),
    Operation(
        "get",
        "One topic, read from its file, with every observation (counts as a use).",
        "Memory",
        (
            KEY_OR_ID,
            VAULT,
            SCOPE,
            SCOPE_ID,
            Param("include_expired", "bool", "Also show a topic past its retention.", False),
        ),
        lambda call: call.v.get(
            call.args["key"],
            scope=call.args["scope"],
            scope_id=call.args["scope_id"],
            include_expired=call.args["include_expired"],
        ),
        examples=("vaultmem get ci-cache --scope project --scope-id atlas",),
        tool="memory_get",
        tool_title="Read a memory topic",
        tool_description="Read one memory topic in full: metadata and every observation, "
        "newest last, with corrections marked. Name it by key (with scope/scope_id when the "
        "key exists in several scopes) or by id.",
        read_only=False,  # it records a use (<state>/usage.jsonl)
        render=_get_text,
    ),
    Operation(
        "forget",
        "Move a topic to the managed folder's .trash/ and drop it from the index.",
        "Memory",
        (KEY_OR_ID, VAULT, SCOPE, SCOPE_ID),
        lambda call: call.v.forget(
            call.args["key"], scope=call.args["scope"], scope_id=call.args["scope_id"]
        ),
        examples=("vaultmem forget ci-cache --scope-id borealis",),
        tool="memory_forget",
        tool_title="Forget a memory topic",
        tool_description="Forget one memory topic: its file moves to the managed folder's "
        "`.trash/` (a person can restore it) and it leaves the index, so recall never returns "
        "it again.",
        read_only=False,
        destructive=True,
        idempotent=True,
        render=_forget_text,
    ),
    Operation(
        "prune",
        "List topics past their retention (session 14 d, project 90 d); --apply trashes them.",
        "Memory",
        (VAULT, Param("apply", "bool", "Move them to .trash/.", False)),
        lambda call: call.v.prune(apply=call.args["apply"]),
        examples=("vaultmem prune", "vaultmem prune --apply --json"),
        read_only=False,
        render=_prune_text,
    ),
    Operation(
        "relate",
        f"Record an edge A → B (kept in {DEFAULT_MANAGED_FOLDER}/_decisions.md) and add it to "
        "A's See Also.",
        "Memory",
        (
            text(
                "a",
                "Source: a topic key or id, or a note.",
                required=True,
                positional=True,
                metavar="A",
                min_length=1,
                max_length=MAX_NAME,
            ),
            text(
                "b",
                "Target: a topic key or id, or a note.",
                required=True,
                positional=True,
                metavar="B",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
            text(
                "type",
                "relates_to, supersedes, contradicts or another relation name.",
                default="relates_to",
                metavar="TYPE",
                pattern=r"^[a-z][a-z0-9_-]{0,39}$",
                max_length=40,
            ),
            Param(
                "propose",
                "bool",
                "Only propose it (status proposed) for a person to accept; an MCP call always "
                "proposes.",
                False,
                mcp=False,
                mcp_default=True,
            ),
        ),
        lambda call: call.v.relate(
            call.args["a"], call.args["b"], type=call.args["type"], propose=call.args["propose"]
        ),
        examples=(
            "vaultmem relate duckdb-index-decision Architecture",
            "vaultmem relate writer-rule duckdb-index-decision --type supersedes --propose",
        ),
        tool="memory_relate",
        tool_title="Propose a relationship",
        tool_description="Propose a typed edge from A to B (relates_to, supersedes, contradicts "
        "or another name) between topics or notes. It is recorded as `proposed` in the vault's "
        "decisions note; a person accepts or rejects it (`vaultmem accept EDGE`), and only then "
        "does it join A's See Also. A pair a person already decided keeps that decision.",
        read_only=False,
        idempotent=True,
        render=lambda edge, args: _edge_table("Recorded", [edge]),
    ),
    Operation(
        "edges",
        "Typed edges between notes: from links, people's decisions and suggestions.",
        "Memory",
        (
            VAULT,
            text("status", "Only edges with this status.", choices=EDGE_STATUSES, metavar="STATUS"),
            Param("stale", "bool", "Only stale edges.", False),
        ),
        lambda call: call.v.edges(status=call.args["status"], stale=call.args["stale"]),
        examples=("vaultmem edges --status proposed",),
        render=lambda rows, args: _edge_table(P(len(rows), "edge"), rows),
    ),
    Operation(
        "accept",
        "Accept a proposed edge: it becomes active and joins the topic's See Also.",
        "Memory",
        (EDGE, VAULT),
        lambda call: call.v.accept(call.args["edge"]),
        read_only=False,
        render=lambda edge, args: _edge_table("Accepted", [edge]),
    ),
    Operation(
        "reject",
        "Reject an edge: it is never proposed again.",
        "Memory",
        (EDGE, VAULT),
        lambda call: call.v.reject(call.args["edge"]),
        read_only=False,
        render=lambda edge, args: _edge_table("Rejected", [edge]),
    ),
)

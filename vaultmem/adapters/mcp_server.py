"""`vaultmem mcp`: the vault's memory as MCP tools over stdio (the official `mcp` SDK).

An adapter like the CLI: each tool validates its arguments against its JSON schema, calls one
`Vault` method in a worker thread and returns the same `data` the CLI's `--json` envelope
carries, as JSON text and as structured content. A `VaultmemError` comes back as a tool error
(`isError: true`) whose body is the envelope's `error` object: `code`, `message`, `hint` (and
`phases_done` with `retry: false` for a partial write). The server never holds the index open:
every call opens it read-only for its own length (inside the `Vault` method), so `reconcile`
and `watch` in other processes are never locked out and their changes show on the next call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import jsonschema  # type: ignore[import-untyped]
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from vaultmem import __version__
from vaultmem.adapters.output import to_jsonable
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.models import SCOPES
from vaultmem.search.query import SearchFilters
from vaultmem.vault import Vault

INSTRUCTIONS = """\
vaultmem is this user's long-term memory, kept as Markdown notes in an Obsidian vault that
people read and edit too. Call memory_recall before answering questions about the project,
the user's preferences or earlier decisions; call memory_store to save a reusable conclusion
(a decision, a command that works, a preference, a correction) under a short stable key.
memory_get reads one topic in full, memory_search searches every note of the vault,
memory_links walks the link graph, memory_context returns a compact startup summary.
Errors carry a stable `code`; after a `partial_write` error do NOT retry the store."""

_SCOPE_SPEC = {
    "type": "string",
    "pattern": r"^(session|project|global|agent|federated)(:[^\s,]+)?$",
    "description": "A scope, optionally with its scope id: `project` (every project) or "
    "`project:atlas` (one project).",
}
_SCOPE = {"type": "string", "enum": list(SCOPES)}
_KEY_OR_ID = {
    "type": "string",
    "minLength": 1,
    "description": "The topic's key (e.g. `build-and-test-commands`) or its id (a UUID).",
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    title: str
    description: str
    schema: dict[str, Any]
    run: Callable[[Vault, dict[str, Any]], Any]
    read_only: bool = True


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _when(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{name} {value!r} is not an ISO date or time.") from None


def _store(vault: Vault, a: dict[str, Any]) -> Any:
    return vault.store(
        a.get("key"),
        a["content"],
        scope=a.get("scope", "project"),
        scope_id=a.get("scope_id"),
        type=a.get("type", "project"),
        tags=tuple(a.get("tags", ())),
        source=a.get("source", "mcp"),
    )


def _get(vault: Vault, a: dict[str, Any]) -> Any:
    return vault.get(a["key"], scope=a.get("scope"), scope_id=a.get("scope_id"))


def _forget(vault: Vault, a: dict[str, Any]) -> Any:
    return vault.forget(a["key"], scope=a.get("scope"), scope_id=a.get("scope_id"))


def _recall(vault: Vault, a: dict[str, Any]) -> Any:
    hits = vault.recall(
        a["query"],
        scopes=tuple(a.get("scopes", ())),
        mode=a.get("mode", "metadata-first"),
        sort=a.get("sort", "score"),
        limit=a.get("limit", 10),
        include_related=a.get("include_related", False),
    )
    return {"hits": hits}


def _context(vault: Vault, a: dict[str, Any]) -> Any:
    block = vault.context(
        scopes=tuple(a.get("scopes", ("session", "project", "global"))),
        per_scope=a.get("per_scope", 10),
        budget_chars=a.get("budget_chars", 3000),
    )
    return block


def _links(vault: Vault, a: dict[str, Any]) -> Any:
    direction = a.get("direction", "outgoing")
    if direction == "backlinks":
        ref, rows = vault.backlinks(a["note"])
    elif direction == "neighbours":
        ref, rows = vault.neighbours(a["note"], a.get("depth", 1))
    else:
        ref, rows = vault.links(a["note"])
    return {"note": ref, "direction": direction, "links": rows}


def _search(vault: Vault, a: dict[str, Any]) -> Any:
    filters = SearchFilters(
        scope=a.get("scope"),
        scope_id=a.get("scope_id"),
        type=a.get("type"),
        tag=a.get("tag"),
        folder=a.get("folder"),
        since=_when(a.get("since"), "since"),
        until=_when(a.get("until"), "until"),
    )
    hits = vault.search(a["query"], filters, limit=a.get("limit", 10), mode=a.get("mode"))
    return {"hits": hits}


def _status(vault: Vault, a: dict[str, Any]) -> Any:
    return vault.status()


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_store",
        "Store a memory",
        "Save one observation into a memory topic (a Markdown note in the vault's managed "
        "folder). The same key and scope append a new timestamped section to the existing "
        "topic; it never creates a second one. Store reusable conclusions (decisions, working "
        "commands, preferences, corrections), not transcripts. Secrets are redacted; a secret "
        "in a global or federated write is rejected (code `secret_detected`). On a "
        "`partial_write` error the note is saved but the index is stale: do not retry.",
        _object(
            {
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The observation, in Markdown. One self-contained fact.",
                },
                "key": {
                    "type": "string",
                    "pattern": "^[a-z0-9-]{1,60}$",
                    "description": "Topic key: 1-60 lower-case letters, digits, hyphens. "
                    "Omit to derive it from the first words of the content.",
                },
                "scope": {
                    **_SCOPE,
                    "default": "project",
                    "description": "Where the fact applies: session (this run, kept 14 days), "
                    "project (this repository, 90 days), global (every project), agent, "
                    "federated.",
                },
                "scope_id": {
                    "type": "string",
                    "description": "Identity within the scope (project name, session id). "
                    "Omit for the current project's identity.",
                },
                "type": {
                    "type": "string",
                    "enum": ["user", "feedback", "project", "reference"],
                    "default": "project",
                    "description": "user (a preference) and feedback (a correction) never "
                    "expire; project and reference follow the scope's retention.",
                },
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[A-Za-z0-9_/-]{1,64}$"},
                    "description": "Tags without `#`.",
                },
                "source": {
                    "type": "string",
                    "description": "Who stores it (agent or tool name).",
                    "default": "mcp",
                },
            },
            ("content",),
        ),
        _store,
        read_only=False,
    ),
    ToolSpec(
        "memory_recall",
        "Recall memories",
        "Find the memories (agent topics and people's notes) that answer a question. The "
        "default mode (metadata-first) returns notes whose key, title, alias or tag equals a "
        "word of the query first, then BM25 full-text matches. Expired and forgotten topics "
        "are never returned. Each hit has id, key, scope, scope_id, path, title, snippet, "
        "score, updated, `fresh` (false when the file changed since it was indexed: read it "
        "with memory_get) and `related` "
        "(pulled in by a link from another hit). Counts as a use of each returned topic.",
        _object(
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The question or keywords, e.g. `how do I run the tests`.",
                },
                "scopes": {
                    "type": "array",
                    "items": _SCOPE_SPEC,
                    "description": "Only these scopes (default: all).",
                },
                "mode": {
                    "type": "string",
                    "enum": ["metadata-first", "metadata", "words", "vectors", "hybrid"],
                    "default": "metadata-first",
                    "description": "words: BM25; vectors: by meaning; hybrid: both fused "
                    "(vectors and hybrid need semantic recall on, docs/search.md).",
                },
                "sort": {
                    "type": "string",
                    "enum": ["score", "recency", "usage"],
                    "default": "score",
                    "description": "score blends relevance 60 %, recency 25 %, usage 15 %.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "include_related": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also return up to 5 notes linked from the hits (typed "
                    "relations and See Also), one level deep.",
                },
            },
            ("query",),
        ),
        _recall,
    ),
    ToolSpec(
        "memory_get",
        "Read a memory topic",
        "Read one memory topic in full: metadata and every observation, newest last, with "
        "corrections marked. Name it by key (with scope/scope_id when the key exists in "
        "several scopes) or by id.",
        _object(
            {
                "key": _KEY_OR_ID,
                "scope": _SCOPE,
                "scope_id": {"type": "string"},
            },
            ("key",),
        ),
        _get,
    ),
    ToolSpec(
        "memory_forget",
        "Forget a memory topic",
        "Forget one memory topic: its file moves to the managed folder's `.trash/` (a person "
        "can restore it) and it leaves the index, so recall never returns it again.",
        _object(
            {
                "key": _KEY_OR_ID,
                "scope": _SCOPE,
                "scope_id": {"type": "string"},
            },
            ("key",),
        ),
        _forget,
        read_only=False,
    ),
    ToolSpec(
        "memory_context",
        "Memory context block",
        "A compact `<vaultmem-memory>` block of the most useful memories, scope by scope "
        "(default session, project, global), for the start of a task. Each line is "
        "`- [scope] key: latest content`; `[related]` marks notes linked from a chosen topic. "
        "Secrets are redacted; the block never exceeds budget_chars.",
        _object(
            {
                "scopes": {
                    "type": "array",
                    "items": _SCOPE_SPEC,
                    "default": ["session", "project", "global"],
                    "description": "Scopes in the order they appear.",
                },
                "per_scope": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "budget_chars": {
                    "type": "integer",
                    "minimum": 200,
                    "maximum": 100000,
                    "default": 3000,
                    "description": "Size limit of the whole block; each scope gets an equal "
                    "share that is not lent to another.",
                },
            }
        ),
        _context,
    ),
    ToolSpec(
        "memory_links",
        "Links of a note",
        "The link graph around one note (name it by path, title, alias, file name or id): "
        "`outgoing` links with where each resolves, `backlinks` (notes linking to it) or "
        "`neighbours` (notes within `depth` hops either way, nearest first).",
        _object(
            {
                "note": {"type": "string", "minLength": 1},
                "direction": {
                    "type": "string",
                    "enum": ["outgoing", "backlinks", "neighbours"],
                    "default": "outgoing",
                },
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 5,
                    "default": 1,
                    "description": "Hops, for `neighbours` only.",
                },
            },
            ("note",),
        ),
        _links,
    ),
    ToolSpec(
        "memory_search",
        "Search the vault",
        "BM25 full-text search over every note of the vault (not only memory topics), "
        "grouped by note with the best section's heading, line and snippet. The query takes "
        'words, "exact phrases", -excluded words and tag:x, path:folder/, type:y operators.',
        _object(
            {
                "query": {"type": "string", "minLength": 1},
                "scope": _SCOPE,
                "scope_id": {"type": "string"},
                "type": {"type": "string", "description": "Frontmatter `type`."},
                "tag": {"type": "string", "description": "A tag; a parent matches nested tags."},
                "folder": {"type": "string", "description": "A vault folder, e.g. `Projects`."},
                "since": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Updated at or after (ISO date or time).",
                },
                "until": {"type": "string", "description": "Updated before (ISO date or time)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "mode": {
                    "type": "string",
                    "enum": ["words", "vectors", "hybrid"],
                    "description": "words: BM25; vectors: by meaning; hybrid: both fused "
                    "(vectors and hybrid need semantic recall on, docs/search.md). Default: "
                    "hybrid when semantic recall is on, else words.",
                },
            },
            ("query",),
        ),
        _search,
    ),
    ToolSpec(
        "memory_status",
        "Index status",
        "How many notes the index holds per scope and folder, link and problem counts, the "
        "last reconcile and how many files changed since (stale results are possible when "
        "that is not 0).",
        _object({}),
        _status,
    ),
)
_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.name == "memory_forget",
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        ),
    )


def _result(body: Mapping[str, Any], *, error: bool) -> types.CallToolResult:
    text = json.dumps(body, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=dict(body), is_error=error
    )


def _invalid(message: str, hint: str) -> types.CallToolResult:
    return _result({"code": "invalid_arguments", "message": message, "hint": hint}, error=True)


def call(vault: Vault, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
    """Run one tool call synchronously (the server runs this in a worker thread)."""
    spec = _BY_NAME.get(name)
    if spec is None:
        return _invalid(f"No tool named {name!r}.", f"Use one of {', '.join(_BY_NAME)}.")
    args = dict(arguments or {})
    problem = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(spec.schema).iter_errors(args)
    )
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
        return _invalid(f"{where}: {problem.message}", f"See the input schema of {name}.")
    try:
        data = to_jsonable(spec.run(vault, args))
    except VaultmemError as error:
        return _result(error.to_dict(), error=True)
    except OSError as error:
        return _result(
            {"code": "io_error", "message": f"{error.strerror}: {error.filename}", "hint": ""},
            error=True,
        )
    return _result(data if isinstance(data, dict) else {"result": data}, error=False)


def build_server(vault: Vault) -> Server[Any]:
    """The low-level server with hand-written schemas. Calls run one at a time in a worker
    thread: DuckDB refuses a read-only and a read-write connection to one file inside one
    process, so a `memory_store` must not overlap a read; the event loop stays free meanwhile."""
    limiter: list[anyio.CapacityLimiter] = []

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(t) for t in TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if not limiter:
            limiter.append(anyio.CapacityLimiter(1))
        return await anyio.to_thread.run_sync(
            call, vault, params.name, params.arguments, limiter=limiter[0]
        )

    return Server(
        "vaultmem",
        version=__version__,
        title="vaultmem",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: _BY_NAME[name].schema if name in _BY_NAME else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(vault_path: Path | None) -> None:
    """Serve until stdin closes. The vault is resolved once; the index is opened per call."""
    vault = Vault(vault_path)
    server = build_server(vault)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
    sys.stdout.flush()

"""`vaultmem mcp`: the vault's memory as MCP tools over stdio (the official `mcp` SDK).

An adapter like the CLI, generated from the same table (`adapters/commands/`, checked and
rendered by `adapters/contract.py`): every `Operation` with a `tool` name is a tool whose
input schema, bounds and defaults come from the operation's params. A call is bound by
`contract.bind` (the CLI's checks, word for word), runs the operation in a worker thread and
returns `contract.data(result)`: exactly the `data` of the CLI's `--json` envelope for the
same call (tests/adapters/test_parity.py compares the two), as JSON text and as structured
content. A `VaultmemError` comes back as a tool error
(`isError: true`) whose body is the envelope's `error` object: `code`, `message`, `hint`
(and `phases_done` with `retry: false` for a partial write).

A request the SDK cannot decode (a lone UTF-16 surrogate such as `\ud800`, nesting deeper than
its parser allows, broken JSON) used to be dropped without a reply, so the client waited
forever; `_CheckedLines` answers it with a JSON-RPC error carrying the request's id.

The server keeps one read-only connection to the index between calls (the `Vault`'s
`store.SharedReader`) and gives it up whenever a writer wants the file, so `reconcile` and
`watch` in other processes wait at most ~50 ms for it and their changes show on the next call.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from vaultmem import __version__
from vaultmem.adapters import commands, contract
from vaultmem.adapters.contract import Call, Operation
from vaultmem.core.errors import FileAccessError, InternalError, InvalidArgumentError, VaultmemError
from vaultmem.vault import Vault

INSTRUCTIONS = """\
vaultmem is this user's long-term memory, kept as Markdown notes in an Obsidian vault that
people read and edit too. Call memory_recall before answering questions about the project,
the user's preferences or earlier decisions; call memory_store to save a reusable conclusion
(a decision, a command that works, a preference, a correction) under a short stable key.
memory_read reads any note (or one heading of it) in full, memory_get one topic's observations,
memory_recent lists what changed lately, memory_used marks a note that helped,
memory_search searches every note of the vault,
memory_links walks the link graph, memory_context returns a compact startup summary.
Errors carry a stable `code`; after a `partial_write` error do NOT retry the store."""

TOOLS: tuple[Operation, ...] = tuple(op for op in commands.OPERATIONS if op.tool)
SCHEMAS: dict[str, dict[str, Any]] = {str(op.tool): contract.json_schema(op) for op in TOOLS}


def _tool(op: Operation) -> types.Tool:
    return types.Tool(
        name=str(op.tool),
        title=op.tool_title,
        description=op.tool_description,
        input_schema=SCHEMAS[str(op.tool)],
        annotations=types.ToolAnnotations(
            title=op.tool_title,
            read_only_hint=op.read_only,
            destructive_hint=op.destructive,
            idempotent_hint=op.read_only,
            open_world_hint=False,
        ),
    )


def _result(body: Mapping[str, Any], *, error: bool) -> types.CallToolResult:
    text = json.dumps(body, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=dict(body), is_error=error
    )


def call(vault: Vault, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
    """Run one tool call synchronously (the server runs this in a worker thread)."""
    try:
        op = commands.BY_TOOL.get(name)
        if op is None:
            raise InvalidArgumentError(
                f"No tool named {name!r}.", hint=f"Use one of {', '.join(commands.BY_TOOL)}."
            )
        args = contract.bind(op, dict(arguments or {}), adapter="mcp")
        data = contract.data(op.run(Call(vault, args)))
    except VaultmemError as error:
        return _result(error.to_dict(), error=True)
    except OSError as error:
        return _result(FileAccessError.from_os_error(error).to_dict(), error=True)
    except Exception as error:
        return _result(InternalError(f"{type(error).__name__}: {error}").to_dict(), error=True)
    return _result(data, error=False)


def build_server(vault: Vault) -> Server[Any]:
    """The low-level server with the contract's schemas. Calls run one at a time in a worker
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
        get_tool_input_schema=SCHEMAS.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# The request id, when it comes before any nested value (as every SDK writes it): enough to
# answer a line that no JSON parser accepts.
_LEADING_ID = re.compile(r'^\s*\{[^{}\[\]]*?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


MAX_REQUEST_CHARS = 4_000_000
"""The longest request line read: a store's text may hold 1,000,000 characters, which JSON
escaping can at most quadruple (`\\u0001`). A longer line is refused, never held whole."""


def oversized(head: str) -> types.JSONRPCError:
    """The JSON-RPC error answering a request line over `MAX_REQUEST_CHARS`."""
    found = _LEADING_ID.match(head)
    request_id = json.loads(found.group(1)) if found else None
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id if isinstance(request_id, int | str) else None,
        error=types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"The request was refused: over {MAX_REQUEST_CHARS:,} characters.",
            data={"code": "invalid_argument", "hint": "Send a smaller request."},
        ),
    )


def rejection(line: str) -> types.JSONRPCError | None:
    """The JSON-RPC error answering a line the SDK cannot decode; None when it decodes (or
    when it is a notification, which gets no answer)."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        lines = str(error).splitlines()
        reason = (lines[1] if len(lines) > 1 else lines[0]).strip().split(" [type=")[0]
    request_id: Any = None
    try:
        message = json.loads(line)
        if isinstance(message, dict):
            if "id" not in message:
                return None
            request_id = message["id"]
        code = types.INVALID_PARAMS
    except (ValueError, RecursionError):
        found = _LEADING_ID.match(line)
        request_id = json.loads(found.group(1)) if found else None
        code = types.PARSE_ERROR
    if not isinstance(request_id, int | str):
        request_id = None
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(
            code=code,
            message=f"The request was refused: {reason[:300]}",
            data={
                "code": "invalid_argument",
                "hint": "Send valid UTF-8 JSON without lone surrogates, nested at most "
                "about 100 levels.",
            },
        ),
    )


class _CheckedLines:
    """stdin for the SDK's transport, minus the lines it would drop: each of those is answered
    here with a JSON-RPC error (through the server's write stream) and never reaches the SDK."""

    def __init__(self, source: anyio.AsyncFile[str]) -> None:
        self.source = source
        self.replies: anyio.abc.ObjectSendStream[SessionMessage] | None = None
        self.ready = anyio.Event()

    async def _readline(self) -> str:
        """One line of at most `MAX_REQUEST_CHARS + 1` characters (AsyncFile's readline
        takes no size, so the bounded read runs in a worker thread as AsyncFile's does)."""
        return await anyio.to_thread.run_sync(self.source.wrapped.readline, MAX_REQUEST_CHARS + 1)

    def __aiter__(self) -> _CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._readline()
            if not line:
                raise StopAsyncIteration
            if len(line) > MAX_REQUEST_CHARS and not line.endswith("\n"):
                refused: types.JSONRPCError | None = oversized(line[:200])
                while (rest := await self._readline()) and not (rest.endswith("\n")):
                    pass  # the rest of the line is read and dropped, a chunk at a time
            elif not line.strip():
                continue
            else:
                refused = rejection(line)
            if refused is None:
                return line
            await self.ready.wait()
            assert self.replies is not None
            await self.replies.send(SessionMessage(refused))


def serve(vault_path: Path | None) -> None:
    """Serve until stdin closes. The vault is resolved once; the index is opened per call."""
    vault = Vault(vault_path)
    server = build_server(vault)

    async def main() -> None:
        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        lines = _CheckedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.replies = write_stream
            lines.ready.set()
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
    sys.stdout.flush()

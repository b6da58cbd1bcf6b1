"""`vaultmem mcp`: the vault's memory as MCP tools over stdio or, with `--http [HOST:]PORT`, over
MCP's streamable HTTP transport (the official `mcp` SDK's own, at `/mcp`) for agents on other
machines. Over HTTP a bearer token is always required, loopback included (`BearerGate`: a
0600 file in the vault's machine-local state folder, compared in constant time, 401 without
it); a body is at most MAX_HTTP_BODY bytes (413), connections and sessions are bounded, and
tool calls run one at a time through the same `Vault`, so writes take the CLI's locks.

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
import os
import re
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage

from vaultmem.adapters import commands, contract
from vaultmem.adapters.contract import Call, Operation
from vaultmem.core.errors import FileAccessError, InternalError, InvalidArgumentError, VaultmemError
from vaultmem.core.version import __version__
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
memory_correct supersedes a topic's wrong latest observation, memory_relate proposes an edge
between two notes for a person to accept, memory_reconcile re-reads what changed in the vault.
A project write without scope_id goes to this client's project (its first root). Storing a
fact already stored appends nothing and answers `duplicate_of`.
Errors carry a stable `code`; after a `partial_write` error do NOT retry the store."""

TOOLS: tuple[Operation, ...] = tuple(op for op in commands.OPERATIONS if op.tool)
ROOTS_TIMEOUT_S = 5.0
"""How long a call waits for the client's `roots/list` answer before using the server's
working directory."""
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
            idempotent_hint=op.read_only if op.idempotent is None else op.idempotent,
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
        async with limiter[0]:
            # The project of a write (or context) without a scope id is the client's: its
            # first root, asked per call since a client may change its roots at any time.
            vault.working_dir = await client_root(ctx)
            return await anyio.to_thread.run_sync(call, vault, params.name, params.arguments)

    return Server(
        "vaultmem",
        version=__version__,
        title="vaultmem",
        instructions=INSTRUCTIONS,
        get_tool_input_schema=SCHEMAS.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def client_root(ctx: ServerRequestContext[Any]) -> Path | None:
    """The client's first `file://` root that is a folder here, when the client declared the
    roots capability; None (the server's working directory stands) otherwise, or when it does
    not answer in time."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S), warnings.catch_warnings():
            # Deprecated in the 2026-07-28 protocol, still what today's clients send.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            listed = await ctx.session.list_roots()
    except (TimeoutError, MCPError, ValueError):  # refused, no back channel, a bad answer
        return None
    for root in listed.roots:
        url = urlparse(str(root.uri))
        if url.scheme != "file":
            continue
        folder = Path(unquote(url.path))
        if folder.is_dir():
            return folder
    return None


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
    """Serve until stdin closes. The vault is resolved once, and its read-only connection to the
    index is kept between calls and given up to writers (`Vault`, `store.SharedReader`)."""
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


# -- the same tools over MCP's streamable HTTP transport -----------------------------------------

HTTP_PATH = "/mcp"
HTTP_TOKEN_FILE = "http-token"
MAX_HTTP_BODY = 1_000_000
"""Bytes of one request body; a larger one gets 413 before it is parsed."""
MAX_HTTP_CONNECTIONS = 32
"""Connections served at once; more get 503 (tool calls themselves run one at a time)."""
MAX_HTTP_SESSIONS = 64


def http_token(state_dir: Path) -> tuple[str, Path]:
    """The server's bearer token and its file, created (mode 0600) on first start.

    The file lives in the vault's machine-local state folder, never in the vault: a synced vault
    would carry the secret to every machine and every sync provider."""
    import secrets

    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / HTTP_TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < 32:
            raise InvalidArgumentError(
                f"The HTTP token in {path} is shorter than 32 characters.",
                hint=f"Delete {path}; the next start writes a new one.",
            ) from None
        return token, path
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token, path


def parse_bind(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`; the host defaults to 127.0.0.1 (loopback only)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidArgumentError(
            f"--http {text!r}: expected [HOST:]PORT, e.g. 8765 or 127.0.0.1:8765.",
            hint="Port 0 picks a free port (printed at start).",
        )
    return host, int(port)


class BearerGate:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`, compared
    in constant time; anything else gets 401 before the MCP transport sees it."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            import hmac

            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps(
                    {"error": "unauthorized", "hint": "Send Authorization: Bearer <token>."}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="vaultmem"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(vault_path: Path | None, bind: str) -> None:
    """Serve the tools at http://HOST:PORT/mcp until SIGINT or SIGTERM (uvicorn's own)."""
    import socket

    import uvicorn

    host, port = parse_bind(bind)
    vault = Vault(vault_path)
    token, token_path = http_token(vault.config.state_dir)
    server = build_server(vault)
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        max_request_body_size=MAX_HTTP_BODY,
        max_sessions=MAX_HTTP_SESSIONS,
        host=host,
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # Listen before saying where: a client that connects on that line must not be refused
        # while uvicorn is still starting (it listens on the socket again, which is harmless).
        sock.listen(MAX_HTTP_CONNECTIONS)
    except OSError as error:
        sock.close()
        raise InvalidArgumentError(
            f"Cannot listen on {host}:{port}: {error.strerror or error}.",
            hint="Pick another port, or stop what listens there.",
        ) from error
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"vaultmem: serving MCP at http://{shown}:{bound}{HTTP_PATH}", file=sys.stderr)
    print(f"vaultmem: bearer token in {token_path}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        BearerGate(app, token),
        log_level="warning",
        limit_concurrency=MAX_HTTP_CONNECTIONS,
        timeout_graceful_shutdown=5,
        lifespan="on",
    )
    uvicorn.Server(config).run(sockets=[sock])
    vault.close()

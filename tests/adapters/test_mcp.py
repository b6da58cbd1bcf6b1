"""The MCP server driven as a real client drives it: the SDK's stdio client starts
`vaultmem mcp` as a subprocess; tools are listed and called over the wire."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from tests.helpers import run_cli  # noqa: E402
from vaultmem.adapters.mcp_server import MAX_REQUEST_CHARS  # noqa: E402
from vaultmem.vault import Vault  # noqa: E402

TOOLS = {
    "memory_store",
    "memory_recall",
    "memory_get",
    "memory_forget",
    "memory_context",
    "memory_links",
    "memory_search",
    "memory_status",
    "memory_read",
    "memory_recent",
    "memory_used",
    "memory_correct",
    "memory_relate",
    "memory_reconcile",
}


@pytest.fixture
def vault(example_vault: Path) -> Path:
    Vault(example_vault).reconcile()
    return example_vault


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def session_run(vault: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Start `vaultmem mcp --vault <vault>` and run `body` against an initialised session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
        cwd=str(vault.parent),
        # The SDK passes a server only a few variables (HOME, PATH...): the test's state folder
        # must be named, or the server would look for the index elsewhere (docs/machines.md).
        env={"VAULTMEM_STATE_DIR": os.environ["VAULTMEM_STATE_DIR"]},
    )

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await body(session)

    anyio.run(main)


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, the JSON body) of one tool call; text and structured content must agree."""
    result = await session.call_tool(name, arguments)
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.structured_content == body
    return result.is_error, body


def test_tools_are_listed_with_schemas(vault: Path) -> None:
    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        by_name = {t.name: t for t in listed.tools}
        assert set(by_name) == TOOLS
        for tool in listed.tools:
            assert tool.description and len(tool.description) > 60
            schema = tool.input_schema
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            for name, prop in schema["properties"].items():
                assert "type" in prop and prop["description"], (tool.name, name)
                # Every string and list is bounded (issue 16: 100k tags held the server 50 s).
                if prop["type"] == "string":
                    assert "maxLength" in prop or "enum" in prop, (tool.name, name)
                if prop["type"] == "array":
                    assert prop["maxItems"] <= 32 and "maxLength" in prop["items"], name
        assert by_name["memory_recall"].input_schema["required"] == ["query"]
        assert by_name["memory_store"].input_schema["required"] == ["content"]
        assert by_name["memory_forget"].annotations.destructive_hint is True  # type: ignore[union-attr]

    session_run(vault, body)


@pytest.mark.slow
def test_store_recall_get_forget_and_a_reconcile_elsewhere(vault: Path) -> None:
    note = vault / "Knowledge" / "DuckDB.md"

    async def body(session: ClientSession) -> None:
        error, stored = await call(
            session,
            "memory_store",
            key="flaky-ci-runner",
            content="The arm64 CI runner times out on the integration tests; rerun them once.",
            scope="project",
            scope_id="atlas",
            type="project",
            tags=["ci"],
        )
        assert not error, stored
        assert stored["key"] == "flaky-ci-runner" and stored["created"] is True

        error, recalled = await call(session, "memory_recall", query="arm64 runner timeouts")
        assert not error
        assert recalled["hits"][0]["key"] == "flaky-ci-runner"
        assert recalled["hits"][0]["fresh"] is True

        error, got = await call(session, "memory_get", key="flaky-ci-runner")
        assert not error
        assert "rerun them once" in json.dumps(got)

        # Another process edits a note and reconciles while this session stays open.
        text = note.read_text(encoding="utf-8")
        note.write_text(text + "\nThe quokka benchmark ran at 3 ms per query.\n", "utf-8")
        error, before = await call(session, "memory_search", query="quokka")
        assert not error and before["hits"] == []
        done = await anyio.to_thread.run_sync(cli, "reconcile", "--vault", str(vault))
        assert done.returncode == 0, done.stderr
        error, after = await call(session, "memory_search", query="quokka")
        assert not error and [h["path"] for h in after["hits"]] == ["Knowledge/DuckDB.md"]

        error, forgotten = await call(
            session, "memory_forget", key="flaky-ci-runner", scope="project", scope_id="atlas"
        )
        assert not error, forgotten
        error, recalled = await call(session, "memory_recall", query="arm64 runner timeouts")
        assert "flaky-ci-runner" not in {h["key"] for h in recalled["hits"]}

    session_run(vault, body)
    assert not (vault / "agent-memory/project/atlas/flaky-ci-runner.md").exists()


def test_context_links_and_status(vault: Path) -> None:
    async def body(session: ClientSession) -> None:
        error, block = await call(
            session, "memory_context", scopes=["project:atlas", "global"], budget_chars=1500
        )
        assert not error
        assert block["text"].startswith("<vaultmem-memory>") and len(block["text"]) <= 1500
        error, links = await call(session, "memory_links", note="DuckDB", direction="backlinks")
        assert not error and links["links"]
        error, near = await call(
            session, "memory_links", note="DuckDB", direction="neighbours", depth=2
        )
        assert not error and {n["depth"] for n in near["links"]} <= {1, 2}
        error, status = await call(session, "memory_status")
        assert not error and status["notes"] > 20

    session_run(vault, body)


@pytest.mark.slow
def test_read_returns_a_long_notes_last_line_in_pieces_and_recent_and_used(vault: Path) -> None:
    note = vault / "Knowledge" / "Long note.md"
    lines = [f"Line {i}: the quokka count grew by {i}." for i in range(1, 801)]
    note.write_text("---\ntags: [long]\n---\n# Long note\n\n" + "\n".join(lines) + "\n", "utf-8")
    Vault(vault).reconcile()

    async def body(session: ClientSession) -> None:
        error, first = await call(session, "memory_read", note="Long note", max_bytes=4000)
        assert not error, first
        assert first["frontmatter"] == {"tags": ["long"]} and first["truncated"] is True
        assert first["text"].startswith("# Long note") and "---" not in first["text"]
        pieces, piece = [first["text"]], first
        while piece["next_offset"] is not None:
            error, piece = await call(
                session,
                "memory_read",
                note="Long note",
                max_bytes=4000,
                offset=piece["next_offset"],
            )
            assert not error, piece
            pieces.append(piece["text"])
        assert "".join(pieces).rstrip("\n").splitlines()[-1] == lines[-1]
        assert piece["end_line"] == 5 + 800
        error, section = await call(session, "memory_read", note="Long note#Long note")
        assert not error and section["subpath"] == "#Long note"
        error, recent = await call(session, "memory_recent", limit=1)
        assert not error and [n["path"] for n in recent["notes"]] == ["Knowledge/Long note.md"]
        error, used = await call(session, "memory_used", note="Long note")
        assert not error and used["path"] == "Knowledge/Long note.md"

    session_run(vault, body)


def test_errors_come_back_as_tool_errors_with_a_code(vault: Path) -> None:
    async def body(session: ClientSession) -> None:
        error, missing = await call(session, "memory_get", key="no-such-topic")
        assert error and missing["code"] == "not_found" and missing["message"]
        assert "hint" in missing
        error, bad = await call(session, "memory_recall", query="x", limit=0)
        assert error and bad["code"] == "invalid_argument" and "limit" in bad["message"]
        error, unknown = await call(session, "memory_search", query="the")
        assert error and unknown["code"] == "query_invalid"
        error, secret = await call(
            session,
            "memory_store",
            key="leak",
            content="token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            scope="global",
        )
        assert error and secret["code"] == "secret_detected"
        assert "ghp_" not in json.dumps(secret)

    session_run(vault, body)


def test_a_partial_write_says_not_to_retry(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaultmem.adapters import mcp_server
    from vaultmem.core.errors import PartialWriteError

    def fail(*_: Any, **__: Any) -> None:
        raise PartialWriteError(
            "Saved agent-memory/project/atlas/k.md but the index update failed.",
            ["resolved", "redacted", "locked", "read", "written", "published"],
        )

    monkeypatch.setattr(Vault, "store", fail)
    result = mcp_server.call(Vault(vault), "memory_store", {"content": "x", "key": "k"})
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.is_error
    assert body["code"] == "partial_write" and body["retry"] is False
    assert body["phases_done"][-1] == "published" and "Do not retry" in body["hint"]


def test_parallel_calls_in_one_session(vault: Path) -> None:
    """A client may send calls without waiting: writes and reads must not collide in DuckDB."""

    async def body(session: ClientSession) -> None:
        results: list[tuple[bool, Any]] = []

        async def one(name: str, **arguments: Any) -> None:
            results.append(await call(session, name, **arguments))

        async with anyio.create_task_group() as group:
            for i in range(3):
                group.start_soon(
                    lambda i=i: one(
                        "memory_store",
                        key=f"parallel-{i}",
                        content=f"parallel fact {i}",
                        scope="project",
                        scope_id="atlas",
                    )
                )
                group.start_soon(lambda: one("memory_recall", query="duckdb writer"))
                group.start_soon(lambda: one("memory_status"))
        assert len(results) == 9
        failed = [body for error, body in results if error]
        assert not failed, json.dumps(failed)  # whole: a cut message hid which error it was

    session_run(vault, body)
    assert len(list((vault / "agent-memory/project/atlas").glob("parallel-*.md"))) == 3


def test_limits_from_the_contract_refuse_huge_arguments(vault: Path) -> None:
    async def body(session: ClientSession) -> None:
        tags = [f"t{i}" for i in range(100_000)]
        error, refused = await call(session, "memory_store", content="x", key="k", tags=tags)
        assert error and refused["code"] == "invalid_argument"
        assert "at most 32" in refused["message"]
        error, long = await call(session, "memory_recall", query="x" * 5000)
        assert error and long["code"] == "invalid_argument" and "2000" in long["message"]
        error, low = await call(session, "memory_context", budget_chars=100)
        assert error and "minimum 200" in low["message"]
        error, status = await call(session, "memory_status")
        assert not error and status["notes"] > 20

    session_run(vault, body)
    assert not list((vault / "agent-memory").rglob("k.md"))


def _raw_exchange(vault: Path, lines: list[str]) -> list[dict[str, Any]]:
    """Send raw JSON-RPC lines after the handshake; return the replies to requests 2 and up."""
    server = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    handshake = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]  # fmt: skip
    for line in handshake + lines:
        server.stdin.write(line.encode("utf-8") + b"\n")
    server.stdin.flush()
    replies: list[dict[str, Any]] = []
    try:
        # One reply per request line (the handshake's included); a hang fails on the timeout.
        while len(replies) < len(lines) + 1:
            ready, _, _ = select.select([server.stdout], [], [], 60)
            assert ready, f"no reply after {replies}"
            replies.append(json.loads(server.stdout.readline()))
    finally:
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    return [r for r in replies if r.get("id") != 1]


def test_undecodable_requests_get_an_error_reply(vault: Path) -> None:
    """A lone surrogate or 200-deep nesting used to get no reply: the client hung forever."""

    def tool_call(request_id: int, arguments: str) -> str:
        return (
            f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
            f'"params":{{"name":"memory_search","arguments":{arguments}}}}}'
        )

    deep = '{"a":' * 200 + "1" + "}" * 200
    replies = _raw_exchange(
        vault,
        [
            tool_call(2, '{"query":"\\ud800 duckdb"}'),
            tool_call(3, '{"query":"duckdb","tag":' + deep + "}"),
            '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{',
            tool_call(5, '{"query":"duckdb"}'),
        ],
    )
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == {2, 3, 4, 5}
    for request_id in (2, 3):
        assert by_id[request_id]["error"]["code"] == -32602
        assert by_id[request_id]["error"]["data"]["code"] == "invalid_argument"
    assert by_id[4]["error"]["code"] == -32700
    assert by_id[5]["result"]["isError"] is False  # the server carried on


def test_a_store_without_scope_id_goes_to_the_client_roots_project(
    vault: Path, tmp_path: Path
) -> None:
    """The client declares roots: its first root's git remote names the project, not the
    server's working directory; a client without roots gets the server's."""
    import mcp_types as types

    project = tmp_path / "client-repo"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:Org/Client.git\n'
    )

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri(), name="repo")])

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
        cwd=str(vault.parent),
    )
    answers: list[Any] = []

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, list_roots_callback=roots) as session,
        ):
            await session.initialize()
            answers.append(await call(session, "memory_store", key="k", content="A fact."))
            answers.append(await call(session, "memory_status"))

    anyio.run(main)
    (error, stored), (_, status) = answers
    assert not error, stored
    assert stored["scope_id"] == "github.com-org-client"
    assert status["project"]["scope_id"] == "github.com-org-client"
    assert status["project"]["folder"] == str(project.resolve())


@pytest.mark.slow
def test_correct_relate_and_reconcile_through_the_client(vault: Path) -> None:
    async def body(session: ClientSession) -> None:
        listed = {t.name: t.annotations for t in (await session.list_tools()).tools}
        assert listed["memory_used"].read_only_hint is False  # type: ignore[union-attr]
        assert listed["memory_recall"].read_only_hint is True  # type: ignore[union-attr]
        assert listed["memory_relate"].destructive_hint is False  # type: ignore[union-attr]
        error, _ = await call(session, "memory_store", key="cache-rule", content="Cache for 1 h.",
                              scope="project", scope_id="atlas")  # fmt: skip
        assert not error
        error, fixed = await call(session, "memory_correct", key="cache-rule",
                                  content="Cache for 2 h.")  # fmt: skip
        assert not error and fixed["corrected"] is True
        error, edge = await call(session, "memory_relate", a="cache-rule", b="release-process")
        assert not error and edge["status"] == "proposed"  # a person accepts, not the agent
        error, report = await call(session, "memory_reconcile")
        assert not error and report["mode"]
        error, got = await call(session, "memory_get", key="cache-rule")
        assert got["latest"] == "Cache for 2 h."

    session_run(vault, body)
    edges = json.loads(cli("edges", "--vault", str(vault), "--json").stdout)["data"]
    assert [e["status"] for e in edges if e["source_path"].endswith("cache-rule.md")] == [
        "proposed"
    ]


@pytest.mark.slow
def test_an_oversized_request_line_is_refused_without_being_held(vault: Path) -> None:
    """A 10 MB request line used to be read whole (300 MB took 1.3 GB); now it is answered with
    an error, read in bounded chunks, and the next request is served."""
    huge = (
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search",'
        '"arguments":{"query":"' + "x" * (MAX_REQUEST_CHARS * 2 + 10) + '"}}}'
    )
    follow = (
        '{"jsonrpc":"2.0","id":3,"method":"tools/call",'
        '"params":{"name":"memory_search","arguments":{"query":"duckdb"}}}'
    )
    by_id = {r["id"]: r for r in _raw_exchange(vault, [huge, follow])}
    assert by_id[2]["error"]["data"]["code"] == "invalid_argument"
    assert "characters" in by_id[2]["error"]["message"]
    assert by_id[3]["result"]["isError"] is False

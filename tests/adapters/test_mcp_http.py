"""`vaultmem mcp --http` through the SDK's own streamable HTTP client over loopback (issue 29.3):
two clients share one vault's memory, a missing or wrong token gets 401, a client that goes
away mid-call leaves the server serving."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from vaultmem.vault import Vault


class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str, token_path: Path) -> None:
        self.proc, self.url, self.token_path = proc, url, token_path

    @property
    def token(self) -> str:
        return self.token_path.read_text(encoding="utf-8").strip()


@pytest.fixture
def server(example_vault: Path) -> Iterator[Server]:
    Vault(example_vault).reconcile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultmem", "mcp", "--http", "127.0.0.1:0"],
        cwd=example_vault,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    url = token = None
    deadline = time.monotonic() + 60
    while (url is None or token is None) and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if found := re.search(r"serving MCP at (\S+)", line):
            url = found[1]
        if found := re.search(r"bearer token in (.+)$", line.strip()):
            token = found[1]
    assert url and token, "the server did not say where it listens"
    try:
        yield Server(proc, url, Path(token))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


def _client(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)


async def _call(session: ClientSession, name: str, **arguments: Any) -> Any:
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def test_two_clients_share_one_vaults_memory(server: Server) -> None:
    assert stat.S_IMODE(server.token_path.stat().st_mode) == 0o600
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")

    async def main() -> None:
        async with (
            _client(server.token) as one_http,
            _client(server.token) as two_http,
            streamable_http_client(server.url, http_client=one_http) as (r1, w1),
            streamable_http_client(server.url, http_client=two_http) as (r2, w2),
            ClientSession(r1, w1) as one,
            ClientSession(r2, w2) as two,
        ):
            await one.initialize()
            await two.initialize()
            stored = await _call(
                one,
                "memory_store",
                key="remote-runner",
                content="The build box in Frankfurt runs the nightly integration suite.",
                scope="project",
                scope_id="atlas",
            )
            assert stored["created"] is True
            async with anyio.create_task_group() as tg:  # both at once
                results: list[Any] = []

                async def recall(session: ClientSession) -> None:
                    results.append(await _call(session, "memory_recall", query="Frankfurt"))

                tg.start_soon(recall, one)
                tg.start_soon(recall, two)
            for body in results:
                assert body["hits"][0]["key"] == "remote-runner"

    anyio.run(main)
    assert server.proc.poll() is None


def test_a_missing_or_wrong_token_is_refused(server: Server) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer " + "x" * 43}, {"Authorization": server.token}):
        reply = httpx2.post(server.url, json=hello, headers={**headers, **auth}, timeout=30)
        assert reply.status_code == 401, auth
        assert reply.headers["www-authenticate"].startswith("Bearer")
    big = httpx2.post(
        server.url,
        content=b"x" * 2_000_000,
        headers={**headers, "Authorization": f"Bearer {server.token}"},
        timeout=30,
    )
    assert big.status_code == 413

    seen: list[int] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def refused() -> str:
        try:
            with anyio.fail_after(30):
                async with (
                    httpx2.AsyncClient(
                        headers={"Authorization": "Bearer wrong"},
                        event_hooks={"response": [record]},
                    ) as http,
                    streamable_http_client(server.url, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
        except BaseException as error:  # the SDK may wrap it in an exception group
            return repr(error) + " " + " ".join(map(repr, getattr(error, "exceptions", ())))
        return "initialised"

    assert anyio.run(refused) != "initialised"
    assert seen and set(seen) == {401}  # the SDK's client was refused at the door
    assert server.proc.poll() is None


def test_a_client_gone_mid_call_leaves_the_server_healthy(server: Server) -> None:
    async def abandon() -> None:
        async with (
            _client(server.token) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with anyio.move_on_after(0.05):  # cancelled while the call is in flight
                await session.call_tool("memory_search", {"query": "duckdb index"})

    anyio.run(abandon)

    async def again() -> None:
        async with (
            _client(server.token) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            body = await _call(session, "memory_search", query="duckdb")
            assert body["hits"]

    anyio.run(again)
    assert server.proc.poll() is None
    assert os.environ["VAULTMEM_STATE_DIR"] in str(server.token_path)  # never in the vault

"""The CLI's `--json` and the MCP tool return the same data for the same call.

Two identical reconciled copies of example-vault: every sample call runs in the same order
through the CLI (in-process, `main(argv)`) on one copy and through the real MCP SDK client
(`vaultmem mcp` over stdio) on the other, and the two answers must be equal once the values
that depend on the clock (timestamps, random ids, durations) are masked. Every operation with
an MCP tool must have a sample: a new operation fails here until it is covered."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from vaultmem.adapters import commands
from vaultmem.adapters.cli import main
from vaultmem.vault import Vault

ATLAS = ("--scope", "project", "--scope-id", "atlas")

# tool → [(CLI argv, MCP arguments)]: the same call spelled for each adapter, in run order.
SAMPLES: dict[str, list[tuple[list[str], dict[str, Any]]]] = {
    "memory_status": [(["status"], {})],
    "memory_search": [
        (["search", "duckdb index", "--limit", "3"], {"query": "duckdb index", "limit": 3}),
        (
            ["search", "release", "--scope", "project", "--scope-id", "atlas", "--since",
             "2020-01-01"],
            {"query": "release", "scope": "project", "scope_id": "atlas", "since": "2020-01-01"},
        ),
        (["search", "release", "--mode", "words"], {"query": "release", "mode": "words"}),
    ],
    "memory_recall": [
        (
            ["recall", "how do I run the tests", "--scope", "project:atlas", "--scope", "global",
             "--limit", "3"],
            {"query": "how do I run the tests", "scopes": ["project:atlas", "global"], "limit": 3},
        ),
        (
            ["recall", "release process", "--include-related", "--mode", "blended"],
            {"query": "release process", "include_related": True, "mode": "blended"},
        ),
    ],
    "memory_read": [
        (
            ["read", "Architecture", "--max-bytes", "300"],
            {"note": "Architecture", "max_bytes": 300},
        ),
        (["read", "release-process"], {"note": "release-process"}),
    ],
    "memory_recent": [(["recent", "--kind", "topics"], {"kind": "topics"})],
    "memory_used": [(["used", "DuckDB"], {"note": "DuckDB"})],
    "memory_links": [
        (["links", "Architecture"], {"note": "Architecture"}),
        (
            ["links", "DuckDB", "--direction", "backlinks"],
            {"note": "DuckDB", "direction": "backlinks"},
        ),
        (
            ["links", "DuckDB", "--direction", "neighbours", "--depth", "2"],
            {"note": "DuckDB", "direction": "neighbours", "depth": 2},
        ),
    ],
    "memory_context": [
        (
            ["context", "--scopes", "project:atlas,global", "--budget-chars", "1500"],
            {"scopes": ["project:atlas", "global"], "budget_chars": 1500},
        ),
        (["context"], {}),
    ],
    "memory_store": [
        (
            ["store", "parity-topic", "Parity holds between the two adapters.", *ATLAS,
             "--tags", "ci,parity", "--type", "reference", "--source", "tester"],
            {"key": "parity-topic", "content": "Parity holds between the two adapters.",
             "scope": "project", "scope_id": "atlas", "tags": ["ci", "parity"],
             "type": "reference", "source": "tester"},
        ),
    ],
    "memory_correct": [
        (["correct", "parity-topic", "Parity holds, checked by a test.", *ATLAS],
         {"key": "parity-topic", "content": "Parity holds, checked by a test.",
          "scope": "project", "scope_id": "atlas"}),
    ],
    "memory_relate": [
        (["relate", "parity-topic", "release-process", "--type", "supersedes", "--propose"],
         {"a": "parity-topic", "b": "release-process", "type": "supersedes"}),
    ],
    "memory_reconcile": [(["reconcile"], {})],
    "memory_get": [
        (["get", "parity-topic", *ATLAS], {"key": "parity-topic", "scope": "project",
                                           "scope_id": "atlas"}),
        (["get", "no-such-topic"], {"key": "no-such-topic"}),
    ],
    "memory_forget": [
        (["forget", "parity-topic", *ATLAS], {"key": "parity-topic", "scope": "project",
                                              "scope_id": "atlas"}),
    ],
}  # fmt: skip

# Errors must agree too: the CLI envelope's `error` is the MCP tool error's body.
ERRORS: list[tuple[str, list[str], dict[str, Any]]] = [
    ("memory_recall", ["recall", "x", "--limit", "0"], {"query": "x", "limit": 0}),
    ("memory_context", ["context", "--budget-chars", "100"], {"budget_chars": 100}),
    ("memory_search", ["search", "the"], {"query": "the"}),
    ("memory_search", ["search", "x", "--scope", "bogus"], {"query": "x", "scope": "bogus"}),
    ("memory_store", ["store", "k", "x", "--tags", "a b"], {"key": "k", "content": "x",
                                                             "tags": ["a b"]}),
]  # fmt: skip

CLOCK = {"timestamp", "id", "created", "updated", "last_access", "started", "duration_ms",
         "index_bytes", "index_path", "source_id", "expires", "duration_s", "decided",
         "superseded_by", "source_version"}  # fmt: skip


def masked(value: Any) -> Any:
    """The value with clock-dependent fields masked and scores rounded (recency drifts)."""
    if isinstance(value, dict):
        return {
            k: "*" if k in CLOCK else round(v, 3) if k == "score" else masked(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    return value


@pytest.fixture
def twins(example_vault: Path, tmp_path: Path) -> tuple[Path, Path]:
    Vault(example_vault).reconcile()
    twin = tmp_path / "twin" / "example-vault"
    shutil.copytree(example_vault, twin)
    Vault(twin).reconcile()  # the index lives outside the vault: a copy has none (issue 29)
    return example_vault, twin


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str], vault: Path) -> tuple[bool, Any]:
    capsys.readouterr()
    code = main([*argv, "--vault", str(vault), "--json"])
    envelope = json.loads(capsys.readouterr().out)
    assert (code == 0) == envelope["ok"]
    return (False, envelope["data"]) if envelope["ok"] else (True, envelope["error"])


def _mcp(vault: Path, calls: list[tuple[str, dict[str, Any]]], cwd: Path) -> list[tuple[bool, Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
        cwd=str(cwd),
        # The SDK passes a server only a few variables (HOME, PATH...): the test's state folder
        # must be named, or the server would look for the index elsewhere (docs/machines.md).
        env={"VAULTMEM_STATE_DIR": os.environ["VAULTMEM_STATE_DIR"]},
    )
    answers: list[tuple[bool, Any]] = []

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                body = json.loads(result.content[0].text)  # type: ignore[union-attr]
                assert result.structured_content == body
                answers.append((bool(result.is_error), body))

    anyio.run(run)
    return answers


def test_every_tool_has_a_sample() -> None:
    tools = {op.tool for op in commands.OPERATIONS if op.tool}
    assert tools == set(SAMPLES)


@pytest.mark.slow
def test_cli_json_and_mcp_tools_return_the_same_data(
    twins: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cli_vault, mcp_vault = twins
    # Both adapters work from one folder: a write or context without a scope id belongs to it.
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    order = ["memory_status", "memory_search", "memory_recall", "memory_read", "memory_recent",
             "memory_used", "memory_links", "memory_context", "memory_store", "memory_correct",
             "memory_relate", "memory_get", "memory_forget", "memory_reconcile"]  # fmt: skip
    calls = [(tool, argv, args) for tool in order for argv, args in SAMPLES[tool]]
    calls += ERRORS
    via_cli = [_cli(capsys, argv, cli_vault) for _, argv, _ in calls]
    via_mcp = _mcp(mcp_vault, [(tool, args) for tool, _, args in calls], project)
    for (tool, argv, _), by_cli, by_mcp in zip(calls, via_cli, via_mcp, strict=True):
        if by_cli[0] and by_cli[1]["code"] == "invalid_argument":
            # The same check and words; only the name differs: `--limit` here, `limit` there.
            assert by_mcp[0] and by_mcp[1]["code"] == "invalid_argument", (tool, argv)
            assert by_cli[1]["message"].split(": ", 1)[1] == by_mcp[1]["message"].split(": ", 1)[1]
            continue
        assert masked(by_cli) == masked(by_mcp), (tool, argv)
    # The samples exercised real data, not a pair of empty answers.
    answers = dict(zip((" ".join(argv) for _, argv, _ in calls), via_cli, strict=True))
    assert answers["search duckdb index --limit 3"][1]["hits"]
    assert answers["store parity-topic Parity holds between the two adapters. --scope project "
                   "--scope-id atlas --tags ci,parity --type reference --source tester"][1][
        "created"
    ] is True  # fmt: skip
    errors = [by_cli for by_cli in via_cli if by_cli[0]]
    assert [e[1]["code"] for e in errors] == [
        "not_found", "invalid_argument", "invalid_argument", "query_invalid",
        "invalid_argument", "invalid_argument",
    ]  # fmt: skip

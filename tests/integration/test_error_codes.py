"""Error codes name the cause: a bad argument is `invalid_argument` (CLI exit 2) whichever way
the call came (the library, the CLI as a subprocess, the MCP server over the wire), and
`config_invalid` is raised only where the config file is read."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from vaultmem.core.errors import ConfigError, InvalidArgumentError, VaultmemError
from vaultmem.vault import Vault

PACKAGE = Path(__file__).resolve().parents[2] / "vaultmem"
# Where the config file is read, validated or written; its `[[secrets.patterns]]` are compiled
# (and refused by name) in core/secrets.py.
CONFIG_READERS = frozenset({"core/config.py", "core/secrets.py"})


def _raised_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute):
                names.add(target.attr)
    return names


def config_error_raisers() -> list[str]:
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "ConfigError" in _raised_names(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_config_error_is_raised_only_where_the_config_file_is_read() -> None:
    assert set(config_error_raisers()) <= CONFIG_READERS


def test_the_check_sees_a_config_error_raised() -> None:
    tree = ast.parse("def f():\n    raise errors.ConfigError('x')\n")
    assert "ConfigError" in _raised_names(tree)
    assert "ConfigError" in _raised_names(ast.parse("raise ConfigError"))


def test_an_argument_error_is_not_a_config_error() -> None:
    assert not issubclass(InvalidArgumentError, ConfigError)


# -- every case through the library, the CLI and MCP -------------------------------------------


@pytest.fixture
def vault(example_vault: Path) -> Path:
    Vault(example_vault).reconcile()
    return example_vault


def _library_code(vault: Path, call: str) -> str:
    v = Vault(vault)
    calls: dict[str, Any] = {
        "store bad key": lambda: v.store("Bad Key", "x", scope="session", scope_id="s1"),
        "store source newline": lambda: v.store(
            "k", "x", scope="session", scope_id="s1", source="a\nb"
        ),
        "recall bogus mode": lambda: v.recall("deploy", mode="bogus"),  # type: ignore[arg-type]
        "search bogus mode": lambda: v.search("deploy", mode="bogus"),  # type: ignore[arg-type]
        "relate same note": lambda: v.relate("release-process", "release-process"),
    }
    with pytest.raises(VaultmemError) as info:
        calls[call]()
    return info.value.code


LIBRARY_CASES = [
    "store bad key",
    "store source newline",
    "recall bogus mode",
    "search bogus mode",
    "relate same note",
]


@pytest.mark.parametrize("call", LIBRARY_CASES)
def test_the_library_raises_invalid_argument(vault: Path, call: str) -> None:
    assert _library_code(vault, call) == "invalid_argument"


CLI_CASES = {
    "store bad key": ["store", "Bad Key", "x", "--scope", "session", "--scope-id", "s1"],
    "store source newline": ["store", "k", "x", "--scope-id", "s1", "--source", "a\nb"],
    "recall bogus mode": ["recall", "deploy", "--mode", "bogus"],
    "search bogus mode": ["search", "deploy", "--mode", "bogus"],
    "relate same note": ["relate", "release-process", "release-process"],
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_the_cli_exits_2_with_invalid_argument(vault: Path, case: str) -> None:
    done = run_cli(*CLI_CASES[case], "--vault", str(vault), "--json")
    envelope = json.loads(done.stdout)
    assert (done.returncode, envelope["ok"]) == (2, False), done.stdout + done.stderr
    assert envelope["error"]["code"] == "invalid_argument"
    text = run_cli(*CLI_CASES[case], "--vault", str(vault))
    assert text.returncode == 2 and text.stderr.startswith("Error: ")


MCP_CASES = {
    "store bad key": ("memory_store", {"key": "Bad Key", "text": "x", "scope": "session",
                                       "scope_id": "s1"}),
    "store source newline": ("memory_store", {"key": "k", "text": "x", "scope": "session",
                                              "scope_id": "s1", "source": "a\nb"}),
    "recall bogus mode": ("memory_recall", {"query": "deploy", "mode": "bogus"}),
    "search bogus mode": ("memory_search", {"query": "deploy", "mode": "bogus"}),
}  # fmt: skip


def test_mcp_answers_invalid_argument(vault: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
        cwd=str(vault.parent),
    )
    codes: dict[str, str] = {}

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for case, (tool, arguments) in MCP_CASES.items():
                result = await session.call_tool(tool, arguments)
                assert result.is_error, case
                body = json.loads(result.content[0].text)  # type: ignore[union-attr]
                codes[case] = body["code"]

    anyio.run(main)
    assert codes == dict.fromkeys(MCP_CASES, "invalid_argument")

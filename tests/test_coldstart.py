"""A cold CLI process imports only what its command needs (issues 12 and 14: start-up time).

Each check runs a fresh interpreter and reads `sys.modules`, so an eager import added anywhere
on the CLI's import path (or the facade's) fails here rather than slowing every command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from vaultmem.vault import Vault

# Never needed to build the CLI: each loads only for the command that uses it.
NOT_AT_START = (
    "watchfiles",  # `vaultmem watch`
    "mcp",  # `vaultmem mcp`
    "vaultmem.okf",  # `export`/`import`/`validate okf`
    "numpy",  # the semantic extra
    "tokenizers",  # the semantic extra
    "mistune",  # parsing notes: reconcile, read, parse
    "duckdb",  # opening the index
    "vaultmem.memory",  # recall, context, topics, relations
    "vaultmem.index",  # reconcile, reading, catalog
    "vaultmem.search",  # search
)
# Not needed by a search: the parser, the memory layer, OKF, the watcher, the MCP server.
NOT_FOR_SEARCH = (
    "watchfiles",
    "mcp",
    "vaultmem.okf",
    "numpy",
    "tokenizers",
    "mistune",
    "vaultmem.memory.recall",
    "vaultmem.memory.topic_store",
    "vaultmem.index.reconcile",
    "pydantic",  # typer's coercion: not needed for values already of their type
)


def _loaded(code: str, cwd: Path | None = None) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def _offenders(loaded: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned))


def test_importing_the_cli_loads_no_capability() -> None:
    assert _offenders(_loaded("import vaultmem.adapters.cli"), NOT_AT_START) == []


def test_the_check_sees_an_eager_import() -> None:
    loaded = _loaded("import vaultmem.adapters.cli, mistune")
    assert "mistune" in _offenders(loaded, NOT_AT_START)


def test_a_search_loads_only_what_search_needs(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".obsidian").mkdir()
    (root / "note.md").write_text("# Note\n\nrun the tests\n", encoding="utf-8")
    Vault.init(root)
    Vault(root).reconcile()
    code = (
        "import sys\n"
        "from vaultmem.adapters import cli\n"
        "sys.argv = ['vaultmem', 'search', 'tests', '--json']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
    )
    loaded = _loaded(code, cwd=root)
    assert "vaultmem.search.query" in loaded  # the search ran
    assert _offenders(loaded, NOT_FOR_SEARCH) == []

"""Bytes that are not UTF-8 on the command line are `invalid_argument`, never an internal error
or a file written with them (issue 27 item 10). Python hands `$'\\xff\\xfe'` to us as lone
surrogates (surrogateescape); the contract's check refuses them for every string and path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem.adapters.cli import main
from vaultmem.vault import Vault

BAD = "\udcff\udcfe"  # what argv holds for the bytes ff fe
ATLAS = ["--scope", "project", "--scope-id", "atlas"]

CALLS = [
    ["show", BAD],
    ["read", BAD],
    ["links", BAD],
    ["used", BAD],
    ["get", BAD],
    ["forget", BAD],
    ["relate", BAD, "DuckDB"],
    ["sql", BAD],
    ["export", "okf", "/nonexistent/" + BAD],
    ["search", "duckdb", "--folder", BAD],
    ["search", "duckdb", "--tag", BAD],
    ["search", "duckdb", "--scope", "project", "--scope-id", BAD],
    ["recall", "duckdb", "--scope", BAD],
    ["store", "k", "x", *ATLAS, "--source", BAD],
]


@pytest.mark.parametrize("argv", CALLS, ids=lambda argv: " ".join(argv[:2]))
def test_invalid_utf8_is_an_invalid_argument(
    example_vault: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    Vault(example_vault).reconcile()
    capsys.readouterr()
    code = main([*argv, "--vault", str(example_vault), "--json"])
    envelope = json.loads(capsys.readouterr().out)
    assert (code, envelope["error"]["code"]) == (2, "invalid_argument")
    assert not (example_vault / "agent-memory" / "project" / "atlas" / "k.md").exists()


def test_invalid_utf8_through_a_real_command_line(example_vault: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "show", b"\xff\xfe", "--vault", str(example_vault),
         "--json"],
        capture_output=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "invalid_argument"

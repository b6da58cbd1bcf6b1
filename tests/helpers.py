"""Small helpers several test modules share: the CLI as a real subprocess, an index dump."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from vaultmem.core.config import Config
from vaultmem.core.models import Published
from vaultmem.storage.schema import DERIVED_TABLES
from vaultmem.vault import Vault

T = TypeVar("T")


def run_cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`vaultmem ARGS` in a fresh interpreter, with no VAULTMEM_* variable leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
        env=env,
        check=False,
    )


def dump_index(index: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every derived table's rows, sorted: what "the same index" means."""
    con = duckdb.connect(str(index), read_only=True)
    try:
        return {
            table: sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in DERIVED_TABLES
        }
    finally:
        con.close()


def published(config: Config, outcome: tuple[T, Published]) -> T:
    """What a memory or OKF write returned, once its published files are in the index: the
    write called as `Vault` calls it (`Vault._publish` indexes, or raises partial_write)."""
    result, done = outcome
    vault = Vault(config.root)
    vault.config = config  # a test may have changed a limit of its config
    vault._publish(done)
    return result

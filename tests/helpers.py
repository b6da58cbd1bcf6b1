"""Small helpers several test modules share: the CLI as a real subprocess, an index dump, where
a vault's state folder and index are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from vaultmem.core.config import Config, load_config
from vaultmem.core.models import Published
from vaultmem.storage.schema import DERIVED_TABLES
from vaultmem.vault import Vault

T = TypeVar("T")


def state_of(vault: Path) -> Path:
    """The vault's machine-local state folder (outside the vault: issue 29)."""
    return load_config(vault).state_dir


def index_of(vault: Path) -> Path:
    """Where the vault's index lives on this machine."""
    return load_config(vault).index_path


def cli_env() -> dict[str, str]:
    """The environment a CLI subprocess gets: no VAULTMEM_* variable leaking in, but the test's
    state folder (VAULTMEM_STATE_DIR)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }


def run_cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`vaultmem ARGS` in a fresh interpreter, in `cli_env()`."""
    env = cli_env()
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


def count_postings_runs(monkeypatch: Any) -> list[int]:
    """Watch `search_rows.postings_runs` (the runs a fresh build sorts one after the other):
    the list returned gets the number of runs of each build or upgrade from now on."""
    from vaultmem.storage import search_rows

    runs: list[int] = []
    real = search_rows.postings_runs

    def counted(files: list[Path]) -> list[list[Path]]:
        found = real(files)
        runs.append(len(found))
        return found

    monkeypatch.setattr(search_rows, "postings_runs", counted)
    return runs

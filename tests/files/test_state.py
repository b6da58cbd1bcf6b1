"""The machine-local state folder (issue 29): nothing of it inside the vault, one folder per vault
and clone, an older version's index moved out of `.vaultmem/`, never lost."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli
from vaultmem.core.config import default_state_base, find_vault, load_config
from vaultmem.storage import store
from vaultmem.vault import Vault

_MACHINE_LOCAL = (".duckdb", ".wal", ".lock", ".jsonl", "last-survey.json", "exports.json")


def _machine_files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if any(part in p.name for part in _MACHINE_LOCAL) or p.name.endswith(".tmp")
    )


def test_a_reconciled_vault_holds_no_database_file(example_vault: Path) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    vault.store("sync-check", "Stored once.", scope="project", scope_id="atlas")
    vault.get("sync-check")  # records a use
    vault.search("duckdb")
    vault.sql("SELECT count(*) FROM notes")
    vault.reconcile(rebuild=True)
    vault.close()
    assert _machine_files(example_vault) == []
    assert sorted(p.name for p in (example_vault / ".vaultmem").iterdir()) == ["config.toml"]
    state = vault.config.state_dir
    assert (state / "index.duckdb").is_file() and example_vault not in state.parents
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    label = json.loads((state / "vault.json").read_text())
    assert label["vault"] == str(example_vault.resolve())


def test_two_clones_and_two_paths_to_one_vault(example_vault: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone" / "example-vault"
    shutil.copytree(example_vault, clone)
    link = tmp_path / "link"
    link.symlink_to(example_vault)
    one, other, same = (load_config(p) for p in (example_vault, clone, link))
    assert one.state_dir != other.state_dir  # a clone never shares an index
    assert one.state_dir == same.state_dir  # one vault by any path: one writer lock
    assert one.state_dir.name.startswith("example-vault-")


def test_state_dir_from_config_and_environment(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / ".vaultmem").mkdir(parents=True)
    (vault / ".vaultmem" / "config.toml").write_text('state_dir = "../elsewhere"\n')
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_STATE_DIR"}
    config = load_config(vault, env)
    assert config.state_dir.parent == (tmp_path / "elsewhere").resolve()
    env["VAULTMEM_STATE_DIR"] = str(tmp_path / "from-env")
    assert load_config(vault, env).state_dir.parent == tmp_path / "from-env"


def test_default_base_is_the_platforms_state_directory() -> None:
    platformdirs = pytest.importorskip("platformdirs")
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_STATE_DIR"}
    expected = platformdirs.user_state_dir("vaultmem", appauthor=False)
    if sys.platform != "darwin" and not os.environ.get("XDG_STATE_HOME"):
        assert str(default_state_base(env)) == expected
    env["XDG_STATE_HOME"] = "/srv/state"
    if sys.platform != "darwin":
        assert default_state_base(env) == Path("/srv/state/vaultmem")


def test_an_index_left_in_the_vault_is_moved_out_not_lost(example_vault: Path) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    vault.store("kept-topic", "Survives the move.", scope="project", scope_id="atlas")
    vault.close()
    store.SharedReader.close_all()
    state = vault.config.state_dir
    old = example_vault / ".vaultmem"
    # What an older version left: the index inside the vault, with its records.
    shutil.move(state / "index.duckdb", old / "index.duckdb")
    (old / "renames.jsonl").write_text('{"old": 1}\n')
    (old / "write.lock").write_text("")
    (old / "index.duckdb.tmp").mkdir()  # a leftover spill folder (issue 27.14)
    inode = (old / "index.duckdb").stat().st_ino
    moved = Vault(example_vault)
    assert any("Moved the index out of the vault" in line for line in moved.moved)
    assert sorted(p.name for p in old.iterdir()) == ["config.toml"]
    assert (state / "index.duckdb").stat().st_ino == inode  # moved, not rebuilt
    assert (state / "renames.jsonl").read_text().startswith('{"old": 1}\n')
    report = moved.reconcile()
    assert report.added == 0 and any("Moved" in w for w in report.warnings)
    assert moved.get("kept-topic").topic.key == "kept-topic"
    assert moved.status().index_path == str(state / "index.duckdb")


def test_status_names_where_the_index_lives(example_vault: Path) -> None:
    Vault(example_vault).reconcile()
    done = run_cli("status", "--vault", str(example_vault), "--json")
    data = json.loads(done.stdout)["data"]
    assert data["index_path"] == str(load_config(example_vault).index_path)
    text = run_cli("status", "--vault", str(example_vault)).stdout
    assert f"Index: {data['index_path']}" in text


def test_an_obsidian_vault_is_found_from_inside_it(tmp_path: Path) -> None:
    """Issue 27.17: plain `reconcile` in a folder with `.obsidian/` works as `--vault .` does."""
    vault = tmp_path / "Notes"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Daily").mkdir()
    (vault / "Hello.md").write_text("# Hello\n")
    assert find_vault(None, cwd=vault / "Daily", environ={}) == vault.resolve()
    done = run_cli("reconcile", "--json", cwd=vault / "Daily")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["data"]["added"] == 1


def test_the_sql_sandbox_refuses_every_write(example_vault: Path) -> None:
    """Issue 27.14: DuckDB lets a sandboxed connection write into its temp folder; it has none,
    and a leftover `<index>.tmp` folder no longer breaks a rebuild."""
    vault = Vault(example_vault)
    vault.reconcile()
    index = vault.config.index_path
    spill = index.with_name(index.name + ".tmp")
    spill.mkdir()
    for target in (spill / "x.csv", index.parent / store.SPILL_FOLDER / "x.csv"):
        target.parent.mkdir(exist_ok=True)
        with pytest.raises(Exception, match="disabled by configuration"):
            vault.sql(f"COPY (SELECT 1) TO '{target}'")
        assert not target.exists()
    vault.reconcile(rebuild=True)  # the rebuild's own file is named apart from the spill folder
    assert vault.sql("SELECT count(*) FROM notes").rows[0][0] > 0

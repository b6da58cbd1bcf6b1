"""`vaultmem export parquet` (issue 29.4): the index's tables with the vault's id, and the one
DuckDB query over two vaults' exports that docs/machines.md shows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.helpers import run_cli
from vaultmem.core.config import load_config
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.storage.schema import SCHEMA_VERSION, table_docs
from vaultmem.vault import Vault


@pytest.mark.slow
def test_two_vaults_exported_and_queried_together(example_vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "team" / "Team Notes"
    other.mkdir(parents=True)
    (other / "Runbook.md").write_text("# Runbook\n\nRestart the [[Queue]] first.\n")
    (other / "Queue.md").write_text("# Queue\n\nThe job queue.\n")
    exports = tmp_path / "exports"
    for root, name in ((example_vault, "example"), (other, "team")):
        Vault(root).reconcile()
        done = run_cli("export", "parquet", str(exports / name), "--vault", str(root), "--json")
        assert done.returncode == 0, done.stdout + done.stderr
    ids = {load_config(r).vault_id for r in (example_vault, other)}
    assert len(ids) == 2 and None not in ids  # written into each config on first export
    manifest = json.loads((exports / "team" / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["vault_id"] == load_config(other).vault_id
    assert set(manifest["tables"]) == {t.name for t in table_docs()}
    assert manifest["tables"]["notes"] == 2

    # The query docs/machines.md shows: one engine, every vault's notes and links at once.
    con = duckdb.connect()
    rows = con.execute(
        f"""
        SELECT n.vault_id, count(DISTINCT n.id) AS notes, count(l.target_path) AS links
        FROM read_parquet('{exports}/*/notes.parquet') n
        LEFT JOIN read_parquet('{exports}/*/links.parquet') l
          ON l.vault_id = n.vault_id AND l.source_id = n.id
        GROUP BY n.vault_id ORDER BY notes
        """
    ).fetchall()
    assert [r[1] for r in rows] == [2, 30]
    assert {r[0] for r in rows} == ids
    assert rows[0][2] == 1  # the team vault's one link
    files = con.execute(
        f"SELECT DISTINCT filename FROM read_parquet('{exports}/*/notes.parquet', filename=true)"
    ).fetchall()
    assert len(files) == 2


def test_export_refuses_a_foreign_folder_and_the_vault(example_vault: Path, tmp_path: Path) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "thesis.txt").write_text("mine\n")
    with pytest.raises(InvalidArgumentError, match="no `vaultmem export parquet` wrote"):
        vault.export_parquet(foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["thesis.txt"]
    with pytest.raises(InvalidArgumentError, match="inside the vault"):
        vault.export_parquet(example_vault / "Exports")
    assert not (example_vault / "Exports").exists()


def test_a_second_export_replaces_the_first_whole(example_vault: Path, tmp_path: Path) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    out = tmp_path / "out"
    first = vault.export_parquet(out)
    vault_id = first.vault_id
    (example_vault / "Knowledge" / "New note.md").write_text("# New note\n")
    vault.reconcile()
    second = vault.export_parquet(out)
    assert second.vault_id == vault_id  # stable: read back from the config
    assert second.tables["notes"] == first.tables["notes"] + 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["example-vault", "out"]  # no staging or old folder left beside it
    config_text = (example_vault / ".vaultmem" / "config.toml").read_text()
    assert config_text.startswith(f'vault_id = "{vault_id}"\n')
    shutil.rmtree(out)

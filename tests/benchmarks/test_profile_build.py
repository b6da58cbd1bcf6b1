"""The build profiler's worker mode runs the workers' own code over the notes it is given."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks import profile_build

EXAMPLE = Path(__file__).resolve().parents[2] / "example-vault"


def test_the_worker_mode_prepares_the_first_notes_and_leaves_the_vault_alone(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE, vault)
    before = sorted((p.relative_to(vault), p.read_bytes()) for p in vault.rglob("*") if p.is_file())
    assert profile_build.worker(vault, 5)["notes"] == 5
    assert profile_build.worker(vault, 0)["notes"] == 0
    after = sorted((p.relative_to(vault), p.read_bytes()) for p in vault.rglob("*") if p.is_file())
    assert after == before

"""benchmarks/bench_search on a vault of the caller's (`--vault`): it edits one note to time a
one-note reconcile, so it must leave that vault's notes as it found them."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.bench_search import run_size  # noqa: E402
from benchmarks.generate_vault import generate_vault  # noqa: E402
from vaultmem.vault import Vault  # noqa: E402


def _notes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.md"))
        if ".vaultmem" not in p.parts
    }


@pytest.mark.slow
def test_a_run_on_an_existing_vault_gives_back_its_notes(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    generate_vault(root, 200, seed=5)
    Vault(root).reconcile()
    before = _notes(root)
    row = run_size(200, existing=root)
    assert row["notes"] == 200 and row["incremental_reconcile_s"] > 0
    assert row["cold_cli_long_prompt_s"] > row["cold_python_s"] > 0  # the prompt ran, cold
    assert _notes(root) == before
    assert Vault(root).reconcile().changed == 0  # and the index already holds them

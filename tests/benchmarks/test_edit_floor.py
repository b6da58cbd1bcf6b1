"""The cold edit's floor (`benchmarks.edit_floor`): a real process on a real index, which
stats every note, writes nothing to the vault and leaves the index's answers as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_reconcile import render_scale
from benchmarks.edit_floor import cold_floor
from tests.benchmarks.test_bench_reconcile import _result
from vaultmem.vault import Vault


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def test_the_floor_process_opens_the_index_and_stats_every_note(example_vault: Path) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    before = _tree(example_vault)
    answers = vault.search("sync notes between devices")
    assert answers
    floor = cold_floor(example_vault, runs=1, cores=2)
    assert floor["process_s"] > floor["stat_s"] > 0
    assert floor["floor_s"] == pytest.approx(floor["process_s"] - floor["stat_s"] / 2)
    assert _tree(example_vault) == before
    assert Vault(example_vault).search("sync notes between devices") == answers


def test_the_report_prints_the_floor_beside_the_edits() -> None:
    floor = {"floor_s": 0.55, "process_s": 0.8, "stat_s": 0.5, "cores": 2}
    text = render_scale(_result(edit_floor=floor))
    assert (
        "  cold edit floor 0.55 s: start, imports, open and commit 0.30 s (the `--path` edit's "
        "floor) + a stat of every file 0.50 s / 2 cores"
    ) in text
    assert "cold edit floor" not in render_scale(_result())

"""The scale report's target table (issue 28): every target of a size gets a row with its
figure, its limit and a verdict; a figure not measured says so instead of passing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_reconcile import TARGETS, render_scale, target_rows


def _result(**overrides: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "notes": 100_000,
        "workers": 2,
        "repeat": 5,
        "floor_s": 6.0,
        "fts5_s": 9.0,
        "fts5_before_after_s": [8.0, 10.0],
        "mistune_s": 80.0,
        "yardstick_s": 46.0,
        "full_s": 92.0,
        "full_x_fts5": 92 / 9,
        "full_x_floor": 2.0,
        "outside_mistune_share": 0.56,
        "full_cpu_s": 200.0,
        "mistune_cpu_s": 80.0,
        "full_cpu_x_mistune": 2.5,
        "noop_s": 0.8,
        "one_edit_s": 0.9,
        "path_edit_s": 0.6,
        "main_peak_mb": 700.0,
        "largest_peak_mb": 900.0,
        "processes": 5,
        "watch": {
            "saves": 20,
            "median_s": 0.7,
            "p95_s": 0.95,
            "new_median_s": 0.6,
            "new_p95_s": 0.65,
            "burst": 500,
            "burst_searchable_s": 20.0,
            "burst_batches": 1,
            "burst_largest_batch": 500,
            "burst_peak_mb": 800.0,
        },
        "upgrade": None,
    }
    result.update(overrides)
    return result


def test_every_target_of_the_size_has_a_row_and_a_verdict() -> None:
    rows = {row["key"]: row for row in target_rows(_result())}
    assert set(rows) == {key for _, key, _, _ in TARGETS[100_000]}
    assert rows["one_edit_s"]["met"] is False and rows["noop_s"]["met"] is True
    assert rows["full_x_floor"]["met"] is True  # at the limit is met
    assert rows["watch.burst_batches"]["figure"] == 1
    assert rows["watch.new_p95_s"]["figure"] == 0.65 and rows["watch.new_p95_s"]["met"] is True
    assert rows["upgrade.x_full"]["figure"] is None and rows["upgrade.x_full"]["met"] is None


def test_the_report_prints_each_target_and_names_what_was_not_measured() -> None:
    text = render_scale(_result(upgrade={"x_full": 0.25}))
    assert "0.25 x  target <= 0.3 x" in text and "NOT MET" in text
    assert "SQLite FTS5 9.0 s (mean of 8.0 s before and 10.0 s after the build)" in text
    bracketed = render_scale(_result(mistune_before_after_s=[70.0, 90.0]))
    assert "mistune's own pass 80.0 s (mean of 70.0 s before and 90.0 s after the build)" in (
        bracketed
    )
    assert "  watch: 20 saves, save -> searchable median 0.70 s, p95 0.95 s; 20 new notes, " in text
    assert "(largest 500 paths), largest process 800 MB" in text
    missing = render_scale(_result(watch=None))
    assert "watch: save -> searchable, p95" in missing and "not measured" in missing
    assert "bench_upgrade.py" in missing
    assert len([line for line in missing.splitlines() if "target <=" in line]) == 9
    upgrade = {"upgrade_s": 30.0, "x_full": 0.37, "segment_s": 3.3, "segment_x_full": 0.04}
    both = render_scale(_result(upgrade=upgrade))
    assert "segmentation-only (no note holds such text) 3.30 s = 0.040x" in both
    assert "notes of Han text added" not in both
    scoped = {**upgrade, "scoped_notes": 100, "scoped_s": 4.0, "scoped_x_full": 0.05}
    assert "with 100 notes of Han text added 4.00 s = 0.050x" in render_scale(
        _result(upgrade=scoped)
    )


def test_a_command_is_timed_to_its_end_not_to_the_next_poll() -> None:
    """The scale report's cold no-ops and edits last a few tenths of a second: timing them by
    sleeping a poll interval between looks made each read as a multiple of the interval."""
    from benchmarks.floor import run_process_tree

    timed = run_process_tree([sys.executable, "-c", "pass"], poll_s=30.0)
    assert timed.seconds < 30.0


def test_a_cold_reconcile_is_timed_by_a_real_process_and_a_failure_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_cold_cli` runs `vaultmem reconcile ARGS` as a process of its own (what the report's
    no-op and edit rows time), and a run that fails raises with the command's own message
    rather than a time."""
    from benchmarks.bench_reconcile import _cold_cli

    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "a.md").write_text("# A\n\nlinks [[b]]\n", encoding="utf-8")
    monkeypatch.setenv("VAULTMEM_STATE_DIR", str(tmp_path / "state"))
    assert _cold_cli(vault) > 0
    with (vault / "a.md").open("a", encoding="utf-8") as handle:
        handle.write("one more line\n")
    assert _cold_cli(vault, "--path", "a.md") > 0
    with pytest.raises(RuntimeError, match=r"--path \.\./outside\.md failed \(exit \d+\)"):
        _cold_cli(vault, "--path", "../outside.md")

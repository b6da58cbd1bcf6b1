"""The floors report: the build against mistune's pass and the read floor, on any vault."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import bench_floors

EXAMPLE = Path(__file__).resolve().parents[2] / "example-vault"


def _files(root: Path) -> list[tuple[Path, bytes]]:
    return sorted((p.relative_to(root), p.read_bytes()) for p in root.rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_small_vault_is_measured_on_a_copy_against_one_core(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE, vault)
    before = _files(vault)
    row = bench_floors.measure_vault("example", vault, repeat=1)
    assert _files(vault) == before
    assert row["cores"] == 1  # under the pool's threshold: the build runs in one process
    assert row["notes"] == len(list(EXAMPLE.rglob("*.md")))
    assert row["yardstick_s"] == pytest.approx(row["mistune_s"] + row["floor_s"])
    assert row["build_x_floor"] == pytest.approx(row["build_s"] / row["yardstick_s"])
    assert row["met"] is (row["build_x_floor"] <= bench_floors.TARGET)
    assert "example" in bench_floors.render([row])


def test_cut_short_keeps_the_frontmatter_and_the_first_blocks(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_text("---\ntags: [x]\n---\n# Title\n\nOne.\n\nTwo.\n\nThree.\n\nFour.\n", "utf-8")
    plain = tmp_path / "b.md"
    plain.write_text("# B\n\nOne.\n\nTwo.\n\nThree.\n", "utf-8")
    bench_floors.cut_short(tmp_path)
    assert note.read_text("utf-8") == "---\ntags: [x]\n---\n# Title\n\nOne.\n\nTwo.\n"
    assert plain.read_text("utf-8") == "# B\n\nOne.\n\nTwo.\n"

"""The shapes report: vaults unlike the generated one, each built and changed as a person would."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_shapes
from vaultmem.vault import Vault


def test_each_shape_writes_what_its_change_is_about(tmp_path: Path) -> None:
    for name, (write, change) in bench_shapes.SHAPES.items():
        root = tmp_path / name
        root.mkdir()
        write(root, 20)
        notes = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        assert len(notes) == 20 + (name == "hub"), name
        if change is not None:
            before = {p: (root / p).read_bytes() for p in notes}
            change(root)
            after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
            moved = [p for p in after if p not in before or (root / p).read_bytes() != before[p]]
            assert moved == (["Hub.md"] if name == "hub" else ["archive/README.md"]), name
    links = (tmp_path / "links" / "n0.md").read_text("utf-8")
    assert links.count("[[") == 300


@pytest.mark.slow
def test_a_shape_is_measured_by_cold_processes_and_its_change_lands(tmp_path: Path) -> None:
    row = bench_shapes.measure_shape("readme", 30)
    assert row["notes"] == 30 and row["build_s"] > 0 and row["largest_mb"] > 0
    assert row["noop_s"] > 0 and row["change_s"] is not None and row["change_s"] > 0
    assert "| readme | 30 |" in bench_shapes.render([row])
    # the change is one every `[[archive/README]]` now resolves to
    root = tmp_path / "v"
    root.mkdir()
    bench_shapes.write_readme(root, 3)
    vault = Vault.init(root)
    vault.reconcile()
    bench_shapes.add_archive_readme(root)
    vault.reconcile()
    rows = vault.sql(
        "SELECT count(*) FROM links WHERE target = 'archive/README' "
        "AND target_path = 'archive/README.md'"
    )
    assert rows.rows == [[3]]

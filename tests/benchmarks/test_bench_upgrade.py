"""The upgrade benchmark's aging of an index: it must look like the index of the release
before, or the benchmark measures another path than a user's upgrade takes."""

from __future__ import annotations

from pathlib import Path

import duckdb

from benchmarks.bench_upgrade import _age
from vaultmem.core.models import SEGMENT_VERSION
from vaultmem.vault import Vault


def _segment_version(index: Path) -> str:
    con = duckdb.connect(str(index), read_only=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'segment_version'").fetchone()
    finally:
        con.close()
    assert row is not None
    return str(row[0])


def test_an_index_aged_one_segment_version_is_updated_in_place_when_no_note_needs_it(
    tmp_path: Path,
) -> None:
    """A vault without Han, kana, Hangul or Cyrillic: only `meta` changes, in the same file
    (an index aged to an unknown version is cut whole into a new one)."""
    root = tmp_path / "vault"
    root.mkdir()
    (root / "A.md").write_text("# A\n\nplain English words\n", encoding="utf-8")
    vault = Vault.init(root)
    vault.reconcile()
    index = vault.config.index_path
    before = index.stat().st_ino
    _age(root, "segment_version")
    assert _segment_version(index) == str(SEGMENT_VERSION - 1)
    Vault(root).reconcile()
    assert _segment_version(index) == str(SEGMENT_VERSION)
    assert index.stat().st_ino == before

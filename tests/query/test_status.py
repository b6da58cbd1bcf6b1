"""`status`: per mapped folder and scope, what the index holds, and how many notes changed since
the last reconcile. Its walk takes the last walk's folder record (`files/folder_cache.py`), so
these tests record one whose folders count as settled, then change notes in recorded folders
and in new ones, and compare with the same status taken without any record."""

from __future__ import annotations

import os
import time
from pathlib import Path

from vaultmem.core.config import Config, FolderMapping
from vaultmem.files import folder_cache
from vaultmem.files.scan import scan_vault
from vaultmem.index.reconcile import reconcile
from vaultmem.query.catalog import Status
from vaultmem.query.status import status
from vaultmem.vault import Vault

LATER = 3600 * 10**9
"""An hour ahead: folders made by the test count as settled (a real walk waits 2 s)."""

NOTES = ("Work/a.md", "Work/b.md", "Work/deep/c.md", "Ref/d.md", "Daily/2026-12-01.md")


def build(root: Path) -> Config:
    for rel in (*NOTES, "loose.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n\nwords\n", encoding="utf-8")
    mappings = (
        FolderMapping("Work", "project", "work"),
        FolderMapping("Ref", "global", None),
        FolderMapping("Daily", "session", "days"),
    )
    config = Vault.init(root, mappings=mappings).config
    reconcile(config)
    cache = folder_cache.load(config, time.time_ns() + LATER)
    scan_vault(config, cache)
    folder_cache.save(config, cache)  # every folder recorded, as a walk an hour on would
    assert (config.state_dir / folder_cache.RECORD_NAME).exists()
    return config


def without_record(config: Config) -> Status:
    (config.state_dir / folder_cache.RECORD_NAME).unlink()
    return status(config)


def test_status_counts_notes_per_mapped_folder_and_scope(tmp_path: Path) -> None:
    config = build(tmp_path / "vault")
    got = status(config)
    assert {(f.folder, f.scope, f.scope_id): f.notes for f in got.folders} == {
        ("Work", "project", "work"): 3,  # Work/deep's note too
        ("Ref", "global", None): 1,
        ("Daily", "session", "days"): 1,
    }
    assert got.changed_since_last_run == 0
    assert (got.outside_mapping, got.outside_folders) == (1, (".",))


def test_status_sees_every_change_a_recorded_folder_hides(tmp_path: Path) -> None:
    """An edit in place (the folder's times stand), a note added to and one removed from a
    recorded folder, a note in a new folder, a rename across folders: each counts, as in a
    status taken without the record."""
    config = build(tmp_path / "vault")
    root = config.root
    edited = root / "Work/a.md"
    edited.write_text("# Work/a.md\n\nwords, and more words\n", encoding="utf-8")
    stamp = edited.stat()
    os.utime(edited, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    (root / "Work/new.md").write_text("# new\n", encoding="utf-8")
    (root / "Daily/2026-12-01.md").unlink()
    (root / "Ref/fresh").mkdir()
    (root / "Ref/fresh/e.md").write_text("# e\n", encoding="utf-8")
    (root / "Work/b.md").rename(root / "Daily/b.md")
    got = status(config)
    # a: edited; new.md and e.md: new; the daily note: gone; b: gone from Work, new in Daily
    assert got.changed_since_last_run == 6
    truth = without_record(config)
    assert got == truth

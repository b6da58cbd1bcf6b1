"""`read`, `recent` and `used` on real vaults; the README's store/recall pair on dwarvesf-brain."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import run_cli
from vaultmem.core.config import FolderMapping
from vaultmem.core.errors import InvalidArgumentError, NotFoundError
from vaultmem.memory import usage
from vaultmem.vault import Vault

DWARVESF = Path(__file__).resolve().parents[2].parent / "shared" / "vaults" / "dwarvesf-brain"
"""The real vault beside the repository (CI lays `shared/` next to its clone)."""
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
NOTE = """---
title: Deploy runbook
tags: [ops]
token: ghp_abcdefghijklmnopqrstuvwxyz0123456789
---
# Deploy runbook

Intro line.

## Staging
Run make deploy ENV=staging.
Use the key AKIAABCDEFGHIJKLMNOP only from CI.

### Rollback
Run make rollback.

## Production
Needs a second reviewer. ^prod-rule

- first item
- second item ^item-two
"""


@pytest.fixture
def vault(example_vault: Path) -> Vault:
    (example_vault / "Knowledge" / "Deploy runbook.md").write_text(NOTE, "utf-8")
    v = Vault(example_vault)
    v.reconcile()
    return v


def test_read_returns_body_and_frontmatter_apart_with_secrets_redacted(vault: Vault) -> None:
    text = vault.read("Deploy runbook")
    assert text.path == "Knowledge/Deploy runbook.md" and text.subpath is None
    assert text.text.startswith("# Deploy runbook") and text.text.endswith("^item-two")
    assert text.frontmatter["tags"] == ["ops"]
    assert "ghp_" not in json.dumps(text.to_dict()) and "AKIA" not in text.text
    assert text.redacted and text.next_offset is None and text.start_line == 6


def test_a_heading_subpath_is_its_section_with_subsections(vault: Vault) -> None:
    staging = vault.read("Deploy runbook#Staging")
    assert staging.text.splitlines()[0] == "## Staging"
    assert "make rollback" in staging.text and "Production" not in staging.text
    nested = vault.read("Deploy runbook#Staging#Rollback")
    assert nested.text == "### Rollback\nRun make rollback."
    assert (nested.start_line, nested.end_line) == (14, 15)
    with pytest.raises(NotFoundError):
        vault.read("Deploy runbook#Rollback#Staging")  # each part must be deeper


def test_a_block_subpath_is_its_paragraph_or_list_item(vault: Vault) -> None:
    assert vault.read("Deploy runbook#^prod-rule").text == "Needs a second reviewer. ^prod-rule"
    assert vault.read("Deploy runbook#^item-two").text == "- second item ^item-two"
    with pytest.raises(NotFoundError):
        vault.read("Deploy runbook#^nope")


def test_a_capped_read_continues_at_next_offset_to_the_last_line(vault: Vault) -> None:
    pieces, offset = [], 0
    while True:
        piece = vault.read("Knowledge/Deploy runbook.md", max_bytes=40, offset=offset)
        assert len(piece.text.encode()) <= 40
        pieces.append(piece.text)
        if piece.next_offset is None:
            break
        offset = piece.next_offset
    assert len(pieces) > 3 and "".join(pieces) == vault.read("Deploy runbook").text


def test_a_topic_reads_by_key_and_a_read_counts_as_one_use(vault: Vault) -> None:
    text = vault.read("release-process", now=NOW)
    assert text.managed and "## 20" in text.text
    vault.read("release-process", max_bytes=10, offset=10, now=NOW)  # a continuation: no use
    assert usage.read_usage(vault.config.state_dir)[text.id or ""].count == 1


def test_read_sees_an_edit_before_reconcile_and_a_new_note_by_path(vault: Vault) -> None:
    path = vault.root / "Knowledge" / "Deploy runbook.md"
    path.write_text(NOTE + "\nAdded in Obsidian.\n", "utf-8")
    assert vault.read("Deploy runbook").text.endswith("Added in Obsidian.")
    (vault.root / "Knowledge" / "Fresh.md").write_text("# Fresh\n\nNot indexed yet.\n", "utf-8")
    assert vault.read("Knowledge/Fresh").text.endswith("Not indexed yet.")


def test_recent_lists_newest_first_and_filters(vault: Vault) -> None:
    old = vault.root / "Knowledge" / "DuckDB.md"
    os.utime(old, (1_600_000_000, 1_600_000_000))
    (vault.root / "Knowledge" / "Deploy runbook.md").touch()
    vault.reconcile()
    notes = vault.recent(limit=50)
    stamps = [n.modified for n in notes]
    assert stamps == sorted(stamps, reverse=True)
    assert notes[0].path == "Knowledge/Deploy runbook.md"
    since = vault.recent(since=datetime(2021, 1, 1), limit=500)
    assert "Knowledge/DuckDB.md" not in {n.path for n in since}
    assert all(n.managed for n in vault.recent(kind="topics", limit=500))


@pytest.mark.slow
def test_cli_read_recent_used(vault: Vault) -> None:
    root = str(vault.root)
    done = run_cli("read", "Deploy runbook#Staging", "--vault", root, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["subpath"] == "#Staging" and data["truncated"] is False
    capped = run_cli("read", "Deploy runbook", "--vault", root, "--max-bytes", "30")
    assert capped.returncode == 0 and "continue with --offset" in capped.stderr
    missing = run_cli("read", "No such note", "--vault", root, "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"
    recent = run_cli("recent", "--vault", root, "--json", "--limit", "2")
    assert recent.returncode == 0 and len(json.loads(recent.stdout)["data"]["notes"]) == 2
    used = run_cli("used", "release-process", "--vault", root, "--json")
    assert used.returncode == 0, used.stderr
    assert json.loads(used.stdout)["data"]["path"].endswith("release-process.md")


def test_store_without_scope_id_takes_the_project_it_comes_from(tmp_path: Path) -> None:
    root = tmp_path / "Notes"
    root.mkdir()
    v = Vault.init(root, mappings=[FolderMapping("", "project", "work")])
    # From inside the vault, the mapped folder names the project; from elsewhere, the folder
    # itself does (no remote here: a digest of its path), never the managed folder's mapping.
    inside = v.store("build", "Run make.", scope="project", cwd=root)
    assert (inside.scope_id, inside.path) == ("work", "agent-memory/project/work/build.md")
    outside = v.store("build", "Run make.", scope="project", cwd=tmp_path)
    assert outside.scope_id != "work" and outside.scope_id == v.project(tmp_path).scope_id
    with pytest.raises(InvalidArgumentError, match="needs an explicit --scope-id"):
        v.store("note", "x", scope="session", cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not DWARVESF.is_dir(), reason="the dwarvesf-brain vault is not on this host")
def test_readme_store_recall_pair_on_dwarvesf_brain(tmp_path: Path) -> None:
    """The README's pair, as printed, on a copy of a real 843-note vault: the topic is top 3,
    ten recalls give one order, and `read` returns the longest note's last line."""
    root = tmp_path / "brain"
    shutil.copytree(DWARVESF, root, ignore=shutil.ignore_patterns(".vaultmem", ".git"))
    assert run_cli("init", str(root)).returncode == 0
    assert run_cli("reconcile", cwd=root).returncode == 0
    stored = run_cli(
        "store",
        "build-commands",
        "Run uv run pytest -q before pushing.",
        "--scope",
        "project",
        "--scope-id",
        "work",
        cwd=root,
    )
    assert stored.returncode == 0, stored.stderr
    asked = run_cli("recall", "how do I run the tests", "--json", cwd=root)
    assert asked.returncode == 0, asked.stderr
    keys = [h["key"] for h in json.loads(asked.stdout)["data"]["hits"]]
    assert "build-commands" in keys[:3], keys
    v = Vault(root)
    first = [h.id for h in v.recall("how do I run the tests")]
    assert all([h.id for h in v.recall("how do I run the tests")] == first for _ in range(9))
    longest = max(root.rglob("*.md"), key=lambda p: p.stat().st_size)
    rel = longest.relative_to(root).as_posix()
    last = longest.read_text(encoding="utf-8").rstrip("\n").splitlines()[-1]
    done = run_cli("read", rel, "--json", "--max-bytes", "1000000", cwd=root)
    assert json.loads(done.stdout)["data"]["text"].splitlines()[-1] == last


def test_a_note_named_in_nfd_is_found_by_its_nfc_name(example_vault: Path) -> None:
    """macOS writes names decomposed: `read Café` finds `Cafe\u0301.md` as `[[Café]]` does
    (issue 27 item 13), and an NFC twin elsewhere makes the name ambiguous, not the answer."""
    from vaultmem.core.errors import AmbiguousError
    from vaultmem.vault import Vault

    (example_vault / "Knowledge" / "Cafe\u0301.md").write_text("# Cafe\n\nEspresso.\n", "utf-8")
    vault = Vault(example_vault)
    vault.reconcile()
    assert "Espresso" in vault.read("Café").text
    assert vault.show("Knowledge/Café.md").note["path"] == "Knowledge/Cafe\u0301.md"
    (example_vault / "Projects" / "Atlas" / "Café.md").write_text("# Twin\n\nTea.\n", "utf-8")
    vault.reconcile()
    with pytest.raises(AmbiguousError):
        vault.read("Café")

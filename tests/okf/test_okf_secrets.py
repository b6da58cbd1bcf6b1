"""OKF and secrets (issue 27): token-shaped names never pass, an export never replaces a file
no export wrote, an imported id never takes over an existing topic's."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from vaultmem.core.errors import InvalidArgumentError
from vaultmem.vault import Vault

XOXB = "xoxb-1234567890-abcdefghij"
GLPAT = "glpat-" + "kq3lm4np5rs6tu7vw8xy"  # a valid key: lower case


def _bundle(root: Path, members: dict[str, str]) -> Path:
    root.mkdir()
    (root / "index.md").write_text('---\nokf_version: "0.2"\n---\n', encoding="utf-8")
    for name, text in members.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _tree_text(folder: Path) -> str:
    return "\n".join(
        f"{p.relative_to(folder)}\n{p.read_text(encoding='utf-8')}"
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    )


def test_import_refuses_token_shaped_member_names_and_keys(
    example_vault: Path, tmp_path: Path
) -> None:
    bundle = _bundle(
        tmp_path / "b",
        {
            f"{XOXB}.md": "---\ntype: Note\n---\nA member named after a token.\n",
            "keyed.md": f"---\ntype: Note\nvaultmem:\n  key: {GLPAT}\n---\nKeyed.\n",
            "fine.md": "---\ntype: Note\n---\nFine.\n",
        },
    )
    vault = Vault(example_vault)
    report = vault.import_okf(bundle, scope="project", scope_id="atlas")
    assert report.imported == 1
    reasons = {r["path"]: r["reason"] for r in report.rejected}
    assert "holds a secret" in reasons["keyed.md"]
    assert any("holds a secret" in why for why in reasons.values() if why != reasons["keyed.md"])
    managed = example_vault / "agent-memory"
    assert not [p for p in managed.rglob("*") if XOXB in p.name or GLPAT in p.name]
    assert XOXB not in json.dumps(report.to_dict()) and GLPAT not in json.dumps(report.to_dict())


def test_export_of_a_folder_never_carries_a_token_in_a_name(
    example_vault: Path, tmp_path: Path
) -> None:
    (example_vault / "Knowledge" / f"{XOXB}.md").write_text("# Named\n\nText.\n", "utf-8")
    (example_vault / "Knowledge" / "Plain.md").write_text(f"# Plain\n\nSee [[{XOXB}]].\n", "utf-8")
    vault = Vault(example_vault)
    vault.reconcile()
    problems = vault.problems(code="secret_in_name")
    assert [p["path"] for p in problems] == ["Knowledge/[redacted:slack-token].md"]
    out = tmp_path / "out"
    report = vault.export_okf(out, folder="Knowledge")
    assert [(p["path"], p["code"]) for p in report.problems] == [
        ("Knowledge/[redacted:slack-token].md", "secret_in_name")
    ]
    assert "abcdefghij" not in _tree_text(out)
    assert "abcdefghij" not in json.dumps(report.to_dict())


def test_an_archive_export_never_replaces_a_file_no_export_wrote(
    example_vault: Path, tmp_path: Path
) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n", encoding="utf-8")
    vault = Vault(example_vault)
    with pytest.raises(InvalidArgumentError, match="no earlier export wrote it"):
        vault.export_okf(precious, folder="Knowledge", format="zip")
    assert precious.read_text(encoding="utf-8") == "keep me\n"
    # An archive an export wrote is its own to replace.
    archive = tmp_path / "k.zip"
    vault.export_okf(archive, folder="Knowledge", format="zip")
    (example_vault / "Knowledge" / "New.md").write_text("# New\n\nMore.\n", encoding="utf-8")
    report = vault.export_okf(archive, folder="Knowledge", format="zip")
    assert report.written == ("k.zip",)
    assert "New.md" in zipfile.ZipFile(archive).namelist()


@pytest.mark.slow
def test_an_imported_id_never_takes_over_an_existing_topic(
    example_vault: Path, tmp_path: Path
) -> None:
    vault = Vault(example_vault)
    vault.reconcile()
    existing = vault.store("kept-topic", "The original.", scope="project", scope_id="atlas")
    assert existing.id is not None
    bundle = _bundle(
        tmp_path / "b",
        {
            "intruder.md": (
                f"---\ntype: Note\nvaultmem:\n  id: {existing.id}\n  key: intruder\n---\n"
                "The intruder.\n"
            ),
        },
    )
    report = vault.import_okf(bundle, scope="project", scope_id="atlas")
    assert report.imported == 0
    assert [r["path"] for r in report.rejected] == ["intruder.md"]
    assert "conflict" in report.rejected[0]["reason"]
    assert "The original." in json.dumps(vault.get(existing.id).to_dict())
    vault.forget(existing.id)
    assert not (example_vault / "agent-memory/project/atlas/kept-topic.md").exists()

"""A first run that maps only some folders says what it leaves out (issue 27, item 16):
`init` warns, `status` counts the notes no mapped folder holds, and `show`/`read` of such a note
say it is outside the mapping instead of "no note is named"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli


def first_run(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    root = tmp_path / "Notes"
    for rel in ("Projects/plan.md", "Daily/2026-11-30.md", "Daily/2026-12-01.md", "inbox.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n\nwords\n", encoding="utf-8")
    init = run_cli("init", str(root), "--map", "Projects=project:work", "--json")
    assert init.returncode == 0, init.stderr
    assert run_cli("reconcile", "--vault", str(root)).returncode == 0
    return root, json.loads(init.stdout)["data"]


def test_init_warns_about_the_notes_its_mapping_leaves_out(tmp_path: Path) -> None:
    _, data = first_run(tmp_path)
    warnings = " ".join(str(w) for w in data["warnings"])  # type: ignore[union-attr]
    assert "3 note(s) lie outside the mapped folders" in warnings and "Daily" in warnings


@pytest.mark.slow
def test_status_counts_the_notes_outside_the_mapping(tmp_path: Path) -> None:
    root, _ = first_run(tmp_path)
    status = run_cli("status", "--json", "--vault", str(root))
    data = json.loads(status.stdout)["data"]
    assert (data["outside_mapping"], data["outside_folders"]) == (3, [".", "Daily"])
    text = run_cli("status", "--vault", str(root)).stdout
    assert "3 notes outside the mapped folders" in text


@pytest.mark.slow
def test_show_and_read_of_an_unmapped_note_say_why(tmp_path: Path) -> None:
    root, _ = first_run(tmp_path)
    for command in ("show", "read"):
        result = run_cli(command, "Daily/2026-11-30", "--json", "--vault", str(root))
        assert result.returncode == 1
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "not_found"
        assert "outside the mapped folders" in error["message"]
        assert "--map Daily=" in error["hint"]
    missing = run_cli("show", "Daily/nosuch", "--json", "--vault", str(root))
    assert "No note is named" in json.loads(missing.stdout)["error"]["message"]

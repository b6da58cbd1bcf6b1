"""The retrieval benchmark's external vaults: a set whose vault is not ours to commit (Obsidian
Help) runs when its environment variable names a folder and is skipped, with one line saying how
to get it, when it does not. CI never has the vault, so the skip is the path that must hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_retrieval
from benchmarks.retrieval import (
    EXTERNAL_VAULTS,
    QUESTIONS_DIR,
    load_questions,
    markdown_notes,
    missing_vault,
    question_sets,
    vault_for,
)

VARIABLE = EXTERNAL_VAULTS["obsidian-help"][0]


def test_unset_variable_skips_the_set_with_a_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)  # an unset variable must not fall back to the working folder
    assert not vault_for("obsidian-help").exists()
    line = missing_vault("obsidian-help")
    assert line is not None and VARIABLE in line and "obsidian-help" in line and "\n" not in line


def test_a_variable_naming_no_folder_is_reported_as_such(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(VARIABLE, str(tmp_path / "nowhere"))
    line = missing_vault("obsidian-help")
    assert line is not None and "is not a folder" in line


def test_a_variable_naming_a_folder_makes_it_the_sets_vault(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(VARIABLE, str(tmp_path))
    assert vault_for("obsidian-help") == tmp_path
    assert missing_vault("obsidian-help") is None
    assert missing_vault("example-vault") is None  # in-repo vaults are never "missing"


def test_bench_skips_the_set_and_still_succeeds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    assert bench_retrieval.main(["--set", "obsidian-help", "--json"]) == 0
    out, err = capsys.readouterr()
    assert '"sets": []' in out  # nothing ran, and the JSON line is still one object
    assert err.count("\n") == 1 and VARIABLE in err


def test_the_set_is_listed_and_its_expected_notes_are_vault_paths() -> None:
    assert "obsidian-help" in question_sets()
    questions = load_questions(QUESTIONS_DIR / "obsidian-help.jsonl")
    assert len(questions) >= 40
    for question in questions:
        assert question.expected and all(p.endswith(".md") for p in question.expected)
        assert not any(p.startswith(("/", "en/")) for p in question.expected)  # relative to en/


def test_the_baseline_reads_notes_outside_dot_folders_only(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "hidden.md").write_text("x", encoding="utf-8")
    (tmp_path / "Plugins").mkdir()
    (tmp_path / "Plugins" / "Canvas.md").write_text("x", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"")
    assert [p.relative_to(tmp_path).as_posix() for p in markdown_notes(tmp_path)] == [
        "Plugins/Canvas.md"
    ]

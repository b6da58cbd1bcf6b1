"""The retrieval benchmark's external vaults: a set whose vault is not ours to commit (Obsidian
Help, a sample of the Obsidian Hub) runs when its environment variable names a folder and is
skipped, with one line saying how to get it, when it does not. CI never has the vaults, so the
skip is the path that must hold, for every external set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import bench_retrieval
from benchmarks.retrieval import (
    EXTERNAL_VAULTS,
    QUESTIONS_DIR,
    copy_vault,
    load_questions,
    markdown_notes,
    missing_vault,
    question_sets,
    sample_notes,
    vault_for,
)

EXTERNAL = sorted(EXTERNAL_VAULTS)


def test_every_external_set_has_its_own_variable() -> None:
    assert {"obsidian-help", "obsidian-hub"} <= set(EXTERNAL)
    variables = [EXTERNAL_VAULTS[name][0] for name in EXTERNAL]
    assert len(set(variables)) == len(variables)


@pytest.mark.parametrize("name", EXTERNAL)
def test_unset_variable_skips_the_set_with_a_line_naming_the_variable(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    variable = EXTERNAL_VAULTS[name][0]
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)  # an unset variable must not fall back to the working folder
    assert not vault_for(name).exists()
    line = missing_vault(name)
    assert line is not None and variable in line and name in line and "\n" not in line


@pytest.mark.parametrize("name", EXTERNAL)
def test_a_variable_naming_no_folder_is_reported_as_such(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(EXTERNAL_VAULTS[name][0], str(tmp_path / "nowhere"))
    line = missing_vault(name)
    assert line is not None and "is not a folder" in line


@pytest.mark.parametrize("name", EXTERNAL)
def test_a_variable_naming_a_folder_makes_it_the_sets_vault(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(EXTERNAL_VAULTS[name][0], str(tmp_path))
    assert vault_for(name) == tmp_path
    assert missing_vault(name) is None
    assert missing_vault("example-vault") is None  # in-repo vaults are never "missing"


def test_one_sets_variable_does_not_give_the_other_set_a_vault(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(EXTERNAL_VAULTS["obsidian-help"][0], str(tmp_path))
    monkeypatch.delenv(EXTERNAL_VAULTS["obsidian-hub"][0], raising=False)
    assert vault_for("obsidian-help") == tmp_path
    assert not vault_for("obsidian-hub").exists()
    assert missing_vault("obsidian-hub") is not None


@pytest.mark.parametrize("name", EXTERNAL)
def test_bench_skips_the_set_and_still_succeeds(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    variable = EXTERNAL_VAULTS[name][0]
    monkeypatch.delenv(variable, raising=False)
    assert bench_retrieval.main(["--set", name, "--json"]) == 0
    out, err = capsys.readouterr()
    assert '"sets": []' in out  # nothing ran, and the JSON line is still one object
    assert err.count("\n") == 1 and variable in err


def test_fresh_builds_every_index_in_a_state_folder_of_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`--fresh` measures from nothing: the index goes to a new state folder, not to the one
    an earlier run (or another analysis) left an index in."""
    kept = tmp_path / "kept-state"
    monkeypatch.setenv("VAULTMEM_STATE_DIR", str(kept))
    monkeypatch.setattr(bench_retrieval, "OUT_DIR", tmp_path / "out")
    assert bench_retrieval.main(["--set", "example-vault", "--fresh", "--json"]) == 0
    assert '"set": "example-vault"' in capsys.readouterr().out
    state = Path(os.environ["VAULTMEM_STATE_DIR"])
    assert state != kept and state.name.startswith("vaultmem-retrieval-")
    assert any(state.glob("*/index.duckdb")) and not kept.exists()


@pytest.mark.parametrize(
    ("name", "not_prefix"), [("obsidian-help", "en/"), ("obsidian-hub", "obsidian-hub/")]
)
def test_the_set_is_listed_and_its_expected_notes_are_vault_paths(
    name: str, not_prefix: str
) -> None:
    assert name in question_sets()
    questions = load_questions(QUESTIONS_DIR / f"{name}.jsonl")
    assert len(questions) >= 40
    for question in questions:
        assert question.expected and all(p.endswith(".md") for p in question.expected)
        # relative to the folder the variable names, never to the checkout above it
        assert not any(p.startswith(("/", not_prefix)) for p in question.expected)
        assert len(set(question.expected)) == len(question.expected)


def test_the_baseline_reads_notes_outside_dot_folders_only(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "hidden.md").write_text("x", encoding="utf-8")
    (tmp_path / "Plugins").mkdir()
    (tmp_path / "Plugins" / "Canvas.md").write_text("x", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"")
    assert [p.relative_to(tmp_path).as_posix() for p in markdown_notes(tmp_path)] == [
        "Plugins/Canvas.md"
    ]


@pytest.mark.parametrize("name", EXTERNAL)
def test_an_external_set_lists_its_sample_and_every_expected_note_is_in_it(name: str) -> None:
    notes = sample_notes(name)
    assert notes is not None and len(notes) >= 75  # fr/, pt-br/, pl/ are partial: 78-90 notes
    assert len(set(notes)) == len(notes)
    questions = load_questions(QUESTIONS_DIR / f"{name}.jsonl")
    expected = {path for question in questions for path in question.expected}
    assert expected <= set(notes), sorted(expected - set(notes))


def test_a_set_on_a_vault_of_ours_reads_the_whole_vault() -> None:
    assert sample_notes("dwarvesf-brain-natural") is None


def test_copy_vault_copies_the_listed_notes_only_and_names_the_missing(tmp_path: Path) -> None:
    source = tmp_path / "checkout"
    for rel in ("A.md", "Folder/B.md", "Folder/Newer note.md", ".obsidian/app.json"):
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(f"# {rel}\n", encoding="utf-8")
    target = tmp_path / "copy"
    missing = copy_vault(source, target, ["A.md", "Folder/B.md", "Gone/C.md"])
    assert missing == ["Gone/C.md"]
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert copied == ["A.md", "Folder/B.md"]
    assert (target / "Folder/B.md").read_text(encoding="utf-8") == "# Folder/B.md\n"
    assert copy_vault(source, tmp_path / "none", ["Gone/C.md"]) == ["Gone/C.md"]
    assert (tmp_path / "none").is_dir()  # a vault to index, if an empty one
    whole = tmp_path / "whole"
    assert copy_vault(source, whole) == []
    assert (whole / "Folder/Newer note.md").exists()


def test_language_option_indexes_the_set_with_that_stemmer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--language` is how a set is measured under another stemmer (docs/search.md, German):
    the copy's config names it, and the index is built with it."""
    from vaultmem.storage import search_queries, store
    from vaultmem.vault import Vault

    monkeypatch.setattr(bench_retrieval, "OUT_DIR", tmp_path)
    root, notes = bench_retrieval.prepared_vault("example-vault", language="german")
    assert notes > 0
    assert 'language = "german"' in (root / ".vaultmem" / "config.toml").read_text()
    with store.reading(Vault(root).config.index_path) as con:
        assert search_queries.index_language(con) == "german"
    default, _ = bench_retrieval.prepared_vault("example-vault-mismatch")
    with store.reading(Vault(default).config.index_path) as con:
        assert search_queries.index_language(con) == "english"


def test_language_option_replaces_the_language_a_set_config_names(tmp_path: Path) -> None:
    """A set whose own config already names a `[search] language` is measured under the one
    asked for: the line is replaced (two would make the config unreadable), the rest kept."""
    import tomllib

    from vaultmem.core.config import load_config

    vault = tmp_path / "vault"
    (vault / ".vaultmem").mkdir(parents=True)
    config = vault / ".vaultmem" / "config.toml"
    config.write_text(
        '# the set\'s own settings\n[search]\nlanguage = "english"  # its stemmer\nk1 = 1.4\n',
        encoding="utf-8",
    )
    bench_retrieval._set_search_language(config, "german")
    text = config.read_text(encoding="utf-8")
    assert tomllib.loads(text)["search"] == {"language": "german", "k1": 1.4}
    assert text.startswith("# the set's own settings\n")
    assert load_config(vault).search_language == "german"

    bare = tmp_path / "bare.toml"
    bare.write_text('[vault]\nmanaged_folder = "Memory"\n', encoding="utf-8")
    bench_retrieval._set_search_language(bare, "german")
    assert tomllib.loads(bare.read_text(encoding="utf-8"))["search"] == {"language": "german"}

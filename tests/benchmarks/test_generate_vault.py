"""The benchmark vault generator: deterministic, valid frontmatter, realistic link counts."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `benchmarks` is not part of the installed package
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.floor import frontmatter_block, markdown_files, read_floor  # noqa: E402
from benchmarks.generate_vault import CONFIG_TOML, GeneratedVault, generate_vault  # noqa: E402

N_NOTES = 50
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
_WIKILINK = re.compile(r"!?\[\[([^\]]+)\]\]")
_MDLINK = re.compile(r"\[[^\]]*\]\(([^)\s]+\.md)\)")


def _tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of the bytes, for every file ("dir" for every folder)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for d in dirnames:
            out[(base / d).relative_to(root).as_posix()] = "dir"
        for f in filenames:
            out[(base / f).relative_to(root).as_posix()] = hashlib.sha256(
                (base / f).read_bytes()
            ).hexdigest()
    return out


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> GeneratedVault:
    return generate_vault(tmp_path_factory.mktemp("vault") / "v", N_NOTES, seed=7)


def _link_targets(text: str) -> list[str]:
    """Link targets as Obsidian sees them: fenced code removed; subpath and display dropped."""
    text = _FENCE.sub("", text)
    targets = [m[1].split("|", 1)[0].split("#", 1)[0].strip() for m in _WIKILINK.finditer(text)]
    targets += [m[1].replace("%20", " ").removesuffix(".md") for m in _MDLINK.finditer(text)]
    return targets


def test_same_arguments_give_a_byte_identical_tree(vault: GeneratedVault, tmp_path: Path) -> None:
    # A second run in a fresh interpreter with another hash seed: set order must not leak in.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    script = REPO_ROOT / "benchmarks" / "generate_vault.py"
    cmd = [sys.executable, str(script), str(tmp_path / "v"), "--notes", str(N_NOTES)]
    subprocess.run([*cmd, "--seed", "7"], check=True, env=env, capture_output=True)
    assert _tree_digest(tmp_path / "v") == _tree_digest(vault.root)


def test_another_seed_gives_another_vault(vault: GeneratedVault, tmp_path: Path) -> None:
    other = generate_vault(tmp_path / "v", N_NOTES, seed=8)
    assert _tree_digest(other.root) != _tree_digest(vault.root)


def test_counts_match_the_tree(vault: GeneratedVault) -> None:
    files = markdown_files(vault.root)
    assert len(files) == vault.notes == N_NOTES
    assert sum(f.stat().st_size for f in files) == vault.bytes
    assert vault.links == (
        vault.wikilinks + vault.embeds + vault.markdown_links + vault.property_links
    )
    assert (vault.root / ".vaultmem" / "config.toml").read_text() == CONFIG_TOML
    assert (vault.root / "agent-memory").is_dir()
    floor = read_floor(vault.root)
    assert (floor.files, floor.bytes, floor.frontmatter_errors) == (N_NOTES, vault.bytes, 0)


def test_every_note_has_mapping_frontmatter(vault: GeneratedVault) -> None:
    for path in markdown_files(vault.root):
        block = frontmatter_block(path.read_text(encoding="utf-8"))
        assert block is not None, path
        data = yaml.safe_load(block)
        assert isinstance(data, dict), path
        assert isinstance(data["tags"], list) and isinstance(data["type"], str)


def test_each_note_has_three_to_ten_links(vault: GeneratedVault) -> None:
    per_note = [
        len(_link_targets(p.read_text(encoding="utf-8"))) for p in markdown_files(vault.root)
    ]
    assert all(3 <= n <= 10 for n in per_note), per_note
    assert sum(per_note) == vault.links


def test_fake_links_in_code_are_not_counted_and_some_links_dangle(vault: GeneratedVault) -> None:
    files = markdown_files(vault.root)
    texts = [p.read_text(encoding="utf-8") for p in files]
    assert any("[[not a link]]" in t and "#notatag" in t for t in texts)
    assert all("not a link" not in target for t in texts for target in _link_targets(t))
    # Obsidian resolves by file name or by path (never by alias); attachments (.png) are absent.
    names = {p.stem.lower() for p in files}
    paths = {p.relative_to(vault.root).with_suffix("").as_posix().lower() for p in files}
    targets = [target.lower() for t in texts for target in _link_targets(t)]
    dangling = [t for t in targets if t not in names and t not in paths]
    assert 0 < len(dangling) == vault.dangling_links
    assert len(dangling) < 0.2 * len(targets)


def test_some_file_names_repeat_across_folders(vault: GeneratedVault) -> None:
    stems = [p.stem.lower() for p in markdown_files(vault.root)]
    assert vault.duplicate_names >= 1
    assert len(stems) - len(set(stems)) == vault.duplicate_names


def test_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_text("mine\n")
    with pytest.raises(FileExistsError):
        generate_vault(tmp_path, 5)

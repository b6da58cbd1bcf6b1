"""`search` judges its own hits (`Vault.search`, `_JUDGES_ITSELF`): over an index redacted by the
patterns in force only the snippet is judged again; over any other index the whole redaction
runs. Both ways, no secret reaches the output (issue 27: the boundary made cheap, not weaker)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli

TOKEN = "Zq7" + "x" * 20 + "9kLm"  # the body a configured pattern `corp-…` matches


def _vault(tmp_path: Path, body: str, title: str = "Deploy") -> Path:
    root = tmp_path / "v"
    (root / ".obsidian").mkdir(parents=True)
    init = run_cli("init", str(root), "--json")
    assert init.returncode == 0, init.stderr
    note = f"---\ntitle: {title}\n---\n# {title}\n\n{body}\n"
    (root / "Deploy.md").write_text(note, encoding="utf-8")
    done = run_cli("reconcile", "--vault", str(root), "--json")
    assert done.returncode == 0, done.stderr
    return root


def _search(root: Path, query: str) -> str:
    result = run_cli("search", query, "--vault", str(root), "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["data"]
    assert hits, "the note was not found: the test saw no data"
    return result.stdout


def test_a_snippet_that_joins_a_secret_is_redacted(tmp_path: Path) -> None:
    # The index holds `pass**word**:` as written (no keyword ends at `pass**`); the snippet
    # drops `**` and joins the lines, which makes `password: hunter2x9` of it.
    root = _vault(tmp_path, "staging box pass**word**:\nhunter2x9 rotated weekly")
    out = _search(root, "staging")
    assert "hunter2x9" not in out
    assert "[redacted:" in out


def test_an_index_older_than_the_patterns_is_redacted_whole(tmp_path: Path) -> None:
    # A pattern configured after the last reconcile: the index still holds the token (in the
    # title and heading, not the snippet), and its meta says it was redacted by other
    # patterns, so every field is judged on the way out.
    root = _vault(tmp_path, "staging deploys", title=f"Release corp-{TOKEN}")
    config = root / ".vaultmem" / "config.toml"
    config.write_text(
        config.read_text(encoding="utf-8")
        + '\n[[secrets.patterns]]\nname = "corp-token"\nregex = "corp-[A-Za-z0-9]{20,}"\n',
        encoding="utf-8",
    )
    out = _search(root, "staging")
    assert TOKEN not in out
    assert "[redacted:corp-token]" in out

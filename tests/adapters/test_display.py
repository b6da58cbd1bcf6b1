"""What a new user reads (issue 27, item 20): `recall` names a note by its title as `search`
does; snippets and context lines show text, not markup; a dropped alias says where and what;
`search -h`'s examples run on a default vault, and its help says semantic search is opt-in."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.helpers import run_cli
from vaultmem.adapters.commands import BY_NAME

RELEASE = """---
aliases: [ok, {password: ghp_abcdefghijklmnopqrstuvwxyz0123456789, more: words words words}]
---
# Release checklist

> [!warning] Deploy carefully
> Press the <button class="big">Deploy</button> button for the frobnicator.

The frobnicator ships on Fridays.
"""


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "Notes"
    (root / "Docs").mkdir(parents=True)
    (root / "Docs" / "release.md").write_text(RELEASE, encoding="utf-8")
    assert run_cli("init", str(root)).returncode == 0
    assert run_cli("reconcile", "--vault", str(root)).returncode == 0
    return root


def test_recall_shows_the_title_search_shows(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    for command in ("search", "recall"):
        first = run_cli(command, "frobnicator", "--vault", str(root)).stdout.splitlines()[0]
        assert first.startswith("1. Release checklist  Docs/release.md"), (command, first)


def test_snippets_and_context_lines_show_no_markup(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    stored = run_cli(
        "store", "deploy-steps", '> [!tip] Press <kbd>Ctrl</kbd>+<kbd>D</kbd> to deploy.',
        "--scope", "global", "--vault", str(root),
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    shown: list[str] = []
    for command in ("search", "recall"):
        for query in ("frobnicator", "deploy"):
            out = run_cli(command, query, "--json", "--vault", str(root))
            shown += [hit["snippet"] for hit in json.loads(out.stdout)["data"]["hits"]]
            shown.append(run_cli(command, query, "--vault", str(root)).stdout)
    context = run_cli("context", "--scopes", "global", "--vault", str(root)).stdout
    shown.append(context)
    assert "Ctrl + D to deploy" in context or "Ctrl+D to deploy" in context
    assert any("Deploy carefully Press the Deploy button" in text for text in shown)
    for text in shown:
        for markup in ("[!warning]", "[!tip]", "<button", "</button>", "<kbd>", "> "):
            assert markup not in text.replace("1. ", ""), (markup, text)


def test_a_dropped_alias_names_its_line_and_a_shortened_redacted_value(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    out = run_cli("problems", "--json", "--vault", str(root))
    rows = [r for r in json.loads(out.stdout)["data"] if r["path"] == "Docs/release.md"]
    assert [(r["code"], r["line"]) for r in rows] == [("property_invalid", 2)]
    message = rows[0]["message"]
    assert message.startswith("non-text item {") and message.endswith("in 'aliases' dropped")
    assert "ghp_abcdefghij" not in message and "…" in message
    assert len(message) < 100


def test_search_examples_run_on_a_default_vault(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    for example in BY_NAME["search"].examples:
        argv = shlex.split(example)[1:]
        result = run_cli(*argv, "--vault", str(root))
        assert result.returncode == 0, (example, result.stdout, result.stderr)
    help_text = " ".join(run_cli("search", "-h").stdout.split())
    assert "off by default" in help_text and "semantic = true" in help_text

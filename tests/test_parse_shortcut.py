"""The parser's cheap path (skipping the inline parse of plain paragraphs) changes no model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.generate_vault import generate_vault
from vaultmem.note import markdown
from vaultmem.note.parse import parse_note

EXAMPLE = Path(__file__).resolve().parent.parent / "example-vault"

_PIECES = st.sampled_from(
    [
        "plain words here",
        "[[Link]]",
        "![[Embed#Head]]",
        "#tag",
        "`code [[x]]`",
        "$x [[y]]$",
        "key:: [[Z]]",
        "[t](Note.md)",
        "^block-1",
        "\n\n",
        "\n",
        "> quote\n",
        "- item\n",
        "# Heading\n",
        "```\n[[fenced]]\n```\n",
        "%%comment [[c]]%%",
        "<!-- [[hidden]] -->",
        "\\[[escaped]]",
    ]
)


def _both(path: str, data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    fast = parse_note(path, data)
    with monkeypatch.context() as patch:
        patch.setattr(markdown, "SKIP_PLAIN_PARAGRAPHS", False)
        full = parse_note(path, data)
    return fast, full


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=25).map(" ".join))
def test_cheap_path_gives_identical_models_on_generated_text(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, full = _both("Note.md", text.encode(), monkeypatch)
    assert fast == full


def test_cheap_path_gives_identical_models_on_real_vaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = tmp_path / "gen"
    generate_vault(generated, 150, seed=7)
    files = [*EXAMPLE.rglob("*.md"), *generated.rglob("*.md")]
    assert len(files) > 150
    for file in files:
        fast, full = _both(file.name, file.read_bytes(), monkeypatch)
        assert fast == full, file


def test_the_switch_is_real(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard against a switch that no longer controls anything: count the inline parses."""
    calls = 0
    real = markdown._MD.inline

    def counting(text: str, env: dict[str, object]) -> object:
        nonlocal calls
        calls += 1
        return real(text, env)

    monkeypatch.setattr(markdown._MD, "inline", counting)
    parse_note("N.md", b"plain paragraph\n\nanother one\n")
    assert calls == 0
    monkeypatch.setattr(markdown, "SKIP_PLAIN_PARAGRAPHS", False)
    parse_note("N.md", b"plain paragraph\n\nanother one\n")
    assert calls == 2

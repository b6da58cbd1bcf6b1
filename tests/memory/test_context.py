"""The context block: scope order, caps, budget, redaction, [related], and the --write markers."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import run_cli
from vaultmem.core.errors import PathEscapeError
from vaultmem.memory.context import (
    BEGIN_MARKER,
    CLOSE_TAG,
    END_MARKER,
    ENTRY_MAX_CHARS,
    OPEN_TAG,
    Candidate,
    merge_block,
    render_block,
)
from vaultmem.memory.recall import NoteInfo, ScopeSpec
from vaultmem.vault import Vault

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def info(key: str, scope: str = "project", *, managed: bool = True) -> NoteInfo:
    return NoteInfo(
        id=f"id-{key}",
        key=key,
        path=f"agent-memory/{scope}/{key}.md",
        title=key.title(),
        scope=scope,
        scope_id=None,
        type="project",
        managed=managed,
        updated="2026-11-28T00:00:00Z",
        updated_at=NOW,
        size=1,
        mtime_ns=1,
    )


def cands(scope: str, n: int, text: str = "a fact worth remembering") -> list[Candidate]:
    def distinct(i: int) -> str:  # two words of its own: not a near-repeat of its siblings
        digest = hashlib.sha256(f"{scope}{i}".encode()).hexdigest()
        return f"x{digest[:7]} y{digest[7:14]} {text} {i}"

    return [Candidate(info(f"{scope}-{i}", scope), distinct(i)) for i in range(n)]


def plan(*scopes: tuple[str, list[Candidate]]) -> list[tuple[ScopeSpec, list[Candidate]]]:
    return [(ScopeSpec(s), c) for s, c in scopes]


# -- layout ------------------------------------------------------------------------------------


def test_scopes_appear_in_the_order_asked() -> None:
    block = render_block(
        plan(("global", cands("global", 2)), ("session", cands("session", 2))),
        budget_chars=3000,
    )
    lines = block.text.splitlines()
    assert lines[0] == OPEN_TAG and lines[-1] == CLOSE_TAG
    scopes = [line.split("]")[0].removeprefix("- [") for line in lines if line.startswith("- [")]
    assert scopes == ["global", "global", "session", "session"]


def test_each_scope_is_capped_at_per_scope_entries() -> None:
    block = render_block(
        plan(("session", cands("session", 7)), ("project", cands("project", 2))),
        per_scope=3,
        budget_chars=5000,
    )
    assert [e.scope for e in block.entries] == ["session"] * 3 + ["project"] * 2
    assert block.skipped == 4


@pytest.mark.parametrize("budget", [60, 100, 150, 200, 333, 500, 800, 1200, 3000])
def test_the_budget_is_never_exceeded(budget: int) -> None:
    long_text = "word " * 120
    block = render_block(
        plan(
            ("session", cands("session", 5, long_text)),
            ("project", cands("project", 12)),
            ("global", cands("global", 3, "short")),
        ),
        budget_chars=budget,
    )
    assert len(block.text) <= budget


def test_unused_budget_is_not_lent_to_another_scope() -> None:
    # session has one short entry; project has many. Project must still stop at its own share.
    budget = 900
    block = render_block(
        plan(("session", cands("session", 1, "x")), ("project", cands("project", 40))),
        per_scope=100,
        budget_chars=budget,
    )
    share = budget - len(OPEN_TAG) - len(CLOSE_TAG) - len("## Context from vaultmem memory") - 2
    share //= 2
    project_chars = sum(len(e.line) + 1 for e in block.entries if e.scope == "project")
    assert project_chars <= share
    assert len(block.text) < budget - share // 2  # the session share stayed unused


def test_entries_that_do_not_fit_are_skipped_whole_not_cut() -> None:
    big = Candidate(info("big"), "alpha " * 40)
    small = Candidate(info("small"), "tiny fact")
    block = render_block(plan(("project", [big, small])), budget_chars=200)
    assert [e.key for e in block.entries] == ["small"]
    assert block.skipped == 1
    assert "alpha" not in block.text


def test_long_content_is_cut_at_a_word_boundary() -> None:
    words = " ".join(f"w{i:03d}" for i in range(200))
    block = render_block(plan(("project", [Candidate(info("k"), words)])), budget_chars=3000)
    (entry,) = block.entries
    content = entry.line.split(": ", 1)[1]
    assert content.endswith(" …") and len(content) <= ENTRY_MAX_CHARS
    assert content.removesuffix(" …").split(" ")[-1] in words.split(" ")


def test_secrets_are_redacted_before_any_cut() -> None:
    # Raw, the text is longer than an entry may be; redacted, it fits whole. Cutting first
    # would have dropped the end of the fact along with the token.
    text = "x " * (ENTRY_MAX_CHARS // 2 - 15) + GITHUB_TOKEN + " end"
    assert len(text) > ENTRY_MAX_CHARS
    block = render_block(plan(("project", [Candidate(info("leaky"), text)])), budget_chars=3000)
    assert "ghp_" not in block.text and "A1b2C3" not in block.text
    assert block.entries[0].line.endswith("[redacted:github-token] end")


def test_related_entries_are_marked() -> None:
    direct = Candidate(info("build"), "run make")
    linked = Candidate(info("Runbook", managed=False), "Run the tests with uv.", related=True)
    block = render_block(plan(("project", [direct, linked])), budget_chars=3000)
    lines = [line for line in block.text.splitlines() if line.startswith("- ")]
    assert lines == [
        "- [project] build: run make",
        "- [project] Runbook [related]: Run the tests with uv.",
    ]


# -- on the example vault ----------------------------------------------------------------------


@pytest.fixture
def vault(example_vault: Path) -> Vault:
    v = Vault(example_vault)
    v.reconcile()
    return v


def test_block_from_the_example_vault(vault: Vault) -> None:
    block = vault.context(scopes=["session", "project:atlas", "global"], now=NOW)
    text = block.text
    assert len(text) <= 3000
    keys = [e.key for e in block.entries if not e.related]
    assert keys.index("build-and-test-commands") < keys.index("user-preferences")
    assert "consumer-lag-alerting" not in keys  # another project's topic
    assert any(e.related for e in block.entries)
    assert "- [project] build-and-test-commands: Build the container" in text
    assert "[related]:" in text


def test_expired_topics_stay_out_of_the_block(vault: Vault) -> None:
    later = datetime(2027, 6, 1, tzinfo=UTC)  # project topics are past their 90 days
    keys = {e.key for e in vault.context(now=later).entries}
    assert "build-and-test-commands" not in keys
    assert {"user-preferences", "code-review-feedback"} <= keys  # user/feedback never expire


def test_a_secret_in_a_topic_is_redacted_in_the_block(example_vault: Path) -> None:
    path = example_vault / "agent-memory/project/atlas/build-and-test-commands.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            "The old `make test` target no longer exists.",
            "Deploy with atl_dep_abcdefghijklmnopqrstuvwx and " + GITHUB_TOKEN + ".",
        ),
        encoding="utf-8",
    )
    v = Vault(example_vault)
    v.reconcile()
    block = v.context(scopes=["project:atlas"], now=NOW).text
    assert "[redacted:atlas-deploy-token]" in block  # a pattern from the vault's config
    assert "[redacted:github-token]" in block
    assert "atl_dep_abc" not in block and "ghp_" not in block


# -- --write and its markers -------------------------------------------------------------------

BLOCK = f"{OPEN_TAG}\n## Context from vaultmem memory\n- [project] k: v\n{CLOSE_TAG}"


def region(block: str = BLOCK, nl: str = "\n") -> str:
    return nl.join([BEGIN_MARKER, *block.splitlines(), END_MARKER]) + nl


def test_merge_into_no_file_and_into_a_file_without_markers() -> None:
    assert merge_block(None, BLOCK).text == region()
    assert merge_block("# Rules\nBe kind.\n", BLOCK).text == "# Rules\nBe kind.\n\n" + region()
    assert merge_block("no newline", BLOCK).text == "no newline\n\n" + region()


def test_merge_replaces_only_the_marked_region() -> None:
    before = "# Project\r\nintro ünïcode\r\n\r\n"
    after = "\r\n## More\r\ntext without final newline"
    old = before + region("old block", "\r\n") + after
    merged = merge_block(old, BLOCK).text
    assert merged == before + region(BLOCK, "\r\n") + after
    assert merge_block(merged, BLOCK).text == merged


def test_merge_is_idempotent() -> None:
    once = merge_block("intro\n", BLOCK).text
    assert merge_block(once, BLOCK).text == once


def test_duplicated_blocks_collapse_into_the_first() -> None:
    text = "a\n" + region("one") + "b\n" + region("two") + "c\n" + region("three")
    merged = merge_block(text, BLOCK)
    assert merged.text == "a\n" + region() + "b\n" + "c\n"
    assert merged.duplicate_blocks_removed == 2


def test_stray_markers_lose_their_line_only() -> None:
    text = f"a\n{BEGIN_MARKER}\nmine, keep me\n{BEGIN_MARKER}\nold\n{END_MARKER}\nz\n{END_MARKER}\n"
    merged = merge_block(text, BLOCK)
    assert merged.text == "a\nmine, keep me\n" + region() + "z\n"
    assert merged.stray_markers_removed == 2
    lone_begin = merge_block(f"a\n{BEGIN_MARKER}\nkeep\n", BLOCK)
    assert lone_begin.text == "a\nkeep\n\n" + region()
    assert merge_block(lone_begin.text, BLOCK).text == lone_begin.text


def test_markers_inside_a_line_are_text() -> None:
    text = f"Write `{BEGIN_MARKER}` and `{END_MARKER}` on their own lines.\n"
    assert merge_block(text, BLOCK).text == text + "\n" + region()


def test_write_leaves_the_rest_of_the_file_byte_for_byte(vault: Vault, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    head = b"# House rules\n\xff\xfe raw bytes stay\n"
    tail = b"\n## After\nkept \xe2\x9c\x93\n"
    target = project / ".claude" / "CLAUDE.md"
    target.write_bytes(head + region("stale").encode() + tail)
    first = vault.write_context("claude", project_dir=project, now=NOW)
    data = target.read_bytes()
    assert first.changed and not first.created
    assert data.startswith(head) and data.endswith(tail)
    assert first.block.text.encode() in data
    stat = target.stat()
    second = vault.write_context("claude", project_dir=project, now=NOW)
    assert not second.changed
    assert target.read_bytes() == data and target.stat().st_mtime_ns == stat.st_mtime_ns


def test_write_creates_each_provider_file(vault: Vault, tmp_path: Path) -> None:
    expected = {
        "claude": ".claude/CLAUDE.md",
        "codex": "AGENTS.md",
        "kiro": ".kiro/steering/vaultmem-memory.md",
    }
    for target, rel in expected.items():
        done = vault.write_context(target, project_dir=tmp_path, now=NOW)  # type: ignore[arg-type]
        assert done.created and Path(done.path) == (tmp_path / rel).resolve()
        assert (tmp_path / rel).read_text(encoding="utf-8").startswith(BEGIN_MARKER)


def test_write_refuses_a_file_inside_the_vault(vault: Vault) -> None:
    with pytest.raises(PathEscapeError):
        vault.write_context("codex", project_dir=vault.root, now=NOW)
    assert not (vault.root / "AGENTS.md").exists()


@pytest.mark.slow
def test_cli_context_and_write(vault: Vault, tmp_path: Path) -> None:
    shown = run_cli("context", "--vault", str(vault.root), "--budget-chars", "800")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(OPEN_TAG) and len(shown.stdout.rstrip("\n")) <= 800
    as_json = run_cli("context", "--vault", str(vault.root), "--scopes", "global", "--json")
    envelope = json.loads(as_json.stdout)
    assert envelope["ok"] and envelope["data"]["scopes"] == ["global"]
    assert {e["scope"] for e in envelope["data"]["entries"]} == {"global"}
    (tmp_path / "AGENTS.md").write_text("mine\n", encoding="utf-8")
    wrote = run_cli(
        "context", "--vault", str(vault.root), "--write", "codex", "--json", cwd=tmp_path
    )
    assert wrote.returncode == 0, wrote.stderr
    data = json.loads(wrote.stdout)["data"]
    assert data["changed"] and data["path"] == str((tmp_path / "AGENTS.md").resolve())
    assert (
        (tmp_path / "AGENTS.md").read_text(encoding="utf-8").startswith("mine\n\n" + BEGIN_MARKER)
    )
    refused = run_cli(
        "context",
        "--vault",
        str(vault.root),
        "--write",
        "codex",
        "--project",
        str(vault.root),
        "--json",
    )
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "path_escape"

"""Recall on example-vault: agent questions find their topic; expiry, usage and freshness."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import run_cli
from vaultmem.errors import ConfigError, QueryError
from vaultmem.memory import usage
from vaultmem.memory.recall import metadata_candidates, parse_scopes
from vaultmem.vault import Vault

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)

QUESTIONS = [
    ("how do I run the tests", "build-and-test-commands"),
    ("which commands does CI run before pushing", "build-and-test-commands"),
    ("how do I build the container image", "build-and-test-commands"),
    ("why not use the duckdb fts extension", "duckdb-index-decision"),
    ("can the query API open a second writer or a connection pool", "duckdb-index-decision"),
    ("how do we cut a release", "release-process"),
    ("where do I announce releases", "release-process"),
    ("where is the kafka consumer lag dashboard", "consumer-lag-alerting"),
    ("when does the lag alert page on-call", "consumer-lag-alerting"),
    ("should I mock duckdb in tests", "code-review-feedback"),
    ("how many changed lines can a pull request have", "code-review-feedback"),
    ("does the user prefer unittest or pytest", "user-preferences"),
    ("British or American spelling", "user-preferences"),
    ("user preferences", "user-preferences"),
]


@pytest.fixture
def vault(example_vault: Path) -> Vault:
    v = Vault(example_vault)
    v.reconcile()
    return v


def topic(
    key: str, *, scope: str, scope_id: str | None, type_: str, updated: str, text: str
) -> str:
    return (
        f"---\nid: 00000000-0000-4000-8000-{abs(hash(key)) % 10**12:012d}\nkey: {key}\n"
        f"scope: {scope}\nscope_id: {scope_id or 'null'}\ntype: {type_}\ntags: []\n"
        f'created: "{updated}"\nupdated: "{updated}"\nsource: test\n---\n# {key}\n\n'
        f"## {updated}\n{text}\n"
    )


@pytest.mark.parametrize(("question", "expected"), QUESTIONS)
def test_agent_questions_find_their_topic(vault: Vault, question: str, expected: str) -> None:
    keys = [h.key for h in vault.recall(question, limit=5, now=NOW)]
    assert expected in keys[:3], keys


def test_hybrid_puts_metadata_matches_first(vault: Vault) -> None:
    hits = vault.recall("release-process", now=NOW)
    assert hits[0].key == "release-process" and hits[0].matched == "metadata"
    matched = [h.matched for h in hits]
    assert matched == sorted(matched, key=lambda m: m != "metadata")  # metadata, then bm25
    only_meta = vault.recall("release-process", mode="metadata", now=NOW)
    assert {h.matched for h in only_meta} == {"metadata"}
    assert all(h.matched == "bm25" for h in vault.recall("release", mode="words", now=NOW))


def test_a_hit_carries_what_an_agent_needs(vault: Vault) -> None:
    (hit,) = vault.recall("user preferences", limit=1, now=NOW)
    assert hit.path == "agent-memory/global/user-preferences.md"
    assert (hit.scope, hit.scope_id, hit.type, hit.managed) == ("global", None, "user", True)
    assert hit.id == "2a6c4f81-93d7-4e05-b1a8-6f0e2d9c7b33"
    assert hit.updated == "2026-11-26T12:30:00Z" and hit.fresh and not hit.related
    assert 0 < hit.score <= 1 and hit.snippet


def test_scopes_filter(vault: Vault) -> None:
    hits = vault.recall("tests pytest duckdb", scopes=["project:atlas"], limit=20, now=NOW)
    assert hits and {(h.scope, h.scope_id) for h in hits} == {("project", "atlas")}
    hits = vault.recall("tests", scopes=["session,global"], limit=20, now=NOW)
    assert {h.scope for h in hits} <= {"session", "global"}
    with pytest.raises(ConfigError):
        parse_scopes(["nowhere"])


def test_metadata_candidates_include_runs_of_words() -> None:
    words = metadata_candidates("What is the Release process? tag:x")
    assert {"release", "process", "release-process", "release process"} <= set(words)
    assert "the" not in words and "tag" not in words


def test_only_stop_words(vault: Vault) -> None:
    assert vault.recall("the of and", now=NOW) == []
    with pytest.raises(QueryError):
        vault.recall("the of and", mode="words", now=NOW)


def test_expired_topics_are_never_returned(example_vault: Path) -> None:
    managed = example_vault / "agent-memory"
    files = {
        "session/s-1/zebra-session.md": ("session", "s-1", "project", "2026-11-01T00:00:00Z"),
        "session/s-1/zebra-fresh.md": ("session", "s-1", "project", "2026-11-25T00:00:00Z"),
        "project/atlas/zebra-old.md": ("project", "atlas", "reference", "2026-07-01T00:00:00Z"),
        "project/atlas/zebra-feedback.md": ("project", "atlas", "feedback", "2025-01-01T00:00:00Z"),
        "global/zebra-global.md": ("global", None, "project", "2024-01-01T00:00:00Z"),
    }
    for rel, (scope, scope_id, type_, updated) in files.items():
        path = managed / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        key = path.stem
        path.write_text(
            topic(
                key,
                scope=scope,
                scope_id=scope_id,
                type_=type_,
                updated=updated,
                text=f"The zebra crossing rule number {key}.",
            ),
            encoding="utf-8",
        )
    v = Vault(example_vault)
    v.reconcile()
    expected = {"zebra-fresh", "zebra-feedback", "zebra-global"}
    for mode in ("metadata-first", "words", "metadata"):
        query = "zebra " + " ".join(Path(r).stem for r in files)
        keys = {h.key for h in v.recall(query, mode=mode, limit=50, now=NOW)}  # type: ignore[arg-type]
        assert keys & set(map(lambda r: Path(r).stem, files)) == expected, mode
    keys = {h.key for h in v.recall("zebra crossing rule", limit=50, now=NOW, include_related=True)}
    assert "zebra-session" not in keys and "zebra-old" not in keys


def test_forgotten_topics_are_never_returned(vault: Vault) -> None:
    source = vault.root / "agent-memory/project/borealis/consumer-lag-alerting.md"
    trash = vault.root / "agent-memory/.trash/project/borealis/consumer-lag-alerting.md"
    trash.parent.mkdir(parents=True)
    shutil.move(source, trash)
    vault.reconcile()
    hits = vault.recall("kafka consumer lag alerting", limit=50, now=NOW, include_related=True)
    assert "consumer-lag-alerting" not in {h.key for h in hits}


def test_each_recall_records_usage_and_usage_sort_uses_it(vault: Vault) -> None:
    question = "duckdb tests"
    baseline = [h.key for h in vault.recall(question, limit=6, now=NOW)]
    least = baseline[-1]
    for _ in range(5):
        vault.recall(least, mode="metadata", limit=1, now=NOW)
    counts = usage.read_usage(vault.config.state_dir)
    ids = {h.key: h.id for h in vault.recall(question, limit=6, now=NOW)}
    assert counts[ids[least]].count >= 5
    by_usage = vault.recall(question, limit=6, sort="usage", now=NOW)
    assert by_usage[0].key == least
    lines = (vault.config.state_dir / "usage.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["at"] == "2026-11-29T12:00:00Z" for line in lines)


def test_recency_sort(vault: Vault) -> None:
    hits = vault.recall("duckdb tests", limit=6, sort="recency", now=NOW)
    stamps = [datetime.fromisoformat(h.updated.replace("Z", "+00:00")) for h in hits if h.updated]
    assert stamps == sorted(stamps, reverse=True)


def test_fresh_flips_when_a_file_changes_without_reconcile(vault: Vault) -> None:
    (hit,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert hit.fresh
    path = vault.root / hit.path
    path.write_text(path.read_text(encoding="utf-8") + "\nEdited in Obsidian.\n", "utf-8")
    (stale,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert not stale.fresh
    vault.reconcile()
    (again,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert again.fresh


def test_related_notes_are_capped_and_marked(vault: Vault) -> None:
    hits = vault.recall("build-and-test-commands", mode="metadata", include_related=True, now=NOW)
    direct = [h for h in hits if not h.related]
    related = [h for h in hits if h.related]
    assert [h.key for h in direct] == ["build-and-test-commands"]
    assert {h.title for h in related} == {
        "Runbook: running the Atlas tests",
        "Python packaging with uv",
    }
    assert all(h.related_to == "build-and-test-commands" for h in related)
    many = vault.recall("duckdb tests release", limit=10, include_related=True, now=NOW)
    assert sum(h.related for h in many) <= 5


def test_cli_recall_json(vault: Vault) -> None:
    done = run_cli("recall", "kafka lag", "--vault", str(vault.root), "--json", "--limit", "2")
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True and len(envelope["data"]) <= 2
    first = envelope["data"][0]
    assert first["key"] == "consumer-lag-alerting"
    assert set(first) >= {
        "id",
        "key",
        "scope",
        "scope_id",
        "path",
        "title",
        "snippet",
        "score",
        "updated",
        "fresh",
        "related",
    }
    bad = run_cli("recall", "the", "--mode", "words", "--vault", str(vault.root), "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "query_invalid"

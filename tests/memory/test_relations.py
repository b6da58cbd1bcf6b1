"""Relationships: link edges, suggestions, human decisions in the vault, staleness, See Also."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import published
from vaultmem.core.config import Config, load_config
from vaultmem.core.errors import InvalidArgumentError, NotFoundError
from vaultmem.index.reconcile import reconcile
from vaultmem.memory import relations
from vaultmem.memory import topic_store as memory
from vaultmem.note.topics import SEE_ALSO_START

ATLAS = {"scope": "project", "scope_id": "atlas"}


@pytest.fixture
def config(example_vault: Path) -> Config:
    cfg = load_config(example_vault)
    reconcile(cfg)
    return cfg


def _by_pair(edges: list[relations.Edge]) -> dict[tuple[str, str, str], relations.Edge]:
    return {(e.source_path, e.type, e.target_path): e for e in edges}


def test_link_edges_come_from_properties_and_fields(config: Config) -> None:
    edges = _by_pair(relations.edges(config, suggest=False))
    edge = edges[
        (
            "Projects/Atlas/Release checklist.md",
            "supersedes",
            "Projects/Atlas/Release checklist (2025).md",
        )
    ]
    assert (edge.origin, edge.status) == ("link", "active")
    assert any(t == "decided-by" for _, t, _ in edges)  # an inline field's own name
    assert edge.id == relations.edge_id(edge.source_id, "supersedes", edge.target_id)


def test_suggestions_are_proposed_never_applied(config: Config) -> None:
    before = {p: p.read_bytes() for p in (config.root / "agent-memory").rglob("*.md")}
    proposed = relations.edges(config, status="proposed")
    assert proposed and all(e.origin == "suggested" for e in proposed)
    assert all(e.shared_terms for e in proposed)
    assert {p: p.read_bytes() for p in (config.root / "agent-memory").rglob("*.md")} == before


@pytest.mark.slow
def test_accept_renders_see_also_and_reject_is_final(config: Config) -> None:
    proposed = relations.edges(config, status="proposed")
    first, second = proposed[0], proposed[1]
    source_file = config.root / first.source_path
    human_lines = source_file.read_text().split("## See Also")[1]
    accepted = published(config, relations.accept(config, first.id))
    assert (accepted.status, accepted.origin) == ("active", "suggested")
    text = source_file.read_text()
    assert SEE_ALSO_START in text and first.target_path.removesuffix(".md") in text
    assert text.split("## See Also")[1].startswith(human_lines.rstrip("\n"))

    rejected = published(config, relations.reject(config, second.id))
    assert rejected.status == "rejected"
    assert second.id not in {e.id for e in relations.edges(config, status="proposed")}

    # A rebuild from nothing keeps every decision: they live in the vault, not the index.
    config.index_path.unlink()
    reconcile(config, rebuild=True)
    statuses = {e.id: e.status for e in relations.edges(config)}
    assert statuses[first.id] == "active" and statuses[second.id] == "rejected"
    assert second.id not in {e.id for e in relations.edges(config, status="proposed")}


@pytest.mark.slow
def test_relate_writes_a_readable_decision_and_goes_stale(config: Config) -> None:
    published(
        config,
        memory.store(config, "writer-rule", "Only the indexer writes the DuckDB file.", **ATLAS),
    )
    edge = published(
        config, relations.relate(config, "writer-rule", "duckdb-index-decision", "supersedes")
    )
    assert (edge.origin, edge.status, edge.type) == ("human", "active", "supersedes")
    note = (config.root / "agent-memory/_decisions.md").read_text()
    assert "| relate | supersedes | human | agent-memory/project/atlas/writer-rule.md |" in note
    assert relations.read_decisions(note)[-1].target_id == edge.target_id
    topic = (config.root / "agent-memory/project/atlas/writer-rule.md").read_text()
    assert "[[agent-memory/project/atlas/duckdb-index-decision|duckdb-index-decision]]" in topic

    # A person adds prose after the table: the next decision still lands in the table.
    (config.root / "agent-memory/_decisions.md").write_text(note + "\nDana: checked these.\n")
    published(config, relations.relate(config, "writer-rule", "release-process", "relates_to"))
    rows = relations.read_decisions((config.root / "agent-memory/_decisions.md").read_text())
    assert [r.type for r in rows] == ["supersedes", "relates_to"]

    time.sleep(1.1)  # timestamps have second precision
    published(config, memory.store(config, "writer-rule", "And the watcher too.", **ATLAS))
    stale = relations.edges(config, stale_only=True)
    assert {e.id for e in stale} >= {edge.id}
    topic = memory.get(config, "writer-rule").topic
    assert topic.latest == "And the watcher too."


def test_bad_requests(config: Config) -> None:
    with pytest.raises(InvalidArgumentError):
        published(
            config, relations.relate(config, "release-process", "release-process", "relates_to")
        )
    with pytest.raises(InvalidArgumentError):
        published(
            config, relations.relate(config, "release-process", "user-preferences", "Not A Type")
        )
    with pytest.raises(NotFoundError):
        published(config, relations.accept(config, "e-000000000000"))
    with pytest.raises(InvalidArgumentError):
        relations.edges(config, status="maybe")


def test_decisions_table_parsing_is_tolerant() -> None:
    text = (
        "# Memory decisions\n\n| when | decision | type | origin | source | target | source id |"
        " target id | source version |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| 2026-11-29T21:04:05Z | reject | relates_to | suggested | a\\|b.md | c.md | A | C | x |\n"
        "| garbage row |\n"
        "| 2026-11-29T21:04:06Z | shrug | relates_to | human | a | c | A | C | x |\n"
    )
    rows = relations.read_decisions(text)
    assert len(rows) == 1 and rows[0].source_path == "a|b.md" and rows[0].decision == "reject"

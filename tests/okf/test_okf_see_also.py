"""An OKF round trip keeps a topic's See Also edges and its timestamps (issue 27, item 18): an
edge whose target leaves the bundle was exported as plain text and stayed plain after import,
and import cut `updated` to whole seconds, before a `created` of the same second."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from vaultmem.core.config import init_vault
from vaultmem.note.properties import load_frontmatter, split_frontmatter
from vaultmem.okf.concept import parse_instant
from vaultmem.okf.validate import validate_bundle
from vaultmem.vault import Vault

NOW = datetime(2026, 12, 1, 23, 57, 10, 943000, tzinfo=UTC)


def _vault(root: Path) -> Vault:
    (root / "Knowledge").mkdir(parents=True)
    (root / "Knowledge" / "orders.md").write_text("# Orders table\n\nThe orders.\n", "utf-8")
    init_vault(root)
    vault = Vault(root)
    vault.reconcile()
    return vault


def _frontmatter(path: Path) -> dict[str, object]:
    block = split_frontmatter(path.read_text(encoding="utf-8"))
    assert block is not None
    return dict(load_frontmatter(block).data)


def _exported(tmp_path: Path) -> Path:
    vault = _vault(tmp_path / "first")
    vault.store("duckdb-index", "We use DuckDB.", scope="global", now=NOW)
    vault.store("parser-choice", "mistune parses Markdown.", scope="global", now=NOW)
    vault.store("work-fact", "A project fact.", scope="project", scope_id="work", now=NOW)
    for target in ("duckdb-index", "Knowledge/orders", "work-fact"):
        vault.relate("parser-choice", target)
    bundle = tmp_path / "bundle"
    vault.export_okf(bundle, scope="global")
    assert validate_bundle(bundle).errors == ()
    return bundle


def test_see_also_edges_leaving_the_bundle_come_back_as_links(tmp_path: Path) -> None:
    bundle = _exported(tmp_path)
    concept = _frontmatter(bundle / "parser-choice.md")
    relations = concept["vaultmem"]["relations"]  # type: ignore[index]
    assert {"type": "relates_to", "target": "Knowledge/orders", "via": "see_also",
            "text": "Orders table"} in relations  # fmt: skip
    other = _vault(tmp_path / "other")  # holds Knowledge/orders.md too
    report = other.import_okf(bundle, scope="global")
    assert report.rejected == () and report.imported == 2
    text = (tmp_path / "other/agent-memory/global/parser-choice.md").read_text("utf-8")
    assert "- [[Knowledge/orders|Orders table]] (relates_to)" in text
    assert "- [[agent-memory/project/work/work-fact|work-fact]] (relates_to)" in text
    _, links = other.links("parser-choice")
    targets = {link["target_path"] for link in links}
    assert {"Knowledge/orders.md", "agent-memory/global/duckdb-index.md"} <= targets
    again = tmp_path / "again"
    other.export_okf(again, scope="global")
    assert (again / "parser-choice.md").read_bytes() == (bundle / "parser-choice.md").read_bytes()


def test_import_keeps_the_instant_to_the_millisecond(tmp_path: Path) -> None:
    bundle = _exported(tmp_path)
    other = _vault(tmp_path / "other")
    other.import_okf(bundle, scope="global")
    fm = _frontmatter(tmp_path / "other/agent-memory/global/duckdb-index.md")
    assert fm["updated"] == fm["created"] == "2026-12-01T23:57:10.943Z"
    assert parse_instant(str(fm["updated"])) >= parse_instant(str(fm["created"]))
    assert "generated_at" not in fm["okf"]  # type: ignore[operator]


def test_imported_see_also_entries_survive_the_next_relate(tmp_path: Path) -> None:
    """`relate` renders a topic's See Also block from the decisions note; an imported topic's
    entries were in no decision, so the next `relate` of that topic dropped them. Import now
    records the entries it can resolve as decisions (edges here too), and rendering keeps an
    entry no decision governs (a target this vault does not hold) as written."""
    bundle = _exported(tmp_path)
    other = _vault(tmp_path / "other")
    other.import_okf(bundle, scope="global")
    topic = tmp_path / "other/agent-memory/global/parser-choice.md"
    edges = {(e.type, e.target_path, e.origin) for e in other.edges()}
    assert {("relates_to", "agent-memory/global/duckdb-index.md", "human"),
            ("relates_to", "Knowledge/orders.md", "human")} <= edges  # fmt: skip
    other.store("new-fact", "A fact made here.", scope="global")
    other.relate("parser-choice", "new-fact")
    text = topic.read_text("utf-8")
    for entry in (
        "- [[Knowledge/orders|Orders table]] (relates_to)",
        "- [[agent-memory/global/duckdb-index|duckdb-index]] (relates_to)",
        "- [[agent-memory/global/new-fact|new-fact]] (relates_to)",
        "- [[agent-memory/project/work/work-fact|work-fact]] (relates_to)",  # not held here
    ):
        assert entry in text
    # An adopted entry is an edge: rejecting it takes it out of the block, the rest stay.
    (duckdb,) = [e for e in other.edges() if e.target_path.endswith("duckdb-index.md")]
    other.reject(duckdb.id)
    text = topic.read_text("utf-8")
    assert "duckdb-index|" not in text and "work-fact|work-fact]] (relates_to)" in text
    # and the links go on through the next export and import
    again = tmp_path / "again"
    other.export_okf(again, scope="global")
    body = (again / "parser-choice.md").read_text("utf-8")
    assert "[new-fact](/new-fact.md) (relates_to)" in body
    third = _vault(tmp_path / "third")
    third.import_okf(again, scope="global")
    text = (tmp_path / "third/agent-memory/global/parser-choice.md").read_text("utf-8")
    assert "- [[agent-memory/global/new-fact|new-fact]] (relates_to)" in text
    assert "- [[agent-memory/project/work/work-fact|work-fact]] (relates_to)" in text
    assert "- [[Knowledge/orders|Orders table]] (relates_to)" in text


def test_a_field_link_leaving_the_bundle_comes_back_as_a_link(tmp_path: Path) -> None:
    """An inline field whose link leaves the bundle is plain text in the export's body
    (`blocks:: the work fact`); import made it a plain field, and the edge was gone."""
    vault = _vault(tmp_path / "first")
    vault.store("work-fact", "A project fact.", scope="project", scope_id="work", now=NOW)
    vault.store("field-topic", "Fields here.", scope="global", now=NOW)
    path = tmp_path / "first/agent-memory/global/field-topic.md"
    text = path.read_text("utf-8").replace(
        "Fields here.\n",
        "Fields here.\nblocks:: [[work-fact|the work fact]]\n"
        "See it (needs:: [[Knowledge/orders]]).\n",
    )
    path.write_text(text, "utf-8")
    vault.reconcile()
    bundle = tmp_path / "bundle"
    vault.export_okf(bundle, scope="global")
    exported = (bundle / "field-topic.md").read_text("utf-8")
    assert "blocks:: the work fact\n" in exported and "(needs:: Knowledge/orders)" in exported
    other = _vault(tmp_path / "other")  # holds Knowledge/orders.md too
    other.import_okf(bundle, scope="global")
    text = (tmp_path / "other/agent-memory/global/field-topic.md").read_text("utf-8")
    assert "blocks:: [[work-fact|the work fact]]\n" in text
    assert "(needs:: [[Knowledge/orders]])" in text
    edges = {(e.type, e.target_path) for e in other.edges()}
    assert ("needs", "Knowledge/orders.md") in edges

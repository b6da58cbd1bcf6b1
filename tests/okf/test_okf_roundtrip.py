"""OKF export and import: round trips, determinism, pruning, the validator on every export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import published, state_of
from vaultmem.adapters.cli import main
from vaultmem.core.config import init_vault, load_config
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.note.properties import load_frontmatter, split_frontmatter
from vaultmem.okf.bundle import read_bundle
from vaultmem.okf.export import export_bundle
from vaultmem.okf.ingest import import_bundle
from vaultmem.okf.validate import validate_bundle

THIRD_PARTY = Path(__file__).resolve().parents[1] / "vaults" / "okf-third-party"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _empty_vault(path: Path) -> Path:
    path.mkdir()
    init_vault(path)
    return path


def _valid(bundle: Path) -> None:
    report = validate_bundle(bundle)
    assert report.errors == (), report.errors
    assert report.concepts > 0


def _frontmatter(path: Path) -> dict[str, object]:
    block = split_frontmatter(path.read_text(encoding="utf-8"))
    assert block is not None
    return dict(load_frontmatter(block).data)


@pytest.mark.parametrize(("scope", "scope_id"), [("project", "atlas"), ("global", None)])
def test_export_import_export_is_byte_identical(
    example_vault: Path, tmp_path: Path, scope: str, scope_id: str | None
) -> None:
    first = tmp_path / "first"
    export_bundle(load_config(example_vault), first, scope=scope, scope_id=scope_id)
    _valid(first)
    other = load_config(_empty_vault(tmp_path / "other"))
    report = published(other, import_bundle(other, first, scope=scope, scope_id=scope_id))
    assert report.rejected == ()
    assert report.imported == len(
        [p for p in _tree(first) if not p.endswith(("index.md", "log.md"))]
    )
    second = tmp_path / "second"
    export_bundle(other, second, scope=scope, scope_id=scope_id)
    assert _tree(first) == _tree(second)


def test_example_vault_exports_without_validator_errors(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    for name, options in {
        "topics": {},
        "atlas": {"folder": "Projects/Atlas"},
        "knowledge": {"folder": "Knowledge"},
        "journal": {"folder": "Journal", "include_private": True},
    }.items():
        out = tmp_path / name
        export_bundle(config, out, **options)  # type: ignore[arg-type]
        _valid(out)
        root_index = (out / "index.md").read_text(encoding="utf-8")
        assert root_index.startswith('---\nokf_version: "0.2"\n---\n')
        assert "%%" not in "".join(p.decode() for p in _tree(out).values())


def test_folder_export_rewrites_links_and_keeps_what_vaultmem_knows(
    example_vault: Path, tmp_path: Path
) -> None:
    out = tmp_path / "atlas"
    report = export_bundle(load_config(example_vault), out, folder="Projects/Atlas")
    assert report.links_rewritten > 0 and report.links_outside > 0
    text = (out / "Overview.md").read_text(encoding="utf-8")
    assert "[[" not in text.split("---", 2)[2]
    assert "[the architecture note](/Architecture.md)" in text
    assert "(/Architecture.md#Storage%20layer)" in text
    fm = _frontmatter(out / "Overview.md")
    assert fm["type"] == "Note"
    assert fm["aliases"] == ["Atlas", "Project Atlas"]  # unknown keys carried over
    block = fm["vaultmem"]
    assert isinstance(block, dict)
    assert block["properties"] == {"status": "active"}  # not an OKF status
    assert {"type": "related", "target": "/Architecture.md", "via": "property"} in block[
        "relations"
    ]
    assert {"type": "owner", "target": "Dana Whitfield", "via": "property"} in block["relations"]


def test_topic_fields_and_retention(example_vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    export_bundle(load_config(example_vault), out)
    fm = _frontmatter(out / "project" / "atlas" / "duckdb-index-decision.md")
    assert fm["generated"] == {"by": "vaultmem/0.1.0", "at": "2026-11-24T10:05:00Z"}
    assert fm["stale_after"] == "2027-02-22T10:05:00Z"  # project: 90 days
    assert fm["tags"] == ["duckdb", "architecture", "decision"]
    assert isinstance(fm["description"], str) and len(fm["description"]) <= 200
    feedback = _frontmatter(out / "global" / "code-review-feedback.md")
    assert "stale_after" not in feedback  # feedback never expires
    # the comment-form topic is exported in the current form
    old = (out / "project" / "atlas" / "release-process.md").read_text(encoding="utf-8")
    assert "<!--" not in old and "\n## 2026-09-14T08:20:00Z\n" in old
    assert _frontmatter(out / "project" / "atlas" / "release-process.md")["tags"][:2] == [
        "release",
        "ci",
    ]


def test_reviewed_note_is_verified(example_vault: Path, tmp_path: Path) -> None:
    note = example_vault / "Knowledge" / "DuckDB.md"
    note.write_text(
        note.read_text().replace(
            "aliases:", 'reviewed_by: dana\nreviewed_at: "2026-11-20T09:00:00Z"\naliases:'
        )
    )
    out = tmp_path / "k"
    export_bundle(load_config(example_vault), out, folder="Knowledge")
    fm = _frontmatter(out / "DuckDB.md")
    assert fm["verified"] == [{"by": "human:dana", "at": "2026-11-20T09:00:00Z"}]
    assert "reviewed_by" not in fm


def test_second_export_rewrites_no_file(example_vault: Path, tmp_path: Path) -> None:
    config = load_config(example_vault)
    for fmt, out in (
        ("dir", tmp_path / "d"),
        ("zip", tmp_path / "b.zip"),
        ("tar.gz", tmp_path / "b.tgz"),
    ):
        export_bundle(config, out, folder="Projects/Atlas", fmt=fmt)  # type: ignore[arg-type]
        files = [out] if out.is_file() else [p for p in out.rglob("*") if p.is_file()]
        before = {p: p.stat().st_mtime_ns for p in files}
        report = export_bundle(config, out, folder="Projects/Atlas", fmt=fmt)  # type: ignore[arg-type]
        assert report.written == ()
        assert {p: p.stat().st_mtime_ns for p in files} == before
    # archives hold the same files as the folder
    assert {f.path for f in read_bundle(tmp_path / "b.zip").files} == set(_tree(tmp_path / "d"))


def test_prune_removes_only_files_an_earlier_export_wrote(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    out = tmp_path / "b"
    export_bundle(config, out, folder="Projects/Atlas")
    mine = out / "notes-of-mine.md"
    mine.write_text("---\ntype: Note\n---\nhand-written\n")
    (example_vault / "Projects" / "Atlas" / "Meeting notes.md").unlink()
    export_bundle(config, out, folder="Projects/Atlas")
    assert (out / "Meeting notes.md").exists()  # no --prune: kept
    report = export_bundle(config, out, folder="Projects/Atlas", prune=True)
    assert report.pruned == ("Meeting notes.md",)
    assert not (out / "Meeting notes.md").exists()
    assert mine.exists()
    record = json.loads((state_of(example_vault) / "exports.json").read_text())
    assert "Meeting notes.md" not in record[str(out.resolve())]


def test_export_refuses_private_scopes_and_paths_inside_the_vault(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    with pytest.raises(InvalidArgumentError):
        export_bundle(config, example_vault / "out")
    with pytest.raises(InvalidArgumentError, match="private"):
        export_bundle(config, tmp_path / "j", folder="Journal")
    with pytest.raises(InvalidArgumentError, match="private"):
        export_bundle(config, tmp_path / "s", scope="session")


def test_secrets_are_skipped_or_redacted(example_vault: Path, tmp_path: Path) -> None:
    topic = example_vault / "agent-memory" / "global" / "user-preferences.md"
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    topic.write_text(topic.read_text().replace("Use pytest", f"Token {token}. Use pytest"))
    config = load_config(example_vault)
    out = tmp_path / "skip"
    report = export_bundle(config, out, scope="global")
    assert report.skipped == (
        {"path": "agent-memory/global/user-preferences.md", "patterns": ["github-token"]},
    )
    assert not (out / "user-preferences.md").exists()
    out = tmp_path / "redact"
    report = export_bundle(config, out, scope="global", redact_secrets=True)
    text = (out / "user-preferences.md").read_text()
    assert token not in text and "[redacted:github-token]" in text
    assert token not in json.dumps(report.to_dict())


def test_third_party_bundle_imports_without_loss(tmp_path: Path) -> None:
    vault = _empty_vault(tmp_path / "v")
    config = load_config(vault)
    report = published(
        config, import_bundle(config, THIRD_PARTY, scope="project", scope_id="sales")
    )
    assert report.rejected == ()
    assert report.imported == 4
    assert report.links_rewritten >= 5
    topics = vault / "agent-memory" / "project" / "sales"
    (orders_path,) = [p for p in topics.iterdir() if p.name.startswith("tables-orders-")]
    fm = _frontmatter(orders_path)
    assert fm["type"] == "reference" and fm["okf"]["type"] == "Reference"  # type: ignore[index]
    assert fm["okf"]["generated_at"] == "2026-06-30T14:00:00+02:00"  # type: ignore[index]
    assert fm["updated"] == "2026-06-30T12:00:00Z"
    assert fm["source"] == "dbt-okf/1.4.0"
    assert fm["verified"] == {"by": "human:ana", "at": "2026-07-01T08:30:00Z"}
    assert fm["sources"][0]["last_modified"] == "2026-06-29T17:45:00+02:00"  # type: ignore[index]
    assert fm["owner_team"] == "data-eng"
    assert fm["x-lineage"] == {"upstream": ["raw.orders", "raw.customers"]}
    assert fm["resource"] == "bigquery://sales-prod/warehouse/orders"
    assert fm["tags"] == ["warehouse", "sales"]
    body = orders_path.read_text()
    assert "[^model]: Declared in the dbt model." in body
    assert "[[metrics-revenue-" in body and "#Definition|Revenue]]" in body
    assert "\\|" in body.split("| amount |")[1].split("\n")[0]  # wikilink inside a table
    assert isinstance(fm["relates_to"], list) and len(fm["relates_to"]) == 2
    revenue = _frontmatter(next(topics.glob("metrics-revenue-*.md")))
    assert revenue["updated"] == "2026-05-01T09:00:00Z"  # v0.1 `timestamp`
    assert revenue["custom"] == {"nested": [1, 2], "flag": True}
    assert revenue["tags"] == ["revenue"]
    attested = _frontmatter(next(topics.glob("computations-daily-revenue-*.md")))
    for name in ("runtime", "parameters", "computation", "executor", "attester"):
        assert name in attested
    assert attested["okf"]["type"] == "Attested Computation"  # type: ignore[index]
    assert len(list(topics.glob("odd-names-*.md"))) == 1

    # export → validate → import elsewhere → export: a fixed point after one cycle
    first = tmp_path / "first"
    export_bundle(config, first, scope="project", scope_id="sales")
    _valid(first)
    exported = _frontmatter(first / "tables" / "orders.md")
    assert exported["type"] == "Reference"
    assert exported["verified"] == [{"by": "human:ana", "at": "2026-07-01T08:30:00Z"}]
    assert exported["generated"]["at"] == "2026-06-30T14:00:00+02:00"  # type: ignore[index]
    assert exported["status"] == "stable"
    other = load_config(_empty_vault(tmp_path / "w"))
    published(other, import_bundle(other, first, scope="project", scope_id="sales"))
    second = tmp_path / "second"
    export_bundle(other, second, scope="project", scope_id="sales")
    assert _tree(first) == _tree(second)


@pytest.mark.slow
def test_conflicts_and_dry_run(tmp_path: Path) -> None:
    vault = _empty_vault(tmp_path / "v")
    config = load_config(vault)
    before = _tree(vault)
    report = published(config, import_bundle(config, THIRD_PARTY, scope="global", dry_run=True))
    assert report.imported == 4 and report.dry_run
    assert _tree(vault) == before
    published(config, import_bundle(config, THIRD_PARTY, scope="global"))
    again = published(config, import_bundle(config, THIRD_PARTY, scope="global"))
    assert again.skipped == 4 and again.imported == 0
    merged = published(config, import_bundle(config, THIRD_PARTY, scope="global", conflict="merge"))
    assert merged.skipped == 4  # the same observation is not appended twice
    topic = next((vault / "agent-memory" / "global").glob("metrics-revenue-*.md"))
    topic.write_text(topic.read_text().replace("not refunded", "not refunded, person's edit"))
    merged = published(config, import_bundle(config, THIRD_PARTY, scope="global", conflict="merge"))
    assert merged.merged == 1
    text = topic.read_text()
    assert "person's edit" in text and text.count("## 2026-05-01T09:00:00Z") == 2
    replaced = published(
        config, import_bundle(config, THIRD_PARTY, scope="global", conflict="replace")
    )
    assert replaced.replaced == 1 and "person's edit" not in topic.read_text()


def test_cli_export_import_validate(
    example_vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    assert (
        main(
            [
                "export",
                "okf",
                str(out),
                "--vault",
                str(example_vault),
                "--scope",
                "global",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["data"]["concepts"] == 2
    assert main(["validate", "okf", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["errors"] == 0
    other = _empty_vault(tmp_path / "o")
    assert (
        main(["import", "okf", str(out), "--vault", str(other), "--scope", "global", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["data"]["imported"] == 2
    assert (
        main(["import", "okf", str(out), "--vault", str(other), "--scope", "session", "--json"])
        == 1
    )
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "path_escape"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.md").write_text("no frontmatter\n")
    assert main(["validate", "okf", str(bad)]) == 1


def test_importing_leaves_the_bundle_untouched(tmp_path: Path) -> None:
    before = _tree(THIRD_PARTY)
    config = load_config(_empty_vault(tmp_path / "v"))
    published(config, import_bundle(config, THIRD_PARTY, scope="global"))
    assert _tree(THIRD_PARTY) == before


def test_merging_our_own_bundle_appends_only_missing_observations(
    example_vault: Path, tmp_path: Path
) -> None:
    """Merging an export into a vault that holds the same topics changes nothing; a topic
    that lacks one observation gets exactly that observation, with its own timestamp."""
    config = load_config(example_vault)
    bundle = tmp_path / "bundle"
    export_bundle(config, bundle, scope="project", scope_id="atlas")
    before = _tree(example_vault / "agent-memory")
    again = published(
        config, import_bundle(config, bundle, scope="project", scope_id="atlas", conflict="merge")
    )
    assert again.merged == 0
    assert _tree(example_vault / "agent-memory") == before

    topic = example_vault / "agent-memory/project/atlas/build-and-test-commands.md"
    text = topic.read_text(encoding="utf-8")
    last = text.rindex("\n## 20")
    end = text.find("\n## ", last + 1)
    trimmed = text[:last] + (text[end:] if end != -1 else "\n")
    topic.write_text(trimmed, encoding="utf-8")
    merged = published(
        config, import_bundle(config, bundle, scope="project", scope_id="atlas", conflict="merge")
    )
    assert merged.merged == 1
    restored = topic.read_text(encoding="utf-8")
    stamp = text[last + 4 : text.index("\n", last + 1)]
    assert restored.count(f"## {stamp}") == 1
    assert "\\##" not in restored  # no escaped copy of the whole bundle body

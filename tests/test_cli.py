"""Every command as a real subprocess on a copy of example-vault: exit codes, the JSON envelope,
error codes and hints, and how the vault is found."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE_VAULT = Path(__file__).resolve().parent.parent / "example-vault"


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    base.update({"COLUMNS": "200", "NO_COLOR": "1"}, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        cwd=cwd,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(*args: str, **kw: Any) -> Any:
    """Run a command with --json; it must exit 0 and print the success envelope."""
    done = run(*args, "--json", **kw)
    assert done.returncode == 0, done.stderr + done.stdout
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True and set(envelope) == {"ok", "data"}
    return envelope["data"]


def fails(code: str, *args: str, **kw: Any) -> dict[str, Any]:
    """Run a command with --json; it must exit 1 and print the error envelope with `code`."""
    done = run(*args, "--json", **kw)
    assert done.returncode == 1, done.stderr + done.stdout
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is False and set(envelope) == {"ok", "error"}
    error: dict[str, Any] = envelope["error"]
    assert {"code", "message", "hint"} <= set(error)
    assert error["code"] == code, error
    assert error["message"] and error["hint"]
    return error


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One reconciled copy of example-vault, shared by the read-only commands."""
    target = tmp_path_factory.mktemp("cli") / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns("index.duckdb*"))
    data = ok("reconcile", "--vault", str(target))
    assert (data["added"], data["notes"], data["problems"]) == (30, 30, 1)
    return str(target)


# -- writing commands ------------------------------------------------------------------------------


def test_init_reconcile_rebuild(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Plan.md").write_text("# Plan\n[[Missing]]\n", encoding="utf-8")
    data = ok("init", str(vault), "--map", "Projects=project:p", "--map", "agent-memory=project:p")
    assert data["managed_folder"] == "agent-memory"
    assert data["mappings"] == [
        {"folder": "Projects", "scope": "project", "scope_id": "p"},
        {"folder": "agent-memory", "scope": "project", "scope_id": "p"},
    ]
    assert (vault / ".vaultmem" / "config.toml").is_file() and (vault / "agent-memory").is_dir()

    report = ok("reconcile", "--vault", str(vault))
    expected = {"mode", "added", "changed", "removed", "renamed", "unchanged", "touched"}
    assert expected | {"problems", "notes", "duration_s", "warnings"} == set(report)
    assert (report["mode"], report["added"], report["notes"]) == ("full", 1, 1)
    rebuilt = ok("rebuild", "--vault", str(vault))
    assert (rebuilt["mode"], rebuilt["added"], rebuilt["notes"]) == ("rebuild", 1, 1)

    text = run("reconcile", "--vault", str(vault))
    assert text.returncode == 0
    assert text.stdout.startswith("full: 1 notes — 0 added, 0 changed, 0 removed, 0 renamed")

    exists = fails("config_invalid", "init", str(vault))
    assert "config" in exists["message"].lower()
    bad_map = fails("config_invalid", "init", str(vault), "--force", "--map", "Projects=nowhere")
    assert "--map" in bad_map["message"]


# -- read commands ---------------------------------------------------------------------------------


def test_status(built: str) -> None:
    data = ok("status", "--vault", built)
    assert data["notes"] == 30
    assert data["scopes"] == {"global": 11, "project": 14, "session": 5}
    assert data["problems"] == 1 and data["changed_since_last_run"] == 0
    assert data["index_bytes"] > 0 and data["links"] > data["unresolved_links"] > 0
    assert {"folder", "scope", "scope_id", "notes"} == set(data["folders"][0])
    assert sum(f["notes"] for f in data["folders"]) == 30
    assert data["last_run"]["mode"] == "full" and data["last_run"]["started"].endswith("Z")
    text = run("status", "--vault", built)
    assert text.returncode == 0 and "30 notes" in text.stdout


def test_problems(built: str) -> None:
    rows = ok("problems", "--vault", built)
    assert rows == [
        {
            "path": "Journal/2026-11-26.md",
            "code": "frontmatter_invalid",
            "severity": "error",
            "message": rows[0]["message"],
            "line": 3,
        }
    ]


def test_show(built: str) -> None:
    data = ok("show", "DuckDB", "--vault", built)
    assert set(data) == {
        "note", "aliases", "tags", "headings", "blocks", "links_out", "backlinks", "problems"
    }  # fmt: skip
    assert data["note"]["path"] == "Knowledge/DuckDB.md"
    assert data["note"]["scope"] == "global" and data["note"]["frontmatter_status"] == "valid"
    assert data["headings"][0] == {"level": 1, "text": "DuckDB", "line": 5}
    # By path, by alias and by id: the same note.
    by_path = ok("show", "Projects/Atlas/Overview.md", "--vault", built)
    assert by_path["note"]["path"] == "Projects/Atlas/Overview.md" and by_path["aliases"]
    assert ok("show", by_path["note"]["id"], "--vault", built)["note"]["path"] == (
        "Projects/Atlas/Overview.md"
    )
    text = run("show", "DuckDB", "--vault", built)
    assert text.returncode == 0 and "Knowledge/DuckDB.md" in text.stdout


def test_links_and_backlinks(built: str) -> None:
    data = ok("links", "Projects/Atlas/Architecture.md", "--vault", built)
    assert data["note"]["path"] == "Projects/Atlas/Architecture.md"
    first = data["links"][0]
    assert first["target_path"] == "attachments/atlas-architecture.png" and first["embed"]
    assert {"kind", "raw", "subpath", "subpath_found", "line", "target_title"} <= set(first)
    found = {(r["raw"], r["subpath_found"]) for r in data["links"]}
    assert ("[[Decision log#^duckdb-choice]]", True) in found

    back = ok("backlinks", "DuckDB", "--vault", built)
    assert back["note"]["path"] == "Knowledge/DuckDB.md"
    assert {r["target_path"] for r in back["backlinks"]} == {"Knowledge/DuckDB.md"}
    assert "Projects/Atlas/Architecture.md" in {r["source_path"] for r in back["backlinks"]}
    assert run("backlinks", "DuckDB", "--vault", built).returncode == 0


def test_unresolved(built: str) -> None:
    rows = ok("unresolved", "--vault", built)
    assert rows[0] == {
        "target": "Capacity planning",
        "links": 3,
        "sources": [
            "Journal/2026-11-25.md",
            "Projects/Atlas/Meeting notes.md",
            "Projects/Borealis/Overview.md",
        ],
    }
    assert [r["target"] for r in rows] == ["Capacity planning", "Style guide for runbooks"]


def test_sql(built: str) -> None:
    data = ok(
        "sql", "SELECT scope, count(*) AS n FROM notes GROUP BY 1 ORDER BY 1", "--vault", built
    )
    assert data == {
        "columns": ["scope", "n"],
        "rows": [["global", 11], ["project", 14], ["session", 5]],
    }
    limited = ok("sql", "SELECT path FROM notes", "--vault", built, "--limit", "2")
    assert len(limited["rows"]) == 2
    for statement in ("DELETE FROM notes", "COPY notes TO 'stolen.csv'"):
        fails("query_invalid", "sql", statement, "--vault", built)
    assert not (Path(built) / "stolen.csv").exists()


def test_parse(built: str) -> None:
    data = ok("parse", "Journal/2026-11-26.md", "--vault", built)
    assert data["note"]["path"] == "Journal/2026-11-26.md"
    assert data["note"]["frontmatter_status"] == "invalid"
    assert [p["code"] for p in data["problems"]] == ["frontmatter_invalid"]
    assert all("resolved" in link for link in data["note"]["links"])
    fails("not_found", "parse", "Nope.md", "--vault", built)


def test_search(built: str) -> None:
    hits = ok("search", "duckdb index", "--vault", built, "--limit", "3")
    assert 0 < len(hits) <= 3
    assert {"path", "title", "scope", "score", "snippet", "line"} <= set(hits[0])
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    fails("query_invalid", "search", "", "--vault", built)


# -- errors ----------------------------------------------------------------------------------------


def test_unknown_note(built: str) -> None:
    error = fails("not_found", "links", "No such note", "--vault", built)
    assert "No such note" in error["message"]


@pytest.mark.parametrize("name", ["Meeting notes", "Overview"])
def test_ambiguous_name_lists_candidates(built: str, name: str) -> None:
    error = fails("ambiguous", "show", name, "--vault", built)
    assert error["candidates"] == [f"Projects/Atlas/{name}.md", f"Projects/Borealis/{name}.md"]
    text = run("show", name, "--vault", built)
    assert text.returncode == 1 and text.stdout == ""
    assert text.stderr.startswith("Error:")
    assert f"Projects/Atlas/{name}.md" in text.stderr and "Hint:" in text.stderr


def test_no_vault(tmp_path: Path) -> None:
    error = fails("vault_not_found", "status", cwd=tmp_path)
    assert "VAULTMEM_VAULT" in error["hint"]
    text = run("status", cwd=tmp_path)
    assert text.returncode == 1
    assert text.stderr.startswith("Error: No vault found") and "Hint:" in text.stderr


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    (tmp_path / ".vaultmem").mkdir()
    (tmp_path / ".vaultmem" / "config.toml").write_text("max_note_bytes = -5\n", encoding="utf-8")
    error = fails("config_invalid", "reconcile", "--vault", str(tmp_path))
    assert "max_note_bytes" in error["message"]
    text = run("status", "--vault", str(tmp_path))
    assert text.returncode == 1 and "max_note_bytes" in text.stderr and "Hint:" in text.stderr


def test_index_missing(tmp_path: Path) -> None:
    (tmp_path / ".vaultmem").mkdir()
    error = fails("index_unavailable", "status", "--vault", str(tmp_path))
    assert "reconcile" in error["hint"]


def test_usage_error_exits_2(built: str) -> None:
    assert run("show", "--vault", built).returncode == 2
    assert run("unresolved", "--limit", "0", "--vault", built).returncode == 2


# -- finding the vault -----------------------------------------------------------------------------


def test_vault_from_environment_and_from_cwd(built: str, tmp_path: Path) -> None:
    data = ok("status", cwd=tmp_path, env={"VAULTMEM_VAULT": built})
    assert data["notes"] == 30
    inside = Path(built) / "Projects" / "Atlas"
    assert ok("status", cwd=inside)["notes"] == 30
    # --vault beats the environment.
    fails(
        "vault_not_found",
        "status",
        "--vault",
        str(tmp_path / "gone"),
        env={"VAULTMEM_VAULT": built},
    )
    fails("vault_not_found", "status", cwd=tmp_path, env={"VAULTMEM_VAULT": str(tmp_path / "x")})


def test_version() -> None:
    done = run("version")
    assert done.returncode == 0 and done.stdout.startswith("vaultmem ")

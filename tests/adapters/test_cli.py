"""The command line on a copy of example-vault. Most commands run in-process through `main(argv)`
(stdout and stderr captured); a few run as real subprocesses where the process boundary is the
point: exit codes, streams, colours and what a pipe receives."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vaultmem.adapters import cli as cli_module
from vaultmem.adapters import commands
from vaultmem.adapters.cli import main

EXAMPLE_VAULT = Path(__file__).resolve().parents[2] / "example-vault"


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A real `vaultmem` process (for exit codes, streams and terminal behaviour)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }
    base.update({"COLUMNS": "200", "NO_COLOR": "1"}, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        cwd=cwd,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


class Cli:
    """`main(argv)` in this process, with its exit code, stdout and stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(args))
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def ok(self, *args: str) -> Any:
        """With --json: exit 0 and the success envelope; returns its data."""
        code, out, err = self(*args, "--json")
        assert code == 0, err + out
        envelope = json.loads(out)
        assert envelope["ok"] is True and set(envelope) == {"ok", "data"}
        return envelope["data"]

    def fails(self, code: str, *args: str, exit_code: int = 1) -> dict[str, Any]:
        """With --json: exactly one error envelope with `code` on stdout, nothing on stderr."""
        status, out, err = self(*args, "--json")
        assert status == exit_code, err + out
        assert out.count("\n") == 1 and err == "", (out, err)
        envelope = json.loads(out)
        assert envelope["ok"] is False and set(envelope) == {"ok", "error"}
        error: dict[str, Any] = envelope["error"]
        assert error["code"] == code, error
        assert error["message"] and error["hint"]
        return error

    def usage(self, *args: str) -> dict[str, Any]:
        return self.fails("invalid_argument", *args, exit_code=2)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One reconciled copy of example-vault, shared by the read-only commands."""
    target = tmp_path_factory.mktemp("cli") / "example-vault"
    shutil.copytree(EXAMPLE_VAULT, target, ignore=shutil.ignore_patterns("index.duckdb*"))
    done = run("reconcile", "--vault", str(target), "--json")
    data = json.loads(done.stdout)["data"]
    assert (data["added"], data["notes"], data["problems"]) == (30, 30, 2)
    return str(target)


# -- writing commands ------------------------------------------------------------------------------


def test_init_reconcile_rebuild(cli: Cli, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Plan.md").write_text("# Plan\n[[Missing]]\n", encoding="utf-8")
    data = cli.ok(
        "init", str(vault), "--map", "Projects=project:p", "--map", "agent-memory=project:p"
    )
    assert data["managed_folder"] == "agent-memory" and data["warnings"] == []
    assert data["mappings"] == [
        {"folder": "Projects", "scope": "project", "scope_id": "p"},
        {"folder": "agent-memory", "scope": "project", "scope_id": "p"},
    ]
    assert (vault / ".vaultmem" / "config.toml").is_file() and (vault / "agent-memory").is_dir()

    report = cli.ok("reconcile", "--vault", str(vault))
    expected = {"mode", "added", "changed", "removed", "renamed", "unchanged", "touched"}
    assert expected | {"problems", "notes", "duration_s", "warnings"} | {
        "outside_mapping",
        "outside_folders",
    } == set(report)
    assert (report["mode"], report["added"], report["notes"]) == ("full", 1, 1)
    rebuilt = cli.ok("rebuild", "--vault", str(vault))
    assert (rebuilt["mode"], rebuilt["added"], rebuilt["notes"]) == ("rebuild", 1, 1)

    code, out, _ = cli("reconcile", "--vault", str(vault))
    assert code == 0
    # Singular where it is one: "1 note", "0 problems".
    assert out.startswith("full: 1 note — 0 added, 0 changed, 0 removed, 0 renamed")
    assert "; 0 problems;" in out

    exists = cli.fails("config_invalid", "init", str(vault))
    assert "config" in exists["message"].lower()
    # `--vault DIR`, as every other command takes it, names the same folder as DIR
    again = cli.fails("config_invalid", "init", "--vault", str(vault))
    assert again["message"] == exists["message"]
    other = tmp_path / "other"
    twice = cli.usage("init", str(other), "--vault", str(vault))
    assert str(other) in twice["message"] and not other.exists()
    other.mkdir()
    assert cli.ok("init", "--vault", str(other))["vault"] == str(other)
    assert (other / ".vaultmem" / "config.toml").is_file()
    bad_map = cli.usage("init", str(vault), "--force", "--map", "Projects=nowhere")
    assert "--map" in bad_map["message"]


def test_reconcile_of_named_paths_looks_at_those_alone(cli: Cli, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    cli.ok("init", str(vault))
    cli.ok("reconcile", "--vault", str(vault))
    (vault / "Projects" / "Plan.md").write_text("# Plan\n\nedited\n", encoding="utf-8")
    (vault / "Other.md").write_text("# Other\n", encoding="utf-8")  # not named: not seen
    named = cli.ok("reconcile", "--vault", str(vault), "--path", "Projects/Plan.md")
    assert (named["mode"], named["changed"], named["added"], named["notes"]) == ("paths", 1, 0, 1)
    absolute = str(vault / "Other.md")
    assert cli.ok("reconcile", "--vault", str(vault), "--path", absolute)["added"] == 1
    for outside in ("../x.md", str(tmp_path / "x.md"), "."):
        refused = cli.usage("reconcile", "--vault", str(vault), "--path", outside)
        assert "--path" in refused["message"]


def test_init_as_the_readme_prints_it(cli: Cli, tmp_path: Path) -> None:
    """`vaultmem init ~/Notes --map Projects=project:work --map Knowledge=global` works: the
    managed folder gets a mapping of its own, and a missing mapped folder is a warning."""
    notes = tmp_path / "Notes"
    (notes / "Projects").mkdir(parents=True)
    (notes / "Projects" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    data = cli.ok("init", str(notes), "--map", "Projects=project:work", "--map", "Knowledge=global")
    folders = {m["folder"]: m["scope"] for m in data["mappings"]}
    assert folders == {"Projects": "project", "Knowledge": "global", "agent-memory": "project"}
    assert any("--map agent-memory=" in w for w in data["warnings"])
    assert any("Knowledge/ does not exist" in w for w in data["warnings"])
    assert cli.ok("reconcile", "--vault", str(notes))["notes"] == 1
    # Text mode prints the warnings on stderr and the next step on stdout.
    code, out, err = cli("init", str(notes), "--force", "--map", "Knowledge=global")
    assert code == 0 and "Knowledge/ does not exist" in err and "vaultmem reconcile" in out


def test_reconcile_refuses_a_folder_that_is_no_vault(cli: Cli, tmp_path: Path) -> None:
    error = cli.fails("vault_not_found", "reconcile", "--vault", str(tmp_path))
    assert "neither a vaultmem vault" in error["message"] and "vaultmem init" in error["hint"]
    assert not (tmp_path / ".vaultmem").exists()
    (tmp_path / ".obsidian").mkdir()  # an Obsidian vault is fine without init
    assert cli.ok("reconcile", "--vault", str(tmp_path))["notes"] == 0


def test_store_reads_stdin_and_splits_tags(
    cli: Cli, example_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("The staging deploy needs VPN access."))
    data = cli.ok(
        "store", "staging-vpn", "--vault", str(example_vault), "--scope-id", "atlas",
        "--tags", "ops,deploy", "--tags", "vpn",
    )  # fmt: skip
    assert data["key"] == "staging-vpn" and data["created"] is True
    got = cli.ok("get", "staging-vpn", "--vault", str(example_vault))
    assert got["tags"] == ["ops", "deploy", "vpn"]
    assert "VPN access" in got["observations"][0]["text"]
    bad = cli.usage("store", "Bad_Key", "x", "--vault", str(example_vault))
    assert "KEY" in bad["message"]


# -- read commands ---------------------------------------------------------------------------------


def test_status(cli: Cli, built: str) -> None:
    data = cli.ok("status", "--vault", built)
    assert data["notes"] == 30
    assert data["scopes"] == {"global": 11, "project": 14, "session": 5}
    assert data["problems"] == 2 and data["changed_since_last_run"] == 0
    assert data["index_bytes"] > 0 and data["links"] > data["unresolved_links"] > 0
    assert {"folder", "scope", "scope_id", "notes"} == set(data["folders"][0])
    assert sum(f["notes"] for f in data["folders"]) == 30
    assert data["last_run"]["mode"] == "full" and data["last_run"]["started"].endswith("Z")
    code, out, _ = cli("status", "--vault", built)
    assert code == 0 and "30 notes" in out and "2 problems;" in out


def test_problems(cli: Cli, built: str) -> None:
    rows = cli.ok("problems", "--vault", built)
    assert rows == [
        {
            "path": "Journal/2026-11-26.md",
            "code": "frontmatter_invalid",
            "severity": "error",
            "message": rows[0]["message"],
            "line": 3,
        },
        {  # the example vault's Syncthing copy, left out of the index (issue 29)
            "path": "Knowledge/Git workflow.sync-conflict-20261120-101500-ABCDEFG.md",
            "code": "conflict_copy",
            "severity": "warning",
            "message": rows[1]["message"],
            "line": None,
        },
    ]
    code, out, _ = cli("problems", "--vault", built, "--code", "file_binary")
    assert code == 0 and out.startswith("No problems")
    cli.usage("problems", "--vault", built, "--code", "no_such_code")


def test_show(cli: Cli, built: str) -> None:
    data = cli.ok("show", "DuckDB", "--vault", built)
    assert set(data) == {
        "note", "aliases", "tags", "headings", "blocks", "links_out", "backlinks", "problems"
    }  # fmt: skip
    assert data["note"]["path"] == "Knowledge/DuckDB.md"
    assert data["note"]["scope"] == "global" and data["note"]["frontmatter_status"] == "valid"
    assert data["headings"][0] == {"level": 1, "text": "DuckDB", "line": 5}
    by_path = cli.ok("show", "Projects/Atlas/Overview.md", "--vault", built)
    assert by_path["note"]["path"] == "Projects/Atlas/Overview.md" and by_path["aliases"]
    assert cli.ok("show", by_path["note"]["id"], "--vault", built)["note"]["path"] == (
        "Projects/Atlas/Overview.md"
    )
    code, out, _ = cli("show", "DuckDB", "--vault", built)
    assert code == 0 and "Knowledge/DuckDB.md" in out


def test_user_text_is_never_rich_markup(cli: Cli, built: str) -> None:
    code, _, err = cli("show", "[bold]x", "--vault", built)
    assert code == 1 and "'[bold]x'" in err


def test_links_and_backlinks(cli: Cli, built: str) -> None:
    data = cli.ok("links", "Projects/Atlas/Architecture.md", "--vault", built)
    assert data["note"]["path"] == "Projects/Atlas/Architecture.md"
    assert data["direction"] == "outgoing"
    first = data["links"][0]
    assert first["target_path"] == "attachments/atlas-architecture.png" and first["embed"]
    assert {"kind", "raw", "subpath", "subpath_found", "line", "target_title"} <= set(first)
    found = {(r["raw"], r["subpath_found"]) for r in data["links"]}
    assert ("[[Decision log#^duckdb-choice]]", True) in found

    back = cli.ok("backlinks", "DuckDB", "--vault", built)
    assert back["note"]["path"] == "Knowledge/DuckDB.md"
    assert {r["target_path"] for r in back["backlinks"]} == {"Knowledge/DuckDB.md"}
    assert "Projects/Atlas/Architecture.md" in {r["source_path"] for r in back["backlinks"]}
    same = cli.ok("links", "DuckDB", "--direction", "backlinks", "--vault", built)
    assert same["links"] == back["backlinks"]
    near = cli.ok("links", "DuckDB", "--direction", "neighbours", "--depth", "2", "--vault", built)
    assert near["links"] and {n["depth"] for n in near["links"]} <= {1, 2}
    cli.usage("links", "DuckDB", "--depth", "9", "--vault", built)


def test_unresolved(cli: Cli, built: str) -> None:
    rows = cli.ok("unresolved", "--vault", built)
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


def test_parse_prints_its_model_as_json(cli: Cli, built: str) -> None:
    data = cli.ok("parse", "Journal/2026-11-26.md", "--vault", built)
    assert data["note"]["path"] == "Journal/2026-11-26.md"
    assert data["note"]["frontmatter_status"] == "invalid"
    assert [p["code"] for p in data["problems"]] == ["frontmatter_invalid"]
    assert all("resolved" in link for link in data["note"]["links"])
    cli.fails("not_found", "parse", "Nope.md", "--vault", built)
    code, out, _ = cli("parse", "Journal/2026-11-26.md", "--vault", built)
    assert code == 0 and json.loads(out) == data


def test_search(cli: Cli, built: str) -> None:
    hits = cli.ok("search", "duckdb index", "--vault", built, "--limit", "3")["hits"]
    assert 0 < len(hits) <= 3
    assert {"path", "title", "scope", "score", "snippet", "line"} <= set(hits[0])
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    cli.fails("query_invalid", "search", "the", "--vault", built)
    cli.usage("search", "", "--vault", built)
    code, out, _ = cli("search", "zzzqqq", "--vault", built)
    assert code == 0 and out == "No notes match.\n"


# -- sql -------------------------------------------------------------------------------------------


def test_sql(cli: Cli, built: str) -> None:
    data = cli.ok(
        "sql", "SELECT scope, count(*) AS n FROM notes GROUP BY 1 ORDER BY 1", "--vault", built
    )
    assert data == {
        "columns": ["scope", "n"],
        "rows": [["global", 11], ["project", 14], ["session", 5]],
        "truncated": False,
    }
    for statement in ("DELETE FROM notes", "COPY notes TO 'stolen.csv'"):
        cli.fails("query_invalid", "sql", statement, "--vault", built)
    assert not (Path(built) / "stolen.csv").exists()


def test_sql_takes_one_statement_and_says_when_it_cuts(cli: Cli, built: str) -> None:
    both = cli.fails("query_invalid", "sql", "SELECT 1; SELECT 2", "--vault", built)
    assert "exactly one" in both["message"]
    cli.usage("sql", "", "--vault", built)
    cut = cli.ok("sql", "SELECT path FROM notes", "--max-rows", "2", "--vault", built)
    assert len(cut["rows"]) == 2 and cut["truncated"] is True
    assert (
        cli.ok("sql", "SELECT path FROM notes", "--limit", "30", "--vault", built)["truncated"]
        is False
    )
    code, _, err = cli("sql", "SELECT path FROM notes", "--max-rows", "2", "--vault", built)
    assert code == 0 and "--max-rows" in err


def test_sql_parameters_and_formats(cli: Cli, built: str) -> None:
    query = "SELECT path, scope FROM notes WHERE scope = $s AND path LIKE $p ORDER BY path"
    args = ("sql", query, "-p", "s", "global", "--param", "p=Knowledge/D%", "--vault", built)
    assert cli.ok(*args)["rows"] == [["Knowledge/DuckDB.md", "global"]]
    code, out, _ = cli(*args, "--csv")
    assert code == 0 and out == "path,scope\nKnowledge/DuckDB.md,global\n"
    code, out, _ = cli(*args, "--tsv")
    assert out == "path\tscope\nKnowledge/DuckDB.md\tglobal\n"
    code, out, _ = cli(*args, "--jsonl")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"path": "Knowledge/DuckDB.md", "scope": "global"}
    ]
    cli.usage(*args, "--csv", "--tsv")
    cli.fails("query_invalid", "sql", "SELECT $missing", "--vault", built)


def test_sql_timeout_interrupts_a_slow_statement(cli: Cli, built: str) -> None:
    slow = "SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b"
    error = cli.fails("query_timeout", "sql", slow, "--timeout-s", "0.2", "--vault", built)
    assert "interrupted" in error["message"]
    # The connection was released: a writer gets the index right after.
    assert cli.ok("reconcile", "--vault", built)["notes"] == 30


# -- one error contract ---------------------------------------------------------------------------


def test_unknown_note(cli: Cli, built: str) -> None:
    error = cli.fails("not_found", "links", "No such note", "--vault", built)
    assert "No such note" in error["message"]


@pytest.mark.parametrize("name", ["Meeting notes", "Overview"])
def test_ambiguous_name_lists_candidates(cli: Cli, built: str, name: str) -> None:
    error = cli.fails("ambiguous", "show", name, "--vault", built)
    assert error["candidates"] == [f"Projects/Atlas/{name}.md", f"Projects/Borealis/{name}.md"]
    code, out, err = cli("show", name, "--vault", built)
    assert code == 1 and out == ""
    assert err.startswith("Error:")
    assert f"Projects/Atlas/{name}.md" in err and "Hint:" in err


def test_no_vault(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    error = cli.fails("vault_not_found", "status")
    assert "VAULTMEM_VAULT" in error["hint"]


def test_bad_config_names_the_key(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / ".vaultmem").mkdir()
    (tmp_path / ".vaultmem" / "config.toml").write_text("max_note_bytes = -5\n", encoding="utf-8")
    error = cli.fails("config_invalid", "reconcile", "--vault", str(tmp_path))
    assert "max_note_bytes" in error["message"]


def test_index_missing(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / ".vaultmem").mkdir()
    error = cli.fails("index_unavailable", "status", "--vault", str(tmp_path))
    assert "reconcile" in error["hint"]


@pytest.mark.parametrize(
    "args",
    [
        ("edges", "--status", "bogus"),
        ("export", "okf", "/tmp/x", "--format", "rar"),
        ("search", "duckdb", "--scope", "bogus"),
        ("recall", "duckdb", "--scope", "bogus"),
        ("recall", "duckdb", "--mode", "fuzzy"),
        ("context", "--budget-chars", "100"),
        ("unresolved", "--limit", "0"),
        ("search", "duckdb", "--since", "yesterday"),
        ("import", "okf", "/tmp/x", "--scope", "global", "--conflict", "maybe"),
        ("store", "k", "x", "--tags", "a b"),
        ("show", "DuckDB", "--no-such-option"),
        ("unresolved", "--limit", "many"),
        ("show",),
    ],
)
def test_every_usage_error_is_invalid_argument_exit_2(
    cli: Cli, built: str, args: tuple[str, ...]
) -> None:
    """A choice not offered, a value out of bounds, an unknown option or a missing argument: the
    same code and exit status wherever the check happens (the contract or the parser)."""
    error = cli.usage(*args, "--vault", built)
    assert "config.toml" not in error["hint"]


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("serch", "duckdb"), "See `vaultmem --help`."),
        (("--vault", "/tmp/v", "reconcile"), "See `vaultmem --help`."),
        (("search",), "See `vaultmem search --help`."),
        (("export", "okf", "/tmp/x", "--bogus"), "See `vaultmem export okf --help`."),
    ],
)
def test_a_usage_hint_names_only_a_real_command(cli: Cli, args: tuple[str, ...], hint: str) -> None:
    """A misspelt command or an option's value before the command is no command to ask help of."""
    assert cli.usage(*args)["hint"] == hint


def test_usage_errors_without_json_go_to_stderr(cli: Cli, built: str) -> None:
    code, out, err = cli("search", "duckdb", "--scope", "bogus", "--vault", built)
    assert code == 2 and out == "" and "'bogus' is not one of" in err


def test_an_os_error_is_an_envelope(cli: Cli, built: str) -> None:
    error = cli.fails("io_error", "export", "okf", "/proc/x", "--vault", built)
    assert "/proc/x" in error["message"]


def test_a_bug_is_an_envelope_not_a_traceback(
    cli: Cli, built: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vaultmem.vault import Vault

    def broken(self: Vault) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(Vault, "status", broken)
    error = cli.fails("internal_error", "status", "--vault", built)
    assert "RuntimeError: boom" in error["message"] and "bug" in error["hint"]


# -- conventions -------------------------------------------------------------------------------


def test_version_and_short_help(cli: Cli) -> None:
    for args in (["--version"], ["-V"], ["version"]):
        code, out, _ = cli(*args)
        assert code == 0 and out.startswith("vaultmem ")
    code, out, _ = cli("search", "-h")
    assert code == 0 and "Usage: vaultmem search" in out and "Examples" in out


def test_help_is_grouped_and_readable(cli: Cli) -> None:
    code, out, _ = cli("--help")
    assert code == 0
    for panel in ("Index", "Query", "Memory", "Agents", "OKF"):
        assert f"\n{panel}:\n" in out
    for op in cli_module.OPERATIONS:
        group, _, name = op.name.rpartition(" ")
        code, out, _ = cli(*([group] if group else []), name, "--help")
        assert code == 0, op.name
        # Readable metavars, no doc paths a pip install lacks, and the key rule printed whole.
        assert "<bool>" not in out and "<list" not in out and "<str>" not in out, op.name
        assert "docs/" not in out, op.name
    _, out, _ = cli("store", "--help")
    assert "1-60 lower-case letters" in out


def test_shell_completion() -> None:
    done = run(env={"_VAULTMEM_COMPLETE": "bash_complete", "COMP_WORDS": "vaultmem rec",
                    "COMP_CWORD": "1"})  # fmt: skip
    words = {line.partition(",")[2] for line in done.stdout.split()}
    assert done.returncode == 0 and words == {"recall", "recent", "reconcile"}
    script = run("--show-completion", env={"SHELL": "/bin/bash"})
    assert script.returncode == 0 and "_VAULTMEM_COMPLETE=bash_complete" in script.stdout


# -- process boundaries: exit codes, streams, terminals ----------------------------------------


def test_usage_error_exits_2_in_a_real_process(built: str) -> None:
    assert run("show", "--vault", built).returncode == 2
    bad = run("unresolved", "--limit", "0", "--vault", built, "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid_argument"
    assert "Traceback" not in bad.stderr


def test_errors_go_to_stderr_in_text_mode(tmp_path: Path) -> None:
    text = run("status", cwd=tmp_path)
    assert text.returncode == 1 and text.stdout == ""
    assert text.stderr.startswith("Error: No vault found") and "Hint:" in text.stderr


def test_a_pipe_gets_plain_tab_separated_lines(built: str) -> None:
    done = run("unresolved", "--vault", built, env={"COLUMNS": "40"})
    lines = done.stdout.splitlines()
    assert lines[0] == "target\tlinks\tfrom"
    assert lines[1].startswith("Capacity planning\t3\tJournal/2026-11-25.md, ")
    assert not any(ch in done.stdout for ch in "│─╭┃━")


def test_no_color_is_honoured(built: str) -> None:
    coloured = run("search", "duckdb", "--vault", built, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in coloured.stdout
    plain = run("search", "duckdb", "--vault", built, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.returncode == 0 and "\x1b[" not in plain.stdout and "DuckDB" in plain.stdout


# -- finding the vault -----------------------------------------------------------------------------


def test_vault_from_environment_and_from_cwd(
    cli: Cli, built: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VAULTMEM_VAULT", built)
    assert cli.ok("status")["notes"] == 30
    # --vault beats the environment.
    cli.fails("vault_not_found", "status", "--vault", str(tmp_path / "gone"))
    monkeypatch.setenv("VAULTMEM_VAULT", str(tmp_path / "x"))
    cli.fails("vault_not_found", "status")
    monkeypatch.delenv("VAULTMEM_VAULT")
    monkeypatch.chdir(Path(built) / "Projects" / "Atlas")
    assert cli.ok("status")["notes"] == 30


def test_every_command_is_generated_from_the_contract() -> None:
    import click

    group = cli_module.build_cli()
    with click.Context(group) as ctx:
        names = set(group.list_commands(ctx))
        okf = group.get_command(ctx, "export")
        assert isinstance(okf, click.Group) and okf.list_commands(ctx) == ["okf", "parquet"]
    top = {op.name.split(" ")[0] for op in commands.OPERATIONS}
    assert names == top | {"mcp"}


def _readme_block(heading: str) -> list[list[str]]:
    """The commands of the README's first ```sh block under `heading`, split like a shell."""
    import shlex

    text = (EXAMPLE_VAULT.parent / "README.md").read_text(encoding="utf-8")
    block = text.split(f"## {heading}", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split(" #")[0]) for line in block.splitlines() if line.strip()]


def test_readme_runs_as_printed(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's "Use it on your vault" and "For agents" commands, on a vault of notes
    (example-vault's, without its config), in the order printed."""
    notes = tmp_path / "Notes"
    shutil.copytree(EXAMPLE_VAULT, notes, ignore=shutil.ignore_patterns(".vaultmem"))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "code" / "work").mkdir(parents=True)
    commands = _readme_block("Use it on your vault") + _readme_block("For agents")
    assert commands[0][:2] == ["vaultmem", "init"]
    for words in commands:
        words = [w.replace("~", str(tmp_path)) for w in words]
        if words[0] == "cd":
            monkeypatch.chdir(words[1])
            continue
        if words[1] == "mcp":  # a server: tests/adapters/test_mcp.py drives it
            continue
        if words[1:3] == ["export", "okf"]:
            words[3] = str(tmp_path / "bundle")
        code, out, err = cli(*words[1:])
        assert code == 0, (words, out, err)


def test_a_plain_install_has_the_mcp_server_and_make_install_links_the_command(
    tmp_path: Path,
) -> None:
    import tomllib

    root = EXAMPLE_VAULT.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(d.startswith("mcp") for d in project["dependencies"])
    assert project["optional-dependencies"]["mcp"] == []  # kept for `vaultmem[mcp]`
    dry = subprocess.run(
        ["make", "-n", "install", f"PREFIX={tmp_path}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    venv = f"{tmp_path}/share/vaultmem/venv"
    assert f"{venv}/bin/python -m pip install --quiet .\n" in dry.stdout  # not editable
    assert f"ln -sf {venv}/bin/vaultmem {tmp_path}/bin/vaultmem" in dry.stdout


def test_make_demo_installs_vaultmem_alone_and_works_in_a_new_folder() -> None:
    """Issue 27, item 19: the demo installed the dev and semantic extras (415 MB), used a fixed
    `/tmp/vaultmem-demo`, and setuptools warned about `license` written as a table."""
    import tomllib

    root = EXAMPLE_VAULT.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert isinstance(project["license"], str)  # an SPDX string: no deprecation warning
    dry = subprocess.run(
        ["make", "-n", "-B", "demo"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line]
    assert any(line.endswith("pip install --quiet -e .") for line in installs), installs
    assert "[dev" not in dry and "semantic]" not in dry
    assert "mktemp -d" in dry and "/tmp/vaultmem-demo" not in dry


def test_docs_link_only_to_files_in_the_repository() -> None:
    root = EXAMPLE_VAULT.parent
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert "/work/" not in text and "](../../" not in text, doc.name


def test_the_demo_prints_what_the_readme_shows(cli: Cli, example_vault: Path) -> None:
    """`make demo`'s output as the README prints it (times aside): the status and the first
    search hit, whose section under the note's own H1 is not named twice."""
    readme = (EXAMPLE_VAULT.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("`make demo` prints", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    printed = [line for line in shown.splitlines() if line != "…"]
    vault = str(example_vault)
    code, out, _ = cli("reconcile", "--vault", vault)
    assert code == 0
    assert out.split(";")[:2] == printed[0].split(";")[:2]  # the counts; the seconds vary
    _, status, _ = cli("status", "--vault", vault)
    _, search, _ = cli("search", "how do I run the tests", "--limit", "3", "--vault", vault)
    assert printed[1] in status.splitlines()
    assert search.splitlines()[0] == printed[2]

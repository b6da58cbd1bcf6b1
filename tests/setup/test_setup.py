"""`vaultmem setup`: each agent's files get vaultmem's entries and keep everything else; a second
run changes nothing, --dry-run writes nothing, every edit is backed up, --remove gives the old
bytes back. Real files in a temp home and project, the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from vaultmem.setup import agents, edit

CODEX_CONFIG = """# my codex settings
model = "o4"  # the model I use

[mcp_servers.other]
command = "other-server"   # keep me
args = ["--flag"]

[projects."/somewhere"]
trust_level = "trusted"
"""
CLAUDE_JSON = {"numStartups": 3, "mcpServers": {"other": {"command": "x"}}, "theme": "dark"}
SETTINGS = {
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}]},
}


def setup_cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTMEM_", "CODEX_"))}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", "setup", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr + done.stdout
    envelope = json.loads(done.stdout)
    assert envelope["ok"], envelope
    data: dict[str, Any] = envelope["data"]
    return data


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    (folder / ".vaultmem").mkdir(parents=True)
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
def test_codex_user_setup_keeps_comments_is_idempotent_and_removes_to_the_old_bytes(
    home: Path, vault: Path
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)

    first = as_json(setup_cli(home, "codex", "--vault", str(vault), "--json"))
    assert first["scope"] == "user" and first["changed"]
    text = config.read_text()
    ours = [line for line in text.splitlines(keepends=True) if line not in CODEX_CONFIG]
    assert ours[0] == "[mcp_servers.vaultmem]\n" and len(ours) == 3
    assert "".join(line for line in text.splitlines(keepends=True) if line not in ours) == (
        CODEX_CONFIG
    )  # every comment and key kept, in place
    server = tomlkit.parse(text)["mcp_servers"]["vaultmem"]  # type: ignore[index]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).name == "vaultmem"
    assert list(server["args"]) == ["mcp", "--vault", str(vault.resolve())]
    [backup] = edit.backups(config)
    assert backup.read_text() == CODEX_CONFIG
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreCompact"}
    start = hooks["SessionStart"][0]["hooks"][0]["command"]
    assert shlex.split(start)[1:] == ["hook", "session-start", "--vault", str(vault.resolve())]
    assert any("/hooks" in n for n in first["notes"])  # codex needs the hooks trusted

    before = snapshot(home)
    second = setup_cli(home, "codex", "--vault", str(vault))
    assert "nothing to change" in second.stdout
    assert snapshot(home) == before  # no rewrite, no new backup

    removed = as_json(setup_cli(home, "codex", "--vault", str(vault), "--remove", "--json"))
    assert [f["action"] for f in removed["files"]] == ["restore", "delete"]
    assert config.read_text() == CODEX_CONFIG
    assert not (home / ".codex" / "hooks.json").exists()


def test_claude_project_setup_writes_mcp_json_approval_and_hooks(
    home: Path, vault: Path, project: Path
) -> None:
    done = as_json(setup_cli(home, "claude", "--vault", str(vault), "--json", cwd=project))
    assert done["scope"] == "project" and done["notes"] == []  # a git work tree, file untracked
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vaultmem"]
    assert server["args"] == ["mcp", "--vault", str(vault.resolve())]
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local["enabledMcpjsonServers"] == ["vaultmem"]
    assert [g[0]["hooks"][0]["timeout"] for g in local["hooks"].values()] == [10, 10, 10]
    assert all(f["action"] == "create" and f["backup"] is None for f in done["files"])
    assert all(f["diff"].startswith("--- /dev/null") for f in done["files"])

    as_json(setup_cli(home, "claude", "--vault", str(vault), "--remove", "--json", cwd=project))
    assert not (project / ".mcp.json").exists()
    assert not (project / ".claude" / "settings.local.json").exists()


def test_claude_outside_git_says_the_approval_does_not_count(
    home: Path, vault: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    done = as_json(
        setup_cli(home, "claude", "--project", str(folder), "--vault", str(vault), "--json")
    )
    [note] = done["notes"]
    assert "not a git work tree" in note and "--user" in note


def test_claude_user_setup_keeps_other_keys_order_and_hooks(home: Path, vault: Path) -> None:
    claude_json = home / ".claude.json"
    claude_json.write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(SETTINGS, indent=4) + "\n")
    old = {p: p.read_bytes() for p in (claude_json, settings)}

    done = as_json(setup_cli(home, "claude", "--user", "--vault", str(vault), "--json"))
    assert [f["action"] for f in done["files"]] == ["update", "update"]
    written = json.loads(claude_json.read_text())
    assert list(written) == ["numStartups", "mcpServers", "theme"]
    assert list(written["mcpServers"]) == ["other", "vaultmem"]
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["SessionStart"][0] == SETTINGS["hooks"]["SessionStart"][0]  # theirs first, kept
    assert len(hooks["SessionStart"]) == 2
    assert settings.read_text().startswith('{\n    "permissions"')  # its 4-space indent kept

    removed = as_json(
        setup_cli(home, "claude", "--user", "--vault", str(vault), "--remove", "--json")
    )
    assert [f["action"] for f in removed["files"]] == ["restore", "restore"]
    assert {p: p.read_bytes() for p in old} == old


def test_remove_after_someone_else_edited_takes_out_only_our_entries(
    home: Path, vault: Path
) -> None:
    claude_json = home / ".claude.json"
    claude_json.write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    as_json(setup_cli(home, "claude", "--user", "--vault", str(vault), "--json"))
    data = json.loads(claude_json.read_text())
    data["numStartups"] = 4  # the agent rewrites its own file
    claude_json.write_text(json.dumps(data, indent=2) + "\n")

    removed = as_json(
        setup_cli(home, "claude", "--user", "--vault", str(vault), "--remove", "--json")
    )
    assert removed["files"][0]["action"] == "update"
    assert json.loads(claude_json.read_text()) == {**CLAUDE_JSON, "numStartups": 4}
    assert len(edit.backups(claude_json)) == 2  # one per edit


def test_dry_run_writes_nothing_and_shows_the_diff(home: Path, vault: Path, project: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    before = snapshot(project), snapshot(home)
    done = setup_cli(home, "kiro", "--vault", str(vault), "--dry-run", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "would create" in done.stdout and '+    "vaultmem": {' in done.stdout
    assert "Dry run: nothing was written." in done.stdout
    assert (snapshot(project), snapshot(home)) == before
    data = as_json(
        setup_cli(home, "kiro", "--vault", str(vault), "--dry-run", "--json", cwd=project)
    )
    assert data["dry_run"] and data["changed"] and data["files"][0]["action"] == "create"
    assert (snapshot(project), snapshot(home)) == before


def test_kiro_entry_auto_approves_only_read_only_tools(home: Path, vault: Path) -> None:
    as_json(setup_cli(home, "kiro", "--user", "--vault", str(vault), "--json"))
    server = json.loads((home / ".kiro" / "settings" / "mcp.json").read_text())["mcpServers"]
    entry = server["vaultmem"]
    assert entry["disabled"] is False and "memory_store" not in entry["autoApprove"]
    assert entry["autoApprove"] == list(agents.READ_ONLY_TOOLS)


def test_a_new_vault_path_replaces_our_hooks_instead_of_adding_more(
    home: Path, vault: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-vault"
    (other / ".vaultmem").mkdir(parents=True)
    as_json(setup_cli(home, "claude", "--user", "--vault", str(vault), "--json"))
    as_json(setup_cli(home, "claude", "--user", "--vault", str(other), "--json"))
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    [[group]] = [hooks["SessionStart"]]
    assert str(other.resolve()) in group["hooks"][0]["command"]


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]"])
def test_a_broken_file_is_left_alone_with_a_clear_error(home: Path, vault: Path, bad: str) -> None:
    (home / ".claude.json").write_text(bad)
    done = setup_cli(home, "claude", "--user", "--vault", str(vault))
    assert done.returncode == 1 and "leaves it alone" in done.stderr
    assert "Traceback" not in done.stderr
    assert (home / ".claude.json").read_text() == bad
    assert not (home / ".claude" / "settings.json").exists()  # nothing written at all


def test_usage_errors(home: Path, vault: Path, project: Path) -> None:
    assert setup_cli(home, "cursor", "--vault", str(vault)).returncode == 2
    both = setup_cli(home, "claude", "--user", "--project", str(project), "--vault", str(vault))
    assert both.returncode == 2 and "exclude" in both.stderr


def test_is_our_hook_recognises_only_vaultmem_hook_commands() -> None:
    launch = agents.Launch(("/opt/venv/bin/vaultmem",), Path("/v"))
    assert agents.is_our_hook(launch.hook_command("prompt"))
    assert agents.is_our_hook("/usr/bin/python3 -m vaultmem hook pre-compact --vault /v")
    assert not agents.is_our_hook("echo vaultmem hook prompt")
    assert not agents.is_our_hook("/opt/venv/bin/vaultmem mcp --vault /v")
    assert not agents.is_our_hook("'unbalanced")

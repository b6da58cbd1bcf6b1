"""`vaultmem setup`, the hooks and the plugin against the real Claude Code and Codex clients.

The clients are installed once per machine with npm into a cache folder outside the repository
(`~/.cache/vaultmem-tests/agents`, pinned versions) and run offline: `HOME` is a temp folder,
nothing is logged in, and the environment holds only HOME, PATH (without vaultmem's virtualenv:
the commands setup writes must name everything by absolute path) and LANG. `claude mcp list`
health-checks each server with a real MCP handshake; `claude -p` runs the SessionStart and
UserPromptSubmit hooks before it stops at the login and records their output in the session's
transcript. `codex mcp list` only reads its config. Skipped, with the reason, where npm cannot
install the clients.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.test_hook import git_repo, other_project, unpin
from tests.helpers import run_cli

pytestmark = pytest.mark.slow

CLIENTS = {"@anthropic-ai/claude-code": "2.1.197", "@openai/codex": "0.171.0"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vaultmem-tests"
REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "vaultmem"
VAULTMEM = Path(sys.executable).parent / "vaultmem"
BUDGET = 10_000


@pytest.fixture(scope="session")
def clients() -> dict[str, Path]:
    """`claude` and `codex` at the pinned versions, installed once into the cache folder."""
    folder = CACHE / "agents"
    bins = {
        "claude": folder / "node_modules/.bin/claude",
        "codex": folder / "node_modules/.bin/codex",
    }
    installed = folder / "installed.json"
    wanted = json.dumps(CLIENTS, sort_keys=True)
    fresh = installed.is_file() and installed.read_text() == wanted
    if not (fresh and all(b.exists() for b in bins.values())):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not on PATH: cannot install the Claude Code and Codex clients")
        folder.mkdir(parents=True, exist_ok=True)
        specs = [f"{name}@{version}" for name, version in CLIENTS.items()]
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), *specs],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("npm install of the agent clients timed out (is the registry reachable?)")
        if done.returncode != 0 or not all(b.exists() for b in bins.values()):
            pytest.skip(f"npm could not install the agent clients: {done.stderr.strip()[-300:]}")
        installed.write_text(wanted)
    return bins


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """What `env -i HOME=… PATH=…` leaves: no virtualenv on PATH, no VAULTMEM_*, no keys."""
    node = shutil.which("node")
    path = [str(Path(node).parent)] if node else []
    env = {
        "HOME": str(home),
        "PATH": ":".join([*path, "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # The index lives in the state folder the test session chose (tests/conftest.py); a
        # user's agent finds the same default folder because it runs with the user's HOME.
        "VAULTMEM_STATE_DIR": os.environ["VAULTMEM_STATE_DIR"],
    }
    env.update(extra)
    return env


def run(
    argv: list[Any], cwd: Path, home: Path, timeout: float = 120, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=agent_env(home, **extra),
        capture_output=True,
        text=True,
        encoding="utf-8",
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


def setup(home: Path, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTMEM_", "CODEX_"))}
    env["HOME"] = str(home)
    env["VAULTMEM_STATE_DIR"] = os.environ["VAULTMEM_STATE_DIR"]
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "setup", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    data: dict[str, Any] = json.loads(done.stdout)["data"]
    return data


def transcript(home: Path, cwd: Path, session: str) -> list[dict[str, Any]]:
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))
    path = home / ".claude" / "projects" / slug / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def hook_outputs(entries: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [
        e["attachment"]
        for e in entries
        if e.get("type") == "attachment" and e["attachment"].get("hookEvent") == event
    ]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """One vault, two repositories with different remotes, memories stored from each."""
    vault = tmp_path / "vault"
    vault.mkdir()
    assert run_cli("init", str(vault)).returncode == 0
    unpin(vault)
    a = git_repo(tmp_path / "alpha", "git@github.com:org/alpha.git")
    b = git_repo(tmp_path / "beta", "https://github.com/org/beta.git")
    for repo, key, text, scope in [
        (a, "alpha-build", "Alpha builds with make alpha-dist.", "project"),
        (b, "beta-build", "Beta runs its jobs on the quokka cluster.", "project"),
        (a, "prefs", "Prefer pytest over unittest.", "global"),
    ]:
        extra = other_project("beta") if repo == b else []
        done = run_cli(
            "store", key, text, "--scope", scope, "--vault", str(vault), *extra, cwd=repo
        )
        assert done.returncode == 0, done.stderr
    home = tmp_path / "home"
    home.mkdir()
    return {"vault": vault, "a": a, "b": b, "home": home}


def test_setup_claude_project_connects_and_its_session_start_gives_only_that_project(
    clients: dict[str, Path], world: dict[str, Path]
) -> None:
    home, a, vault = world["home"], world["a"], world["vault"]
    setup(home, "claude", "--project", str(a), "--vault", str(vault))
    listed = run([clients["claude"], "mcp", "list"], a, home)
    if "✔ Connected" not in listed.stdout:  # one slow first handshake was seen: retry once
        listed = run([clients["claude"], "mcp", "list"], a, home)
    assert listed.returncode == 0, listed.stderr
    assert re.search(
        r"^vaultmem: /\S+/vaultmem mcp --vault \S+ - ✔ Connected$", listed.stdout, re.M
    ), listed.stdout

    session = str(uuid.uuid4())
    done = run([clients["claude"], "-p", "how does alpha build", "--session-id", session], a, home)
    assert "Not logged in" in done.stdout, (done.stdout, done.stderr)
    entries = transcript(home, a, session)
    [start] = hook_outputs(entries, "SessionStart")
    assert start["type"] == "hook_success" and start["exitCode"] == 0, start
    block = start["stdout"]
    assert block.startswith("<vaultmem-memory>") and len(block) <= BUDGET
    assert "alpha-build" in block and "prefs" in block
    assert "quokka" not in block and "beta" not in block
    assert start["content"] == block.rstrip("\n")  # given to the model whole
    # The prompt hook ran and printed nothing: the one matching memory was given at the start
    # (an empty output leaves no attachment); a failing hook would leave an error entry.
    assert all(a["exitCode"] == 0 for a in hook_outputs(entries, "UserPromptSubmit"))
    assert not [e for e in entries if "hook_non_blocking_error" in json.dumps(e)]


def test_setup_claude_remove_leaves_no_server(
    clients: dict[str, Path], world: dict[str, Path]
) -> None:
    home, a, vault = world["home"], world["a"], world["vault"]
    setup(home, "claude", "--project", str(a), "--vault", str(vault))
    setup(home, "claude", "--project", str(a), "--vault", str(vault), "--remove")
    assert not (a / ".mcp.json").exists()
    listed = run([clients["claude"], "mcp", "list"], a, home)
    assert "vaultmem" not in listed.stdout


def test_setup_codex_lists_the_server_by_absolute_path(
    clients: dict[str, Path], world: dict[str, Path]
) -> None:
    home, vault = world["home"], world["vault"]
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# mine\nmodel = "o4"\n')
    setup(home, "codex", "--vault", str(vault))
    done = run([clients["codex"], "mcp", "list", "--json"], world["a"], home)
    assert done.returncode == 0, done.stderr
    [server] = json.loads(done.stdout)
    assert server["name"] == "vaultmem" and server["enabled"] is True
    transport = server["transport"]
    assert transport["command"] == str(VAULTMEM) and Path(transport["command"]).is_absolute()
    assert transport["args"] == ["mcp", "--vault", str(vault.resolve())]
    setup(home, "codex", "--vault", str(vault), "--remove")
    assert config.read_text() == '# mine\nmodel = "o4"\n'
    assert (
        json.loads(run([clients["codex"], "mcp", "list", "--json"], world["a"], home).stdout) == []
    )


def test_the_plugin_validates_connects_and_its_hooks_exit_0_without_a_vault(
    clients: dict[str, Path], world: dict[str, Path]
) -> None:
    home, a, vault = world["home"], world["a"], world["vault"]
    for folder in (PLUGIN, REPO):  # the plugin, then the marketplace at the checkout's root
        done = run([clients["claude"], "plugin", "validate", "--strict", folder], a, home)
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout

    def session_start(**extra: str) -> dict[str, Any]:
        session = str(uuid.uuid4())
        argv = [clients["claude"], "--plugin-dir", PLUGIN, "-p", "hi", "--session-id", session]
        run(argv, a, home, **extra)
        [start] = hook_outputs(transcript(home, a, session), "SessionStart")
        return start

    missing = session_start()  # vaultmem is not on the agent's PATH
    assert missing["exitCode"] == 0 and missing["stdout"].startswith("vaultmem: not found")
    no_vault = session_start(VAULTMEM_BIN=str(VAULTMEM))
    assert no_vault["exitCode"] == 0 and no_vault["stdout"].startswith("vaultmem: no vault")
    assert no_vault["stdout"].count("\n") == 1
    given = session_start(VAULTMEM_BIN=str(VAULTMEM), VAULTMEM_VAULT=str(vault))
    assert "alpha-build" in given["stdout"] and "quokka" not in given["stdout"]

    listed = run(
        [clients["claude"], "--plugin-dir", PLUGIN, "mcp", "list"],
        a,
        home,
        VAULTMEM_BIN=str(VAULTMEM),
        VAULTMEM_VAULT=str(vault),
    )
    assert re.search(r"^plugin:vaultmem:vaultmem: .* - ✔ Connected$", listed.stdout, re.M), (
        listed.stdout
    )


OFFLINE_CODEX = """model_provider = "offline"

[model_providers.offline]
name = "offline"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[features]
unbounded_connection_retries = false
"""
"""A dead local provider: `codex exec` fails at once instead of retrying the network forever."""


def test_the_codex_plugin_installs_from_the_checkout_and_its_hooks_run(
    clients: dict[str, Path], world: dict[str, Path]
) -> None:
    home, a, vault = world["home"], world["a"], world["vault"]
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(OFFLINE_CODEX)
    codex = clients["codex"]
    added = run([codex, "plugin", "marketplace", "add", REPO], a, home)
    assert added.returncode == 0 and "vaultmem-local" in added.stdout, added.stderr
    assert run([codex, "plugin", "add", "vaultmem@vaultmem-local"], a, home).returncode == 0
    [server] = json.loads(run([codex, "mcp", "list", "--json"], a, home).stdout)
    assert server["name"] == "vaultmem"
    assert server["transport"]["command"] == "./bin/vaultmem-plugin"

    extra = {"VAULTMEM_BIN": str(VAULTMEM), "VAULTMEM_VAULT": str(vault)}
    argv = [codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "hi"]
    done = run(argv, a, home, **extra)
    assert "hook: SessionStart Completed" in done.stderr, done.stderr
    [rollout] = (home / ".codex" / "sessions").rglob("rollout-*.jsonl")
    text = rollout.read_text(encoding="utf-8")
    assert "alpha-build" in text and "quokka" not in text  # the block reached the model

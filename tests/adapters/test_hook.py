"""`vaultmem hook`: what an agent's hook prints, as a real subprocess fed the agent's JSON.

A hook always exits 0 with one `vaultmem:` line when it cannot help (bad input, no vault, no
index, out of time), gives the current project's and global memories at session start within
the budget, and at a prompt only relevant hits not already given in that session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli, state_of
from vaultmem.adapters import hook
from vaultmem.vault import Vault


def git_repo(folder: Path, remote: str) -> Path:
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True)
    return folder


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    assert run_cli("init", str(folder)).returncode == 0
    unpin(folder)
    return folder


PER_REPOSITORY = hasattr(Vault, "project")
"""Identity per repository (issue 30, item 1) has landed: a store without a scope id from a
repository goes to that repository's project. Before it, every store goes to the vault's one
project, so the other repository's memory is stored with an explicit id instead."""


def other_project(name: str) -> list[str]:
    return [] if PER_REPOSITORY else ["--scope-id", name]


def unpin(vault: Path) -> None:
    """Drop the whole-vault project mapping `init` writes: until identity per repository (issue
    30, item 1) it names the project of every write, and these tests are about the hooks."""
    config = vault / ".vaultmem" / "config.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.split("[[mappings]]")[0], encoding="utf-8")


@pytest.fixture
def repos(tmp_path: Path, vault: Path) -> tuple[Path, Path]:
    a = git_repo(tmp_path / "alpha", "git@github.com:org/alpha.git")
    b = git_repo(tmp_path / "beta", "https://github.com/org/beta.git")
    stores = [
        (a, "alpha-build", "Alpha builds with make alpha-dist and ships wheels to the index."),
        (a, "alpha-deploy", "Deploy alpha with the blue green switch on Fridays never."),
        (b, "beta-secret", "Beta uses the quokka cluster for its nightly jobs."),
    ]
    for repo, key, text in stores:
        extra = other_project("beta") if repo == b else []
        done = run_cli("store", key, text, "--vault", str(vault), *extra, cwd=repo)
        assert done.returncode == 0, done.stderr
    done = run_cli(
        "store", "prefs", "Prefer pytest over unittest always.", "--scope", "global",
        "--vault", str(vault), cwd=a,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return a, b


def run_hook(
    event: str, payload: object, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The hook as the agent runs it; time is not what these tests check (a loaded machine)."""
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    if "--time-budget-s" not in args:
        args = (*args, "--time-budget-s", "120")
    return run_cli("hook", event, *args, cwd=cwd, stdin=stdin)


def test_session_start_gives_this_projects_and_global_memories_only(
    vault: Path, repos: tuple[Path, Path]
) -> None:
    a, b = repos
    done = run_hook("session-start", {"cwd": str(a), "session_id": "s1"}, "--vault", str(vault))
    assert done.returncode == 0 and done.stderr == ""
    out = done.stdout
    assert out.startswith("<vaultmem-memory>") and len(out) <= hook.BUDGET_CHARS + 1
    assert "alpha-build" in out and "prefs" in out and "quokka" not in out
    if PER_REPOSITORY:  # from the other repository, its own project
        other = run_hook(
            "session-start", {"cwd": str(b), "session_id": "s2"}, "--vault", str(vault)
        )
        assert "quokka" in other.stdout and "alpha" not in other.stdout


def test_session_start_keeps_to_its_budget(vault: Path, repos: tuple[Path, Path]) -> None:
    a, _ = repos
    done = run_hook(
        "session-start", {"cwd": str(a)}, "--vault", str(vault), "--budget-chars", "200"
    )
    assert done.returncode == 0 and 0 < len(done.stdout.rstrip("\n")) <= 200


def test_prompt_gives_relevant_hits_once_per_session(vault: Path, repos: tuple[Path, Path]) -> None:
    a, _ = repos
    payload = {"cwd": str(a), "session_id": "s3", "prompt": "how do we deploy alpha on fridays"}
    first = run_hook("prompt", payload, "--vault", str(vault))
    assert first.returncode == 0 and "alpha-deploy" in first.stdout
    assert len(first.stdout) <= hook.BUDGET_CHARS // 3
    again = run_hook("prompt", payload, "--vault", str(vault))
    assert again.returncode == 0 and "alpha-deploy" not in again.stdout  # given already
    other_session = run_hook("prompt", {**payload, "session_id": "s4"}, "--vault", str(vault))
    assert "alpha-deploy" in other_session.stdout
    state = state_of(vault) / hook.STATE_FOLDER
    assert len(list(state.glob("*.json"))) == 2  # machine-local, one small file per session


@pytest.mark.slow
def test_prompt_leaves_out_what_session_start_gave_and_irrelevant_hits(
    vault: Path, repos: tuple[Path, Path]
) -> None:
    a, _ = repos
    start = {"cwd": str(a), "session_id": "s5"}
    assert "alpha-deploy" in run_hook("session-start", start, "--vault", str(vault)).stdout
    prompt = {**start, "prompt": "how do we deploy alpha on fridays"}
    assert "alpha-deploy" not in run_hook("prompt", prompt, "--vault", str(vault)).stdout
    unrelated = {"cwd": str(a), "session_id": "s6", "prompt": "rename the variable x to count"}
    assert run_hook("prompt", unrelated, "--vault", str(vault)).stdout == ""
    beta = {"cwd": str(a), "session_id": "s7", "prompt": "which cluster runs the quokka jobs"}
    assert "quokka" not in run_hook("prompt", beta, "--vault", str(vault)).stdout


def test_pre_compact_prints_the_summary_instructions(vault: Path) -> None:
    done = run_hook("pre-compact", {"trigger": "manual"}, "--vault", str(vault))
    assert done.returncode == 0 and done.stdout.strip() == hook.PRE_COMPACT


@pytest.mark.parametrize(
    ("event", "stdin", "args", "says"),
    [
        ("session-start", "{not json", (), "not a JSON object"),
        ("prompt", "[1, 2]", (), "not a JSON object"),
        ("session-start", "\xff\xfe garbage", (), "not a JSON object"),
        ("session-start", "{}", ("--budget-chars", "many"), "bad hook arguments"),
        ("stop", "{}", (), "unknown hook"),
        ("session-start", "{}", ("--budget-chars", "10"), "at least 200"),
    ],
)
def test_a_hook_exits_0_with_one_line_on_bad_input(
    vault: Path, event: str, stdin: str, args: tuple[str, ...], says: str
) -> None:
    done = run_hook(event, stdin, "--vault", str(vault), *args)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("vaultmem:")
    assert says in done.stdout


def test_a_hook_without_a_vault_or_an_index_says_so_in_one_line(
    tmp_path: Path, vault: Path
) -> None:
    nowhere = run_hook("session-start", {"cwd": str(tmp_path)}, cwd=tmp_path)
    assert nowhere.returncode == 0 and nowhere.stderr == ""
    assert nowhere.stdout.startswith("vaultmem: no vault") and nowhere.stdout.count("\n") == 1
    missing = run_hook("session-start", {}, "--vault", str(tmp_path / "gone"))
    assert missing.returncode == 0 and missing.stdout.startswith("vaultmem: no vault")
    no_index = run_hook("prompt", {"prompt": "anything"}, "--vault", str(vault))
    assert no_index.returncode == 0 and "has no index yet" in no_index.stdout
    assert "Traceback" not in nowhere.stdout + missing.stdout + no_index.stdout


def test_a_hook_past_its_time_budget_stops_with_one_line(
    vault: Path, repos: tuple[Path, Path]
) -> None:
    a, _ = repos
    done = run_hook(
        "session-start", {"cwd": str(a)}, "--vault", str(vault), "--time-budget-s", "0.000001"
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == "vaultmem: memory lookup took longer than 1e-06 s; skipped.\n"


def test_the_cli_runs_the_same_hook_and_shows_its_help(vault: Path) -> None:
    code = (
        "import sys\n"
        "from vaultmem.adapters.cli import main\n"
        f"sys.exit(main(['hook', 'pre-compact', '--vault', {str(vault)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input="{}", capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == hook.PRE_COMPACT
    shown = run_cli("hook", "--help")
    assert shown.returncode == 0 and "session-start, prompt or pre-compact" in shown.stdout


def test_session_sweep_drops_old_and_surplus_session_files(tmp_path: Path) -> None:
    folder = tmp_path / "hooks"
    folder.mkdir()
    for i in range(hook.MAX_SESSIONS + 5):
        (folder / f"{i:04}.json").write_text("{}")
    old = folder / "old.json"
    old.write_text("{}")
    import os

    os.utime(old, (1, 1))
    hook._SessionState(folder, "x").sweep()
    left = list(folder.glob("*.json"))
    assert len(left) == hook.MAX_SESSIONS and old not in left

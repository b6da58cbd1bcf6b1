"""Memory that follows the agent into every repository (issue 30) and topics that merge (29):
real git repositories, the real CLI in subprocesses, a real `git merge` of two clones."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import run_cli
from vaultmem.note.topics import read_topic

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def repo(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    git("remote", "add", "origin", remote, cwd=path)
    return path


def ok(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True
    data: dict[str, object] = envelope["data"]
    return data


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A vault as `vaultmem init DIR` writes it: the whole vault one project, pinned by id."""
    root = tmp_path / "Notes"
    root.mkdir()
    ok(run_cli("init", str(root), "--json"))
    assert 'scope_id = "notes"' in (root / ".vaultmem" / "config.toml").read_text()
    return root


@pytest.mark.slow
def test_stores_from_two_repositories_go_to_two_projects(vault: Path, tmp_path: Path) -> None:
    a = repo(tmp_path / "code" / "atlas", "git@github.com:Org/Atlas.git")
    b = repo(tmp_path / "code" / "borealis", "https://github.com/org/borealis")
    (b / "src").mkdir()
    store = ("store", "build-cmds", "--vault", str(vault), "--json")
    got_a = ok(run_cli(*store[:2], "Build with make all.", *store[2:], cwd=a))
    got_b = ok(run_cli(*store[:2], "Build with cargo build.", *store[2:], cwd=b / "src"))
    assert got_a["scope_id"] == "github.com-org-atlas"
    assert got_b["scope_id"] == "github.com-org-borealis"
    assert got_a["path"] != got_b["path"]
    for where, text in ((got_a, "make all"), (got_b, "cargo build")):
        topic = read_topic(str(where["path"]), (vault / str(where["path"])).read_text())
        assert [o.text for o in topic.observations] == [f"Build with {text}."]
    # `status` says where a write from here would go.
    status = ok(run_cli("status", "--vault", str(vault), "--json", cwd=b))
    assert status["project"] == {
        "scope_id": "github.com-org-borealis", "source": "remote", "folder": str(b.resolve()),
    }  # fmt: skip
    text = run_cli("status", "--vault", str(vault), cwd=a)
    assert "project:github.com-org-atlas (named by its git remote)" in text.stdout
    # No remote: a digest of the real path; the vault itself keeps its mapped id.
    plain = tmp_path / "scratch"
    plain.mkdir()
    assert ok(run_cli(*store[:2], "x y z", *store[2:], cwd=plain))["scope_id"] != "notes"
    assert ok(run_cli(*store[:2], "in the vault", *store[2:], cwd=vault))["scope_id"] == "notes"
    # Session and agent scopes still need an id.
    refused = run_cli("store", "k", "t", "--scope", "session", "--vault", str(vault), cwd=a)
    assert refused.returncode != 0 and "--scope-id" in refused.stderr


def test_context_holds_this_project_and_global_never_another(vault: Path, tmp_path: Path) -> None:
    a = repo(tmp_path / "a", "https://github.com/org/a")
    b = repo(tmp_path / "b", "https://github.com/org/b")
    v = ("--vault", str(vault), "--json")
    ok(run_cli("store", "a-fact", "Alpha deploys on Fridays.", *v, cwd=a))
    ok(run_cli("store", "b-fact", "Bravo deploys on Mondays.", *v, cwd=b))
    ok(run_cli("store", "g-fact", "The user likes short answers.", "--scope", "global", *v, cwd=a))
    block = ok(run_cli("context", *v, cwd=a))
    keys = [e["key"] for e in block["entries"]]  # type: ignore[index]
    assert keys == ["a-fact", "g-fact"]
    # --project decides whose memories, not only where the file goes.
    written = ok(run_cli("context", "--write", "codex", "--project", str(b), *v, cwd=a))
    agents = (b / "AGENTS.md").read_text()
    assert "Bravo deploys" in agents and "Alpha deploys" not in agents
    assert written["path"].endswith("AGENTS.md")  # type: ignore[union-attr]


def test_the_same_text_stored_twice_leaves_one_observation(vault: Path, tmp_path: Path) -> None:
    a = repo(tmp_path / "a", "https://github.com/org/a")
    v = ("--vault", str(vault), "--json")
    first = ok(run_cli("store", "tests", "Run the tests with `uv run pytest -q`.", *v, cwd=a))
    again = ok(run_cli("store", "tests", "run the tests with uv run pytest -q", *v, cwd=a))
    near = ok(run_cli("store", "tests", "Tests: run them with uv run pytest -q!", *v, cwd=a))
    other = ok(run_cli("store", "tests", "Run the tests with `uv run pytest -n 4`.", *v, cwd=a))
    assert first["duplicate_of"] is None
    assert again["duplicate_of"] == first["timestamp"] == near["duplicate_of"]
    assert other["duplicate_of"] is None
    topic = read_topic("x", (vault / str(first["path"])).read_text())
    assert len(topic.observations) == 2
    text = run_cli("store", "tests", "Run the tests with uv run pytest -q", "--vault", str(vault),
                   cwd=a)  # fmt: skip
    assert "Already stored, nothing appended" in text.stdout


def test_topics_show_their_facts_and_the_bases_view_is_written_once(vault: Path) -> None:
    v = ("--vault", str(vault), "--json")
    ok(run_cli("store", "k1", "One fact.", "--tags", "ci", *v, cwd=vault))
    base = vault / "agent-memory" / "topics.base"
    spec = yaml.safe_load(base.read_text())
    assert 'file.inFolder("agent-memory")' in spec["filters"]["and"]
    assert spec["views"][0]["groupBy"]["property"] == "note.scope"
    assert spec["views"][0]["sort"][0] == {"property": "file.mtime", "direction": "DESC"}
    stamp = base.stat().st_mtime_ns
    ok(run_cli("store", "k2", "Another fact.", *v, cwd=vault))
    ok(run_cli("get", "k1", *v, cwd=vault))
    assert base.stat().st_mtime_ns == stamp  # same bytes: not rewritten
    front = (vault / "agent-memory/project/notes/k1.md").read_text().split("---")[1]
    props = yaml.safe_load(front)
    assert {"scope", "scope_id", "type", "tags", "created"} <= set(props)
    assert "updated" not in props


@pytest.mark.slow
def test_a_real_git_merge_of_two_clones_keeps_both_appends(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    ok(run_cli("init", str(origin), "--git", "--json"))
    v = ("--json",)
    ok(run_cli("store", "shared", "First fact from the origin.", "--vault", str(origin), *v,
               cwd=origin))  # fmt: skip
    git("init", "-q", "-b", "main", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "vault", cwd=origin)
    assert ".vaultmem/index.duckdb" not in git("ls-files", cwd=origin)
    one, two = tmp_path / "one", tmp_path / "two"
    for clone in (one, two):
        git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    topic = "agent-memory/project/origin/shared.md"
    ok(run_cli("store", "shared", "Laptop: the cache lives in ~/.cache/atlas.", "--vault",
               str(one), *v, cwd=one))  # fmt: skip
    ok(run_cli("store", "shared", "CI box: runners have 4 cores.", "--vault", str(two), *v,
               cwd=two))  # fmt: skip
    for clone in (one, two):
        git("commit", "-qam", f"store on {clone.name}", cwd=clone)
    git("push", "-q", "origin", "HEAD:refs/heads/two", cwd=two)
    git("fetch", "-q", "origin", cwd=one)
    git("merge", "-q", "--no-edit", "origin/two", cwd=one)  # check=True: no conflict
    merged = (one / topic).read_text()
    assert "<<<<<<<" not in merged and ">>>>>>>" not in merged
    parsed = read_topic(topic, merged)
    texts = [o.text for o in parsed.observations]
    assert texts == [
        "First fact from the origin.",
        "Laptop: the cache lives in ~/.cache/atlas.",
        "CI box: runners have 4 cores.",
    ]
    stamps = [o.timestamp for o in parsed.observations]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    assert parsed.id and parsed.key == "shared"
    got = ok(run_cli("get", "shared", "--vault", str(one), "--json", cwd=one))
    assert got["latest"] == "CI box: runners have 4 cores."


@pytest.mark.parametrize(
    "copy_name",
    [
        "shared.sync-conflict-20261201-123456-ABCDEFG.md",
        "shared (conflicted copy 2026-12-01).md",
        "shared 2.md",
    ],
)
def test_reconcile_unites_a_sync_conflict_copy_and_trashes_it(vault: Path, copy_name: str) -> None:
    v = ("--vault", str(vault), "--json")
    stored = ok(run_cli("store", "shared", "Fact from this machine.", *v, cwd=vault))
    topic = vault / str(stored["path"])
    original = topic.read_text()
    # The other machine's version: the same topic plus its own observation.
    other = original.rstrip("\n") + "\n\n## 2026-11-30T10:00:00.000Z\nFact from the other one.\n"
    (topic.parent / copy_name).write_text(other)
    outside = vault / "Notes 2.md"  # a person's conflict copy outside the managed folder
    outside.write_text("mine")
    ok(run_cli("reconcile", *v, cwd=vault))
    assert not (topic.parent / copy_name).exists()
    assert (vault / "agent-memory/.trash/project/notes" / copy_name).exists()
    texts = [o.text for o in read_topic("x", topic.read_text()).observations]
    assert texts == ["Fact from the other one.", "Fact from this machine."]
    assert outside.read_text() == "mine"
    ok(run_cli("reconcile", *v, cwd=vault))  # a second run changes nothing
    assert [o.text for o in read_topic("x", topic.read_text()).observations] == texts


def test_reconcile_unites_a_topic_left_with_git_conflict_markers(vault: Path) -> None:
    v = ("--vault", str(vault), "--json")
    stored = ok(run_cli("store", "shared", "Base fact.", *v, cwd=vault))
    topic = vault / str(stored["path"])
    base = topic.read_text().rstrip("\n")
    topic.write_text(
        base + "\n\n<<<<<<< HEAD\n## 2026-11-01T10:00:00.000Z\nOurs.\n=======\n"
        "## 2026-11-01T09:00:00.000Z\nTheirs.\n>>>>>>> other\n"
    )
    ok(run_cli("reconcile", *v, cwd=vault))
    text = topic.read_text()
    assert "<<<<<<<" not in text and "=======" not in text
    parsed = read_topic("x", text)
    assert [o.text for o in parsed.observations] == ["Theirs.", "Ours.", "Base fact."]

"""One vault on two machines through git (issue 29, item 5): a bare remote, two clones each
with its own state folder (so its own index), interleaved `vaultmem store`s to one topic and to
topics of their own, commits, pulls that merge and pushes in turns; then each reconciles and
both answer alike. Real git, the real CLI in subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_env

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.slow,
]

MACHINE_LOCAL = ("access_count", "last_access")
"""`get` fields that count this machine's reads: usage is machine-local state."""


class Clone:
    """One machine: a git clone of the vault and its own `VAULTMEM_STATE_DIR`."""

    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.env = {**cli_env(), "VAULTMEM_STATE_DIR": str(state)}
        self.stored: list[tuple[str, str]] = []

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", f"user.name={self.root.name}", "-c", "user.email=m@example.org",
             "-c", "pull.rebase=false", *args],
            cwd=self.root, capture_output=True, text=True, env=self.env, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}{done.stdout}"
        return done.stdout

    def cli(self, *args: str) -> Any:
        where = (str(self.root),) if args[0] == "init" else ("--vault", str(self.root))
        done = subprocess.run(
            [sys.executable, "-m", "vaultmem", *args, *where, "--json"],
            cwd=self.root, capture_output=True, text=True, env=self.env, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        envelope = json.loads(done.stdout)
        assert envelope["ok"] is True, envelope
        return envelope["data"]

    def store(self, key: str, text: str) -> None:
        self.cli("store", key, text, "--scope", "global")
        self.stored.append((key, text))

    def commit(self, what: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-qm", what)

    def pull(self) -> None:
        self.git("pull", "-q", "--no-edit", "origin", "main")  # a merge, never a rebase

    def push(self) -> None:
        self.git("push", "-q", "origin", "HEAD:main")


def answers(clone: Clone, keys: list[str]) -> dict[str, Any]:
    """What an agent asks the clone's index, minus the machine-local fields."""
    topics = {}
    for key in keys:
        got = clone.cli("get", key, "--scope", "global")
        topics[key] = {k: v for k, v in got.items() if k not in MACHINE_LOCAL}
    return {
        "topics": topics,
        "search": clone.cli("search", "runner cache", "--limit", "20"),
        "sql": clone.cli(
            "sql",
            "SELECT n.path, n.id, n.title, n.content_hash, count(d.ord) AS documents, "
            "sum(d.length) AS terms FROM notes n LEFT JOIN documents d ON d.note_id = n.id "
            "GROUP BY ALL ORDER BY n.path",
        ),
        "problems": clone.cli("problems"),
    }


def test_two_clones_merge_their_stores_through_a_bare_remote(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a = Clone(tmp_path / "laptop", tmp_path / "state-laptop")
    b = Clone(tmp_path / "ci-box", tmp_path / "state-ci-box")
    a.root.mkdir()
    a.git("init", "-q", "-b", "main")
    a.cli("init", "--git")
    a.store("shared", "The laptop caches wheels in ~/.cache/pip.")
    a.commit("vault")
    a.git("remote", "add", "origin", str(remote))
    a.push()
    subprocess.run(["git", "clone", "-q", str(remote), str(b.root)], check=True, env=b.env)
    b.cli("init", "--git")  # on an existing vault: only what is missing
    b.cli("reconcile")
    # Interleaved: both append to one topic and each to one of its own before they meet.
    b.store("shared", "The CI runner has 4 cores.")
    b.store("ci-only", "CI images are rebuilt weekly.")
    a.store("shared", "The laptop runs Python 3.12.")
    a.store("laptop-only", "The laptop builds with make all.")
    b.commit("ci-box: two stores")
    b.push()
    a.commit("laptop: two stores")
    a.pull()  # merges the CI box's appends into the laptop's
    a.push()
    b.store("shared", "The CI runner cache lives in /var/cache/ci.")
    a.store("shared", "The laptop cache lives in ~/.cache/atlas.")
    b.store("ci-only", "CI keeps logs for 30 days.")
    a.commit("laptop: one store")
    b.commit("ci-box: two stores")
    b.pull()
    b.push()
    a.pull()
    a.push()
    b.pull()
    assert a.git("rev-parse", "HEAD") == b.git("rev-parse", "HEAD")

    keys = ["shared", "ci-only", "laptop-only"]
    stored = sorted({*a.stored, *b.stored})
    assert len(stored) == len(a.stored) + len(b.stored)
    results = []
    for clone in (a, b):
        clone.cli("reconcile")
        for path in clone.root.rglob("*.md"):
            if ".git" not in path.parts:
                text = path.read_text()
                assert "<<<<<<<" not in text and ">>>>>>>" not in text, path
        got = sorted(
            (key, o["text"])
            for key in keys
            for o in clone.cli("get", key, "--scope", "global")["observations"]
        )
        assert got == stored  # every observation, exactly once
        assert clone.git("status", "--porcelain") == ""  # reconcile changed no file
        results.append(answers(clone, keys))
    assert results[0]["problems"] == []
    assert results[0] == results[1]
    assert results[0]["search"]["hits"], "the search found nothing to compare"
    shared = results[0]["topics"]["shared"]["observations"]
    assert [o["timestamp"] for o in shared] == sorted(o["timestamp"] for o in shared)

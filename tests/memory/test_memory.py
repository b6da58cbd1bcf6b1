"""Agent memory end to end: real files, a real DuckDB index, real processes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import published
from vaultmem.adapters.cli import main
from vaultmem.adapters.output import to_jsonable
from vaultmem.core.config import Config, load_config
from vaultmem.core.errors import (
    AmbiguousError,
    InvalidArgumentError,
    NotFoundError,
    PartialWriteError,
    PathEscapeError,
    SecretError,
)
from vaultmem.core.secrets import find_secrets
from vaultmem.index.reconcile import reconcile
from vaultmem.memory import relations
from vaultmem.memory import topic_store as memory
from vaultmem.memory.identity import normalise_remote, project_identity, resolve_scope_id
from vaultmem.storage import store as db
from vaultmem.vault import Vault

ATLAS = {"scope": "project", "scope_id": "atlas"}


@pytest.fixture
def config(example_vault: Path) -> Config:
    cfg = load_config(example_vault)
    reconcile(cfg)
    return cfg


def _indexed(config: Config, path: str) -> str | None:
    with db.reading(config.index_path) as con:
        row = con.execute("SELECT content_hash FROM notes WHERE path = ?", [path]).fetchone()
    return None if row is None else str(row[0])


def _file_hash(config: Config, path: str) -> str:
    return hashlib.blake2b((config.root / path).read_bytes(), digest_size=16).hexdigest()


# -- store, append, get ------------------------------------------------------------------------


def test_store_creates_then_appends_to_the_same_file(config: Config) -> None:
    vault = Vault(config.root)
    first = vault.store("deploy-steps", "Run migrations first.", **ATLAS, tags=["ops"])
    second = vault.store("deploy-steps", "Then restart the workers.", **ATLAS)
    assert first.created and not second.created and first.path == second.path
    assert first.path == "agent-memory/project/atlas/deploy-steps.md"
    assert first.phases == ("resolved", "redacted", "locked", "read", "written", "published",
                            "indexed")  # fmt: skip
    files = list((config.root / "agent-memory/project/atlas").glob("deploy-steps*"))
    assert len(files) == 1
    assert _indexed(config, first.path) == _file_hash(config, first.path)
    view = memory.get(config, "deploy-steps")
    assert [o.text for o in view.topic.observations] == [
        "Run migrations first.",
        "Then restart the workers.",
    ]
    assert view.topic.id == first.id and view.topic.tags == ("ops",)
    assert memory.get(config, first.id or "").path == first.path  # by id


def test_a_derived_key_and_an_invalid_key(config: Config) -> None:
    result = published(
        config, memory.store(config, None, "Borealis uses Kafka 3.7 with KRaft.", **ATLAS)
    )
    assert result.key == "borealis-uses-kafka-3-7-with"
    with pytest.raises(InvalidArgumentError, match=re.escape("[a-z0-9-]{1,60}")):
        published(config, memory.store(config, "Bad Key", "x", **ATLAS))


def test_a_persons_edit_between_two_stores_survives(config: Config) -> None:
    rel = published(config, memory.store(config, "review-notes", "Keep PRs small.", **ATLAS)).path
    path = config.root / rel
    text = path.read_text()
    edited = text.replace("Keep PRs small.", "Keep PRs small (under 400 lines). — Dana")
    edited = edited.replace("source: null", "source: null\nreviewed: true  # by Dana")
    edited += "\nA paragraph Dana typed at the end.\n"
    path.write_text(edited)
    published(config, memory.store(config, "review-notes", "Squash before merging.", **ATLAS))
    after = path.read_text()
    kept = edited.split("updated:")[0]
    assert after.startswith(kept)
    assert "reviewed: true  # by Dana" in after
    assert "Keep PRs small (under 400 lines). — Dana" in after
    assert "A paragraph Dana typed at the end." in after
    assert after.rstrip().endswith("Squash before merging.")


def test_same_key_in_two_scopes_is_ambiguous_until_narrowed(config: Config) -> None:
    published(config, memory.store(config, "shared-key", "atlas fact", **ATLAS))
    published(
        config, memory.store(config, "shared-key", "session fact", scope="session", scope_id="s-1")
    )
    with pytest.raises(AmbiguousError):
        memory.get(config, "shared-key")
    view = memory.get(config, "shared-key", scope="session")
    assert view.topic.latest == "session fact" and view.topic.scope_id == "s-1"


def test_correct_supersedes_and_keeps_the_old_text(config: Config) -> None:
    published(config, memory.store(config, "python-version", "The project targets 3.11.", **ATLAS))
    result = published(
        config, memory.correct(config, "python-version", "The project targets 3.12.")
    )
    assert result.corrected
    view = memory.get(config, "python-version")
    assert view.topic.latest == "The project targets 3.12."
    old = view.topic.observations[0]
    assert old.text == "The project targets 3.11." and old.superseded_by == result.timestamp
    with pytest.raises(NotFoundError):
        published(config, memory.correct(config, "never-stored", "x"))


def test_forget_moves_to_trash_and_drops_from_the_index(config: Config) -> None:
    rel = published(config, memory.store(config, "temp-fact", "Short lived.", **ATLAS)).path
    result = published(config, memory.forget(config, "temp-fact"))
    assert result.trashed_to == "agent-memory/.trash/project/atlas/temp-fact.md"
    assert (config.root / result.trashed_to).exists() and not (config.root / rel).exists()
    assert _indexed(config, rel) is None
    with pytest.raises(NotFoundError):
        memory.get(config, "temp-fact")


# -- scopes and identity -------------------------------------------------------------------------


def test_scope_identity_rules(tmp_path: Path) -> None:
    assert resolve_scope_id("global", None, tmp_path) is None
    with pytest.raises(InvalidArgumentError):
        resolve_scope_id("global", "x", tmp_path)
    for scope in ("session", "agent"):
        with pytest.raises(InvalidArgumentError, match="never falls back"):
            resolve_scope_id(scope, None, tmp_path)
    with pytest.raises(PathEscapeError):
        resolve_scope_id("project", "../x", tmp_path)
    digest = hashlib.sha256(os.path.realpath(tmp_path).encode()).hexdigest()[:12]
    assert project_identity(tmp_path) == digest
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git/config").write_text(
        '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@github.com:up/repo.git\n'
        '[remote "origin"]\n\turl = https://dana:ghp_tok3n@github.com/Org/Repo.git\n'
    )
    (repo / "src").mkdir()
    assert project_identity(repo / "src") == "github.com-org-repo"
    assert resolve_scope_id("project", None, repo) == "github.com-org-repo"


@pytest.mark.parametrize(
    ("url", "slug"),
    [
        ("https://user:token@github.com/Org/Repo.git", "github.com-org-repo"),
        ("git@github.com:org/repo.git", "github.com-org-repo"),
        (
            "ssh://git@gitlab.example.com:2222/group/sub/proj.git",
            "gitlab.example.com-group-sub-proj",
        ),
        ("https://oauth2:glpat-xyz@gitlab.com/a/b", "gitlab.com-a-b"),
    ],
)
def test_remotes_are_normalised_without_credentials(url: str, slug: str) -> None:
    assert normalise_remote(url) == slug


def test_store_without_a_needed_id_never_widens(config: Config) -> None:
    with pytest.raises(InvalidArgumentError):
        published(config, memory.store(config, "k", "x", scope="session"))
    assert not (config.root / "agent-memory/project/atlas/k.md").exists()


def test_project_scope_defaults_to_the_working_directory(config: Config, tmp_path: Path) -> None:
    result = published(config, memory.store(config, "k", "x", scope="project", cwd=tmp_path))
    assert result.scope_id == project_identity(tmp_path)


# -- secrets -------------------------------------------------------------------------------------

PEM_BODY = "MIIEowIBAAKCAQEA7vZ1q8x2"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
# (text holding a secret, the secret bytes that must never be stored or shown)
SECRETS = [
    (PEM, PEM_BODY),
    ("postgres://admin:s3cr3t-Pa55@db.internal:5432/app", "s3cr3t-Pa55"),
    ("AKIA" + "IOSFODNN7EXAMPLE",) * 2,
    ("ghp_" + "a1B2c3D4e5" * 4,) * 2,
    ("glpat-" + "Xy12" * 5,) * 2,
    ("npm_" + "a1B2" * 9,) * 2,
    ("xoxb-" + "1234567890-0987654321-" + "aBcD" * 6,) * 2,
    ("AIza" + "SyA1b2C3d4" * 3 + "E5f6g",) * 2,
    ("sk_live_" + "51H" + "a1B2" * 6,) * 2,
    ("sk-proj-" + "a1B2c3D4_e5" * 8,) * 2,
    ("sk-ant-api03-" + "a1B2c3D4-e5" * 8 + "AA",) * 2,
    (JWT, JWT),
    ("Authorization: Bearer abc123def456ghi789jkl", "abc123def456ghi789jkl"),
    ("DB_PASSWORD=hunter2xyz", "hunter2xyz"),
    ("atl_dep_" + "A1b2C3d4" * 3,) * 2,  # the example vault's own pattern from its config
]


@pytest.mark.parametrize(("shape", "secret"), SECRETS)
def test_each_secret_shape_is_redacted_and_gated(config: Config, shape: str, secret: str) -> None:
    text = f"Remember this:\n{shape}\nend."
    result = published(config, memory.store(config, "creds", text, **ATLAS))
    stored = (config.root / result.path).read_text()
    assert result.redacted and "[redacted:" in stored
    assert secret not in stored
    for scope in ("global", "federated"):
        with pytest.raises(SecretError) as info:
            published(config, memory.store(config, "creds", text, scope=scope))
        message = json.dumps(info.value.to_dict())
        assert result.redacted[0] in message and secret not in message
        assert not (config.root / f"agent-memory/{scope}/creds.md").exists()


def test_the_gate_names_every_pattern(config: Config) -> None:
    text = "ghp_" + "a1B2c3D4e5" * 4 + " and AKIA" + "IOSFODNN7EXAMPLE"
    with pytest.raises(SecretError) as info:
        published(config, memory.store(config, "k", text, scope="global"))
    for name in find_secrets(text):
        assert name in info.value.message


def test_a_derived_key_never_holds_a_secret(config: Config) -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    result = published(config, memory.store(config, None, f"{token} is the deploy token", **ATLAS))
    assert token.lower() not in result.key and "redacted" in result.key


# -- partial writes ------------------------------------------------------------------------------


def test_index_failure_after_publish_is_a_partial_write(
    config: Config, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full while writing the index")

    monkeypatch.setattr("vaultmem.index.reconcile.reconcile", broken)
    with pytest.raises(PartialWriteError) as info:
        Vault(config.root).store("half-done", "The observation itself.", **ATLAS)
    error = info.value
    assert error.phases_done == ["resolved", "redacted", "locked", "read", "written", "published"]
    assert "vaultmem reconcile" in error.hint and "not retry" in error.message.lower()
    assert error.to_dict()["retry"] is False
    rel = "agent-memory/project/atlas/half-done.md"
    assert "The observation itself." in (config.root / rel).read_text()
    assert _indexed(config, rel) is None

    code = main(["store", "half-done-2", "Another.", "--scope-id", "atlas",
                 "--vault", str(config.root), "--json"])  # fmt: skip
    envelope = json.loads(capsys.readouterr().out)
    assert code == 1 and envelope["ok"] is False
    assert envelope["error"]["code"] == "partial_write"
    assert envelope["error"]["phases_done"][-1] == "published"

    monkeypatch.undo()
    reconcile(config)  # the repair
    assert _indexed(config, rel) == _file_hash(config, rel)
    assert memory.get(config, "half-done").topic.latest == "The observation itself."


# -- concurrency ---------------------------------------------------------------------------------


def _worker(args: tuple[str, int, int]) -> list[str]:
    root, worker, count = args
    config = load_config(Path(root))
    key = "shared-topic" if worker < 4 else f"own-topic-{worker}"
    written = []
    for n in range(count):
        marker = f"worker-{worker}-obs-{n}"
        published(config, memory.store(config, key, f"{marker}\n" + f"{marker} " * 40, **ATLAS))
        written.append(marker)
    return written


@pytest.mark.slow
def test_eight_processes_lose_nothing_and_never_interleave(config: Config) -> None:
    count = 3
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.map(_worker, [(str(config.root), w, count) for w in range(8)])
    markers = [m for batch in results for m in batch]
    folder = config.root / "agent-memory/project/atlas"
    shared = (folder / "shared-topic.md").read_text()
    for marker in markers:
        worker = int(marker.split("-")[1])
        text = shared if worker < 4 else (folder / f"own-topic-{worker}.md").read_text()
        # Each observation is one whole section: heading, its marker line, its repeated body.
        section = f"{marker}\n" + f"{marker} " * 40
        assert text.count(section) == 1, marker
        assert re.search(rf"^## \S+Z\n{re.escape(section)}\n", text, re.M), marker
    topic = memory.get(config, "shared-topic").topic
    assert len(topic.observations) == 4 * count
    assert sorted(o.text.split("\n")[0] for o in topic.observations) == sorted(
        m for m in markers if int(m.split("-")[1]) < 4
    )
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    for rel in ["shared-topic", *(f"own-topic-{w}" for w in range(4, 8))]:
        path = f"agent-memory/project/atlas/{rel}.md"
        assert _indexed(config, path) == _file_hash(config, path)


# -- retention -----------------------------------------------------------------------------------


def test_expired_topics_stop_being_recalled_and_prune_moves_them(config: Config) -> None:
    old = datetime.now(UTC) - timedelta(days=20)
    published(
        config,
        memory.store(config, "old-session", "stale", scope="session", scope_id="s-1", now=old),
    )
    published(config, memory.store(config, "old-pref", "keep me", scope="session", scope_id="s-1",
                                   type="user", now=old))  # fmt: skip
    published(config, memory.store(config, "fresh-session", "new", scope="session", scope_id="s-1"))
    with pytest.raises(NotFoundError, match="expired"):
        memory.get(config, "old-session")
    assert memory.get(config, "old-session", include_expired=True).topic.latest == "stale"
    assert memory.get(config, "old-pref").topic.latest == "keep me"

    listed = published(config, memory.prune(config))
    assert [i.key for i in listed.items] == ["old-session"] and not listed.applied
    assert (config.root / "agent-memory/session/s-1/old-session.md").exists()
    far = datetime.now(UTC) + timedelta(days=400)
    everything = {i.key for i in published(config, memory.prune(config, now=far)).items}
    assert "old-pref" not in everything and "code-review-feedback" not in everything
    assert {"duckdb-index-decision", "fresh-session", "release-process"} <= everything

    applied = published(config, memory.prune(config, apply=True))
    assert applied.items[0].trashed_to == "agent-memory/.trash/session/s-1/old-session.md"
    assert not (config.root / "agent-memory/session/s-1/old-session.md").exists()
    assert _indexed(config, "agent-memory/session/s-1/old-session.md") is None


# -- what never changes --------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("agent-memory/", ".vaultmem/")) or not path.is_file():
            continue
        out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


@pytest.mark.slow
def test_no_file_outside_the_managed_folder_changes(config: Config) -> None:
    before = _snapshot(config.root)
    published(
        config,
        memory.store(config, "fact-one", "DuckDB read_only connections for queries.", **ATLAS),
    )
    published(config, memory.store(config, "fact-one", "Writers hold the lock briefly.", **ATLAS))
    published(
        config,
        memory.correct(config, "fact-one", "Writers hold the DuckDB lock only per transaction."),
    )
    memory.get(config, "fact-one")
    published(
        config, memory.store(config, None, "A global preference: British spelling.", scope="global")
    )
    published(config, relations.relate(config, "fact-one", "duckdb-index-decision", "supersedes"))
    published(
        config, relations.relate(config, "fact-one", "DuckDB", "relates_to")
    )  # a human note as target
    for edge in relations.edges(config, status="proposed")[:2]:
        published(config, relations.accept(config, edge.id))
    published(config, memory.forget(config, "fact-one"))
    published(config, memory.prune(config, apply=True, now=datetime.now(UTC) + timedelta(days=400)))
    reconcile(config, rebuild=True)
    assert _snapshot(config.root) == before


def test_usage_counts_survive_a_rebuild(config: Config) -> None:
    published(config, memory.store(config, "counted", "x", **ATLAS))
    memory.get(config, "counted")
    memory.get(config, "counted")
    reconcile(config, rebuild=True)
    view = memory.get(config, "counted")
    assert view.usage is not None and view.usage.count == 3


# -- the command line ----------------------------------------------------------------------------


def _cli(vault: Path, *args: str, stdin: str | None = None) -> tuple[int, Any]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", *args, "--vault", str(vault), "--json"],
        capture_output=True, text=True, input=stdin, env=env, check=False,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


@pytest.mark.slow
def test_cli_round_trip(config: Config) -> None:
    code, out = _cli(config.root, "store", "cli-topic", "First.", "--scope-id", "atlas",
                     "--tags", "a,b", "--source", "pytest")  # fmt: skip
    assert code == 0 and out["ok"] is True
    data = out["data"]
    assert isinstance(data, dict) and data["created"] is True
    assert data["path"] == "agent-memory/project/atlas/cli-topic.md"
    code, out = _cli(config.root, "store", "cli-topic", "-", "--scope-id", "atlas",
                     stdin="From stdin.\n")  # fmt: skip
    assert code == 0
    code, out = _cli(config.root, "get", "cli-topic")
    got = out["data"]
    assert code == 0 and isinstance(got, dict)
    assert [o["text"] for o in got["observations"]] == ["First.", "From stdin."]
    assert got["tags"] == ["a", "b"] and got["source"] == "pytest" and got["access_count"] == 1
    code, out = _cli(config.root, "forget", "cli-topic")
    assert code == 0 and out["data"]["trashed_to"].startswith("agent-memory/.trash/")
    code, out = _cli(config.root, "get", "cli-topic")
    assert code == 1 and out == {
        "ok": False,
        "error": {
            "code": "not_found",
            "message": "No topic with key or id 'cli-topic'.",
            "hint": "Check the name with `vaultmem search` or `vaultmem status`.",
        },
    }
    code, out = _cli(config.root, "store", "k", "x", "--scope", "global", "--scope-id", "no")
    assert code == 2 and out["error"]["code"] == "invalid_argument"
    code, out = _cli(config.root, "store", "k", "AKIAIOSFODNN7EXAMPLE", "--scope", "global")
    assert code == 1 and out["error"]["code"] == "secret_detected"
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(out)


# -- issue 16: what goes in comes back, and nothing else goes out ------------------------------


def test_store_then_get_returns_the_text_byte_for_byte(config: Config) -> None:
    texts = [
        "intro\n\n## Steps\n1. x",
        "# Title\n\nbody under a title",
        "> Superseded by 2026-01-01T00:00:00Z\nnot a marker",
        "<!-- vaultmem:see-also -->\n- [[x]]\n<!-- /vaultmem:see-also -->",
        "```\nan unclosed fence",
        "## 2026-01-01T00:00:00Z\nnot a section",
    ]
    for text in texts:
        published(config, memory.store(config, "round-trip", text, **ATLAS))
    published(config, relations.relate(config, "round-trip", "release-process"))
    got = memory.get(config, "round-trip").topic.observations
    assert [o.text for o in got] == texts
    assert all(o.superseded_by is None for o in got)


def test_same_second_stores_get_distinct_stamps(config: Config) -> None:
    now = datetime(2026, 11, 29, 21, 4, 5, tzinfo=UTC)
    stamps = [
        published(config, memory.store(config, "burst", f"n{i}", now=now, **ATLAS)).timestamp
        for i in range(5)
    ]
    assert len(set(stamps)) == 5
    fixed = published(config, memory.correct(config, "burst", "n4 fixed", now=now))
    got = memory.get(config, "burst").topic.observations
    assert [o.superseded_by for o in got] == [None, None, None, None, fixed.timestamp, None]


def test_a_persons_non_utf8_bytes_survive_a_store(config: Config) -> None:
    rel = "agent-memory/project/atlas/release-process.md"
    path = config.root / rel
    path.write_bytes(path.read_bytes() + b"\nlatin-1 caf\xe9 and \xff\n")
    published(config, memory.store(config, "release-process", "appended", **ATLAS))
    assert b"latin-1 caf\xe9 and \xff\n" in path.read_bytes()


@pytest.mark.timeout(20)
def test_a_fifo_at_a_topic_path_fails_fast_and_frees_the_lock(config: Config) -> None:
    os.mkfifo(config.root / "agent-memory/project/atlas/pipe.md")
    for _ in range(2):  # the second call would wait 30 s if the first had kept the lock
        with pytest.raises(PathEscapeError, match="FIFO"):
            published(config, memory.store(config, "pipe", "x", **ATLAS))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("key", "sk-ant-" + "api03-abcdefghijklmnopqrstuvwxyz"),
        ("scope_id", "ghp_" + "A1b2C3d4" * 4 + "E5f6"),
        ("tags", "glpat-" + "xy12" * 5),
    ],
)
def test_names_holding_a_secret_are_refused_and_never_echoed(
    config: Config, field: str, value: str
) -> None:
    args: dict[str, Any] = {"scope": "project", "scope_id": "atlas"}
    key = value if field == "key" else "k"
    if field == "scope_id":
        args["scope_id"] = value
    if field == "tags":
        args["tags"] = [value]
    before = sorted(p for p in config.root.rglob("*") if ".vaultmem" not in p.parts)
    with pytest.raises(SecretError) as caught:
        published(config, memory.store(config, key, "harmless", **args))
    assert value not in caught.value.message and value not in caught.value.hint
    after = sorted(p for p in config.root.rglob("*") if ".vaultmem" not in p.parts)
    assert after == before


def test_search_never_returns_a_raw_secret_from_a_persons_note(config: Config) -> None:
    from vaultmem.vault import Vault

    token = "ghp_" + "Zx9Y8w7V" * 4 + "u6T5"
    note = config.root / "Knowledge/Deploy Keys.md"
    note.write_text(f"# Deploy keys\n\nThe zanzibar deploy token is {token} for now.\n")
    reconcile(config)
    hits = Vault(config.root).search("zanzibar deploy token")
    # The marker's own words may be highlighted (`github-**token**`): the query says "token".
    assert hits and any("[redacted:github-" in h.snippet for h in hits)
    assert all(token not in h.snippet for h in hits)
    code, out = _cli(config.root, "search", "zanzibar deploy token")
    assert code == 0 and out["data"] and token not in json.dumps(out)


def test_search_redacts_a_secret_an_invisible_character_hides(config: Config) -> None:
    """The tokenizer drops a soft hyphen inside a word, so `pa\u00adssword` is found by
    "password"; the snippet it shows must not hold the value either."""
    from vaultmem.vault import Vault

    note = config.root / "Knowledge/Router.md"
    note.write_text("# Router\n\nThe router pa\u00adssword: hunter2xyz is on its sticker.\n")
    reconcile(config)
    hits = Vault(config.root).search("router password")
    assert hits and hits[0].path == "Knowledge/Router.md"
    assert all("hunter2xyz" not in json.dumps(to_jsonable(h)) for h in hits)
    assert "[redacted:" in hits[0].snippet  # its own words may be marked: **password**


def test_get_and_show_redact_secrets_a_person_wrote_by_hand(config: Config) -> None:
    from vaultmem.vault import Vault

    token = "ghp_" + "Qw3rTy7U" * 4 + "i9O0"
    rel = "agent-memory/project/atlas/release-process.md"
    path = config.root / rel
    path.write_text(path.read_text() + f"\nDeploy with {token}.\n")
    note = config.root / "Knowledge/Creds.md"
    note.write_text("---\npassword: hunter2\napi: " + token + "\n---\n# Creds\n")
    reconcile(config)
    got = memory.get(config, "release-process")
    assert token not in json.dumps(got.to_dict())
    shown = Vault(config.root).show("Creds").note["frontmatter"]
    assert shown == {"password": "[redacted:password-assignment]", "api": "[redacted:github-token]"}


def test_a_secret_at_the_snippet_window_edge_leaves_no_visible_part(config: Config) -> None:
    """The snippet window is cut from the redacted section: cut first and a token split at the
    window's edge would no longer match its pattern, so its visible half would be shown."""
    from vaultmem.vault import Vault

    token = "ghp_" + "Kp4Lm8Nq" * 4 + "r2S3"
    lines = []
    for pad in range(0, 240, 6):  # the token at every offset around a 240-character window
        lines.append(f"quokka {'filler ' * (pad // 7)}{token} tail words here")
    note = config.root / "Knowledge/Edge Keys.md"
    note.write_text("# Edge keys\n\n" + "\n\n".join(lines) + "\n")
    reconcile(config)
    hits = Vault(config.root).search("quokka")
    assert hits
    for hit in hits:
        assert "ghp_" not in hit.snippet and "Kp4Lm8Nq" not in hit.snippet


# --- issue 27: the gate judges text as a reader sees it ---------------------------------------

_ESCAPED_TOKENS = [
    "ghp\\_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8",
    "ghp&#95;" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8",
    "g\u200ehp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8",
    "xoxb\\-1234567890\\-abcdefghij",
    "password\\: hunter2x9",
]


@pytest.mark.parametrize("token", _ESCAPED_TOKENS)
def test_a_global_write_refuses_an_escaped_or_hidden_secret(config: Config, token: str) -> None:
    with pytest.raises(SecretError):
        memory.store(config, "deploy-key", f"Deploy with {token} today.", scope="global")


def test_a_derived_key_that_is_itself_a_token_is_refused(config: Config) -> None:
    with pytest.raises(SecretError, match="key holds a secret"):
        memory.store(config, None, "xoxb 1234567890 abcdefghij", scope="project",
                     scope_id="atlas")  # fmt: skip
    managed = config.root / config.managed_folder
    assert not [p for p in managed.rglob("*") if "xoxb" in p.name]


def test_context_write_never_copies_an_escaped_token(config: Config, tmp_path: Path) -> None:
    from vaultmem.vault import Vault

    vault = Vault(config.root)
    project = tmp_path / "project"
    project.mkdir()
    for token in _ESCAPED_TOKENS:  # stored from the project, so its context holds them
        vault.store(None, f"Deploy with {token} today.", scope="project", cwd=project)
    vault.write_context("codex", project_dir=project)
    agents = (project / "AGENTS.md").read_text(encoding="utf-8")
    assert "Deploy with" in agents
    assert "Zx9Yw8Vu7Ts6" not in agents and "abcdefghij" not in agents
    assert "hunter2x9" not in agents

"""Recall on example-vault: agent questions find their topic; expiry, usage and freshness."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from tests.helpers import run_cli
from vaultmem.core.errors import InvalidArgumentError, QueryError
from vaultmem.memory import usage
from vaultmem.memory.recall import coverage, metadata_candidates, parse_scopes
from vaultmem.storage import recall_queries as q
from vaultmem.storage.search_queries import scopes_filter
from vaultmem.vault import Vault

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)

QUESTIONS = [
    ("how do I run the tests", "build-and-test-commands"),
    ("which commands does CI run before pushing", "build-and-test-commands"),
    ("how do I build the container image", "build-and-test-commands"),
    ("why not use the duckdb fts extension", "duckdb-index-decision"),
    ("can the query API open a second writer or a connection pool", "duckdb-index-decision"),
    ("how do we cut a release", "release-process"),
    ("where do I announce releases", "release-process"),
    ("where is the kafka consumer lag dashboard", "consumer-lag-alerting"),
    ("when does the lag alert page on-call", "consumer-lag-alerting"),
    ("should I mock duckdb in tests", "code-review-feedback"),
    ("how many changed lines can a pull request have", "code-review-feedback"),
    ("does the user prefer unittest or pytest", "user-preferences"),
    ("British or American spelling", "user-preferences"),
    ("user preferences", "user-preferences"),
]


@pytest.fixture
def vault(example_vault: Path) -> Vault:
    v = Vault(example_vault)
    v.reconcile()
    return v


def topic(
    key: str, *, scope: str, scope_id: str | None, type_: str, updated: str, text: str
) -> str:
    return (
        f"---\nid: 00000000-0000-4000-8000-{abs(hash(key)) % 10**12:012d}\nkey: {key}\n"
        f"scope: {scope}\nscope_id: {scope_id or 'null'}\ntype: {type_}\ntags: []\n"
        f'created: "{updated}"\nupdated: "{updated}"\nsource: test\n---\n# {key}\n\n'
        f"## {updated}\n{text}\n"
    )


@pytest.mark.parametrize(("question", "expected"), QUESTIONS)
def test_agent_questions_find_their_topic(vault: Vault, question: str, expected: str) -> None:
    keys = [h.key for h in vault.recall(question, limit=5, now=NOW)]
    assert expected in keys[:3], keys


def test_name_matches_are_blended_not_pinned(vault: Vault) -> None:
    hits = vault.recall("release-process", now=NOW)
    assert hits[0].key == "release-process" and hits[0].matched == "metadata"
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # one order: the blended score
    only_meta = vault.recall("release-process", mode="metadata", now=NOW)
    assert {h.matched for h in only_meta} == {"metadata"}
    assert all(h.matched == "bm25" for h in vault.recall("release", mode="words", now=NOW))


def test_a_name_covering_one_word_of_a_long_question_adds_little(example_vault: Path) -> None:
    """Ten notes aliased "Obsidian" must not fill the list for every question naming Obsidian
    (issue 13): a name match covering one word in four adds a quarter of its weight."""
    people = example_vault / "Knowledge" / "People"
    for i in range(10):
        (people / f"Person {i}.md").write_text(
            f"---\naliases: [Obsidian]\n---\n# Person {i}\n\nLikes hiking.\n", "utf-8"
        )
    (example_vault / "Knowledge" / "Vault sync.md").write_text(
        "# Vault sync\n\nTo sync an obsidian vault across devices, use Obsidian Sync or git; "
        "sync conflicts show as duplicate files on devices.\n",
        "utf-8",
    )
    v = Vault(example_vault)
    v.reconcile()
    hits = v.recall("how do I sync obsidian across devices", limit=5, now=NOW)
    assert hits[0].path == "Knowledge/Vault sync.md", [h.path for h in hits]
    assert sum("/Person " in h.path for h in hits) < 5
    (alone,) = v.recall("Person 3", limit=1, now=NOW)
    assert alone.path == "Knowledge/People/Person 3.md"


def test_kind_filters_topics_and_notes(vault: Vault) -> None:
    topics_only = vault.recall("duckdb tests", kind="topics", limit=20, now=NOW)
    notes_only = vault.recall("duckdb tests", kind="notes", limit=20, now=NOW)
    assert topics_only and all(h.managed for h in topics_only)
    assert notes_only and not any(h.managed for h in notes_only)
    with pytest.raises(InvalidArgumentError):
        vault.recall("duckdb", kind="people", now=NOW)  # type: ignore[arg-type]


def test_ten_repeated_recalls_return_the_same_order(vault: Vault) -> None:
    first = [h.id for h in vault.recall("duckdb tests", limit=10)]
    for _ in range(9):
        assert [h.id for h in vault.recall("duckdb tests", limit=10)] == first
    assert not (vault.config.state_dir / "usage.jsonl").exists()  # a hit is not a use


def test_a_topic_answering_the_question_beats_notes_sharing_its_words(vault: Vault) -> None:
    """The agent's own memory: a topic holding every word of the question (`test` inside
    `pytest`) ranks with the best human note, above notes that merely share words."""
    vault.store("tox-runner", "Run tox -e py311 for the unit tests.", scope="project", scope_id="w")
    vault.store("lint-gate", "ruff check must pass.", scope="project", scope_id="w")
    hits = vault.recall("how do I run the unit tests", limit=3, now=NOW)
    assert "tox-runner" in [h.key for h in hits]
    assert "lint-gate" not in [h.key for h in vault.recall("run unit tests", limit=5, now=NOW)]


def test_a_hit_carries_what_an_agent_needs(vault: Vault) -> None:
    (hit,) = vault.recall("user preferences", limit=1, now=NOW)
    assert hit.path == "agent-memory/global/user-preferences.md"
    assert (hit.scope, hit.scope_id, hit.type, hit.managed) == ("global", None, "user", True)
    assert hit.id == "2a6c4f81-93d7-4e05-b1a8-6f0e2d9c7b33"
    assert hit.updated == "2026-11-26T12:30:00Z" and hit.fresh and not hit.related
    assert 0 < hit.score <= 1 and hit.snippet


def test_scopes_filter(vault: Vault) -> None:
    hits = vault.recall("tests pytest duckdb", scopes=["project:atlas"], limit=20, now=NOW)
    assert hits and {(h.scope, h.scope_id) for h in hits} == {("project", "atlas")}
    hits = vault.recall("tests", scopes=["session,global"], limit=20, now=NOW)
    assert {h.scope for h in hits} <= {"session", "global"}
    with pytest.raises(InvalidArgumentError):
        parse_scopes(["nowhere"])


def test_several_scopes_rank_their_own_notes_not_the_whole_vault(example_vault: Path) -> None:
    """Recall over two scopes (what an agent's prompt hook asks) ranks those scopes' notes:
    forty notes of another project that say the word more often do not fill the pool."""
    borealis = example_vault / "Projects" / "Borealis" / "Zebras"
    borealis.mkdir()
    for i in range(40):
        (borealis / f"Herd {i}.md").write_text(
            f"# Herd {i}\n\nZebra zebra zebra: stripes of herd {i}.\n", encoding="utf-8"
        )
    (example_vault / "Knowledge" / "Road markings.md").write_text(
        "# Road markings\n\n"
        + "Lines painted on roads guide drivers and walkers. " * 20
        + "A crossing painted in stripes is called a zebra.\n",
        encoding="utf-8",
    )
    v = Vault(example_vault)
    v.reconcile()
    scopes = ["project:atlas", "global"]
    hits = v.recall("zebra", scopes=scopes, kind="notes", limit=3, now=NOW)
    assert [h.path for h in hits] == ["Knowledge/Road markings.md"]
    # the whole vault still finds the herds first, and one scope alone finds the note too
    assert v.recall("zebra", kind="notes", limit=3, now=NOW)[0].path.startswith(
        "Projects/Borealis/Zebras/"
    )
    (alone,) = v.recall("zebra", scopes=["global"], kind="notes", limit=3, now=NOW)
    assert alone.path == "Knowledge/Road markings.md"
    assert hits[0].score == alone.score  # the same statistics: atlas holds no zebra


def test_names_and_topics_are_read_from_the_scopes_asked(vault: Vault) -> None:
    """The name matches and the topics' texts read only the notes of the scopes asked."""
    con = duckdb.connect(str(vault.config.index_path), read_only=True)
    try:
        sql = "SELECT id, scope || ':' || coalesce(scope_id, '') FROM notes"
        scope_of = dict(con.execute(sql).fetchall())
        words = ["duckdb", "atlas", "release", "user-preferences"]
        every = {scope_of[i] for i, *_ in q.name_matches(con, words)}
        assert {"global:", "project:atlas"} <= every
        only = q.name_matches(con, words, scopes_filter([("global", None)]))
        assert only and {scope_of[i] for i, *_ in only} == {"global:"}
        assert {m for m in q.name_matches(con, words) if scope_of[m[0]] == "global:"} == set(only)
        atlas = scopes_filter([("project", "atlas"), ("session", None)])
        topics = dict(q.topic_texts(con, atlas))
        assert topics and {scope_of[i] for i in topics} <= {"project:atlas"}
        assert topics == {i: t for i, t in q.topic_texts(con) if scope_of[i] == "project:atlas"}
    finally:
        con.close()


def test_metadata_candidates_include_runs_of_words() -> None:
    words = metadata_candidates("What is the Release process? tag:x")
    assert {"release", "process", "release-process", "release process"} <= set(words)
    assert "the" not in words and "tag" not in words


def test_only_stop_words(vault: Vault) -> None:
    assert vault.recall("the of and", now=NOW) == []
    with pytest.raises(QueryError):
        vault.recall("the of and", mode="words", now=NOW)


def test_expired_topics_are_never_returned(example_vault: Path) -> None:
    managed = example_vault / "agent-memory"
    files = {
        "session/s-1/zebra-session.md": ("session", "s-1", "project", "2026-11-01T00:00:00Z"),
        "session/s-1/zebra-fresh.md": ("session", "s-1", "project", "2026-11-25T00:00:00Z"),
        "project/atlas/zebra-old.md": ("project", "atlas", "reference", "2026-07-01T00:00:00Z"),
        "project/atlas/zebra-feedback.md": ("project", "atlas", "feedback", "2025-01-01T00:00:00Z"),
        "global/zebra-global.md": ("global", None, "project", "2024-01-01T00:00:00Z"),
    }
    for rel, (scope, scope_id, type_, updated) in files.items():
        path = managed / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        key = path.stem
        path.write_text(
            topic(
                key,
                scope=scope,
                scope_id=scope_id,
                type_=type_,
                updated=updated,
                text=f"The zebra crossing rule number {key}.",
            ),
            encoding="utf-8",
        )
    v = Vault(example_vault)
    v.reconcile()
    expected = {"zebra-fresh", "zebra-feedback", "zebra-global"}
    for mode in ("blended", "words", "metadata"):
        query = "zebra " + " ".join(Path(r).stem for r in files)
        keys = {h.key for h in v.recall(query, mode=mode, limit=50, now=NOW)}  # type: ignore[arg-type]
        assert keys & set(map(lambda r: Path(r).stem, files)) == expected, mode
    keys = {h.key for h in v.recall("zebra crossing rule", limit=50, now=NOW, include_related=True)}
    assert "zebra-session" not in keys and "zebra-old" not in keys


def test_forgotten_topics_are_never_returned(vault: Vault) -> None:
    source = vault.root / "agent-memory/project/borealis/consumer-lag-alerting.md"
    trash = vault.root / "agent-memory/.trash/project/borealis/consumer-lag-alerting.md"
    trash.parent.mkdir(parents=True)
    shutil.move(source, trash)
    vault.reconcile()
    hits = vault.recall("kafka consumer lag alerting", limit=50, now=NOW, include_related=True)
    assert "consumer-lag-alerting" not in {h.key for h in hits}


def test_uses_come_from_get_read_and_used_and_reorder_near_ties_only(vault: Vault) -> None:
    question = "duckdb tests"
    baseline = vault.recall(question, limit=6, now=NOW)
    least = baseline[-1]
    for _ in range(5):
        vault.used(least.path, now=NOW)
    vault.read(least.path, now=NOW)
    counts = usage.read_usage(vault.config.state_dir)
    assert counts[least.id].count == 6
    by_usage = vault.recall(question, limit=6, sort="usage", now=NOW)
    assert by_usage[0].key == least.key
    again = {h.id: h.score for h in vault.recall(question, limit=6, now=NOW)}
    gain = again[least.id] - least.score
    assert 0 < gain <= 0.05 + 1e-9  # capped: usage weighs at most 5 %
    lines = (vault.config.state_dir / "usage.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["at"] == "2026-11-29T12:00:00Z" for line in lines)


def test_uses_decay_with_a_half_life(tmp_path: Path) -> None:
    usage.record(tmp_path, ["a", "a"], "2026-10-30T12:00:00Z")  # 30 days before NOW
    usage.record(tmp_path, ["b"], "2026-11-29T12:00:00Z")
    decayed = usage.decayed_uses(tmp_path, NOW)
    assert decayed["a"] == pytest.approx(1.0) and decayed["b"] == pytest.approx(1.0)


def test_coverage_counts_a_term_inside_a_longer_word() -> None:
    assert coverage(["run", "test"], {"run", "pytest"}) == 1.0
    assert coverage(["run", "test"], {"prune", "pytest"}) == 0.5  # 3 letters: whole words only
    assert coverage([], {"x"}) == 0.0


def test_recency_sort(vault: Vault) -> None:
    hits = vault.recall("duckdb tests", limit=6, sort="recency", now=NOW)
    stamps = [datetime.fromisoformat(h.updated.replace("Z", "+00:00")) for h in hits if h.updated]
    assert stamps == sorted(stamps, reverse=True)


def test_fresh_flips_when_a_file_changes_without_reconcile(vault: Vault) -> None:
    (hit,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert hit.fresh
    path = vault.root / hit.path
    path.write_text(path.read_text(encoding="utf-8") + "\nEdited in Obsidian.\n", "utf-8")
    (stale,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert not stale.fresh
    vault.reconcile()
    (again,) = vault.recall("consumer-lag-alerting", mode="metadata", limit=1, now=NOW)
    assert again.fresh


def test_related_notes_are_capped_and_marked(vault: Vault) -> None:
    hits = vault.recall("build-and-test-commands", mode="metadata", include_related=True, now=NOW)
    direct = [h for h in hits if not h.related]
    related = [h for h in hits if h.related]
    assert [h.key for h in direct] == ["build-and-test-commands"]
    assert {h.title for h in related} == {
        "Runbook: running the Atlas tests",
        "Python packaging with uv",
    }
    assert all(h.related_to == "build-and-test-commands" for h in related)
    many = vault.recall("duckdb tests release", limit=10, include_related=True, now=NOW)
    assert sum(h.related for h in many) <= 5


def test_cli_recall_json(vault: Vault) -> None:
    done = run_cli("recall", "kafka lag", "--vault", str(vault.root), "--json", "--limit", "2")
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    hits = envelope["data"]["hits"]  # one shape with MCP's memory_recall
    assert envelope["ok"] is True and len(hits) <= 2
    first = hits[0]
    assert first["key"] == "consumer-lag-alerting"
    assert set(first) >= {
        "id",
        "key",
        "scope",
        "scope_id",
        "path",
        "title",
        "snippet",
        "score",
        "updated",
        "fresh",
        "related",
    }
    bad = run_cli("recall", "the", "--mode", "words", "--vault", str(vault.root), "--json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["error"]["code"] == "query_invalid"


def _tagged_vault(root: Path) -> Vault:
    """400 notes tagged `deploy` (a name match for any question that says it), of every age,
    beside a few that a question's other words find."""
    root.mkdir()
    vault = Vault.init(root)
    for i in range(400):
        updated = f"2026-{1 + i % 11:02d}-{1 + i % 27:02d}T10:00:00Z"
        (root / f"Deploy note {i}.md").write_text(
            f"---\ntags: [deploy, team{i % 7}]\nupdated: {updated}\n---\n# Deploy note {i}\n\n"
            f"Words about shipping number {i}.\n",
            "utf-8",
        )
    for i in range(6):
        (root / f"Pipeline {i}.md").write_text(
            f"# Pipeline {i}\n\nThe release pipeline hit a timeout {i + 1} times in the config "
            "server.\n",
            "utf-8",
        )
    vault.reconcile()
    return vault


def test_notes_matched_by_name_alone_are_read_only_while_they_can_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall reads a note matched by name alone only while its best possible score can enter
    the pool: the same hits and scores as scoring every one of them, from far fewer reads."""
    from vaultmem.memory import recall as recall_module
    from vaultmem.storage import store

    vault = _tagged_vault(tmp_path / "vault")
    uses = {}  # some tag-only notes much used: their ceiling rises
    read: list[str] = []
    infos = recall_module.note_infos

    def counted(con: object, ids: list[str]) -> object:
        read.extend(ids)
        return infos(con, ids)  # type: ignore[arg-type]

    monkeypatch.setattr(recall_module, "note_infos", counted)
    questions = [
        "deploy",
        "deploy pipeline timeout",
        "why did the release pipeline time out in the config server after the deploy, "
        "and what did team3 decide about shipping",
    ]
    with store.reading(vault.config.index_path) as con:
        ids = [r[0] for r in con.execute("SELECT id FROM notes ORDER BY path").fetchall()]
        uses = {ids[i]: float(3 * i % 40) for i in range(0, 400, 9)}

        def run(question: str, mode: str, limit: int) -> list[tuple[str, float]]:
            hits = recall_module.recall(
                con,
                question,
                root=vault.config.root,
                managed_folder=vault.config.managed_folder,
                mode=mode,  # type: ignore[arg-type]
                limit=limit,
                now=NOW,
                usage_counts=uses,
            )
            return [(h.id, h.score) for h in hits]

        for question in questions:
            for mode in ("blended", "metadata"):
                for limit in (1, 5, 20):
                    read.clear()
                    pruned = run(question, mode, limit)
                    pruned_reads = len(read)
                    with monkeypatch.context() as every:
                        every.setattr(recall_module, "name_only_ceiling", lambda *a, **k: 1e9)
                        read.clear()
                        assert run(question, mode, limit) == pruned, (question, mode, limit)
                        assert len(read) >= 400  # every tagged note read and scored
                    if question == questions[-1] and mode == "blended":
                        # the words find better notes; a tag's share of them cannot compete
                        assert pruned_reads < 100, (question, mode, limit, pruned_reads)

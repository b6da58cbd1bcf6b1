"""The steady state (issue 14): a no-op settled by the last survey without opening the index,
and one-note changes applied as deltas that leave the index equal to a rebuild."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.index.test_reconcile import (
    assert_equals_rebuild,
    assert_state_record_matches,
    counts,
    note_id,
    query,
    write,
)
from vaultmem.core.config import Config
from vaultmem.index.reconcile import reconcile
from vaultmem.storage.last_survey import RECORD_NAME, read_last_survey
from vaultmem.vault import Vault


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    root = tmp_path / "vault"
    root.mkdir()
    config = Vault.init(root).config
    write(root, "A.md", "# A\n\nalpha words [[B]]\n")
    write(root, "B.md", "# B\n\nbeta words\n")
    write(root, "sub/C.md", "# C\n\ngamma [[A#A]]\n")
    reconcile(config)
    return config


def _record(config: Config) -> Path:
    return config.state_dir / RECORD_NAME


# -- the no-op --------------------------------------------------------------------------------


def test_a_write_leaves_a_record_that_settles_the_next_no_op(vault: Config) -> None:
    record = read_last_survey(vault.state_dir)
    assert record is not None and (record.notes, record.problems) == (3, 0)
    report = reconcile(vault)
    assert counts(report) == (0, 0, 0, 0, 3) and report.notes == 3


def test_a_cold_no_op_loads_neither_duckdb_nor_the_parser(vault: Config) -> None:
    code = (
        "import json, sys\n"
        "from vaultmem.adapters import cli\n"
        f"sys.argv = ['vaultmem', 'reconcile', '--vault', {str(vault.root)!r}, '--json']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert json.loads(out[0])["data"]["unchanged"] == 3
    loaded = set(json.loads(out[-1]))
    banned = ("duckdb", "mistune", "pydantic", "vaultmem.index.parallel", "vaultmem.search")
    assert sorted(m for m in loaded if m.split(".")[0] in banned or m in banned) == []
    assert "vaultmem.index.reconcile" in loaded  # the reconcile ran


def test_without_a_record_the_no_op_compares_rows_and_writes_one(vault: Config) -> None:
    _record(vault).unlink()
    before = vault.index_path.stat().st_mtime_ns
    assert counts(reconcile(vault)) == (0, 0, 0, 0, 3)
    assert vault.index_path.stat().st_mtime_ns == before  # nothing written to the index
    assert read_last_survey(vault.state_dir) is not None


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"token": [], "digest": 1}'])
def test_an_unreadable_record_is_no_record(vault: Config, damage: bytes) -> None:
    _record(vault).write_bytes(damage)
    assert read_last_survey(vault.state_dir) is None
    assert counts(reconcile(vault)) == (0, 0, 0, 0, 3)


def test_a_record_of_another_index_file_is_not_trusted(vault: Config) -> None:
    """Same walk, but the index changed since the record: the rows decide."""
    stale = _record(vault).read_bytes()
    stat = (vault.root / "B.md").stat()
    write(vault.root, "B.md", "# B\n\nbeta wordz\n")  # same size, new bytes
    os.utime(vault.root / "B.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5))
    assert reconcile(vault).changed == 1
    os.utime(vault.root / "B.md", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _record(vault).write_bytes(stale)  # the walk now digests as the stale record says
    report = reconcile(vault)
    assert report.changed == 0 and report.touched == 1  # read again: the index moved on
    assert query(vault, "SELECT mtime_ns FROM notes WHERE path = 'B.md'") == [(stat.st_mtime_ns,)]


def test_an_edit_under_an_unchanged_record_is_seen(vault: Config) -> None:
    write(vault.root, "B.md", "# B\n\nbeta words and more\n")
    assert counts(reconcile(vault)) == (0, 1, 0, 0, 2)


def test_another_version_is_not_settled_by_the_record(vault: Config) -> None:
    data = json.loads(_record(vault).read_text())
    data["versions"]["parser_version"] = "0"
    _record(vault).write_text(json.dumps(data))
    assert counts(reconcile(vault)) == (0, 0, 0, 0, 3)
    con = duckdb.connect(str(vault.index_path))
    con.execute("UPDATE meta SET value = 'old' WHERE key = 'parser_version'")
    con.close()
    report = reconcile(vault)  # the index changed: its record no longer matches
    assert report.added == 3 and report.warnings


def test_a_watcher_run_forgets_the_record(vault: Config) -> None:
    write(vault.root, "D.md", "# D\n")
    assert reconcile(vault, paths=["D.md"]).added == 1
    assert not _record(vault).exists()
    assert counts(reconcile(vault)) == (0, 0, 0, 0, 4)  # compared rows, wrote a record
    assert read_last_survey(vault.state_dir) is not None


def test_a_failed_read_leaves_no_record(vault: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    from vaultmem.files import scan
    from vaultmem.index import parallel

    monkeypatch.setattr(
        parallel,
        "read_note_fingerprinted",
        lambda config, path, *_: scan.Problem(path, "file_unstable", "changed while read"),
    )
    write(vault.root, "B.md", "# B\n\nbeta words, edited\n")
    reconcile(vault)
    assert not _record(vault).exists()  # the next run must read B.md again
    monkeypatch.undo()
    assert reconcile(vault).changed == 1
    assert_equals_rebuild(vault)


@pytest.mark.unprivileged
def test_a_read_only_state_folder_still_settles_a_no_op(vault: Config) -> None:
    _record(vault).unlink()
    os.chmod(vault.state_dir, 0o555)
    try:
        assert counts(reconcile(vault)) == (0, 0, 0, 0, 3)
    finally:
        os.chmod(vault.state_dir, 0o755)
    assert not _record(vault).exists()


# -- one-note changes as deltas ---------------------------------------------------------------


def _df(config: Config, term: str) -> list[tuple[object, ...]]:
    return query(config, "SELECT df FROM terms WHERE term = ?", [term])


def test_an_edit_moves_terms_and_stats_by_its_own_delta(vault: Config) -> None:
    write(vault.root, "B.md", "# B\n\nbeta zyzzyva\n\n## More\n\nzyzzyva again\n")
    assert reconcile(vault).changed == 1
    assert _df(vault, "zyzzyva") == [(2,)]  # first occurrence anywhere: a new term, 2 documents
    assert _df(vault, "word") == [(1,)]  # `words` left B, stays in A
    assert_equals_rebuild(vault)
    write(vault.root, "B.md", "# B\n\nbeta\n")
    reconcile(vault)
    assert _df(vault, "zyzzyva") == []  # last occurrence gone: the term goes
    assert_equals_rebuild(vault)


def test_a_delete_and_a_rename_move_terms_and_stats(vault: Config) -> None:
    (vault.root / "B.md").unlink()
    assert reconcile(vault).removed == 1
    assert _df(vault, "beta") == []
    assert_equals_rebuild(vault)
    before = query(vault, "SELECT id FROM notes WHERE path = 'sub/C.md'")
    (vault.root / "sub/C.md").rename(vault.root / "D.md")
    assert reconcile(vault).renamed == 1
    assert query(vault, "SELECT id FROM notes WHERE path = 'D.md'") == before
    assert_equals_rebuild(vault)


def test_an_edit_deletes_only_that_notes_postings(vault: Config) -> None:
    rows = (
        "SELECT n.path, count(*) FROM postings p JOIN notes n ON n.note_key = p.note_key GROUP BY 1"
    )
    others = {p: c for p, c in query(vault, rows) if p != "B.md"}
    write(vault.root, "B.md", "# B\n\nsomething else entirely\n")
    reconcile(vault)
    assert {p: c for p, c in query(vault, rows) if p != "B.md"} == others


@pytest.mark.slow
def test_ids_are_assigned_again_when_the_journal_changed(vault: Config) -> None:
    """An edit keeps the stored ids only while the journal is the one they came from."""
    (vault.root / "sub/C.md").rename(vault.root / "E.md")
    reconcile(vault)
    moved = query(vault, "SELECT id FROM notes WHERE path = 'E.md'")
    (vault.state_dir / "renames.jsonl").unlink()  # the rename's id is forgotten...
    write(vault.root, "B.md", "# B\n\nbeta edited\n")
    reconcile(vault)  # ...so E.md takes its own path's id, as a rebuild would give it
    assert query(vault, "SELECT id FROM notes WHERE path = 'E.md'") != moved
    assert_equals_rebuild(vault)


def test_a_claimed_id_taken_by_an_edit_reassigns_ids(vault: Config) -> None:
    topic = "agent-memory/global/t.md"
    write(vault.root, topic, "---\nid: t-one\n---\n# T\n")
    reconcile(vault)
    write(vault.root, "B.md", "---\nid: t-one\n---\n# B\n")  # B now claims the topic's id
    reconcile(vault)
    assert_equals_rebuild(vault)


@pytest.mark.parametrize("claim", ["", "---\nid: t-one\n---\n"])
def test_a_note_that_comes_leaves_the_index_equal_to_a_rebuild(vault: Config, claim: str) -> None:
    """A new note takes its own id alone when it is free; one claiming a topic's id makes
    every id assigned again (the topic falls back to a salted id), as a rebuild does."""
    write(vault.root, "agent-memory/global/t.md", "---\nid: t-one\n---\n# T\n")
    reconcile(vault)
    before = dict(query(vault, "SELECT path, id FROM notes"))
    # a topic whose path sorts first: it wins the id it claims
    write(vault.root, "agent-memory/global/a.md", f"{claim}# D\n\ndelta [[A]]\n")
    reconcile(vault)
    after = dict(query(vault, "SELECT path, id FROM notes"))
    moved = {p for p in before if after[p] != before[p]}
    assert moved == ({"agent-memory/global/t.md"} if claim else set())
    assert_equals_rebuild(vault)


@pytest.mark.parametrize("move", ["delete", "rename"])
def test_a_note_that_goes_keeps_every_other_id_without_a_pass_over_all(
    vault: Config, move: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no id salted, a deleted or renamed note costs its own ids: the others keep theirs
    without `assign_ids` over every note, and the index is what a rebuild writes."""
    from vaultmem.index import steps

    before = dict(query(vault, "SELECT path, id FROM notes"))
    assert query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'")[0][0].endswith(
        ":unsalted"
    )

    def no_full_pass(*_: object) -> None:
        raise AssertionError("every id was assigned again")

    monkeypatch.setattr(steps, "assign_ids_salted", no_full_pass)
    if move == "delete":
        (vault.root / "B.md").unlink()
    else:
        (vault.root / "B.md").rename(vault.root / "sub/B2.md")
    reconcile(vault)
    monkeypatch.undo()
    after = dict(query(vault, "SELECT path, id FROM notes"))
    assert {p: after[p] for p in ("A.md", "sub/C.md")} == {
        p: before[p] for p in ("A.md", "sub/C.md")
    }
    if move == "rename":
        assert after["sub/B2.md"] == before["B.md"]
    basis = query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'")
    assert_equals_rebuild(vault)
    assert query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'") == basis


def test_a_note_renamed_twice_leaves_the_journal_its_ids_came_from(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run applies its renames to the journal as reading it back does (the old path's entry
    goes): the basis it records is the journal's, so the next note that goes keeps the others'
    ids without a pass over every note."""
    from vaultmem.index import steps

    (vault.root / "B.md").rename(vault.root / "B2.md")
    reconcile(vault)
    (vault.root / "B2.md").rename(vault.root / "sub/B3.md")
    reconcile(vault)

    def no_full_pass(*_: object) -> None:
        raise AssertionError("every id was assigned again")

    monkeypatch.setattr(steps, "assign_ids_salted", no_full_pass)
    (vault.root / "A.md").unlink()
    reconcile(vault)
    monkeypatch.undo()
    assert_equals_rebuild(vault)


def test_a_journal_of_moves_back_and_forth_is_compacted_and_keeps_the_ids(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write replays the journal; one grown past its bound by moves is rewritten as
    what it replays to, under the writer lock, and the ids (and the basis) stay."""
    from vaultmem.index import journal

    monkeypatch.setattr(journal, "COMPACT_LINES", 4)
    for _ in range(3):
        (vault.root / "B.md").rename(vault.root / "sub/B.md")
        reconcile(vault)
        (vault.root / "sub/B.md").rename(vault.root / "B.md")
        reconcile(vault)
    lines = (vault.state_dir / journal.JOURNAL_NAME).read_bytes().splitlines()
    assert len(lines) <= 5  # compacted on the way, then a few appends
    ids = dict(query(vault, "SELECT path, id FROM notes"))
    basis = query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'")
    assert journal.read_renames(vault.state_dir).ids == {"B.md": ids["B.md"]}
    assert_equals_rebuild(vault)
    assert dict(query(vault, "SELECT path, id FROM notes")) == ids
    assert query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'") == basis


def test_an_edit_after_renames_reads_no_journal_and_keeps_the_ids(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first write after a rename reads the journal and keeps its digest; an edit after
    it takes that digest (its ids stand) and reads nothing, so its cost does not grow with
    the renames on record; the next rename is read again. Every step equals a rebuild."""
    from vaultmem.index import journal

    (vault.root / "B.md").rename(vault.root / "sub/B2.md")
    reconcile(vault)  # appends the rename
    (vault.root / "A.md").write_text("# A\n\nfirst edit\n", encoding="utf-8")
    reconcile(vault)  # reads the journal, keeps its facts
    facts = (vault.state_dir / journal.FACTS_NAME).read_bytes()

    def unread(*_: object) -> None:
        raise AssertionError("the journal was read")

    monkeypatch.setattr(journal, "read_renames", unread)
    (vault.root / "A.md").write_text("# A\n\nsecond edit\n", encoding="utf-8")
    assert counts(reconcile(vault))[1] == 1
    monkeypatch.undo()
    assert (vault.state_dir / journal.FACTS_NAME).read_bytes() == facts
    assert_equals_rebuild(vault)

    (vault.root / "sub/B2.md").rename(vault.root / "B.md")
    reconcile(vault)
    (vault.root / "A.md").write_text("# A\n\nthird edit\n", encoding="utf-8")
    reconcile(vault)
    assert (vault.state_dir / journal.FACTS_NAME).read_bytes() != facts
    ids = dict(query(vault, "SELECT path, id FROM notes"))
    assert journal.read_renames(vault.state_dir).ids == {"B.md": ids["B.md"]}
    assert_equals_rebuild(vault)
    assert dict(query(vault, "SELECT path, id FROM notes")) == ids


def test_a_note_that_goes_gives_its_id_back_to_the_note_it_salted(vault: Config) -> None:
    """A clash salts the loser's id; when the winner goes, every id is assigned again and the
    loser takes its own back, as a rebuild gives it."""
    write(vault.root, "agent-memory/global/t.md", "---\nid: t-one\n---\n# T\n")
    write(vault.root, "agent-memory/global/a.md", "---\nid: t-one\n---\n# A\n")
    reconcile(vault)
    assert note_id(vault, "agent-memory/global/t.md") != "t-one"  # a.md sorts first, wins
    assert query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'")[0][0].endswith(
        ":salted"
    )
    (vault.root / "agent-memory/global/a.md").unlink()
    reconcile(vault)
    assert note_id(vault, "agent-memory/global/t.md") == "t-one"
    assert_equals_rebuild(vault)


def test_an_index_that_does_not_say_whether_ids_are_salted_assigns_them_once(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index written before the basis said so (the journal's digest alone, in `meta` and
    the state record): a note that goes makes every id be assigned again, once, and the run
    records the whole basis."""
    from vaultmem.index import steps
    from vaultmem.storage.index_state import CHANGE_NAME
    from vaultmem.storage.index_state import RECORD_NAME as STATE_RECORD

    (basis,) = query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'")[0]
    con = duckdb.connect(str(vault.index_path))
    con.execute("UPDATE meta SET value = ? WHERE key = 'rename_journal'", [basis.rsplit(":", 1)[0]])
    con.close()
    for name in (STATE_RECORD, CHANGE_NAME, RECORD_NAME):  # the index's rows are read
        (vault.state_dir / name).unlink(missing_ok=True)
    calls: list[object] = []
    real = steps.assign_ids_salted
    monkeypatch.setattr(steps, "assign_ids_salted", lambda *a: calls.append(a) or real(*a))
    (vault.root / "B.md").unlink()
    reconcile(vault)
    assert len(calls) == 1
    assert query(vault, "SELECT value FROM meta WHERE key = 'rename_journal'") == [(basis,)]
    assert_equals_rebuild(vault)


@pytest.mark.slow
def test_a_commit_between_the_walk_and_the_state_read_is_seen(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk comes before the state read; a writer that commits in between must not make
    this run delete a note its walk could not see yet."""
    from vaultmem.index import reconcile as rc

    real = rc.walk

    def walk_then_another_writer(config: Config, rebuild: bool) -> rc.Survey:
        survey = real(config, rebuild)
        monkeypatch.setattr(rc, "walk", real)
        write(vault.root, "G.md", "# G\n")
        reconcile(vault)  # another writer indexes G after this run's walk
        return survey

    monkeypatch.setattr(rc, "walk", walk_then_another_writer)
    write(vault.root, "B.md", "# B\n\nbeta changed\n")
    reconcile(vault)
    assert query(vault, "SELECT count(*) FROM notes WHERE path = 'G.md'") == [(1,)]
    assert_equals_rebuild(vault)


# -- the index state beside the index -----------------------------------------------------------


def _count_state_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from vaultmem.storage import index_writes

    reads: list[int] = []
    real = index_writes.read_state

    def counted(*args: Any) -> Any:
        reads.append(1)
        return real(*args)

    monkeypatch.setattr(index_writes, "read_state", counted)
    return reads


def test_an_edit_takes_the_recorded_state_instead_of_the_rows(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _count_state_reads(monkeypatch)
    write(vault.root, "B.md", "# B\n\nbeta words and more [[A]]\n")
    assert counts(reconcile(vault)) == (0, 1, 0, 0, 2)
    write(vault.root, "D.md", "# D\n\n[[B]]\n")
    (vault.root / "sub/C.md").unlink()
    assert counts(reconcile(vault, paths=["D.md", "sub/C.md"])) == (1, 0, 1, 0, 0)
    assert reads == []  # each run found the state its predecessor recorded
    assert_state_record_matches(vault)
    assert_equals_rebuild(vault)


def test_the_next_process_takes_the_base_record_with_its_change(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small writes leave the base record alone and record their change beside it; a new
    process (nothing kept in memory) applies the change, and reads no rows."""
    from vaultmem.storage import index_state

    base = (vault.state_dir / index_state.RECORD_NAME).read_bytes()
    write(vault.root, "B.md", "# B\n\nbeta words, edited\n")
    write(vault.root, "E.md", "# E\n\nnew [[A]]\n")
    assert counts(reconcile(vault)) == (1, 1, 0, 0, 2)
    (vault.root / "E.md").unlink()
    write(vault.root, "pic.png", "not an image")
    assert counts(reconcile(vault, paths=["E.md", "pic.png"])) == (0, 0, 1, 0, 0)
    assert (vault.state_dir / index_state.RECORD_NAME).read_bytes() == base
    assert (vault.state_dir / index_state.CHANGE_NAME).exists()
    monkeypatch.setattr(index_state, "_KEPT", {})  # a new process
    reads = _count_state_reads(monkeypatch)
    write(vault.root, "A.md", "# A\n\nalpha words, edited [[pic.png]]\n")
    assert counts(reconcile(vault)) == (0, 1, 0, 0, 2)
    assert reads == []
    assert_state_record_matches(vault)
    assert_equals_rebuild(vault)


def test_warming_up_keeps_the_recorded_state_in_the_process(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the watcher does after its start-up sweep: its first batch then reads nothing."""
    from vaultmem.index.reconcile import warm_up
    from vaultmem.storage import index_state
    from vaultmem.storage.last_survey import index_token

    monkeypatch.setattr(index_state, "_KEPT", {})
    token = index_token(vault.index_path)
    assert index_state.kept_state_record(vault.state_dir, token) is None
    warm_up(vault)
    kept = index_state.kept_state_record(vault.state_dir, token)
    assert kept is not None and sorted(kept.paths) == ["A.md", "B.md", "sub/C.md"]


def test_after_warming_up_a_first_save_compiles_imports_and_folds_nothing(vault: Config) -> None:
    """The watcher's first batch as quick as its next ones: in a fresh process, after the
    start-up sweep and `warm_up`, a one-note edit compiles no regex (mistune compiles a
    rule's scanner on its first parse), imports no module (DuckDB's binding imports its
    parameter types on the first bound list) and builds no new link resolver (the vault's
    names folded once)."""
    code = f"""
import json, re, sys
from pathlib import Path
from vaultmem.core.config import load_config
from vaultmem.index import preparation
from vaultmem.index.reconcile import reconcile, warm_up
config = load_config(Path({str(vault.root)!r}))
reconcile(config)  # the watcher's start-up sweep: a no-op here
warm_up(config)
resolvers = list(preparation._LAST_RESOLVER)
compiled = []
real = re._compiler.compile
re._compiler.compile = lambda *a: compiled.append(str(a[0])[:40]) or real(*a)
modules = set(sys.modules)
Path({str(vault.root / "A.md")!r}).write_text(
    "# A\\n\\nalpha words, edited [[B]] and [[sub/C#C]]\\n\\n- a list\\n1. ordered\\n> quote\\n",
    encoding="utf-8",
)
report = reconcile(config, paths=["A.md"])
same = [r for _, r in preparation._LAST_RESOLVER] == [r for _, r in resolvers]
print(json.dumps([report.changed, compiled, sorted(set(sys.modules) - modules), same]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    changed, compiled, imported, same_resolver = json.loads(done.stdout.splitlines()[-1])
    assert changed == 1
    assert (compiled, imported, same_resolver) == ([], [], True), (compiled, imported)


def test_a_recorded_state_of_another_index_file_is_not_trusted(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = duckdb.connect(str(vault.index_path))  # another writer: the index file moves on
    con.execute("UPDATE notes SET size = size + 1 WHERE path = 'B.md'")
    con.close()
    reads = _count_state_reads(monkeypatch)
    write(vault.root, "A.md", "# A\n\nalpha words, edited [[B]]\n")
    report = reconcile(vault)
    assert reads == [1] and report.changed == 1
    assert report.touched == 1  # B.md's stored size moved: read again, same bytes


def test_a_resolver_over_the_very_same_files_is_taken_again() -> None:
    """The watcher's next batch gets the same file set back when no file came or went, and
    with it the resolver it made (what it indexed included); another set, even an equal one,
    gets a resolver of its own."""
    from vaultmem.index.preparation import link_resolver

    files = frozenset({"A.md", "sub/C.md", "pic.png"})
    first = link_resolver(files)()
    assert first.resolve("C", "A.md") == "sub/C.md"
    assert link_resolver(files)() is first
    other = link_resolver(frozenset(set(files)))()
    assert other is not first and other.resolve("C", "A.md") == "sub/C.md"


def test_a_resolver_taken_again_counts_only_this_runs_keys() -> None:
    """Each `link_resolver` call is a run: two runs of 20 new keys each stay under the
    resolver's 32 a run and index 40 names, not every file of the set."""
    from vaultmem.index.preparation import link_resolver

    files = frozenset(f"n{i}.md" for i in range(60))
    for run in range(2):
        made = link_resolver(files)()
        for i in range(20 * run, 20 * run + 20):
            assert made.resolve(f"n{i}", "a.md") == f"n{i}.md"
    assert len(made) == 40


def test_the_walks_files_stand_for_the_records_when_their_listings_match(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-note edit compares the state record's files with its walk's as two byte strings
    (`index_state.ListedFiles`); equal, the state takes the walk's very set, and the set
    comparisons after it (`steps.same_files`, `link_work`) have nothing to do. A file that
    came makes them differ, and the state's files are then the record's own."""
    from vaultmem.index.reconcile import recorded_state
    from vaultmem.index.survey import walk
    from vaultmem.storage import index_state
    from vaultmem.storage.last_survey import index_token

    monkeypatch.setattr(index_state, "_KEPT", {})  # a new process reads the record's file
    token = index_token(vault.index_path)
    walked = walk(vault, False)
    state = recorded_state(vault, token, walked)
    assert state is not None and state.files is walked.files
    own = recorded_state(vault, token)  # without a walk: its own set, equal
    assert own is not None and own.files is not walked.files and own.files == walked.files
    again = recorded_state(vault, token)  # the record's set is made once: the same resolver
    assert again is not None and again.files is own.files
    monkeypatch.setattr(index_state, "_KEPT", {})
    (vault.root / "sub" / "brand new.md").write_text("# new\n", encoding="utf-8")
    walked = walk(vault, False)
    state = recorded_state(vault, token, walked)
    assert state is not None and state.files is not walked.files
    assert walked.files - state.files == {"sub/brand new.md"}
    report = reconcile(vault)
    assert (report.added, report.notes) == (1, len(walked.notes))

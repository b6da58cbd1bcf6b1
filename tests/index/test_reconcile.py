"""Reconcile on real files and a real DuckDB file: no-op runs, incremental ≡ rebuild, identity
across renames, the vault left untouched, link re-resolution, problems and index recovery."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.helpers import dump_index
from vaultmem.core.config import Config
from vaultmem.index.reconcile import ReconcileReport, reconcile
from vaultmem.storage.schema import DERIVED_TABLES
from vaultmem.vault import Vault

# -- helpers -------------------------------------------------------------------------------------


def dump(config: Config) -> dict[str, list[tuple[Any, ...]]]:
    """Every derived table's rows, sorted: what "the same index" means."""
    return dump_index(config.index_path)


def query(config: Config, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(config.index_path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def note_id(config: Config, path: str) -> str:
    rows = query(config, "SELECT id FROM notes WHERE path = ?", [path])
    assert rows, f"{path} is not indexed"
    return str(rows[0][0])


def link_rows(config: Config, source: str) -> list[tuple[Any, ...]]:
    return query(
        config,
        "SELECT l.target, l.subpath, l.target_path, l.target_id, l.subpath_found FROM links l "
        "JOIN notes n ON n.id = l.source_id WHERE n.path = ? ORDER BY l.ord",
        [source],
    )


def assert_equals_rebuild(config: Config) -> dict[str, list[tuple[Any, ...]]]:
    """The incrementally maintained index must hold exactly what a rebuild writes."""
    incremental = dump(config)
    # `search_stats` counts the notes by their ord-0 document: check it against the ids.
    con = duckdb.connect(str(config.index_path), read_only=True)
    try:
        counted = con.execute(
            "SELECT count(*), count(DISTINCT note_id), coalesce(sum(length), 0) FROM documents"
        ).fetchall()
        assert con.execute("SELECT * FROM search_stats").fetchall() == counted
    finally:
        con.close()
    reconcile(config, rebuild=True)
    rebuilt = dump(config)
    for table in DERIVED_TABLES:
        assert incremental[table] == rebuilt[table], f"table {table} differs from a rebuild"
    return rebuilt


def assert_state_record_matches(config: Config) -> None:
    """The index state a writer recorded beside the index (`storage.index_state`) is, while the
    index is still the file it names, exactly what reading the index gives."""
    from vaultmem.index.steps import READ_CODES, SCAN_CODES
    from vaultmem.storage import store
    from vaultmem.storage.index_state import kept_state_record, read_state_record
    from vaultmem.storage.index_writes import read_state
    from vaultmem.storage.last_survey import index_token

    record = read_state_record(config.state_dir)
    kept = kept_state_record(config.state_dir, index_token(config.index_path))
    if kept is not None:  # what this process keeps is what it wrote to the file
        assert record is not None
        # Row order is free: a change file's rows come after the base's.
        assert sorted(zip(*kept[2:8], strict=True)) == sorted(zip(*record[2:8], strict=True))
        assert sorted(kept.files) == sorted(record.files)
        assert set(kept.scan_problems) == set(record.scan_problems)
        assert kept[:2] + kept[10:] == record[:2] + record[10:]
    if record is None or record.token != index_token(config.index_path):
        return  # no record for this index: the next run reads the rows
    con = store.connect(config.index_path, read_only=True)
    try:
        state = read_state(con, (*SCAN_CODES, *READ_CODES))
    finally:
        con.close()
    rows = zip(
        record.paths,
        record.ids,
        record.sizes,
        record.mtimes,
        record.hashes,
        record.claims,
        strict=True,
    )
    assert sorted(rows) == sorted(state.notes)
    assert sorted(record.files) == sorted(state.files)
    assert set(record.scan_problems) == state.scan_problems
    assert (record.problem_count, record.journal) == (state.problem_count, state.journal)


_CLOCK = [1_700_000_000_000_000_000]


def write(root: Path, rel: str, text: str | bytes) -> None:
    """Write a file and give it a fresh mtime: a coarse file-system clock must not hide edits."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    _CLOCK[0] += 1_000_000_000
    os.utime(path, ns=(_CLOCK[0], _CLOCK[0]))


def vault_files(root: Path) -> dict[str, tuple[str, int]]:
    """(hash, mtime_ns) of every file outside `.vaultmem/`."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".vaultmem" or not path.is_file():
            continue
        out[rel.as_posix()] = (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
    return out


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    """An empty vault, the whole of it one project scope."""
    root = tmp_path / "vault"
    root.mkdir()
    return Vault.init(root).config


def counts(report: ReconcileReport) -> tuple[int, ...]:
    return (report.added, report.changed, report.removed, report.renamed, report.unchanged)


# -- the example vault ---------------------------------------------------------------------------


def test_example_vault_counts(example_vault: Path) -> None:
    config = Vault(example_vault).config
    report = reconcile(config)
    assert (report.mode, report.notes, report.added, report.problems) == ("full", 30, 30, 2)
    assert report.warnings == ()
    scopes = dict(query(config, "SELECT scope, count(*) FROM notes GROUP BY scope"))
    assert scopes == {"global": 11, "project": 14, "session": 5}
    assert query(config, "SELECT path, code FROM problems ORDER BY path") == [
        ("Journal/2026-11-26.md", "frontmatter_invalid"),
        ("Knowledge/Git workflow.sync-conflict-20261120-101500-ABCDEFG.md", "conflict_copy"),
    ]
    assert query(config, "SELECT count(*) FROM notes WHERE managed") == [(6,)]
    unresolved = {t for (t,) in query(config, "SELECT target FROM links WHERE target_path IS NULL")}
    assert unresolved == {"Capacity planning", "Style guide for runbooks"}
    # `[[Meeting notes]]` resolves to the unmapped root file: exact path wins.
    assert ("Meeting notes.md",) in query(
        config, "SELECT DISTINCT target_path FROM links WHERE target = 'Meeting notes'"
    )
    # The sync-conflict copy and the excluded folders are not notes.
    paths = {p for (p,) in query(config, "SELECT path FROM notes")}
    assert not any("sync-conflict" in p or "Templates" in p or "Archive" in p for p in paths)


def test_second_reconcile_changes_nothing(example_vault: Path) -> None:
    config = Vault(example_vault).config
    reconcile(config)
    before = dump(config)
    report = reconcile(config)
    assert counts(report) == (0, 0, 0, 0, 30)
    assert (report.touched, report.notes, report.problems) == (0, 30, 2)
    assert dump(config) == before
    assert_equals_rebuild(config)


def test_reconcile_changes_no_file_outside_the_state_folder(example_vault: Path) -> None:
    config = Vault(example_vault).config
    before = vault_files(example_vault)
    reconcile(config)
    write(example_vault, "Knowledge/New.md", "# New\n[[DuckDB]]\n")
    (example_vault / "Journal" / "2026-11-27.md").rename(example_vault / "Journal" / "Moved.md")
    middle = vault_files(example_vault)
    reconcile(config)
    reconcile(config, rebuild=True)
    assert vault_files(example_vault) == middle
    del middle["Knowledge/New.md"], before["Journal/2026-11-27.md"]
    assert middle.pop("Journal/Moved.md") is not None
    assert middle == before


# -- links into an edited note ----------------------------------------------------------------


def test_links_into_a_note_move_with_its_outline_and_only_then(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit of a note's text keeps its outline: the links into it are not looked up again
    (a scan of every link). An edit of a heading, a heading's level or a block id moves them
    as a rebuild would."""
    from vaultmem.index import transaction

    steady: list[frozenset[str]] = []
    real = transaction.steady_targets

    def recorded(*args: Any) -> frozenset[str]:
        steady.append(real(*args))
        return steady[-1]

    monkeypatch.setattr(transaction, "steady_targets", recorded)
    root = vault.root
    write(root, "A.md", "[[B#Sec]] [[B#^blk]] [[B#Sec#Deep]] [[B]]\n")
    write(root, "B.md", "## Sec\n\ntext ^blk\n")
    reconcile(vault)
    sql = "SELECT subpath, subpath_found FROM links WHERE target_path = 'B.md' ORDER BY ord"
    found = {"#Sec": True, "#^blk": True, "#Sec#Deep": False, "": None}
    assert dict(query(vault, sql)) == found
    for text, steadily, moved in [
        ("## Sec\n\nother text ^blk\n", True, {}),  # the text alone
        ("## Sec\n\ntext ^blk\n\n### Deep\n", False, {"#Sec#Deep": True}),
        ("## Sec\n\ntext ^other\n\n### Deep\n", False, {"#^blk": False}),
        ("## Sec\n\ntext ^other\n\n# Deep\n", False, {"#Sec#Deep": False}),  # not deeper
        ("## Sec\n\nmore text ^OTHER\n\n# Deep\n", True, {}),  # ids fold their case
    ]:
        write(root, "B.md", text)
        steady.clear()
        reconcile(vault)
        assert steady == [frozenset({"B.md"} if steadily else ())], text
        found |= moved
        assert dict(query(vault, sql)) == found, text
        assert_equals_rebuild(vault)


def _structure_rowids(config: Config, note_id: str) -> list[tuple[Any, ...]]:
    """The rowids of one note's aliases, tags, headings, blocks and links rows: rows written
    again get new ones, rows left in place keep theirs."""
    sql = " UNION ALL ".join(
        f"SELECT '{table}', rowid FROM {table} WHERE {key} = $1"
        for table, key in [
            ("aliases", "note_id"),
            ("tags", "note_id"),
            ("headings", "note_id"),
            ("blocks", "note_id"),
            ("links", "source_id"),
        ]
    )
    return sorted(query(config, sql, [note_id]))


def test_an_edit_of_a_notes_text_alone_leaves_its_structure_rows_in_place(vault: Config) -> None:
    """`notes.structure` unchanged: the note's links, headings, blocks, tags and aliases stay
    as stored (no delete, no insert); changed, they are written again. Either way the index
    is what a rebuild writes."""
    root = vault.root
    write(root, "B.md", "# B\n\n## Sec\n\ntext ^blk\n")
    note = "---\naliases: [Bee note]\ntags: [x/y]\n---\n# A\n\n[[B#Sec]] [[B#^blk]] [[C]] #t\n"
    write(root, "A.md", note)
    reconcile(vault)
    (a_id,) = query(vault, "SELECT id FROM notes WHERE path = 'A.md'")[0]
    rows = _structure_rowids(vault, a_id)
    assert {table for table, _ in rows} == {"aliases", "tags", "headings", "links"}
    write(root, "A.md", note + "\nMore text, no link.\n")  # appended: every line stays
    reconcile(vault)
    assert _structure_rowids(vault, a_id) == rows
    assert_equals_rebuild(vault)
    rows = _structure_rowids(vault, a_id)  # the rebuild wrote them anew
    write(root, "A.md", note.replace("[[C]]", "[[D]]") + "\nMore text, no link.\n")
    reconcile(vault)
    assert _structure_rowids(vault, a_id) != rows
    assert query(vault, "SELECT target FROM links WHERE source_id = $1 AND ord = 2", [a_id]) == [
        ("D",)
    ]
    assert_equals_rebuild(vault)


def test_kept_links_still_follow_other_notes_and_files(vault: Config) -> None:
    """A note whose structure rows stay keeps links that resolve as a rebuild resolves them:
    into a note whose outline changed in the same run, and to a file that came in it."""
    root = vault.root
    write(root, "B.md", "## Sec\n\ntext\n")
    write(root, "A.md", "[[B#Sec]] [[B#Other]] [[C]]\n")
    reconcile(vault)
    write(root, "A.md", "[[B#Sec]] [[B#Other]] [[C]]\nmore text\n")
    write(root, "B.md", "## Other\n\ntext\n")  # the outline moves in the same run
    reconcile(vault)
    sql = "SELECT subpath, subpath_found FROM links WHERE target_path = 'B.md' ORDER BY ord"
    assert query(vault, sql) == [("#Sec", False), ("#Other", True)]
    assert_equals_rebuild(vault)
    (a_id,) = query(vault, "SELECT id FROM notes WHERE path = 'A.md'")[0]
    rows = _structure_rowids(vault, a_id)
    write(root, "A.md", "[[B#Sec]] [[B#Other]] [[C]]\nmore text, again\n")
    write(root, "C.md", "# C\n")  # the dangling link finds a file in the same run
    reconcile(vault)
    assert _structure_rowids(vault, a_id) == rows  # kept, and answered again
    assert query(vault, "SELECT target_path FROM links WHERE target = 'C'") == [("C.md",)]
    assert_equals_rebuild(vault)


def test_a_walk_rewrites_only_the_scan_problems_that_changed(vault: Config) -> None:
    """Every whole-vault walk re-examines the scan problems (here conflict copies): an edit
    elsewhere leaves their rows as they are, and copies that come and go are written as a
    rebuild would write them."""
    root = vault.root
    write(root, "Note.md", "# Note\n\ntext\n")
    for i in range(3):
        write(root, f"Note.sync-conflict-2026112{i}-101500-ABCDEFG.md", "copy\n")
    reconcile(vault)
    sql = "SELECT rowid, path FROM problems WHERE code = 'conflict_copy' ORDER BY path"
    before = query(vault, sql)
    assert len(before) == 3
    write(root, "Note.md", "# Note\n\nedited text\n")
    reconcile(vault)
    assert query(vault, sql) == before  # the same rows, not deleted and written again
    (root / "Note.sync-conflict-20261120-101500-ABCDEFG.md").unlink()
    write(root, "Note.sync-conflict-20261125-101500-ABCDEFG.md", "copy\n")
    write(root, "Note.md", "# Note\n\nedited again\n")
    reconcile(vault)
    after = query(vault, sql)
    assert [p for _, p in after] == [
        "Note.sync-conflict-20261121-101500-ABCDEFG.md",
        "Note.sync-conflict-20261122-101500-ABCDEFG.md",
        "Note.sync-conflict-20261125-101500-ABCDEFG.md",
    ]
    assert_equals_rebuild(vault)


def test_a_save_that_keeps_its_links_reads_no_other_notes_headings(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The subpath links of an edited note into notes this run did not change keep their
    stored answers (no headings read); a target changed in the same run, or a new subpath,
    is checked against the headings, as a rebuild checks it."""
    from vaultmem.storage import index_writes

    read: list[list[str]] = []
    real = index_writes.outlines_by_path

    def recorded(con: Any, paths: Any) -> Any:
        read.append(list(paths))
        return real(con, paths)

    monkeypatch.setattr(index_writes, "outlines_by_path", recorded)
    root = vault.root
    write(root, "B.md", "## Sec\n\ntext ^blk\n")
    write(root, "C.md", "## Other\n")
    write(root, "A.md", "[[B#Sec]] [[B#^blk]] [[B#Gone]] [[C#Other]]\n")
    reconcile(vault)
    sql = "SELECT subpath, subpath_found FROM links WHERE source_id = ? ORDER BY ord"
    a = note_id(vault, "A.md")
    found = [("#Sec", True), ("#^blk", True), ("#Gone", False), ("#Other", True)]
    assert query(vault, sql, [a]) == found
    for files, texts, answers, checked in [
        ({"A.md"}, ["words "], found, []),  # the text alone: every answer stored
        ({"A.md", "C.md"}, ["more ", "## Renamed\n"], [*found[:3], ("#Other", False)], ["C.md"]),
        ({"A.md"}, ["again "], [*found[:3], ("#Other", False)], []),
        ({"A.md", "B.md"}, ["and ", "## Sec\n\nedited text ^blk\n"], None, []),  # B steady
    ]:
        for path, text in zip(sorted(files), texts, strict=True):
            if path == "A.md":
                write(root, path, text + "[[B#Sec]] [[B#^blk]] [[B#Gone]] [[C#Other]]\n")
            else:
                write(root, path, text)
        read.clear()
        reconcile(vault)
        expected = answers if answers is not None else query(vault, sql, [a])
        assert query(vault, sql, [a]) == expected, files
        assert sorted(p for batch in read for p in batch) == checked, files
        assert_equals_rebuild(vault)
    write(root, "A.md", "[[B#Sec]] [[B#New]]\n")  # a subpath not stored before: checked
    read.clear()
    reconcile(vault)
    assert query(vault, sql, [a]) == [("#Sec", True), ("#New", False)]
    assert sorted(p for batch in read for p in batch) == ["B.md"]
    assert_equals_rebuild(vault)


# -- incremental ≡ rebuild under random edits ------------------------------------------------------

NAMES = ("Alpha", "Beta", "Gamma", "Delta")
FOLDERS = ("", "A/", "A/B/")
HEADINGS = ("Intro", "Plan", "Notes")
ATTACHMENTS = ("pic.png", "A/pic.png", "doc.pdf")
TOPIC_FOLDER = "agent-memory/global/"


def render(spec: dict[str, Any]) -> str:
    front = []
    if spec.get("id"):
        front.append(f"id: {spec['id']}")
    if spec["aliases"]:
        front.append("aliases: [" + ", ".join(spec["aliases"]) + "]")
    out = "---\n" + "\n".join(front) + "\n---\n" if front else ""
    for heading in spec["headings"]:
        out += f"## {heading}\n\ntext about {heading.lower()}\n\n"
    for target, subpath in spec["links"]:
        out += f"see [[{target}{subpath}]]\n"
    return out


specs = st.fixed_dictionaries(
    {
        "aliases": st.lists(st.sampled_from(("al", "bo", "Gamma")), max_size=2, unique=True),
        "headings": st.lists(st.sampled_from(HEADINGS), max_size=2, unique=True),
        "links": st.lists(
            st.tuples(
                st.sampled_from((*NAMES, "A/Alpha", "pic.png", "doc.pdf", "Missing")),
                st.sampled_from(("", "#Intro", "#Plan", "#^b1", "#page=2")),
            ),
            min_size=1,
            max_size=3,
        ),
    }
)
note_paths = st.builds(lambda f, n: f + n + ".md", st.sampled_from(FOLDERS), st.sampled_from(NAMES))
topic_paths = st.sampled_from(("k1", "k2", "k3")).map(lambda k: f"{TOPIC_FOLDER}{k}.md")


class IncrementalEqualsRebuild(RuleBasedStateMachine):
    """Random edits of a small vault; after each reconcile the index equals a rebuild."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="vaultmem-sm-"))
        root = self.tmp / "vault"
        root.mkdir()
        self.config = Vault.init(root).config
        self.root = self.config.root
        self.files: dict[str, dict[str, Any]] = {}
        self.ids: dict[str, str] = {}  # path → id of notes that only moved since the last run

    def teardown(self) -> None:
        try:
            self.reconcile_and_compare()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _settle(self, settle: bool) -> None:
        """Sometimes reconcile right away, so that changes also arrive one at a time."""
        if settle:
            reconcile(self.config)
            assert_state_record_matches(self.config)

    @initialize()
    def start(self) -> None:
        reconcile(self.config)

    def _write(self, path: str, spec: dict[str, Any]) -> None:
        self.files[path] = spec
        self.ids.pop(path, None)
        write(self.root, path, render(spec))

    @rule(path=note_paths, spec=specs, settle=st.booleans())
    def create_or_edit(self, path: str, spec: dict[str, Any], settle: bool) -> None:
        self._write(path, spec)
        self._settle(settle)

    @rule(key=topic_paths, topic_id=st.sampled_from(("t-one", "t-two")), spec=specs)
    def write_topic(self, key: str, topic_id: str, spec: dict[str, Any]) -> None:
        self._write(key, {**spec, "id": topic_id})

    @rule(data=st.data(), new=st.one_of(note_paths, topic_paths), settle=st.booleans())
    def rename_or_move(self, data: st.DataObject, new: str, settle: bool) -> None:
        if not self.files or new in self.files:
            return
        old = data.draw(st.sampled_from(sorted(self.files)))
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        (self.root / old).rename(self.root / new)
        self.files[new] = self.files.pop(old)
        self._settle(settle)

    @rule(data=st.data(), settle=st.booleans())
    def delete(self, data: st.DataObject, settle: bool) -> None:
        if self.files:
            path = data.draw(st.sampled_from(sorted(self.files)))
            (self.root / path).unlink()
            del self.files[path]
            self._settle(settle)

    @rule(data=st.data(), aliases=st.lists(st.sampled_from(("al", "bo", "zed")), max_size=2))
    def change_aliases(self, data: st.DataObject, aliases: list[str]) -> None:
        if self.files:
            path = data.draw(st.sampled_from(sorted(self.files)))
            self._write(path, {**self.files[path], "aliases": sorted(set(aliases))})

    @rule(data=st.data(), headings=st.lists(st.sampled_from(HEADINGS), max_size=2, unique=True))
    def change_headings(self, data: st.DataObject, headings: list[str]) -> None:
        if self.files:
            path = data.draw(st.sampled_from(sorted(self.files)))
            self._write(path, {**self.files[path], "headings": headings})
            reconcile(self.config)

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        if self.files:
            path = data.draw(st.sampled_from(sorted(self.files)))
            _CLOCK[0] += 1_000_000_000
            os.utime(self.root / path, ns=(_CLOCK[0], _CLOCK[0]))

    @rule(path=st.sampled_from(ATTACHMENTS), present=st.booleans(), settle=st.booleans())
    def attachment(self, path: str, present: bool, settle: bool) -> None:
        if present:
            write(self.root, path, b"\x89PNG fake")
        else:
            (self.root / path).unlink(missing_ok=True)
        self._settle(settle)

    @rule()
    def reconcile_and_compare(self) -> None:
        report = reconcile(self.config)
        assert_state_record_matches(self.config)
        assert report.notes == len(self.files)
        assert_equals_rebuild(self.config)
        again = reconcile(self.config)
        assert counts(again) == (0, 0, 0, 0, len(self.files))

    @invariant()
    def journal_outside_the_vault(self) -> None:
        assert not (self.root / "renames.jsonl").exists()


TestIncrementalEqualsRebuild = IncrementalEqualsRebuild.TestCase
TestIncrementalEqualsRebuild.settings = settings(
    max_examples=10,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- identity --------------------------------------------------------------------------------------


def test_rename_and_move_keep_the_note_id(vault: Config) -> None:
    root = vault.root
    write(root, "Plan.md", "# Plan\nbody\n")
    write(root, "Other.md", "see [[Plan]] and [[Plan Renamed]]\n")
    reconcile(vault)
    original = note_id(vault, "Plan.md")

    (root / "Plan.md").rename(root / "Plan Renamed.md")
    report = reconcile(vault)
    assert (report.renamed, report.added, report.removed) == (1, 0, 0)
    assert note_id(vault, "Plan Renamed.md") == original

    (root / "Sub").mkdir()
    (root / "Plan Renamed.md").rename(root / "Sub" / "Plan Renamed.md")
    assert reconcile(vault).renamed == 1
    assert note_id(vault, "Sub/Plan Renamed.md") == original
    # The link that named the old name is unresolved now; the other follows the note.
    assert [(r[0], r[2], r[3]) for r in link_rows(vault, "Other.md")] == [
        ("Plan", None, None),
        ("Plan Renamed", "Sub/Plan Renamed.md", original),
    ]
    # A rebuild replays .vaultmem/renames.jsonl, so the id survives deleting the index.
    vault.index_path.unlink()
    reconcile(vault)
    assert note_id(vault, "Sub/Plan Renamed.md") == original
    assert_equals_rebuild(vault)


def test_managed_topic_keeps_its_frontmatter_id(vault: Config) -> None:
    root = vault.root
    write(root, "agent-memory/project/x/key.md", "---\nid: topic-42\n---\n# key\n")
    write(root, "Human.md", "[[key]]\n")
    reconcile(vault)
    assert note_id(vault, "agent-memory/project/x/key.md") == "topic-42"
    # Moved and edited at once: no rename is detected, the claimed id still holds.
    (root / "agent-memory/project/x/key.md").unlink()
    write(root, "agent-memory/global/key.md", "---\nid: topic-42\n---\n# key\nmore\n")
    report = reconcile(vault)
    assert (report.renamed, report.added, report.removed) == (0, 1, 1)
    assert note_id(vault, "agent-memory/global/key.md") == "topic-42"
    assert link_rows(vault, "Human.md")[0][2:4] == ("agent-memory/global/key.md", "topic-42")
    assert_equals_rebuild(vault)


def test_a_note_whose_id_moves_keeps_its_postings(vault: Config) -> None:
    """A topic that claims an unchanged note's id takes it; the note moves to another id
    without being parsed again, and its postings (keyed by the id's hash) move with it."""
    root = vault.root
    write(root, "Quokka.md", "# Quokka\nmarsupial of Rottnest island\n")
    reconcile(vault)
    taken = note_id(vault, "Quokka.md")
    write(root, "agent-memory/global/claim.md", f"---\nid: {taken}\n---\n# claim\nnothing\n")
    report = reconcile(vault)
    assert (report.added, report.changed) == (1, 0)
    moved = note_id(vault, "Quokka.md")
    assert moved != taken
    assert Vault(root).search("rottnest marsupial", limit=3)[0].note_id == moved
    assert query(
        vault,
        "SELECT DISTINCT n.path FROM postings p JOIN notes n USING (note_key) "
        "WHERE p.term = 'rottnest'",
    ) == [("Quokka.md",)]
    assert_equals_rebuild(vault)


def test_identical_files_are_not_renames(vault: Config) -> None:
    root = vault.root
    write(root, "One.md", "same bytes\n")
    reconcile(vault)
    one = note_id(vault, "One.md")
    # A copy next to the original: a new note with its own id.
    write(root, "Copy.md", "same bytes\n")
    report = reconcile(vault)
    assert (report.added, report.renamed) == (1, 0)
    assert note_id(vault, "Copy.md") != one
    # One vanished note, two new files with its bytes: ambiguous, so a delete and two adds.
    (root / "One.md").unlink()
    write(root, "Two.md", "same bytes\n")
    write(root, "Three.md", "same bytes\n")
    report = reconcile(vault)
    assert (report.added, report.removed, report.renamed) == (2, 1, 0)
    assert one not in {note_id(vault, p) for p in ("Two.md", "Three.md", "Copy.md")}
    assert not (vault.state_dir / "renames.jsonl").exists()
    assert_equals_rebuild(vault)


def test_touched_file_is_not_reparsed(vault: Config) -> None:
    write(vault.root, "Note.md", "# Note\n")
    reconcile(vault)
    before = dump(vault)
    _CLOCK[0] += 1_000_000_000
    os.utime(vault.root / "Note.md", ns=(_CLOCK[0], _CLOCK[0]))
    report = reconcile(vault)
    assert (report.touched, report.changed, report.unchanged) == (1, 0, 1)
    after = dump(vault)
    assert query(vault, "SELECT mtime_ns FROM notes") == [(_CLOCK[0],)]
    assert {t: after[t] for t in DERIVED_TABLES if t != "notes"} == {
        t: before[t] for t in DERIVED_TABLES if t != "notes"
    }
    assert reconcile(vault).touched == 0
    assert_equals_rebuild(vault)


# -- link re-resolution ----------------------------------------------------------------------------


def test_links_re_resolve_when_targets_come_and_go(vault: Config) -> None:
    root = vault.root
    write(root, "Sub/Source.md", "[[Target]] and [[Target#Intro]]\n")
    reconcile(vault)
    assert [r[2] for r in link_rows(vault, "Sub/Source.md")] == [None, None]

    write(root, "Other/Target.md", "## Intro\n")
    reconcile(vault)
    target_id = note_id(vault, "Other/Target.md")
    assert link_rows(vault, "Sub/Source.md") == [
        ("Target", "", "Other/Target.md", target_id, None),
        ("Target", "#Intro", "Other/Target.md", target_id, True),
    ]
    assert_equals_rebuild(vault)

    write(root, "Other/Target.md", "## Outro\n")
    reconcile(vault)
    assert link_rows(vault, "Sub/Source.md")[1][4] is False
    assert_equals_rebuild(vault)

    # A same-name file in the linking note's folder is closer: both links move to it.
    write(root, "Sub/Target.md", "## Intro\n")
    reconcile(vault)
    closer = note_id(vault, "Sub/Target.md")
    assert [r[2:] for r in link_rows(vault, "Sub/Source.md")] == [
        ("Sub/Target.md", closer, None),
        ("Sub/Target.md", closer, True),
    ]
    assert_equals_rebuild(vault)

    (root / "Sub/Target.md").unlink()
    (root / "Other/Target.md").unlink()
    reconcile(vault)
    assert [r[2:] for r in link_rows(vault, "Sub/Source.md")] == [(None, None, None)] * 2
    assert_equals_rebuild(vault)


def test_links_re_resolved_together_keep_their_own_folder(vault: Config) -> None:
    """A run re-resolves stored links together, one answer per target, subpath and linking
    folder (`resolution_scope`): the same `[[Target]]` and the same relative `[[./Near]]`,
    stored in two folders' notes, each keep their own folder's answer."""
    root = vault.root
    for folder in ("A", "B"):
        write(root, f"{folder}/Source.md", "# Intro\n\n[[Target]] [[./Near]] [[#Intro]]\n")
        write(root, f"{folder}/Near.md", "near\n")
    write(root, "A/Target.md", "## Intro\n")
    reconcile(vault)
    assert {r[2] for r in link_rows(vault, "B/Source.md")} == {
        "A/Target.md",
        "B/Near.md",
        "B/Source.md",
    }

    write(root, "B/Target.md", "## Intro\n")  # closer for B/Source.md only
    for folder in ("A", "B"):  # every link of both sources re-resolved in this run
        write(root, f"{folder}/Near.md", "# Near\n")
    reconcile(vault)
    for folder in ("A", "B"):
        assert [r[2] for r in link_rows(vault, f"{folder}/Source.md")] == [
            f"{folder}/Target.md",
            f"{folder}/Near.md",
            f"{folder}/Source.md",
        ]
    assert_equals_rebuild(vault)


def test_attachment_links_follow_the_file(vault: Config) -> None:
    write(vault.root, "Note.md", "![[pic.png]]\n")
    reconcile(vault)
    assert link_rows(vault, "Note.md")[0][2] is None
    write(vault.root, "img/pic.png", b"\x89PNG")
    reconcile(vault)
    assert link_rows(vault, "Note.md")[0][2:4] == ("img/pic.png", None)
    assert_equals_rebuild(vault)
    (vault.root / "img/pic.png").unlink()
    reconcile(vault)
    assert link_rows(vault, "Note.md")[0][2] is None
    assert_equals_rebuild(vault)


# -- problems and recovery -------------------------------------------------------------------------


def test_broken_frontmatter_is_a_problem_until_fixed(vault: Config) -> None:
    write(vault.root, "Bad.md", "---\ntags: [a, b\n---\n# Bad\n")
    report = reconcile(vault)
    assert report.problems == 1
    assert query(vault, "SELECT path, code FROM problems") == [("Bad.md", "frontmatter_invalid")]
    assert query(vault, "SELECT frontmatter_status FROM notes") == [("invalid",)]
    assert reconcile(vault).problems == 1  # an unchanged note keeps its problem
    assert_equals_rebuild(vault)
    write(vault.root, "Bad.md", "---\ntags: [a, b]\n---\n# Bad\n")
    report = reconcile(vault)
    assert (report.problems, report.changed) == (0, 1)
    assert query(vault, "SELECT count(*) FROM problems") == [(0,)]
    assert_equals_rebuild(vault)


def test_version_mismatch_rebuilds_with_a_warning(vault: Config) -> None:
    write(vault.root, "Note.md", "# Note\n")
    reconcile(vault)
    before = dump(vault)
    for key in ("parser_version", "schema_version"):
        con = duckdb.connect(str(vault.index_path))
        con.execute("UPDATE meta SET value = 'old' WHERE key = ?", [key])
        con.close()
        report = reconcile(vault)
        assert report.added == 1
        assert any("another version" in w for w in report.warnings)
        assert dump(vault) == before
        assert reconcile(vault).warnings == ()


def test_missing_meta_table_rebuilds(vault: Config) -> None:
    write(vault.root, "Note.md", "# Note\n")
    reconcile(vault)
    con = duckdb.connect(str(vault.index_path))
    con.execute("DROP TABLE meta")
    con.close()
    report = reconcile(vault)
    assert (report.added, report.notes) == (1, 1)
    assert report.warnings


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_index_is_moved_aside_and_rebuilt(vault: Config, damage: str) -> None:
    write(vault.root, "Note.md", "# Note\n[[Other]]\n")
    write(vault.root, "Other.md", "# Other\n")
    reconcile(vault)
    expected = dump(vault)
    data = vault.index_path.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 3],
        "garbage": os.urandom(len(data)),
        "empty": b"",
    }[damage]
    vault.index_path.write_bytes(damaged)

    report = reconcile(vault)
    assert report.notes == 2
    assert len(report.warnings) == 1 and "moved it to index.duckdb.corrupt-" in report.warnings[0]
    aside = list(vault.state_dir.glob("index.duckdb.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged
    assert dump(vault) == expected
    assert reconcile(vault).warnings == ()

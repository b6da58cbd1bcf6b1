"""Upgrades without re-parsing: a change to the search side only (tokenizer version, `[search]
language`) makes the search tables again from the index, equal to a build from nothing, with no
note read; a reader during the upgrade finds the old index whole; anything else re-parses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.helpers import cli_env, count_postings_runs, dump_index
from vaultmem.core.config import Config
from vaultmem.index import upgrade
from vaultmem.index.reconcile import index_versions, reconcile
from vaultmem.storage import store
from vaultmem.storage.schema import DERIVED_TABLES
from vaultmem.vault import Vault

FOOTER = "Edit this page on [GitHub](https://example.com/{name}.md) and share it."

NOTES = {
    "Running.md": "---\naliases: [Jogging, Runs]\ntags: [sport/outdoor, Health]\n---\n"
    "# Running\n\nThe runners were running quickly through the parks.\n\n"
    "## Shoes\n\nGood shoes matter for runners. #gear\n\n## ---\n\n---\n\n"
    "## Notes\n\n" + FOOTER,
    "Japanese.md": "---\nlang: ja\n---\n# 日本語\n\n東京都の天気は晴れです。漢字だけの文。\n\n"
    "## 参考\n\nカタカナとひらがな。\n\n" + FOOTER,
    "Chinese.md": "# 中文笔记\n\n怎么使用属性和标签。\n\n## 链接\n\n见 [[Running]]。\n\n" + FOOTER,
    "Rules.md": "# Rules\n\n***\n\n## 🙂\n\n🙂 🙂\n\n## Real\n\nSome words here.\n",
    "Empty.md": "",
    "Code.md": "# Code\n\n```python\nreturn (x)\n```\n\nAfter the fence: stemming tests.\n",
}
"""Aliases, nested tags, a `lang` property, Han and kana, sections without terms (a rule, an
emoji heading), an empty note, fenced code, and a footer in 8+ notes (boilerplate)."""


def make_vault(root: Path) -> Config:
    root.mkdir()
    config = Vault.init(root).config
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    for i in range(9):  # the footer becomes boilerplate
        (root / f"Daily/Day {i}.md").parent.mkdir(exist_ok=True)
        (root / f"Daily/Day {i}.md").write_text(
            f"# Day {i}\n\nRan {i} kilometres, walked after.\n\n" + FOOTER.format(name=f"Day {i}"),
            encoding="utf-8",
        )
    return config


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    return make_vault(tmp_path / "vault")


QUERIES = ("running", "runners shoes", "東京", "属性", "github", "kilometres walked", "stem")


def answers(config: Config) -> dict[str, list[tuple[str, int, float, str]]]:
    vault = Vault(config.root)
    vault.config = config
    try:
        return {
            q: [(h.path, h.line, round(h.score, 9), h.snippet) for h in vault.search(q, limit=20)]
            for q in QUERIES
        }
    finally:
        store.SharedReader.release_all(config.index_path)  # the test writes the file next


def set_meta(config: Config, key: str, value: str) -> None:
    con = duckdb.connect(str(config.index_path))
    try:
        con.execute("UPDATE meta SET value = ? WHERE key = ?", [value, key])
    finally:
        con.close()


def scramble_search_tables(config: Config, *, line_keys: list[int] | None = None) -> None:
    """What an older tokenizer might have left: other terms, lengths and statistics, and a
    section that had no term then (it sits in `termless_sections`, not in `documents`).
    `line_keys`: every document's stored line keys set to these too (an older line-key
    count's, `LINE_KEY_VERSION`; the tokenizer's own change leaves them as they are)."""
    con = duckdb.connect(str(config.index_path))
    try:
        con.execute("UPDATE postings SET term = term || '_old', tf = tf + 1")
        con.execute("DELETE FROM terms WHERE df > 1")
        con.execute("UPDATE documents SET length = length + 3")
        if line_keys is not None:
            con.execute("UPDATE documents SET line_keys = $1", [line_keys])
        con.execute("UPDATE search_stats SET documents = 1, total_length = 2")
        con.execute("DELETE FROM boilerplate_lines")
        moved = "note_id = (SELECT id FROM notes WHERE path = 'Running.md') AND ord = 2"
        con.execute(
            "INSERT INTO termless_sections SELECT note_id, ord, heading, line, text "
            f"FROM documents WHERE {moved}"
        )
        con.execute(f"DELETE FROM documents WHERE {moved}")
        con.execute(
            "DELETE FROM postings WHERE ord = 2 AND note_key = "
            "(SELECT note_key FROM notes WHERE path = 'Running.md')"
        )
    finally:
        con.close()


def fresh_build(config: Config) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, Any]]:
    reconcile(config, rebuild=True)
    return dump_index(config.index_path), answers(config)


def assert_same(got: dict[str, list[tuple[Any, ...]]], want: dict[str, list[Any]]) -> None:
    for table in DERIVED_TABLES:
        assert got[table] == want[table], f"table {table} differs from a build from nothing"


def assert_cut_in_place(
    config: Config, want: dict[str, list[Any]], want_answers: dict[str, Any], notes: int
) -> None:
    """With `segment_version` unrecorded, the next reconcile cuts `notes` notes again in the
    same file, and every table and answer is then a build's."""
    drop_meta(config, "segment_version")
    inode = config.index_path.stat().st_ino
    warnings = reconcile_as_built(config, want, want_answers)
    assert any(f"for {notes} notes holding such text" in w for w in warnings)
    assert config.index_path.stat().st_ino == inode


def reconcile_as_built(
    config: Config, want: dict[str, list[Any]], want_answers: dict[str, Any]
) -> list[str]:
    """Reconcile, check every derived table and answer against a build's, and return the
    run's warnings (which say how the search tables were made)."""
    warnings = list(reconcile(config).warnings)
    assert_same(dump_index(config.index_path), want)
    assert answers(config) == want_answers
    return warnings


def test_the_fixture_has_termless_sections_and_boilerplate(vault: Config) -> None:
    reconcile(vault)
    con = duckdb.connect(str(vault.index_path), read_only=True)
    try:
        termless = con.execute("SELECT count(*) FROM termless_sections").fetchone()
        lines = con.execute("SELECT count(*) FROM boilerplate_lines").fetchone()
    finally:
        con.close()
    assert termless is not None and termless[0] >= 2
    assert lines is not None and lines[0] >= 1


def test_a_tokenizer_change_remakes_the_search_tables_as_a_build_would(vault: Config) -> None:
    want, want_answers = fresh_build(vault)
    scramble_search_tables(vault)
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert (report.added, report.changed, report.removed) == (0, 0, 0)
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers
    assert reconcile(vault).warnings == ()  # the meta is current now


def test_another_release_of_the_same_analysis_cuts_nothing_again(vault: Config) -> None:
    """Only `vaultmem_version` differs (a release that bumped no version of the analysis):
    `meta` is brought up to date in the index itself (same inode) and no search row is made
    again (scrambled rows stay scrambled); the run says nothing, and the next is a no-op."""
    reconcile(vault)
    scramble_search_tables(vault)
    scrambled = dump_index(vault.index_path)
    set_meta(vault, "vaultmem_version", "0.0.1")
    inode = vault.index_path.stat().st_ino
    report = reconcile(vault)
    assert report.warnings == ()
    assert (report.added, report.changed, report.removed) == (0, 0, 0)
    assert vault.index_path.stat().st_ino == inode
    assert_same(dump_index(vault.index_path), scrambled)
    with store.reading(vault.index_path) as con:
        meta = store.read_meta(con)
    assert meta["vaultmem_version"] == index_versions(vault)["vaultmem_version"]
    again = reconcile(vault)
    assert again.warnings == () and again.unchanged == report.unchanged


def test_a_release_that_bumps_the_segment_version_cuts_only_such_notes(vault: Config) -> None:
    """A release changes `vaultmem_version` beside whatever it bumps: with `segment_version`
    it still takes the scoped cut, in place, of the notes holding such text."""
    want, want_answers = fresh_build(vault)
    set_meta(vault, "vaultmem_version", "0.0.1")
    assert_cut_in_place(vault, want, want_answers, 2)


def test_a_line_key_change_counts_the_keys_again(vault: Config) -> None:
    """Stored line keys of another `line_key_version` are not taken: the upgrade counts them
    from the text, as a build does (and with them the boilerplate)."""
    want, want_answers = fresh_build(vault)
    scramble_search_tables(vault, line_keys=[])
    set_meta(vault, "line_key_version", "0")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers


def test_a_tokenizer_change_takes_the_stored_line_keys(vault: Config) -> None:
    """Of the same `line_key_version` the stored keys are what the text gives: the upgrade
    takes them and does not count them (a marker key set in every document stays)."""
    reconcile(vault)
    scramble_search_tables(vault, line_keys=[42])
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    with store.reading(vault.index_path) as con:
        kept = con.execute("SELECT DISTINCT line_keys FROM documents WHERE ord > 0").fetchall()
        # The section the old tokenizer found no term in stored no keys: those are counted.
        counted = con.execute(
            "SELECT line_keys FROM documents d JOIN notes n ON n.id = d.note_id "
            "WHERE n.path = 'Running.md' AND d.ord = 2"
        ).fetchall()
    assert ([42],) in kept
    assert counted and counted[0][0] not in ([42], [])


def test_a_new_search_schema_is_seen_by_a_run_that_finds_nothing_changed(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release that bumps the search schema meets an index whose records (the last survey,
    the state record) say nothing changed: it must still remake the search tables, not
    trust them (the records compare `index_versions`, which must hold the layout's too)."""
    from vaultmem.index import steps

    reconcile(vault)
    assert reconcile(vault).warnings == ()  # settled: the next run takes the no-op path
    newer = str(int(store.SCHEMA_VERSIONS["search_schema_version"]) + 1)
    monkeypatch.setitem(store.SCHEMA_VERSIONS, "search_schema_version", newer)
    monkeypatch.setattr(steps, "SEARCH_SCHEMA_VERSION", int(newer))
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    with store.reading(vault.index_path) as con:
        assert store.read_meta(con)["search_schema_version"] == newer


def english_vault(root: Path) -> Config:
    """The fixture vault without its Chinese and Japanese notes: no text of an unspaced
    script or Hangul anywhere (titles, aliases, tags, headings, sections)."""
    config = make_vault(root)
    for name in ("Japanese.md", "Chinese.md"):
        (root / name).unlink()
    return config


def drop_meta(config: Config, key: str) -> None:
    con = duckdb.connect(str(config.index_path))
    try:
        con.execute("DELETE FROM meta WHERE key = ?", [key])
    finally:
        con.close()


def test_a_segment_change_keeps_the_search_tables_of_a_vault_without_such_text(
    tmp_path: Path,
) -> None:
    """Only the analysis of unspaced scripts and Hangul changed (here: an index from before
    `segment_version` was recorded) and no note holds such text: no term can differ, so the
    index file is updated in place (same inode: no new file was written) with every table
    as it was, and its meta is current."""
    vault = english_vault(tmp_path / "vault")
    want, want_answers = fresh_build(vault)
    drop_meta(vault, "segment_version")
    inode = vault.index_path.stat().st_ino
    report = reconcile(vault)
    assert any("no note holds such text" in w for w in report.warnings)
    assert (report.added, report.changed, report.removed) == (0, 0, 0)
    assert vault.index_path.stat().st_ino == inode
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers
    with store.reading(vault.index_path) as con:
        assert store.read_meta(con)["segment_version"] == index_versions(vault)["segment_version"]
    assert reconcile(vault).warnings == ()


def note_rows(config: Config, path: str) -> dict[str, list[tuple[Any, ...]]]:
    """One note's search rows (documents, termless sections, postings), sorted."""
    con = duckdb.connect(str(config.index_path), read_only=True)
    try:
        (note_id, key) = con.execute(
            "SELECT id, note_key FROM notes WHERE path = ?", [path]
        ).fetchone() or (None, None)
        queries = {
            "documents": ("SELECT * FROM documents WHERE note_id = ?", note_id),
            "termless_sections": ("SELECT * FROM termless_sections WHERE note_id = ?", note_id),
            "postings": ("SELECT * FROM postings WHERE note_key = ?", key),
        }
        return {
            table: sorted(con.execute(sql, [value]).fetchall(), key=repr)
            for table, (sql, value) in queries.items()
        }
    finally:
        con.close()


def scramble_note(config: Config, path: str) -> None:
    """What an older analysis might have left in one note's rows: other terms and lengths."""
    con = duckdb.connect(str(config.index_path))
    try:
        (note_id, key) = con.execute(
            "SELECT id, note_key FROM notes WHERE path = ?", [path]
        ).fetchone() or (None, None)
        con.execute(
            "UPDATE postings SET term = term || '_old', tf = tf + 1 WHERE note_key = ?", [key]
        )
        con.execute("UPDATE documents SET length = length + 3 WHERE note_id = ?", [note_id])
    finally:
        con.close()


@pytest.mark.parametrize(
    "text",
    [
        "# 中文\n\n同步笔记。\n",
        "# Sync\n\n## 同期\n\nBody.\n",
        "---\ntags: [노트]\n---\nBody.\n",
        "# Notes\n\nЕжедневные заметки.\n",
    ],
    ids=["han-section", "kana-heading", "hangul-tag", "cyrillic-section"],
)
def test_a_segment_change_re_cuts_only_the_notes_that_hold_such_text(
    tmp_path: Path, text: str
) -> None:
    """A note with Han, kana, Hangul or Cyrillic anywhere its documents come from (a section, a
    heading, a tag) is cut again, in place (the same file), and its rows are a build's; a
    note without any keeps the rows it had (here left scrambled, to show nothing cut it
    again), and the progress counts the one note cut."""
    vault = english_vault(tmp_path / "vault")
    (vault.root / "Mixed.md").write_text(text, encoding="utf-8")
    reconcile(vault, rebuild=True)
    want_mixed, want_running = note_rows(vault, "Mixed.md"), note_rows(vault, "Running.md")
    scramble_note(vault, "Mixed.md")
    scramble_note(vault, "Running.md")
    scrambled_running = note_rows(vault, "Running.md")
    assert scrambled_running != want_running
    drop_meta(vault, "segment_version")
    inode = vault.index_path.stat().st_ino
    phases: list[tuple[str, int, int]] = []
    report = reconcile(vault, progress=lambda *p: phases.append(p))
    assert any("for 1 note holding such text" in w for w in report.warnings)
    assert vault.index_path.stat().st_ino == inode
    assert note_rows(vault, "Mixed.md") == want_mixed
    assert note_rows(vault, "Running.md") == scrambled_running
    assert [p for p in phases if p[0] == "search"][-1] == ("search", 1, 1)


def test_an_index_of_a_newer_segment_version_is_cut_whole(tmp_path: Path) -> None:
    """A `segment_version` newer than this code's (an older vaultmem run after a newer one) may
    stand for an analysis that reached scripts this code's `SEGMENTED_CHARS` lacks: every note
    is cut again, not only those holding such text. Here an English note's rows, left
    scrambled, come back as a build's, which a scoped cut (nothing to cut) would not do."""
    from vaultmem.core.models import SEGMENT_VERSION

    vault = english_vault(tmp_path / "vault")
    want, want_answers = fresh_build(vault)
    scramble_note(vault, "Running.md")
    set_meta(vault, "segment_version", str(SEGMENT_VERSION + 1))
    warnings = reconcile_as_built(vault, want, want_answers)
    assert not any("holding such text" in w or "no note holds" in w for w in warnings)
    assert any("made them again from the index" in w for w in warnings)


def test_russian_stemming_reaches_an_index_made_without_it(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index made before Russian words were stemmed as Russian (`заметки` a term of its
    own), upgraded by this code: the note holding Cyrillic is cut again in place, and every
    table and answer is a build's by this code."""
    from vaultmem.core import tokenizer

    (vault.root / "Daily.md").write_text("# Ежедневные заметки\n\nШаблон заметки.\n", "utf-8")
    want, want_answers = fresh_build(vault)
    with monkeypatch.context() as older:
        older.setattr(tokenizer, "script_language", lambda word: None)
        tokenizer._analyzer.cache_clear()  # each analyzer keeps the words it stemmed
        reconcile(vault, rebuild=True)
    tokenizer._analyzer.cache_clear()
    assert any(row[0] == "заметки" for row in dump_index(vault.index_path)["postings"])
    # the fixture's two notes of Han and kana are in the scope too
    assert_cut_in_place(vault, want, want_answers, notes=3)


def test_a_real_segmentation_change_is_cut_again_in_place_as_a_build_would(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index made by the Chinese analysis of the last segment version (before the
    locative particles 上, 里 … weighed nothing: `机上` was a term), then upgraded by this one:
    only the notes with Han or kana are cut again, in place, and every table (boilerplate
    lines, `terms`, `search_stats` included) and every answer is a build's by this code."""
    from vaultmem.core import segment, tokenizer

    (vault.root / "Phone.md").write_text("# 手机\n\n在手机上打开电脑上的仓库。\n", "utf-8")
    want, want_answers = fresh_build(vault)
    old_stop = segment.STOPWORDS - {"里", "上", "下", "中", "内", "外"}
    with monkeypatch.context() as older:
        older.setattr(segment, "STOPWORDS", old_stop)
        older.setattr(segment, "_STOP_CHARS", frozenset("".join(old_stop)))
        tokenizer._analyzer.cache_clear()  # each analyzer keeps the words it cut
        reconcile(vault, rebuild=True)
    tokenizer._analyzer.cache_clear()
    stale = dump_index(vault.index_path)
    assert any(row[0] == "机上" for row in stale["postings"])
    assert_cut_in_place(vault, want, want_answers, notes=3)


def test_a_segment_change_cuts_every_note_when_most_hold_such_text(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `SCOPED_SHARE` every note is cut again, as a tokenizer change does (here the
    share is set to 0, so the two notes with Han are too many): every scrambled row is
    made again."""
    monkeypatch.setattr(upgrade, "SCOPED_SHARE", 0.0)
    want, want_answers = fresh_build(vault)
    scramble_search_tables(vault)
    drop_meta(vault, "segment_version")
    assert any("no note was read" in w for w in reconcile_as_built(vault, want, want_answers))


def test_the_run_after_an_upgrade_takes_the_walk_made_before_it(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade reads no note and moves none: the stat walk made before it stands for the
    run that follows (a second walk was ~0.4 s at 100,000 notes)."""
    from vaultmem.index import reconcile as runner

    want, want_answers = fresh_build(vault)
    set_meta(vault, "tokenizer_version", "0-english")
    walks: list[bool] = []
    real_walk = runner.walk

    def counted(config: Config, rebuild: bool) -> Any:
        walks.append(rebuild)
        return real_walk(config, rebuild)

    monkeypatch.setattr(runner, "walk", counted)
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert walks == [False]
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers


def test_an_upgrade_carries_the_notes_state_to_the_new_file(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade copies every note table as it is, so the state recorded for the old file
    (notes, files, scan problems, journal) is the new file's too: it is recorded for the
    upgraded file, and the reconcile that follows the upgrade reads no rows back to plan."""
    from vaultmem.index import steps
    from vaultmem.index.plan import IndexedNotes
    from vaultmem.index.reconcile import READ_CODES, SCAN_CODES, recorded_state
    from vaultmem.storage.index_writes import read_state
    from vaultmem.storage.last_survey import index_token

    (vault.root / "Broken.md").write_text("---\ntitle: [unclosed\n---\nBody.\n", "utf-8")
    reconcile(vault)
    assert reconcile(vault).warnings == ()  # the state is recorded for this file
    newer = str(int(store.SCHEMA_VERSIONS["search_schema_version"]) + 1)
    monkeypatch.setitem(store.SCHEMA_VERSIONS, "search_schema_version", newer)
    monkeypatch.setattr(steps, "SEARCH_SCHEMA_VERSION", int(newer))
    warnings: list[str] = []
    assert upgrade.upgrade_search_tables(vault, index_versions(vault), warnings)
    assert any("no note was read" in w for w in warnings)

    carried = recorded_state(vault, index_token(vault.index_path))
    assert carried is not None, "the upgraded file has no recorded state"
    with store.reading(vault.index_path) as con:
        rows = read_state(con, (*SCAN_CODES, *READ_CODES))
    carried_columns = [tuple(column) for column in carried.notes.columns()]
    assert carried_columns == [tuple(c) for c in IndexedNotes(rows.notes).columns()]
    assert carried.files == rows.files
    assert carried.scan_problems == frozenset(rows.scan_problems)
    assert (carried.problem_count, carried.journal) == (rows.problem_count, rows.journal)
    assert rows.problem_count >= 1  # the broken note's problem came along


def test_a_search_language_change_remakes_the_search_tables(vault: Config) -> None:
    reconcile(vault)
    english = answers(vault)
    config = set_search_key(vault, 'language = "none"')
    assert config.search_language == "none"
    report = reconcile(config)
    assert any("no note was read" in w for w in report.warnings)
    upgraded, upgraded_answers = dump_index(config.index_path), answers(config)
    assert upgraded_answers != english  # unstemmed: `running` no longer finds `runners`
    want, want_answers = fresh_build(config)
    assert_same(upgraded, want)
    assert upgraded_answers == want_answers


def test_the_upgrade_reads_no_note(vault: Config) -> None:
    """Every note is overwritten with other words of the same size and mtime after the build:
    a re-parse would index those words, the upgrade keeps what the index held."""
    want, want_answers = fresh_build(vault)
    for path in sorted(vault.root.rglob("*.md")):
        stat = path.stat()
        path.write_bytes(b"x" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert report.changed == 0
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers


def test_stale_boilerplate_lines_are_counted_again(vault: Config) -> None:
    """The workers leave out the old index's boilerplate lines; when those are not what the
    sections make now (here: the footer's line lost, another line claimed), the postings are
    cut again under the lines counted, and the index still equals a build from nothing."""
    want, want_answers = fresh_build(vault)
    assert want["boilerplate_lines"]
    con = duckdb.connect(str(vault.index_path))
    try:
        con.execute(
            "CREATE TEMP TABLE claimed AS SELECT max(k) AS k FROM (SELECT unnest(line_keys) "
            "AS k FROM documents) WHERE k NOT IN (SELECT line_key FROM boilerplate_lines)"
        )
        con.execute("DELETE FROM boilerplate_lines")
        con.execute("INSERT INTO boilerplate_lines SELECT k, 9 FROM claimed")
    finally:
        con.close()
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers


def test_a_parser_change_still_parses_every_note(vault: Config) -> None:
    want, _ = fresh_build(vault)
    set_meta(vault, "parser_version", "0")
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert report.added == len(want["notes"])
    assert any("another version" in w for w in report.warnings)


def test_what_changed_sorts_the_meta_keys(vault: Config) -> None:
    wanted = index_versions(vault)
    meta = {**wanted, **store.SCHEMA_VERSIONS}
    assert upgrade.what_changed(meta, wanted) == ""
    for key in ("tokenizer_version", "embedding_model", "search_schema_version"):
        assert upgrade.what_changed({**meta, key: "old"}, wanted) == "search", key
    for key in ("parser_version", "schema_version", "config_digest"):
        assert upgrade.what_changed({**meta, key: "old"}, wanted) == "all", key
    both = {**meta, "parser_version": "0", "tokenizer_version": "0"}
    assert upgrade.what_changed(both, wanted) == "all"
    released = {**meta, "vaultmem_version": "0.0.1"}  # recorded, it decides nothing more
    assert upgrade.what_changed(released, wanted) == "search"
    assert upgrade.segment_only({**released, "segment_version": "0"}, wanted)
    assert upgrade.vectors_only({**released, "embedding_model": "old"}, wanted)
    assert not upgrade.segment_only(released, wanted)
    assert not upgrade.vectors_only(released, wanted)
    assert upgrade.what_changed({}, wanted) == "all"


@pytest.mark.parametrize(
    ("note", "key"),
    [("Running.md", "tokenizer_version"), ("Chinese.md", "segment_version")],
    ids=["re-cut-into-a-new-file", "scoped-in-place"],
)
def test_an_index_missing_a_section_is_rebuilt_from_the_vault(
    vault: Config, note: str, key: str
) -> None:
    """A note missing a section cannot be cut from the index, whether every note is cut or
    only those a segmentation change can touch (in place: rolled back): built from the vault."""
    want, _ = fresh_build(vault)
    con = duckdb.connect(str(vault.index_path))
    con.execute(
        "DELETE FROM documents WHERE ord = 1 AND note_id = (SELECT id FROM notes WHERE path = ?)",
        [note],
    )
    con.close()
    set_meta(vault, key, "0-english")
    report = reconcile(vault)
    assert any("rebuilt it" in w for w in report.warnings)
    assert report.added == len(want["notes"])
    assert_same(dump_index(vault.index_path), want)


_SEARCH = "import json, sys\nfrom vaultmem.vault import Vault\n" + (
    "print(json.dumps([h.path for h in Vault(sys.argv[1]).search(sys.argv[2], limit=20)]))"
)


def test_a_reader_during_the_upgrade_reads_the_old_index(vault: Config) -> None:
    """A search in another process while the upgrade runs (held at its progress callback,
    after every note was cut and before the new file replaces the index) answers from the
    old index, whole; after it, from the new one."""
    reconcile(vault)
    before = answers(vault)
    set_meta(vault, "tokenizer_version", "0-english")
    during: list[list[str]] = []

    def search_meanwhile(phase: str, done: int, total: int) -> None:
        assert phase == "search"  # no note is parsed
        result = subprocess.run(
            [sys.executable, "-c", _SEARCH, str(vault.root), "running"],
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=60,
            check=True,
        )
        during.append(json.loads(result.stdout))

    report = reconcile(vault, progress=search_meanwhile)
    assert any("no note was read" in w for w in report.warnings)
    assert during, "the upgrade reported no progress"
    assert during[0] == [path for path, *_ in before["running"]] != []
    assert answers(vault) == before


def set_search_key(config: Config, line: str) -> Config:
    path = config.root / ".vaultmem" / "config.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("[search]\n", f"[search]\n{line}\n"), encoding="utf-8")
    return Vault(config.root).config


@pytest.mark.slow
def test_semantic_recall_turned_on_then_off_remakes_the_vectors(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tokenizers", reason="needs the `semantic` extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reconcile(vault)
    on = set_search_key(vault, "semantic = true")
    report = reconcile(on)
    assert any("no note was read" in w for w in report.warnings)
    upgraded = dump_index(on.index_path)
    assert upgraded["vectors"]
    want, _ = fresh_build(on)
    assert_same(upgraded, want)
    path = on.root / ".vaultmem" / "config.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("semantic = true\n", ""), "utf-8")
    off = Vault(on.root).config
    assert not off.semantic
    report = reconcile(off)
    assert any("no note was read" in w for w in report.warnings)
    upgraded = dump_index(off.index_path)
    assert upgraded["vectors"] == []
    want, _ = fresh_build(off)
    assert_same(upgraded, want)


def test_a_scoped_upgrade_embeds_the_notes_it_cuts_again(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Semantic recall on: the notes a segmentation-only upgrade cuts again get their vectors
    again (the others keep theirs), and every table, vectors included, is a build's."""
    pytest.importorskip("tokenizers", reason="needs the `semantic` extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    on = set_search_key(vault, "semantic = true")
    want, want_answers = fresh_build(on)
    assert want["vectors"]
    drop_meta(on, "segment_version")
    report = reconcile(on)
    assert any("for 2 notes holding such text" in w for w in report.warnings)
    assert_same(dump_index(on.index_path), want)
    assert answers(on) == want_answers


@pytest.mark.slow
def test_semantic_recall_turned_off_copies_the_search_tables_it_keeps(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turning semantic recall off changes nothing but `vectors`: the other search tables
    are copied as the index holds them, not cut again from every section. A mark left in
    `terms` survives the upgrade to show it; the vectors go, into a new file all the same."""
    pytest.importorskip("tokenizers", reason="needs the `semantic` extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    on = set_search_key(vault, "semantic = true")
    reconcile(on)
    assert dump_index(on.index_path)["vectors"]
    path = on.root / ".vaultmem" / "config.toml"
    path.write_text(path.read_text(encoding="utf-8").replace("semantic = true\n", ""), "utf-8")
    off = Vault(on.root).config
    con = duckdb.connect(str(off.index_path))
    try:
        con.execute("UPDATE terms SET df = df + 1000 WHERE term = 'run'")
    finally:
        con.close()
    before = os.stat(off.index_path).st_ino
    report = reconcile(off)
    assert any("no note was read" in w for w in report.warnings)
    upgraded = dump_index(off.index_path)
    assert upgraded["vectors"] == []
    assert os.stat(off.index_path).st_ino != before  # a new file renamed over the old one
    marked = [row for row in upgraded["terms"] if row[0] == "run"]
    assert marked and marked[0][1] > 1000  # copied, not counted again
    # turned on too (the documents embedded as copied); with any other search key changed as
    # well, every section is cut again
    assert upgrade.vectors_only(index_versions(on), index_versions(off))
    assert upgrade.vectors_only(index_versions(off), index_versions(on))
    assert not upgrade.vectors_only(
        {**index_versions(on), "tokenizer_version": "0-english"}, index_versions(off)
    )


@pytest.mark.slow
def test_semantic_recall_turned_on_embeds_the_copied_documents_in_workers(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turned on, the copied documents are embedded in chunks by the pool's workers (forced
    here on a small vault) and the vectors equal a build from nothing's."""
    from vaultmem.index import parallel

    pytest.importorskip("tokenizers", reason="needs the `semantic` extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reconcile(vault)
    on = set_search_key(vault, "semantic = true")
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 300)  # several chunks, both workers
    seen: list[int] = []
    report = reconcile(on, progress=lambda phase, done, total: seen.append(done))
    assert any("no note was read" in w for w in report.warnings)
    assert len(seen) > 2 and seen == sorted(seen)  # one step per chunk, as they came back
    upgraded = dump_index(on.index_path)
    assert upgraded["vectors"]
    monkeypatch.undo()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    want, _ = fresh_build(on)
    assert_same(upgraded, want)


def test_an_upgrade_cut_by_term_bucket_equals_a_build(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large index's upgrade writes its postings by term bucket and sorts them bucket by
    bucket, as a large build does: the tables must still be a build's, row for row."""
    from vaultmem.index import parallel

    want, want_answers = fresh_build(vault)  # one sort: under the line
    runs = count_postings_runs(monkeypatch)
    monkeypatch.setattr(parallel, "BUCKET_POSTINGS_NOTES", 0)
    scramble_search_tables(vault)
    set_meta(vault, "tokenizer_version", "0-english")
    report = reconcile(vault)
    assert any("no note was read" in w for w in report.warnings)
    assert runs and runs[-1] > 1, runs
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers


@pytest.mark.parametrize("pooled", [False, True], ids=["one-process", "pool"])
def test_an_upgrade_in_many_chunks_appends_each_process_postings_to_one_file(
    vault: Config, monkeypatch: pytest.MonkeyPatch, pooled: bool
) -> None:
    """The chunks a process cuts append to that process's postings file, which the load
    reads once: many chunks, at most one file per process, and the tables a build's."""
    from vaultmem.index import parallel
    from vaultmem.storage import search_rows

    want, want_answers = fresh_build(vault)
    scramble_search_tables(vault)
    set_meta(vault, "tokenizer_version", "0-english")
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 300)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0 if pooled else 10**9)
    loaded: list[int] = []
    real = search_rows.build_postings

    def counted(con: Any, files: Any, **kwargs: Any) -> None:
        loaded.append(len(files))
        real(con, files, **kwargs)

    monkeypatch.setattr(search_rows, "build_postings", counted)
    chunks: list[int] = []
    report = reconcile(vault, progress=lambda phase, done, total: chunks.append(done))
    assert any("no note was read" in w for w in report.warnings)
    assert len(chunks) > 3, chunks
    assert loaded and 1 <= loaded[-1] <= (parallel.worker_count() if pooled else 1), loaded
    assert_same(dump_index(vault.index_path), want)
    assert answers(vault) == want_answers

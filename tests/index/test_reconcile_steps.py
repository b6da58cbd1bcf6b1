"""Reconcile's steps, each called alone with the values the run would hand it: the pure ones
(`index.steps`, the link decisions of `index.transaction`) are fed values and their answer
checked; the I/O ones (`survey.walk`, `survey.survey_paths`, `reconcile.load_state`) run on
real files and a real index, with no full reconcile around them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from vaultmem.core.config import Config
from vaultmem.core.note_model import Heading, Problem, Resolution
from vaultmem.files.scan import Fingerprint
from vaultmem.index import reconcile, survey, transaction
from vaultmem.index import steps as rc
from vaultmem.index.parallel import Chunk, Prepared
from vaultmem.index.plan import ChangeSet, IndexedNotes, assign_ids, journal_digest, plan_changes
from vaultmem.note.links import LinkResolver, SubpathIndex
from vaultmem.storage.index_writes import StoredOutline
from vaultmem.storage.last_survey import LastSurvey
from vaultmem.vault import Vault

IDS = assign_ids({"A.md": None, "B.md": None, "Old.md": None}, {})
ROWS = [
    ("A.md", IDS["A.md"], 10, 1, "hash-a", None),
    ("B.md", IDS["B.md"], 20, 1, "hash-b", None),
    ("Old.md", IDS["Old.md"], 30, 1, "hash-old", None),
]
FILES = frozenset({"A.md", "B.md", "Old.md", "pic.png"})


def _state(rows: list[tuple[str, str, int, int, str, str | None]] = ROWS) -> rc.State:
    return rc.State(IndexedNotes(rows), FILES, frozenset(), 0, (None, None), False, None)


def _survey(state: rc.State, notes: list[Fingerprint], files: frozenset[str]) -> rc.Survey:
    return rc.Survey("full", tuple(notes), files, (), None, state.notes, "digest")


def _prep(*prepared: Prepared) -> rc.Preparation:
    return rc.Preparation({p.path: p for p in prepared}, {}, [], [], 0, Path("spill"))


def _renamed() -> tuple[rc.State, rc.Survey, ChangeSet[Fingerprint], rc.Preparation]:
    """B.md edited, Old.md moved to New.md (same bytes), A.md as it was."""
    state = _state()
    notes = [Fingerprint("A.md", 10, 1), Fingerprint("B.md", 21, 2), Fingerprint("New.md", 30, 2)]
    survey = _survey(state, notes, frozenset({"A.md", "B.md", "New.md", "pic.png"}))
    changes = plan_changes(survey.indexed, survey.notes)
    prep = _prep(
        Prepared(0, "B.md", "parsed", 21, 2, "hash-b2"),
        Prepared(1, "New.md", "parsed", 30, 2, "hash-old"),
    )
    return state, survey, changes, prep


def test_is_noop_when_nothing_moved_and_not_when_a_file_came() -> None:
    state = _state()
    notes = [Fingerprint(p, s, m) for p, _, s, m, _, _ in ROWS]
    same = _survey(state, notes, FILES)
    assert rc.is_noop(state, same, plan_changes(state.notes, notes))
    assert not rc.is_noop(state, same, plan_changes(state.notes, notes), recovering=True)
    more = _survey(state, notes, FILES | {"other.png"})
    assert not rc.is_noop(state, more, plan_changes(state.notes, notes))
    problem = same._replace(problems=(Problem("x", "symlink_refused", "m"),))
    assert not rc.is_noop(state, problem, plan_changes(state.notes, notes))


def test_outcomes_sort_prepared_notes_and_pair_a_rename_by_its_bytes() -> None:
    _, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    assert sorted(out.parsed) == ["B.md", "New.md"]
    assert {new: old.path for new, old in out.renames.items()} == {"New.md": "Old.md"}
    assert (out.touched, out.failed, out.kept) == ((), (), ())


def test_an_unreadable_indexed_note_keeps_its_rows() -> None:
    state = _state()
    notes = [Fingerprint("A.md", 11, 2), Fingerprint("B.md", 20, 1), Fingerprint("Old.md", 30, 1)]
    survey = _survey(state, notes, FILES)
    changes = plan_changes(survey.indexed, survey.notes)
    bad = Problem("A.md", "file_unreadable", "denied")
    out = rc.outcomes(changes, _prep(Prepared(0, "A.md", "failed", problems=(bad,))), survey)
    assert out.kept == ("A.md",) and out.problems == (bad,) and not out.parsed


def test_identities_carry_a_renamed_note_id_and_journal_it() -> None:
    state, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    ident = rc.identities(state, survey, out, {})
    assert ident.ids["New.md"] == IDS["Old.md"] and ident.ids["A.md"] == IDS["A.md"]
    assert ident.new_renames == ((IDS["Old.md"], "Old.md", "New.md"),)
    assert ident.removed_ids == {
        IDS["Old.md"],
        IDS["B.md"],
    }  # their rows go; New.md's load brings id-old
    assert ident.id_changes == {}


def test_identities_stand_for_an_edit_that_moves_no_claim() -> None:
    state = _state()
    notes = [Fingerprint("A.md", 11, 2), Fingerprint("B.md", 20, 1), Fingerprint("Old.md", 30, 1)]
    survey = _survey(state, notes, FILES)
    changes = plan_changes(survey.indexed, survey.notes)
    out = rc.outcomes(changes, _prep(Prepared(0, "A.md", "parsed", 11, 2, "hash-a2")), survey)
    journal = rc.identities(state, survey, out, {}).journal
    stood = rc.identities(state._replace(journal=journal), survey, out, {})
    assert stood.ids == state.notes.ids() and stood.removed_ids == {IDS["A.md"]}


def _added(*new: tuple[str, str | None]) -> tuple[rc.State, rc.Survey, rc.Outcomes]:
    """A, B and Old as they were, and the notes `new` (path, claimed id) come."""
    notes = [Fingerprint(path, 40 + i, 3) for i, (path, _) in enumerate(new)]
    notes += [Fingerprint(p, size, mtime) for p, _, size, mtime, _, _ in ROWS]
    state = _state()
    survey = _survey(state, sorted(notes), FILES | {path for path, _ in new})
    changes = plan_changes(survey.indexed, survey.notes)
    prepared = [
        Prepared(i, path, "parsed", 40 + i, 3, f"hash-{path}", claimed_id=claimed)
        for i, (path, claimed) in enumerate(new)
    ]
    out = rc.outcomes(changes, _prep(*prepared), survey)
    return state._replace(journal=journal_digest({})), survey, out  # ids as the empty journal gave


def _assigned_afresh(state: rc.State, out: rc.Outcomes) -> dict[str, str]:
    claims = {p: state.notes[p].claimed_id for p in state.notes}
    claims.update({p: prepared.claimed_id for p, prepared in out.parsed.items()})
    return assign_ids(claims, {})


def test_notes_that_only_came_take_their_ids_without_assigning_every_id_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state, survey, out = _added(("New.md", None), ("Topic.md", "topic-id"))
    expected = _assigned_afresh(state, out)
    monkeypatch.setattr(rc, "assign_ids_salted", _must_not_run)
    ident = rc.identities(state, survey, out, {})
    assert {p: ident.ids[p] for p in expected} == expected
    assert ident.id_changes == {} and ident.removed_ids == frozenset()


@pytest.mark.parametrize(
    "new",
    [
        (("New.md", IDS["A.md"]),),  # claims an id an old note holds: A falls back
        (("New.md", "same"), ("Other.md", "same")),  # two new notes ask for one id
    ],
)
def test_a_new_note_whose_id_clashes_assigns_every_id_again(
    new: tuple[tuple[str, str | None], ...],
) -> None:
    state, survey, out = _added(*new)
    ident = rc.identities(state, survey, out, {})
    expected = _assigned_afresh(state, out)
    assert {p: ident.ids[p] for p in expected} == expected
    if new[0][1] == IDS["A.md"]:
        assert ident.id_changes == {IDS["A.md"]: expected["A.md"]} != {}


def _must_not_run(*args: object) -> dict[str, str]:
    raise AssertionError("every id was assigned again")


def test_link_work_names_the_keys_of_files_that_came_or_went() -> None:
    state, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    links = rc.link_work(state, survey, out)
    assert links.added_files == {"New.md"} and links.removed_files == {"Old.md"}
    assert links.affected_keys == {"new", "old"}
    assert links.changed_targets == {"B.md", "New.md", "Old.md"}


# -- the steady state, settling, the report ----------------------------------------------------


def test_the_last_survey_settles_a_walk_only_when_digest_index_and_versions_agree(
    tmp_path: Path,
) -> None:
    config = Config(root=tmp_path)
    walk = _survey(_state(), [], FILES)
    token = ((1, 2, 3), None)
    known = LastSurvey(token, rc.index_versions(config), "digest", 3, 0)
    assert rc.settles(known, walk, token, config)
    assert not rc.settles(None, walk, token, config)
    assert not rc.settles(known, walk._replace(digest="other"), token, config)
    assert not rc.settles(known, walk, ((1, 2, 4), None), config)  # another writer committed
    assert not rc.settles(known._replace(token=(None, None)), walk, (None, None), config)
    stale = known._replace(versions={**known.versions, "parser_version": "0"})
    assert not rc.settles(stale, walk, token, config)


def test_to_redo_names_what_a_worker_result_no_longer_covers() -> None:
    state = _state()
    notes = [Fingerprint("A.md", 11, 2), Fingerprint("B.md", 21, 2), Fingerprint("C.md", 5, 2)]
    survey = _survey(state, notes, FILES | {"C.md"})
    changes = plan_changes(survey.indexed, survey.notes)
    prep = _prep(
        Prepared(0, "A.md", "parsed", 11, 2, "hash-a2"),  # as the walk saw it: stands
        Prepared(1, "B.md", "parsed", 21, 1, "hash-b2"),  # changed after its worker read it
        Prepared(2, "C.md", "touched", 5, 2, "hash-c"),  # touched, yet not indexed now
    )
    assert {fp.path for fp in rc.to_redo(prep, changes, survey)} == {"B.md", "C.md"}
    assert rc.to_redo(prep, changes._replace(new=(), suspect=notes[:1]), survey) == []


def test_merged_adds_the_redone_results_and_prefers_them() -> None:
    first = rc.Preparation(
        {"A.md": Prepared(0, "A.md", "parsed", 1, 1, "old")},
        {"notes": [Path("a/notes")]},
        [Path("a/postings")],
        [],
        1,
        Path("spill"),
    )
    again = rc.Preparation(
        {"A.md": Prepared(1, "A.md", "parsed", 2, 2, "new")},
        {"notes": [Path("b/notes")], "links": [Path("b/links")]},
        [Path("b/postings")],
        [],
        2,
        Path("elsewhere"),
    )
    both = rc.merged(first, again)
    assert both.by_path["A.md"].content_hash == "new" and both.next_number == 2
    assert both.staged == {"notes": [Path("a/notes"), Path("b/notes")], "links": [Path("b/links")]}
    assert both.postings == [Path("a/postings"), Path("b/postings")]
    assert both.spill_dir == Path("spill")


def test_collect_joins_the_chunks_in_order() -> None:
    chunks = [
        Chunk((Prepared(0, "A.md", "parsed"),), {"notes": (Path("0/notes"), 9)}, (Path("0/p"),)),
        Chunk((Prepared(1, "B.md", "failed"),), {"notes": (Path("1/notes"), 4)}),
        Chunk((Prepared(2, "C.md", "parsed"),), {}, (Path("2/p.00"), Path("2/p.03"))),
    ]
    prep = rc.collect(chunks, 3, Path("spill"))
    assert list(prep.by_path) == ["A.md", "B.md", "C.md"]
    assert prep.staged == {"notes": [Path("0/notes"), Path("1/notes")]}
    assert prep.largest == {"notes": 9}
    postings = [Path("0/p"), Path("2/p.00"), Path("2/p.03")]
    assert (prep.postings, prep.vectors, prep.next_number) == (postings, [], 3)


def test_collect_lists_a_file_that_chunks_share_once() -> None:
    """A worker appends every chunk it prepares to the same files: each is loaded once, and
    the reader's buffer is sized for the largest object any chunk appended."""
    chunks = [
        Chunk((Prepared(0, "A.md", "parsed"),), {"notes": (Path("w1.notes"), 7)}, (Path("w1.p"),)),
        Chunk((Prepared(1, "B.md", "parsed"),), {"notes": (Path("w2.notes"), 3)}, (Path("w2.p"),)),
        Chunk((Prepared(2, "C.md", "parsed"),), {"notes": (Path("w1.notes"), 12)}, (Path("w1.p"),)),
    ]
    prep = rc.collect(chunks, 3, Path("spill"))
    assert prep.staged == {"notes": [Path("w1.notes"), Path("w2.notes")]}
    assert prep.postings == [Path("w1.p"), Path("w2.p")]
    assert prep.largest == {"notes": 12}


def test_the_walk_agrees_with_the_index_only_when_every_note_read_as_walked() -> None:
    _, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    assert rc.agrees(out, survey)
    moved = prep._replace(by_path={**prep.by_path, "B.md": prep.by_path["B.md"]._replace(size=9)})
    assert not rc.agrees(rc.outcomes(changes, moved, survey), survey)
    failed = prep._replace(by_path={**prep.by_path, "B.md": Prepared(0, "B.md", "failed")})
    assert not rc.agrees(rc.outcomes(changes, failed, survey), survey)


def test_the_report_counts_a_rename_once_and_a_touch_as_unchanged() -> None:
    _, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    report = rc.report(survey, changes, out, 1, 3, 0.5, ["w", "v", "w"])
    assert (report.added, report.changed, report.removed, report.renamed) == (0, 1, 0, 1)
    assert (report.unchanged, report.notes, report.problems) == (1, 3, 1)
    assert report.warnings == ("w", "v")  # once each, in order
    noop = rc.report(survey, ChangeSet((), (), (), ("A.md",)), None, 0, 1, 0.1, [])
    assert (noop.mode, noop.added, noop.unchanged) == ("full", 0, 1)


def test_an_outdated_state_warns_and_a_damaged_one_waits_for_its_move() -> None:
    assert rc.state_warnings(_state()._replace(outdated=True)) == (rc.OUTDATED,)
    assert rc.state_warnings(_state()._replace(damage=OSError("bad"))) == ()


# -- the links after the load (pure decisions of `index.transaction`) --------------------------


def test_subpath_updates_check_each_link_against_its_target_headings() -> None:
    by_target = {"T.md": [("id-s", 0, "#Intro"), ("id-s", 1, "#^blk"), ("id-s", 2, "#Nope")]}
    outlines = {"T.md": StoredOutline(["intro"], [1], ["blk"])}
    assert transaction.subpath_updates(["T.md", "Gone.md"], by_target, outlines) == [
        ("id-s", 0, True),
        ("id-s", 1, True),
        ("id-s", 2, False),
    ]
    assert transaction.subpath_updates(["T.md"], by_target, {}) == []  # not in the index


def test_link_updates_keep_only_the_links_whose_answer_moved() -> None:
    index = SubpathIndex([Heading(1, "Intro", 1, "Intro")], [])
    same = ("id-s", 0, "A", "", "S.md", "A.md", "id-a", None)
    moved = ("id-s", 1, "B", "", "S.md", None, None, None)
    checked = ("id-s", 2, "A", "#Intro", "S.md", "A.md", "id-a", False)
    resolved = [
        (same, Resolution("A.md", None)),
        (moved, Resolution("B.md", None)),
        (checked, Resolution("A.md", None)),
    ]
    ids = {"A.md": "id-a", "B.md": "id-b"}
    assert transaction.link_updates(resolved, {"A.md": index}, ids) == [
        ("id-s", 1, "B.md", "id-b", None),
        ("id-s", 2, "A.md", "id-a", True),
    ]


def test_resolve_stored_resolves_each_stored_link_against_the_files_now() -> None:
    rows = [("id-s", 0, "B", "", "S.md", None, None, None)]
    resolved = transaction.resolve_stored(rows, LinkResolver(["S.md", "sub/B.md"]))
    assert [r.path for _, r in resolved] == ["sub/B.md"]


# -- the I/O steps, alone, on real files ---------------------------------------------------------


def _vault(root: Path) -> Config:
    (root / ".obsidian").mkdir()
    (root / "A.md").write_text("# A\n\n[[B]]\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "B.md").write_text("# B\n", encoding="utf-8")
    (root / "sub" / "pic.png").write_bytes(b"png")
    return Vault.init(root).config


def test_the_walk_sees_every_note_and_file_and_digests_them(tmp_path: Path) -> None:
    config = _vault(tmp_path)
    walk = survey.walk(config, rebuild=False)
    assert [fp.path for fp in walk.notes] == ["A.md", "sub/B.md"]
    assert {"A.md", "sub/B.md", "sub/pic.png"} <= walk.files
    assert walk.mode == "full" and walk.problems == () and walk.digest
    assert survey.walk(config, rebuild=True).digest == walk.digest
    (tmp_path / "A.md").write_text("# A\n\nchanged\n", encoding="utf-8")
    assert survey.walk(config, rebuild=False).digest != walk.digest


def test_a_paths_survey_looks_only_at_the_named_paths(tmp_path: Path) -> None:
    config = _vault(tmp_path)
    state = _state()._replace(notes=IndexedNotes(ROWS), files=FILES | {"sub/B.md"})
    (tmp_path / "sub" / "C.md").write_text("# C\n", encoding="utf-8")
    paths = survey.survey_paths(config, ["sub/"], state)
    assert paths.mode == "paths" and paths.problems is None
    assert [fp.path for fp in paths.notes] == ["sub/B.md", "sub/C.md"]
    assert paths.candidates == {"sub", "sub/B.md", "sub/C.md", "sub/pic.png"}
    assert paths.files == FILES | {"sub/B.md", "sub/C.md", "sub/pic.png"}
    assert list(paths.indexed) == []  # none of the index's notes is under sub/


def test_load_state_reads_the_index_or_says_why_it_must_be_built(tmp_path: Path) -> None:
    config = _vault(tmp_path)
    assert reconcile.load_state(config, rebuild=False).create  # no index yet
    reconcile.reconcile(config)
    state = reconcile.load_state(config, rebuild=False)
    assert not state.create and sorted(state.notes) == ["A.md", "sub/B.md"]
    assert state.damage is None and not state.outdated and state.journal
    rebuilt = reconcile.load_state(config, rebuild=True)
    assert rebuilt.create and len(rebuilt.notes) == 0
    con = duckdb.connect(str(config.index_path))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'parser_version'")
    con.close()
    assert reconcile.load_state(config, rebuild=False).outdated
    config.index_path.write_bytes(b"not a database")
    damaged = reconcile.load_state(config, rebuild=False)
    assert damaged.create and damaged.damage is not None

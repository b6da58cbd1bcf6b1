"""Reconcile's steps, each called alone with the values the run would hand it (issue 26.6):
`is_noop`, `outcomes`, `identities` and `link_work` are module functions of explicit inputs
and one value out; the runner (`_Run`) only sequences them and does the I/O."""

from __future__ import annotations

from pathlib import Path

from vaultmem.core.models import Problem
from vaultmem.files.scan import Fingerprint
from vaultmem.index import reconcile as rc
from vaultmem.index.parallel import Prepared
from vaultmem.index.plan import ChangeSet, IndexedNotes, assign_ids, plan_changes

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


def test_link_work_names_the_keys_of_files_that_came_or_went() -> None:
    state, survey, changes, prep = _renamed()
    out = rc.outcomes(changes, prep, survey)
    links = rc.link_work(state, survey, out)
    assert links.added_files == {"New.md"} and links.removed_files == {"Old.md"}
    assert links.affected_keys == {"new", "old"}
    assert links.changed_targets == {"B.md", "New.md", "Old.md"}

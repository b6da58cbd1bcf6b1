"""The planner's comparison of the index with the walk: `IndexedNotes` and `plan_changes`.

`plan_changes` runs its passes over every note as set lookups in C; these tests hold it to
the plain loop it replaced, on generated indexes and walks.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vaultmem.files.scan import Fingerprint
from vaultmem.index.plan import (
    ChangeSet,
    IndexedNote,
    IndexedNotes,
    _candidate,
    _ranked_ids,
    assign_ids,
    assign_ids_salted,
    ids_of_added,
    plan_changes,
)

Row = tuple[str, str, int, int, str, str | None]


def _row(path: str, size: int = 10, mtime_ns: int = 1_700_000_000_000_000_000) -> Row:
    return (path, "n-" + path, size, mtime_ns, "h-" + path, None)


def _reference(rows: list[Row], scanned: list[Fingerprint]) -> ChangeSet[Fingerprint]:
    """The plain loop: what `plan_changes` must answer."""
    indexed = {r[0]: IndexedNote(*r) for r in rows}
    new, suspect, unchanged = [], [], []
    for fp in scanned:
        known = indexed.get(fp.path)
        if known is None:
            new.append(fp)
        elif (known.size, known.mtime_ns) != (fp.size, fp.mtime_ns):
            suspect.append(fp)
        else:
            unchanged.append(fp.path)
    seen = {fp.path for fp in scanned}
    gone = sorted((n for p, n in indexed.items() if p not in seen), key=lambda n: n.path)
    return ChangeSet(tuple(new), tuple(suspect), tuple(gone), tuple(unchanged))


def test_plan_sorts_the_walk_into_new_suspect_unchanged_and_gone() -> None:
    rows = [_row("a.md"), _row("b.md"), _row("c.md"), _row("d.md", size=4)]
    scanned = [
        Fingerprint("a.md", 10, 1_700_000_000_000_000_000),  # unchanged
        Fingerprint("b.md", 11, 1_700_000_000_000_000_000),  # size moved
        Fingerprint("c.md", 10, 1_700_000_000_000_000_001),  # mtime moved
        Fingerprint("e.md", 10, 1_700_000_000_000_000_000),  # new
    ]
    changes = plan_changes(IndexedNotes(rows), scanned)
    assert changes.new == (scanned[3],)
    assert changes.suspect == (scanned[1], scanned[2])
    assert changes.unchanged == ("a.md",)
    assert changes.gone == (IndexedNote(*_row("d.md", size=4)),)


def test_plan_of_an_unchanged_vault_finds_nothing_to_read() -> None:
    rows = [_row(f"n{i}.md", size=i) for i in range(50)]
    scanned = [Fingerprint(r[0], r[2], r[3]) for r in rows]
    changes = plan_changes(IndexedNotes(rows), scanned)
    assert (changes.new, changes.suspect, changes.gone) == ((), (), ())
    assert changes.unchanged == tuple(r[0] for r in rows)


_paths = st.sampled_from([f"f{i}.md" for i in range(12)])
_fingerprint = st.tuples(st.integers(0, 2), st.integers(0, 2))


@given(
    st.dictionaries(_paths, _fingerprint),
    st.dictionaries(_paths, _fingerprint),
)
def test_plan_equals_the_plain_loop(
    indexed: dict[str, tuple[int, int]], walk: dict[str, tuple[int, int]]
) -> None:
    rows = [_row(p, s, m) for p, (s, m) in indexed.items()]
    scanned = sorted(Fingerprint(p, s, m) for p, (s, m) in walk.items())
    assert plan_changes(IndexedNotes(rows), scanned) == _reference(rows, scanned)


def test_indexed_notes_answer_as_a_mapping_of_notes() -> None:
    rows = [_row("b.md"), _row("a.md", size=3), ("c.md", "n-x", 1, 2, "h", "claimed")]
    notes = IndexedNotes(rows)
    assert len(notes) == 3
    assert list(notes) == ["b.md", "a.md", "c.md"]
    assert notes["a.md"] == IndexedNote(*_row("a.md", size=3))
    assert notes["c.md"].claimed_id == "claimed"
    assert "a.md" in notes and "z.md" not in notes
    assert notes.get("z.md") is None
    assert notes.ids() == {"b.md": "n-b.md", "a.md": "n-a.md", "c.md": "n-x"}
    assert notes.fingerprints() == {("b.md", 10, r[3]) for r in rows[:1]} | {
        ("a.md", 3, rows[1][3]),
        ("c.md", 1, 2),
    }
    only = notes.only(["c.md", "a.md", "z.md"])
    assert dict(only) == {"a.md": notes["a.md"], "c.md": notes["c.md"]}
    empty = IndexedNotes(())
    assert len(empty) == 0 and empty.ids() == {} and not empty.fingerprints()


def test_the_same_paths_in_order_are_compared_in_place_with_the_same_answer() -> None:
    """An index whose notes are in path order, as the recorded state keeps them, is compared
    column by column; the answer is the one the fingerprint sets give."""
    from vaultmem.files.scan import Fingerprint

    rows = [(f"n{i:03d}.md", f"n-{i}", 10 + i, 1000 + i, "h", None) for i in range(50)]
    walk = [Fingerprint(p, s, m) for p, _, s, m, _, _ in rows]
    walk[7] = Fingerprint("n007.md", 99, 1007)  # edited
    walk[30] = Fingerprint("n030.md", 40, 5)  # touched
    in_order = IndexedNotes(rows)
    shuffled = IndexedNotes(list(reversed(rows)))  # not in order: the sets decide
    assert plan_changes(in_order, walk) == plan_changes(shuffled, walk)
    changes = plan_changes(in_order, walk)
    assert [fp.path for fp in changes.suspect] == ["n007.md", "n030.md"]
    assert len(changes.unchanged) == 48 and not changes.new and not changes.gone


def test_updated_notes_stay_in_path_order() -> None:
    notes = IndexedNotes([("b.md", "n-b", 1, 1, "h", None), ("a.md", "n-a", 1, 1, "h", None)])
    after = notes.updated(
        ["b.md"], [("c.md", "n-c", 2, 2, "h", "t-c"), ("0.md", "n-0", 3, 3, "h", None)]
    )
    assert list(after) == ["0.md", "a.md", "c.md"]
    again = after.updated([], [("b.md", "n-b", 4, 4, "h", None)], [("c.md", 5, 6)], {"n-a": "n-z"})
    assert list(again) == ["0.md", "a.md", "b.md", "c.md"]
    assert again["c.md"] == ("c.md", "n-c", 5, 6, "h", "t-c") and again["a.md"].id == "n-z"


_PATHS = st.lists(st.text("ab/é.", min_size=1, max_size=6), unique=True, max_size=30)


@given(_PATHS, st.lists(st.text("ab/é.", min_size=1, max_size=6), max_size=10), st.randoms())
def test_lookups_answer_alike_in_path_order_and_out_of_it(
    paths: list[str], asked: list[str], rng: object
) -> None:
    """In path order a note is found by bisection, otherwise by a dict: the same answers,
    for paths held and paths not held, ids included."""
    rows = [_row(p) for p in sorted(paths)]
    shuffled = list(rows)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    expected = {r[0]: IndexedNote(*r) for r in rows}
    for notes in (IndexedNotes(rows), IndexedNotes(shuffled)):
        for path in [*paths, *asked]:
            assert (path in notes) == (path in expected)
            assert notes.get(path) == expected.get(path)
            assert notes.ids().get(path) == (expected[path].id if path in expected else None)
        assert dict(notes.ids()) == {p: n.id for p, n in expected.items()}
        gone = [p for p in asked if p in expected][:3]
        assert sorted(notes.updated(gone, ()).keys()) == sorted(set(expected) - set(gone))


def test_a_few_lookups_in_path_order_build_no_table_of_every_path() -> None:
    """A one-note edit asks about a handful of notes: in path order that costs a bisection
    each, not a path -> row dict of the whole vault (~21 ms at 100,000 notes)."""
    notes = IndexedNotes([_row(f"note {i:05}.md") for i in range(1000)])
    assert notes["note 00500.md"].id == "n-note 00500.md"
    assert "note 99999.md" not in notes
    assert notes.ids()["note 00007.md"] == "n-note 00007.md"
    assert notes._row is None
    shuffled = IndexedNotes([_row(f"note {i:05}.md") for i in reversed(range(1000))])
    assert shuffled["note 00500.md"].id == "n-note 00500.md"
    assert shuffled._row is not None  # out of order: the dict


# -- ids ----------------------------------------------------------------------------------------


_PATHS = st.sampled_from([f"{d}/{n}.md" for d in "ab" for n in "wxyz"])
_IDS = st.sampled_from(["t-one", "t-two", "j-one"])


@given(
    claims=st.dictionaries(_PATHS, st.none() | _IDS, max_size=8),
    journal=st.dictionaries(_PATHS, _IDS, max_size=3),
)
def test_ids_follow_the_rule_with_and_without_clashes(
    claims: dict[str, str | None], journal: dict[str, str]
) -> None:
    ranked = _ranked_ids([_candidate(path, claim, journal) for path, claim in claims.items()])
    assert assign_ids(claims, journal) == ranked


def test_a_clash_goes_to_the_claim_then_the_smaller_path_and_the_loser_is_salted() -> None:
    from vaultmem.core.names import default_note_id

    ids = assign_ids({"b.md": "t-one", "a.md": "t-one", "c.md": None}, {"c.md": "t-one"})
    assert ids["a.md"] == "t-one"  # a claim outranks the journal; then the smaller path
    assert ids["b.md"] == default_note_id("b.md", 1)
    assert ids["c.md"] == default_note_id("c.md", 1)
    free = assign_ids({"b.md": "t-one", "c.md": None}, {})
    assert free == {"b.md": "t-one", "c.md": default_note_id("c.md")}


@given(
    old=st.dictionaries(_PATHS, st.none() | _IDS, max_size=6),
    new=st.dictionaries(st.sampled_from(["n/p.md", "n/q.md"]), st.none() | _IDS, max_size=2),
    journal=st.dictionaries(_PATHS, _IDS, max_size=2),
)
def test_new_notes_given_their_own_ids_only_when_a_whole_assignment_agrees(
    old: dict[str, str | None], new: dict[str, str | None], journal: dict[str, str]
) -> None:
    before = assign_ids(old, journal)
    added = ids_of_added(new, journal, tuple(before.values()))
    if added is not None:  # when it answers, it is what assigning every id again gives
        assert {**before, **added} == assign_ids({**old, **new}, journal)


@given(
    old=st.dictionaries(_PATHS, st.none() | _IDS, max_size=6),
    gone=st.sets(_PATHS, max_size=3),
    new=st.dictionaries(st.sampled_from(["n/p.md", "n/q.md"]), st.none() | _IDS, max_size=2),
    journal=st.dictionaries(_PATHS, _IDS, max_size=2),
    renamed=st.dictionaries(st.sampled_from(["n/p.md", "n/q.md"]), _IDS, max_size=1),
)
def test_with_no_id_salted_notes_that_go_leave_every_other_id_as_it_was(
    old: dict[str, str | None],
    gone: set[str],
    new: dict[str, str | None],
    journal: dict[str, str],
    renamed: dict[str, str],
) -> None:
    """`steps._moved_ids`' argument: where no clash salted an id, notes that go (and new ones,
    renamed ones among them) leave each remaining note its id, and a new note whose candidate
    is free takes it: what assigning every id again gives."""
    before, salted = assign_ids_salted(old, journal)
    if salted:
        return
    after = {p: c for p, c in old.items() if p not in gone}
    moved_journal = {**journal, **renamed}  # a rename adds its new path, as reconcile does
    added = ids_of_added(new, moved_journal, {before[p] for p in after})
    if added is not None:
        kept = {p: before[p] for p in after}
        assert {**kept, **added} == assign_ids({**after, **new}, moved_journal)


def test_a_clash_is_reported_as_salted() -> None:
    assert assign_ids_salted({"a.md": "t-one", "b.md": None}, {})[1] is False
    assert assign_ids_salted({"a.md": "t-one", "b.md": "t-one"}, {})[1] is True

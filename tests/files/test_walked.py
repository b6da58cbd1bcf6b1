"""The walk's notes as folders of columns (`files/walked.py`): as a sequence they are the sorted
fingerprints a walk always gave, and a no-op reconcile never makes them."""

from __future__ import annotations

import random
from hashlib import blake2b
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultmem.core.config import Config, FolderMapping
from vaultmem.files.walked import Fingerprint, Folder, WalkedNotes, in_folder
from vaultmem.index import reconcile
from vaultmem.index.plan import IndexedNote, IndexedNotes, plan_changes

_NAMES = st.text(alphabet="ab/ .-_é", min_size=1, max_size=8).filter(
    lambda p: not p.startswith("/") and not p.endswith("/") and "//" not in p
)


def _fingerprints(paths: set[str]) -> list[Fingerprint]:
    rng = random.Random(len(paths))
    return [Fingerprint(p, rng.randrange(10**6), rng.randrange(10**18)) for p in paths]


def _digest(notes: WalkedNotes) -> str:
    hasher = blake2b(digest_size=16)
    notes.digest_into(hasher)
    return hasher.hexdigest()


@given(st.sets(_NAMES, max_size=30), st.sampled_from(["", "a/", "b/", "a/b/", "a/a/"]))
def test_the_sequence_is_the_sorted_fingerprints(paths: set[str], prefix: str) -> None:
    fps = _fingerprints(paths)
    expected = tuple(sorted(fps))
    shuffled = list(fps)
    random.Random(7).shuffle(shuffled)
    notes = WalkedNotes.of(shuffled)
    assert len(notes) == len(expected)
    assert notes.in_folder(prefix) == [fp for fp in expected if fp.path.startswith(prefix)]
    assert notes == expected and list(notes) == list(expected) and notes[:3] == expected[:3]
    assert in_folder(expected, prefix) == tuple(notes.in_folder(prefix))
    # once made, the fingerprints answer the same
    assert notes.in_folder(prefix) == [fp for fp in expected if fp.path.startswith(prefix)]
    gone = {fp.path for fp in expected[::2]}
    assert notes.without(gone) == tuple(fp for fp in expected if fp.path not in gone)


@given(st.sets(_NAMES, max_size=40), st.randoms(use_true_random=False))
def test_the_columns_are_the_sorted_fingerprints(paths: set[str], rng: random.Random) -> None:
    """A folder's notes and its sub-folders' interleave in path order (`a/b.md`, `a/c/d.md`,
    `a/e.md`): the columns cut each folder's names around them, whatever the walk's order."""
    expected = sorted(_fingerprints(paths))
    folders = list(WalkedNotes.of(expected)._folders)
    rng.shuffle(folders)
    notes = WalkedNotes(folders)
    columns = notes.columns()
    assert columns.paths == [fp.path for fp in expected]
    assert list(columns.sizes) == [fp.size for fp in expected]
    assert list(columns.mtimes) == [fp.mtime_ns for fp in expected]
    assert notes.columns() is columns
    made = WalkedNotes(folders)
    made.fingerprints()
    assert made.columns() == columns  # from the fingerprints once they are made


@given(st.sets(_NAMES, min_size=1, max_size=30), st.data())
def test_an_edit_in_place_plans_from_the_columns_as_from_the_fingerprints(
    paths: set[str], data: st.DataObject
) -> None:
    """`plan._moved_in_place` reads a walk's columns and makes a tuple for each moved note
    only: the plan is the one the sorted fingerprints give."""
    expected = sorted(_fingerprints(paths))
    moved = data.draw(st.sets(st.integers(0, len(expected) - 1)))
    indexed = IndexedNotes(
        [
            IndexedNote(fp.path, f"n-{i}", fp.size + (i in moved), fp.mtime_ns, "h", None)
            for i, fp in enumerate(expected)
        ]
    )
    walked = WalkedNotes.of(expected)
    changes = plan_changes(indexed, walked)
    assert changes == plan_changes(indexed, tuple(expected))
    assert [fp.path for fp in changes.suspect] == [expected[i].path for i in sorted(moved)]
    assert walked._sorted is None  # no tuple for the notes that did not move


def test_the_digest_sees_every_column() -> None:
    base = WalkedNotes([Folder("a/", ["x.md", "y.md"], [1, 2], [10, 20])])
    same = WalkedNotes.of([Fingerprint("a/y.md", 2, 20), Fingerprint("a/x.md", 1, 10)])
    assert _digest(base) == _digest(same)
    for other in (
        [Folder("a/", ["x.md", "z.md"], [1, 2], [10, 20])],  # a name
        [Folder("a/", ["x.md", "y.md"], [1, 3], [10, 20])],  # a size
        [Folder("a/", ["x.md", "y.md"], [1, 2], [10, 21])],  # an mtime
        [Folder("b/", ["x.md", "y.md"], [1, 2], [10, 20])],  # the folder
        [Folder("a/", ["x.md"], [1], [10]), Folder("a/", ["y.md"], [2], [20])],  # split
    ):
        assert _digest(WalkedNotes(other)) != _digest(base)


@pytest.fixture
def current(tmp_path: Path) -> Config:
    """A vault whose index is current (reconciled, then reconciled again to a no-op)."""
    root = tmp_path / "v"
    for rel in ("Notes/a.md", "Notes/deep/b.md", "agent-memory/project/p/key.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n", encoding="utf-8")
    config = Config(
        root=root.resolve(),
        mappings=(
            FolderMapping("Notes", "project", "p"),
            FolderMapping("agent-memory", "project", "p"),
        ),
    )
    config.state_dir.mkdir(parents=True, exist_ok=True)
    reconcile.reconcile(config)
    return config


def test_a_no_op_reconcile_makes_no_tuple_per_note(
    current: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    fingerprints = WalkedNotes.fingerprints

    def counted(self: WalkedNotes) -> tuple[Fingerprint, ...]:
        made.append(len(self))
        return fingerprints(self)

    monkeypatch.setattr(WalkedNotes, "fingerprints", counted)
    report = reconcile.reconcile(current)
    # only the managed folder's one topic (for its conflict copies), never the whole walk's
    assert (report.unchanged, report.changed, made) == (3, 0, [1])
    (current.root / "Notes" / "a.md").write_text("# a\n\nedited\n", encoding="utf-8")
    report = reconcile.reconcile(current)
    # an edit in place plans from the columns: a tuple for the edited note alone
    assert (report.unchanged, report.changed, made) == (2, 1, [1, 1])
    (current.root / "Notes" / "new.md").write_text("# new\n", encoding="utf-8")
    report = reconcile.reconcile(current)
    assert (report.added, report.unchanged) == (1, 3)
    assert 4 in made  # a note came: the plan compares fingerprints

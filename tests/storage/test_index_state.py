"""The index state kept beside the index (`storage.index_state`): what is written reads back
whole, and anything short of a whole record is no record."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.storage.index_state import (
    CHANGE_NAME,
    RECORD_NAME,
    StateChange,
    StateRecord,
    forget_before_write,
    kept_state_record,
    read_state_record,
    record_state,
)
from vaultmem.storage.index_state import write_state_record as write
from vaultmem.storage.last_survey import IndexToken


def _record() -> StateRecord:
    return StateRecord(
        token=((1, 2, 3), None),
        versions={"parser_version": "9"},
        paths=["a.md", "dir/b \u00e9.md", "odd\nname.md"],
        ids=["n-1", "t-topic", "n-3"],
        sizes=[10, 2**40, 0],
        mtimes=[1_700_000_000_123_456_789, -1, 5],
        hashes=["h" * 32, "0" * 32, "f" * 32],
        claims=[None, "t-topic", ""],
        files=["a.md", "dir/b \u00e9.md", "odd\nname.md", "pic.png"],
        scan_problems=[("x.md", "symlink_refused", "points outside")],
        problem_count=4,
        journal="abc",
    )


def _plain(record: StateRecord | None) -> StateRecord | None:
    """The record with its note columns as lists (a record read back keeps them as it
    stores them: `TextColumn`s and 64-bit arrays)."""
    if record is None:
        return None
    columns = ("paths", "ids", "sizes", "mtimes", "hashes")
    return record._replace(**{name: list(getattr(record, name)) for name in columns})


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    write(tmp_path, _record())
    got = read_state_record(tmp_path)
    assert got is not None
    assert _plain(got) == _record()


def test_an_empty_index_reads_back(tmp_path: Path) -> None:
    empty = _record()._replace(
        paths=[], ids=[], sizes=[], mtimes=[], hashes=[], claims=[], files=[], scan_problems=[]
    )
    write(tmp_path, empty)
    assert _plain(read_state_record(tmp_path)) == empty


@pytest.mark.parametrize("cut", [1, 10, 100, -1])
def test_a_truncated_or_damaged_record_is_no_record(tmp_path: Path, cut: int) -> None:
    write(tmp_path, _record())
    data = (tmp_path / RECORD_NAME).read_bytes()
    (tmp_path / RECORD_NAME).write_bytes(data[:cut] if cut > 0 else data + b"x")
    assert read_state_record(tmp_path) is None


def test_a_writer_about_to_write_holds_the_state(tmp_path: Path) -> None:
    write(tmp_path, _record())
    forget_before_write(tmp_path)
    assert read_state_record(tmp_path) is None


def test_the_writer_keeps_its_record_for_that_index_only(tmp_path: Path) -> None:
    """A warm writer takes its own last record back from memory, for the very index it
    named: another token (a commit by any other writer since) means the file, or the rows."""
    record = _record()
    write(tmp_path, record)
    assert kept_state_record(tmp_path, record.token) is record
    assert kept_state_record(tmp_path, ((1, 2, 4), None)) is None
    assert kept_state_record(tmp_path / "other", record.token) is None


def _change(record: StateRecord, was: IndexToken, token: IndexToken) -> StateChange:
    """A change of one note ("a.md" edited), one gone ("odd\\nname.md"), one new, a file gone."""
    return StateChange(
        was,
        token,
        record.versions,
        {
            "a.md": ("n-1", 11, 7, "e" * 32, None),
            "odd\nname.md": None,
            "new.md": ("n-9", 1, 2, "9" * 32, "claimed"),
        },
        {"odd\nname.md": False, "new.md": True, "pic.png": False},
        {
            ("x.md", "symlink_refused", "points outside"): False,
            ("new.md", "file_unstable", "changed while read"): True,
        },
        7,
        "def",
    )


def _as_sets(record: StateRecord) -> tuple[Any, ...]:
    rows = set(zip(*record[2:8], strict=True))
    return (record.token, record.versions, rows, set(record.files), *record[9:])


def _after_change() -> StateRecord:
    return StateRecord(
        token=((1, 2, 9), (4, 5, 6)),
        versions={"parser_version": "9"},
        paths=["dir/b \u00e9.md", "a.md", "new.md"],
        ids=["t-topic", "n-1", "n-9"],
        sizes=[2**40, 11, 1],
        mtimes=[-1, 7, 2],
        hashes=["0" * 32, "e" * 32, "9" * 32],
        claims=["t-topic", None, "claimed"],
        files=["a.md", "dir/b \u00e9.md", "new.md"],
        scan_problems=[("new.md", "file_unstable", "changed while read")],
        problem_count=7,
        journal="def",
    )


def test_a_small_write_records_its_change_beside_the_base(tmp_path: Path) -> None:
    """Held before the write, folded after it: the base stays, the change file says what
    moved, and the two read back as the whole state of the new index."""
    base = _record()
    write(tmp_path, base)
    size = (tmp_path / RECORD_NAME).stat().st_size
    forget_before_write(tmp_path)
    after = _after_change()
    record_state(tmp_path, after.token, lambda: after, _change(base, base.token, after.token))
    assert (tmp_path / CHANGE_NAME).exists()
    assert (tmp_path / RECORD_NAME).stat().st_size == size  # the base was not rewritten
    got = read_state_record(tmp_path)
    assert got is not None and _as_sets(got) == _as_sets(after)

    # A second write folds into the same change file: "new.md" goes again.
    forget_before_write(tmp_path)
    again = after._replace(
        token=((1, 2, 10), None),
        paths=["dir/b \u00e9.md", "a.md"],
        ids=["t-topic", "n-1"],
        sizes=[2**40, 11],
        mtimes=[-1, 7],
        hashes=["0" * 32, "e" * 32],
        claims=["t-topic", None],
        files=["a.md", "dir/b \u00e9.md"],
    )
    change = _change(base, after.token, again.token)._replace(
        notes={"new.md": None}, files={"new.md": False}
    )
    record_state(tmp_path, again.token, lambda: again, change)
    got = read_state_record(tmp_path)
    assert got is not None and _as_sets(got) == _as_sets(again)


def test_a_held_state_stands_for_no_index_until_the_writer_records(tmp_path: Path) -> None:
    """A crash between the hold and the record leaves no state to trust: the rows decide."""
    base = _record()
    write(tmp_path, base)
    forget_before_write(tmp_path)
    after = _after_change()
    record_state(tmp_path, after.token, lambda: after, _change(base, base.token, after.token))
    forget_before_write(tmp_path)  # the next writer holds it ... and dies
    assert read_state_record(tmp_path) is None


def test_a_change_from_a_state_the_record_does_not_hold_writes_a_whole_base(
    tmp_path: Path,
) -> None:
    """A writer that read the rows of another index than the record's (a stale record)
    cannot fold its change into that record: it writes its whole state."""
    base = _record()
    write(tmp_path, base)
    forget_before_write(tmp_path)
    after = _after_change()
    record_state(
        tmp_path, after.token, lambda: after, _change(base, ((7, 7, 7), None), after.token)
    )
    assert not (tmp_path / CHANGE_NAME).exists()
    got = read_state_record(tmp_path)
    assert got is not None and _as_sets(got) == _as_sets(after)


def test_a_large_change_writes_a_whole_base(tmp_path: Path) -> None:
    base = _record()
    write(tmp_path, base)
    forget_before_write(tmp_path)
    many = {f"n{i}.md": (f"n-{i}", 1, 1, "a" * 32, None) for i in range(65)}
    after = _after_change()
    change = _change(base, base.token, after.token)._replace(notes=many)
    record_state(tmp_path, after.token, lambda: after, change)
    assert not (tmp_path / CHANGE_NAME).exists()
    got = read_state_record(tmp_path)
    assert got is not None and _as_sets(got) == _as_sets(after)


@pytest.mark.parametrize("damage", ["garbled", "other format", "other base"])
def test_a_change_file_that_is_not_this_bases_leaves_the_base_alone(
    tmp_path: Path, damage: str
) -> None:
    """A damaged change file, or one left over from an older base, is no change: the base
    stands alone, and its own token says whether it is the index's."""
    base = _record()
    write(tmp_path, base)
    forget_before_write(tmp_path)
    after = _after_change()
    record_state(tmp_path, after.token, lambda: after, _change(base, base.token, after.token))
    path = tmp_path / CHANGE_NAME
    change = path.read_bytes()
    if damage == "garbled":
        path.write_bytes(change[:20])
        expected = base.token
    elif damage == "other format":
        path.write_text(json.dumps({**json.loads(change), "format": 99}))
        expected = base.token
    else:  # a new base was written, and the crash came before its old change file went
        expected = ((3, 3, 3), None)
        write(tmp_path, base._replace(token=expected))
        path.write_bytes(change)
    got = read_state_record(tmp_path)
    assert got is not None and got.token == expected


@pytest.mark.parametrize("ordered", [True, False], ids=["base in path order", "base unordered"])
@pytest.mark.parametrize("seed", range(4))
def test_a_change_applies_to_the_base_in_path_order(
    tmp_path: Path, ordered: bool, seed: int
) -> None:
    """A few changed notes (edited, gone, new, gone though never recorded) read back as the
    base with exactly those rows changed, in path order: bisected into a base written in path
    order, sorted in otherwise."""
    rng = random.Random(seed)
    paths = sorted({f"{rng.choice('abc')}/{rng.randrange(10_000)}.md" for _ in range(300)})
    rows = {p: (f"n-{i}", i, i * 7, f"{i:032x}", None) for i, p in enumerate(paths)}
    listed = paths if ordered else list(reversed(paths))
    base = _record()._replace(
        paths=listed,
        ids=[rows[p][0] for p in listed],
        sizes=[rows[p][1] for p in listed],
        mtimes=[rows[p][2] for p in listed],
        hashes=[rows[p][3] for p in listed],
        claims=[rows[p][4] for p in listed],
        files=[*listed, "pic.png"],
        scan_problems=[],
    )
    write(tmp_path, base)
    forget_before_write(tmp_path)
    changed: dict[str, Any] = {p: ("n-x", 1, 2, "e" * 32, "t-x") for p in rng.sample(paths, 5)}
    changed |= dict.fromkeys(rng.sample(sorted(set(paths) - set(changed)), 5))
    changed |= {"a/new.md": ("n-new", 3, 4, "f" * 32, None), "zz/never.md": None}
    changed |= {"0-first.md": ("n-0", 5, 6, "0" * 32, None)}
    changed |= {"zzz-last.md": ("n-z", 7, 8, "9" * 32, None)}
    expected = {**rows, **changed}
    expected = {p: r for p, r in sorted(expected.items()) if r is not None}
    token: IndexToken = ((9, 9, 9), None)
    change = StateChange(base.token, token, base.versions, changed, {"pic.png": False}, {}, 0, None)
    record_state(tmp_path, token, lambda: base, change)
    assert (tmp_path / CHANGE_NAME).exists()
    got = read_state_record(tmp_path)
    assert got is not None
    assert list(got.paths) == list(expected)
    assert list(zip(*got[3:8], strict=True)) == list(expected.values())
    assert set(got.files) == set(paths)


def test_a_change_past_the_limit_writes_a_whole_base_whatever_the_vaults_size(
    tmp_path: Path,
) -> None:
    """A change file stays short enough for a reader to bisect (`CHANGE_LIMIT` notes), also
    beside the base of a large vault, where a tenth of the notes would be many more."""
    from vaultmem.storage.index_state import CHANGE_LIMIT

    paths = [f"n{i:05}.md" for i in range(2_000)]
    base = _record()._replace(
        paths=paths,
        ids=[f"n-{i}" for i in range(2_000)],
        sizes=[1] * 2_000,
        mtimes=[2] * 2_000,
        hashes=["a" * 32] * 2_000,
        claims=[None] * 2_000,
        files=paths,
        scan_problems=[],
    )
    write(tmp_path, base)
    for many in (CHANGE_LIMIT, CHANGE_LIMIT + 1):
        forget_before_write(tmp_path)
        token: IndexToken = ((5, 5, many), None)
        notes = {p: (f"n-{i}", 9, 9, "b" * 32, None) for i, p in enumerate(paths[:many])}
        change = StateChange(base.token, token, base.versions, notes, {}, {}, 0, None)
        whole = base._replace(token=token)
        record_state(tmp_path, token, lambda whole=whole: whole, change)
        assert (tmp_path / CHANGE_NAME).exists() == (many <= CHANGE_LIMIT)
        got = read_state_record(tmp_path)
        assert got is not None and got.token == token
        base = got


def test_listed_files_answer_as_their_set_with_or_without_changes() -> None:
    """A record's files kept joined: `in`, `len`, iteration, set operations and the lines
    the link resolver searches all say what the set of the files says, before and after
    files come and go (also a file that came back, or went without ever being there)."""
    from vaultmem.storage.index_state import ListedFiles, join_listing

    base = ["a.md", "dir/b \u00e9.md", "dir/c.md", "pic.png"]
    listed = ListedFiles(join_listing(sorted(base)), len(base))
    changes = {"pic.png": False, "new.md": True, "a.md": True, "never.md": False}
    cases = [(listed, set(base)), (listed.changed(changes), {"a.md", "dir/b \u00e9.md"})]
    cases[1][1].update({"dir/c.md", "new.md"})
    probes = [*base, "new.md", "never.md", "b \u00e9.md", "dir/b", "", "a.md\0dir", "c.md"]
    for files, expected in cases:
        assert len(files) == len(expected)
        assert [p in files for p in probes] == [p in expected for p in probes]
        assert set(files) == expected and files == expected
        assert files - {"a.md"} == frozenset(expected - {"a.md"})
    assert listed.lines() == "\na.md\ndir/b \u00e9.md\ndir/c.md\npic.png\n"
    went = listed.changed(changes).lines()  # pic.png went: its line taken out, new.md's added
    assert went == "\na.md\ndir/b \u00e9.md\ndir/c.md\nnew.md\n"
    for files, expected in cases:  # the resolver needs one line per file, no more
        text = files.lines()
        assert text is not None and text[0] == text[-1] == "\n"
        assert sorted(text[1:-1].split("\n")) == sorted(expected) and len(files) == len(expected)
    gone = listed.changed(dict.fromkeys(base, False))
    assert gone.lines() == "\n" and len(gone) == 0
    came = listed.changed({"new.md": True, "a.md": True})
    assert came.lines() == "\na.md\ndir/b \u00e9.md\ndir/c.md\npic.png\nnew.md\n"
    assert not came.same_as(join_listing(sorted(base)))  # a walk's listing is the base's
    odd = ListedFiles(join_listing(["a\nb.md"]), 1)
    assert odd.lines() is None and "a\nb.md" in odd


def test_a_record_read_back_keeps_its_columns_joined_until_walked(tmp_path: Path) -> None:
    """A run named by path looks up a note and a file of 100,000: a record read back
    answers without splitting its columns, and a note edited since the base (its change
    file) leaves the paths' column as stored."""
    from vaultmem.storage.text_column import TextColumn

    record = _record()._replace(files=["a.md", "dir/b \u00e9.md", "pic.png"])
    record = record._replace(paths=record.paths[:2], ids=record.ids[:2], sizes=[1, 2])
    record = record._replace(mtimes=[1, 2], hashes=record.hashes[:2], claims=[None, "t-topic"])
    write(tmp_path, record)
    forget_before_write(tmp_path)
    token: IndexToken = ((7, 7, 7), None)
    edit = {"a.md": ("n-1", 5, 6, "e" * 32, None)}
    change = StateChange(record.token, token, record.versions, edit, {}, {}, 4, "abc")
    record_state(tmp_path, token, lambda: record, change)
    got = read_state_record(tmp_path)
    assert got is not None and isinstance(got.paths, TextColumn)
    assert got.paths.joined is not None and got.paths.ascending  # the edit left it unedited
    assert (got.paths[0], got.ids[0], got.sizes[0], got.hashes[0]) == ("a.md", "n-1", 5, "e" * 32)
    assert "pic.png" in got.files and "b \u00e9.md" not in got.files
    assert got.files.lines() is not None  # type: ignore[attr-defined]


def test_listed_files_asked_about_many_paths_answer_from_a_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past `SEARCHES` look-ups (a caller asking about every file) the base's files become a
    set: the same answers, each without a search of the joined bytes."""
    from vaultmem.storage import index_state
    from vaultmem.storage.index_state import ListedFiles, join_listing

    monkeypatch.setattr(index_state, "SEARCHES", 2)
    base = [f"n{i}.md" for i in range(10)]
    listed = ListedFiles(join_listing(sorted(base)), len(base)).changed({"new.md": True})
    probes = [*base, "new.md", "n1", "n10.md", "x.md"]
    assert [p in listed for p in probes] == [True] * 11 + [False] * 3
    assert listed._base.set is not None  # the set was made past the bound


@settings(max_examples=300, deadline=None)
@given(
    st.sets(
        st.text(
            st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]),
            min_size=1,
            max_size=6,
        ),
        max_size=30,
    ),
    st.lists(
        st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]), max_size=6),
        max_size=10,
    ),
)
def test_a_bisection_of_the_joined_files_finds_exactly_the_files(
    files: set[str], others: list[str]
) -> None:
    """Sorted as `str`s, joined and encoded, the files are sorted as bytes too: bisecting the
    bytes finds each file, and nothing else (a prefix, an extension, an empty name)."""
    from vaultmem.storage.index_state import ListedFiles, join_listing

    listed = ListedFiles(join_listing(sorted(files)), len(files))
    probes = [*files, *others, *(f[:-1] for f in files), *(f + "x" for f in files)]
    assert [p in listed for p in probes] == [p in files for p in probes]

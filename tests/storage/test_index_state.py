"""The index state kept beside the index (`storage.index_state`): what is written reads back
whole, and anything short of a whole record is no record."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.storage.index_state import (
    RECORD_NAME,
    StateRecord,
    kept_state_record,
    read_state_record,
)
from vaultmem.storage.index_state import write_state_record as write
from vaultmem.storage.last_survey import forget_last_survey


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


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    write(tmp_path, _record())
    got = read_state_record(tmp_path)
    assert got is not None
    assert got._replace(paths=list(got.paths)) == _record()


def test_an_empty_index_reads_back(tmp_path: Path) -> None:
    empty = _record()._replace(
        paths=[], ids=[], sizes=[], mtimes=[], hashes=[], claims=[], files=[], scan_problems=[]
    )
    write(tmp_path, empty)
    assert read_state_record(tmp_path) == empty


@pytest.mark.parametrize("cut", [1, 10, 100, -1])
def test_a_truncated_or_damaged_record_is_no_record(tmp_path: Path, cut: int) -> None:
    write(tmp_path, _record())
    data = (tmp_path / RECORD_NAME).read_bytes()
    (tmp_path / RECORD_NAME).write_bytes(data[:cut] if cut > 0 else data + b"x")
    assert read_state_record(tmp_path) is None


def test_forgetting_the_last_survey_forgets_the_state(tmp_path: Path) -> None:
    write(tmp_path, _record())
    forget_last_survey(tmp_path)
    assert read_state_record(tmp_path) is None


def test_the_writer_keeps_its_record_for_that_index_only(tmp_path: Path) -> None:
    """A warm writer takes its own last record back from memory, for the very index it
    named: another token (a commit by any other writer since) means the file, or the rows."""
    record = _record()
    write(tmp_path, record)
    assert kept_state_record(tmp_path, record.token) is record
    assert kept_state_record(tmp_path, ((1, 2, 4), None)) is None
    assert kept_state_record(tmp_path / "other", record.token) is None

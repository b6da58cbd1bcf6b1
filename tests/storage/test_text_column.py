"""A state record's text columns (`storage.text_column`): a column behaves as the list of its
strings under any edits, whether it is split yet or not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.storage.text_column import MAX_EDITS, SEPARATOR, TextColumn, ends_of

_STRINGS = st.lists(st.text(st.characters(blacklist_characters=SEPARATOR), max_size=6), max_size=8)
_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["set", "insert", "delete", "read"]),
        st.integers(-10, 10),
        st.text(max_size=3).filter(lambda t: SEPARATOR not in t),
    ),
    max_size=MAX_EDITS + 8,
)


def _column(values: list[str]) -> TextColumn:
    return TextColumn(SEPARATOR.join(values), ends_of(values))


@settings(max_examples=300, deadline=None)
@given(_STRINGS, _EDITS)
def test_a_column_is_its_list_under_any_edits(values: list[str], edits: list) -> None:  # type: ignore[type-arg]
    """Each edit and each read, kept as a log before the split: every string read between
    edits, the length and the whole list are the list's, past `MAX_EDITS` edits too."""
    column, expected = _column(values), list(values)
    for kind, i, value in edits:
        if kind == "insert":
            column.insert(i, value)
            expected.insert(i, value)
        elif not expected or not -len(expected) <= i < len(expected):
            with pytest.raises(IndexError):
                column[i]
            continue
        elif kind == "set":
            column[i] = value
            expected[i] = value
        elif kind == "delete":
            del column[i]
            del expected[i]
        assert len(column) == len(expected)
        assert [column[j] for j in range(len(expected))] == expected
    assert list(column) == expected
    assert column == expected


def test_a_string_is_cut_without_splitting_the_column() -> None:
    values = ["a.md", "dir/b \u00e9.md", "", "z\u4e2d.md"]
    column = _column(values)
    assert [column[i] for i in (0, 1, 2, 3, -1)] == [*values, values[-1]]
    assert column.joined is not None  # nothing split, nothing edited
    column[1] = "c.md"
    assert column.joined is None  # an edited column is stored anew
    assert list(column) == ["a.md", "c.md", "", "z\u4e2d.md"]


def test_a_list_compares_with_the_joined_text_and_becomes_the_columns() -> None:
    """A walk's paths equal to the column's: compared joined, then taken as the split list
    (later reads index it); unequal, the column stays as it was."""
    values = ["a.md", "b.md", "c.md"]
    column = _column(values)
    assert column != ["a.md", "b.md", "d.md"]
    assert column.joined is not None
    walk = list(values)
    assert column == walk
    assert column.joined is None and list(column) == values
    assert column != ["a.md", "b.md"]
    assert _column([]) == []


def test_ends_that_do_not_fit_the_text_are_refused() -> None:
    with pytest.raises(ValueError):
        TextColumn("ab", ends_of(["abc"]))

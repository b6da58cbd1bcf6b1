"""Strings kept as one text and the offsets where each ends: a column read without its objects.

The index state a writer records (`storage.index_state`) holds every note's path, id and
content hash: 300,000 strings at 100,000 notes. Splitting them into Python strings cost a cold
run ~45 ms, and a run named by path (`reconcile --path`, a `store`) looks at a handful. A
`TextColumn` is the joined text and each string's end: a string is cut when asked, found by
bisection while the column is sorted, and the whole list is made only when something walks it.

A record read back is then patched with the few rows its change file holds (an edit replaces
a row, a new note inserts one): those edits are kept as a short log that a look-up maps its
position through, so patching does not make the list either; past `MAX_EDITS`, or on the first
walk, the list is made and the log applied to it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from itertools import accumulate
from operator import add
from typing import Literal, overload

SEPARATOR = "\0"
"""Between two strings of the text: no path, id or hash holds it."""

MAX_EDITS = 64
"""Edits kept as a log before the list is made (a change file holds at most 64 notes)."""

_Edit = tuple[Literal["set", "insert", "delete"], int, str]


def ends_of(values: Iterable[str]) -> array[int]:
    """Where each of `values` ends in `SEPARATOR.join(values)` (in characters): the running
    sum of their lengths plus one separator per string before, computed in C."""
    lengths = list(map(len, values))
    return array("q", map(add, accumulate(lengths), range(len(lengths))))


class TextColumn(MutableSequence[str]):
    """`text.split(SEPARATOR)` as a sequence, cut one string at a time until walked.

    `ends[i]` is where string `i` ends in `text` (`ends_of`); `ascending`: the strings are
    known to be in order (a reader may then bisect without checking them all first)."""

    __slots__ = ("_count", "_edits", "_ends", "_list", "_text", "ascending")

    def __init__(self, text: str, ends: array[int], ascending: bool | None = None) -> None:
        if ends and ends[-1] != len(text):
            raise ValueError("the ends do not fit the text")
        self._text = text
        self._ends = ends
        self._count = len(ends)
        self._list: list[str] | None = None
        self._edits: list[_Edit] = []
        self.ascending = ascending

    @property
    def joined(self) -> tuple[str, array[int]] | None:
        """The text and ends as given, while no edit changed them (a writer stores them as
        they are); else None."""
        return None if self._list is not None or self._edits else (self._text, self._ends)

    def _values(self) -> list[str]:
        """The list, made (and the edit log applied to it) on first use."""
        if self._list is None:
            values = self._text.split(SEPARATOR) if len(self._ends) else []
            for kind, at, value in self._edits:
                if kind == "set":
                    values[at] = value
                elif kind == "insert":
                    values.insert(at, value)
                else:
                    del values[at]
            self._list, self._edits = values, []
        return self._list

    def _cut(self, i: int) -> str:
        """String `i` of the text, as given (before any edit)."""
        ends = self._ends
        return self._text[ends[i - 1] + 1 if i else 0 : ends[i]]

    def _position(self, i: int) -> int:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text column index out of range")
        return i

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice) or self._list is not None:
            return self._values()[i]
        at = self._position(i)
        for kind, where, value in reversed(self._edits):  # back to where it was before each
            if kind == "set":
                if at == where:
                    return value
            elif kind == "insert":
                if at == where:
                    return value
                if at > where:
                    at -= 1
            elif at >= where:
                at += 1
        return self._cut(at)

    @overload
    def __setitem__(self, i: int, value: str) -> None: ...
    @overload
    def __setitem__(self, i: slice, value: Iterable[str]) -> None: ...
    def __setitem__(self, i: int | slice, value: str | Iterable[str]) -> None:
        if isinstance(i, slice):
            self._values()[i] = [str(v) for v in value]
        elif self._list is not None:
            self._list[i] = str(value)
        else:
            self._edit(("set", self._position(i), str(value)))

    def __delitem__(self, i: int | slice) -> None:
        if isinstance(i, slice) or self._list is not None:
            del self._values()[i]
        else:
            self._edit(("delete", self._position(i), ""))
            self._count -= 1

    def insert(self, i: int, value: str) -> None:
        if self._list is not None:
            self._list.insert(i, value)
            return
        n = len(self)
        at = min(max(i + n if i < 0 else i, 0), n)  # as `list.insert` clamps
        self._edit(("insert", at, value))
        self._count += 1

    def _edit(self, edit: _Edit) -> None:
        self._edits.append(edit)
        if len(self._edits) > MAX_EDITS:
            self._values()

    def __len__(self) -> int:
        return len(self._list) if self._list is not None else self._count

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __eq__(self, other: object) -> bool:
        """Equal to a list or tuple of the same strings. Before the column is split, a list
        of strings is joined and compared with the text (a walk's 100,000 paths: ~3 ms,
        against ~17 ms to split them), and when equal taken as the column's own list."""
        if isinstance(other, TextColumn):
            return self._values() == other._values()
        if not isinstance(other, list | tuple):
            return NotImplemented
        if self.joined is None or len(other) != len(self):
            return self._values() == list(other)
        try:
            same = SEPARATOR.join(other) == self._text
        except TypeError:  # not all strings
            return False
        if same and len(other):
            self._list = list(other)
        return same

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TextColumn({len(self)} strings)"

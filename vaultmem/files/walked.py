"""The walk's notes as the walk finds them: folder by folder, each folder's note names with
their sizes and mtimes as columns. The sorted `Fingerprint` tuples are made on first use.

A reconcile whose walk equals the last one ends there (`storage.last_survey`): it needs the
walk's digest, the managed folder's topics (`index.conflicts`) and a count, none of which needs
a tuple per note. Building and sorting 100,000 of them, then reading their columns back out to
digest them, was ~0.15 s of a 0.6 s no-op at 100,000 notes (`benchmarks/HISTORY.md`); the
folders' columns come straight from the stats (`files.stat_pair`), so the digest reads them as
they are. A run that plans (an edit) asks for the fingerprints and gets them sorted, as before.

The digest is the folders' in the walk's order, and a folder's part is the same whether its
listing came from the record (`files.folder_cache`) or was taken again: its note names sorted,
with their sizes and mtimes. So a folder listed again because it changed two seconds before
the last walk gives the same digest as the recorded one.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Container, Iterable, Iterator, Sequence
from itertools import pairwise
from operator import itemgetter
from typing import NamedTuple, Protocol, overload


class _Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


class Fingerprint(NamedTuple):
    """What the scan knows about a note without reading it; a change means "re-read me".

    A named tuple, not a dataclass: the walk makes one per note (100,000 in a large vault) and
    a tuple is built at a third of the cost; sorted, tuples order by path (paths are unique)."""

    path: str
    size: int
    mtime_ns: int


class Columns(NamedTuple):
    """Notes as columns in path order: paths, sizes and mtimes (ns)."""

    paths: list[str]
    sizes: array[int]
    mtimes: array[int]


class Folder(NamedTuple):
    """One folder's notes: `prefix` (`Projects/`, "" for the vault's root), the note names in
    sorted order, and each one's size and mtime (ns) in the same order."""

    prefix: str
    names: Sequence[str]
    sizes: Sequence[int]
    mtimes: Sequence[int]


_path = itemgetter(0)


def folder_of(prefix: str, found: Iterable[Fingerprint]) -> Folder:
    """The `Folder` of fingerprints found in the folder at `prefix`, in any order."""
    notes = sorted(found, key=_path)
    start = len(prefix)
    return Folder(
        prefix,
        [fp.path[start:] for fp in notes],
        array("q", [fp.size for fp in notes]),
        array("q", [fp.mtime_ns for fp in notes]),
    )


class WalkedNotes(Sequence[Fingerprint]):
    """The notes of a walk, folder by folder (`Folder`s in the walk's order); as a sequence,
    their fingerprints sorted by path, made on first use."""

    __slots__ = ("_columns", "_count", "_folders", "_sorted")

    def __init__(self, folders: Iterable[Folder] = ()) -> None:
        self._folders = tuple(f for f in folders if f.names)
        self._count = sum(len(f.names) for f in self._folders)
        self._sorted: tuple[Fingerprint, ...] | None = None
        self._columns: Columns | None = None

    @classmethod
    def of(cls, notes: Iterable[Fingerprint]) -> WalkedNotes:
        """The notes of these fingerprints (any order), a folder per path prefix."""
        by_folder: dict[str, list[Fingerprint]] = {}
        for fp in notes:
            by_folder.setdefault(fp.path[: fp.path.rfind("/") + 1], []).append(fp)
        return cls(folder_of(prefix, found) for prefix, found in sorted(by_folder.items()))

    def fingerprints(self) -> tuple[Fingerprint, ...]:
        """Every note's fingerprint, sorted by path (made once)."""
        if self._sorted is None:
            new_tuple = tuple.__new__  # half the cost of the named tuple's own `__new__`
            notes: list[Fingerprint] = []
            for prefix, names, sizes, mtimes in self._folders:
                notes += [
                    new_tuple(Fingerprint, (prefix + name, size, mtime))
                    for name, size, mtime in zip(names, sizes, mtimes, strict=True)
                ]
            notes.sort(key=_path)  # paths are unique: comparing them alone sorts ~2x faster
            self._sorted = tuple(notes)
        return self._sorted

    def columns(self) -> Columns:
        """Every note's path, size and mtime as three columns sorted by path, made without a
        tuple per note: what a run that plans compares with the index (`index.plan`).

        A folder's notes are sorted already, but a folder's path order interleaves with its
        sub-folders' (`a/b.md`, `a/c/d.md`, `a/e.md`): each folder's names are cut where a
        sub-folder holding notes falls among them, and the runs, which never overlap, are
        put in the order of their first paths."""
        if self._columns is not None:
            return self._columns
        if self._sorted is not None:
            notes = self._sorted
            self._columns = Columns(
                [fp.path for fp in notes],
                array("q", [fp.size for fp in notes]),
                array("q", [fp.mtime_ns for fp in notes]),
            )
            return self._columns
        children: dict[str, set[str]] = {}  # a folder's prefix -> its sub-folders with notes
        for folder in self._folders:
            parts = folder.prefix.split("/")[:-1]
            for depth in range(len(parts)):
                parent = "".join(part + "/" for part in parts[:depth])
                children.setdefault(parent, set()).add(parts[depth] + "/")
        runs: list[tuple[str, Folder, int, int]] = []
        for folder in self._folders:
            prefix, names = folder.prefix, folder.names
            cuts = [bisect_left(names, child) for child in children.get(prefix, ())]
            bounds = sorted({0, len(names), *cuts})
            runs += [
                (prefix + names[start], folder, start, end)
                for start, end in pairwise(bounds)
                if start < end
            ]
        runs.sort(key=_path)
        paths: list[str] = []
        sizes, mtimes = array("q"), array("q")
        for _, (prefix, names, folder_sizes, folder_mtimes), start, end in runs:
            paths += map(prefix.__add__, names[start:end])
            sizes += _int64_array(folder_sizes[start:end])
            mtimes += _int64_array(folder_mtimes[start:end])
        self._columns = Columns(paths, sizes, mtimes)
        return self._columns

    def in_folder(self, prefix: str) -> list[Fingerprint]:
        """The fingerprints of the notes under the folder `prefix` (ending in `/`; "" for
        all), sorted, without making every note's."""
        if self._sorted is not None:
            return list(in_folder(self._sorted, prefix))
        inside = WalkedNotes(f for f in self._folders if f.prefix.startswith(prefix))
        return list(inside.fingerprints())

    def without(self, paths: Container[str]) -> WalkedNotes:
        """These notes less those at `paths`."""
        kept = []
        for folder in self._folders:
            prefix, names, sizes, mtimes = folder
            keep = [prefix + name not in paths for name in names]
            if all(keep):
                kept.append(folder)
                continue
            kept.append(
                Folder(
                    prefix,
                    [n for n, k in zip(names, keep, strict=True) if k],
                    array("q", [s for s, k in zip(sizes, keep, strict=True) if k]),
                    array("q", [m for m, k in zip(mtimes, keep, strict=True) if k]),
                )
            )
        return WalkedNotes(kept)

    def digest_into(self, hasher: _Hasher) -> None:
        """Feed `hasher` every folder's prefix, count, names, sizes and mtimes, in the walk's
        order (NUL never occurs in a name, so the parts cannot run into each other)."""
        for prefix, names, sizes, mtimes in self._folders:
            hasher.update(f"{prefix}\0{len(names)}\0".encode("utf-8", "surrogateescape"))
            hasher.update("\0".join(names).encode("utf-8", "surrogateescape"))
            hasher.update(_int64s(sizes))
            hasher.update(_int64s(mtimes))

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Fingerprint: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Fingerprint, ...]: ...

    def __getitem__(self, index: int | slice) -> Fingerprint | tuple[Fingerprint, ...]:
        return self.fingerprints()[index]

    def __iter__(self) -> Iterator[Fingerprint]:
        return iter(self.fingerprints())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WalkedNotes):
            return self.fingerprints() == other.fingerprints()
        if isinstance(other, tuple | list):
            return self.fingerprints() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a tuple, so not hashable as one

    def __repr__(self) -> str:
        return f"WalkedNotes({len(self._folders)} folders, {self._count} notes)"


def _int64s(values: Sequence[int]) -> bytes:
    return _int64_array(values).tobytes()


def _int64_array(values: Sequence[int]) -> array[int]:
    return values if isinstance(values, array) else array("q", values)


def in_folder(notes: Sequence[Fingerprint], prefix: str) -> Sequence[Fingerprint]:
    """The notes of `notes` (sorted by path) under the folder `prefix` (ending in `/`; ""
    for the whole vault)."""
    if isinstance(notes, WalkedNotes):
        return notes.in_folder(prefix)
    if not prefix:
        return notes
    first = bisect_left(notes, (prefix,))
    return notes[first : bisect_left(notes, (prefix[:-1] + chr(ord("/") + 1),))]

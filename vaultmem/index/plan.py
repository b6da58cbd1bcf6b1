"""Change planning for reconcile: pure functions from (index state, scan) to what must happen.

Nothing here touches a file or the database, so the interesting decisions (what changed,
what moved, which id each note gets) are tested directly and cannot drift between an
incremental reconcile and a rebuild: both call the same functions on the same state.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, KeysView, Mapping, Sequence
from hashlib import blake2b
from itertools import compress, filterfalse
from operator import itemgetter, le, ne
from typing import Any, Generic, NamedTuple, TypeVar, cast

from vaultmem.core.names import default_note_id
from vaultmem.files.walked import Fingerprint, WalkedNotes

F = TypeVar("F", bound=tuple[str, int, int])
"""A scanned note as the tuple (path, size, mtime_ns): `files.walked.Fingerprint` is one
(that module does no I/O either, so importing it keeps this one pure)."""


class IndexedNote(NamedTuple):
    """What the index remembers of a note: enough to decide whether to look at it again.

    `IndexedNotes` builds one only for a note a run asks about."""

    path: str
    id: str
    size: int
    mtime_ns: int
    content_hash: str
    claimed_id: str | None


class IndexedNotes(Mapping[str, IndexedNote]):
    """Every indexed note, by path, kept as the columns the index returned.

    A one-note edit reads all 10,000 notes of a vault but looks at a handful: building an
    `IndexedNote` per fetched row cost ~10 ms there, so the rows stay in C-level structures
    (column tuples, a set of fingerprints) and a note's object is built only when it is
    asked for. A path is found by bisection while the paths are in order (the walk's and the
    state record's order): the path → row dict a lookup otherwise builds is ~21 ms at 100,000
    notes, against ~5 ms for the one check that they are in order. It never changes once
    built.
    """

    __slots__ = (
        "_claims",
        "_fps",
        "_hashes",
        "_ids",
        "_in_order",
        "_mtimes",
        "_paths",
        "_row",
        "_sizes",
    )

    def __init__(self, rows: Sequence[tuple[str, str, int, int, str, str | None]]) -> None:
        """`rows`: (path, id, size, mtime_ns, content_hash, claimed_id) per note."""
        columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) or [()] * 6
        self._paths, self._ids, self._sizes, self._mtimes, self._hashes, self._claims = columns
        self._row: dict[str, int] | None = None
        self._in_order: bool | None = None
        self._fps: frozenset[tuple[str, int, int]] | None = None

    @classmethod
    def from_columns(
        cls,
        paths: Sequence[str],
        ids: Sequence[str],
        sizes: Sequence[int],
        mtimes: Sequence[int],
        hashes: Sequence[str],
        claims: Sequence[str | None],
        *,
        in_order: bool | None = None,
    ) -> IndexedNotes:
        """The notes given as six equally long columns (`storage.index_state` keeps them so).
        Lists become tuples; other sequences are kept as given (a state record's columns cut
        a string only when asked: a run named by path asks for a few). `in_order`: the paths
        are known to be in order (or not): no pass over them to find out."""
        notes = cls(())
        columns = (paths, ids, sizes, mtimes, hashes, claims)
        if len({len(c) for c in columns}) > 1:
            raise ValueError("columns of different lengths")
        notes._paths, notes._ids, notes._sizes, notes._mtimes, notes._hashes, notes._claims = (
            tuple(c) if isinstance(c, list) else c for c in columns
        )
        notes._in_order = in_order
        return notes

    @property
    def _rows(self) -> dict[str, int]:
        """Path -> row, made when first asked: a run that only writes the notes back (the
        state record after a watcher's one-note batch) never asks."""
        if self._row is None:
            self._row = dict(zip(self._paths, range(len(self._paths)), strict=True))
        return self._row

    def _index(self, path: str) -> int | None:
        """The row of `path`, or None: by bisection while the paths are in order, else by
        the path → row dict."""
        if self._row is None:
            if self._in_order is None:
                self._in_order = _ascending(self._paths)
            if self._in_order:
                paths = self._paths
                i = bisect_left(paths, path)
                return i if i < len(paths) and paths[i] == path else None
        return self._rows.get(path)

    def columns(self) -> tuple[Sequence[Any], ...]:
        """(paths, ids, sizes, mtimes, hashes, claims), each in the same order."""
        return (self._paths, self._ids, self._sizes, self._mtimes, self._hashes, self._claims)

    def updated(
        self,
        removed: Iterable[str],
        added: Iterable[tuple[str, str, int, int, str, str | None]],
        fingerprints: Iterable[tuple[str, int, int]] = (),
        id_changes: Mapping[str, str] | None = None,
    ) -> IndexedNotes:
        """The notes after a write: the `removed` paths out, `added` rows (path, id, size,
        mtime_ns, content_hash, claimed_id) in, new (path, size, mtime_ns) `fingerprints` of
        notes whose bytes did not change, and ids moved by `id_changes` (old id -> new id).
        The same changes reconcile's transaction makes to `notes`, in the same order; the
        result is in path order, as the walk is (`plan_changes` then compares in place)."""
        columns = [list(c) for c in self.columns()]
        gone = sorted({i for p in removed if (i := self._index(p)) is not None}, reverse=True)
        if len(gone) > 64:  # many: one pass instead of a shift of every column per row
            keep = set(range(len(self._paths))) - set(gone)
            columns = [[c[i] for i in sorted(keep)] for c in columns]
        else:
            for i in gone:
                for column in columns:
                    del column[i]
        if id_changes:
            ids = columns[1]
            for i, note_id in enumerate(ids):
                if note_id in id_changes:
                    ids[i] = id_changes[note_id]
        added_rows = list(added)
        if len(added_rows) <= 64 and _ascending(columns[0]):
            for row in added_rows:  # in place, so the columns stay in path order
                at = bisect_left(columns[0], row[0])
                for column, value in zip(columns, row, strict=True):
                    column.insert(at, value)
        else:
            for row in added_rows:
                for column, value in zip(columns, row, strict=True):
                    column.append(value)
            order = sorted(range(len(columns[0])), key=columns[0].__getitem__)
            columns = [[c[i] for i in order] for c in columns]
        if fps := list(fingerprints):
            paths = columns[0]
            for path, size, mtime_ns in fps:  # the columns are in path order now
                i = bisect_left(paths, path)
                if i < len(paths) and paths[i] == path:
                    columns[2][i], columns[3][i] = size, mtime_ns
        return IndexedNotes.from_columns(*columns)

    def __getitem__(self, path: str) -> IndexedNote:
        i = self._index(path)
        if i is None:
            raise KeyError(path)
        return IndexedNote(
            path, self._ids[i], self._sizes[i], self._mtimes[i], self._hashes[i], self._claims[i]
        )

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._index(path) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def keys(self) -> KeysView[str]:
        return self._rows.keys()  # a dict's view: set operations on it run in C

    def fingerprints(self) -> frozenset[tuple[str, int, int]]:
        """Every note's (path, size, mtime_ns), as the scan's `Fingerprint` tuples compare."""
        if self._fps is None:
            self._fps = frozenset(zip(self._paths, self._sizes, self._mtimes, strict=True))
        return self._fps

    def ids(self, added: Mapping[str, str] | None = None) -> Mapping[str, str]:
        """{path: id} of every note, and of the notes `added` ({path: id}, none indexed), as
        a view: a run looks up a few (a dict of all of them was ~19 ms of a one-note edit at
        100,000 notes)."""
        return _Ids(self, added or {})

    def only(self, paths: Iterable[str]) -> IndexedNotes:
        """The notes at these paths (a path not indexed is skipped)."""
        return IndexedNotes([self[p] for p in sorted(paths) if p in self])


class _Ids(Mapping[str, str]):
    """`IndexedNotes.ids`: each note's id by path, looked up in the columns."""

    __slots__ = ("_added", "_notes")

    def __init__(self, notes: IndexedNotes, added: Mapping[str, str]) -> None:
        self._notes = notes
        self._added = added

    def __getitem__(self, path: str) -> str:
        if path in self._added:
            return self._added[path]
        return self._notes[path].id

    def __contains__(self, path: object) -> bool:
        return path in self._added or path in self._notes

    def __iter__(self) -> Iterator[str]:
        yield from self._added
        yield from self._notes

    def __len__(self) -> int:
        return len(self._added) + len(self._notes)


class ChangeSet(NamedTuple, Generic[F]):
    """The difference between the index and the vault, before any file is read.

    A named tuple, as the other values of one run here: a dataclass compiles its methods
    from source when its module is imported, ~0.5 ms of every run's start-up each."""

    new: tuple[F, ...]
    suspect: tuple[F, ...]
    gone: tuple[IndexedNote, ...]
    unchanged: tuple[str, ...]


def plan_changes(indexed: IndexedNotes, scanned: Sequence[F]) -> ChangeSet[F]:
    """Compare (size, mtime_ns) fingerprints; only `new` and `suspect` files get read.

    Nearly every note is unchanged, and a Python loop over all of them cost ~8 ms of a
    one-note edit at 10,000 notes: the passes over every note run in C (`filterfalse` over
    set lookups of whole fingerprint tuples); Python looks only at the few that moved.
    """
    in_place = _moved_in_place(indexed, scanned)
    if in_place is not None:  # the same paths in the same order: an edit, a touch, nothing
        kept, at, suspects = in_place
        for i in reversed(at):
            del kept[i]
        return ChangeSet((), suspects, (), tuple(kept))
    known = indexed.fingerprints()
    moved = list(filterfalse(known.__contains__, scanned))
    new = tuple(fp for fp in moved if fp[0] not in indexed)
    suspect = tuple(fp for fp in moved if fp[0] in indexed)
    moved_paths = {fp[0] for fp in moved}
    unchanged = tuple(filterfalse(moved_paths.__contains__, map(itemgetter(0), scanned)))
    gone: list[IndexedNote] = []
    if len(scanned) - len(new) != len(indexed):  # else every indexed path was scanned
        missing = indexed.keys() - set(map(itemgetter(0), scanned))
        gone = [indexed[p] for p in sorted(missing)]
    return ChangeSet(new, suspect, tuple(gone), unchanged)


def _ascending(values: Sequence[str]) -> bool:
    return all(map(le, values, values[1:]))


def _moved_in_place(
    indexed: IndexedNotes, scanned: Sequence[F]
) -> tuple[list[str], list[int], tuple[F, ...]] | None:
    """When the index holds exactly the scanned paths in the same (path) order: those paths,
    the positions whose size or mtime moved and their fingerprints; else None. Column
    comparisons in C, where hashing every fingerprint into a set took ~0.2 s of CPU at
    100,000 notes; a walk's notes give their columns without a tuple per note
    (`files.walked`)."""
    paths, _, sizes, mtimes, _, _ = indexed.columns()
    if len(paths) != len(scanned):
        return None
    walked_sizes: Sequence[int]
    walked_mtimes: Sequence[int]
    pick: Callable[[int], F]  # the fingerprint of the note at a position
    if isinstance(scanned, WalkedNotes):
        columns = scanned.columns()
        walked = list(columns.paths)  # the caller deletes from it
        walked_sizes, walked_mtimes = columns.sizes, columns.mtimes

        def pick(i: int) -> F:  # one tuple for a note that moved, none for the rest
            return cast(F, Fingerprint(columns.paths[i], walked_sizes[i], walked_mtimes[i]))
    else:
        walked = list(map(itemgetter(0), scanned))
        walked_sizes = list(map(itemgetter(1), scanned))
        walked_mtimes = list(map(itemgetter(2), scanned))
        pick = scanned.__getitem__
    # A state record's column compares itself with the walk's list without splitting first.
    if not (walked == list(paths) if isinstance(paths, tuple) else paths == walked):
        return None
    positions = range(len(paths))
    moved = set(compress(positions, map(ne, walked_sizes, sizes)))
    moved.update(compress(positions, map(ne, walked_mtimes, mtimes)))
    at = sorted(moved)
    return walked, at, tuple(map(pick, at))


def pair_renames(
    gone: Sequence[IndexedNote], new_hashes: Mapping[str, str]
) -> dict[str, IndexedNote]:
    """Match new paths to vanished notes with the same bytes: {new path: the note it was}.

    Only a hash that occurs exactly once on each side counts as a move; identical files (empty
    notes, copied templates) are ambiguous, and guessing would hand one note's identity to
    another, so they are treated as a delete plus an add.
    """
    gone_by_hash: dict[str, list[IndexedNote]] = defaultdict(list)
    for note in gone:
        gone_by_hash[note.content_hash].append(note)
    new_by_hash: dict[str, list[str]] = defaultdict(list)
    for path, digest in new_hashes.items():
        new_by_hash[digest].append(path)
    return {
        paths[0]: gone_by_hash[digest][0]
        for digest, paths in new_by_hash.items()
        if len(paths) == 1 and len(gone_by_hash.get(digest, ())) == 1
    }


def assign_ids(claims: Mapping[str, str | None], journal: Mapping[str, str]) -> dict[str, str]:
    """Give every live note path its id, the same way whatever order notes were seen in.

    A note's candidate id is, by priority: the `id` a managed topic claims in its frontmatter,
    then the id the rename journal carried to this path, then the digest of the path. When two
    notes want the same id, the higher priority wins, then the smaller path; the loser falls back
    to a salted digest of its own path. This is a function of the vault and the journal only,
    which is what makes an incremental reconcile equal a rebuild.
    """
    return assign_ids_salted(claims, journal)[0]


def assign_ids_salted(
    claims: Mapping[str, str | None], journal: Mapping[str, str]
) -> tuple[dict[str, str], bool]:
    """`assign_ids`, and whether any note lost a clash and took a salted id (`ids_basis`)."""
    candidates = [_candidate(path, claimed, journal) for path, claimed in claims.items()]
    if len({wanted for _, _, wanted in candidates}) == len(candidates):
        # No two notes ask for one id, so each takes its own: the ranking would give the
        # same (~0.1 s of sorting and looping at 100,000 notes).
        return {path: wanted for _, path, wanted in candidates}, False
    return _ranked_ids(candidates), True


def _ranked_ids(candidates: list[tuple[int, str, str]]) -> dict[str, str]:
    """`assign_ids` by its rule, from every note's `_candidate`: in rank order each takes the
    id it asks for, or a salted digest of its path when that one is taken."""
    taken: set[str] = set()
    ids: dict[str, str] = {}
    for _, path, candidate in sorted(candidates):
        salt = 0
        while candidate in taken:
            salt += 1
            candidate = default_note_id(path, salt)
        taken.add(candidate)
        ids[path] = candidate
    return ids


def _candidate(path: str, claimed: str | None, journal: Mapping[str, str]) -> tuple[int, str, str]:
    """(priority, path, the id it asks for) of one note, as `assign_ids` ranks them."""
    if claimed:
        return (0, path, claimed)
    if path in journal:
        return (1, path, journal[path])
    return (2, path, default_note_id(path))


def ids_of_added(
    claims: Mapping[str, str | None], journal: Mapping[str, str], taken: Collection[str]
) -> dict[str, str] | None:
    """The ids of notes added to a vault whose ids (`taken`) `assign_ids` gave with this
    `journal`, when each new note's candidate is free and no two share one; else None.

    Then `assign_ids` over all the notes gives the old ones their old ids and each new one its
    candidate, whatever the order: every id an old note tried on its way to its own (its
    candidate, then salted ones) is in `taken`, so a new note's free candidate was in no old
    note's way, nor in another new note's. So adding a note costs its own ids, not a pass over
    100,000 (1.5 s of a `store` at that size, measured before this)."""
    ids: dict[str, str] = {}
    asked: set[str] = set()
    for path, claimed in claims.items():
        candidate = _candidate(path, claimed, journal)[2]
        if candidate in asked or candidate in taken:
            return None
        asked.add(candidate)
        ids[path] = candidate
    return ids


def survey_digest(
    notes: WalkedNotes, listing: bytes, problems: Iterable[tuple[str, str, str]]
) -> str:
    """A digest of a whole-vault stat walk: its notes (`files.walked`: folder by folder, from
    their columns, with no tuple per note), its files (`listing`: sorted and joined, as
    `index_state.join_listing` gives them) and the scan's problems in the order given (the
    walk sorts them). Equal digests mean the walk saw the same vault, which is all a no-op
    reconcile needs to know (`storage.last_survey`)."""
    digest = blake2b(digest_size=16)
    notes.digest_into(digest)
    digest.update(b"\0")
    digest.update(listing)
    digest.update(b"\0")
    digest.update("\n".join("\t".join(p) for p in problems).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def journal_digest(journal: Mapping[str, str]) -> str:
    """A digest of the rename journal as `assign_ids` reads it ({path: id}). The index records
    the one its ids were assigned with: while it and every claim stay the same and no note
    comes or goes, every id stays the same, and reconcile need not assign them again."""
    text = "\n".join(f"{path}\t{note_id}" for path, note_id in sorted(journal.items()))
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


_UNSALTED = ":unsalted"
_SALTED = ":salted"


def ids_basis(journal: str, salted: bool) -> str:
    """What the stored ids were assigned from, as the index records it: the rename journal's
    digest (`journal_digest`) and whether any note took a salted id. An index written before
    this recorded the digest alone: whether any id is salted is then unknown and counts as
    salted, so the first run where notes went assigns every id again and records the truth."""
    return journal + (_SALTED if salted else _UNSALTED)


def basis_journal(basis: str | None) -> str | None:
    """The rename journal's digest in a recorded `ids_basis` (or the digest alone)."""
    if basis is None:
        return None
    for suffix in (_UNSALTED, _SALTED):
        if basis.endswith(suffix):
            return basis[: -len(suffix)]
    return basis


def basis_unsalted(basis: str | None) -> bool:
    """Whether a recorded `ids_basis` says no note took a salted id."""
    return basis is not None and basis.endswith(_UNSALTED)

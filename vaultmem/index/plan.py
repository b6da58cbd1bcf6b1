"""Change planning for reconcile: pure functions from (index state, scan) to what must happen.

Nothing here touches a file or the database, so the interesting decisions (what changed,
what moved, which id each note gets) are tested directly and cannot drift between an
incremental reconcile and a rebuild: both call the same functions on the same state.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from vaultmem.digest import blake2b


class Stat(Protocol):
    """What planning needs of a scanned file (`scan.Fingerprint` has it); no import of `scan`,
    which is an edge module, keeps this one pure."""

    @property
    def path(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def mtime_ns(self) -> int: ...


F = TypeVar("F", bound=Stat)


class IndexedNote(NamedTuple):
    """What the index remembers of a note: enough to decide whether to look at it again.

    A named tuple, not a dataclass: reconcile makes one per indexed note from a fetched row
    (100,000 in a large vault), and a tuple is built at half the cost."""

    path: str
    id: str
    size: int
    mtime_ns: int
    content_hash: str
    claimed_id: str | None


@dataclass(frozen=True, slots=True)
class ChangeSet(Generic[F]):
    """The difference between the index and the vault, before any file is read."""

    new: tuple[F, ...]
    suspect: tuple[F, ...]
    gone: tuple[IndexedNote, ...]
    unchanged: tuple[str, ...]


def plan_changes(indexed: Mapping[str, IndexedNote], scanned: Iterable[F]) -> ChangeSet[F]:
    """Compare (size, mtime_ns) fingerprints; only `new` and `suspect` files get read."""
    new: list[F] = []
    suspect: list[F] = []
    unchanged: list[str] = []
    seen: set[str] = set()
    for fp in scanned:
        seen.add(fp.path)
        known = indexed.get(fp.path)
        if known is None:
            new.append(fp)
        elif known.size != fp.size or known.mtime_ns != fp.mtime_ns:
            suspect.append(fp)
        else:
            unchanged.append(fp.path)
    gone = [note for path, note in indexed.items() if path not in seen]
    return ChangeSet(tuple(new), tuple(suspect), tuple(sorted(gone, key=_path)), tuple(unchanged))


def _path(note: IndexedNote) -> str:
    return note.path


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


def default_note_id(path: str, salt: int = 0) -> str:
    """A human note's id: a digest of the path it was first seen at."""
    key = path if not salt else f"{path}\x00{salt}"
    return "n-" + blake2b(key.encode("utf-8"), digest_size=8).hexdigest()


def assign_ids(claims: Mapping[str, str | None], journal: Mapping[str, str]) -> dict[str, str]:
    """Give every live note path its id, the same way whatever order notes were seen in.

    A note's candidate id is, by priority: the `id` a managed topic claims in its frontmatter,
    then the id the rename journal carried to this path, then the digest of the path. When two
    notes want the same id, the higher priority wins, then the smaller path; the loser falls back
    to a salted digest of its own path. This is a function of the vault and the journal only,
    which is what makes an incremental reconcile equal a rebuild.
    """
    ranked = []
    for path, claimed in claims.items():
        if claimed:
            ranked.append((0, path, claimed))
        elif path in journal:
            ranked.append((1, path, journal[path]))
        else:
            ranked.append((2, path, default_note_id(path)))
    ranked.sort()
    taken: set[str] = set()
    ids: dict[str, str] = {}
    for _, path, candidate in ranked:
        salt = 0
        while candidate in taken:
            salt += 1
            candidate = default_note_id(path, salt)
        taken.add(candidate)
        ids[path] = candidate
    return ids


def survey_digest(
    notes: Iterable[Stat], files: Iterable[str], problems: Iterable[tuple[str, str, str]]
) -> str:
    """A digest of a whole-vault stat walk: every note's fingerprint, every file, the scan's
    problems, each in the order given (the walk sorts them). Equal digests mean the walk saw
    the same vault, which is all a no-op reconcile needs to know (`storage.last_survey`)."""
    notes = list(notes)
    digest = blake2b(digest_size=16)
    # Three columns, not a formatted line per note: ~4x cheaper at 100,000 notes.
    digest.update("\n".join([n.path for n in notes]).encode("utf-8", "surrogateescape"))
    digest.update(b"\0")
    digest.update(array("q", [n.size for n in notes]).tobytes())
    digest.update(array("q", [n.mtime_ns for n in notes]).tobytes())
    digest.update("\n".join(files).encode("utf-8", "surrogateescape"))
    digest.update(b"\0")
    digest.update("\n".join("\t".join(p) for p in problems).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def journal_digest(journal: Mapping[str, str]) -> str:
    """A digest of the rename journal as `assign_ids` reads it ({path: id}). The index records
    the one its ids were assigned with: while it and every claim stay the same and no note
    comes or goes, every id stays the same, and reconcile need not assign them again."""
    text = "\n".join(f"{path}\t{note_id}" for path, note_id in sorted(journal.items()))
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()

"""The rename journal: how a human note keeps its id across renames, even through a rebuild.

A human note's id is derived from the path it was first seen at. When reconcile sees a note
move (same bytes at a new path, old path gone) it appends one JSON line to
`<state>/renames.jsonl`; a rebuild replays the file, so ids survive deleting the index.
The journal lives in `.vaultmem/`, never in the vault: deleting it loses only rename history.
Appends are single `write` calls of one line, fsynced, so a crash leaves at most a torn last
line, which replay skips; so does any line that is not valid UTF-8 JSON (counted, so that
reconcile can warn).

A folder moved back and forth adds a line per note each time: a journal grown past
`COMPACT_LINES` and twice its replayed entries is rewritten as one line per entry, atomically
(`compact_renames`), which replays to the very same ids.

A write needs the journal's digest (`plan.journal_digest`) to know whether the stored ids
stand, and its entries only when they do not. So what a replay found is kept beside it
(`renames.digest.json`, `JournalFacts`) with the file's signature, and a write whose journal
is the file those facts describe reads nothing (`RenameJournal`): a one-note edit costs the
same with 10 renames on record as with 100,000.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from vaultmem.core.atomic import replace_file
from vaultmem.index.plan import journal_digest

JOURNAL_NAME = "renames.jsonl"
FACTS_NAME = "renames.digest.json"

COMPACT_LINES = 1_000
"""A journal of more lines than this, and more than twice its replayed entries, is compacted:
20,662 lines of folder moves replayed to 2,954 entries in 0.10-0.15 s, paid by every write."""


class Journal(NamedTuple):  # not a dataclass: nothing compiled at import (index/parallel.py)
    """The replayed journal: {current path: id}, how many lines could not be read, and how
    many lines it has."""

    ids: dict[str, str]
    skipped: int = 0
    lines: int = 0


def read_renames(state_dir: Path) -> Journal:
    """Replay the journal into {current path: id} for every path that inherited an id.

    Each line is decoded on its own: a torn line (a crash mid-append) or a damaged byte costs
    that one rename, never the journal, so reconcile, rebuild and store keep working.
    """
    path_to_id: dict[str, str] = {}
    skipped = lines = 0
    try:
        data = (state_dir / JOURNAL_NAME).read_bytes()
    except FileNotFoundError:
        return Journal(path_to_id)
    whole = _read_whole(data)
    if whole is not None:
        replay(path_to_id, whole)
        return Journal(path_to_id, 0, len(whole))
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        lines += 1
        try:
            entry = json.loads(line.decode("utf-8"))
            note_id, old, new = str(entry["id"]), str(entry["from"]), str(entry["to"])
        except (ValueError, KeyError, TypeError):
            skipped += 1  # the rename is lost; the note falls back to its path's id
            continue
        replay(path_to_id, ((note_id, old, new),))
    return Journal(path_to_id, skipped, lines)


def _read_whole(data: bytes) -> list[tuple[str, str, str]] | None:
    """Every line of an undamaged journal, decoded as one JSON array (one call into the
    decoder instead of one a line: half the replay of 22,857 lines); None when any line
    is torn or not a rename, and the caller decodes line by line."""
    lines = [line for line in data.split(b"\n") if line.strip()]
    try:
        entries = json.loads(b"[" + b",".join(lines) + b"]")
        if len(entries) != len(lines):  # a line of two values: read line by line, as ever
            return None
        return [(str(e["id"]), str(e["from"]), str(e["to"])) for e in entries]
    except (ValueError, KeyError, TypeError):
        return None


Signature = tuple[int, int, int, int]
"""A journal file's size, mtime and ctime in ns, and inode: any append or rewrite moves one."""


def _signature(path: Path) -> Signature | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class JournalFacts(NamedTuple):
    """What a replay of the journal found, kept beside it (`FACTS_NAME`) for the file
    `signature` names (None: no journal): its digest, unreadable lines, lines and entries."""

    signature: Signature | None
    digest: str
    skipped: int
    lines: int
    entries: int


def _facts_of(signature: Signature | None, journal: Journal) -> JournalFacts:
    return JournalFacts(
        signature, journal_digest(journal.ids), journal.skipped, journal.lines, len(journal.ids)
    )


def _read_facts(state_dir: Path) -> JournalFacts | None:
    """The kept facts when they describe the journal as it is now, else None."""
    try:
        raw = json.loads((state_dir / FACTS_NAME).read_bytes())
        sig = raw["signature"]
        facts = JournalFacts(
            None if sig is None else (int(sig[0]), int(sig[1]), int(sig[2]), int(sig[3])),
            str(raw["digest"]),
            int(raw["skipped"]),
            int(raw["lines"]),
            int(raw["entries"]),
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # none kept, or damaged: the journal is read
    return facts if facts.signature == _signature(state_dir / JOURNAL_NAME) else None


def _keep_facts(state_dir: Path, facts: JournalFacts) -> None:
    """Keep `facts` beside the journal, atomically; a folder that cannot be written keeps
    none (the next write reads the journal again: it costs time, never ids)."""
    data = json.dumps(facts._asdict()).encode("utf-8")
    with suppress(OSError):
        replace_file(state_dir / FACTS_NAME, data)


class RenameJournal(Mapping[str, str]):
    """The journal as a write uses it, under the writer lock: {current path: id}, read at the
    first lookup; its `digest`, `skipped` and `lines` from the kept facts while the file is the
    one they describe (`facts`), so a write whose ids stand never reads it
    (`steps.identities`)."""

    def __init__(self, state_dir: Path) -> None:
        self._dir = state_dir
        self._facts = _read_facts(state_dir)
        self._journal: Journal | None = None

    def replayed(self) -> Journal:
        """The journal read and replayed (once); its facts, when none stood, taken from this
        reading and kept for the next write (unless the file moved while it was read)."""
        if self._journal is None:
            signature = _signature(self._dir / JOURNAL_NAME)
            self._journal = read_renames(self._dir)
            if self._facts is None:
                stable = _signature(self._dir / JOURNAL_NAME) == signature
                self._facts = _facts_of(signature if stable else None, self._journal)
                if stable and signature is not None:  # no journal: nothing to keep
                    _keep_facts(self._dir, self._facts)
        return self._journal

    @property
    def facts(self) -> JournalFacts:
        """The digest and counts: kept ones when they stand, else from reading the file."""
        if self._facts is None:
            self.replayed()
        assert self._facts is not None  # `replayed` sets them
        return self._facts

    def __getitem__(self, path: str) -> str:
        return self.replayed().ids[path]

    def __contains__(self, path: object) -> bool:  # one dict lookup, not Mapping's try/except
        return path in self.replayed().ids

    def __iter__(self) -> Iterator[str]:
        return iter(self.replayed().ids)

    def __len__(self) -> int:
        return self.facts.entries


def compact_renames(state_dir: Path, journal: RenameJournal) -> bool:
    """Rewrite a journal grown past `COMPACT_LINES` and twice its entries as one line per
    entry (a path that inherited an id, "moved" from itself), atomically; a journal with an
    unreadable line is left as it is (what was lost stays on record). Under the writer lock:
    an append in between would be lost. Whether it was rewritten (a folder that cannot be
    written keeps the long journal: it costs time, not ids)."""
    facts = journal.facts
    if facts.skipped or facts.lines <= max(COMPACT_LINES, 2 * facts.entries):
        return False
    entries = sorted((note_id, path, path) for path, note_id in journal.replayed().ids.items())
    try:
        replace_file(state_dir / JOURNAL_NAME, _lines(entries))
    except OSError:
        return False
    return True


def replay(path_to_id: dict[str, str], renames: Iterable[tuple[str, str, str]]) -> None:
    """Apply (id, old path, new path) records to {path: id} as reading the journal does: the
    new path inherits the id, the old path's entry for it goes. A run applies its own renames
    so, and its ids then come from the journal the next run reads."""
    for note_id, old, new in renames:
        if path_to_id.get(old) == note_id:
            del path_to_id[old]
        path_to_id[new] = note_id


def append_renames(state_dir: Path, renames: Iterable[tuple[str, str, str]]) -> None:
    """Append (id, old path, new path) records durably."""
    lines = _lines(renames)
    if not lines:
        return
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(state_dir / JOURNAL_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        if end and os.pread(fd, 1, end - 1) != b"\n":
            lines = b"\n" + lines  # end a torn last line, or it would swallow this record
        os.write(fd, lines)
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(renames: Iterable[tuple[str, str, str]]) -> bytes:
    """(id, old path, new path) records as the journal's lines."""
    return "".join(
        json.dumps({"id": i, "from": old, "to": new}, ensure_ascii=False) + "\n"
        for i, old, new in renames
    ).encode("utf-8")

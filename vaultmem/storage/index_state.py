"""The index's state as reconcile reads it, kept beside the index: a change starts without a read.

Before it plans, reconcile needs every note's (path, id, size, mtime_ns, content_hash,
claimed_id), every file and the stored scan problems (`index_writes.IndexState`). Read from
DuckDB that is ~0.4 s at 100,000 notes in a cold process (most of it turning 700,000 values
into Python objects), paid by every edit. So a writer that knows what it wrote records that
state in `<state>/index-state.bin`, beside the identity of the index file and its WAL at that
moment (`last_survey.index_token`) and the versions the index was built with; the next run
takes it instead of the rows when the index is still that very file.

Like the last survey it can only make a run cheaper, never change its outcome: any doubt (no
record, an unreadable or truncated one, another index file, other versions) means the read of
the rows. A writer holds it with the last survey before the index changes
(`forget_before_write`) and records it after the index is closed.

The format is columns, not rows, so reading and writing stay in C: one line of JSON (counts,
sizes, the few claimed ids and scan problems), then the text columns joined by NUL (which no
path holds) with where each string ends, and the integer columns as 64-bit arrays. Nothing is
split when read: the paths, ids and hashes are `TextColumn`s, which cut a string when asked
(a run named by path looks at a handful of 100,000), and the files, written sorted, stay one
text (`ListedFiles`): a run whose walk lists the same files compares two byte strings and takes
the walk's set; a run named by path asks whether a file is there by a bisection of it.

Rewriting that whole record after a one-note edit cost ~0.05 s at 100,000 notes (16 MB), so a
small write records only what it changed: `<state>/index-state.change.json` holds, for the base
record whose token it names, every note row and file that differs from it (a path mapped to
its row, or to null when gone) and the index token the two stand for together. A writer folds
its own changes into it while it stays small (`CHANGE_LIMIT`) and writes a whole base record
otherwise. Before the index changes the writer marks the change file pending (token null): a
crash from there on leaves a base and a change that stand for no index, so the next run reads
the rows, as it did when the record was removed.
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import suppress
from itertools import compress
from operator import lt
from pathlib import Path
from typing import Any, NamedTuple, cast

from vaultmem.storage.last_survey import IndexToken, forget_last_survey, publish
from vaultmem.storage.text_column import SEPARATOR, TextColumn, ends_of

RECORD_NAME = "index-state.bin"

_MAGIC = b"vaultmem-index-state 2\n"
CHANGE_NAME = "index-state.change.json"
_CHANGE_FORMAT = 1
CHANGE_LIMIT = 64
"""Most notes and files a change file holds before the next write records a whole base. Up to
it a reader bisects the changed notes into a base in path order (`_patched`); a longer one
(an older writer's) takes a pass over every row (`_applied`). At 100,000 notes a cold read
took 0.075 s at 64 changed notes and 0.104 s at 65 or 600; a whole base costs its writer
0.049 s, once per 64 notes changed."""
_TEXT = ("paths", "ids", "hashes")
"""The note columns kept as `TextColumn`s, each with its ends (`<name>_ends`)."""
_COLUMNS = (*(f"{n}{e}" for n in _TEXT for e in ("", "_ends")), "files", "sizes", "mtimes")
"""The columns of a base record, in the order they follow its header."""


class StateRecord(NamedTuple):
    """The notes as columns (`claims` None for a note claiming no id), every file, the
    stored scan problems (path, code, message), the number of problems and the rename
    journal's digest, for the index `token` names, built with `versions`."""

    token: IndexToken
    versions: dict[str, str]
    paths: Sequence[str]
    ids: Sequence[str]
    sizes: Sequence[int]
    mtimes: Sequence[int]
    hashes: Sequence[str]
    claims: Sequence[str | None]
    files: Collection[str]
    scan_problems: Sequence[tuple[str, str, str]]
    problem_count: int
    journal: str | None


SEARCHES = 1024
"""Paths a `ListedFiles` looks up by bisection of its bytes (~10 us each at 100,000 files) before
it makes the set of them all (~30 ms): a run named by path asks about a few."""


def _holds(joined: bytes, name: bytes) -> bool:
    """Whether `name` is one of the NUL-separated entries of `joined`, sorted as their bytes
    (UTF-8 keeps the order of code points, so sorted `str`s joined and encoded are): bisection
    over byte offsets, each step cutting out the entry around its middle."""
    lo, hi = 0, len(joined)  # whole entries, `lo` at the first one's start
    while lo < hi:
        mid = (lo + hi) // 2
        start = joined.rfind(b"\0", lo, mid) + 1 or lo
        end = joined.find(b"\0", mid, hi)
        end = hi if end < 0 else end
        entry = joined[start:end]
        if entry == name:
            return True
        if name < entry:
            hi = max(lo, start - 1)
        else:
            lo = end + 1
    return False


class _Listing:
    """A base record's files, sorted and joined by NUL, and what was learnt of them: shared by
    every `ListedFiles` made from one base (a warm watcher's batches), since the base never
    changes."""

    __slots__ = ("count", "joined", "known", "lines", "set", "split")

    def __init__(self, joined: bytes, count: int) -> None:
        self.joined = joined
        self.count = count
        self.known: dict[str, bool] = {}  # path -> whether the base holds it
        self.lines: str | None = None
        self.split: list[str] | None = None
        self.set: frozenset[str] | None = None

    def holds(self, path: str) -> bool:
        """Whether the base lists `path`: a bisection of the joined bytes, for the first
        `SEARCHES` paths; past them (a caller asking about many) a set of them all."""
        known = self.known.get(path)
        if known is not None:
            return known
        if self.set is None and len(self.known) >= SEARCHES:
            self.set = frozenset(self.values())
        if self.set is not None:
            return path in self.set
        name = path.encode("utf-8", "surrogateescape")
        known = self.known[path] = bool(name) and _holds(self.joined, name)
        return known

    def values(self) -> list[str]:
        if self.split is None:
            self.split = _split(self.joined, self.count)
        return self.split


class ListedFiles(AbstractSet[str]):
    """A base record's files as it stores them (sorted, joined by NUL), and the files its
    change file (or a run since) says came (True) or went (False); split only when walked.

    A one-note edit's run compares them with its walk's listing (`same_as`): one comparison
    of two byte strings, where splitting 100,000 paths, making a set of them and comparing
    it with the walk's set cost ~0.05 s at 100,000 notes. Equal, the run takes the walk's
    set for the index's (`index.reconcile.recorded_state`). A run named by path asks about a
    few files: `in` bisects the joined bytes (~10 us at 100,000 files) instead of splitting
    them, and the link resolver takes them joined (`lines`)."""

    __slots__ = ("_base", "_changed", "_frozen", "_len", "_split")

    def __init__(
        self, joined: bytes | _Listing, count: int = 0, changed: Mapping[str, bool] | None = None
    ) -> None:
        """`joined`: the base's bytes (`count` files), or a `_Listing` already made of them."""
        self._base = joined if isinstance(joined, _Listing) else _Listing(joined, count)
        self._changed = dict(changed or {})
        self._split: list[str] | None = None
        self._frozen: frozenset[str] | None = None
        self._len: int | None = None

    def changed(self, files: Mapping[str, bool]) -> ListedFiles:
        """These files with `files` come (True) or gone (False) as well: the same base, and
        what was learnt of it."""
        return ListedFiles(self._base, changed={**self._changed, **files})

    def frozen(self) -> frozenset[str]:
        """The files as a set, made once: every run that takes this record back gets this same
        set, and with it the same link resolver (`index.preparation.link_resolver`)."""
        if self._frozen is None:
            self._frozen = frozenset(self._values())
        return self._frozen

    def same_as(self, listing: bytes) -> bool:
        """Whether these are the files `join_listing` made `listing` of (False, without a
        look, when any came or went since the base)."""
        return not self._changed and self._base.joined == listing

    @property
    def joined(self) -> bytes | None:
        """The files as a base record stores them, while none came or went; else None."""
        return None if self._changed else self._base.joined

    def lines(self) -> str | None:
        """The files one per line, between two line breaks (what `LazyLinkResolver` searches),
        made without splitting them: the base's lines (made once per base), less the lines of
        files that went (one scan of the text each), plus those that came; None when a file
        name holds a line break."""
        base = self._base
        if base.lines is None:
            text = base.joined.decode("utf-8", "surrogateescape")
            base.lines = "" if "\n" in text else "\n" + text.replace(SEPARATOR, "\n") + "\n"
        changed = self._changed.items()
        came = [f for f, present in changed if present and not base.holds(f)]
        if not base.lines or any("\n" in f for f in came):
            return None
        lines = base.lines if base.count else "\n"
        for gone in (f for f, present in changed if not present and base.holds(f)):
            lines = lines.replace(f"\n{gone}\n", "\n", 1)  # each file's line is there once
        return lines + "\n".join(came) + "\n" if came else lines

    def _values(self) -> list[str]:
        if self._split is None:
            values = self._base.values()
            if self._changed:
                values = [f for f in values if f not in self._changed]
                values += [f for f, present in self._changed.items() if present]
            self._split = values
        return self._split

    @classmethod
    def _from_iterable(cls, values: Iterable[Any]) -> frozenset[Any]:
        return frozenset(values)  # what `-`, `|` and `&` make

    def __len__(self) -> int:
        if self._len is None:
            base = self._base
            self._len = base.count + sum(
                present - base.holds(f) for f, present in self._changed.items()
            )
        return self._len

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        if self._frozen is not None:
            return path in self._frozen
        if path in self._changed:
            return self._changed[path]
        return self._base.holds(path)

    def __eq__(self, other: object) -> bool:
        """The same files, as a set: a record's files have no order that means anything."""
        if isinstance(other, ListedFiles) and not self._changed and not other._changed:
            return self._base.joined == other._base.joined
        if isinstance(other, Collection) and not isinstance(other, str | bytes):
            return len(other) == len(self) and set(self._values()) == set(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def join_listing(files: Iterable[str]) -> bytes:
    """Files as a base record stores them (sorted, NUL-joined): a walk's listing, already
    sorted, made comparable with `ListedFiles.same_as`."""
    return _join(files)


def _join_files(files: Collection[str]) -> bytes:
    if isinstance(files, ListedFiles) and (joined := files.joined) is not None:
        return joined  # read back from a base: sorted already
    return _join(sorted(files))


def _join(values: Iterable[str]) -> bytes:
    return "\0".join(values).encode("utf-8", "surrogateescape")


def _split(data: bytes, count: int) -> list[str]:
    if not count:
        return []
    values = data.decode("utf-8", "surrogateescape").split("\0")
    if len(values) != count:
        raise ValueError("a column of the wrong length")
    return values


def _joined_column(values: Sequence[str]) -> tuple[str, array[int]]:
    """A note column as a record stores it: its strings joined by `SEPARATOR`, and their ends."""
    if isinstance(values, TextColumn) and (joined := values.joined) is not None:
        return joined  # read back and not edited: stored as it came
    return SEPARATOR.join(values), ends_of(values)


def _ascending(paths: Sequence[str]) -> bool:
    if isinstance(paths, TextColumn) and paths.joined is not None and paths.ascending:
        return True
    return all(map(lt, paths, paths[1:]))


NoteRow = tuple[str, int, int, str, "str | None"]
"""A note's (id, size, mtime_ns, content_hash, claimed_id), by path."""


class StateChange(NamedTuple):
    """What one write changed of the state its index stood for (`was`): note rows by path
    (None: gone), files and scan problems by themselves (False: gone), and the new values of
    the rest."""

    was: IndexToken
    token: IndexToken
    versions: dict[str, str]
    notes: Mapping[str, NoteRow | None]
    files: Mapping[str, bool]
    scan_problems: Mapping[tuple[str, str, str], bool]
    problem_count: int
    journal: str | None


_KEPT: dict[Path, tuple[IndexToken, Callable[[], StateRecord]]] = {}
"""The record this process wrote last, per state folder: a warm writer (the watcher, the MCP
server) takes it back from memory instead of reading and decoding the file (~0.07 s at
100,000 notes, on the watcher's path from a save to a searchable index)."""


def kept_state_record(state_dir: Path, token: IndexToken) -> StateRecord | None:
    """The record this process wrote for the index `token` names, if it wrote the last one
    (made when first asked: a process that exits after its write never needs it)."""
    kept = _KEPT.get(state_dir)
    if kept is None or kept[0] != token:
        return None
    record = kept[1]()
    _KEPT[state_dir] = (token, lambda: record)
    return record


def keep_state_record(state_dir: Path, record: StateRecord) -> None:
    """Keep a record read from the file, so that this process's next run takes it back."""
    _KEPT[state_dir] = (record.token, lambda: record)


def record_state(
    state_dir: Path,
    token: IndexToken,
    whole: Callable[[], StateRecord],
    change: StateChange | None = None,
) -> None:
    """Publish the state after a write: as `change` folded into the change file when the base
    record and its change stand for the index the writer read (`change.was`) and the result
    stays small, else `whole()` as a new base. The process keeps the state too."""
    _KEPT[state_dir] = (token, whole)
    try:
        folded = None if change is None else _folded(state_dir, change)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        folded = None  # a change file this code cannot fold: a whole base replaces it
    if folded is not None:
        publish(state_dir, CHANGE_NAME, json.dumps(folded).encode())
        return
    write_state_record(state_dir, whole())


def forget_before_write(state_dir: Path) -> None:
    """What a writer does before the index changes (under the writer lock): the last survey
    goes, the recorded state is held (`hold_state_record`)."""
    forget_last_survey(state_dir)
    hold_state_record(state_dir)


def hold_state_record(state_dir: Path) -> None:
    """Before the index changes: mark the base record's change file pending, so that until
    the writer records the new state no run takes the old one for the new index."""
    base = _base_header(state_dir)
    if base is None:
        return
    change = _read_change(state_dir)
    if change is None or change["base"] != base["token"]:
        change = {"format": _CHANGE_FORMAT, "base": base["token"], "token": base["token"]}
        change |= {"notes": {}, "files": {}, "scan_problems": []}
    if change["token"] is None:
        return  # held already
    change["was"], change["token"] = change["token"], None
    publish(state_dir, CHANGE_NAME, json.dumps(change).encode())


def _folded(state_dir: Path, change: StateChange) -> dict[str, Any] | None:
    """The change file with `change` folded in, or None when a whole base must be written
    (no base, another one, other versions, a prior state the writer did not read, too big)."""
    base = _base_header(state_dir)
    if base is None or base["versions"] != change.versions:
        return None
    prior = _read_change(state_dir)
    if prior is None or prior["base"] != base["token"]:  # the base alone stood for the index
        prior = {"token": base["token"], "notes": {}, "files": {}, "scan_problems": []}
    # Pending (the usual case: held before this write), the index it stood for is `was`.
    stood_for = prior["token"] if prior["token"] is not None else prior.get("was")
    if stood_for != _listed(change.was):
        return None
    notes = {
        **prior["notes"],
        **{p: None if r is None else list(r) for p, r in change.notes.items()},
    }
    files = {**prior["files"], **change.files}
    problems = {(p, c, m): present for p, c, m, present in prior.get("scan_problems", ())}
    problems.update(change.scan_problems)
    if len(notes) + len(files) > CHANGE_LIMIT:
        return None
    return {
        "format": _CHANGE_FORMAT,
        "base": base["token"],
        "token": _listed(change.token),
        "versions": change.versions,
        "notes": notes,
        "files": files,
        "scan_problems": [[*p, present] for p, present in problems.items()],
        "problem_count": change.problem_count,
        "journal": change.journal,
    }


def _listed(token: IndexToken) -> list[list[int] | None]:
    """A token as JSON gives it back."""
    return [list(t) if t is not None else None for t in token]


def _base_header(state_dir: Path) -> dict[str, Any] | None:
    """The base record's header line (its token, versions and counts), without its columns."""
    try:
        with open(state_dir / RECORD_NAME, "rb") as handle:
            if handle.readline() != _MAGIC:
                return None
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) and "token" in header else None


def _read_change(state_dir: Path) -> dict[str, Any] | None:
    try:
        change = json.loads((state_dir / CHANGE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(change, dict) or change.get("format") != _CHANGE_FORMAT:
        return None
    return change


def write_state_record(state_dir: Path, record: StateRecord) -> None:
    """Publish the record as a new base by rename (its change file goes after it); a folder
    that cannot be written just goes without. The process keeps it too."""
    _KEPT[state_dir] = (record.token, lambda: record)
    n = len(record.paths)
    columns: dict[str, bytes] = {}
    for name in _TEXT:
        text, ends = _joined_column(getattr(record, name))
        columns[name] = text.encode("utf-8", "surrogateescape")
        columns[f"{name}_ends"] = ends.tobytes()
    columns["files"] = _join_files(record.files)
    columns["sizes"] = array("q", record.sizes).tobytes()
    columns["mtimes"] = array("q", record.mtimes).tobytes()
    header = {
        "token": [list(t) if t is not None else None for t in record.token],
        "versions": record.versions,
        "notes": n,
        "file_count": len(record.files),
        "claims": {str(i): c for i, c in enumerate(record.claims) if c is not None},
        "scan_problems": [list(p) for p in record.scan_problems],
        "problem_count": record.problem_count,
        "journal": record.journal,
        "in_path_order": _ascending(record.paths),
        "lengths": {name: len(columns[name]) for name in _COLUMNS},
    }
    tmp = state_dir / f".{RECORD_NAME}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as out:
            out.write(_MAGIC)
            out.write(json.dumps(header).encode() + b"\n")
            out.writelines(columns[name] for name in _COLUMNS)
        os.replace(tmp, state_dir / RECORD_NAME)
        (state_dir / CHANGE_NAME).unlink(missing_ok=True)
    except OSError:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def read_state_record(state_dir: Path) -> StateRecord | None:
    """The state the last writer recorded: the base record with its change file applied, or
    None when there is none, it cannot be read whole, or its change is pending."""
    read = _read_base(state_dir)
    if read is None:
        return None
    base, in_path_order = read
    change = _read_change(state_dir)
    if change is None or change["base"] != _listed(base.token):
        return base  # no change file of this base: the base alone (its token decides)
    try:
        if in_path_order and len(change["notes"]) <= CHANGE_LIMIT:
            return _patched(base, change)
        return _applied(base, change)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def _applied(base: StateRecord, change: dict[str, Any]) -> StateRecord | None:
    """`base` with the change file's rows, files and values; None while it is pending."""
    if change["token"] is None:
        return None
    notes: dict[str, list[Any] | None] = change["notes"]
    files: dict[str, bool] = change["files"]
    kept = [p not in notes for p in base.paths]
    paths, ids, hashes = (list(compress(c, kept)) for c in (base.paths, base.ids, base.hashes))
    sizes, mtimes = (list(compress(c, kept)) for c in (base.sizes, base.mtimes))
    claims = list(compress(base.claims, kept))
    columns: tuple[list[Any], ...] = (paths, ids, sizes, mtimes, hashes, claims)
    rows = sorted((path, row) for path, row in notes.items() if row is not None)
    # Reconcile compares a walk with the notes in path order: the rows are sorted in (a few
    # rows of a base in path order take `_patched` instead).
    for path, (note_id, size, mtime_ns, content_hash, claim) in rows:
        claimed = None if claim is None else str(claim)
        values = (path, str(note_id), int(size), int(mtime_ns), str(content_hash), claimed)
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    if rows:
        order = sorted(range(len(paths)), key=paths.__getitem__)
        paths, ids, sizes, mtimes, hashes, claims = ([c[i] for i in order] for c in columns)
    listed = [f for f in base.files if f not in files]
    listed += [f for f, present in files.items() if present]
    return _changed(base, change, (paths, ids, sizes, mtimes, hashes, claims), listed)


def _patched(base: StateRecord, change: dict[str, Any]) -> StateRecord | None:
    """`_applied` for a few changed notes of a base in path order (a one-note edit): each row
    is bisected to and replaced, inserted or deleted, instead of a pass over every note's six
    columns and files (~6 ms warm at 100,000 notes, paid by every cold run; the decode of the
    base, ~0.08 s, stays). `base`'s columns, fresh lists from `_read_base`, change in place."""
    if change["token"] is None:
        return None
    notes: dict[str, list[Any] | None] = change["notes"]
    columns = tuple(
        cast(list[Any], c)
        for c in (base.paths, base.ids, base.sizes, base.mtimes, base.hashes, base.claims)
    )
    paths = columns[0]
    for path, row in sorted(notes.items()):
        at = bisect_left(paths, path)
        here = at < len(paths) and paths[at] == path
        if row is None:
            if here:
                for column in columns:
                    del column[at]
            continue
        note_id, size, mtime_ns, content_hash, claim = row
        claimed = None if claim is None else str(claim)
        values = (path, str(note_id), int(size), int(mtime_ns), str(content_hash), claimed)
        for column, value in zip(columns, values, strict=True):
            if not here:
                column.insert(at, value)
            elif column is not paths:  # the path itself stands: its column stays unedited
                column[at] = value
    files: dict[str, bool] = change["files"]
    listed = base.files
    if files and isinstance(listed, ListedFiles):  # no pass over every file either
        listed = listed.changed({str(f): bool(present) for f, present in files.items()})
    elif files:
        listed = [f for f in base.files if f not in files]
        listed += [f for f, present in files.items() if present]
    return _changed(base, change, columns, listed)


def _changed(
    base: StateRecord,
    change: dict[str, Any],
    columns: Sequence[list[Any]],
    files: Collection[str],
) -> StateRecord:
    """The record of `base`'s notes changed into `columns` and its files into `files`, with
    the change file's scan problems, token, versions, problem count and journal."""
    problems = {
        (str(p), str(c), str(m)): bool(present) for p, c, m, present in change["scan_problems"]
    }
    scan_problems = [p for p in base.scan_problems if p not in problems]
    scan_problems += [p for p, present in problems.items() if present]
    token = tuple(None if t is None else (int(t[0]), int(t[1]), int(t[2])) for t in change["token"])
    journal = change["journal"]
    paths, ids, sizes, mtimes, hashes, claims = columns
    return StateRecord(
        token,
        {str(k): str(v) for k, v in change["versions"].items()},
        paths,
        ids,
        sizes,
        mtimes,
        hashes,
        claims,
        files,
        scan_problems,
        int(change["problem_count"]),
        None if journal is None else str(journal),
    )


def _read_base(state_dir: Path) -> tuple[StateRecord, bool] | None:
    """The base record and whether its writer found its notes in path order, or None when
    there is none or it cannot be read as a whole one."""
    try:
        data = (state_dir / RECORD_NAME).read_bytes()
        if not data.startswith(_MAGIC):
            return None
        end = data.index(b"\n", len(_MAGIC))
        header = json.loads(data[len(_MAGIC) : end])
        n, file_count = int(header["notes"]), int(header["file_count"])
        lengths = header["lengths"]
        offset = end + 1
        view = memoryview(data)  # the columns are cut from it without a copy each
        raw: dict[str, memoryview] = {}
        for name in _COLUMNS:
            size = int(lengths[name])
            raw[name] = view[offset : offset + size]
            if len(raw[name]) != size:
                return None  # truncated
            offset += size
        if offset != len(data):
            return None
        sizes, mtimes = array("q"), array("q")
        sizes.frombytes(raw["sizes"])
        mtimes.frombytes(raw["mtimes"])
        if len(sizes) != n or len(mtimes) != n:
            return None
        ordered = header.get("in_path_order") is True
        text: dict[str, TextColumn] = {}
        for name in _TEXT:
            ends = array("q")
            ends.frombytes(raw[f"{name}_ends"])
            if len(ends) != n:
                return None
            decoded = str(raw[name], "utf-8", "surrogateescape")
            text[name] = TextColumn(decoded, ends, ascending=ordered and name == "paths")
        claims: list[str | None] = [None] * n
        for i, claim in header["claims"].items():
            claims[int(i)] = str(claim)
        token = tuple(
            None if t is None else (int(t[0]), int(t[1]), int(t[2])) for t in header["token"]
        )
        journal = header["journal"]
        record = StateRecord(
            token,
            {str(k): str(v) for k, v in header["versions"].items()},
            text["paths"],
            text["ids"],
            sizes,
            mtimes,
            text["hashes"],
            claims,
            ListedFiles(raw["files"].tobytes(), file_count),
            [(str(p), str(c), str(m)) for p, c, m in header["scan_problems"]],
            int(header["problem_count"]),
            None if journal is None else str(journal),
        )
        return record, ordered
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None

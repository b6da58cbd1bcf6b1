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
the rows. A writer removes it with the last survey before the index changes
(`last_survey.forget_last_survey`) and writes it after the index is closed.

The format is columns, not rows, so reading and writing stay in C: one line of JSON (counts,
sizes, the few claimed ids and scan problems), then the text columns joined by NUL (which no
path holds) and the integer columns as 64-bit arrays.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from vaultmem.storage.last_survey import STATE_RECORD_NAME as RECORD_NAME
from vaultmem.storage.last_survey import IndexToken

_MAGIC = b"vaultmem-index-state 1\n"
_TEXT = ("paths", "ids", "hashes", "files")


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
    files: Sequence[str]
    scan_problems: Sequence[tuple[str, str, str]]
    problem_count: int
    journal: str | None


def _join(values: Sequence[str]) -> bytes:
    return "\0".join(values).encode("utf-8", "surrogateescape")


def _split(data: bytes, count: int) -> list[str]:
    if not count:
        return []
    values = data.decode("utf-8", "surrogateescape").split("\0")
    if len(values) != count:
        raise ValueError("a column of the wrong length")
    return values


_KEPT: dict[Path, StateRecord] = {}
"""The record this process wrote last, per state folder: a warm writer (the watcher, the MCP
server) takes it back from memory instead of reading and decoding the file (~0.07 s at
100,000 notes, on the watcher's path from a save to a searchable index)."""


def kept_state_record(state_dir: Path, token: IndexToken) -> StateRecord | None:
    """The record this process wrote for the index `token` names, if it wrote the last one."""
    record = _KEPT.get(state_dir)
    return record if record is not None and record.token == token else None


def write_state_record(state_dir: Path, record: StateRecord) -> None:
    """Publish the record by rename; a folder that cannot be written just goes without. The
    process keeps it too (`kept_state_record`)."""
    _KEPT[state_dir] = record
    n = len(record.paths)
    columns = {
        "paths": _join(record.paths),
        "ids": _join(record.ids),
        "hashes": _join(record.hashes),
        "files": _join(record.files),
        "sizes": array("q", record.sizes).tobytes(),
        "mtimes": array("q", record.mtimes).tobytes(),
    }
    header = {
        "token": [list(t) if t is not None else None for t in record.token],
        "versions": record.versions,
        "notes": n,
        "file_count": len(record.files),
        "claims": {str(i): c for i, c in enumerate(record.claims) if c is not None},
        "scan_problems": [list(p) for p in record.scan_problems],
        "problem_count": record.problem_count,
        "journal": record.journal,
        "lengths": {name: len(data) for name, data in columns.items()},
    }
    tmp = state_dir / f".{RECORD_NAME}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as out:
            out.write(_MAGIC)
            out.write(json.dumps(header).encode() + b"\n")
            out.writelines(columns.values())
        os.replace(tmp, state_dir / RECORD_NAME)
    except OSError:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def read_state_record(state_dir: Path) -> StateRecord | None:
    """The record, or None when there is none or it cannot be read as a whole one."""
    try:
        data = (state_dir / RECORD_NAME).read_bytes()
        if not data.startswith(_MAGIC):
            return None
        end = data.index(b"\n", len(_MAGIC))
        header = json.loads(data[len(_MAGIC) : end])
        n, file_count = int(header["notes"]), int(header["file_count"])
        lengths = header["lengths"]
        offset = end + 1
        raw: dict[str, bytes] = {}
        for name in ("paths", "ids", "hashes", "files", "sizes", "mtimes"):
            size = int(lengths[name])
            raw[name] = data[offset : offset + size]
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
        claims: list[str | None] = [None] * n
        for i, claim in header["claims"].items():
            claims[int(i)] = str(claim)
        token = tuple(
            None if t is None else (int(t[0]), int(t[1]), int(t[2])) for t in header["token"]
        )
        journal = header["journal"]
        return StateRecord(
            token,
            {str(k): str(v) for k, v in header["versions"].items()},
            _split(raw["paths"], n),
            _split(raw["ids"], n),
            sizes.tolist(),
            mtimes.tolist(),
            _split(raw["hashes"], n),
            claims,
            _split(raw["files"], file_count),
            [(str(p), str(c), str(m)) for p, c, m in header["scan_problems"]],
            int(header["problem_count"]),
            None if journal is None else str(journal),
        )
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None

"""The last survey the index agreed with: what lets a no-op reconcile leave the index closed.

`<state>/last-survey.json` holds the digest of a whole-vault stat walk (`plan.survey_digest`)
that the index equalled when a reconcile finished, beside the identity of the index file and
its WAL at that moment (inode, size, mtime_ns of each), the versions the index was built with,
and its note and problem counts. When the next walk digests the same, the versions are the
same and the index is still that very file, nothing changed: the run ends without importing
DuckDB or reading a row.

It is a cache that can only make a no-op cheaper, never hide a change: any doubt (no record,
an unreadable one, another index file, another version) means the full comparison against the
index's rows. A writer removes the record before it opens the index and writes it after it
closed it, under the writer lock; a no-op that had to compare rows writes it for the index it
read (not under the lock: a writer that commits meanwhile changes the index file's identity,
so the record no longer matches). The file is written by rename and never fsynced: a record
lost in a crash costs one slower no-op.
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

RECORD_NAME = "last-survey.json"

IndexToken = tuple[tuple[int, int, int] | None, ...]
"""(inode, size, mtime_ns) of the index file and of its WAL, None for a missing file."""


class LastSurvey(NamedTuple):
    """A named tuple, not a dataclass: a no-op run imports this module, and a dataclass
    compiles its methods from source at import."""

    token: IndexToken
    versions: dict[str, str]
    digest: str
    notes: int
    problems: int


def index_token(index_path: Path) -> IndexToken:
    """Identity of the index file and its WAL: any commit by a writer changes it."""
    token: list[tuple[int, int, int] | None] = []
    for candidate in (index_path, index_path.with_name(index_path.name + ".wal")):
        try:
            st = os.stat(candidate)
        except OSError:
            token.append(None)
            continue
        token.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(token)


def read_last_survey(state_dir: Path) -> LastSurvey | None:
    """The record, or None when there is none or it cannot be read as one."""
    try:
        data = json.loads((state_dir / RECORD_NAME).read_bytes())
        token = tuple(
            None if t is None else (int(t[0]), int(t[1]), int(t[2])) for t in data["token"]
        )
        if len(token) != 2:
            return None
        versions = {str(k): str(v) for k, v in data["versions"].items()}
        return LastSurvey(
            token, versions, str(data["digest"]), int(data["notes"]), int(data["problems"])
        )
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def write_last_survey(state_dir: Path, record: LastSurvey) -> None:
    """Publish the record by rename; a folder that cannot be written just goes without."""
    data = json.dumps(
        {
            "token": [list(t) if t is not None else None for t in record.token],
            "versions": record.versions,
            "digest": record.digest,
            "notes": record.notes,
            "problems": record.problems,
        }
    ).encode()
    publish(state_dir, RECORD_NAME, data)


def publish(state_dir: Path, name: str, data: bytes) -> None:
    """Write a cache file of the state folder by rename, never fsynced (a file lost in a
    crash costs one slower run); a folder that cannot be written just goes without."""
    tmp = state_dir / f".{name}.{os.getpid()}.tmp"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, state_dir / name)
    except OSError:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def forget_last_survey(state_dir: Path) -> None:
    """Remove the record before the index changes (a writer, under the writer lock; the index
    state beside it is held with it: `index_state.forget_before_write`)."""
    (state_dir / RECORD_NAME).unlink(missing_ok=True)

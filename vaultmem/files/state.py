"""The vault's machine-local state folder: created private, labelled, and filled from the old place.

The index, its WAL, the writer lock and every per-machine record used to live in the vault's
`.vaultmem/`, where every sync tool that copies dot-folders shipped an open database between
machines. They now live in `config.state_dir` (outside the vault; core/config.py says where and
why). `prepare` makes that folder (mode 0700: the index holds the vault's text, the folder the
HTTP token), writes `vault.json` naming the vault it belongs to, and moves what an older version
left in `.vaultmem/` into it: the index and its WAL when the new place has none (else the old one
goes beside it as `index.duckdb.legacy-<stamp>`), the rename journal and usage log appended to
the new ones, the export record merged into it; the writer lock, topic locks and the last survey
are per-run files and are simply removed. Nothing that held data is deleted.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from vaultmem.core.atomic import replace_file
from vaultmem.core.config import INDEX_FILE_NAME, STATE_RECORD_NAME, Config
from vaultmem.files.lock import writer_lock

_APPENDED = ("renames.jsonl", "usage.jsonl")
_MERGED = "exports.json"
_DROPPED = ("write.lock", "last-survey.json")
_LEGACY = frozenset({INDEX_FILE_NAME, *_APPENDED, _MERGED, *_DROPPED, "locks"})


def make_private_folder(path: Path) -> Path:
    """`path` and any missing parents created with mode 0700; an existing folder is kept as is."""
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def prepare(config: Config, *, writing: bool = False) -> list[str]:
    """Move any state an older version left inside the vault to the state folder; return one
    line per thing moved (for reconcile's warnings). Cheap when there is nothing: one listing
    of `.vaultmem/`. `writing` (a reconcile): label the folder before its first index."""
    if writing and not config.index_path.exists():
        label(config)
    old = config.config_dir
    try:
        names = [n for n in os.listdir(old) if n in _LEGACY or n.startswith(INDEX_FILE_NAME)]
    except OSError:
        names = []
    if not names:
        return []
    state = make_private_folder(config.state_dir)
    label(config)
    # Under the writer lock, as any writer of the index: two processes starting at once move
    # each file once (the second finds it gone), and no reconcile writes meanwhile.
    with writer_lock(state, timeout_s=30.0):
        return _move_legacy(old, state, names)


def _move_legacy(old: Path, state: Path, names: list[str]) -> list[str]:
    notes: list[str] = []
    index = old / INDEX_FILE_NAME
    if index.exists():
        target = state / INDEX_FILE_NAME
        if target.exists():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            target = state / f"{INDEX_FILE_NAME}.legacy-{stamp}"
        _move(index, target)
        wal = index.with_name(index.name + ".wal")
        if wal.exists():
            _move(wal, target.with_name(target.name + ".wal"))
        notes.append(f"Moved the index out of the vault, from {index} to {target}.")
    for name in names:
        path = old / name
        if not path.exists():
            continue  # the index and its WAL (moved above), or another process was first
        if name in _APPENDED:
            _append(path, state / name)
        elif name == _MERGED:
            _merge_exports(path, state / name)
        elif name in _DROPPED or name == "locks":
            _remove(path)
            continue
        elif name.startswith(INDEX_FILE_NAME):
            if name == INDEX_FILE_NAME + ".tmp":  # a rebuild's leftover or a spill folder
                _remove(path)
                continue
            _move(path, state / name)  # `.corrupt-<stamp>` copies kept for inspection
        else:
            continue
        notes.append(f"Moved {path} to {state / name}.")
    return notes


def label(config: Config) -> None:
    """Write `vault.json` (which vault this folder belongs to) when it is missing or stale."""
    record = config.state_dir / STATE_RECORD_NAME
    data = (
        json.dumps({"vault": str(config.root), "vault_id": config.vault_id}, ensure_ascii=False)
        + "\n"
    ).encode()
    try:
        if record.read_bytes() == data:
            return
    except OSError:
        pass
    make_private_folder(config.state_dir)
    replace_file(record, data)


def _move(source: Path, target: Path) -> None:
    """`os.replace` on one file system, else copy and remove (shutil.move)."""
    try:
        os.replace(source, target)
    except OSError:
        import shutil  # here: its compression modules are ~2 ms of every command's start

        shutil.move(source, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _append(source: Path, target: Path) -> None:
    """The old log's lines first, then the new one's (both are append-only, oldest first)."""
    old = source.read_bytes()
    if old and not old.endswith(b"\n"):
        old += b"\n"
    try:
        new = target.read_bytes()
    except FileNotFoundError:
        new = b""
    replace_file(target, old + new)
    source.unlink()


def _merge_exports(source: Path, target: Path) -> None:
    """The export record: `{bundle folder: {file: sha256}}`; the new place's entries win."""

    def load(path: Path) -> dict[str, object]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    merged = {**load(source), **load(target)}
    text = json.dumps(merged, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    replace_file(target, text.encode())
    source.unlink()

"""`vaultmem export parquet DIR`: the index's documented tables as Parquet, for an organisation's
own engine (DuckDB over shared storage, DuckLake, Spark, Trino, ClickHouse) to query many vaults.

One file per table (`<table>.parquet`, DuckDB's `COPY ... (FORMAT parquet)`), each row carrying
the vault's id in a `vault_id` column, so the same table of many exports unions into one
(`read_parquet('exports/*/notes.parquet')`, docs/machines.md); `manifest.json` names the vault
id, the schema version, vaultmem's version, the time and each table's row count, and marks the
folder as one this export wrote. The export is built in a temporary folder beside DIR and renamed
into place, so a reader never sees half of one; a DIR that holds anything but an earlier export
is refused, and so is a DIR inside the vault (vaultmem writes there only in its managed folder).
The connection is read-only: the export never holds a writer out for longer than a read does.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.version import __version__
from vaultmem.storage import store
from vaultmem.storage.schema import SCHEMA_VERSION, table_docs

MANIFEST = "manifest.json"
FORMAT = "vaultmem-parquet-export"


class ParquetExport(NamedTuple):
    """What `export parquet` wrote."""

    out: Path
    vault_id: str
    schema_version: int
    tables: dict[str, int]
    """Rows written per table."""
    bytes: int


def export_parquet(index: Path, vault_root: Path, vault_id: str, out: Path) -> ParquetExport:
    """Write every documented table of the index at `index` into the folder `out`."""
    out = Path(os.path.abspath(out.expanduser()))
    root = Path(os.path.realpath(vault_root))
    real_out = Path(os.path.realpath(out))
    if real_out == root or root in real_out.parents:
        raise InvalidArgumentError(
            f"{out} is inside the vault.",
            hint="Export to a folder outside the vault (vaultmem writes only its managed "
            "folder there).",
        )
    _check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.with_name(f".{out.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    stage.mkdir(mode=0o755)
    try:
        counts = _write_tables(index, vault_id, stage)
        manifest = {
            "format": FORMAT,
            "vault_id": vault_id,
            "schema_version": SCHEMA_VERSION,
            "vaultmem_version": __version__,
            "exported_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tables": counts,
        }
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        size = sum(p.stat().st_size for p in stage.iterdir())
        _swap_in(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return ParquetExport(out, vault_id, SCHEMA_VERSION, counts, size)


def _check_target(out: Path) -> None:
    """Refuse a file, or a folder holding anything but an earlier export of ours."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InvalidArgumentError(
            f"{out} exists and is not a folder.", hint="Name a new folder or an earlier export."
        )
    if not out.is_dir() or not any(out.iterdir()):
        return
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidArgumentError(
            f"{out} holds files that no `vaultmem export parquet` wrote; nothing was changed.",
            hint="Name a new or empty folder, or an earlier Parquet export.",
        )


def _write_tables(index: Path, vault_id: str, stage: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    vault_literal = _literal(vault_id)
    with store.reading(index) as con:
        for table in table_docs():
            target = stage / f"{table.name}.parquet"
            # COPY takes no parameters: the id is a checked [A-Za-z0-9._-] string, the path
            # ours; both are quoted as SQL literals anyway.
            con.execute(
                f"COPY (SELECT *, {vault_literal} AS vault_id FROM {table.name}) "
                f"TO {_literal(str(target))} (FORMAT parquet, COMPRESSION zstd)"
            )
            row = con.execute(f"SELECT count(*) FROM {table.name}").fetchone()
            counts[table.name] = int(row[0]) if row else 0
    return counts


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _swap_in(stage: Path, out: Path) -> None:
    """Rename the finished folder into place; an earlier export goes only once it is."""
    if not out.exists():
        os.replace(stage, out)
        return
    old = out.with_name(f".{out.name}.{os.getpid()}-{os.urandom(4).hex()}.old")
    os.replace(out, old)
    try:
        os.replace(stage, out)
    except OSError:
        os.replace(old, out)  # put the earlier export back
        raise
    shutil.rmtree(old, ignore_errors=True)

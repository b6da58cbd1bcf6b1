"""`vaultmem status`: what the index holds, per scope and mapped folder, and how many notes of
the vault changed since the last reconcile (a stat walk compared with the indexed fingerprints;
nothing is read or parsed).

The walk takes the folder listings the last reconcile recorded (`files.folder_cache`), as a
reconcile's does, so it lists only the folders changed since; status never writes that
record. At 100,000 notes listing every folder was ~1 s of a 1.6 s status.
"""

from __future__ import annotations

import time

from vaultmem.core.config import Config
from vaultmem.files import folder_cache
from vaultmem.files.scan import notes_outside_mapping as outside_of
from vaultmem.files.scan import scan_vault
from vaultmem.query import catalog
from vaultmem.query.catalog import FolderCount, Status
from vaultmem.storage import store


def notes_outside_mapping(config: Config) -> tuple[int, tuple[str, ...]]:
    """How many notes no mapped folder holds, and their top-level folders (`.` = the root)."""
    return outside_of(config, scan_vault(config).files)


def status(config: Config) -> Status:
    with store.reading(config.index_path) as con:
        counts = catalog.counts(con)
        files = catalog.note_files(con)
    indexed = {path: (size, mtime) for path, size, mtime, _, _ in files}
    folders: dict[tuple[str, str, str | None], int] = {}
    mapped: dict[str, str] = {}  # a note's folder -> its mapped folder: the same for its notes
    for path, _, _, scope, scope_id in files:
        parent = path.rpartition("/")[0]
        folder = mapped.get(parent)
        if folder is None:
            mapping = config.mapping_for(path)
            folder = mapped[parent] = mapping.folder if mapping else ""
        key = (folder, scope, scope_id)
        folders[key] = folders.get(key, 0) + 1
    scan = scan_vault(config, folder_cache.load(config, time.time_ns()))
    paths, sizes, mtimes = scan.notes.columns()  # no tuple per note
    walked = zip(paths, sizes, mtimes, strict=True)
    changed = sum(1 for path, size, mtime in walked if indexed.get(path) != (size, mtime))
    changed += len(indexed.keys() - set(paths))
    outside, outside_folders = outside_of(config, scan.files)
    size = sum(
        p.stat().st_size
        for p in (config.index_path, config.index_path.with_name(config.index_path.name + ".wal"))
        if p.exists()
    )
    return Status(
        notes=counts["notes"],
        scopes=counts["scopes"],
        folders=tuple(FolderCount(f, s, i, n) for (f, s, i), n in sorted(folders.items(), key=str)),
        links=counts["links"],
        unresolved_links=counts["unresolved_links"],
        problems=counts["problems"],
        last_run=counts["last_run"],
        changed_since_last_run=changed,
        index_bytes=size,
        outside_mapping=outside,
        outside_folders=outside_folders,
        index_path=str(config.index_path),
    )

"""`Vault`: the one API that the CLI, the MCP server and Python callers all use.

Each method is one hop to an operation: it resolves what the caller named, opens what the
operation needs (a read-only index connection per call, never held between calls) and
returns plain values. Nothing here prints or exits.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vaultmem import catalog, graph, search
from vaultmem.catalog import NoteDetail, NoteRef, SqlResult, Status
from vaultmem.search import SearchFilters, SearchHit
from vaultmem.config import Config, FolderMapping, find_vault, init_vault, load_config
from vaultmem.db import store
from vaultmem.errors import NotFoundError, VaultNotFoundError
from vaultmem.links import LinkResolver, resolve_link
from vaultmem.models import ParsedNote, Problem, Resolution
from vaultmem.parse import parse_note
from vaultmem.reconcile import Progress, ReconcileReport, reconcile
from vaultmem.scan import read_note, scan_vault


@dataclass(frozen=True, slots=True)
class ParsedView:
    """`vaultmem parse`: a note's model with each link's resolution against the whole vault."""

    parsed: ParsedNote
    resolutions: tuple[Resolution, ...]

    def to_dict(self) -> dict[str, Any]:
        note = asdict(self.parsed.note)
        for link, res in zip(note["links"], self.resolutions, strict=True):
            link["resolved"] = asdict(res)
        return {
            "note": note,
            "problems": [
                {**asdict(p), "severity": p.severity} for p in self.parsed.problems
            ],
        }


class Vault:
    """An Obsidian vault with its vaultmem configuration and index."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        cwd: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        root = find_vault(path, cwd=cwd, environ=environ)
        self.config: Config = load_config(root)

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        managed_folder: str = "agent-memory",
        mappings: Sequence[FolderMapping] = (),
        force: bool = False,
    ) -> Vault:
        root = Path(path).resolve()
        if not root.is_dir():
            raise VaultNotFoundError(f"{root} is not a folder.", hint="Create it or pass another.")
        init_vault(root, managed_folder=managed_folder, mappings=mappings, force=force)
        return cls(root)

    @property
    def root(self) -> Path:
        return self.config.root

    # -- writing the index ----------------------------------------------------------------

    def reconcile(
        self,
        *,
        rebuild: bool = False,
        paths: Iterable[str] | None = None,
        progress: Progress | None = None,
        lock_timeout_s: float = 30.0,
    ) -> ReconcileReport:
        return reconcile(
            self.config, rebuild=rebuild, paths=paths, progress=progress,
            lock_timeout_s=lock_timeout_s,
        )

    # -- reading the index ----------------------------------------------------------------

    def status(self) -> Status:
        with store.reading(self.config.index_path) as con:
            counts = catalog.counts(con)
            indexed = {p: (s, m) for p, s, m in catalog.note_paths(con)}
            folder_rows = con.execute(
                "SELECT path, scope, scope_id FROM notes"
            ).fetchall()
        folders: dict[tuple[str, str, str | None], int] = {}
        for path, scope, scope_id in folder_rows:
            mapping = self.config.mapping_for(path)
            folder = mapping.folder if mapping else ""
            key = (folder, scope, scope_id)
            folders[key] = folders.get(key, 0) + 1
        scan = scan_vault(self.config)
        changed = sum(
            1 for fp in scan.notes if indexed.get(fp.path) != (fp.size, fp.mtime_ns)
        ) + len(set(indexed) - {fp.path for fp in scan.notes})
        size = sum(
            p.stat().st_size
            for p in (self.config.index_path, self.config.index_path.with_suffix(".duckdb.wal"))
            if p.exists()
        )
        return Status(
            notes=counts["notes"],
            scopes=counts["scopes"],
            folders=tuple(
                catalog.FolderCount(f, s, i, n) for (f, s, i), n in sorted(folders.items(), key=str)
            ),
            links=counts["links"],
            unresolved_links=counts["unresolved_links"],
            problems=counts["problems"],
            last_run=counts["last_run"],
            changed_since_last_run=changed,
            index_bytes=size,
        )

    def problems(self, *, code: str | None = None) -> list[dict[str, Any]]:
        with store.reading(self.config.index_path) as con:
            return catalog.problems(con, code=code)

    def find(self, name: str) -> NoteRef:
        with store.reading(self.config.index_path) as con:
            return catalog.find_note(con, name)

    def show(self, name: str) -> NoteDetail:
        with store.reading(self.config.index_path) as con:
            return catalog.note_detail(con, catalog.find_note(con, name))

    def links(self, name: str) -> tuple[NoteRef, list[dict[str, Any]]]:
        with store.reading(self.config.index_path) as con:
            ref = catalog.find_note(con, name)
            return ref, graph.outgoing(con, ref)

    def backlinks(self, name: str) -> tuple[NoteRef, list[dict[str, Any]]]:
        with store.reading(self.config.index_path) as con:
            ref = catalog.find_note(con, name)
            return ref, graph.backlinks(con, ref)

    def neighbours(self, name: str, depth: int = 1) -> tuple[NoteRef, list[dict[str, Any]]]:
        with store.reading(self.config.index_path) as con:
            ref = catalog.find_note(con, name)
            return ref, graph.neighbours(con, ref, depth)

    def unresolved(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        with store.reading(self.config.index_path) as con:
            return graph.unresolved(con, limit=limit)

    def search(
        self, query: str, filters: SearchFilters = SearchFilters(), *, limit: int = 10
    ) -> list[SearchHit]:
        """BM25 search over the vault's sections, grouped by note (docs/search.md)."""
        with store.reading(self.config.index_path) as con:
            return search.search(
                con, query, filters, limit=limit, k1=self.config.bm25_k1, b=self.config.bm25_b
            )

    def sql(self, query: str, *, limit: int = 1000) -> SqlResult:
        with store.reading(self.config.index_path, sandboxed=True) as con:
            return catalog.run_sql(con, query, limit=limit)

    # -- one note, straight from the file ---------------------------------------------------

    def parse(self, note_path: str | Path) -> ParsedView:
        """Parse one note from disk and resolve its links against every file of the vault."""
        rel = self._relative(note_path)
        data = read_note(self.config, rel)
        if isinstance(data, Problem):
            raise NotFoundError(f"Cannot read {rel}: {data.message}")
        parsed = parse_note(rel, data, max_bytes=self.config.max_note_bytes)
        scan = scan_vault(self.config)
        resolver = LinkResolver(scan.files)
        cache: dict[str, ParsedNote | None] = {rel: parsed}

        def headings_of(path: str) -> Any:
            if path not in cache:
                raw = read_note(self.config, path) if path.lower().endswith(".md") else None
                cache[path] = (
                    parse_note(path, raw, max_bytes=self.config.max_note_bytes)
                    if isinstance(raw, bytes)
                    else None
                )
            found = cache[path]
            return (found.note.headings, found.note.blocks) if found else None

        resolutions = tuple(
            resolve_link(link, rel, resolver, headings_of) for link in parsed.note.links
        )
        return ParsedView(parsed, resolutions)

    def _relative(self, note_path: str | Path) -> str:
        candidate = Path(note_path)
        if not candidate.is_absolute():
            in_cwd = Path.cwd() / candidate
            candidate = in_cwd if in_cwd.exists() else self.root / candidate
        try:
            rel = candidate.resolve().relative_to(self.root)
        except ValueError:
            raise NotFoundError(
                f"{note_path} is not inside the vault {self.root}.",
                hint="Pass a path inside the vault, relative to it or absolute.",
            ) from None
        if not (self.root / rel).is_file():
            raise NotFoundError(f"No file at {rel} in the vault {self.root}.")
        return rel.as_posix() if os.sep == "/" else str(rel).replace(os.sep, "/")

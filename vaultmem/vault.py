"""`Vault`: the one API that the CLI, the MCP server and Python callers all use.

Each method is one hop to an operation: it resolves what the caller named, opens what the
operation needs (a read-only index connection per call, never held between calls) and
returns plain values. Nothing here prints or exits.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.config import Config, FolderMapping, find_vault, init_vault, load_config
from vaultmem.errors import ConfigError, NotFoundError, VaultNotFoundError
from vaultmem.files.scan import read_note, scan_vault
from vaultmem.index import catalog, graph
from vaultmem.index.catalog import NoteDetail, NoteRef, SqlResult, Status
from vaultmem.index.reconcile import Progress, ReconcileReport, reconcile
from vaultmem.index.watch import Emit
from vaultmem.index.watch import watch as watch_vault
from vaultmem.memory import context as context_block
from vaultmem.memory import recall as recall_op
from vaultmem.memory import relations, usage
from vaultmem.memory import topic_store as memory
from vaultmem.memory.secrets import compile_patterns
from vaultmem.models import ParsedNote, Problem, Resolution
from vaultmem.note.links import LinkResolver, resolve_link
from vaultmem.note.parse import parse_note
from vaultmem.okf import export as okf_export
from vaultmem.okf import ingest as okf_ingest
from vaultmem.okf import validate as okf_validate
from vaultmem.search import vectors
from vaultmem.search.query import SearchFilters, SearchHit
from vaultmem.storage import store


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
            "problems": [{**asdict(p), "severity": p.severity} for p in self.parsed.problems],
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
            self.config,
            rebuild=rebuild,
            paths=paths,
            progress=progress,
            lock_timeout_s=lock_timeout_s,
        )

    def watch(
        self,
        *,
        debounce_ms: int = 300,
        sweep_s: float = 300,
        emit: Emit,
        stop: threading.Event | None = None,
    ) -> None:
        """Keep the index following the vault until `stop` is set (docs/watch.md)."""
        watch_vault(self.root, debounce_ms=debounce_ms, sweep_s=sweep_s, emit=emit, stop=stop)

    # -- reading the index ----------------------------------------------------------------

    def status(self) -> Status:
        with store.reading(self.config.index_path) as con:
            counts = catalog.counts(con)
            indexed = {p: (s, m) for p, s, m in catalog.note_paths(con)}
            folder_rows = con.execute("SELECT path, scope, scope_id FROM notes").fetchall()
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
        self,
        query: str,
        filters: SearchFilters | None = None,
        *,
        limit: int = 10,
        mode: vectors.Mode | None = None,
    ) -> list[SearchHit]:
        """Search the vault's sections by words (BM25), vectors or both (docs/search.md)."""
        with store.reading(self.config.index_path) as con:
            return vectors.search(
                con,
                query,
                filters or SearchFilters(),
                mode=mode,
                limit=limit,
                k1=self.config.bm25_k1,
                b=self.config.bm25_b,
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

    # -- agents: recall and the context block -----------------------------------------------

    def recall(
        self,
        query: str,
        *,
        scopes: Sequence[str] = (),
        mode: recall_op.Mode = "metadata-first",
        sort: recall_op.Sort = "score",
        limit: int = 10,
        include_related: bool = False,
        now: datetime | None = None,
    ) -> list[recall_op.RecallHit]:
        """Recall notes for a question (docs/agents.md); each direct hit counts as one use."""
        moment = now or datetime.now(UTC)
        counts = {k: u.count for k, u in usage.read_usage(self.config.state_dir).items()}
        with store.reading(self.config.index_path) as con:
            hits = recall_op.recall(
                con,
                query,
                root=self.root,
                managed_folder=self.config.managed_folder,
                scopes=recall_op.parse_scopes(scopes),
                mode=mode,
                sort=sort,
                limit=limit,
                include_related=include_related,
                now=moment,
                usage_counts=counts,
                k1=self.config.bm25_k1,
                b=self.config.bm25_b,
                patterns=compile_patterns(self.config.secret_patterns),
            )
        stamp = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        usage.record(self.config.state_dir, [h.id for h in hits if not h.related], stamp)
        return hits

    def context(
        self,
        *,
        scopes: Sequence[str] = context_block.DEFAULT_SCOPES,
        per_scope: int = context_block.DEFAULT_PER_SCOPE,
        budget_chars: int = context_block.DEFAULT_BUDGET_CHARS,
        now: datetime | None = None,
    ) -> context_block.ContextBlock:
        """The `<vaultmem-memory>` block (docs/agents.md). Not counted as a use."""
        counts = {k: u.count for k, u in usage.read_usage(self.config.state_dir).items()}
        with store.reading(self.config.index_path) as con:
            return context_block.build_context(
                con,
                scopes=recall_op.parse_scopes(scopes),
                managed_folder=self.config.managed_folder,
                per_scope=per_scope,
                budget_chars=budget_chars,
                now=now,
                usage_counts=counts,
                patterns=compile_patterns(self.config.secret_patterns),
            )

    def write_context(
        self,
        target: context_block.Target,
        *,
        project_dir: Path | None = None,
        scopes: Sequence[str] = context_block.DEFAULT_SCOPES,
        per_scope: int = context_block.DEFAULT_PER_SCOPE,
        budget_chars: int = context_block.DEFAULT_BUDGET_CHARS,
        now: datetime | None = None,
    ) -> context_block.ContextWrite:
        """Write the block between vaultmem's markers into a provider's file of a project
        (outside the vault); the rest of the file is kept byte for byte."""
        folder = context_block.check_project_dir(project_dir or Path.cwd())
        path = context_block.target_path(target, folder)
        block = self.context(scopes=scopes, per_scope=per_scope, budget_chars=budget_chars, now=now)
        return context_block.write_block_file(path, block, vault_root=self.root)

    # -- agent memory: topics in the managed folder (docs/memory.md) ------------------------

    def store(
        self,
        key: str | None,
        text: str,
        *,
        scope: str = "project",
        scope_id: str | None = None,
        type: str = "project",
        tags: Sequence[str] = (),
        source: str | None = None,
        cwd: Path | None = None,
    ) -> memory.StoreResult:
        """Append an observation to a topic (created when new); see `memory.store`."""
        return memory.store(
            self.config,
            key,
            text,
            scope=scope,
            scope_id=scope_id,
            type=type,
            tags=tags,
            source=source,
            cwd=cwd,
        )

    def correct(
        self,
        key: str,
        text: str,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        source: str | None = None,
    ) -> memory.StoreResult:
        """Supersede a topic's latest observation; the old one stays visible."""
        return memory.correct(self.config, key, text, scope=scope, scope_id=scope_id, source=source)

    def forget(
        self, key_or_id: str, *, scope: str | None = None, scope_id: str | None = None
    ) -> memory.ForgetResult:
        """Move a topic to the managed folder's `.trash/` and drop it from the index."""
        return memory.forget(self.config, key_or_id, scope=scope, scope_id=scope_id)

    def get(
        self,
        key_or_id: str,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        include_expired: bool = False,
    ) -> memory.TopicView:
        """One topic read from its file (counts as a recall); expired topics are not found."""
        return memory.get(
            self.config,
            key_or_id,
            scope=scope,
            scope_id=scope_id,
            include_expired=include_expired,
        )

    def prune(self, *, apply: bool = False) -> memory.PruneResult:
        """Topics past their retention; `apply` moves them to `.trash/`."""
        return memory.prune(self.config, apply=apply)

    def relate(self, a: str, b: str, *, type: str = "relates_to") -> relations.Edge:
        """Record a person's edge A -[type]-> B in the decisions note."""
        return relations.relate(self.config, a, b, type)

    def edges(self, *, status: str | None = None, stale: bool = False) -> list[relations.Edge]:
        """Every edge (link, human, suggested) with its status."""
        return relations.edges(self.config, status=status, stale_only=stale)

    def accept(self, edge: str) -> relations.Edge:
        return relations.accept(self.config, edge)

    def reject(self, edge: str) -> relations.Edge:
        return relations.reject(self.config, edge)

    # -- OKF bundles (docs/okf.md) -------------------------------------------------------------

    def export_okf(
        self,
        out: str | Path,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        folder: str | None = None,
        include_private: bool = False,
        redact: bool = False,
        prune: bool = False,
        format: str = "dir",
    ) -> okf_export.ExportReport:
        """Write managed topics and/or a mapped folder's notes as an OKF v0.2 bundle."""
        if format not in ("dir", "tar.gz", "zip"):
            raise ConfigError(f"--format {format!r}: choose dir, tar.gz or zip.")
        return okf_export.export_bundle(
            self.config,
            Path(out),
            scope=scope,
            scope_id=scope_id,
            folder=folder,
            include_private=include_private,
            redact_secrets=redact,
            prune=prune,
            fmt=format,  # type: ignore[arg-type]
        )

    def import_okf(
        self,
        source: str | Path,
        *,
        scope: str,
        scope_id: str | None = None,
        conflict: str = "skip",
        dry_run: bool = False,
    ) -> okf_ingest.ImportReport:
        """Import an OKF bundle (folder, .tar.gz or .zip) as topics of one scope."""
        return okf_ingest.import_bundle(
            self.config,
            Path(source),
            scope=scope,
            scope_id=scope_id,
            conflict=conflict,  # type: ignore[arg-type]
            dry_run=dry_run,
        )

    @staticmethod
    def validate_okf(bundle: str | Path) -> okf_validate.ValidationReport:
        """Check a bundle folder against OKF v0.2 (needs no vault)."""
        root = Path(bundle)
        if not root.is_dir():
            raise NotFoundError(f"{root} is not a folder.", hint="Pass an exported bundle folder.")
        return okf_validate.validate_bundle(root)

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

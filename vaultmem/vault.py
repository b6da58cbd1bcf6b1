"""`Vault`: the one API that the CLI, the MCP server and Python callers all use.

Each method is one hop to an operation: it resolves what the caller named (a path inside the
vault), opens what the operation needs (the read-only index connection, kept between calls and
given up whenever a writer may want the file: `store.SharedReader`; the usage counts recall
ranks by) and returns the operation's plain values.
The work itself (SQL, scans, link resolution) happens below, in the operations and storage;
`get`, `read` and `used` record a use; `recall` never does (a returned hit is not a use).
Every write (store, correct, forget, prune, relate, accept, reject, import) takes one publish
path: the operation writes its files through `files/managed` and returns what it published
(`Published`); `_publish` alone brings the index up to date for those paths and maps any
failure to `PartialWriteError` (phases done, do not retry).
Secrets: the index holds none (`core.secrets.redact_note` before rows are written), and every
result of every public method, and every error's message, passes one redaction on its way out
(`_redacting`, `core.secrets.redact_value`): what a method read from files (`read`, `get`,
`parse`, an export's report) is redacted there whatever its fields are, so a field or a method
added later cannot skip it. One exception, for speed: `search` (`_JUDGES_ITSELF`) builds its hits
from index rows alone, so over an index whose meta says it was redacted by the patterns in force
(`_index_redacted`) only the snippet, the one text it derives from those rows, is judged
again; over any other index its hits pass the whole redaction. Nothing here prints or exits.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core.config import (
    DEFAULT_MANAGED_FOLDER,
    STATE_DIR_NAME,
    Config,
    FolderMapping,
    complete_mappings,
    find_vault,
    init_vault,
    load_config,
)
from vaultmem.core.errors import (
    InvalidArgumentError,
    NotFoundError,
    PartialWriteError,
    VaultNotFoundError,
)
from vaultmem.core.models import (
    CONTEXT_BUDGET_CHARS,
    CONTEXT_PER_SCOPE,
    CONTEXT_SCOPES,
    READ_MAX_BYTES,
    Published,
)
from vaultmem.files.lock import LOCK_NAME

if TYPE_CHECKING:  # imported where used: a cold CLI command loads only what it runs
    from contextlib import AbstractContextManager

    from vaultmem.core.secrets import SecretPattern
    from vaultmem.index.preview import ParsedView
    from vaultmem.index.reconcile import PhaseProgress, ReconcileReport
    from vaultmem.index.watch import Emit
    from vaultmem.memory import context as context_block
    from vaultmem.memory import identity, relations
    from vaultmem.memory import recall as recall_op
    from vaultmem.memory import topic_store as memory
    from vaultmem.okf import export as okf_export
    from vaultmem.okf import ingest as okf_ingest
    from vaultmem.okf import validate as okf_validate
    from vaultmem.query import catalog, reading
    from vaultmem.query.catalog import NoteDetail, NoteRef, SqlResult, Status
    from vaultmem.search import resident, vectors
    from vaultmem.search.query import SearchFilters, SearchHit
    from vaultmem.storage import store
    from vaultmem.storage.parquet_export import ParquetExport
    from vaultmem.storage.store import Connection


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
        self.config: Config = load_config(root, environ)
        from vaultmem.files import state

        self.moved: list[str] = state.prepare(self.config)
        """What was moved out of the vault's `.vaultmem/` (an older version's index)."""
        self._compiled: tuple[SecretPattern, ...] | None = None
        self._reader: store.SharedReader | None = None
        self._resident: resident.Resident | None = None
        self._resident_miss: tuple[int, ...] = ()
        self._signature: tuple[int, ...] = ()
        self._redacted_signature: tuple[int, ...] | None = None
        self._loader: threading.Thread | None = None
        self.working_dir: Path | None = None
        """The folder whose project a write or context without a scope id belongs to (the MCP
        server sets it from the client's roots); None: the process's working directory."""
        self.init_warnings: tuple[str, ...] = ()
        """What `init` wants a person to know about the mappings it wrote."""
        self.resident_max_postings: int | None = None
        """The largest index (in postings) `search` holds in memory (`search/resident.py`);
        None: its MAX_POSTINGS; 0: never."""

    def _patterns(self) -> tuple[SecretPattern, ...]:
        """The configured secret patterns, compiled once (the built-in ones are always used)."""
        if self._compiled is None:
            from vaultmem.core.secrets import compile_patterns

            self._compiled = compile_patterns(self.config.secret_patterns)
        return self._compiled

    def _index_redacted(self, con: Connection) -> bool:
        """Whether the open index's rows were redacted by the secret patterns in force: its
        meta records this schema, parser and vaultmem version and this `rows_digest` (the
        configured and built-in patterns). Read once per index file (the reader's signature)."""
        from vaultmem.core.config import rows_digest
        from vaultmem.core.models import PARSER_VERSION
        from vaultmem.core.version import __version__
        from vaultmem.storage import store

        assert self._reader is not None  # `_reading` made it
        signature = self._reader.signature
        if signature == self._redacted_signature:
            return True
        versions = {
            "parser_version": str(PARSER_VERSION),
            "vaultmem_version": __version__,
            "config_digest": rows_digest(self.config),
        }
        if not store.meta_matches(con, versions):
            return False
        self._redacted_signature = signature
        return True

    def _reading(self) -> AbstractContextManager[Connection]:
        """The index, read-only, for one call: one connection kept between calls and given
        up to writers (`store.SharedReader`; docs/architecture.md, "Connections")."""
        from vaultmem.storage import store

        if self._reader is None:
            self._reader = store.SharedReader(
                self.config.index_path, lock_path=self.config.state_dir / LOCK_NAME
            )
        return self._reader.use()

    def close(self) -> None:
        """Let go of the index now (it is also let go when idle or when a writer waits); a
        resident load under way is interrupted and waited for."""
        if self._reader is not None:
            self._reader.close()
        if self._loader is not None:
            self._loader.join()

    @classmethod
    def init(
        cls,
        path: str | Path,
        *,
        managed_folder: str = DEFAULT_MANAGED_FOLDER,
        mappings: Sequence[FolderMapping] = (),
        force: bool = False,
    ) -> Vault:
        """Write the config and create the managed folder (`config.init_vault`); the managed
        folder is mapped when no mapping covers it, and what a person should know about the
        mappings is in the returned vault's `init_warnings` (`config.complete_mappings`)."""
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise VaultNotFoundError(f"{root} is not a folder.", hint="Create it, or pass another.")
        managed = managed_folder.strip("/")
        complete, warnings = complete_mappings(root, managed, mappings)
        init_vault(root, managed_folder=managed, mappings=complete, force=force)
        vault = cls(root)
        if mappings:  # with no --map the whole vault is mapped: nothing can be left out
            from vaultmem.query.status import notes_outside_mapping

            outside, folders = notes_outside_mapping(vault.config)
            if outside:
                warnings.append(
                    f"{outside} note(s) lie outside the mapped folders and will not be indexed "
                    f"(in {', '.join(folders)}); add a --map for each folder to index it."
                )
        vault.init_warnings = tuple(warnings)
        return vault

    def check_is_a_vault(self) -> None:
        """Refuse to index a folder that is neither a vaultmem vault nor an Obsidian vault: a
        typo in --vault would otherwise leave a `.vaultmem/` folder in some random directory."""
        if not (self.root / STATE_DIR_NAME).is_dir() and not (self.root / ".obsidian").is_dir():
            raise VaultNotFoundError(
                f"{self.root} is neither a vaultmem vault (no {STATE_DIR_NAME}/) nor an Obsidian "
                "vault (no .obsidian/).",
                hint=f"Run `vaultmem init {self.root}` first, or pass the right --vault.",
            )

    @property
    def root(self) -> Path:
        return self.config.root

    # -- writing the index ----------------------------------------------------------------

    def reconcile(
        self,
        *,
        rebuild: bool = False,
        paths: Iterable[str] | None = None,
        progress: PhaseProgress | None = None,
        lock_timeout_s: float = 30.0,
    ) -> ReconcileReport:
        from vaultmem.index.reconcile import reconcile

        report = reconcile(
            self.config,
            rebuild=rebuild,
            paths=None if paths is None else self._vault_paths(paths),
            progress=progress,
            lock_timeout_s=lock_timeout_s,
        )
        if self.moved:  # said once, by the first reconcile after the move
            report = report._replace(warnings=(*self.moved, *report.warnings))
            self.moved = []
        return report

    def _vault_paths(self, paths: Iterable[str]) -> list[str]:
        """Files or folders named by a caller, as vault-relative POSIX paths: relative to the
        vault, or absolute inside it; nothing that climbs out (`..`) or names the vault."""
        out = []
        root = os.path.realpath(self.root)
        for given in paths:
            path = given
            if os.path.isabs(path):
                real = os.path.realpath(path)
                if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
                    raise InvalidArgumentError(
                        f"--path {given!r} is outside the vault {self.root}.",
                        hint="Name a note or folder inside the vault, relative to it.",
                    )
                path = os.path.relpath(real, root)
            parts = path.replace(os.sep, "/").split("/")
            parts = [part for part in parts if part not in ("", ".")]
            if not parts or ".." in parts:
                raise InvalidArgumentError(
                    f"--path {given!r} does not name a note or folder inside the vault.",
                    hint="Give a path relative to the vault, such as `Folder/Note.md`.",
                )
            out.append("/".join(parts))
        return out

    def watch(
        self,
        *,
        debounce_ms: int = 300,
        sweep_s: float = 300,
        emit: Emit,
        stop: threading.Event | None = None,
    ) -> None:
        """Keep the index following the vault until `stop` is set (docs/watch.md)."""
        from vaultmem.index.watch import watch as watch_vault

        watch_vault(self.root, debounce_ms=debounce_ms, sweep_s=sweep_s, emit=emit, stop=stop)

    # -- reading the index ----------------------------------------------------------------

    def status(self) -> Status:
        """Index counts, per-folder scopes and how many notes changed since the last run."""
        from vaultmem.query import status as index_status

        found = index_status.status(self.config)
        return dataclasses.replace(found, project=self.project().to_dict())

    def problems(self, *, code: str | None = None) -> list[dict[str, Any]]:
        from vaultmem.query import catalog

        with self._reading() as con:
            return catalog.problems(con, code=code)

    def _find_note(self, con: Any, name: str) -> NoteRef:
        """`catalog.find_note`, whose not-found error says so when `name` is a note of the
        vault that no mapped folder holds (a first run's `--map` leaves the rest out)."""
        from vaultmem.query import catalog, reading

        try:
            return catalog.find_note(con, name)
        except NotFoundError as error:
            outside = reading.unmapped_note(self.config, name)
            if outside is None:
                raise
            raise outside from error

    def find(self, name: str) -> NoteRef:

        with self._reading() as con:
            return self._find_note(con, name)

    def show(self, name: str) -> NoteDetail:
        from vaultmem.query import catalog

        with self._reading() as con:
            return catalog.note_detail(con, self._find_note(con, name))

    def links(self, name: str) -> tuple[NoteRef, list[dict[str, Any]]]:
        from vaultmem.query import graph

        with self._reading() as con:
            ref = self._find_note(con, name)
            return ref, graph.outgoing(con, ref)

    def backlinks(self, name: str) -> tuple[NoteRef, list[dict[str, Any]]]:
        from vaultmem.query import graph

        with self._reading() as con:
            ref = self._find_note(con, name)
            return ref, graph.backlinks(con, ref)

    def neighbours(self, name: str, depth: int = 1) -> tuple[NoteRef, list[dict[str, Any]]]:
        from vaultmem.query import graph

        with self._reading() as con:
            ref = self._find_note(con, name)
            return ref, graph.neighbours(con, ref, depth)

    def unresolved(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        from vaultmem.query import graph

        with self._reading() as con:
            return graph.unresolved(con, limit=limit)

    def search(
        self,
        query: str,
        filters: SearchFilters | None = None,
        *,
        limit: int = 10,
        mode: vectors.Mode | None = None,
    ) -> list[SearchHit]:
        """Search the vault's sections by words (BM25), vectors or both fused (docs/search.md).
        Its hits pass the output redaction here, not in `_redacting` (`_JUDGES_ITSELF`)."""
        from vaultmem.core.secrets import may_change, redact, redact_value
        from vaultmem.search import front
        from vaultmem.search.query import SearchFilters

        with self._reading() as con:
            held = self._resident_index(con)
            hits = front.search(
                con,
                query,
                filters or SearchFilters(),
                mode=mode,
                limit=limit,
                k1=self.config.bm25_k1,
                b=self.config.bm25_b,
                language=self.config.search_language,
                resident=held,
            )
            redacted = self._index_redacted(con)
        patterns = self._patterns()
        if not redacted:
            return redact_value(hits, patterns)
        # Every field but the snippet is an index value as stored, which redaction leaves as
        # it is. The snippet is cut from a section's text with its `**` dropped and its spaces
        # joined, which can bring a secret's parts together (`pass**word**:` and a value).
        if not may_change([hit.snippet for hit in hits], patterns):
            return hits  # one look at all the snippets: the usual case
        out = []
        for hit in hits:
            cleaned = redact(hit.snippet, patterns)
            out.append(dataclasses.replace(hit, snippet=cleaned.text) if cleaned.found else hit)
        return out

    def _resident_index(self, con: Connection) -> resident.Resident | None:
        """The index held in memory for searches (`search/resident.py`), or None: SQL serves.

        The second search that finds the index file unchanged starts loading it in a thread
        (`_loader`), reading through its own cursor of the shared reader (a writer interrupts
        it); searches read SQL until it is there. So a one-shot CLI's only search, the first
        searches after each write and an agent that stores and searches in turn never wait for
        a load."""
        assert self._reader is not None  # `_reading` made it
        signature = self._reader.signature
        if signature != self._signature:
            self._signature, self._resident = signature, None
            return None
        held = self._resident
        if held is not None and held.signature == signature:
            return held
        limit = self.resident_max_postings
        if limit == 0 or self._resident_miss == signature:
            return None  # off, or too large: SQL serves until the index changes
        if self._loader is None or not self._loader.is_alive():
            # Not a daemon: a process that ends during a load waits for it (at most the
            # load's time) rather than tearing DuckDB down under the thread (an abort).
            self._loader = threading.Thread(target=self._load_resident, name="vaultmem-resident")
            self._loader.start()
        return None

    def _load_resident(self) -> None:
        """The loader thread's body. It reads through a cursor of the shared reader (a second
        connection to the same database), so searches made meanwhile use the shared connection
        and read SQL instead of waiting for the load (0.5-1.6 s at 10,000 notes); a writer
        interrupts it (`store.SharedReader.cursor`)."""
        from vaultmem.core.errors import VaultmemError
        from vaultmem.search import resident
        from vaultmem.storage.store import DatabaseError

        limit = self.resident_max_postings
        reader = self._reader
        assert reader is not None  # the search that started this thread made it
        try:
            with reader.cursor() as cursor:
                signature = reader.signature
                if signature != self._signature:
                    return  # the index changed since: the next searches start over
                held = resident.load(
                    cursor, signature, resident.MAX_POSTINGS if limit is None else limit
                )
            if signature == self._signature:  # else a write came in during the load
                self._resident = held
                self._resident_miss = () if held is not None else signature
        except (VaultmemError, DatabaseError):
            return  # the index went away or is locked: SQL serves, a later search retries

    def sql(
        self,
        query: str,
        *,
        limit: int = 1000,
        params: Mapping[str, Any] | None = None,
        timeout_s: float = 10.0,
    ) -> SqlResult:
        """One read-only statement, `$name` parameters bound, stopped after `timeout_s` or when
        a writer wants the index (`storage/sql_process.py`: in a child process, memory capped)."""
        from vaultmem.query import catalog

        return catalog.run_sql(
            self.config.index_path,
            query,
            limit=limit,
            params=params,
            timeout_s=timeout_s,
            lock_path=self.config.state_dir / LOCK_NAME,
        )

    # -- one note, straight from the file ---------------------------------------------------

    def parse(self, note_path: str | Path) -> ParsedView:
        """Parse one note from disk and resolve its links against every file of the vault."""
        from vaultmem.index.preview import preview

        return preview(self.config, self._relative(note_path))

    # -- agents: recall and the context block -----------------------------------------------

    def recall(
        self,
        query: str,
        *,
        scopes: Sequence[str] = (),
        mode: recall_op.Mode = "blended",
        sort: recall_op.Sort = "score",
        kind: recall_op.Kind = "all",
        limit: int = 10,
        include_related: bool = False,
        now: datetime | None = None,
    ) -> list[recall_op.RecallHit]:
        """Recall notes for a question (docs/agents.md). Not counted as a use: the same
        question returns the same order until the vault or the uses change."""
        from vaultmem.core.secrets import compile_patterns
        from vaultmem.memory import recall as recall_op
        from vaultmem.memory import usage

        moment = now or datetime.now(UTC)
        with self._reading() as con:
            return recall_op.recall(
                con,
                query,
                root=self.root,
                managed_folder=self.config.managed_folder,
                scopes=recall_op.parse_scopes(scopes),
                mode=mode,
                sort=sort,
                kind=kind,
                limit=limit,
                include_related=include_related,
                now=moment,
                usage_counts=usage.decayed_uses(self.config.state_dir, moment),
                k1=self.config.bm25_k1,
                b=self.config.bm25_b,
                patterns=compile_patterns(self.config.secret_patterns),
            )

    def read(
        self,
        name: str,
        *,
        max_bytes: int = READ_MAX_BYTES,
        offset: int = 0,
        now: datetime | None = None,
    ) -> reading.NoteText:
        """`NOTE[#Heading|#^block]`'s text from its file, redacted, in pieces of `max_bytes`
        (docs/agents.md). Counts as a use of the note."""
        from vaultmem.core.secrets import compile_patterns
        from vaultmem.memory import usage
        from vaultmem.query import reading

        patterns = compile_patterns(self.config.secret_patterns)
        if self.config.index_path.exists():
            with self._reading() as con:
                text = reading.read_text(
                    self.config, con, name, max_bytes=max_bytes, offset=offset, patterns=patterns
                )
        else:
            text = reading.read_text(
                self.config, None, name, max_bytes=max_bytes, offset=offset, patterns=patterns
            )
        if text.id is not None and offset == 0:
            usage.record(self.config.state_dir, [text.id], _stamp(now))
        return text

    def recent(
        self,
        *,
        since: datetime | None = None,
        kind: reading.Kind = "all",
        limit: int = 20,
    ) -> list[reading.RecentNote]:
        """Notes by file modification time, newest first (what changed while you were away)."""
        from vaultmem.query import reading

        with self._reading() as con:
            return reading.recent(con, since=since, kind=kind, limit=limit)

    def used(self, name: str, *, now: datetime | None = None) -> catalog.NoteRef:
        """Record that a note or topic (by key, id, path, title or alias) helped: one use."""
        from vaultmem.memory import usage

        with self._reading() as con:
            ref = self._find_note(con, name)
        usage.record(self.config.state_dir, [ref.id], _stamp(now))
        return ref

    def context(
        self,
        *,
        project_dir: Path | None = None,
        session: str | None = None,
        scopes: Sequence[str] = CONTEXT_SCOPES,
        per_scope: int = CONTEXT_PER_SCOPE,
        budget_chars: int = CONTEXT_BUDGET_CHARS,
        now: datetime | None = None,
    ) -> context_block.ContextBlock:
        """The `<vaultmem-memory>` block (docs/agents.md) for the project of `project_dir`
        (default `working_dir`, else the process's working directory). Not counted as a use.

        In `scopes`, a bare `project` means that project (never another's), a bare `session`
        the session named by `session` (left out when none is), and `SCOPE:ID` exactly that
        one. `block.text` never exceeds `budget_chars`."""
        from vaultmem.core.secrets import compile_patterns
        from vaultmem.memory import context as context_block
        from vaultmem.memory import recall as recall_op
        from vaultmem.memory import usage

        moment = now or datetime.now(UTC)
        project = self.project(project_dir)
        specs = context_block.bind_scopes(
            recall_op.parse_scopes(scopes), project=project.scope_id, session=session
        )
        with self._reading() as con:
            return context_block.build_context(
                con,
                scopes=specs,
                managed_folder=self.config.managed_folder,
                root=self.root,
                per_scope=per_scope,
                budget_chars=budget_chars,
                now=moment,
                usage_counts=usage.decayed_uses(self.config.state_dir, moment),
                patterns=compile_patterns(self.config.secret_patterns),
            )

    def write_context(
        self,
        target: context_block.Target,
        *,
        project_dir: Path | None = None,
        session: str | None = None,
        scopes: Sequence[str] = CONTEXT_SCOPES,
        per_scope: int = CONTEXT_PER_SCOPE,
        budget_chars: int = CONTEXT_BUDGET_CHARS,
        now: datetime | None = None,
    ) -> context_block.ContextWrite:
        """Write the block of the project of `project_dir` between vaultmem's markers into a
        provider's file of that project (outside the vault); the rest is kept byte for byte."""
        from vaultmem.memory import context as context_block

        folder = context_block.check_project_dir(project_dir or self.working_dir or Path.cwd())
        path = context_block.target_path(target, folder)
        block = self.context(
            project_dir=folder,
            session=session,
            scopes=scopes,
            per_scope=per_scope,
            budget_chars=budget_chars,
            now=now,
        )
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
        now: datetime | None = None,
    ) -> memory.StoreResult:
        """Append an observation to a topic (created when new); see `memory.store`. A project
        write without a scope id belongs to the project of `cwd` (default `working_dir`, else
        the process's working directory): `identity.identify_project`."""
        from vaultmem.memory import topic_store as memory

        result, published = memory.store(
            self.config,
            key,
            text,
            scope=scope,
            scope_id=scope_id,
            type=type,
            tags=tags,
            source=source,
            cwd=cwd or self.working_dir,
            now=now,
        )
        self._publish(published)
        return dataclasses.replace(result, phases=(*result.phases, "indexed"))

    def project(self, cwd: Path | None = None) -> identity.ProjectIdentity:
        """The project a write without a scope id from `cwd` (default `working_dir`, else the
        process's working directory) goes to, and the rule that named it."""
        from vaultmem.memory import identity

        return identity.identify_project(cwd or self.working_dir or Path.cwd(), self.config)

    def write_generated(self, *, git: bool = False) -> list[str]:
        """The managed folder's generated files (the Bases view; with `git`, .gitattributes and
        .vaultmem/.gitignore), each written only when its bytes change."""
        from vaultmem.memory import topic_store as memory

        return memory.write_generated(self.config, git=git)

    def correct(
        self,
        key: str,
        text: str,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        source: str | None = None,
        now: datetime | None = None,
    ) -> memory.StoreResult:
        """Supersede a topic's latest observation; the old one stays visible."""
        from vaultmem.memory import topic_store as memory

        result, published = memory.correct(
            self.config, key, text, scope=scope, scope_id=scope_id, source=source, now=now
        )
        self._publish(published)
        return dataclasses.replace(result, phases=(*result.phases, "indexed"))

    def forget(
        self,
        key_or_id: str,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        now: datetime | None = None,
    ) -> memory.ForgetResult:
        """Move a topic to the managed folder's `.trash/` and drop it from the index."""
        from vaultmem.memory import topic_store as memory

        result, published = memory.forget(
            self.config, key_or_id, scope=scope, scope_id=scope_id, now=now
        )
        self._publish(published)
        return result

    def get(
        self,
        key_or_id: str,
        *,
        scope: str | None = None,
        scope_id: str | None = None,
        include_expired: bool = False,
    ) -> memory.TopicView:
        """One topic read from its file (counts as a use); expired topics are not found."""
        from vaultmem.memory import topic_store as memory

        return memory.get(
            self.config,
            key_or_id,
            scope=scope,
            scope_id=scope_id,
            include_expired=include_expired,
        )

    def prune(self, *, apply: bool = False, now: datetime | None = None) -> memory.PruneResult:
        """Topics past their retention; `apply` moves them to `.trash/`."""
        from vaultmem.memory import topic_store as memory

        result, published = memory.prune(self.config, apply=apply, now=now)
        self._publish(published)
        return result

    def relate(
        self, a: str, b: str, *, type: str = "relates_to", propose: bool = False
    ) -> relations.Edge:
        """Record a person's edge A -[type]-> B in the decisions note; `propose`: an agent's
        proposal (status proposed) that a person accepts or rejects."""
        from vaultmem.memory import relations

        if propose:
            edge, proposed = relations.propose(self.config, a, b, type)
            if proposed is not None:
                self._publish(proposed)
            return edge
        edge, published = relations.relate(self.config, a, b, type)
        self._publish(published)
        return edge

    def edges(self, *, status: str | None = None, stale: bool = False) -> list[relations.Edge]:
        """Every edge (link, human, suggested) with its status."""
        from vaultmem.memory import relations

        return relations.edges(self.config, status=status, stale_only=stale)

    def accept(self, edge: str) -> relations.Edge:
        from vaultmem.memory import relations

        accepted, published = relations.accept(self.config, edge)
        self._publish(published)
        return accepted

    def reject(self, edge: str) -> relations.Edge:
        from vaultmem.memory import relations

        rejected, published = relations.reject(self.config, edge)
        self._publish(published)
        return rejected

    def _publish(self, published: Published) -> None:
        """Bring the index up to date for files a write already published into the vault."""
        if not published.paths:
            return
        from vaultmem.index.reconcile import reconcile

        try:
            reconcile(self.config, paths=list(published.paths))
        # The files are published, so whatever failed (a lock, DuckDB, the disk, a bug) the
        # caller must learn that the vault is right, the index stale, and that a retry would
        # apply the change twice.
        except Exception as error:
            raise PartialWriteError(
                f"The vault was changed ({published.what}) but updating the index failed: "
                f"{type(error).__name__}: {error}. Phases done: {', '.join(published.phases)}. "
                "Do not retry: the change is already saved and a retry would apply it twice.",
                phases_done=list(published.phases),
            ) from error

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
            raise InvalidArgumentError(f"--format {format!r}: choose dir, tar.gz or zip.")
        from vaultmem.okf import export as okf_export

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

    def export_parquet(self, out: str | Path) -> ParquetExport:
        """Write the index's documented tables as Parquet, each row with the vault's id (one is
        written into the config first when it has none, so every clone agrees on it)."""
        from vaultmem.core.config import ensure_vault_id
        from vaultmem.storage.parquet_export import export_parquet

        self.config = ensure_vault_id(self.config)
        assert self.config.vault_id is not None
        return export_parquet(self.config.index_path, self.root, self.config.vault_id, Path(out))

    def import_okf(
        self,
        source: str | Path,
        *,
        scope: str,
        scope_id: str | None = None,
        conflict: str = "skip",
        dry_run: bool = False,
    ) -> okf_ingest.ImportReport:
        """Import an OKF bundle (folder, .tar.gz or .zip) as topics of one scope. A project
        import without a scope id goes to the project of `working_dir` (else the process's
        working directory), as `store` does (`identity.resolve_scope_id`)."""
        from vaultmem.memory import identity, relations
        from vaultmem.okf import ingest as okf_ingest

        cwd = self.working_dir or Path.cwd()
        scope_id = identity.resolve_scope_id(scope, scope_id, cwd, self.config)
        report, published = okf_ingest.import_bundle(
            self.config,
            Path(source),
            scope=scope,
            scope_id=scope_id,
            conflict=conflict,  # type: ignore[arg-type]
            dry_run=dry_run,
        )
        self._publish(published)
        if not dry_run:
            # The bundle's See Also entries become this vault's decisions, so the next
            # `relate` of an imported topic keeps them (they are edges here too).
            written = [t["path"] for t in report.topics if t["action"] != "skipped"]
            adopted = relations.adopt_see_also(self.config, written)
            if adopted is not None:
                self._publish(adopted)
        return report

    @staticmethod
    def validate_okf(bundle: str | Path) -> okf_validate.ValidationReport:
        """Check a bundle folder against OKF v0.2 (needs no vault)."""
        root = Path(bundle)
        if not root.is_dir():
            raise NotFoundError(f"{root} is not a folder.", hint="Pass an exported bundle folder.")
        from vaultmem.okf import validate as okf_validate

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


_PASS_THROUGH = frozenset({"close", "watch", "init", "root"})
"""Public names `_redacting` leaves alone: no result (`close`, `watch`, whose events name
paths the scan already judged), a `Vault` (`init`) or the vault's own folder (`root`)."""

_JUDGES_ITSELF = frozenset({"search"})
"""Public methods whose results `_redacting` leaves to the method (their errors it still
redacts): `search` builds hits from index rows only, and judges them itself (`Vault.search`);
the whole redaction of its ~10 hits was a third of a warm search."""


def _redacting(cls: type[Vault]) -> type[Vault]:
    """Wrap every public method of `cls` so its result and its errors pass
    `core.secrets.redact_value` (built-in and configured patterns) on the way out."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") or name in _PASS_THROUGH:
            continue
        if isinstance(attr, staticmethod):
            setattr(cls, name, staticmethod(_redacted(attr.__func__, instance=False)))
        elif callable(attr):
            setattr(cls, name, _redacted(attr, instance=True))
    return cls


def _redacted(method: Callable[..., Any], *, instance: bool) -> Callable[..., Any]:
    judges_itself = method.__name__ in _JUDGES_ITSELF

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from vaultmem.core.errors import VaultmemError
        from vaultmem.core.secrets import redact_value

        patterns = args[0]._patterns() if instance else ()
        try:
            result = method(*args, **kwargs)
        except VaultmemError as error:
            # A message names what the caller asked for or what a file holds
            error.message = redact_value(error.message, patterns)
            error.hint = redact_value(error.hint, patterns)
            if isinstance(getattr(error, "candidates", None), list):
                error.candidates = redact_value(error.candidates, patterns)  # type: ignore[attr-defined]
            raise
        return result if judges_itself else redact_value(result, patterns)

    return wrapper


def _stamp(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_redacting(Vault)

"""Reconcile: make the index equal to the vault, with work proportional to what changed.

The pipeline is fingerprint → plan → read → parse → resolve → apply:

1. Scan the mapped folders for (path, size, mtime_ns); nothing is read yet.
2. `plan.plan_changes` compares those with the index: new, suspect (fingerprint moved), gone.
3. Read and hash only new and suspect files. A suspect whose hash did not change was merely
   touched: its fingerprint is updated, nothing is parsed. New files whose bytes match exactly
   one vanished note are renames: the note keeps its id and the move is journalled.
4. Parse what really changed, on both cores when the batch is large (`parallel`).
5. Resolve links. Every link of a parsed note is resolved; of the other notes only the links
   that *can* resolve differently now: those whose name key matches a file that appeared or
   disappeared, and those pointing at a note whose headings may have changed.
6. Apply everything in one DuckDB transaction with bulk deletes and inserts.

The index file is opened twice and briefly: read-only to load the state, read-write for the
transaction. Parsing happens with no connection open, so readers are locked out only while
rows are written. A build from nothing writes `index.duckdb.tmp` and renames it over the old
file, so a crash during a rebuild leaves the previous index in place. A crash during an
incremental transaction is rolled back by DuckDB's WAL on the next open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from vaultmem import __version__
from vaultmem.config import Config
from vaultmem.files.lock import writer_lock
from vaultmem.files.scan import (
    Fingerprint,
    content_hash,
    is_eligible_file,
    read_note,
    scan_paths,
    scan_vault,
)
from vaultmem.index.journal import append_renames, read_renames
from vaultmem.index.parallel import analyse_all
from vaultmem.index.plan import IndexedNote, assign_ids, pair_renames, plan_changes
from vaultmem.memory.topics import read_topic
from vaultmem.models import Block, Heading, Link, ParsedNote, Problem
from vaultmem.note.links import LinkResolver, file_name_key, resolve_link
from vaultmem.note.parse import PARSER_VERSION
from vaultmem.search import vectors
from vaultmem.search.tokenizer import TOKENIZER_VERSION
from vaultmem.storage import search_rows, store
from vaultmem.storage.rows import NOTE_TABLES, NoteBatches, NoteRecord

Progress = Callable[[int, int], None]

_SCAN_CODES = ("config_folder_missing", "symlink_refused")
_READ_CODES = ("file_vanished", "file_unstable", "file_unreadable")


def index_versions(config: Config) -> dict[str, str]:
    """What the index records in `meta`; any difference means rebuild.

    Besides the code's versions this holds a digest of the configuration that shapes rows
    (mappings, managed folder, exclusions, size cap): a changed mapping moves unchanged notes
    to another scope, which only a rebuild gets right.
    """
    shape = json.dumps(
        [
            [[m.folder, m.scope, m.scope_id] for m in config.mappings],
            config.managed_folder,
            list(config.exclude),
            config.max_note_bytes,
        ]
    )
    return {
        "parser_version": str(PARSER_VERSION),
        "tokenizer_version": f"{TOKENIZER_VERSION}-{config.search_language}",
        "vaultmem_version": __version__,
        "config_digest": hashlib.blake2b(shape.encode(), digest_size=8).hexdigest(),
        "embedding_model": vectors.INDEX_ID if config.semantic else "none",
    }


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What a reconcile did. `warnings` carries recoveries (a damaged index moved aside)."""

    mode: str
    added: int
    changed: int
    removed: int
    renamed: int
    unchanged: int
    touched: int
    problems: int
    notes: int
    duration_s: float
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def reconcile(
    config: Config,
    *,
    rebuild: bool = False,
    paths: Iterable[str] | None = None,
    progress: Progress | None = None,
    lock_timeout_s: float = 30.0,
) -> ReconcileReport:
    """Bring the index up to date with the vault.

    `rebuild` builds from nothing; `paths` (vault-relative files or folders, from the watcher)
    limits the work to those paths instead of walking the vault.
    """
    with writer_lock(config.state_dir, timeout_s=lock_timeout_s):
        return _Run(config, progress).run(rebuild=rebuild, paths=paths)


@dataclass(slots=True)
class _State:
    notes: dict[str, IndexedNote]
    files: set[str]


class _Run:
    """One reconcile: holds the run's intermediate results so each step stays small."""

    def __init__(self, config: Config, progress: Progress | None) -> None:
        self.config = config
        self.progress = progress
        self.warnings: list[str] = []
        self.started = time.perf_counter()
        self.started_at = datetime.now(UTC).replace(tzinfo=None)

    # -- state ------------------------------------------------------------------------------

    def load_state(self) -> _State | None:
        """The index's current contents, or None when it must be built from nothing."""
        path = self.config.index_path
        if not path.exists():
            return None
        try:
            con = store.connect(path, read_only=True)
        except store.CorruptIndex as error:
            self._set_aside(error)
            return None
        try:
            if not store.meta_matches(con, index_versions(self.config)):
                self.warnings.append(
                    "The index was built by another version or configuration; rebuilt it."
                )
                return None
            rows = con.execute(
                "SELECT path, id, size, mtime_ns, content_hash, claimed_id FROM notes"
            ).fetchall()
            files = {p for (p,) in con.execute("SELECT path FROM files").fetchall()}
        except duckdb.Error as error:
            con.close()
            self._set_aside(error)
            return None
        con.close()
        return _State({r[0]: IndexedNote(*r) for r in rows}, files)

    def _set_aside(self, error: BaseException) -> None:
        moved = store.move_aside(self.config.index_path)
        self.warnings.append(f"The index could not be read ({error}); moved it to {moved.name}.")

    # -- the run ------------------------------------------------------------------------------

    def run(self, *, rebuild: bool, paths: Iterable[str] | None) -> ReconcileReport:
        state = None if rebuild else self.load_state()
        if state is None:
            return self.build(mode="rebuild" if rebuild else "full")
        if paths is None:
            scan = scan_vault(self.config)
            scanned: list[Fingerprint] = list(scan.notes)
            files = set(scan.files)
            scope_problems: list[Problem] | None = list(scan.problems)
            indexed = state.notes
            mode = "full"
        else:
            scanned, files, indexed = self.scan_subset(paths, state)
            scope_problems = None
            mode = "paths"
        return self.incremental(state, indexed, scanned, files, scope_problems, mode)

    def scan_subset(
        self, paths: Iterable[str], state: _State
    ) -> tuple[list[Fingerprint], set[str], dict[str, IndexedNote]]:
        """For the watcher: look only at the named paths (a folder stands for its contents)."""
        wanted = {p.strip("/") for p in paths if p.strip("/")}
        prefixes = tuple(p + "/" for p in wanted)
        candidates = set(wanted)
        candidates.update(p for p in state.files if p.startswith(prefixes))
        root = self.config.root
        for folder in wanted:
            full = root / folder
            if full.is_dir() and not full.is_symlink():
                candidates.update(
                    p.relative_to(root).as_posix() for p in full.rglob("*") if p.is_file()
                )
        present, _gone = scan_paths(self.config, sorted(candidates))
        files = set(state.files)
        for path in candidates:
            full = root / path
            if full.is_file() and is_eligible_file(self.config, path):
                files.add(path)
            else:
                files.discard(path)
        indexed = {p: n for p, n in state.notes.items() if p in candidates}
        return present, files, indexed

    def build(self, *, mode: str) -> ReconcileReport:
        """Index the whole vault into a fresh file, then swap it in."""
        scan = scan_vault(self.config)
        tmp = self.config.index_path.with_name(self.config.index_path.name + ".tmp")
        store.remove_index(tmp)
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        empty = _State({}, set())
        report = self._apply_to(
            tmp,
            empty,
            {},
            list(scan.notes),
            set(scan.files),
            list(scan.problems),
            mode,
            create=True,
        )
        # Swap atomically: a reader never finds the index missing. Only the old file's WAL goes
        # first, so that it can never be replayed onto the new file.
        self.config.index_path.with_name(self.config.index_path.name + ".wal").unlink(
            missing_ok=True
        )
        tmp.replace(self.config.index_path)
        return report

    def incremental(
        self,
        state: _State,
        indexed: dict[str, IndexedNote],
        scanned: list[Fingerprint],
        files: set[str],
        scan_problems: list[Problem] | None,
        mode: str,
    ) -> ReconcileReport:
        return self._apply_to(
            self.config.index_path,
            state,
            indexed,
            scanned,
            files,
            scan_problems,
            mode,
            create=False,
        )

    # -- the work -----------------------------------------------------------------------------

    def _apply_to(self, *args: Any, **kwargs: Any) -> ReconcileReport:
        """Run `_apply` with a private folder for the workers' postings files."""
        postings_dir = Path(tempfile.mkdtemp(prefix="vaultmem-postings-"))
        try:
            return self._apply(*args, postings_dir=postings_dir, **kwargs)
        finally:
            shutil.rmtree(postings_dir, ignore_errors=True)

    def _apply(
        self,
        index_path: Path,
        state: _State,
        indexed: dict[str, IndexedNote],
        scanned: list[Fingerprint],
        files: set[str],
        scan_problems: list[Problem] | None,
        mode: str,
        *,
        create: bool,
        postings_dir: Path,
    ) -> ReconcileReport:
        config = self.config
        changes = plan_changes(indexed, scanned)
        problems: list[Problem] = []
        processed_paths: set[str] = {n.path for n in changes.gone}
        contents: dict[str, tuple[bytes, str, Fingerprint]] = {}
        touched: list[Fingerprint] = []
        kept_on_failure: list[str] = []
        for fp in (*changes.new, *changes.suspect):
            processed_paths.add(fp.path)
            data = read_note(config, fp.path)
            if isinstance(data, Problem):
                problems.append(data)
                if fp.path in indexed:
                    kept_on_failure.append(fp.path)  # keep the old rows until it reads cleanly
                continue
            digest = content_hash(data)
            known = indexed.get(fp.path)
            if known is not None and known.content_hash == digest:
                touched.append(fp)
            else:
                contents[fp.path] = (data, digest, fp)

        gone = [n for n in changes.gone]
        new_hashes = {p: c[1] for p, c in contents.items() if p not in indexed}
        renames = pair_renames(gone, new_hashes)

        analysed, postings_files = analyse_all(
            [(p, c[0]) for p, c in sorted(contents.items())],
            postings_dir,
            max_bytes=config.max_note_bytes,
            progress=self.progress,
            language=config.search_language,
        )
        parsed = {result.note.path: result for result, _ in analysed}
        documents = {result.note.path: docs for result, docs in analysed}
        if config.semantic:
            vectors.embedder()  # the model loads now: a missing extra fails before any write
        for result, _ in analysed:
            problems.extend(result.problems)
        # A managed topic names its own id, type and times (frontmatter or comment header).
        topics = {
            path: read_topic(path, contents[path][0].decode("utf-8", "replace"))
            for path in parsed
            if config.is_managed(path)
        }

        # Ids: a pure function of every live note's claim and the journal.
        journal = read_renames(config.state_dir)
        new_renames = [(old.id, old.path, new) for new, old in sorted(renames.items())]
        journal.update({new: note_id for note_id, _, new in new_renames})
        claims: dict[str, str | None] = {}
        for path in changes.unchanged:
            claims[path] = indexed[path].claimed_id
        for fp in touched:
            claims[fp.path] = indexed[fp.path].claimed_id
        for path in kept_on_failure:
            claims[path] = indexed[path].claimed_id
        for path in parsed:
            claims[path] = topics[path].id if path in topics else None
        if mode == "paths":
            # Notes outside the watched paths keep their ids but still take part in clashes.
            for path, known in state.notes.items():
                if path not in indexed:
                    claims.setdefault(path, known.claimed_id)
        ids = assign_ids(claims, journal)
        all_notes = {**state.notes, **indexed}
        id_changes = {
            all_notes[p].id: ids[p]
            for p in ids
            if p in all_notes and p not in parsed and all_notes[p].id != ids[p]
        }

        added_files = files - state.files
        removed_files = state.files - files
        affected_keys = {file_name_key(p) for p in added_files | removed_files}
        resolver = LinkResolver(sorted(files))

        removed_ids = {n.id for n in changes.gone} | {indexed[p].id for p in parsed if p in indexed}

        if new_renames:
            append_renames(config.state_dir, new_renames)

        con = store.connect(index_path, read_only=False)
        try:
            con.execute("BEGIN TRANSACTION")
            if create:
                store.create_schema(con, index_versions(config))
            headings_cache = _HeadingsCache(con, ids, parsed)
            headings_cache.prefetch(
                resolver.resolve(link.target, path) if link.target else path
                for path, result in parsed.items()
                for link in result.note.links
                if link.subpath
            )
            batches = NoteBatches()
            for path, result in parsed.items():
                note = result.note
                resolutions = [
                    resolve_link(link, path, resolver, headings_cache.get) for link in note.links
                ]
                scope = config.scope_of(path)
                assert scope is not None, path  # scan yields mapped notes only
                fp = contents[path][2]
                batches.add_note(
                    NoteRecord(
                        note=note,
                        id=ids[path],
                        scope=scope[0],
                        scope_id=scope[1],
                        managed=config.is_managed(path),
                        size=fp.size,
                        mtime_ns=fp.mtime_ns,
                        content_hash=contents[path][1],
                        claimed_id=claims[path],
                        resolutions=resolutions,
                        target_ids=[ids.get(r.path) if r.path else None for r in resolutions],
                        documents=documents[path],
                        topic=topics.get(path),
                    )
                )
            for problem in problems:
                batches.add_problem(problem)
            if scan_problems is not None:
                for problem in scan_problems:
                    batches.add_problem(problem)

            removed_df = (
                search_rows.document_frequencies(con, removed_ids) if not create else Counter()
            )
            for table in NOTE_TABLES:
                column = (
                    "id" if table == "notes" else "source_id" if table == "links" else "note_id"
                )
                store.delete_where_in(con, table, column, sorted(removed_ids))
            # Before the batches load: they hold this run's problems for the same paths.
            self._replace_problems(con, processed_paths, scan_problems is not None)
            self._apply_id_changes(con, id_changes)
            self._reresolve(
                con,
                affected_keys,
                set(parsed) | {n.path for n in changes.gone},
                id_changes,
                resolver,
                headings_cache,
                ids,
            )
            for batch in batches.tables.values():
                store.load(con, batch)
            added_df = search_rows.load_postings(
                con, postings_files, [ids[result.note.path] for result, _ in analysed], create
            )
            if config.semantic:  # one vector per search document of the notes parsed now
                vectors.index_notes(con, [ids[result.note.path] for result, _ in analysed])
            if create:
                search_rows.recount_terms(con, None)
            else:
                added_df.subtract(removed_df)
                search_rows.recount_terms(con, added_df)
            if touched:
                touch = store.Batch(
                    "t", ["path", "size", "mtime_ns"], ["VARCHAR", "BIGINT", "BIGINT"]
                )
                for fp in touched:
                    touch.add(fp.path, fp.size, fp.mtime_ns)
                con.execute(
                    "UPDATE notes SET size = u.size, mtime_ns = u.mtime_ns FROM (SELECT "
                    "unnest($1::VARCHAR[]) AS path, unnest($2::BIGINT[]) AS size, "
                    "unnest($3::BIGINT[]) AS mtime_ns) u WHERE notes.path = u.path",
                    touch.data,
                )
            store.delete_where_in(con, "files", "path", sorted(removed_files))
            file_rows = store.new_batch("files")
            for path in sorted(added_files):
                file_rows.add(path, file_name_key(path), path.lower().endswith(".md"))
            store.load(con, file_rows)
            (problem_count,) = con.execute("SELECT count(*) FROM problems").fetchone() or (0,)
            (note_count,) = con.execute("SELECT count(*) FROM notes").fetchone() or (0,)
            renamed = len(renames)
            report = ReconcileReport(
                mode=mode,
                added=sum(1 for p in parsed if p not in indexed) - renamed,
                changed=sum(1 for p in parsed if p in indexed),
                removed=len(changes.gone) - renamed,
                renamed=renamed,
                # Touched notes are unchanged (same bytes); `touched` counts them again.
                unchanged=len(changes.unchanged) + len(kept_on_failure) + len(touched),
                touched=len(touched),
                problems=int(problem_count),
                notes=int(note_count),
                duration_s=time.perf_counter() - self.started,
                warnings=tuple(self.warnings),
            )
            runs = store.new_batch("reconcile_runs")
            runs.add(
                self.started_at,
                report.duration_s * 1000,
                mode,
                report.added,
                report.changed,
                report.removed,
                report.renamed,
                report.unchanged,
                report.problems,
            )
            store.load(con, runs)
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error):  # the failure may have ended it already
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()
        return report

    def _apply_id_changes(self, con: store.Connection, id_changes: Mapping[str, str]) -> None:
        """Rare: a clash resolved differently moved an unchanged note to another id."""
        if not id_changes:
            return
        old, new = list(id_changes), list(id_changes.values())
        mapping = "(SELECT unnest($1::VARCHAR[]) AS old, unnest($2::VARCHAR[]) AS new) m"
        for table in NOTE_TABLES:
            column = "id" if table == "notes" else "source_id" if table == "links" else "note_id"
            con.execute(
                f"UPDATE {table} SET {column} = m.new FROM {mapping} WHERE {column} = m.old",
                [old, new],
            )
        con.execute(
            f"UPDATE links SET target_id = m.new FROM {mapping} WHERE target_id = m.old", [old, new]
        )
        search_rows.rekey_postings(con, new)

    def _reresolve(
        self,
        con: store.Connection,
        affected_keys: set[str],
        changed_targets: set[str],
        id_changes: Mapping[str, str],
        resolver: LinkResolver,
        headings: _HeadingsCache,
        ids: Mapping[str, str],
    ) -> None:
        """Re-resolve exactly the stored links whose answer can have changed."""
        if not (affected_keys or changed_targets or id_changes):
            return
        rows = con.execute(
            "SELECT l.source_id, l.ord, l.target, l.subpath, n.path, l.target_path, "
            "l.target_id, l.subpath_found FROM links l JOIN notes n ON n.id = l.source_id "
            "WHERE l.name_key IN (SELECT unnest($1::VARCHAR[])) "
            "OR l.target_path IN (SELECT unnest($2::VARCHAR[]))",
            [sorted(affected_keys), sorted(changed_targets)],
        ).fetchall()
        update = store.Batch(
            "u",
            ["source_id", "ord", "target_path", "target_id", "subpath_found"],
            ["VARCHAR", "INTEGER", "VARCHAR", "VARCHAR", "BOOLEAN"],
        )
        headings.prefetch(
            resolver.resolve(target, source_path) if target else source_path
            for _, _, target, subpath, source_path, *_ in rows
            if subpath
        )
        for source_id, ord_, target, subpath, source_path, old_path, old_id, old_found in rows:
            link = Link(target, subpath, None, False, 0, "wikilink", None, "")
            res = resolve_link(link, source_path, resolver, headings.get)
            target_id = ids.get(res.path) if res.path else None
            if (res.path, target_id, res.subpath_found) != (old_path, old_id, old_found):
                update.add(source_id, ord_, res.path, target_id, res.subpath_found)
        if len(update):
            con.execute(
                "UPDATE links SET target_path = u.target_path, target_id = u.target_id, "
                "subpath_found = u.subpath_found FROM (SELECT unnest($1::VARCHAR[]) AS source_id, "
                "unnest($2::INTEGER[]) AS ord, unnest($3::VARCHAR[]) AS target_path, "
                "unnest($4::VARCHAR[]) AS target_id, unnest($5::BOOLEAN[]) AS subpath_found) u "
                "WHERE links.source_id = u.source_id AND links.ord = u.ord",
                update.data,
            )

    def _replace_problems(self, con: store.Connection, paths: set[str], full_scan: bool) -> None:
        """Drop the problems this run re-examined; the batch inserted after holds the new ones."""
        codes = list(_READ_CODES) + (list(_SCAN_CODES) if full_scan else [])
        con.execute(
            "DELETE FROM problems WHERE path IN (SELECT unnest($1::VARCHAR[])) "
            "OR code IN (SELECT unnest($2::VARCHAR[]))",
            [sorted(paths), codes],
        )


class _HeadingsCache:
    """Headings and blocks of link targets: from the fresh parse, else from the index."""

    def __init__(
        self, con: store.Connection, ids: Mapping[str, str], parsed: Mapping[str, ParsedNote]
    ) -> None:
        self.con = con
        self.ids = ids
        self.parsed = parsed
        self.cache: dict[str, tuple[Sequence[Heading], Sequence[Block]] | None] = {}

    def get(self, path: str) -> tuple[Sequence[Heading], Sequence[Block]] | None:
        if path in self.parsed:
            note = self.parsed[path].note
            return note.headings, note.blocks
        if path not in self.ids:
            return None  # an attachment or an unmapped note: no headings known
        if path not in self.cache:
            self.prefetch([path])
        return self.cache[path]

    def prefetch(self, paths: Iterable[str | None]) -> None:
        """Load the headings and blocks of many indexed notes in two queries, not 3 per note."""
        wanted = sorted(
            {p for p in paths if p and p in self.ids and p not in self.parsed} - set(self.cache)
        )
        if not wanted:
            return
        found: dict[str, tuple[list[Heading], list[Block]]] = {}
        for path, level, text, line, anchor in self.con.execute(
            "SELECT n.path, h.level, h.text, h.line, h.anchor FROM headings h "
            "JOIN notes n ON n.id = h.note_id WHERE n.path IN (SELECT unnest($1::VARCHAR[])) "
            "ORDER BY n.path, h.ord",
            [wanted],
        ).fetchall():
            found.setdefault(path, ([], []))[0].append(Heading(level, text, line, anchor))
        for path, block_id, line in self.con.execute(
            "SELECT n.path, b.block_id, b.line FROM blocks b JOIN notes n ON n.id = b.note_id "
            "WHERE n.path IN (SELECT unnest($1::VARCHAR[]))",
            [wanted],
        ).fetchall():
            found.setdefault(path, ([], []))[1].append(Block(block_id, line))
        known = {
            p
            for (p,) in self.con.execute(
                "SELECT path FROM notes WHERE path IN (SELECT unnest($1::VARCHAR[]))", [wanted]
            ).fetchall()
        }
        for path in wanted:
            self.cache[path] = found.get(path, ([], [])) if path in known else None

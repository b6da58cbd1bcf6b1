"""Reconcile: make the index equal to the vault, with work proportional to what changed.

The run is a sequence of small typed steps; each takes the previous steps' values and returns
a frozen value, so each can be read (and tested) on its own. The pure ones are module functions
of explicit inputs (`is_noop`, `outcomes`, `identities`, `link_work`); `_Run`, the runner,
sequences them and does the I/O around them (the walk, the workers, the lock, the journal,
the transaction):

1. `Survey`: the stat walk, (path, size, mtime_ns) of every note and the list of every file,
   and its digest. Nothing is read yet, but the managed folder's sync-conflict copies and the
   topics whose fingerprint moved since they were last found free of conflict markers
   (`conflicts.unite_walked`; a per-path run: `unite_paths`): a copy found is united into its
   topic before the run goes on, and the walk made again. The steady state (`steady`): when
   the digest equals the last survey the index agreed with and the index is still that file
   (`storage.last_survey`), nothing changed and the run ends without opening the index (nor
   importing DuckDB). Otherwise, with the index's `IndexState` (one read of `notes`, `files`
   and the scan's problems), `plan.plan_changes` says what is new, suspect (fingerprint moved)
   and gone. Nothing changed: the run ends here, with no lock taken and nothing written but
   the last survey.
2. `Preparation`: workers (`parallel`) read, hash, parse, resolve and format the rows of every
   new and suspect note, chunk by chunk, into staging files; the main process keeps one small
   record per note. A suspect whose bytes did not change was merely *touched*. No lock is held
   meanwhile: readers and `store` go on while a large vault parses.
3. Under the writer lock, `_settle`: if another writer committed since the state was read,
   survey and plan again, and prepare here whatever the workers' results no longer cover (a
   file that changed after its worker read it). Otherwise the preparation stands as it is.
4. `Outcomes`: parsed, touched and unreadable notes; renames (a new file with exactly the bytes
   of one vanished note keeps that note's id and is journalled).
5. `Identities`: every live note's id, a pure function of claims and the rename journal.
   When no note came or went, no claim moved and the journal is the one the stored ids came
   from (its digest in `meta`), the stored ids stand and nothing is assigned again.
6. `LinkWork`: which stored links can resolve differently now: those whose name key matches
   a file that appeared or disappeared, and those pointing at a note that changed.
7. The write, in one DuckDB transaction (every statement in `storage.index_writes`): delete
   the changed and gone notes' rows, bulk-load the staged files (numbers joined to ids), check
   the new links' heading subpaths, re-resolve the affected stored links, update terms.
   A one-note edit touches that note's rows only: its postings go by integer `note_key`, and
   `terms.df` moves by the note's own delta (its old documents' terms out, the new ones in).
   After the commit, the walk becomes the last survey (when every note read cleanly).

A build from nothing writes `index.rebuild.duckdb` and renames it over the old file, so a crash
during a rebuild leaves the previous index in place. A crash during an incremental transaction
is rolled back by DuckDB's WAL on the next open.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from vaultmem import __version__
from vaultmem.core.config import Config
from vaultmem.core.errors import IndexUnavailableError, LockedError
from vaultmem.core.models import PARSER_VERSION, TOKENIZER_VERSION, Link, Problem
from vaultmem.files.lock import writer_lock
from vaultmem.files.scan import Fingerprint, is_eligible_file, scan_paths, scan_vault
from vaultmem.index.journal import append_renames, read_renames
from vaultmem.index.plan import (
    ChangeSet,
    IndexedNote,
    IndexedNotes,
    assign_ids,
    journal_digest,
    pair_renames,
    plan_changes,
    survey_digest,
)
from vaultmem.storage.last_survey import (
    IndexToken,
    LastSurvey,
    forget_last_survey,
    index_token,
    read_last_survey,
    write_last_survey,
)

if TYPE_CHECKING:  # the workers' side loads only when a note must be parsed: not on a no-op;
    # DuckDB (storage) and the link resolver only when the index must be read: not on a no-op
    # that the last survey settles (`steady`).
    from vaultmem.index.parallel import Chunk, Prepared
    from vaultmem.note.links import LinkResolver
    from vaultmem.storage.store import Connection

Progress = Callable[[int, int], None]
Mode = Literal["full", "paths", "rebuild"]

_SCAN_CODES = ("conflict_copy", "config_folder_missing", "secret_in_name", "symlink_refused")
_READ_CODES = ("file_vanished", "file_unstable", "file_unreadable")
_HEADINGS_BATCH = 20_000
"""Target notes whose headings and blocks the subpath check reads per query (each query scans
`headings` and `blocks` whole: at 100,000 notes, 53,000 targets take 3 queries, not 19)."""
_DUCKDB_MEMORY_MB = 512
"""DuckDB's share of a reconcile's memory; loads beyond it spill to the staging folder."""
SMALL_WRITE_BYTES = 100_000
"""A change this small (the new and changed notes' bytes) is read, parsed and written with one
connection under the writer lock (`_Run.write_small`): a cold one-note edit opens DuckDB once,
not twice (each open builds a database instance: ~13 ms of CPU, ~130M instructions); the
lock is then held for the parse too, ~50 ms of mistune at most."""


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
            [list(pair) for pair in config.secret_patterns],  # rows are redacted by them
        ]
    )
    return {
        "parser_version": str(PARSER_VERSION),
        "tokenizer_version": f"{TOKENIZER_VERSION}-{config.search_language}",
        "vaultmem_version": __version__,
        "config_digest": blake2b(shape.encode(), digest_size=8).hexdigest(),
        "embedding_model": _embedding_model(config),
    }


def _embedding_model(config: Config) -> str:
    if not config.semantic:
        return "none"
    from vaultmem.search import embedding

    return embedding.INDEX_ID


class ReconcileReport(NamedTuple):
    """What a reconcile did. `warnings` carries recoveries (a damaged index moved aside).

    A named tuple like the step values below (and for the same reason); `to_dict` makes it
    render as a JSON object, not a list."""

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
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return self._asdict()


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
    limits the work to those paths instead of walking the vault. The writer lock is held only
    for the write, not while notes parse.
    """
    from vaultmem.files import state

    run = _Run(config, progress, lock_timeout_s)
    run.warnings += state.prepare(config, writing=True)  # an index left in the vault moves out
    return run.run(rebuild=rebuild, paths=None if paths is None else list(paths))


# -- the steps' values --------------------------------------------------------------------------
# Named tuples, not dataclasses: every reconcile imports this module, a no-op included, and
# building six frozen dataclasses took ~3 ms of its start-up (`dataclasses` compiles each
# class's methods); these values live for one run and never leave it.


class State(NamedTuple):
    """The index as read before deciding anything; `create` when it is built from nothing."""

    notes: IndexedNotes
    files: frozenset[str]
    scan_problems: frozenset[tuple[str, str, str]]
    problem_count: int
    token: IndexToken
    create: bool
    journal: str | None = None
    """Digest of the rename journal the stored ids were assigned with (`plan.journal_digest`)."""


class Survey(NamedTuple):
    """The stat walk: note fingerprints and every file; `problems` None in paths mode, where
    `candidates` holds the paths looked at and `indexed` the index's notes among them.
    `digest` (`plan.survey_digest`) only for a walk of the whole vault."""

    mode: Mode
    notes: tuple[Fingerprint, ...]
    files: frozenset[str]
    problems: tuple[Problem, ...] | None
    candidates: frozenset[str] | None
    indexed: IndexedNotes
    digest: str | None = None
    copies: tuple[Problem, ...] = ()
    """Paths mode: the `conflict_copy` problems of the candidates (`conflicts.path_problems`)."""


class Preparation(NamedTuple):
    """The workers' results: one record per note, and the files holding their rows."""

    by_path: dict[str, Prepared]
    staged: dict[str, list[Path]]
    postings: list[Path]
    vectors: list[Path]
    next_number: int
    spill_dir: Path
    """Where DuckDB may spill during the load: inside the run's staging folder."""


class Outcomes(NamedTuple):
    """What preparing the changed files found, against the plan."""

    changes: ChangeSet[Fingerprint]
    parsed: dict[str, Prepared]
    touched: tuple[Prepared, ...]
    failed: tuple[Prepared, ...]
    kept: tuple[str, ...]
    """Indexed notes that could not be read: their rows stay until they read cleanly."""
    renames: dict[str, IndexedNote]
    problems: tuple[Problem, ...]


class Identities(NamedTuple):
    ids: dict[str, str]
    id_changes: dict[str, str]
    """Unchanged notes whose id moved (a clash resolved differently): old id → new id."""
    new_renames: tuple[tuple[str, str, str], ...]
    removed_ids: frozenset[str]
    journal: str
    """Digest of the rename journal these ids were assigned with."""


class LinkWork(NamedTuple):
    added_files: frozenset[str]
    removed_files: frozenset[str]
    affected_keys: frozenset[str]
    changed_targets: frozenset[str]


# -- the run ----------------------------------------------------------------------------------


class _Run:
    """One reconcile: the steps in order, with the run's configuration and warnings."""

    def __init__(self, config: Config, progress: Progress | None, lock_timeout_s: float) -> None:
        self.config = config
        self.progress = progress
        self.lock_timeout_s = lock_timeout_s
        self.warnings: list[str] = []
        self.corrupt: BaseException | None = None
        self._resolver: tuple[frozenset[str], LinkResolver] | None = None
        self.started = time.perf_counter()
        self.started_at = datetime.now(UTC).replace(tzinfo=None)

    def run(self, *, rebuild: bool, paths: list[str] | None) -> ReconcileReport:
        # The index's identity before the walk: a writer that commits between the walk and
        # the state read below then shows under the lock, as one that commits later does.
        token = index_token(self.config.index_path)
        walk = None
        if paths is None:
            walk = self.walk(rebuild)
            if self.unite_conflicts(walk, None):
                walk = self.walk(rebuild)  # the united topics and the trashed copies
            if not rebuild and (steady := self.steady(walk)) is not None:
                return steady  # nothing changed since the last run: the index stays closed
        else:
            paths += self.unite_conflicts(None, paths)
        state: State | None = None
        if walk is not None and not rebuild and not self.config.semantic:
            small = self.write_small(walk, token)
            if isinstance(small, ReconcileReport):
                return small
            state = small  # too large to write at once: the state read stands
        if state is None:
            state = self.load_state(rebuild, token)
        survey = self.survey(state, paths, rebuild, walk)
        changes = plan_changes(survey.indexed, survey.notes)
        if is_noop(state, survey, changes, self.corrupt is not None or bool(self.warnings)):
            self.remember(state.token, survey, len(state.notes), state.problem_count)
            return self.report(
                survey.mode, survey, changes, None, state.problem_count, len(state.notes)
            )
        from vaultmem.index.parallel import staging_folder

        if self.config.semantic:
            from vaultmem.search import embedding

            embedding.embedder()  # the model loads now: a missing extra fails before any work
        with staging_folder() as staging:
            prep = self.prepare(changes, survey, state, staging / "a", 0)
            _check_writable(self.config)
            with writer_lock(self.config.state_dir, timeout_s=self.lock_timeout_s):
                if index_token(self.config.index_path) != state.token:
                    # Another writer committed while the notes parsed: look again, and redo
                    # here what the workers' results no longer cover.
                    state = self.load_state(rebuild)
                    survey = self.survey(state, paths, rebuild)
                    changes = plan_changes(survey.indexed, survey.notes)
                    prep = self.complete(prep, changes, survey, state, staging / "b")
                if self.corrupt is not None and self.config.index_path.exists():
                    from vaultmem.storage import store

                    moved = store.move_aside(self.config.index_path)
                    self.warnings.append(
                        f"The index could not be read ({self.corrupt}); moved it to {moved.name}."
                    )
                return self.write(state, survey, prep, outcomes(changes, prep, survey))

    def resolver(self, survey: Survey) -> LinkResolver:
        """One resolver over the survey's files, built once for the run's in-process work:
        a lazy one, which indexes only the name keys the run's links ask for (a one-note edit
        asks a handful; a large batch goes to the workers, each with its own)."""
        from vaultmem.note.links import LazyLinkResolver

        cached = self._resolver
        if cached is None or cached[0] is not survey.files:
            cached = self._resolver = (survey.files, LazyLinkResolver(tuple(survey.files)))
        return cached[1]

    # -- step 1: state and survey ---------------------------------------------------------------

    def unite_conflicts(self, walk: Survey | None, paths: list[str] | None) -> list[str]:
        """Unite the managed folder's sync-conflict copies and conflicted topics, those of the
        walk or of `paths` (`conflicts`, loaded only when the managed folder holds topics),
        before anything is indexed; the paths changed."""
        from vaultmem.index import conflicts

        if walk is not None:
            return conflicts.unite_walked(self.config, walk.notes, walk.problems or ())
        return conflicts.unite_paths(self.config, paths or ())

    def write_small(self, walk: Survey, token: IndexToken) -> ReconcileReport | State | None:
        """A small change in one connection: under the writer lock (taken only if free at
        once) and with the index as `token` left it, open it for writing, read the state,
        plan, and when the notes to parse are at most SMALL_WRITE_BYTES parse them here and
        write them through the same connection. Otherwise the state read, for the caller to
        go on with as usual (parse unlocked, then write); None when the index was not read."""
        from vaultmem.storage import store

        path = self.config.index_path
        if not path.exists():
            return None
        try:
            _check_writable(self.config)
        except IndexUnavailableError:
            return None  # a read-only index may still be read: the usual path decides
        with ExitStack() as held:
            try:
                held.enter_context(writer_lock(self.config.state_dir, timeout_s=0))
            except LockedError:
                return None  # another writer: the usual path waits for it after the parse
            if index_token(path) != token:
                return None  # a writer committed since the walk: the usual path re-reads
            forget_last_survey(self.config.state_dir)  # the index may change from here
            try:
                con = store.connect(path, read_only=False)
            except store.CorruptIndex:
                return None  # the usual path finds it again, and moves it aside
            held.callback(con.close)  # `write` closes it too: closing twice is harmless
            state = self.load_state(False, token, con)
            survey = self.survey(state, None, False, walk)
            changes = plan_changes(survey.indexed, survey.notes)
            if state.create or is_noop(
                state, survey, changes, self.corrupt is not None or bool(self.warnings)
            ):
                return state
            if sum(fp.size for fp in (*changes.new, *changes.suspect)) > SMALL_WRITE_BYTES:
                return state
            from vaultmem.index.parallel import staging_folder

            with staging_folder() as staging:
                prep = self.prepare(changes, survey, state, staging / "a", 0)
                out = outcomes(changes, prep, survey)
                # The connection closes (and checkpoints) in `write`, before the last survey
                # records the index file's identity.
                return self.write(state, survey, prep, out, con)
        raise AssertionError("unreachable")  # pragma: no cover - mypy: ExitStack may swallow

    def load_state(
        self, rebuild: bool, token: IndexToken | None = None, con: Connection | None = None
    ) -> State:
        """The index's current contents; an empty `create` state when it must be built anew.
        `token`: the index's identity taken earlier, which the state then stands for; `con`:
        a connection to read it with (left open), else one is opened for the read."""
        from vaultmem.storage import index_writes as writes
        from vaultmem.storage import store

        path = self.config.index_path
        self.corrupt = None
        if token is None:
            token = index_token(path)
        empty = State(IndexedNotes(()), frozenset(), frozenset(), 0, token, create=True)
        if rebuild or not path.exists():
            return empty
        own = con is None
        try:
            if con is None:
                con = store.connect(path, read_only=True)
        except store.CorruptIndex as error:
            self.corrupt = error
            return empty
        try:
            if not store.meta_matches(con, index_versions(self.config)):
                self.warnings.append(
                    "The index was built by another version or configuration; rebuilt it."
                )
                return empty
            read = writes.read_state(con, (*_SCAN_CODES, *_READ_CODES))
        except store.DatabaseError as error:
            self.corrupt = error
            return empty
        finally:
            if own:
                con.close()
        return State(
            IndexedNotes(read.notes),
            read.files,
            frozenset(read.scan_problems),
            read.problem_count,
            token,
            False,
            read.journal,
        )

    def survey(
        self, state: State, paths: list[str] | None, rebuild: bool, walk: Survey | None = None
    ) -> Survey:
        """The stat walk: of the whole vault, or of the watcher's paths when an index exists.
        `walk`: the whole vault's walk, already made."""
        if paths is not None and not state.create:
            return self.survey_paths(paths, state)
        from vaultmem.index.conflicts import copy_problems

        walk = walk or self.walk(rebuild)
        # Numbered conflict copies (`x 2.md` beside `x.md`) are a function of the files, which
        # the walk's digest covers: found here, past the steady state's check, not digested;
        # and while no file came or went, the index's own are still right (a one-note edit).
        if walk.files == state.files:
            copies = [
                Problem(path, "conflict_copy", message)
                for path, code, message in sorted(state.scan_problems)
                if code == "conflict_copy" and path in walk.files
            ]
        else:
            copies = copy_problems(map(_path, walk.notes), walk.files)
        problems = (*(walk.problems or ()), *copies)
        return walk._replace(indexed=state.notes, problems=problems)

    def walk(self, rebuild: bool) -> Survey:
        """The stat walk of the whole vault, before the index is read (`indexed` empty)."""
        scan = scan_vault(self.config)
        mode: Mode = "rebuild" if rebuild else "full"
        digest = survey_digest(
            scan.notes, scan.files, [(p.path, p.code, p.message) for p in scan.problems]
        )
        empty = IndexedNotes(())
        return Survey(mode, scan.notes, frozenset(scan.files), scan.problems, None, empty, digest)

    def steady(self, walk: Survey) -> ReconcileReport | None:
        """The no-op report when the walk equals the last one the index agreed with, and the
        index is still the file it was then (`storage.last_survey`); else None."""
        known = read_last_survey(self.config.state_dir)
        if known is None or known.digest != walk.digest or known.token[0] is None:
            return None
        if known.token != index_token(self.config.index_path):
            return None
        if known.versions != index_versions(self.config):
            return None
        changes: ChangeSet[Fingerprint] = ChangeSet((), (), (), tuple(map(_path, walk.notes)))
        return self.report(walk.mode, walk, changes, None, known.problems, known.notes)

    def remember(self, token: IndexToken, survey: Survey, notes: int, problems: int) -> None:
        """Record that the index (as `token` identifies it) equals this whole-vault walk."""
        if survey.digest is None or token[0] is None:
            return
        record = LastSurvey(token, index_versions(self.config), survey.digest, notes, problems)
        write_last_survey(self.config.state_dir, record)

    def survey_paths(self, paths: Iterable[str], state: State) -> Survey:
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
        indexed = state.notes.only(candidates)
        from vaultmem.index.conflicts import path_problems

        copies = tuple(path_problems(self.config, candidates, files))
        return Survey(
            "paths", tuple(present), frozenset(files), None, frozenset(candidates), indexed
        )._replace(copies=copies)

    # -- step 2: preparation ----------------------------------------------------------------------

    def prepare(
        self,
        changes: ChangeSet[Fingerprint],
        survey: Survey,
        state: State,
        staging: Path,
        first_number: int,
        only: Sequence[Fingerprint] | None = None,
    ) -> Preparation:
        """Prepare every new and suspect note (or just `only`) in the workers."""
        from vaultmem.index.parallel import Context, Embed, Job, prepare_all

        staging.mkdir(parents=True, exist_ok=True)
        todo = sorted(only if only is not None else (*changes.new, *changes.suspect), key=_path)
        jobs = [
            Job(
                first_number + i,
                fp.path,
                fp.size,
                known.content_hash if (known := survey.indexed.get(fp.path)) else None,
            )
            for i, fp in enumerate(todo)
        ]
        embed: Embed | None = None
        if self.config.semantic:  # the workers embed the documents they make
            from vaultmem.search import embedding

            embed = embedding.stage_vectors
        context = Context(self.config, tuple(sorted(survey.files)), str(staging), embed)
        chunks = (
            prepare_all(
                jobs, context, progress=self.progress, resolver=lambda: self.resolver(survey)
            )
            if jobs
            else []
        )
        return _collect(chunks, first_number + len(jobs), staging.parent / "spill")

    def complete(
        self,
        prep: Preparation,
        changes: ChangeSet[Fingerprint],
        survey: Survey,
        state: State,
        staging: Path,
    ) -> Preparation:
        """Keep the results that still match the files; prepare the rest here and now."""
        redo = []
        for fp in (*changes.new, *changes.suspect):
            done = prep.by_path.get(fp.path)
            if not _still_valid(done, fp, survey.indexed.get(fp.path)):
                redo.append(fp)
        if not redo:
            return prep
        more = self.prepare(changes, survey, state, staging, prep.next_number, only=redo)
        by_path = {**prep.by_path, **more.by_path}
        staged = {
            t: [*prep.staged.get(t, []), *more.staged.get(t, [])]
            for t in {*prep.staged, *more.staged}
        }
        return Preparation(
            by_path,
            staged,
            [*prep.postings, *more.postings],
            [*prep.vectors, *more.vectors],
            more.next_number,
            prep.spill_dir,
        )

    # -- step 5: identities -----------------------------------------------------------------------

    def identities(self, state: State, survey: Survey, out: Outcomes) -> Identities:
        """Ids (`identities`), with the rename journal read here and its damage warned of."""
        journal = read_renames(self.config.state_dir)
        if journal.skipped:
            self.warnings.append(
                f"Skipped {journal.skipped} unreadable line(s) of "
                f"{self.config.state_dir / 'renames.jsonl'}; those renames' ids are lost."
            )
        return identities(state, survey, out, journal.ids)

    # -- step 7: the write ------------------------------------------------------------------------

    def write(
        self,
        state: State,
        survey: Survey,
        prep: Preparation,
        out: Outcomes,
        con: Connection | None = None,
    ) -> ReconcileReport:
        """Write the outcomes in one transaction, through `con` when given (it is closed)."""
        ident = self.identities(state, survey, out)
        links = link_work(state, survey, out)
        forget_last_survey(self.config.state_dir)  # the index is about to change
        if ident.new_renames:
            append_renames(self.config.state_dir, ident.new_renames)
        index = self.config.index_path
        if not state.create:
            report = self.transaction(index, state, survey, prep, out, ident, links, con)
        else:
            assert con is None, "a build from nothing writes a new file"
            # Build from nothing beside the index, then swap: a reader never finds it missing,
            # and a crash leaves the old index. Only the old file's WAL goes first, so that it
            # can never be replayed onto the new file.
            from vaultmem.storage import store

            tmp = store.rebuild_path(index)
            store.remove_index(tmp)
            report = self.transaction(tmp, state, survey, prep, out, ident, links)
            index.with_name(index.name + ".wal").unlink(missing_ok=True)
            tmp.replace(index)
        if _agrees(out, survey):
            self.remember(index_token(index), survey, report.notes, report.problems)
        return report

    def transaction(
        self,
        index_path: Path,
        state: State,
        survey: Survey,
        prep: Preparation,
        out: Outcomes,
        ident: Identities,
        links: LinkWork,
        con: Connection | None = None,
    ) -> ReconcileReport:
        from vaultmem.note.links import file_name_key
        from vaultmem.storage import index_writes as writes
        from vaultmem.storage import search_rows, store

        config = self.config
        create = state.create
        if con is None:
            con = store.connect(index_path, read_only=False)
        try:
            writes.bound_memory(con, _DUCKDB_MEMORY_MB, prep.spill_dir)
            with store.transaction(con):
                if create:
                    store.create_schema(con, index_versions(config))
                removed_df = search_rows.delete_postings(con, ident.removed_ids)
                removed_stats = search_rows.document_stats(con, ident.removed_ids)
                gone_lines = [] if create else search_rows.line_keys_of(con, ident.removed_ids)
                writes.delete_notes(con, ident.removed_ids, postings=False)
                full_scan = survey.problems is not None
                writes.replace_problems(
                    con,
                    paths=[*out.parsed, *(n.path for n in out.changes.gone)],
                    read_paths=[
                        *(p.path for p in out.touched),
                        *(p.path for p in out.failed),
                        *(survey.candidates or ()),
                    ],
                    codes=[*_READ_CODES, *_SCAN_CODES] if full_scan else [],
                    read_codes=(*_READ_CODES, "conflict_copy"),  # paths mode: `copies`
                    problems=[*out.problems, *(survey.problems or ()), *survey.copies],
                )
                writes.change_ids(con, ident.id_changes)
                if ident.journal != state.journal:  # else `meta` holds this digest already
                    writes.record_journal(con, ident.journal)
                search_rows.rekey_postings(con, list(ident.id_changes.values()))
                writes.number_notes(
                    con, [(p.number, ident.ids[path]) for path, p in out.parsed.items()]
                )
                writes.load_staged(con, prep.staged)
                self._check_subpaths(con, out, ident)
                if not create:
                    self._reresolve(con, survey, out, ident, links)
                if create:  # read once, straight into `postings`
                    search_rows.build_postings(
                        con,
                        prep.postings,
                        max_line_bytes=config.max_note_bytes + 64,
                        language=config.search_language,
                    )
                    search_rows.recount_terms(con, None)
                else:
                    added_df = search_rows.load_postings(
                        con,
                        prep.postings,
                        max_line_bytes=config.max_note_bytes + 64,
                        gone_lines=gone_lines,
                        language=config.search_language,
                    )
                    added_df.subtract(removed_df)
                    added_stats = search_rows.document_stats(con)
                    search_rows.recount_terms(
                        con,
                        added_df,
                        search_rows.Stats(
                            *(a - r for a, r in zip(added_stats, removed_stats, strict=True))
                        ),
                    )
                if config.semantic:  # embedded by the workers, with the documents
                    from vaultmem.storage import vector_queries

                    vector_queries.load_staged_vectors(con, prep.vectors)
                writes.update_fingerprints(con, [(p.path, p.size, p.mtime_ns) for p in out.touched])
                writes.replace_files(
                    con,
                    links.removed_files,
                    [(p, file_name_key(p), p.lower().endswith(".md")) for p in links.added_files],
                )
                problem_count, note_count = writes.counts(con)
                report = self.report(
                    survey.mode, survey, out.changes, out, problem_count, note_count
                )
                writes.record_run(
                    con,
                    self.started_at,
                    report.duration_s * 1000,
                    report.mode,
                    report.added,
                    report.changed,
                    report.removed,
                    report.renamed,
                    report.unchanged,
                    report.problems,
                )
        finally:
            con.close()
        return report

    def report(
        self,
        mode: str,
        survey: Survey,
        changes: ChangeSet[Fingerprint],
        out: Outcomes | None,
        problems: int,
        notes: int,
    ) -> ReconcileReport:
        parsed = out.parsed if out else {}
        changed = sum(1 for p in parsed if p in survey.indexed)
        renamed = len(out.renames) if out else 0
        kept = len(out.kept) if out else 0
        touched = len(out.touched) if out else 0
        return ReconcileReport(
            mode=mode,
            added=len(parsed) - changed - renamed,
            changed=changed,
            removed=len(changes.gone) - renamed,
            renamed=renamed,
            # Touched notes are unchanged (same bytes); `touched` counts them again.
            unchanged=len(changes.unchanged) + kept + touched,
            touched=touched,
            problems=problems,
            notes=notes,
            duration_s=time.perf_counter() - self.started,
            warnings=tuple(dict.fromkeys(self.warnings)),
        )

    # -- links after the load -----------------------------------------------------------------

    def _check_subpaths(self, con: Connection, out: Outcomes, ident: Identities) -> None:
        """Check the new links' heading and block subpaths into other notes, now that every
        note's headings are in the index."""
        from vaultmem.note.links import SubpathIndex
        from vaultmem.storage import index_writes as writes

        by_target: dict[str, list[tuple[str, int, str]]] = {}
        for path, prepared in out.parsed.items():
            source = ident.ids[path]
            for ord_, target, subpath in prepared.subpaths:
                by_target.setdefault(target, []).append((source, ord_, subpath))
        targets = sorted(by_target)
        # Batched by target, not by link: a batch's queries read each target's headings once
        # (1.4 against 0.36 s of CPU for the 92,000 subpath links of 100,000 notes).
        for start in range(0, len(targets), _HEADINGS_BATCH):
            batch = targets[start : start + _HEADINGS_BATCH]
            headings = writes.headings_by_path(con, batch)
            updates = [
                (source, ord_, index.matches(subpath))
                for target in batch
                if (found := headings.get(target)) is not None
                for index in (SubpathIndex(*found),)
                for source, ord_, subpath in by_target[target]
            ]
            writes.set_subpaths_found(con, updates)

    def _reresolve(
        self,
        con: Connection,
        survey: Survey,
        out: Outcomes,
        ident: Identities,
        links: LinkWork,
    ) -> None:
        """Re-resolve exactly the stored links whose answer can have changed."""
        from vaultmem.note.links import SubpathIndex, resolve_link
        from vaultmem.storage import index_writes as writes

        if not (links.affected_keys or links.changed_targets):
            return
        fresh = {ident.ids[p] for p in out.parsed}
        rows = writes.links_to_reresolve(con, links.affected_keys, links.changed_targets, fresh)
        if not rows:
            return
        resolver = self.resolver(survey)
        resolved = []
        for row in rows:
            link = Link(row[2], row[3], None, False, 0, "wikilink", None, "")
            resolved.append((row, resolve_link(link, row[4], resolver, _no_headings)))
        wanted = sorted(
            {r.path for row, r in resolved if row[3] and r.path and r.subpath_found is None}
        )
        indexes = {
            path: SubpathIndex(*found)
            for path, found in writes.headings_by_path(con, wanted).items()
        }
        updates = []
        for (source_id, ord_, _t, subpath, _s, old_path, old_id, old_found), res in resolved:
            found = res.subpath_found
            if subpath and res.path is not None and found is None and res.path in indexes:
                found = indexes[res.path].matches(subpath)
            target_id = ident.ids.get(res.path) if res.path else None
            if (res.path, target_id, found) != (old_path, old_id, old_found):
                updates.append((source_id, ord_, res.path, target_id, found))
        writes.update_links(con, updates)


# -- the pure steps: explicit inputs, one value out; each is tested alone --------------------


def is_noop(
    state: State, survey: Survey, changes: ChangeSet[Fingerprint], recovering: bool = False
) -> bool:
    """Nothing to write: no note changed, no file came or went, the same scan problems.
    `recovering`: the run moves a damaged index aside or warns of something (always a write)."""
    if state.create or recovering:
        return False
    if changes.new or changes.suspect or changes.gone or survey.files != state.files:
        return False
    if survey.problems is None:  # paths mode: no stored read problem for these paths
        assert survey.candidates is not None
        if survey.copies:
            return False
        return not any(p in survey.candidates for p, _, _ in state.scan_problems)
    return {(p.path, p.code, p.message) for p in survey.problems} == state.scan_problems


def outcomes(changes: ChangeSet[Fingerprint], prep: Preparation, survey: Survey) -> Outcomes:
    """Sort the prepared notes into parsed, touched and failed; pair renames."""
    parsed: dict[str, Prepared] = {}
    touched: list[Prepared] = []
    failed: list[Prepared] = []
    kept: list[str] = []
    problems: list[Problem] = []
    for fp in sorted((*changes.new, *changes.suspect), key=_path):
        done = prep.by_path[fp.path]
        problems.extend(done.problems)
        if done.outcome == "parsed":
            parsed[fp.path] = done
        elif done.outcome == "touched":
            touched.append(done)
        else:
            failed.append(done)
            if fp.path in survey.indexed:
                kept.append(fp.path)  # keep the old rows until it reads cleanly
    new_hashes = {p: d.content_hash for p, d in parsed.items() if p not in survey.indexed}
    renames = pair_renames(changes.gone, new_hashes)
    return Outcomes(
        changes, parsed, tuple(touched), tuple(failed), tuple(kept), renames, tuple(problems)
    )


def identities(
    state: State, survey: Survey, out: Outcomes, journal_ids: Mapping[str, str]
) -> Identities:
    """Ids: a pure function of every live note's claim and the rename journal
    (`journal_ids`: path -> id, as `journal.read_renames` gives them)."""
    ids_journal = dict(journal_ids)
    new_renames = tuple((old.id, old.path, new) for new, old in sorted(out.renames.items()))
    ids_journal.update({new: note_id for note_id, _, new in new_renames})
    digest = journal_digest(ids_journal)
    indexed = survey.indexed
    if _ids_stand(state, out, digest):
        # Ids are a function of the live paths, their claims and the journal: all three
        # as the stored ids were assigned, so those stand (a one-note edit, a touch).
        return Identities(
            state.notes.ids(),
            {},
            new_renames,
            frozenset(indexed[p].id for p in out.parsed),
            digest,
        )
    claims: dict[str, str | None] = {}
    for path in out.changes.unchanged:
        claims[path] = indexed[path].claimed_id
    for prepared in out.touched:
        claims[prepared.path] = indexed[prepared.path].claimed_id
    for path in out.kept:
        claims[path] = indexed[path].claimed_id
    for path, prepared in out.parsed.items():
        claims[path] = prepared.claimed_id
    if survey.mode == "paths":
        # Notes outside the watched paths keep their ids but still take part in clashes.
        for path, known in state.notes.items():
            if path not in indexed:
                claims.setdefault(path, known.claimed_id)
    ids = assign_ids(claims, ids_journal)
    all_notes = state.notes
    id_changes = {
        all_notes[p].id: ids[p]
        for p in ids
        if p in all_notes and p not in out.parsed and all_notes[p].id != ids[p]
    }
    removed_ids = {n.id for n in out.changes.gone} | {
        indexed[p].id for p in out.parsed if p in indexed
    }
    return Identities(ids, id_changes, new_renames, frozenset(removed_ids), digest)


def link_work(state: State, survey: Survey, out: Outcomes) -> LinkWork:
    """Which stored links can resolve differently after this run."""
    from vaultmem.note.links import file_name_key

    added = survey.files - state.files
    removed = state.files - survey.files
    return LinkWork(
        frozenset(added),
        frozenset(removed),
        frozenset(file_name_key(p) for p in added | removed),
        frozenset(out.parsed) | {n.path for n in out.changes.gone},
    )


def _still_valid(done: Prepared | None, fp: Fingerprint, known: IndexedNote | None) -> bool:
    """Whether a worker's result still stands for the file and the index as they are now."""
    if done is None or (done.size, done.mtime_ns) != (fp.size, fp.mtime_ns):
        return False  # not prepared, or the file changed after its worker read it
    if done.outcome == "touched":
        return known is not None and known.content_hash == done.content_hash
    return done.outcome == "parsed"


def _ids_stand(state: State, out: Outcomes, journal: str) -> bool:
    """Whether the stored ids are what `assign_ids` would give now: no note came or went, no
    parsed note claims another id than it did, and the journal is the one they came from."""
    if state.create or state.journal != journal or out.changes.new or out.changes.gone:
        return False
    notes = state.notes
    return all(p.claimed_id == notes[path].claimed_id for path, p in out.parsed.items())


def _agrees(out: Outcomes, survey: Survey) -> bool:
    """Whether the index, once `out` is written, equals the walk: every note read cleanly,
    with the fingerprint the walk saw (a file that changed between the walk and its read is
    stored with the read's fingerprint, which the next run must look at again)."""
    if out.failed:
        return False
    walked = {fp.path: fp for fp in (*out.changes.new, *out.changes.suspect)}
    return all(
        (p.size, p.mtime_ns) == (walked[p.path].size, walked[p.path].mtime_ns)
        for p in (*out.parsed.values(), *out.touched)
    )


def _no_headings(path: str) -> None:
    return None


def _collect(chunks: Sequence[Chunk], next_number: int, spill_dir: Path) -> Preparation:
    by_path: dict[str, Prepared] = {}
    staged: dict[str, list[Path]] = {}
    postings: list[Path] = []
    vectors: list[Path] = []
    for chunk in chunks:
        for prepared in chunk.notes:
            by_path[prepared.path] = prepared
        for table, path in chunk.staged.items():
            staged.setdefault(table, []).append(path)
        if chunk.postings is not None:
            postings.append(chunk.postings)
        if chunk.vectors is not None:
            vectors.append(chunk.vectors)
    return Preparation(by_path, staged, postings, vectors, next_number, spill_dir)


def _path(fp: Fingerprint) -> str:
    return fp.path


def _check_writable(config: Config) -> None:
    """Fail early, and clearly, when the index cannot be written (read-only `.vaultmem`)."""
    state_dir = config.state_dir
    folder = state_dir if state_dir.exists() else state_dir.parent
    for target in (folder, config.index_path):
        if target.exists() and not os.access(target, os.W_OK):
            raise IndexUnavailableError(
                f"Cannot write the index: {target} is not writable.",
                hint=f"Make it writable (`chmod u+w {target}`) or run vaultmem as its owner.",
            )

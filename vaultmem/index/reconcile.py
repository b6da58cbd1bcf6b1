"""Reconcile: make the index equal to the vault, with work proportional to what changed.

The run is a sequence of steps, each a module function of explicit inputs that returns a
frozen value (`steps`: the values, and the pure steps a test calls alone). This module is the
runner: it sequences the steps and holds the run's I/O around them (the lock, the journal, the
staging folder, the swap of a rebuilt index); it keeps no state between steps but the values
they return.

1. The survey (`survey.walk`): the stat walk, (path, size, mtime_ns) of every note and the list
   of every file, and its digest. Nothing is read yet. The steady state (`steps.settles`):
   when the digest equals the last survey the index agreed with and the index is still that
   file (`storage.last_survey`), nothing changed and the run ends without opening the index
   (nor importing DuckDB). Otherwise, with the index's `State` (`load_state`: one read of
   `notes`, `files` and the scan's problems), `plan.plan_changes` says what is new, suspect
   (fingerprint moved) and gone. Nothing changed (`steps.is_noop`): the run ends here, with no
   lock taken and nothing written but the last survey.
2. The preparation (`preparation.prepare`): workers (`parallel`) read, hash, parse, resolve and
   format the rows of every new and suspect note, chunk by chunk, into staging files; the main
   process keeps one small record per note. A suspect whose bytes did not change was merely
   *touched*. No lock is held meanwhile: readers and `store` go on while a large vault parses.
3. Under the writer lock, settling: if another writer committed since the state was read,
   survey and plan again, and prepare here whatever the workers' results no longer cover
   (`steps.to_redo`, a file that changed after its worker read it). Otherwise the preparation
   stands as it is.
4. `steps.outcomes`: parsed, touched and unreadable notes; renames (a new file with exactly the
   bytes of one vanished note keeps that note's id and is journalled).
5. `steps.identities`: every live note's id, a pure function of claims and the rename journal.
   When no note came or went, no claim moved and the journal is the one the stored ids came
   from (its digest in `meta`), the stored ids stand and nothing is assigned again.
6. `steps.link_work`: which stored links can resolve differently now: those whose name key
   matches a file that appeared or disappeared, and those pointing at a note that changed.
7. The write (`transaction.transaction`), in one DuckDB transaction. After the commit, the walk
   becomes the last survey (`survey.remember`, when `steps.agrees`: every note read cleanly).

A small change (`SMALL_WRITE_BYTES`) takes steps 1 to 7 through one connection under the
writer lock, when the lock is free at once (`_write_small`). A build from nothing writes
`index.rebuild.duckdb` and renames it over the old file, so a crash during a rebuild leaves the
previous index in place. A crash during an incremental transaction is rolled back by DuckDB's
WAL on the next open.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence, Set
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from vaultmem.core.collector import collector_paused
from vaultmem.core.config import Config
from vaultmem.core.errors import IndexUnavailableError, LockedError
from vaultmem.core.note_model import Problem
from vaultmem.files.lock import writer_lock
from vaultmem.index import upgrade
from vaultmem.index.journal import RenameJournal, append_renames, compact_renames
from vaultmem.index.plan import ChangeSet, IndexedNotes, plan_changes
from vaultmem.index.steps import (
    READ_CODES,
    SCAN_CODES,
    Outcomes,
    Preparation,
    Progress,
    ReconcileReport,
    Run,
    State,
    Survey,
    Write,
    agrees,
    identities,
    index_versions,
    is_noop,
    link_work,
    merged,
    outcomes,
    outside_mapping,
    path_of,
    report,
    same_files,
    scan_problems_after,
    settles,
    state_after,
    state_change,
    state_warnings,
    to_prepare,
    to_redo,
)
from vaultmem.index.survey import last_survey, remember, survey_paths, walk
from vaultmem.storage.last_survey import IndexToken, index_token

if TYPE_CHECKING:  # the workers' side loads only when a note must be parsed: not on a no-op;
    # DuckDB (storage) and the link resolver only when the index must be read: not on a no-op
    # that the last survey settles.
    from pathlib import Path

    from vaultmem.files.scan import Fingerprint
    from vaultmem.note.links import LinkResolver
    from vaultmem.storage.store import Connection

__all__ = [
    "PhaseProgress",
    "Progress",
    "ReconcileReport",
    "index_versions",
    "reconcile",
    "warm_up",
]

PhaseProgress = Callable[[str, int, int], None]
"""How far a long run is: (phase, done, total). Phases: `parse` (notes read and parsed) and
`search` (notes whose search documents an upgrade made again, `index.upgrade`)."""

SMALL_WRITE_BYTES = 100_000
"""A change this small (the new and changed notes' bytes) is read, parsed and written with one
connection under the writer lock (`_write_small`): a cold one-note edit opens DuckDB once,
not twice (each open builds a database instance: ~13 ms of CPU, ~130M instructions); the
lock is then held for the parse too, ~50 ms of mistune at most."""


def reconcile(
    config: Config,
    *,
    rebuild: bool = False,
    paths: Iterable[str] | None = None,
    progress: PhaseProgress | None = None,
    lock_timeout_s: float = 30.0,
) -> ReconcileReport:
    """Bring the index up to date with the vault.

    `rebuild` builds from nothing; `paths` (vault-relative files or folders, from the watcher)
    limits the work to those paths instead of walking the vault. The writer lock is held only
    for the write, not while notes parse. The cycle collector is paused for the run
    (`core.collector`).
    """
    with collector_paused():
        return _reconcile(config, rebuild, paths, progress, lock_timeout_s)


def _reconcile(
    config: Config,
    rebuild: bool,
    paths: Iterable[str] | None,
    progress: PhaseProgress | None,
    lock_timeout_s: float,
) -> ReconcileReport:
    from vaultmem.files import state

    started = time.perf_counter()
    parse = _in_phase(progress, "parse")
    run = Run(config, parse, lock_timeout_s, started, datetime.now(UTC).replace(tzinfo=None))
    warned = state.prepare(config, writing=True)  # an index left in the vault moves out
    paths = None if paths is None else list(paths)
    looked = _look(run, rebuild, paths, tuple(warned))
    if isinstance(looked, ReconcileReport):
        return looked  # nothing changed since the last run: the index stays closed
    token, walked = looked
    try:
        return _run(run, rebuild, paths, tuple(warned), token, walked)
    except upgrade.StaleSearchTables:  # the notes' rows stand: no Markdown is read again
        kept = upgrade.upgrade_search_tables(
            config,
            index_versions(config),
            warned,
            progress=_in_phase(progress, "search"),
            lock_timeout_s=lock_timeout_s,
        )
        if not kept:  # built again from the vault: a build's own walk
            looked = _look(run, True, paths, tuple(warned))
            assert not isinstance(looked, ReconcileReport)  # a build is never steady
            token, walked = looked
        else:  # the vault was not touched: the walk stands, the index is a new file
            token = index_token(config.index_path)
        return _run(run, not kept, paths, tuple(warned), token, walked)


def _in_phase(progress: PhaseProgress | None, phase: str) -> Progress | None:
    if progress is None:
        return None
    return lambda done, total: progress(phase, done, total)


# -- the runner ---------------------------------------------------------------------------------


def _look(
    run: Run, rebuild: bool, paths: list[str] | None, warnings: tuple[str, ...]
) -> ReconcileReport | tuple[IndexToken, Survey | None]:
    """The index's identity, then the walk (none in paths mode, where the conflicts of the
    paths are united instead): the report of a run the last survey settles, else both."""
    config = run.config
    # The index's identity before the walk: a writer that commits between the walk and
    # the state read then shows under the lock, as one that commits later does.
    token = index_token(config.index_path)
    if paths is not None:
        paths += _unite_conflicts(config, None, paths)
        return token, None
    walked = walk(config, rebuild)
    if _unite_conflicts(config, walked, None):
        walked = walk(config, rebuild)  # the united topics and the trashed copies
    if not rebuild and (steady := _steady(run, walked, warnings)) is not None:
        return steady
    return token, walked


def _run(
    run: Run,
    rebuild: bool,
    paths: list[str] | None,
    warnings: tuple[str, ...],
    token: IndexToken,
    walked: Survey | None,
) -> ReconcileReport:
    """The steps after the walk (`_look`), in order. `warnings`: what the run has to warn of
    so far (it only grows)."""
    config = run.config
    state: State | None = None
    if walked is not None and not rebuild and not config.semantic:
        small = _write_small(run, walked, token, warnings)
        if isinstance(small, ReconcileReport):
            return small
        state = small  # too large to write at once: the state read stands
    if state is None:
        state = load_state(config, rebuild, token)
    warnings += state_warnings(state)
    survey = _survey(config, state, paths, rebuild, walked)
    changes = plan_changes(survey.indexed, survey.notes)
    if is_noop(state, survey, changes, state.damage is not None or bool(warnings)):
        remember(config, state.token, survey, len(state.notes), state.problem_count)
        return _report(run, survey, changes, state.problem_count, len(state.notes), warnings)
    from vaultmem.index.parallel import staging_folder
    from vaultmem.index.preparation import link_resolver, prepare

    if config.semantic:
        from vaultmem.search import embedding

        embedding.embedder()  # the model loads now: a missing extra fails before any work
    with staging_folder() as staging:
        resolver = link_resolver(survey.files)
        todo = to_prepare(changes)
        prep = prepare(run, todo, survey, staging / "a", 0, resolver, fresh=state.create)
        _check_writable(config)
        with writer_lock(config.state_dir, timeout_s=run.lock_timeout_s):
            if index_token(config.index_path) != state.token:
                # Another writer committed while the notes parsed: look again, and redo
                # here what the workers' results no longer cover.
                state = load_state(config, rebuild)
                warnings += state_warnings(state)
                survey = _survey(config, state, paths, rebuild)
                changes = plan_changes(survey.indexed, survey.notes)
                resolver = link_resolver(survey.files)
                prep = _complete(run, prep, changes, survey, staging / "b", resolver)
            if state.damage is not None and config.index_path.exists():
                from vaultmem.storage import store

                moved = store.move_aside(config.index_path)
                warnings += (
                    f"The index could not be read ({state.damage}); moved it to {moved.name}.",
                )
            out = outcomes(changes, prep, survey)
            return _write(run, state, survey, prep, out, resolver, warnings)


def _write_small(
    run: Run, walked: Survey, token: IndexToken, warnings: tuple[str, ...]
) -> ReconcileReport | State | None:
    """A small change in one connection: under the writer lock (taken only if free at
    once) and with the index as `token` left it, open it for writing, read the state,
    plan, and when the notes to parse are at most SMALL_WRITE_BYTES parse them here and
    write them through the same connection. Otherwise the state read, for the caller to
    go on with as usual (parse unlocked, then write); None when the index was not read."""
    from vaultmem.storage import store

    config = run.config
    path = config.index_path
    if not path.exists():
        return None
    try:
        _check_writable(config)
    except IndexUnavailableError:
        return None  # a read-only index may still be read: the usual path decides
    with ExitStack() as held:
        try:
            held.enter_context(writer_lock(config.state_dir, timeout_s=0))
        except LockedError:
            return None  # another writer: the usual path waits for it after the parse
        if index_token(path) != token:
            return None  # a writer committed since the walk: the usual path re-reads
        recorded = recorded_state(config, token, walked)  # taken before it is forgotten
        from vaultmem.storage.index_state import forget_before_write

        forget_before_write(config.state_dir)  # the index may change from here
        try:
            con = store.connect(path, read_only=False)
        except store.CorruptIndex:
            return None  # the usual path finds it again, and moves it aside
        held.callback(con.close)  # `transaction` closes it too: closing twice is harmless
        state = recorded if recorded is not None else load_state(config, False, token, con)
        warnings += state_warnings(state)
        survey = _survey(config, state, None, False, walked)
        changes = plan_changes(survey.indexed, survey.notes)
        if state.create or is_noop(
            state, survey, changes, state.damage is not None or bool(warnings)
        ):
            return state
        if sum(fp.size for fp in to_prepare(changes)) > SMALL_WRITE_BYTES:
            return state
        from vaultmem.index.parallel import staging_folder
        from vaultmem.index.preparation import link_resolver, prepare

        with staging_folder() as staging:
            resolver = link_resolver(survey.files)
            prep = prepare(run, to_prepare(changes), survey, staging / "a", 0, resolver)
            out = outcomes(changes, prep, survey)
            # The connection closes (and checkpoints) in `transaction`, before the last
            # survey records the index file's identity.
            return _write(run, state, survey, prep, out, resolver, warnings, con)
    raise AssertionError("unreachable")  # pragma: no cover - mypy: ExitStack may swallow


def load_state(
    config: Config, rebuild: bool, token: IndexToken | None = None, con: Connection | None = None
) -> State:
    """The index's current contents; an empty `create` state when it must be built anew
    (`damage` says why when it could not be read, `outdated` when built by another version).
    `token`: the index's identity taken earlier, which the state then stands for; `con`:
    a connection to read it with (left open), else one is opened for the read."""
    from vaultmem.storage import index_writes as writes
    from vaultmem.storage import store

    path = config.index_path
    if token is None:
        token = index_token(path)
    empty = State(IndexedNotes(()), frozenset(), frozenset(), 0, token, create=True)
    if rebuild or not path.exists():
        return empty
    if (recorded := recorded_state(config, token)) is not None:
        return recorded
    own = con is None
    try:
        if con is None:
            con = store.connect(path, read_only=True)
    except store.CorruptIndex as error:
        return empty._replace(damage=error)
    try:
        if not store.meta_matches(con, index_versions(config)):
            if upgrade.search_only(con, index_versions(config)):
                raise upgrade.StaleSearchTables  # `reconcile` upgrades, then runs again
            return empty._replace(outdated=True)
        read = writes.read_state(con, (*SCAN_CODES, *READ_CODES))
    except store.DatabaseError as error:
        return empty._replace(damage=error)
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


def recorded_state(config: Config, token: IndexToken, walked: Survey | None = None) -> State | None:
    """The state the last writer recorded (`storage.index_state`), when the index is still
    the file it wrote and was built with this configuration; else None (read the rows).
    `walked`: this run's whole-vault walk; when its listing is the record's files, the state
    takes the walk's set of files (`index_state.ListedFiles`)."""
    from vaultmem.storage.index_state import (
        ListedFiles,
        keep_state_record,
        kept_state_record,
        read_state_record,
    )
    from vaultmem.storage.text_column import TextColumn

    record = kept_state_record(config.state_dir, token)
    if record is None and (record := read_state_record(config.state_dir)) is not None:
        keep_state_record(config.state_dir, record)  # a warm process's next run (`warm_up`)
    if record is None or token[0] is None or record.token != token:
        return None
    if record.versions != index_versions(config):
        return None
    paths = record.paths
    notes = IndexedNotes.from_columns(
        paths,
        record.ids,
        record.sizes,
        record.mtimes,
        record.hashes,
        record.claims,
        in_order=paths.ascending if isinstance(paths, TextColumn) else None,
    )
    listed = record.files
    files: Set[str]
    if walked is not None and walked.listing is not None and isinstance(listed, ListedFiles):
        files = walked.files if listed.same_as(walked.listing) else listed.frozen()
    elif isinstance(listed, ListedFiles):
        files = listed  # a run named by path asks about a few: no set of them all
    else:
        files = frozenset(listed)
    return State(
        notes,
        files,
        frozenset(record.scan_problems),
        record.problem_count,
        token,
        False,
        record.journal,
    )


def warm_up(config: Config) -> None:
    """Load, once, what a long-lived writer's first small write would load on the way from a
    save to a searchable index (the watcher calls it after its start-up sweep, which a
    current index settles without them): the parser, DuckDB, the transaction's modules, and
    the recorded state. Measured at 100,000 notes: a first batch took ~0.35 s longer. Then
    what a first parse, a first bound statement and a first link compile or import (mistune's
    scanners, DuckDB's parameter types, the vault's file names folded for the resolver): a
    first batch then took ~0.07 s longer than the next ones, and ~0.02 s after."""
    from vaultmem.index import transaction  # noqa: F401  (imported to load it)
    from vaultmem.index.parallel import clean_stale_staging
    from vaultmem.index.preparation import link_resolver
    from vaultmem.note.parse import parse_note
    from vaultmem.storage import index_writes, search_rows, store  # noqa: F401

    parse_note("warm-up.md", _WARM_UP_NOTE)  # mistune compiles a rule's scanner on first use
    store.load_binding()
    clean_stale_staging()  # as every write does first (its name pattern compiled now)
    if config.index_path.exists():
        state = recorded_state(config, index_token(config.index_path))
        if state is not None:  # the vault's file names, folded once for every batch's links
            link_resolver(state.files)().resolve("warm-up", "")


_WARM_UP_NOTE = b"""---
tags: [a]
---
# Title

A [[Link]], [text](Other.md), #tag, `code`, **bold** and a block. ^block

## Section

- item
- [ ] task
  1. nested
1. ordered

> [!note] Callout
> quoted

| a | b |
|---|---|
| 1 | 2 |

```py
code
```
"""
"""A note with the Markdown a save usually holds, parsed once by `warm_up`."""


def _record_state(config: Config, token: IndexToken, write: Write, done: ReconcileReport) -> None:
    """Keep the index's state beside it (`storage.index_state`) for the next run: what this
    write changed when that is all that needs writing, the whole state otherwise."""
    from vaultmem.storage.index_state import StateChange, StateRecord, record_state

    if token[0] is None:
        return
    versions = index_versions(config)

    def whole() -> StateRecord:
        notes, files, problems = state_after(write)
        paths, ids, sizes, mtimes, hashes, claims = notes.columns()
        return StateRecord(
            token,
            versions,
            paths,
            ids,
            sizes,
            mtimes,
            hashes,
            claims,
            files,  # the walk's frozenset: read back into one, so no copy of 100,000 paths
            sorted(problems),
            done.problems,
            write.ident.journal,
        )

    changed = None if write.state.create else state_change(write)
    if changed is None:
        record_state(config.state_dir, token, whole)
        return
    before, after = write.state.scan_problems, scan_problems_after(write)
    problems = dict.fromkeys(before - after, False) | dict.fromkeys(after - before, True)
    change = StateChange(
        write.state.token,
        token,
        versions,
        *changed,
        problems,
        done.problems,
        write.ident.journal,
    )
    record_state(config.state_dir, token, whole, change)


def _unite_conflicts(config: Config, walked: Survey | None, paths: list[str] | None) -> list[str]:
    """Unite the managed folder's sync-conflict copies and conflicted topics, those of the
    walk or of `paths` (`conflicts`), before anything is indexed; the paths changed."""
    from vaultmem.index import conflicts

    if walked is not None:
        return conflicts.unite_walked(config, walked.notes, walked.problems or ())
    return conflicts.unite_paths(config, paths or ())


def _survey(
    config: Config,
    state: State,
    paths: list[str] | None,
    rebuild: bool,
    walked: Survey | None = None,
) -> Survey:
    """The stat walk: of the whole vault, or of the watcher's paths when an index exists.
    `walked`: the whole vault's walk, already made."""
    if paths is not None and not state.create:
        return survey_paths(config, paths, state)
    from vaultmem.index.conflicts import copy_problems

    walked = walked or walk(config, rebuild)
    # Numbered conflict copies (`x 2.md` beside `x.md`) are a function of the files, which
    # the walk's digest covers: found here, past the steady state's check, not digested;
    # and while no file came or went, the index's own are still right (a one-note edit).
    if same_files(walked, state):
        copies = [
            Problem(path, "conflict_copy", message)
            for path, code, message in sorted(state.scan_problems)
            if code == "conflict_copy" and path in walked.files
        ]
    else:
        copies = copy_problems(map(path_of, walked.notes), walked.files)
    problems = (*(walked.problems or ()), *copies)
    return walked._replace(indexed=state.notes, problems=problems)


def _steady(run: Run, walked: Survey, warnings: Sequence[str]) -> ReconcileReport | None:
    """The no-op report when the walk equals the last one the index agreed with, and the
    index is still the file it was then; else None."""
    known, token = last_survey(run.config)
    if known is None or not settles(known, walked, token, run.config):
        return None
    # Every note unchanged: counted, not listed (listing them makes every note's tuple).
    changes: ChangeSet[Fingerprint] = ChangeSet((), (), (), ())
    unchanged = len(walked.notes)
    return _report(run, walked, changes, known.problems, known.notes, warnings, unchanged)


def _report(
    run: Run,
    survey: Survey,
    changes: ChangeSet[Fingerprint],
    problems: int,
    notes: int,
    warnings: Sequence[str],
    unchanged: int | None = None,
) -> ReconcileReport:
    """The report of a run that wrote nothing (`unchanged`: as `steps.report` takes it)."""
    duration = time.perf_counter() - run.started
    outside = outside_mapping(run.config, survey)
    return report(survey, changes, None, problems, notes, duration, warnings, outside, unchanged)


def _complete(
    run: Run,
    prep: Preparation,
    changes: ChangeSet[Fingerprint],
    survey: Survey,
    staging: Path,
    resolver: Callable[[], LinkResolver],
) -> Preparation:
    """Keep the results that still match the files; prepare the rest here and now."""
    from vaultmem.index.preparation import prepare

    redo = to_redo(prep, changes, survey)
    if not redo:
        return prep
    return merged(prep, prepare(run, redo, survey, staging, prep.next_number, resolver))


def _write(
    run: Run,
    state: State,
    survey: Survey,
    prep: Preparation,
    out: Outcomes,
    resolver: Callable[[], LinkResolver],
    warnings: tuple[str, ...],
    con: Connection | None = None,
) -> ReconcileReport:
    """Write the outcomes in one transaction, through `con` when given (it is closed)."""
    from vaultmem.index.transaction import transaction

    config = run.config
    journal = RenameJournal(config.state_dir)  # read only if the kept digest will not do
    if skipped := journal.facts.skipped:
        warnings += (
            f"Skipped {skipped} unreadable line(s) of "
            f"{config.state_dir / 'renames.jsonl'}; those renames' ids are lost.",
        )
    compact_renames(config.state_dir, journal)  # under the writer lock, as appends are
    ident = identities(state, survey, out, journal, journal.facts.digest)
    write = Write(state, survey, prep, out, ident, link_work(state, survey, out))
    from vaultmem.storage.index_state import forget_before_write

    forget_before_write(config.state_dir)  # the index is about to change
    if ident.new_renames:
        append_renames(config.state_dir, ident.new_renames)
    index = config.index_path
    if not state.create:
        done = transaction(run, index, write, resolver, warnings, con)
    else:
        assert con is None, "a build from nothing writes a new file"
        # Build from nothing beside the index, then swap: a reader never finds it missing,
        # and a crash leaves the old index. Only the old file's WAL goes first, so that it
        # can never be replayed onto the new file.
        from vaultmem.storage import store

        tmp = store.rebuild_path(index)
        store.remove_index(tmp)
        done = transaction(run, tmp, write, resolver, warnings)
        index.with_name(index.name + ".wal").unlink(missing_ok=True)
        tmp.replace(index)
    token = index_token(index)
    _record_state(config, token, write, done)
    if agrees(out, survey):
        remember(config, token, survey, done.notes, done.problems)
    return done


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

"""Reconcile's steps: the values a run hands from one step to the next, and the pure steps.

Each pure step is a module function of explicit inputs that returns one value and does no
I/O, so a test feeds it values and checks what comes back (tests/index/test_reconcile_steps.py):
`settles` (the last survey answers for the walk), `is_noop`, `to_redo` and `merged` (what a
worker's result no longer covers after another writer committed), `outcomes`, `identities`,
`link_work`, `agrees` (the walk may become the last survey) and `report`. The steps that read
or write (the walk, the state read, the workers, the transaction) live in `survey`,
`reconcile`, `preparation` and `transaction`; `reconcile`'s runner sequences them all.

The values are named tuples, not dataclasses: every reconcile imports this module, a no-op
included, and building these frozen dataclasses cost ~3 ms of its start-up (`dataclasses`
compiles each class's methods); they live for one run and never leave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from vaultmem.core.config import Config, rows_digest
from vaultmem.core.models import (
    LINE_KEY_VERSION,
    PARSER_VERSION,
    SEGMENT_VERSION,
    TOKENIZER_VERSION,
)
from vaultmem.core.note_model import Problem
from vaultmem.core.version import __version__
from vaultmem.files.scan import Fingerprint, notes_outside_mapping
from vaultmem.index.journal import replay
from vaultmem.index.plan import (
    ChangeSet,
    IndexedNote,
    IndexedNotes,
    assign_ids_salted,
    basis_journal,
    basis_unsalted,
    ids_basis,
    ids_of_added,
    journal_digest,
    pair_renames,
)
from vaultmem.storage.last_survey import IndexToken, LastSurvey
from vaultmem.storage.schema import SCHEMA_VERSION, SEARCH_SCHEMA_VERSION

if TYPE_CHECKING:  # the workers' side loads only when a note must be parsed: not on a no-op
    from vaultmem.index.parallel import Chunk, Prepared
    from vaultmem.storage.index_state import NoteRow

Progress = Callable[[int, int], None]
Mode = Literal["full", "paths", "rebuild"]

SCAN_CODES = ("conflict_copy", "config_folder_missing", "secret_in_name", "symlink_refused")
"""Problem codes a scan (not a parse) produces: a no-op compares the stored ones."""
READ_CODES = ("file_vanished", "file_unstable", "file_unreadable")
"""Problem codes of a note that could not be read: its old rows stay."""
OUTDATED = "The index was built by another version or configuration; rebuilt it."


def index_versions(config: Config) -> dict[str, str]:
    """What the index records in `meta`; any difference means rebuild.

    Besides the code's versions this holds a digest of what shapes rows (`rows_digest`): a
    changed mapping moves unchanged notes to another scope, which only a rebuild gets right.
    The layout's versions are here too: the records a no-op trusts without opening the index
    (`last_survey`, the state record) compare these, so a new schema must show in them.
    """
    return {
        "schema_version": str(SCHEMA_VERSION),
        "search_schema_version": str(SEARCH_SCHEMA_VERSION),
        "parser_version": str(PARSER_VERSION),
        "tokenizer_version": f"{TOKENIZER_VERSION}-{config.search_language}",
        "segment_version": str(SEGMENT_VERSION),
        "line_key_version": str(LINE_KEY_VERSION),
        "vaultmem_version": __version__,
        "config_digest": rows_digest(config),
        "embedding_model": _embedding_model(config),
    }


def _embedding_model(config: Config) -> str:
    if not config.semantic:
        return "none"
    from vaultmem.search import embedding

    return embedding.INDEX_ID


# -- the values ---------------------------------------------------------------------------------


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
    outside_mapping: int = 0
    """Notes of the vault no mapped folder holds (not indexed); 0 for the watcher's paths."""
    outside_folders: tuple[str, ...] = ()
    """Their top-level folders (`.` for the vault's root)."""

    def to_dict(self) -> dict[str, object]:
        return self._asdict()


class Run(NamedTuple):
    """What every step of one run shares: its configuration, its caller's wishes, its clock."""

    config: Config
    progress: Progress | None
    lock_timeout_s: float
    started: float
    """`time.perf_counter()` at the start: the report's duration counts from here."""
    started_at: datetime
    """The start as a naive UTC time, as `runs` records it."""


class State(NamedTuple):
    """The index as read before deciding anything; `create` when it is built from nothing."""

    notes: IndexedNotes
    files: Set[str]
    """Every file: a frozenset, or the state record's files kept joined (`ListedFiles`)."""
    scan_problems: frozenset[tuple[str, str, str]]
    problem_count: int
    token: IndexToken
    create: bool
    journal: str | None = None
    """What the stored ids were assigned from (`plan.ids_basis`): the rename journal's digest
    and whether any id is salted."""
    damage: BaseException | None = None
    """Why the index could not be read (then `create`): the write moves it aside."""
    outdated: bool = False
    """The index was built by another version or configuration (then `create`)."""


class Survey(NamedTuple):
    """The stat walk: note fingerprints and every file; `problems` None in paths mode, where
    `candidates` holds the paths looked at and `indexed` the index's notes among them.
    `digest` (`plan.survey_digest`) only for a walk of the whole vault."""

    mode: Mode
    notes: Sequence[Fingerprint]  # a walk's: `files.walked.WalkedNotes`
    files: Set[str]
    problems: tuple[Problem, ...] | None
    candidates: frozenset[str] | None
    indexed: IndexedNotes
    digest: str | None = None
    copies: tuple[Problem, ...] = ()
    """Paths mode: the `conflict_copy` problems of the candidates (`conflicts.path_problems`)."""
    listing: bytes | None = None
    """A whole-vault walk's files as a state record keeps its own (`index_state.join_listing`):
    equal, the record's files are the walk's, and the run takes the walk's set for them."""


class Preparation(NamedTuple):
    """The workers' results: one record per note, and the files holding their rows."""

    by_path: dict[str, Prepared]
    staged: dict[str, list[Path]]
    postings: list[Path]
    vectors: list[Path]
    next_number: int
    spill_dir: Path
    """Where DuckDB may spill during the load: inside the run's staging folder."""
    largest: Mapping[str, int] = {}
    """{table: the bytes of its largest staged object}: what DuckDB's JSON reader must hold
    at once (a file holds many: a worker appends each chunk's)."""
    precut: tuple[Path, ...] = ()
    """A build's boilerplate weights the workers cut early (`index.early_cut`)."""


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
    ids: Mapping[str, str]
    id_changes: dict[str, str]
    """Unchanged notes whose id moved (a clash resolved differently): old id → new id."""
    new_renames: tuple[tuple[str, str, str], ...]
    removed_ids: frozenset[str]
    journal: str
    """What these ids were assigned from (`plan.ids_basis`)."""


class LinkWork(NamedTuple):
    added_files: frozenset[str]
    removed_files: frozenset[str]
    affected_keys: frozenset[str]
    changed_targets: frozenset[str]


class Write(NamedTuple):
    """Everything the transaction writes: the steps' values, in the order they came."""

    state: State
    survey: Survey
    prep: Preparation
    out: Outcomes
    ident: Identities
    links: LinkWork


# -- the pure steps -----------------------------------------------------------------------------


def settles(known: LastSurvey | None, walk: Survey, token: IndexToken, config: Config) -> bool:
    """Whether the last survey the index agreed with answers for this walk: the same digest,
    the index still the file it was then (`token`, as it is now), the same versions."""
    if known is None or known.digest != walk.digest or known.token[0] is None:
        return False
    return known.token == token and known.versions == index_versions(config)


def same_files(survey: Survey, state: State) -> bool:
    """Whether the survey's files are the index's: the very set when the state record's files
    matched the walk's listing (`index.reconcile.recorded_state`), which a comparison of two
    sets of 100,000 paths need not check again."""
    return survey.files is state.files or survey.files == state.files


def is_noop(
    state: State, survey: Survey, changes: ChangeSet[Fingerprint], recovering: bool = False
) -> bool:
    """Nothing to write: no note changed, no file came or went, the same scan problems.
    `recovering`: the run moves a damaged index aside or warns of something (always a write)."""
    if state.create or recovering:
        return False
    if changes.new or changes.suspect or changes.gone or not same_files(survey, state):
        return False
    if survey.problems is None:  # paths mode: no stored read problem for these paths
        assert survey.candidates is not None
        if survey.copies:
            return False
        return not any(p in survey.candidates for p, _, _ in state.scan_problems)
    return {(p.path, p.code, p.message) for p in survey.problems} == state.scan_problems


def state_warnings(state: State) -> tuple[str, ...]:
    """What reading the index found to warn of (a damaged index is warned of when moved)."""
    return (OUTDATED,) if state.outdated else ()


def to_prepare(changes: ChangeSet[Fingerprint]) -> tuple[Fingerprint, ...]:
    """The notes whose files the workers read: every new and suspect one."""
    return (*changes.new, *changes.suspect)


def to_redo(
    prep: Preparation, changes: ChangeSet[Fingerprint], survey: Survey
) -> list[Fingerprint]:
    """The notes of a new plan that `prep` no longer covers (another writer committed, or the
    file changed after its worker read it)."""
    return [
        fp
        for fp in to_prepare(changes)
        if not _still_valid(prep.by_path.get(fp.path), fp, survey.indexed.get(fp.path))
    ]


def merged(prep: Preparation, more: Preparation) -> Preparation:
    """`prep` with `more`'s results added (and preferred for a note both hold)."""
    tables = {*prep.staged, *more.staged}
    staged = {
        t: list(dict.fromkeys([*prep.staged.get(t, []), *more.staged.get(t, [])])) for t in tables
    }
    return Preparation(
        {**prep.by_path, **more.by_path},
        staged,
        list(dict.fromkeys([*prep.postings, *more.postings])),
        [*prep.vectors, *more.vectors],
        more.next_number,
        prep.spill_dir,
        {t: max(prep.largest.get(t, 0), more.largest.get(t, 0)) for t in tables},
        tuple(dict.fromkeys([*prep.precut, *more.precut])),
    )


def collect(chunks: Sequence[Chunk], next_number: int, spill_dir: Path) -> Preparation:
    """The workers' chunks as one preparation."""
    by_path: dict[str, Prepared] = {}
    staged: dict[str, dict[Path, None]] = {}
    largest: dict[str, int] = {}
    postings: list[Path] = []
    precut: list[Path] = []
    vectors: list[Path] = []
    for chunk in chunks:
        for prepared in chunk.notes:
            by_path[prepared.path] = prepared
        for table, (path, size) in chunk.staged.items():
            staged.setdefault(table, {})[path] = None
            largest[table] = max(largest.get(table, 0), size)
        postings.extend(chunk.postings)
        precut.extend(chunk.precut)
        if chunk.vectors is not None:
            vectors.append(chunk.vectors)
    # a worker's chunks share its files: each file once, or its rows load twice
    postings = list(dict.fromkeys(postings))
    files = {table: list(paths) for table, paths in staged.items()}
    return Preparation(
        by_path,
        files,
        postings,
        vectors,
        next_number,
        spill_dir,
        largest,
        tuple(dict.fromkeys(precut)),
    )


def outcomes(changes: ChangeSet[Fingerprint], prep: Preparation, survey: Survey) -> Outcomes:
    """Sort the prepared notes into parsed, touched and failed; pair renames."""
    parsed: dict[str, Prepared] = {}
    touched: list[Prepared] = []
    failed: list[Prepared] = []
    kept: list[str] = []
    problems: list[Problem] = []
    for fp in sorted(to_prepare(changes), key=path_of):
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
    state: State,
    survey: Survey,
    out: Outcomes,
    journal_ids: Mapping[str, str],
    journal: str | None = None,
) -> Identities:
    """Ids: a pure function of every live note's claim and the rename journal
    (`journal_ids`: path -> id, as `journal.read_renames` gives them). `journal`: their
    digest when known (`journal.RenameJournal`): a run with no new rename whose stored ids
    stand then looks up no entry, so it need not read the journal at all."""
    new_renames = tuple((old.id, old.path, new) for new, old in sorted(out.renames.items()))
    ids_journal: Mapping[str, str]
    if journal is not None and not new_renames:
        ids_journal, digest = journal_ids, journal
    else:
        ids_journal = dict(journal_ids)
        replay(ids_journal, new_renames)
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
            ids_basis(digest, not basis_unsalted(state.journal)),
        )
    if (added := _added_ids(state, out, digest, ids_journal)) is not None:
        # Notes came and none went, each new one's id free: the stored ids stand too (a
        # `store`, a note created in Obsidian).
        return Identities(
            state.notes.ids(added),
            {},
            new_renames,
            frozenset(indexed[p].id for p in out.parsed if p in indexed),
            ids_basis(digest, not basis_unsalted(state.journal)),
        )
    if (moved := _moved_ids(state, out, journal_ids, ids_journal, journal)) is not None:
        # Notes went (renamed, perhaps) where no id is salted: the others keep theirs.
        gone = {n.id for n in out.changes.gone}
        return Identities(
            state.notes.ids(moved),
            {},
            new_renames,
            frozenset(gone | {indexed[p].id for p in out.parsed if p in indexed}),
            ids_basis(digest, False),
        )
    # Every note's stored claim and id, by path, built from the state's columns in C: a
    # lookup per note through `IndexedNotes` cost ~1.1 s of this at 100,000 notes.
    paths, stored_ids, _, _, _, stored_claims = state.notes.columns()
    stored = dict(zip(paths, stored_claims, strict=True))
    claims: dict[str, str | None] = {path: stored[path] for path in out.changes.unchanged}
    claims.update((prepared.path, stored[prepared.path]) for prepared in out.touched)
    claims.update((path, stored[path]) for path in out.kept)
    claims.update((path, prepared.claimed_id) for path, prepared in out.parsed.items())
    if survey.mode == "paths":
        # Notes outside the watched paths keep their ids but still take part in clashes.
        watched = set(indexed)
        for path, claim in stored.items():
            if path not in watched and path not in claims:
                claims[path] = claim
    ids, salted = assign_ids_salted(claims, ids_journal)
    old_ids = dict(zip(paths, stored_ids, strict=True))
    parsed = out.parsed
    id_changes = {
        old: new
        for path, new in ids.items()
        if (old := old_ids.get(path)) is not None and old != new and path not in parsed
    }
    removed_ids = {n.id for n in out.changes.gone} | {old_ids[p] for p in parsed if p in indexed}
    return Identities(
        ids, id_changes, new_renames, frozenset(removed_ids), ids_basis(digest, salted)
    )


def link_work(state: State, survey: Survey, out: Outcomes) -> LinkWork:
    """Which stored links can resolve differently after this run."""
    from vaultmem.note.links import file_name_key

    added: Set[str]
    removed: Set[str]
    if survey.candidates is not None:  # the watcher's paths: no other file can have moved
        added = {p for p in survey.candidates if p in survey.files and p not in state.files}
        removed = {p for p in survey.candidates if p in state.files and p not in survey.files}
    elif survey.files is state.files:  # the walk's set stood for the index's (no file moved)
        added = removed = frozenset()
    else:
        added = survey.files - state.files
        removed = state.files - survey.files
    return LinkWork(
        frozenset(added),
        frozenset(removed),
        frozenset(file_name_key(p) for p in added | removed),
        frozenset(out.parsed) | {n.path for n in out.changes.gone},
    )


def agrees(out: Outcomes, survey: Survey) -> bool:
    """Whether the index, once `out` is written, equals the walk: every note read cleanly,
    with the fingerprint the walk saw (a file that changed between the walk and its read is
    stored with the read's fingerprint, which the next run must look at again)."""
    if out.failed:
        return False
    walked = {fp.path: fp for fp in to_prepare(out.changes)}
    return all(
        (p.size, p.mtime_ns) == (walked[p.path].size, walked[p.path].mtime_ns)
        for p in (*out.parsed.values(), *out.touched)
    )


def report(
    survey: Survey,
    changes: ChangeSet[Fingerprint],
    out: Outcomes | None,
    problems: int,
    notes: int,
    duration_s: float,
    warnings: Sequence[str],
    outside: tuple[int, tuple[str, ...]] = (0, ()),
    unchanged: int | None = None,
) -> ReconcileReport:
    """The run's report; `out` None when nothing was prepared (a no-op); `outside`: the notes
    no mapped folder holds, and their folders (`outside_mapping`); `unchanged`: how many notes
    did not change, when `changes` does not list them (a walk equal to the last one)."""
    parsed = out.parsed if out else {}
    changed = sum(1 for p in parsed if p in survey.indexed)
    renamed = len(out.renames) if out else 0
    kept = len(out.kept) if out else 0
    touched = len(out.touched) if out else 0
    return ReconcileReport(
        mode=survey.mode,
        added=len(parsed) - changed - renamed,
        changed=changed,
        removed=len(changes.gone) - renamed,
        renamed=renamed,
        # Touched notes are unchanged (same bytes); `touched` counts them again.
        unchanged=(len(changes.unchanged) if unchanged is None else unchanged) + kept + touched,
        touched=touched,
        problems=problems,
        notes=notes,
        duration_s=duration_s,
        warnings=tuple(dict.fromkeys(warnings)),
        outside_mapping=outside[0],
        outside_folders=outside[1],
    )


def outside_mapping(config: Config, survey: Survey) -> tuple[int, tuple[str, ...]]:
    """The notes of a whole-vault walk that no mapped folder holds (a first run's `--map`
    leaves the rest out: the report says so); none for the watcher's paths."""
    if survey.mode == "paths":
        return 0, ()
    return notes_outside_mapping(config, survey.files)


def problem_changes(survey: Survey, out: Outcomes) -> dict[str, Any]:
    """The problems a run re-examines, and its new ones (`index_writes.replace_problems`)."""
    return {
        "paths": [*out.parsed, *(n.path for n in out.changes.gone)],
        "read_paths": [
            *(p.path for p in out.touched),
            *(p.path for p in out.failed),
            *(survey.candidates or ()),
        ],
        "codes": [*READ_CODES, *SCAN_CODES] if survey.problems is not None else [],
        "read_codes": (*READ_CODES, "conflict_copy"),  # paths mode: `survey.copies`
        "problems": [*out.problems, *(survey.problems or ()), *survey.copies],
    }


def state_after(
    write: Write,
) -> tuple[IndexedNotes, Set[str], set[tuple[str, str, str]]]:
    """The index's notes, files and scan problems once the transaction has written `write`:
    what the next run would read back (`storage.index_state`), made from what this run knows,
    with the changes the transaction makes to `notes`, `files` and `problems`."""
    state, survey, _, out, ident, _ = write
    indexed = survey.indexed
    removed = [n.path for n in out.changes.gone]
    removed += [p for p in out.parsed if p in indexed]
    added = [
        (path, ident.ids[path], p.size, p.mtime_ns, p.content_hash, p.claimed_id)
        for path, p in out.parsed.items()
    ]
    touched = [(p.path, p.size, p.mtime_ns) for p in out.touched]
    notes = state.notes.updated(removed, added, touched, ident.id_changes)
    return notes, survey.files, scan_problems_after(write)


def scan_problems_after(write: Write) -> set[tuple[str, str, str]]:
    """The stored scan and read problems once the transaction has written `write`."""
    from vaultmem.storage.index_writes import problems_after

    state, survey, _, out, _, _ = write
    return problems_after(
        state.scan_problems, (*SCAN_CODES, *READ_CODES), **problem_changes(survey, out)
    )


def state_change(write: Write) -> tuple[dict[str, NoteRow | None], dict[str, bool]] | None:
    """What `state_after` changes of the index's notes and files, as (note rows by path, None
    for a note gone; files by path, False for a file gone): what a writer records as a change
    to the last state record (`storage.index_state`). None when ids of unchanged notes moved,
    which only a whole record says without a pass over every note."""
    _, survey, _, out, ident, links = write
    if ident.id_changes:
        return None
    notes: dict[str, NoteRow | None] = {n.path: None for n in out.changes.gone}
    indexed = survey.indexed  # the watcher's few notes, or all: not a dict of every note
    for p in out.touched:
        known = indexed[p.path]
        notes[p.path] = (known.id, p.size, p.mtime_ns, known.content_hash, known.claimed_id)
    for path, p in out.parsed.items():
        notes[path] = (ident.ids[path], p.size, p.mtime_ns, p.content_hash, p.claimed_id)
    files = dict.fromkeys(links.removed_files, False)
    files.update(dict.fromkeys(links.added_files, True))
    return notes, files


def path_of(fp: Fingerprint) -> str:
    return fp.path


def _still_valid(done: Prepared | None, fp: Fingerprint, known: IndexedNote | None) -> bool:
    """Whether a worker's result still stands for the file and the index as they are now."""
    if done is None or (done.size, done.mtime_ns) != (fp.size, fp.mtime_ns):
        return False  # not prepared, or the file changed after its worker read it
    if done.outcome == "touched":
        return known is not None and known.content_hash == done.content_hash
    return done.outcome == "parsed"


def _added_ids(
    state: State, out: Outcomes, journal: str, journal_ids: Mapping[str, str]
) -> dict[str, str] | None:
    """The new notes' ids when notes only came (`plan.ids_of_added`): none went, no parsed
    note claims another id than it did, the journal is the one the stored ids came from."""
    if (
        state.create
        or basis_journal(state.journal) != journal
        or out.changes.gone
        or not out.changes.new
    ):
        return None
    notes = state.notes
    if (claims := _new_claims(notes, out)) is None:
        return None
    taken = notes.columns()[1]  # a tuple: a few lookups in C beat building a set of 100,000
    return ids_of_added(claims, journal_ids, taken if len(claims) <= 8 else set(taken))


def _moved_ids(
    state: State,
    out: Outcomes,
    journal_ids: Mapping[str, str],
    ids_journal: Mapping[str, str],
    journal: str | None = None,
) -> dict[str, str] | None:
    """The new notes' ids when notes went, and maybe came (a rename is both), in an index
    whose ids no clash salted (`plan.basis_unsalted`): no parsed note claims another id than
    it did, and the journal as read (`journal_ids`) is the one the stored ids came from; new
    renames only add the new paths (`ids_journal`).

    With no id salted, every note took the first id it tried: no note that stays ever tried
    the id of one that went, so each keeps its own, and a new note whose candidate none of
    them holds is in no one's way (`plan.ids_of_added`). So a note deleted or renamed costs
    its own ids, not a pass over every note (~0.5 s at 100,000 notes)."""
    if state.create or not out.changes.gone or not basis_unsalted(state.journal):
        return None
    if journal is None:  # `journal_ids`' digest, unless known
        journal = journal_digest(journal_ids)
    if basis_journal(state.journal) != journal:
        return None
    notes = state.notes
    if (claims := _new_claims(notes, out)) is None:
        return None
    if not claims:
        return {}  # only deletes: nothing to look up among the ids that stay
    gone = {n.id for n in out.changes.gone}
    remaining = set(notes.columns()[1]) - gone
    return ids_of_added(claims, ids_journal, remaining)


def _new_claims(notes: IndexedNotes, out: Outcomes) -> dict[str, str | None] | None:
    """The ids the new parsed notes claim, by path; None when an indexed note parsed again
    claims another id than it did (then ids are assigned afresh)."""
    claims: dict[str, str | None] = {}
    for path, parsed in out.parsed.items():
        if path not in notes:
            claims[path] = parsed.claimed_id
        elif parsed.claimed_id != notes[path].claimed_id:
            return None
    return claims


def _ids_stand(state: State, out: Outcomes, journal: str) -> bool:
    """Whether the stored ids are what `assign_ids` would give now: no note came or went, no
    parsed note claims another id than it did, and the journal is the one they came from."""
    if (
        state.create
        or basis_journal(state.journal) != journal
        or out.changes.new
        or out.changes.gone
    ):
        return False
    notes = state.notes
    return all(p.claimed_id == notes[path].claimed_id for path, p in out.parsed.items())

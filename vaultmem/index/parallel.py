"""Preparing notes for the index: read, hash, parse, resolve and format rows, on every core.

This is where reconcile spends its CPU, so it runs in worker processes when the batch is large
(a process pool: parsing is pure Python, threads would share one core through the GIL) and in
the calling process for a small batch (one edited note, a watcher tick), where starting workers
costs more than it saves. Workers come from a `forkserver` that preloads this module, so no
DuckDB state or threads are ever forked, and the pool has one worker per CPU this process may
use (`os.process_cpu_count()`, else the affinity mask).

The main process sends *paths*, never bytes: a worker reads each note of its chunk itself,
hashes it, and, unless the bytes are the ones the index already holds (a touched file), parses
it, resolves its links against the vault's file list, cuts it into search documents and formats
every row. Rows go to files in the run's staging folder (one JSON object of column lists per table
per chunk, `storage.rows.StagedRows`; postings as TSV lines from `postings_lines`; each worker
appends its chunks to one file per table and postings bucket, `process_stem`) and the main
process gets back one small `Prepared` record per note: outcome, fingerprint, hash, claimed id,
problems. So the main process holds neither the notes' bytes nor their models, and a worker
holds one chunk (~400 KB of Markdown) at a time: peak memory is bounded by a chunk, not by the
vault. The store bulk-loads the files (`storage.index_writes`).

Rows name their note by its *number* in the run (ids are assigned only once every note's claim
is known); the load joins numbers to ids.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from vaultmem.core.config import Config
from vaultmem.core.documents import (
    POSTINGS_BUCKET_BOUNDS,
    SearchDocument,
    boilerplate_tsv_lines,
    bucketed_postings_lines,
    note_documents,
    postings_lines,
)
from vaultmem.core.note_model import ParsedNote, Problem, Resolution
from vaultmem.core.secrets import compile_patterns, redact_value
from vaultmem.files.scan import content_hash, read_note_fingerprinted
from vaultmem.index.conflicts import marker_problem
from vaultmem.index.early_cut import EarlyCut
from vaultmem.note.links import LinkResolver, SubpathIndex, outline_digest, resolve_link
from vaultmem.note.parse import parse_note, redacted_note
from vaultmem.storage.rows import NoteRecord, StagedRows

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import Executor, Future

_R = TypeVar("_R")

Progress = Callable[[int, int], None]

EmbeddedNotes = Sequence[tuple[int, str, Sequence[SearchDocument]]]
"""(note number, title, search documents) of a chunk's parsed notes."""
Embed = Callable[[Path, EmbeddedNotes], Path]
"""Embeds a chunk's documents and stages the vectors in the file it is given: semantic
recall's hook (`search.embedding.stage_vectors`), passed in so that this module stays free of
the model."""

PARALLEL_MIN_BYTES = 1_500_000
"""Below this much Markdown one process beats a pool (measured: benchmarks/bench_parse)."""

BUCKET_POSTINGS_BYTES = 48_000_000
"""From this much Markdown on, the workers write the postings by term bucket and a build sorts
them bucket by bucket: at 100,000 generated notes (210 MB, 22M postings) one sort of them all
spilled past DuckDB's memory limit; sorting the buckets one after the other took 12.6 s
against 16.0 s on a quiet machine (benchmarks/HISTORY.md). 10,000 notes (21 MB) sort in
memory in one go."""

BUCKET_POSTINGS_NOTES = 20_000
"""The same line for an upgrade of the search tables, which counts notes, not bytes: 48 MB is
~23,000 notes of the generated vaults."""

CHUNK_BYTES = 400_000
"""Markdown per task: big enough to amortise a task's overhead, small enough to bound memory."""

Outcome = Literal["parsed", "touched", "failed"]


# The records below are NamedTuples rather than dataclasses: a dataclass compiles its methods
# from source when its module is imported, which a cold one-note edit
# pays; a NamedTuple is as immutable, compares by value and pickles to the workers as well.


class Job(NamedTuple):
    """One note to prepare. `known_hash`: the index's hash of it, when it is indexed."""

    number: int
    path: str
    size: int
    known_hash: str | None


class Prepared(NamedTuple):
    """What a worker hands back for one note; its rows are in the chunk's files.

    `outcome`: `parsed` (rows staged), `touched` (same bytes as indexed: nothing to do but
    record the new fingerprint) or `failed` (unreadable: `problems` says why). `size` and
    `mtime_ns` are those of the bytes read. `subpaths` lists the links into other notes with
    a heading or block subpath, as (link ord, target path, subpath): only the load, which sees
    every note's headings, can check them.
    """

    number: int
    path: str
    outcome: Outcome
    size: int = 0
    mtime_ns: int = 0
    content_hash: str = ""
    claimed_id: str | None = None
    problems: tuple[Problem, ...] = ()
    subpaths: tuple[tuple[int, str, str], ...] = ()
    outline: str = ""
    """`links.outline_digest` of the parsed note's (redacted) headings and blocks."""
    structure: str = ""
    """`notes.structure` of its staged rows (`storage.rows.structure_digest`)."""


class Chunk(NamedTuple):
    """A chunk's results: the notes' records and the files holding their rows."""

    notes: tuple[Prepared, ...]
    staged: dict[str, tuple[Path, int]]
    """{table: (the file its rows were appended to, the bytes of the chunk's object)}: the
    worker's file, shared by its chunks as the postings files are."""
    postings: tuple[Path, ...] = ()
    """The TSV files the chunk's postings were appended to: one, or with
    `Context.bucket_postings` one per bucket that has lines (`<stem>.postings.<bucket>.tsv`).
    They are the worker's, shared by every chunk it prepares in the run (`PostingsWriter`):
    `steps.collect` lists each once."""
    vectors: Path | None = None
    precut: tuple[Path, ...] = ()
    """The worker's files of boilerplate weights cut early (`early_cut.EarlyCut.cut`), shared
    by its chunks like the postings files."""


class Context(NamedTuple):
    """What every worker needs, sent once per worker: the config, every file a link can reach,
    the staging folder and, with semantic recall on, the embedding hook (one call per chunk)."""

    config: Config
    files: Collection[str]
    """Every file a link can reach: made a tuple before it is sent to a worker."""
    out_dir: str
    embed: Embed | None = None
    bucket_postings: bool = False
    """Write the postings by term bucket (`core.documents.bucketed_postings_lines`): a build
    of more than `BUCKET_POSTINGS_BYTES` of Markdown, whose postings DuckDB cannot sort in
    memory at once."""
    run: str = ""
    """A token of this `prepare_all` call, in the names of the files its processes append to
    (`process_stem`): no two calls of a run share one."""
    fresh: bool = False
    """A build from nothing: the workers cut the boilerplate lines they can tell early
    (`early_cut`)."""


def process_stem(kind: str, run: str) -> str:
    """The stem of the files this process appends its chunks' rows and postings to in the call
    `run`: one set of files per process, not per chunk. At 100,000 notes the workers made
    ~12,000 files (7 tables and 15 postings buckets a chunk), each created, opened by the load
    and removed; a new file's first write alone cost ~0.5 ms of CPU on the machines we
    measure on, against ~0.05 ms to append to one."""
    return f"{kind}-{run}-{os.getpid()}"


class PostingsWriter:
    """A chunk's postings lines (`core.documents.postings_lines`), kept whole or, for a large
    build, by term bucket (`bucketed_postings_lines`), then written as TSV files."""

    def __init__(self, bucketed: bool) -> None:
        self.lines: list[str] = []
        self.buckets: list[list[str]] | None = None
        if bucketed:
            self.buckets = [[] for _ in range(len(POSTINGS_BUCKET_BOUNDS) + 1)]

    def add(self, number: int, documents: Sequence[SearchDocument]) -> None:
        if self.buckets is None:
            self.lines.extend(postings_lines(number, documents))
        else:
            bucketed_postings_lines(number, documents, self.buckets)

    def write(self, folder: Path, stem: str) -> tuple[Path, ...]:
        """Append the lines to `<stem>.postings.tsv`, or to `<stem>.postings.<bucket>.tsv` per
        bucket with lines (`storage.search_rows.postings_runs` reads the names back); the
        files are created on first use, closed on return (whole lines: what a reader sees
        once the chunk is reported done)."""
        named = [(f"{stem}.postings.tsv", self.lines)]
        if self.buckets is not None:
            named = [(f"{stem}.postings.{b:02d}.tsv", ls) for b, ls in enumerate(self.buckets)]
        written: list[Path] = []
        for name, lines in named:
            if lines:
                written.append(folder / name)
                with open(written[-1], "a", encoding="utf-8", newline="\n") as handle:
                    handle.writelines(lines)
        return tuple(written)


class _Worker:
    """A process's preparing state: the context and the resolver built from it, once."""

    def __init__(self, context: Context, resolver: LinkResolver | None = None) -> None:
        self.context = context
        self.config = context.config
        self.resolver = resolver if resolver is not None else LinkResolver(context.files)
        self.patterns = compile_patterns(self.config.secret_patterns)
        self.early = EarlyCut(self.config.search_language) if context.fresh else None

    def chunk(self, index: int, jobs: Sequence[Job]) -> Chunk:
        rows = StagedRows()
        postings = PostingsWriter(self.context.bucket_postings)
        embedded: list[tuple[int, str, Sequence[SearchDocument]]] = []
        folders: dict[str, str | None] = {}  # real paths of the chunk's folders, once each
        notes = [self.note(job, rows, postings, embedded, folders) for job in jobs]
        out = Path(self.context.out_dir)
        stem = f"chunk-{index:06d}"
        shared = process_stem("chunk", self.context.run)
        staged = rows.write(out, shared)
        written = postings.write(out, shared)
        precut = self.early.cut(embedded, out, shared) if self.early is not None else ()
        embed = self.context.embed
        vectors = embed(out / f"{stem}.vectors.parquet", embedded) if embed and embedded else None
        return Chunk(tuple(notes), staged, written, vectors, precut)

    def note(
        self,
        job: Job,
        rows: StagedRows,
        postings: PostingsWriter,
        embedded: list[tuple[int, str, Sequence[SearchDocument]]],
        folders: dict[str, str | None],
    ) -> Prepared:
        config = self.config
        path = job.path
        got = read_note_fingerprinted(config, path, folders)
        if isinstance(got, Problem):
            return Prepared(job.number, path, "failed", problems=(got,))
        data, fp = got
        digest = content_hash(data)
        if digest == job.known_hash:
            return Prepared(job.number, path, "touched", fp.size, fp.mtime_ns, digest)
        parsed = parse_note(path, data, max_bytes=config.max_note_bytes)
        if (conflicted := marker_problem(path, data)) is not None:  # git left a conflict
            parsed = ParsedNote(parsed.note, (*parsed.problems, conflicted))
        note = parsed.note
        managed = config.is_managed(path)
        topic = None
        if managed:  # imported here: most runs parse no topic
            from vaultmem.note.topics import read_topic

            topic = read_topic(path, data.decode("utf-8", "replace"))
        del data
        own: list[SubpathIndex] = []  # built on the first self-link with a subpath

        def headings_of(target: str) -> SubpathIndex | None:
            if target != path:
                return None
            if not own:
                own.append(SubpathIndex(note.headings, note.blocks))
            return own[0]

        resolutions: list[Resolution] = []
        subpaths: list[tuple[int, str, str]] = []
        for ord_, link in enumerate(note.links):
            res = resolve_link(link, path, self.resolver, headings_of)
            if res.subpath_found is None and link.subpath and res.path is not None:
                subpaths.append((ord_, res.path, link.subpath))
            resolutions.append(res)
        scope = config.scope_of(path)
        assert scope is not None, path  # the scan yields mapped notes only
        # The index never holds a secret: every text of the note is redacted once its links
        # are resolved (against names, which hold none: `scan.scan_vault`), before documents,
        # postings, vectors and rows are made of it.
        patterns = self.patterns
        note = redacted_note(note, patterns)
        # other notes' subpaths are checked against their (redacted) headings by the load
        subpaths = [(o, target, note.links[o].subpath) for o, target, _ in subpaths]
        if topic is not None:
            topic = redact_value(topic, patterns)
        problems = redact_value(parsed.problems, patterns)
        documents = note_documents(note, config.search_language)
        claimed = topic.id if topic else None
        structure = rows.add_note(
            NoteRecord(
                note=note,
                number=job.number,
                scope=scope[0],
                scope_id=scope[1],
                managed=managed,
                size=fp.size,
                mtime_ns=fp.mtime_ns,
                content_hash=digest,
                claimed_id=claimed,
                resolutions=resolutions,
                documents=documents,
                topic=topic,
            )
        )
        postings.add(job.number, documents)
        embedded.append((job.number, note.title, documents))
        return Prepared(
            job.number,
            path,
            "parsed",
            fp.size,
            fp.mtime_ns,
            digest,
            claimed,
            problems,
            tuple(subpaths),
            outline_digest(note.headings, note.blocks),
            structure,
        )


_WORKER: _Worker | None = None


def _start_worker(owner: int, context: Context) -> None:
    global _WORKER
    _exit_with_owner(owner)
    _WORKER = _Worker(context)


def _run_chunk(index: int, jobs: Sequence[Job]) -> Chunk:
    assert _WORKER is not None, "the pool initializer did not run"
    return _WORKER.chunk(index, jobs)


def _exit_with_owner(owner: int) -> None:
    """Make a worker exit when the process that started the pool dies (`kill -9`, say).

    A pool worker blocks on its task queue forever once its owner is gone, and the forkserver
    that forked it stays up as long as any worker does, so neither notices on its own. Each
    worker therefore watches the owner's pid from a daemon thread.
    """

    def watch() -> None:
        while pid_alive(owner):
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="vaultmem-owner-watch", daemon=True).start()


def pid_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed owner not yet reaped by its parent is a zombie: as good as gone
        # Bytes, not text: a text file looks its codec up, importing `encodings.ascii` in
        # the middle of a watcher's first batch whenever another process left a staging folder.
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True


TAPER_CHUNKS = 2
"""Chunks per worker at the end of a pooled batch that are cut to a quarter of CHUNK_BYTES: a
full chunk is ~0.25 s of CPU (10,000 generated notes), so with full chunks to the end one
worker could sit idle that long while the other finishes; quarter chunks cut that wait to a
quarter."""


def chunk_jobs(
    jobs: Sequence[Job], chunk_bytes: int = CHUNK_BYTES, workers: int = 1
) -> list[list[Job]]:
    """Runs of jobs of about `chunk_bytes` of Markdown each (sizes from the scan); with
    `workers` > 1, the last TAPER_CHUNKS chunks' worth per worker in quarter-size runs."""
    taper_from = sum(job.size for job in jobs) - TAPER_CHUNKS * workers * chunk_bytes
    if workers < 2:
        taper_from = -1  # never: one process has no one to wait for
    chunks: list[list[Job]] = [[]]
    size = done = 0
    limit = chunk_bytes
    for job in jobs:
        if done >= taper_from >= 0:
            limit = chunk_bytes // 4
        if size >= limit:
            chunks.append([])
            size = 0
        chunks[-1].append(job)
        size += job.size
        done += job.size
    return [c for c in chunks if c]


def worker_context(preload: Sequence[str]) -> multiprocessing.context.BaseContext:
    """The forkserver context for a pool, its server started (once per process) with this
    process's `sys.path` and no current folder in front of it.

    Python 3.11's server imports its `preload` with a path of its own, whose first entry is the
    current folder (it runs as `python -c`): run from inside a folder holding a `vaultmem/`
    package (another checkout, a hostile download), every worker would run that code instead
    of this process's. Workers then fork from the server, so they import nothing again.
    """
    import multiprocessing
    from multiprocessing import forkserver

    mp = multiprocessing.get_context("forkserver")
    mp.set_forkserver_preload(list(preload))
    path = os.pathsep.join(os.path.abspath(entry) if entry else os.getcwd() for entry in sys.path)
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "PYTHONSAFEPATH")}
    os.environ.update(PYTHONPATH=path, PYTHONSAFEPATH="1")
    try:
        forkserver.ensure_running()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return mp


def worker_count() -> int:
    """The CPUs this process may run on (cgroup quotas aside)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:  # Python 3.13+: honours the affinity mask and -X cpu_count
        return max(1, int(count() or 1))
    return max(1, len(os.sched_getaffinity(0)))


def prepare_all(
    jobs: Sequence[Job],
    context: Context,
    *,
    progress: Progress | None = None,
    resolver: Callable[[], LinkResolver] | None = None,
) -> list[Chunk]:
    """Prepare every job, in a pool when the batch is large; chunk results in job order.

    `resolver` gives the caller's resolver over `context.files` for work done in this process
    (building one for 100,000 files is not free; the caller needs it again for the write).
    """
    pooled = worker_count() >= 2 and sum(job.size for job in jobs) >= PARALLEL_MIN_BYTES
    chunks = chunk_jobs(jobs, workers=worker_count() if pooled else 1)
    context = context._replace(run=os.urandom(4).hex())
    results: dict[int, Chunk] = {}
    done = [0]

    def record(index: int, chunk: Chunk) -> None:
        results[index] = chunk
        done[0] += len(chunk.notes)
        if progress:
            progress(done[0], len(jobs))

    workers = min(worker_count(), len(chunks))
    if pooled and workers >= 2:
        # The pool's modules load only here: a one-note edit parses in this process.
        from concurrent.futures.process import BrokenProcessPool

        # Workers may fail to start (e.g. `__main__` is stdin, which forkserver cannot
        # re-import) or die: every chunk is then prepared here, slower but the same. Not
        # only the chunks left: a worker's files are shared by its chunks, and one that died
        # mid-write left part of a chunk in them.
        try:
            _prepare_in_pool(chunks, context, workers, record)
        except BrokenProcessPool:
            results.clear()
            done[0] = 0
    if len(results) < len(chunks):
        worker = _Worker(context, resolver() if resolver is not None else None)
        for index, chunk in enumerate(chunks):
            if index not in results:
                record(index, worker.chunk(index, chunk))
    return [results[i] for i in range(len(chunks))]


def _prepare_in_pool(
    chunks: list[list[Job]],
    context: Context,
    workers: int,
    record: Callable[[int, Chunk], None],
) -> None:
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=worker_context(["vaultmem.index.parallel"]),
        initializer=_start_worker,
        initargs=(os.getpid(), context._replace(files=tuple(context.files))),
    ) as pool:
        futures = [pool.submit(_run_chunk, i, chunk) for i, chunk in enumerate(chunks)]
        for index, future in enumerate(futures):
            record(index, future.result())


def in_flight(
    pool: Executor, fn: Callable[..., _R], calls: Iterable[tuple[Any, ...]], limit: int
) -> Iterator[_R]:
    """`fn(*args)` for each of `calls` in `pool`, at most `limit` submitted and unfinished at
    once, the rest not yet taken from `calls` (which may read lazily); each result as its call
    finishes. Bounds what a pool's queue holds in pickles: the upgrade's cut and
    `cut_boilerplate` send text."""
    from concurrent.futures import FIRST_COMPLETED, wait

    running: set[Future[_R]] = set()
    for args in calls:
        if len(running) >= limit:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            yield from (future.result() for future in finished)
        running.add(pool.submit(fn, *args))
    for future in running:
        yield future.result()


CUT_PART_SECTIONS = 3_000
"""Sections per part of `cut_boilerplate`: parts small enough that the few in flight (two per
worker) hold a bounded share of the sections' text in pickles, large enough that each pays for
its round trip many times over."""


def cut_boilerplate(
    sections: Sequence[tuple[Any, ...]], lines: frozenset[int], language: str, folder: Path
) -> list[Path]:
    """`search_rows.BoilerplateCut` in a pool: the sections in contiguous parts, each part's
    weights (`documents.boilerplate_tsv_lines`) written by a worker into `folder`, at most two
    parts per worker in flight. The workers come from the parse pool's server, already up after
    a large build's parse (no DuckDB state is forked); the parts are cut here when they cannot
    start."""
    count = max(1, min(len(sections), max(worker_count(), -(-len(sections) // CUT_PART_SECTIONS))))
    size = -(-len(sections) // count)
    parts = [sections[i * size : (i + 1) * size] for i in range(count)]
    paths = [folder / f"fresh-boilerplate.{i}.tsv" for i in range(count)]
    workers = min(worker_count(), count)
    if workers >= 2:
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        with contextlib.suppress(BrokenProcessPool):
            with ProcessPoolExecutor(
                max_workers=workers,
                mp_context=worker_context(["vaultmem.index.parallel"]),
                initializer=_exit_with_owner,
                initargs=(os.getpid(),),
            ) as pool:
                calls = (
                    (part, lines, language, path) for part, path in zip(parts, paths, strict=True)
                )
                for _ in in_flight(pool, _cut_part, calls, 2 * workers):
                    pass
            return paths
    for part, path in zip(parts, paths, strict=True):
        _cut_part(part, lines, language, path)
    return paths


def _cut_part(
    sections: Sequence[tuple[Any, ...]], lines: frozenset[int], language: str, path: Path
) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.writelines(boilerplate_tsv_lines(sections, lines, language))


STAGING_PREFIX = "vaultmem-postings-"
"""Staging folders are `$TMPDIR/vaultmem-postings-<owner pid>-<random>` (the name predates the
staged rows; tools that clean by it keep working)."""

_STALE_UNOWNED_S = 24 * 3600


@contextmanager
def staging_folder() -> Iterator[Path]:
    """A private folder for this run's staged rows, removed afterwards.

    A run killed with `kill -9` cannot remove its folder; the next run does, once the pid in the
    folder's name is dead (`clean_stale_staging`).
    """
    clean_stale_staging()
    folder = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def clean_stale_staging(root: Path | None = None) -> list[Path]:
    """Remove staging folders whose owner died; return them. Folders of live runs stay."""
    base = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(base.glob(STAGING_PREFIX + "*"))
    except OSError:
        return removed
    now = time.time()
    for folder in entries:
        owner = folder.name[len(STAGING_PREFIX) :].split("-", 1)[0]
        try:
            if owner.isdigit():
                stale = not pid_alive(int(owner))
            else:  # an older run's folder, named without its owner: judged by age
                stale = now - folder.stat().st_mtime > _STALE_UNOWNED_S
            if stale and folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:
            continue  # another user's folder, or removed meanwhile: not ours to worry about
    return removed

"""Upgrades without re-parsing: the search tables made again from what the index holds.

What a reconcile does with an index that another vaultmem (or configuration) built depends on
what differs in `meta` (`what_changed`):

- the search side only (`SEARCH_KEYS`: the tokenizer or stemmer version and `[search] language`
  in `tokenizer_version`, the analysis of unspaced scripts, Hangul and Cyrillic in
  `segment_version`, semantic recall on or off in `embedding_model`, the search tables' layout in
  `search_schema_version`, or vaultmem's own version): the index still holds every note's
  rows, and the search documents are a function of rows it holds
  (`core.documents.documents_of` of the title, aliases, tags, `lang` property and sections;
  `storage.search_upgrade`). `upgrade_search_tables` re-cuts them, with no Markdown read:
  `documents`, `termless_sections`, postings, terms, statistics, boilerplate and vectors.
  When `embedding_model` alone differs (`vectors_only`), nothing is re-cut: the search
  tables are copied, and the vectors left out (recall off) or embedded from the copied
  `documents` (on). When `segment_version` alone differs (`segment_only`), only the notes
  holding a character of `tokenizer.SEGMENTED_CHARS` can have other terms: while they are at
  most half the vault, just they are cut again, in place, in one transaction, as an edit of
  that many notes writes (`_recut_in_place`); none, and only `meta` changes (a change to
  Chinese or Japanese segmentation costs a vault written in English one scan of its text);
- anything else (`parser_version`, `schema_version`: the note model or the note tables;
  `config_digest`: mappings, exclusions, secret patterns): every note is parsed again, as
  before.

The upgrade writes a new file beside the index (`store.rebuild_path`) with the old one attached
read-only, and renames it over the index once committed, under the writer lock, like a build
from nothing: a search during the upgrade reads the old index whole, one after it the new one,
never a half-made one. The CPU part (tokenising every section) runs on every core when the
index holds enough text, in chunks of about `parallel.CHUNK_BYTES`, as a build parses. The
workers also take the boilerplate out of the postings (`documents.without_boilerplate`), which a
build does in its single-threaded load: the lines are those of the old index, which a build
counts again unless a section gained or lost every term; when the count differs, the
postings are cut again under the lines counted.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from vaultmem.core.config import Config

if TYPE_CHECKING:  # reconcile imports this module on every run, a no-op included: DuckDB,
    # the pool and the tokenizer load only when an index is read or upgraded
    from vaultmem.core.documents import SearchDocument
    from vaultmem.index.parallel import Embed
    from vaultmem.storage.index_state import StateRecord
    from vaultmem.storage.search_upgrade import NoteSource
    from vaultmem.storage.store import Connection

Progress = Callable[[int, int], None]
_R = TypeVar("_R")

SEARCH_KEYS = frozenset(
    {
        "search_schema_version",
        "tokenizer_version",
        "segment_version",
        "line_key_version",
        "embedding_model",
        "vaultmem_version",
    }
)
"""`meta` keys whose change leaves every note's rows valid: only the search tables may be
stale."""

RECORDED_ONLY = frozenset({"vaultmem_version"})
"""`meta` keys that decide nothing: vaultmem's own version is recorded for people reading the
index, and a release that changes the index says so through the versions the other keys hold
(the analysis' output is pinned to them: tests/core/test_analysis_versions.py; the built-in
secret patterns are in `config_digest`). An index whose other keys are this code's only has
its `meta` brought up to date, in place; a release that bumps `SEGMENT_VERSION` alone still
takes the scoped cut (`segment_only`), and one that bumps nothing cuts no note again."""

_DUCKDB_MEMORY_MB = 512


class StaleSearchTables(Exception):
    """Raised by reconcile's state read: this index needs `upgrade_search_tables`."""


class _CannotUpgrade(Exception):
    """The index's rows do not make whole notes again (sections missing): parse instead."""


_CANNOT_UPGRADE = "The index's rows could not make its search tables ({}); rebuilt it."


def _differing(meta: Mapping[str, str], wanted: Mapping[str, str]) -> set[str]:
    """The keys whose value in `meta` (an index's) is not `wanted`'s (`reconcile.index_versions`,
    the layout's versions added here)."""
    from vaultmem.storage import store

    expected = {**wanted, **store.SCHEMA_VERSIONS}
    return {key for key, value in expected.items() if meta.get(key) != value}


def _deciding(meta: Mapping[str, str], wanted: Mapping[str, str]) -> set[str]:
    """`_differing` without the keys that decide nothing (`RECORDED_ONLY`)."""
    return _differing(meta, wanted) - RECORDED_ONLY


def what_changed(
    meta: Mapping[str, str], wanted: Mapping[str, str]
) -> Literal["", "search", "all"]:
    """What `meta` lacks against `wanted`: nothing, the search tables only, or everything.
    A `RECORDED_ONLY` key alone reads "search": `upgrade_search_tables` then records it."""
    differ = _differing(meta, wanted)
    if not differ:
        return ""
    return "search" if differ <= SEARCH_KEYS else "all"


def vectors_only(meta: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether semantic recall was turned on or off (or its model changed) and nothing else:
    every search table but `vectors` stands, so the upgrade copies them and, recall on,
    embeds the copied documents, instead of cutting every section again. A cold `reconcile`
    at 10,000 generated notes: off 1.5 s against 3.8-4.1 s, on 9.2-10.8 s against 11.0-11.5 s
    (the embedding is most of it). Still into a new file: deleted in place, the vectors stay
    as free space in the file (130 MB of a 58 MB index at 10,000 notes), and a search
    meanwhile reads the old file whole."""
    return _deciding(meta, wanted) == {"embedding_model"}


def search_only(con: Connection, wanted: Mapping[str, str]) -> bool:
    """Whether the index open on `con` needs its search tables made again, and nothing else."""
    return _stale_search_meta(con, wanted) is not None


def _stale_search_meta(con: Connection, wanted: Mapping[str, str]) -> dict[str, str] | None:
    """The `meta` of the index open on `con` when only its search side is stale, else None."""
    from vaultmem.storage import store

    try:
        meta = store.read_meta(con)
    except store.DatabaseError:
        return None  # no `meta`: an index of no known shape, built again from the vault
    return meta if what_changed(meta, wanted) == "search" else None


def upgrade_search_tables(
    config: Config,
    wanted: Mapping[str, str],
    warnings: list[str],
    *,
    progress: Progress | None = None,
    lock_timeout_s: float = 30.0,
) -> bool:
    """Make the index's search tables again from its rows, for the versions `wanted`; under
    the writer lock, into a new file renamed over the index (a segmentation-only change: in
    place, for the notes it can touch, `_recut_in_place`; another release of the same analysis:
    `meta` alone, in place, `_record_versions`). False when its rows cannot make
    whole notes (an index damaged by hand): the caller then builds from the vault."""
    from vaultmem.files.lock import writer_lock
    from vaultmem.index.parallel import staging_folder
    from vaultmem.storage import store
    from vaultmem.storage.index_state import forget_before_write

    index = config.index_path
    with writer_lock(config.state_dir, timeout_s=lock_timeout_s):
        con = store.connect(index, read_only=True)
        try:
            meta = _stale_search_meta(con, wanted)
        finally:
            con.close()
        if meta is None:
            return True  # another writer upgraded it, or it needs a build: reconcile sees
        scoped = segment_only(meta, wanted)
        notes_state = _recorded_notes_state(config.state_dir, index)
        forget_before_write(config.state_dir)
        if not _deciding(meta, wanted):  # another release, the same analysis: nothing to cut
            _record_versions(index, wanted)
            if notes_state is not None:
                _carry_notes_state(config.state_dir, index, notes_state, wanted)
            return True
        if scoped:
            try:
                with staging_folder() as staging:
                    cut = _recut_in_place(config, index, wanted, staging, progress)
            except _CannotUpgrade as error:  # rolled back: the index is as it was
                warnings.append(_CANNOT_UPGRADE.format(error))
                return False
            if cut is not None:
                if notes_state is not None:
                    _carry_notes_state(config.state_dir, index, notes_state, wanted)
                warnings.append(
                    "The index's search tables were made by another version of the analysis "
                    "of unspaced scripts, Hangul and Cyrillic: "
                    + (
                        f"made them again for {cut} note{'s' if cut > 1 else ''} holding such "
                        "text (no note was read)."
                        if cut
                        else "no note holds such text, so they stand as they are."
                    )
                )
                return True
        tmp = store.rebuild_path(index)
        store.remove_index(tmp)
        try:
            with staging_folder() as staging:
                _build(config, wanted, index, tmp, staging, progress)
        except _CannotUpgrade as error:
            store.remove_index(tmp)
            warnings.append(_CANNOT_UPGRADE.format(error))
            return False
        index.with_name(index.name + ".wal").unlink(missing_ok=True)
        tmp.replace(index)
        if notes_state is not None:
            _carry_notes_state(config.state_dir, index, notes_state, wanted)
    warnings.append(
        "The index's search tables were made by another version or configuration; made them "
        "again from the index (no note was read)."
    )
    return True


def segment_only(meta: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Whether only the analysis of unspaced scripts, Hangul and Cyrillic changed to this
    code's (`SEGMENT_VERSION`, or an index from before it was recorded): the terms of every
    note without such text stand. Not when the index's version is newer (another vaultmem, an
    older one run after it): that analysis may have reached scripts this code's
    `SEGMENTED_CHARS` lacks, whose notes a scoped cut would leave as it made them."""
    if _deciding(meta, wanted) != {"segment_version"}:
        return False
    recorded, ours = meta.get("segment_version", "0"), wanted["segment_version"]
    return recorded.isdigit() and ours.isdigit() and int(recorded) < int(ours)


def _record_versions(index: Path, wanted: Mapping[str, str]) -> None:
    """Bring the index's `meta` up to `wanted`, in place, in one transaction: the upgrade of
    an index whose search tables stand (`RECORDED_ONLY` keys alone differ)."""
    from vaultmem.storage import store

    con = store.connect(index, read_only=False)
    try:
        with store.transaction(con):
            _current_meta(con, wanted)
    finally:
        con.close()


def _current_meta(con: Connection, wanted: Mapping[str, str]) -> None:
    """Set every `meta` key of the index open on `con` that is not `wanted`'s (or the
    layout's versions) to its value, inside the caller's transaction."""
    from vaultmem.storage import search_upgrade, store

    expected = {**wanted, **store.SCHEMA_VERSIONS}
    stale = _differing(store.read_meta(con), wanted)
    search_upgrade.set_meta(con, {key: expected[key] for key in stale})


def _recorded_notes_state(state_dir: Path, index: Path) -> StateRecord | None:
    """The state record of the index about to be upgraded, when it stands for that very file
    (its versions are the old ones: that is why the upgrade runs)."""
    from vaultmem.storage.index_state import read_state_record
    from vaultmem.storage.last_survey import index_token

    record = read_state_record(state_dir)
    if record is None or record.token != index_token(index):
        return None
    return record


def _carry_notes_state(
    state_dir: Path, index: Path, record: StateRecord, wanted: Mapping[str, str]
) -> None:
    """Record the old index's notes state for the upgraded file. An upgrade copies every note
    table as it is, so the notes, files, scan problems and journal the record holds are the new
    file's too; only its identity and versions are new. Without it the reconcile that follows
    the upgrade, and the next run after it, read the rows back from DuckDB (~0.4 s at 100,000
    notes in a cold process)."""
    from vaultmem.storage.index_state import write_state_record
    from vaultmem.storage.last_survey import index_token

    write_state_record(state_dir, record._replace(token=index_token(index), versions=dict(wanted)))


def _build(
    config: Config,
    wanted: Mapping[str, str],
    index: Path,
    tmp: Path,
    staging: Path,
    progress: Progress | None,
) -> None:
    from vaultmem.storage import search_upgrade, store
    from vaultmem.storage.index_writes import bound_memory

    con = store.connect(tmp, read_only=False)
    try:
        bound_memory(con, _DUCKDB_MEMORY_MB, staging / "spill")
        search_upgrade.attach_old(con, index)
        with store.transaction(con):
            old_meta = search_upgrade.old_meta(con)
            total = search_upgrade.copy_tables(con, wanted)
            if vectors_only(old_meta, wanted):
                search_upgrade.copy_search_tables(con)
                if config.semantic:
                    _embed_all(con, total, staging, progress)
                elif progress:
                    progress(total, total)
            else:
                _remake(con, config, old_meta, wanted, total, staging, progress)
        search_upgrade.detach_old(con)
    finally:
        con.close()


SCOPED_SHARE = 0.5
"""A segmentation-only upgrade cuts again, in place, just the notes holding text of an unspaced
script or Hangul while they are at most this share of the vault; past it, every note is cut
into a new file, as a tokenizer change does."""


def _recut_in_place(
    config: Config,
    index: Path,
    wanted: Mapping[str, str],
    staging: Path,
    progress: Progress | None,
) -> int | None:
    """Only the analysis of unspaced scripts, Hangul and Cyrillic changed (`segment_only`): cut
    again just the notes whose text holds such a character (`tokenizer.SEGMENTED_CHARS`), in one
    transaction on the index itself, and bring `meta` up to `wanted`. No other note's terms
    can differ, so the index is then what cutting every note gives. Returns how many notes
    were cut (0: `meta` alone changed), or None, with nothing written, when they are more
    than `SCOPED_SHARE` of the vault.

    A one-note edit's write, for many notes at once: their postings go (counted per term),
    their documents are made again from their stored sections, and the postings load as an
    edit's do (`search_rows.load_changed_postings`: boilerplate lines recounted as a delta,
    `terms` and `search_stats` moved by the notes' own change). A reader waits for it as for
    any write; a crash rolls it back."""
    from vaultmem.core.tokenizer import SEGMENTED_CHARS
    from vaultmem.storage import index_writes, search_upgrade, store

    con = store.connect(index, read_only=False)
    try:
        index_writes.bound_memory(con, _DUCKDB_MEMORY_MB, staging / "spill")
        with store.transaction(con):
            scoped = search_upgrade.number_scoped_notes(con, SEGMENTED_CHARS)
            if len(scoped) > index_writes.counts(con)[1] * SCOPED_SHARE:
                return None
            if scoped:
                _recut_numbered(con, config, scoped, staging, progress)
            _current_meta(con, wanted)
        return len(scoped)
    finally:
        con.close()


def _recut_numbered(
    con: Connection,
    config: Config,
    ids: Sequence[str],
    staging: Path,
    progress: Progress | None,
) -> None:
    """Cut the notes of `note_numbers` (`ids`) again from their stored rows and replace their
    search rows (`_recut_in_place`)."""
    from vaultmem.storage import search_rows, search_upgrade

    def sources() -> Iterator[NoteSource]:  # the line keys stand: only segment_version moved
        return search_upgrade.note_sources(con, stored_keys=True, old=False)

    # Full postings, boilerplate and all: the load takes the boilerplate out, as an edit's does.
    cut = _cut_all(sources, len(ids), config, staging, progress, frozenset())
    removed_df = search_rows.delete_postings(con, ids)
    removed = search_rows.notes_documents(con, ids)
    search_upgrade.save_scoped_sections(con)
    search_upgrade.drop_scoped_sections(con)
    search_upgrade.load_scoped_documents(con, cut.documents)
    search_rows.load_changed_postings(
        con,
        cut.postings,
        removed_df=removed_df,
        removed=removed,
        max_line_bytes=config.max_note_bytes + 64,
        language=config.search_language,
    )
    if config.semantic:
        from vaultmem.storage import vector_queries

        vector_queries.load_staged_vectors(con, cut.vectors)


def _remake(
    con: Connection,
    config: Config,
    old_meta: Mapping[str, str],
    wanted: Mapping[str, str],
    total: int,
    staging: Path,
    progress: Progress | None,
) -> None:
    """The search documents and tables cut again from every note's rows, on `con` (the new
    file, the old one attached)."""
    from vaultmem.storage import search_rows, search_upgrade

    # The stored line keys stand while the code counts them as the old index did.
    keep_keys = old_meta.get("line_key_version") == wanted.get("line_key_version")

    def sources() -> Iterator[NoteSource]:
        return search_upgrade.note_sources(con, stored_keys=keep_keys)

    lines = search_upgrade.old_boilerplate_lines(con)
    cut = _cut_all(sources, total, config, staging, progress, lines)
    search_upgrade.load_documents(con, cut.documents)
    counted = search_rows.count_boilerplate_lines(con)
    now = frozenset(int(k) for k, _ in counted)
    if now != lines:  # the workers left out other lines than the vault repeats now
        again = _cut_all(sources, total, config, staging, None, now, again=True)
        cut = cut._replace(postings=again.postings)
    search_rows.build_postings(
        con,
        cut.postings,
        max_line_bytes=config.max_note_bytes + 64,
        language=config.search_language,
        scored=counted,
    )
    if config.semantic:
        from vaultmem.storage import vector_queries

        vector_queries.load_staged_vectors(con, cut.vectors)


# -- re-cutting the documents, on every core ----------------------------------------------------


class _Context(NamedTuple):
    language: str
    out_dir: str
    embed: Embed | None
    boilerplate: frozenset[int]
    """The lines whose weights the postings leave out (`documents.without_boilerplate`)."""
    stem: str
    bucket_postings: bool = False
    """Write the postings by term bucket, as a large build does (`parallel.Context`)."""
    run: str = ""
    """This cut's token in the names of the postings files (`parallel.process_stem`)."""


class _Cut(NamedTuple):
    """A chunk's files: documents (JSON column lists), postings (TSV), vectors (Parquet)."""

    notes: int
    documents: Path
    postings: tuple[Path, ...]
    vectors: Path | None


class _AllCut(NamedTuple):
    documents: list[Path]
    postings: list[Path]
    vectors: list[Path]


def _cut_all(
    sources: Callable[[], Iterator[NoteSource]],
    total: int,
    config: Config,
    staging: Path,
    progress: Progress | None,
    boilerplate: frozenset[int],
    *,
    again: bool = False,
) -> _AllCut:
    """Every note's documents cut (`_cut_chunk`), in a pool when the index holds enough text;
    `sources` reads the notes (again, should the pool fail to start).

    The postings leave out what the `boilerplate` lines add: the old index's lines, which a
    build from nothing counts again unless a section gained or lost every term; the caller
    then cuts `again` with the lines counted, for the postings alone (no vectors)."""
    from vaultmem.index.parallel import (
        BUCKET_POSTINGS_NOTES,
        CHUNK_BYTES,
        PARALLEL_MIN_BYTES,
        worker_count,
    )

    embed: Embed | None = None
    if config.semantic and not again:
        from vaultmem.search import embedding

        embedding.embedder()  # a missing extra fails before any work
        embed = embedding.stage_vectors
    stem = "again" if again else "upgrade"
    bucketed = total >= BUCKET_POSTINGS_NOTES
    run = os.urandom(4).hex()  # the `again` cut appends to files of its own
    context = _Context(
        config.search_language, str(staging), embed, boilerplate, stem, bucketed, run
    )
    done = [0]
    out = _AllCut([], [], [])

    def record(cut: _Cut) -> None:
        out.documents.append(cut.documents)
        # a worker's chunks append to the same postings files: each is listed once
        out.postings.extend(p for p in cut.postings if p not in out.postings)
        if cut.vectors is not None:
            out.vectors.append(cut.vectors)
        done[0] += cut.notes
        if progress:
            progress(done[0], total)

    chunks = _chunks(sources())
    few = PARALLEL_MIN_BYTES // CHUNK_BYTES  # up to this many chunks, one process is faster
    first = [chunk for _, chunk in zip(range(few + 1), chunks, strict=False)]
    workers = worker_count()
    if workers >= 2 and len(first) > few:
        from concurrent.futures.process import BrokenProcessPool

        try:
            calls = ((i, notes, context) for i, notes in enumerate(_chain(first, chunks)))
            _in_pool(_cut_chunk, calls, workers, record)
            return out
        except BrokenProcessPool:  # workers could not start (`__main__` is stdin, say)
            out = _AllCut([], [], [])
            done[0] = 0
            first, chunks = [], _chunks(sources())
    for index, notes in enumerate(_chain(first, chunks)):
        record(_cut_chunk(index, notes, context))
    return out


def _chunks(sources: Iterator[NoteSource]) -> Iterator[list[NoteSource]]:
    from vaultmem.index.parallel import CHUNK_BYTES

    chunk: list[NoteSource] = []
    size = 0
    for source in sources:
        chunk.append(source)
        size += source.size()
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _chain(
    first: list[list[NoteSource]], rest: Iterator[list[NoteSource]]
) -> Iterator[list[NoteSource]]:
    yield from first
    yield from rest


def _in_pool(
    fn: Callable[..., _R],
    calls: Iterable[tuple[Any, ...]],
    workers: int,
    record: Callable[[_R], None],
) -> None:
    """`fn(*call)` for each call in a forkserver pool (no DuckDB state is forked), at most two
    per worker in flight: the main process reads the next chunks' text while the workers
    tokenise or embed."""
    from concurrent.futures import ProcessPoolExecutor

    from vaultmem.index.parallel import _exit_with_owner, in_flight, worker_context

    mp = worker_context(["vaultmem.index.upgrade", "vaultmem.core.documents"])
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=mp, initializer=_exit_with_owner, initargs=(os.getpid(),)
    ) as pool:
        for result in in_flight(pool, fn, calls, 2 * workers):
            record(result)


_Embedded = tuple[int, str, list["SearchDocument"]]


def _embed_all(con: Connection, total: int, staging: Path, progress: Progress | None) -> None:
    """Vectors for every copied document (semantic recall turned on, or another model), in
    a pool when the index holds enough text: the documents' text is the index's, so no
    section is cut again."""
    from concurrent.futures.process import BrokenProcessPool

    from vaultmem.index.parallel import CHUNK_BYTES, PARALLEL_MIN_BYTES, worker_count
    from vaultmem.search import embedding
    from vaultmem.storage import search_upgrade, vector_queries

    embedding.embedder()  # a missing extra fails before any work
    text_bytes = search_upgrade.documents_text_length(con)
    paths: list[Path] = []
    done = [0]

    def record(cut: tuple[int, Path]) -> None:
        paths.append(cut[1])
        done[0] += cut[0]
        if progress:
            progress(done[0], total)

    def calls() -> Iterator[tuple[int, list[_Embedded], str]]:
        chunk: list[_Embedded] = []
        size = index = 0
        for note in search_upgrade.embedded_documents(con):
            chunk.append(note)
            size += sum(len(d.text) for d in note[2])
            if size >= CHUNK_BYTES:
                yield index, chunk, str(staging)
                chunk, size, index = [], 0, index + 1
        if chunk:
            yield index, chunk, str(staging)

    workers = worker_count()
    if workers >= 2 and text_bytes >= PARALLEL_MIN_BYTES:
        try:
            _in_pool(_embed_chunk, calls(), workers, record)
            vector_queries.load_staged_vectors(con, paths)
            return
        except BrokenProcessPool:  # workers could not start (`__main__` is stdin, say)
            paths.clear()
            done[0] = 0
    for call in calls():
        record(_embed_chunk(*call))
    vector_queries.load_staged_vectors(con, paths)


def _embed_chunk(index: int, notes: Sequence[_Embedded], out_dir: str) -> tuple[int, Path]:
    """A chunk's documents embedded into a staged Parquet file (`stage_vectors`)."""
    from vaultmem.search.embedding import stage_vectors

    return len(notes), stage_vectors(Path(out_dir) / f"embed-{index:06d}.vectors.parquet", notes)


def _cut_chunk(index: int, notes: Sequence[NoteSource], context: _Context) -> _Cut:
    """A chunk's notes cut into search documents, as a parse worker cuts them: the documents'
    lengths and line keys, postings TSV and (semantic recall) vectors, in files."""
    from vaultmem.core.documents import documents_of, without_boilerplate
    from vaultmem.index.parallel import PostingsWriter, process_stem

    columns: dict[str, list[object]] = {
        "number": [],
        "ord": [],
        "length": [],
        "line_keys": [],
    }
    postings = PostingsWriter(context.bucket_postings)
    embedded = []
    boilerplate, language = context.boilerplate, context.language
    seen: dict[str, Counter[str]] = {}  # a boilerplate line's terms, counted once a chunk
    for source in notes:
        sections = source.sections
        if any(s.ord != i for i, s in enumerate(sections, start=1)):
            raise _CannotUpgrade(f"note number {source.number} misses a section")
        documents = documents_of(
            source.title,
            source.aliases,
            source.tags,
            sections,
            source.lang,
            context.language,
            [s.line_keys for s in sections],
        )
        for doc in documents:
            columns["number"].append(source.number)
            columns["ord"].append(doc.ord)
            columns["length"].append(doc.length)
            columns["line_keys"].append(list(doc.line_keys))
        scored = documents
        if boilerplate:
            scored = [without_boilerplate(d, boilerplate, language, seen) for d in documents]
        postings.add(source.number, scored)
        embedded.append((source.number, source.title, documents))
    out = Path(context.out_dir)
    stem = f"{context.stem}-{index:06d}"
    documents_path = out / f"{stem}.documents.json"
    with open(documents_path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(columns))
    written = postings.write(out, process_stem(context.stem, context.run))
    embed = context.embed
    vectors = embed(out / f"{stem}.vectors.parquet", embedded) if embed and embedded else None
    return _Cut(len(notes), documents_path, written, vectors)

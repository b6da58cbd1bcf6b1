"""Reconcile's write: the steps' values (`steps.Write`) into the index, in one DuckDB
transaction (every statement in `storage.index_writes` and `storage.search_rows`).

Delete the changed and gone notes' rows, bulk-load the staged files (numbers joined to ids),
check the new links' heading subpaths, re-resolve the affected stored links, update terms.
A one-note edit touches that note's rows only: its postings go by integer `note_key`, and
`terms.df` moves by the note's own delta (its old documents' terms out, the new ones in).
The two link steps' decisions are pure functions (`subpath_updates`, `link_updates`) of
what the index answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.core.note_model import Link
from vaultmem.index.steps import (
    Identities,
    Outcomes,
    ReconcileReport,
    Run,
    Write,
    index_versions,
    outside_mapping,
    problem_changes,
    report,
)

if TYPE_CHECKING:
    from vaultmem.core.note_model import Block, Heading, Resolution
    from vaultmem.note.links import LinkResolver, SubpathIndex
    from vaultmem.storage.index_writes import StoredLink, StoredOutline
    from vaultmem.storage.store import Connection

HEADINGS_BATCH = 20_000
"""Target notes whose headings and blocks the subpath check reads per query (each query scans
`headings` and `blocks` whole: at 100,000 notes, 53,000 targets take 3 queries, not 19)."""
FEW_OUTLINES = 64
"""Up to this many parsed notes, the deletes return their old headings and blocks, so that a
note whose outline an edit kept is no target to re-resolve links into (`steady_targets`)."""
DUCKDB_MEMORY_MB = 512
"""DuckDB's share of a reconcile's memory; loads beyond it spill to the staging folder."""


def transaction(
    run: Run,
    index_path: Path,
    write: Write,
    resolver: Callable[[], LinkResolver],
    warnings: Sequence[str],
    con: Connection | None = None,
) -> ReconcileReport:
    """Write `write` into the index at `index_path`, through `con` when given; `con` (or the
    connection opened here) is closed on the way out. The report is recorded in `runs`."""
    from vaultmem.note.links import file_name_key
    from vaultmem.storage import index_writes as writes
    from vaultmem.storage import search_rows, store

    config = run.config
    state, survey, prep, out, ident, links = write
    create = state.create
    if con is None:
        con = store.connect(index_path, read_only=False)
    try:
        writes.bound_memory(con, DUCKDB_MEMORY_MB, prep.spill_dir)
        with store.transaction(con):
            if create:
                store.create_schema(con, index_versions(config))
            removed_df = search_rows.delete_postings(con, ident.removed_ids)
            removed = search_rows.notes_documents(con, () if create else ident.removed_ids)
            was = writes.delete_notes(
                con,
                ident.removed_ids,
                postings=False,
                outlines=len(out.parsed) <= FEW_OUTLINES,
                structures=None if create else edited_structures(write),
            )
            writes.replace_problems(
                con, **problem_changes(survey, out), stored=None if create else state.scan_problems
            )
            writes.change_ids(con, ident.id_changes)
            if ident.journal != state.journal:  # else `meta` holds this digest already
                writes.record_journal(con, ident.journal)
            writes.number_notes(
                con, [(p.number, ident.ids[path]) for path, p in out.parsed.items()], was.kept
            )
            kept_paths = frozenset(path for path in out.parsed if ident.ids[path] in was.kept)
            writes.load_staged(
                con, prep.staged, prep.largest, structure=len(kept_paths) < len(out.parsed)
            )
            steady = frozenset() if create else steady_targets(write, was.outlines, kept_paths)
            known = known_subpaths(out, was.subpaths, steady)
            check_subpaths(con, out, ident, known, kept_paths)
            if not create:
                reresolve(con, write, resolver, steady, was.kept)
            if create:  # read once, straight into `postings`
                from vaultmem.index.parallel import cut_boilerplate

                search_rows.build_postings(
                    con,
                    prep.postings,
                    max_line_bytes=config.max_note_bytes + 64,
                    language=config.search_language,
                    cut=cut_boilerplate,
                    precut=prep.precut,
                )
            else:
                search_rows.load_changed_postings(
                    con,
                    prep.postings,
                    removed_df=removed_df,
                    removed=removed,
                    max_line_bytes=config.max_note_bytes + 64,
                    language=config.search_language,
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
            done = report(
                survey,
                out.changes,
                out,
                problem_count,
                note_count,
                time.perf_counter() - run.started,
                warnings,
                outside_mapping(config, survey),
            )
            writes.record_run(
                con,
                run.started_at,
                done.duration_s * 1000,
                done.mode,
                done.added,
                done.changed,
                done.removed,
                done.renamed,
                done.unchanged,
                done.problems,
            )
    finally:
        con.close()
    return done


# -- links after the load -------------------------------------------------------------------


def check_subpaths(
    con: Connection,
    out: Outcomes,
    ident: Identities,
    known: Mapping[tuple[str, str], bool] | None = None,
    kept: Collection[str] = (),
) -> None:
    """Check the new links' heading and block subpaths into other notes, now that every
    note's headings are in the index; a (target, subpath) in `known` takes its answer from
    there (`known_subpaths`) instead of the target's headings. `kept`: parsed notes whose
    links stayed in the index as they were (`edited_structures`), answers and all."""
    from vaultmem.storage import index_writes as writes

    by_target = subpath_targets(out, ident, kept)
    answered: list[tuple[str, int, bool | None]] = []
    if known:
        for target in list(by_target):
            links = by_target[target]
            if all((target, subpath) in known for _, _, subpath in links):
                answered += [(s, o, known[(target, subpath)]) for s, o, subpath in links]
                del by_target[target]
    writes.set_subpaths_found(con, answered)
    targets = sorted(by_target)
    # Batched by target, not by link: a batch's queries read each target's headings once
    # (1.4 against 0.36 s of CPU for the 92,000 subpath links of 100,000 notes).
    for start in range(0, len(targets), HEADINGS_BATCH):
        batch = targets[start : start + HEADINGS_BATCH]
        outlines = writes.outlines_by_path(con, batch)
        writes.set_subpaths_found(con, subpath_updates(batch, by_target, outlines))


def known_subpaths(
    out: Outcomes, stored: Mapping[tuple[str, str], bool], steady: frozenset[str]
) -> dict[tuple[str, str], bool]:
    """The stored answers of the edited notes' subpath links (`index_writes.Deleted`) that
    still hold: into a target this run did not parse, or parsed with the outline it had
    (`steady`). A subpath is checked against its target's headings and blocks alone, so a
    save that keeps its links (the usual one) reads no other note's headings (~30 ms at
    100,000 notes: the headings table has no index by note)."""
    parsed = out.parsed
    return {key: found for key, found in stored.items() if key[0] not in parsed or key[0] in steady}


def subpath_targets(
    out: Outcomes, ident: Identities, kept: Collection[str] = ()
) -> dict[str, list[tuple[str, int, str]]]:
    """The parsed notes' subpath links by target path: (source id, ord, subpath); not those
    of the `kept` notes, whose links were not written again."""
    by_target: dict[str, list[tuple[str, int, str]]] = {}
    for path, prepared in out.parsed.items():
        if path in kept:
            continue
        source = ident.ids[path]
        for ord_, target, subpath in prepared.subpaths:
            by_target.setdefault(target, []).append((source, ord_, subpath))
    return by_target


def subpath_updates(
    batch: Sequence[str],
    by_target: Mapping[str, list[tuple[str, int, str]]],
    outlines: Mapping[str, StoredOutline],
) -> list[tuple[str, int, bool | None]]:
    """(source id, ord, found) for each subpath link into `batch`'s targets that the index
    holds (`outlines`: `index_writes.outlines_by_path`'s answer)."""
    from vaultmem.note.links import SubpathIndex

    return [
        (source, ord_, index.matches(subpath))
        for target in batch
        if (found := outlines.get(target)) is not None
        for index in (SubpathIndex.of_anchors(*found),)
        for source, ord_, subpath in by_target[target]
    ]


def edited_structures(write: Write) -> dict[str, str]:
    """{id: new `notes.structure`} of the notes parsed again at the path they were indexed
    at, under the id they had: the notes whose structure rows may stay (`delete_notes`).
    Files that came or went need no exception: `reresolve` answers a kept link again as it
    does any stored note's."""
    indexed, ids = write.survey.indexed, write.ident.ids
    return {
        ids[path]: prepared.structure
        for path, prepared in write.out.parsed.items()
        if prepared.structure and path in indexed and indexed[path].id == ids[path]
    }


def steady_targets(
    write: Write,
    was: Mapping[str, tuple[Sequence[Heading], Sequence[Block]]],
    kept: Collection[str] = (),
) -> frozenset[str]:
    """The parsed notes no stored link into can answer differently: indexed at that path
    before, under the same id, with the outline they had (`was`: old headings and blocks by
    old id), or whose structure rows stayed as they were (`kept` paths: headings and blocks
    among them). A link resolves by path, and its subpath by the outline; an edit of the
    text alone (the usual save) keeps both."""
    from vaultmem.note.links import outline_digest

    indexed = write.survey.indexed
    steady = [path for path in write.out.parsed if path in kept]
    for path, prepared in write.out.parsed.items():
        if path in kept or path not in indexed:
            continue
        old_id = indexed[path].id
        if write.ident.ids[path] != old_id or (old := was.get(old_id)) is None:
            continue
        if outline_digest(*old) == prepared.outline:
            steady.append(path)
    return frozenset(steady)


def reresolve(
    con: Connection,
    write: Write,
    resolver: Callable[[], LinkResolver],
    steady: frozenset[str] = frozenset(),
    kept: frozenset[str] = frozenset(),
) -> None:
    """Re-resolve exactly the stored links whose answer can have changed: by the name keys
    of files that came or went, and into the changed and gone notes but the `steady` ones.
    The links of parsed notes were resolved by the parse, but those of the `kept` ones (ids):
    they stayed as stored, so they are looked at like any other note's."""
    from vaultmem.note.links import SubpathIndex
    from vaultmem.storage import index_writes as writes

    links, ident = write.links, write.ident
    # No stored link points into a file that was not there (a `store`'s new note): its name
    # key finds the links it can take. Asking by path too cost ~55 ms at 650,000 links.
    targets = links.changed_targets - steady - links.added_files
    if not (links.affected_keys or targets):
        return
    fresh = {ident.ids[p] for p in write.out.parsed} - kept
    rows = writes.links_to_reresolve(con, links.affected_keys, targets, fresh)
    if not rows:
        return
    resolved = resolve_stored(rows, resolver())
    wanted = sorted(
        {r.path for row, r in resolved if row[3] and r.path and r.subpath_found is None}
    )
    indexes = {
        path: SubpathIndex.of_anchors(*found)
        for path, found in writes.outlines_by_path(con, wanted).items()
    }
    writes.update_links(con, link_updates(resolved, indexes, ident.ids))


def resolve_stored(
    rows: Sequence[StoredLink], resolver: LinkResolver
) -> list[tuple[StoredLink, Resolution]]:
    """Each stored link with what it resolves to now (subpaths into other notes unchecked),
    resolved once per distinct target, subpath and `resolution_scope`: the backlinks of a
    note whose outline changed are re-resolved together, and 60,000 links into one note
    were 60,000 searches of the resolver for a few hundred answers."""
    from vaultmem.note.links import resolution_scope, resolve_link

    answers: dict[tuple[str, str, str], Resolution] = {}
    resolved = []
    for row in rows:
        key = (row[2], row[3], resolution_scope(row[2], row[4]))
        answer = answers.get(key)
        if answer is None:
            link = Link(row[2], row[3], None, False, 0, "wikilink", None, "")
            answer = answers[key] = resolve_link(link, row[4], resolver, _no_headings)
        resolved.append((row, answer))
    return resolved


def link_updates(
    resolved: Sequence[tuple[StoredLink, Resolution]],
    indexes: Mapping[str, SubpathIndex],
    ids: Mapping[str, str],
) -> list[tuple[str, int, str | None, str | None, bool | None]]:
    """The stored links whose resolution moved, as (source id, ord, path, id, found):
    `indexes` holds the headings of the targets whose subpath must be checked."""
    updates = []
    # Each answer once: many links share a target (a lookup in `ids` bisects the index's
    # paths) and a subpath.
    target_ids: dict[str, str | None] = {}
    found_at: dict[tuple[str, str], bool] = {}
    for (source_id, ord_, _t, subpath, _s, old_path, old_id, old_found), res in resolved:
        path, found = res.path, res.subpath_found
        if subpath and path is not None and found is None and path in indexes:
            found = found_at.get((path, subpath))
            if found is None:
                found = found_at[path, subpath] = indexes[path].matches(subpath)
        target_id = None
        if path:
            if path not in target_ids:
                target_ids[path] = ids.get(path)
            target_id = target_ids[path]
        if (path, target_id, found) != (old_path, old_id, old_found):
            updates.append((source_id, ord_, path, target_id, found))
    return updates


def _no_headings(path: str) -> None:
    return None

"""Reconcile's second step: the workers (`parallel`) read, hash, parse, resolve and format the
rows of the notes to prepare into staging files, and hand back one small record per note
(`steps.Preparation`). No lock is held meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.files.scan import Fingerprint
from vaultmem.index.steps import Preparation, Run, Survey, collect, path_of

if TYPE_CHECKING:
    from vaultmem.note.links import LazyLinkResolver, LinkResolver


def prepare(
    run: Run,
    todo: Sequence[Fingerprint],
    survey: Survey,
    staging: Path,
    first_number: int,
    resolver: Callable[[], LinkResolver],
    *,
    fresh: bool = False,
) -> Preparation:
    """Prepare the notes `todo` in the workers, numbered from `first_number`, their rows
    staged under `staging`. `resolver` gives the run's link resolver over `survey.files`
    for the work done in this process. `fresh`: for a build from nothing (the workers then
    cut the boilerplate they can tell, `early_cut`)."""
    from vaultmem.index.parallel import BUCKET_POSTINGS_BYTES, Context, Embed, Job, prepare_all

    staging.mkdir(parents=True, exist_ok=True)
    jobs = [
        Job(
            first_number + i,
            fp.path,
            fp.size,
            known.content_hash if (known := survey.indexed.get(fp.path)) else None,
        )
        for i, fp in enumerate(sorted(todo, key=path_of))
    ]
    embed: Embed | None = None
    if run.config.semantic:  # the workers embed the documents they make
        from vaultmem.search import embedding

        embed = embedding.stage_vectors
    # Unsorted: a resolver's answers do not depend on the order it is given files in (its
    # buckets sort themselves), and sorting 100,000 paths cost a one-note edit ~35 ms.
    bucketed = sum(job.size for job in jobs) >= BUCKET_POSTINGS_BYTES
    context = Context(run.config, survey.files, str(staging), embed, bucketed, fresh=fresh)
    chunks = prepare_all(jobs, context, progress=run.progress, resolver=resolver) if jobs else []
    return collect(chunks, first_number + len(jobs), staging.parent / "spill")


_LAST_RESOLVER: list[tuple[Set[str], LazyLinkResolver]] = []
"""The last in-process resolver and the very file set it was made over: the watcher's next
batch, when no file came or went, gets the same set back (`survey_paths`) and takes the
resolver with what it indexed so far; making it again cost ~0.04 s at 100,000 files."""


def link_resolver(files: Set[str]) -> Callable[[], LinkResolver]:
    """One resolver over a survey's files, built once (on first use) for the run's in-process
    work: a lazy one, which indexes only the name keys the run's links ask for (a one-note
    edit asks a handful; a large batch goes to the workers, each with its own). A resolver's
    answers depend on the files alone, so one made over this very set is taken again. Files
    still joined as the state record keeps them (a run named by path) are searched as they
    are, not split first (~20 ms at 100,000 files). Each call is a run of its own
    (`LazyLinkResolver.begin_run`)."""
    if _LAST_RESOLVER and _LAST_RESOLVER[0][0] is files:
        _LAST_RESOLVER[0][1].begin_run()

    def resolver() -> LinkResolver:
        if _LAST_RESOLVER and _LAST_RESOLVER[0][0] is files:
            return _LAST_RESOLVER[0][1]
        from vaultmem.note.links import LazyLinkResolver
        from vaultmem.storage.index_state import ListedFiles

        if isinstance(files, ListedFiles):
            made = LazyLinkResolver(files, lines=files.lines())
        else:
            made = LazyLinkResolver(tuple(files))
        _LAST_RESOLVER[:] = [(files, made)]
        return made

    return resolver

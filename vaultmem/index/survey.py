"""Reconcile's first step, the survey: the stat walk of the vault (or of the watcher's paths),
and the last survey that lets a walk equal to it end the run with the index closed.

Each function reads the file system (and `storage.last_survey`'s small file) and returns a
`steps` value; deciding from them is `steps`' job.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Set

from vaultmem.core.config import Config
from vaultmem.files import folder_cache
from vaultmem.files.scan import is_eligible_file, scan_paths, scan_vault
from vaultmem.index.plan import IndexedNotes, survey_digest
from vaultmem.index.steps import Mode, State, Survey, index_versions
from vaultmem.storage.index_state import ListedFiles, join_listing
from vaultmem.storage.last_survey import (
    IndexToken,
    LastSurvey,
    index_token,
    read_last_survey,
    write_last_survey,
)


def walk(config: Config, rebuild: bool) -> Survey:
    """The stat walk of the whole vault, before the index is read (`indexed` empty). Only
    the folders changed since the last walk are listed (`files.folder_cache`); `rebuild`
    lists every one."""
    folders = folder_cache.load(config, time.time_ns(), fresh=rebuild)
    scan = scan_vault(config, folders)
    folder_cache.save(config, folders)
    mode: Mode = "rebuild" if rebuild else "full"
    listing = join_listing(scan.files)  # sorted: what a state record compares (`ListedFiles`)
    digest = survey_digest(
        scan.notes, listing, [(p.path, p.code, p.message) for p in scan.problems]
    )
    empty = IndexedNotes(())
    files = frozenset(scan.files)
    return Survey(mode, scan.notes, files, scan.problems, None, empty, digest, listing=listing)


def survey_paths(config: Config, paths: Iterable[str], state: State) -> Survey:
    """For the watcher: look only at the named paths (a folder stands for its contents)."""
    wanted = {p.strip("/") for p in paths if p.strip("/")}
    candidates = set(wanted)
    root = config.root
    # What a folder held: a pass over every file (~35-90 ms at 100,000), needed only for a
    # path that neither was nor is a file (a file has no contents; a folder's are its files):
    # not for the note a `store` just created. (A folder replaced by a file of its very name
    # keeps its old files until a whole reconcile.)
    if prefixes := tuple(
        p + "/" for p in wanted if p not in state.files and not (root / p).is_file()
    ):
        candidates.update(p for p in state.files if p.startswith(prefixes))
    for folder in wanted:
        full = root / folder
        if full.is_dir() and not full.is_symlink():
            candidates.update(
                p.relative_to(root).as_posix() for p in full.rglob("*") if p.is_file()
            )
    present, _gone = scan_paths(config, sorted(candidates))
    came, went = set(), set()
    for path in candidates:
        full = root / path
        if full.is_file() and is_eligible_file(config, path):
            came.add(path)
        else:
            went.add(path)
    came = {p for p in came if p not in state.files}
    went = {p for p in went if p in state.files}
    # An edit moves no file: the index's set stands (copying it cost ~10 ms at 100,000).
    files: Set[str] = state.files
    if isinstance(files, ListedFiles) and (came or went):  # still joined: kept so
        files = files.changed(dict.fromkeys(went, False) | dict.fromkeys(came, True))
    elif came or went:
        files = (files - went) | came
    indexed = state.notes.only(candidates)
    from vaultmem.index.conflicts import path_problems

    copies = tuple(path_problems(config, candidates, files))
    return Survey(
        "paths",
        tuple(present),
        files,
        None,
        frozenset(candidates),
        indexed,
        None,
        copies,
    )


def last_survey(config: Config) -> tuple[LastSurvey | None, IndexToken]:
    """The last survey the index agreed with, and the index file's identity now."""
    return read_last_survey(config.state_dir), index_token(config.index_path)


def remember(config: Config, token: IndexToken, survey: Survey, notes: int, problems: int) -> None:
    """Record that the index (as `token` identifies it) equals this whole-vault walk."""
    if survey.digest is None or token[0] is None:
        return
    record = LastSurvey(token, index_versions(config), survey.digest, notes, problems)
    write_last_survey(config.state_dir, record)

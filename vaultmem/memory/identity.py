"""Which scope id a memory belongs to: explicit ids, project identity from git, and the rules.

A project's identity is, in order: the `--scope-id` given; else the scope id of the mapping that
holds the managed folder, when that mapping has the same scope and names an id (`vaultmem init`
writes one for the whole vault: `mapped_scope_id`); else the normalised remote of the git
repository holding the working directory (`origin` first), read from its `.git/config` without
running git; else `sha256(realpath(cwd))[:12]`. A remote is reduced to `host-owner-repo` in lower
case (`https://user:tok@github.com/Org/Repo.git` and `git@github.com:org/repo.git` both give
`github.com-org-repo`): credentials, user names, ports and the scheme are dropped, so the raw URL
is never stored. Session and agent scopes need an explicit id; global and federated have none.
A scope that needs an id and has none is an error: a write never falls back to a wider scope.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from vaultmem.core.config import Config
from vaultmem.core.errors import InvalidArgumentError, PathEscapeError
from vaultmem.core.names import MAX_SCOPE_ID, SCOPE_ID_RE, SCOPE_ID_RULE, portable_problem
from vaultmem.files.managed import check_component

_SECTION_RE = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$')
_ANY_SECTION_RE = re.compile(r"^\s*\[")
_URL_RE = re.compile(r"^\s*url\s*=\s*(.*?)\s*$", re.I)
_SCP_RE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(.+)$")


def resolve_scope_id(scope: str, scope_id: str | None, cwd: Path) -> str | None:
    """The scope id a write goes to, by the rules above."""
    if scope in ("global", "federated"):
        if scope_id:
            raise InvalidArgumentError(
                f"Scope {scope!r} has no scope id (got {scope_id!r}).",
                hint="Drop --scope-id, or choose the session, project or agent scope.",
            )
        return None
    if scope_id:
        return check_scope_id(scope_id)
    if scope == "project":
        return project_identity(cwd)
    raise InvalidArgumentError(
        f"Scope {scope!r} needs an explicit --scope-id; "
        "vaultmem never falls back to a wider scope.",
        hint=f"Pass --scope-id naming the {scope}.",
    )


def mapped_scope_id(config: Config, scope: str) -> str | None:
    """The scope id of the mapping holding the managed folder when its scope is `scope`: the
    vault's own answer to "which project is this?", preferred over the working directory."""
    mapping = config.mapping_for(config.managed_folder)
    if mapping is None or mapping.scope != scope or not mapping.scope_id:
        return None
    return mapping.scope_id


def check_scope_id(scope_id: str) -> str:
    """`scope_id` unchanged when it follows the rule (`names.SCOPE_ID_RULE`)."""
    check_component(scope_id, "scope id", max_len=MAX_SCOPE_ID)
    if not SCOPE_ID_RE.fullmatch(scope_id):
        raise PathEscapeError(
            f"The scope id {scope_id[:64]!r} is not valid.",
            hint=SCOPE_ID_RULE[:1].upper() + SCOPE_ID_RULE[1:] + ".",
        )
    return scope_id


def project_identity(cwd: Path) -> str:
    """The project scope id of a working directory: its git remote, else a path digest."""
    real = os.path.realpath(cwd)
    url = git_remote(Path(real))
    slug = normalise_remote(url) if url else None
    return slug or hashlib.sha256(real.encode()).hexdigest()[:12]


def git_remote(start: Path) -> str | None:
    """The `origin` remote URL (else the first remote) of the repository holding `start`."""
    config = _git_config(start)
    if config is None:
        return None
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    remotes: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        section = _SECTION_RE.match(line)
        if section:
            current = section.group(1)
            continue
        if _ANY_SECTION_RE.match(line):
            current = None
            continue
        url = _URL_RE.match(line)
        if current is not None and url and current not in remotes:
            remotes[current] = url.group(1).strip('"')
    if "origin" in remotes:
        return remotes["origin"]
    return next(iter(remotes.values()), None)


def _git_config(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git / "config"
        if dot_git.is_file():
            # A worktree or submodule: `gitdir: <path>`; a worktree shares its main config.
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            gitdir = (folder / line.removeprefix("gitdir:").strip()).resolve()
            common = gitdir / "commondir"
            if common.is_file():
                try:
                    gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
                except OSError:
                    return None
            return gitdir / "config"
    return None


def normalise_remote(url: str) -> str | None:
    """`host-owner-repo` from a remote URL, credentials and user names removed; None if empty."""
    url = url.strip()
    if "://" in url:
        rest = url.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host = authority.rsplit("@", 1)[-1].split(":", 1)[0]
    else:
        scp = _SCP_RE.match(url)
        if scp is None:
            host, path = "", url  # a local path remote
        else:
            host, path = scp.group(1), scp.group(2)
    path = path.split("?", 1)[0].split("#", 1)[0].strip("/").removesuffix(".git")
    pieces = [host.lower()] + [p.lower() for p in path.split("/") if p and p not in (".", "..")]
    slug = "-".join(re.sub(r"[^a-z0-9._]+", "-", p).strip("-._") for p in pieces if p)
    slug = re.sub(r"-{2,}", "-", slug).strip("-._")
    if not slug or portable_problem(slug) is not None:
        return None  # the path digest stands in (a remote named `con` cannot be a folder)
    if len(slug) > MAX_SCOPE_ID:
        digest = hashlib.sha256(slug.encode()).hexdigest()[:12]
        slug = slug[: MAX_SCOPE_ID - 13].rstrip("-._") + "-" + digest
    return slug

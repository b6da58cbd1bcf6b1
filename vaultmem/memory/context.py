"""The context block: a small, bounded `<vaultmem-memory>` snapshot of memory for a prompt.

Selection (`build_context`) reads the index; layout (`render_block`) and the marker merge
(`merge_block`) are pure; `write_block_file` is the one write, into a file of the user's
project (outside the vault), on explicit request.

Layout rules:
- Scopes come in the order asked (default session, project, global). Each gets at most
  `per_scope` entries and an equal share of the character budget left after the wrapper lines;
  a share one scope leaves unused is not lent to another, so a busy scope cannot crowd out the
  next. The whole block (wrapper included) never exceeds `budget_chars`.
- A scope's direct entries are its agent topics (not expired, not forgotten), most recently
  updated and most used first (the recency and usage parts of recall's blend). Each line is
  `- [scope] key: latest observation`. After them, while entries and budget remain, come notes
  the chosen topics relate to (typed links, `## See Also`), one level deep: `- [scope] key
  [related]: …`. A person's note shows as its title and first sentence.
- An entry whose content nearly repeats one already in the block (another topic, another
  scope: `duplicates.is_duplicate`) is left out: one fact takes one line.
- Secrets are redacted (built-in and configured patterns) before anything is cut. Content
  longer than `ENTRY_MAX_CHARS` is cut at a word boundary with ` …`; a line that does not fit in
  what is left of its scope's share is skipped whole and later, shorter lines still get their
  chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from vaultmem.core.atomic import replace_file
from vaultmem.core.documents import without_markup
from vaultmem.core.errors import NotFoundError, PathEscapeError, VaultmemError
from vaultmem.core.models import (
    CONTEXT_BUDGET_CHARS,
    CONTEXT_PER_SCOPE,
    CONTEXT_SCOPES,
    ContextTarget,
)
from vaultmem.core.secrets import SecretPattern, redact
from vaultmem.memory.duplicates import is_duplicate
from vaultmem.memory.recall import (
    RELATED_PER_HIT,
    NoteInfo,
    ScopeSpec,
    blended,
    clip_words,
    in_scopes,
    latest_contents,
    note_infos,
    one_line,
    recallable,
    related_targets,
    scope_infos,
)
from vaultmem.storage.store import Connection

Target = ContextTarget
TARGET_FILES: dict[Target, str] = {
    "claude": ".claude/CLAUDE.md",
    "codex": "AGENTS.md",
    "kiro": ".kiro/steering/vaultmem-memory.md",
}
DEFAULT_SCOPES = CONTEXT_SCOPES
DEFAULT_PER_SCOPE = CONTEXT_PER_SCOPE
DEFAULT_BUDGET_CHARS = CONTEXT_BUDGET_CHARS
ENTRY_MAX_CHARS = 300

OPEN_TAG = "<vaultmem-memory>"
CLOSE_TAG = "</vaultmem-memory>"
HEADER = "## Context from vaultmem memory"
BEGIN_MARKER = "<!-- vaultmem:begin -->"
END_MARKER = "<!-- vaultmem:end -->"
_WRAPPER = len(OPEN_TAG) + 1 + len(HEADER) + 1 + len(CLOSE_TAG)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note that may enter the block: its index facts and its content on one line."""

    info: NoteInfo
    content: str
    related: bool = False


@dataclass(frozen=True, slots=True)
class ContextEntry:
    id: str
    key: str
    scope: str
    scope_id: str | None
    path: str
    related: bool
    line: str


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """The rendered block, the entries in it and how many candidates did not fit."""

    text: str
    entries: tuple[ContextEntry, ...]
    skipped: int
    budget_chars: int
    per_scope: int
    scopes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContextWrite:
    """What `--write` did to the provider's file."""

    path: str
    changed: bool
    created: bool
    stray_markers_removed: int
    duplicate_blocks_removed: int
    block: ContextBlock


def bind_scopes(
    specs: Sequence[ScopeSpec], *, project: str | None, session: str | None
) -> tuple[ScopeSpec, ...]:
    """The scopes a block reads, bound to one project and session: a bare `project` is the
    current project only (never every project), a bare `session` the named session, and is
    left out when none is named; `SCOPE:ID` and the other scopes stay as given."""
    out: list[ScopeSpec] = []
    for spec in specs:
        if spec.scope_id is None and spec.scope == "project":
            spec = ScopeSpec("project", project) if project else spec
        elif spec.scope_id is None and spec.scope == "session":
            if not session:
                continue
            spec = ScopeSpec("session", session)
        if spec not in out:
            out.append(spec)
    return tuple(out)


def build_context(
    con: Connection,
    *,
    scopes: Sequence[ScopeSpec],
    managed_folder: str,
    root: Path,
    per_scope: int = DEFAULT_PER_SCOPE,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    now: datetime | None = None,
    usage_counts: Mapping[str, float] | None = None,
    patterns: Sequence[SecretPattern] = (),
) -> ContextBlock:
    """Select each scope's candidates from the index, then lay the block out."""
    now = now or datetime.now(UTC)
    counts = usage_counts or {}
    notes = [
        i for i in scope_infos(con, scopes, managed_only=True) if recallable(i, now, managed_folder)
    ]
    direct: list[tuple[ScopeSpec, list[NoteInfo]]] = []
    taken: set[str] = set()
    for spec in scopes:
        topics = [i for i in notes if i.managed and spec.matches(i.scope, i.scope_id)]
        topics = [i for i in topics if i.id not in taken]
        topics.sort(key=lambda i: (-blended(0.0, i, now, counts.get(i.id, 0.0)), i.path))
        taken.update(i.id for i in topics)
        direct.append((spec, topics))
    targets = related_targets(con, sorted(taken))
    related_infos = note_infos(con, [t for ts in targets.values() for t in ts])
    contents = latest_contents(con, root, [*taken, *related_infos])
    plan: list[tuple[ScopeSpec, list[Candidate]]] = []
    for spec, topics in direct:
        candidates = [Candidate(i, contents.get(i.id, "")) for i in topics]
        for topic in topics:
            pulled = 0
            for target in targets.get(topic.id, []):
                info = related_infos.get(target)
                if (
                    pulled == RELATED_PER_HIT
                    or info is None
                    or target in taken
                    or not in_scopes(info, scopes)
                    or not recallable(info, now, managed_folder)
                ):
                    continue
                taken.add(target)
                candidates.append(Candidate(info, contents.get(target, ""), related=True))
                pulled += 1
        plan.append((spec, candidates))
    return render_block(plan, per_scope=per_scope, budget_chars=budget_chars, patterns=patterns)


def entry_line(candidate: Candidate, patterns: Sequence[SecretPattern] = ()) -> str | None:
    """`- [scope] key: content`, redacted, content cut at a word; None when nothing is left."""
    info = candidate.info
    name = info.key if info.managed else info.title
    name = one_line(redact(name, patterns).text)
    content = redact(candidate.content, patterns).text
    content = clip_words(one_line(without_markup(content)), ENTRY_MAX_CHARS)
    if not content:
        return None
    tag = " [related]" if candidate.related else ""
    return f"- [{info.scope}] {name}{tag}: {content}"


def render_block(
    plan: Sequence[tuple[ScopeSpec, Sequence[Candidate]]],
    *,
    per_scope: int = DEFAULT_PER_SCOPE,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    patterns: Sequence[SecretPattern] = (),
) -> ContextBlock:
    """Lay out the block: scopes in order, each within its own entry cap and budget share."""
    if per_scope < 1 or budget_chars < 1:
        raise VaultmemError(
            "--per-scope and --budget-chars must be positive.", hint="e.g. --budget-chars 3000"
        )
    scopes = tuple(str(spec) for spec, _ in plan)
    share = (budget_chars - _WRAPPER) // len(plan) if plan else 0
    lines: list[str] = []
    entries: list[ContextEntry] = []
    skipped = 0
    shown: list[str] = []  # the contents placed: a near-identical one (another topic) is not
    for _, candidates in plan:
        left, count = share, 0
        for candidate in candidates:
            if any(is_duplicate(candidate.content, seen) for seen in shown):
                continue
            line = entry_line(candidate, patterns)
            if line is None or count == per_scope or len(line) + 1 > left:
                skipped += 1
                continue
            shown.append(candidate.content)
            left -= len(line) + 1
            count += 1
            lines.append(line)
            info = candidate.info
            entries.append(
                ContextEntry(
                    info.id, info.key, info.scope, info.scope_id, info.path, candidate.related, line
                )
            )
    text = "\n".join([OPEN_TAG, HEADER, *lines, CLOSE_TAG]) if budget_chars >= _WRAPPER else ""
    return ContextBlock(text, tuple(entries), skipped, budget_chars, per_scope, scopes)


# -- writing the block into a provider's file --------------------------------------------


@dataclass(frozen=True, slots=True)
class Merge:
    text: str
    stray_markers_removed: int
    duplicate_blocks_removed: int


def merge_block(existing: str | None, block: str) -> Merge:
    """Put `block` between the markers in `existing`, touching nothing else.

    Markers count only as whole lines (surrounding spaces allowed). Each begin pairs with the
    next end; the first pair's lines are replaced by the new block, later pairs (earlier output
    of ours) are removed, and a stray marker (a begin followed by another begin, or an end with
    no begin) loses its own line only, never the text around it. Without a pair the block is
    appended after a blank line. Line endings follow the file's (CRLF when it uses CRLF).
    """
    text = existing or ""
    nl = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    pairs: list[tuple[int, int]] = []
    stray: list[int] = []
    open_at: int | None = None
    for i, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN_MARKER:
            if open_at is not None:
                stray.append(open_at)
            open_at = i
        elif marker == END_MARKER:
            if open_at is None:
                stray.append(i)
            else:
                pairs.append((open_at, i))
                open_at = None
    if open_at is not None:
        stray.append(open_at)
    region = nl.join([BEGIN_MARKER, *block.splitlines(), END_MARKER])
    if not pairs:
        kept = [line for i, line in enumerate(lines) if i not in set(stray)]
        head = "".join(kept)
        if head and not head.endswith(("\n", "\r")):
            head += nl
        if head and not head.endswith((nl + nl, "\n\n")):
            head += nl  # a blank line between the file's text and the block
        return Merge(head + region + nl, len(stray), 0)
    drop = set(stray)
    for start, end in pairs[1:]:
        drop.update(range(start, end + 1))
    first_start, first_end = pairs[0]
    out: list[str] = []
    for i, line in enumerate(lines):
        if i == first_start:
            ending = lines[first_end][len(lines[first_end].rstrip("\r\n")) :]
            out.append(region + ending)
        elif first_start < i <= first_end or i in drop:
            continue
        else:
            out.append(line)
    return Merge("".join(out), len(stray), len(pairs) - 1)


def target_path(target: Target, project_dir: Path) -> Path:
    if target not in TARGET_FILES:
        raise VaultmemError(
            f"Unknown --write target {target!r}.", hint="Use claude, codex or kiro."
        )
    return project_dir / TARGET_FILES[target]


def write_block_file(path: Path, block: ContextBlock, *, vault_root: Path) -> ContextWrite:
    """Merge the block into `path` and publish it atomically (temp file, fsync, rename), only
    when the bytes change. A symlinked file is written through to its target. Refuses a file
    inside the vault: vaultmem writes into the vault only through its managed folder."""
    target = path.resolve()
    root = vault_root.resolve()
    if target == root or root in target.parents:
        raise PathEscapeError(
            f"{target} is inside the vault {root}; vaultmem writes there only into its "
            "managed folder.",
            hint="Pass --project with your code repository, outside the vault.",
        )
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as error:
        raise VaultmemError(f"Cannot read {target}: {error.strerror}.") from error
    existing = raw.decode("utf-8", "surrogateescape") if raw is not None else None
    merged = merge_block(existing, block.text)
    data = merged.text.encode("utf-8", "surrogateescape")
    changed = data != raw
    if changed:
        _publish(target, data)
    return ContextWrite(
        str(target),
        changed,
        raw is None,
        merged.stray_markers_removed,
        merged.duplicate_blocks_removed,
        block,
    )


def _publish(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, data)
    except OSError as error:
        raise VaultmemError(f"Cannot write {path}: {error.strerror}.") from error


def check_project_dir(project_dir: Path) -> Path:
    if not project_dir.is_dir():
        raise NotFoundError(
            f"The project folder {project_dir} does not exist.",
            hint="Pass --project with an existing folder (default: the working directory).",
        )
    return project_dir

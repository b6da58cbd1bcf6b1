"""Relationships: typed edges between notes, where they come from, and the human decisions.

An edge is (source note, type, target note) with an origin and a status. Its id is a digest of
those three, so it is the same after any rebuild. Edges come from three places:

- `link`: a frontmatter link property or an inline field in a note (`supersedes: "[[X]]"`,
  `related:: [[Y]]`): the index's `links` rows with a `relation`. Always active.
- `human`: `relate A B --type T`. Active.
- `suggested`: two topics sharing at least `MIN_SHARED` rare terms (document frequency at most
  `rare_df`, from `terms` and `postings`). Proposed, never applied until someone accepts it.

An agent may propose an edge (`propose`, MCP `memory_relate`): a `propose` row, status
`proposed`, rendered nowhere until a person accepts it.

Every human decision (relate, accept, reject) is appended as a row to the decisions note,
`<managed>/_decisions.md`, a Markdown table a person can read and edit; it is read back on every
call, so the index can be rebuilt without losing one, and the last row for an edge wins. A
rejected pair is never proposed again. A decided edge is `stale` once its source topic has a
newer `updated` than when the decision was made. Active human and accepted edges are rendered
into the source topic's `## See Also`, between markers, beside any links a person wrote there.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

from vaultmem.core.config import Config
from vaultmem.core.errors import InvalidArgumentError, NotFoundError
from vaultmem.core.models import EDGE_STATUSES, SCOPES, EdgeStatus, Published
from vaultmem.files import managed
from vaultmem.memory import topic_store as memory
from vaultmem.note.topics import (
    iso_utc,
    parse_time,
    read_topic,
    replace_see_also,
    see_also_entries,
)
from vaultmem.query import catalog
from vaultmem.storage import relation_queries as queries
from vaultmem.storage import store as db

Origin = Literal["link", "human", "suggested"]
Status = EdgeStatus
DecisionKind = Literal["relate", "propose", "accept", "reject"]
STATUSES = EDGE_STATUSES
BUILTIN_TYPES = ("relates_to", "supersedes", "contradicts")
TYPE_RE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
MIN_SHARED = 2
SUGGESTION_LIMIT = 50
_COLUMNS = (
    "when",
    "decision",
    "type",
    "origin",
    "source",
    "target",
    "source id",
    "target id",
    "source version",
)
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_HEADER = """# Memory decisions

People's decisions about relationships between notes (`vaultmem relate`, `accept`, `reject`).
vaultmem appends one row per decision and reads this table back on every run, so rebuilding the
index keeps them; the last row for an edge wins. A rejected edge is never proposed again.

"""


@dataclass(frozen=True, slots=True)
class Edge:
    id: str
    type: str
    source_id: str
    source_path: str
    target_id: str
    target_path: str
    origin: Origin
    status: Status
    decided: str | None = None
    source_version: str | None = None
    shared_terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    when: str
    decision: DecisionKind
    type: str
    origin: Origin
    source_path: str
    target_path: str
    source_id: str
    target_id: str
    source_version: str


def edge_id(source_id: str, type_: str, target_id: str) -> str:
    return "e-" + hashlib.sha256(f"{source_id}\x00{type_}\x00{target_id}".encode()).hexdigest()[:12]


def decisions_path(config: Config) -> str:
    return f"{config.managed_folder}/{managed.DECISIONS_NOTE}"


# ---------------------------------------------------------------------------------------------
# The decisions note


def read_decisions(text: str) -> list[Decision]:
    """Rows of the decisions table; rows that do not parse are skipped, never fatal."""
    out: list[Decision] = []
    header: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = None if stripped else header
            continue
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(stripped.strip("|"))]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        row = dict(zip(header, cells, strict=False))
        kind, origin = row.get("decision", ""), row.get("origin", "human")
        needed = ("when", "type", "source id", "target id")
        if kind not in get_args(DecisionKind) or origin not in get_args(Origin):
            continue
        if not all(row.get(k) for k in needed):
            continue
        out.append(
            Decision(
                row["when"], kind, row["type"], origin,  # type: ignore[arg-type]
                row.get("source", ""), row.get("target", ""), row["source id"],
                row["target id"], row.get("source version", ""),
            )
        )  # fmt: skip
    return out


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _append_row(text: str | None, decision: Decision) -> str:
    row = "| " + " | ".join(
        _cell(v)
        for v in (
            decision.when, decision.decision, decision.type, decision.origin,
            decision.source_path, decision.target_path, decision.source_id,
            decision.target_id, decision.source_version,
        )
    ) + " |"  # fmt: skip
    table_head = "| " + " | ".join(_COLUMNS) + " |\n|" + " --- |" * len(_COLUMNS) + "\n"
    if text is None:
        return _HEADER + table_head + row + "\n"
    lines = text.split("\n")
    header_at = next(
        (i for i, line in enumerate(lines) if line.lstrip().startswith("|") and "decision" in line),
        None,
    )
    if header_at is None:
        return text.rstrip("\n") + "\n\n" + table_head + row + "\n"
    last = header_at
    while last + 1 < len(lines) and lines[last + 1].lstrip().startswith("|"):
        last += 1
    return "\n".join([*lines[: last + 1], row, *lines[last + 1 :]])


def _decisions(config: Config) -> list[Decision]:
    text = managed.read_text(config, decisions_path(config))
    return read_decisions(text) if text else []


def _record(config: Config, decision: Decision) -> Published:
    path = decisions_path(config)
    return memory.write_note(config, path, lambda text: _append_row(text, decision))


# ---------------------------------------------------------------------------------------------
# Listing


@dataclass(frozen=True, slots=True)
class _NoteRow:
    id: str
    path: str
    managed: bool
    updated: str | None


def _is_topic(config: Config, path: str) -> bool:
    parts = path.split("/")
    prefix = config.managed_folder.split("/")
    return (
        parts[: len(prefix)] == prefix
        and len(parts) > len(prefix) + 1
        and (parts[len(prefix)] in SCOPES)
    )


def _version(config: Config, note: _NoteRow) -> str:
    """What "the source changed" is measured by: a topic's `updated` (which rendering See Also
    does not move), else the index's `updated` for the note."""
    if _is_topic(config, note.path):
        text = managed.read_text(config, note.path)
        if text is not None:
            updated = read_topic(note.path, text).updated
            if updated:
                return updated
    return note.updated or ""


def edges(
    config: Config,
    *,
    status: str | None = None,
    stale_only: bool = False,
    suggest: bool = True,
) -> list[Edge]:
    """Every edge with its current status, link edges first, then decided, then suggested."""
    if status is not None and status not in STATUSES:
        raise InvalidArgumentError(
            f"{status!r} is not an edge status; allowed: {', '.join(STATUSES)}."
        )
    with db.reading(config.index_path) as con:
        notes = {r[0]: _NoteRow(*r) for r in queries.notes(con)}
        found: dict[str, Edge] = {}
        for source, relation, target in queries.relation_links(con):
            if source in notes and target in notes:
                eid = edge_id(source, relation, target)
                found[eid] = Edge(
                    eid, relation, source, notes[source].path, target, notes[target].path,
                    "link", "active",
                )  # fmt: skip
        for eid, edge in _decided(config, notes).items():
            found[eid] = edge
        if suggest:
            for edge in _suggestions(config, con, notes, found):
                found.setdefault(edge.id, edge)
    out = list(found.values())
    if stale_only:
        out = [e for e in out if e.status == "stale"]
    if status is not None:
        out = [e for e in out if e.status == status]
    return out


def _decided(config: Config, notes: dict[str, _NoteRow]) -> dict[str, Edge]:
    latest: dict[str, Decision] = {}
    for decision in _decisions(config):
        latest[edge_id(decision.source_id, decision.type, decision.target_id)] = decision
    out: dict[str, Edge] = {}
    for eid, d in latest.items():
        source, target = notes.get(d.source_id), notes.get(d.target_id)
        if source is None or target is None:
            continue  # a note of the pair is gone (forgotten, pruned): nothing to show
        status: Status = (
            "rejected"
            if d.decision == "reject"
            else "proposed"
            if d.decision == "propose"
            else "active"
        )
        if status == "active" and _newer(_version(config, source), d.source_version):
            status = "stale"
        out[eid] = Edge(
            eid, d.type, d.source_id, source.path, d.target_id, target.path, d.origin, status,
            d.when, d.source_version,
        )  # fmt: skip
    return out


def _newer(current: str, recorded: str) -> bool:
    now, then = parse_time(current), parse_time(recorded)
    if now is None or then is None:
        return bool(current) and bool(recorded) and current != recorded
    return now > then


def _suggestions(
    config: Config, con: db.Connection, notes: dict[str, _NoteRow], known: dict[str, Edge]
) -> list[Edge]:
    topic_ids = sorted(n.id for n in notes.values() if _is_topic(config, n.path))
    if len(topic_ids) < 2:
        return []
    rare_df = max(4, queries.document_count(con) // 200)
    rows = queries.shared_rare_terms(
        con, topic_ids, rare_df=rare_df, min_shared=MIN_SHARED, limit=SUGGESTION_LIMIT
    )
    related = {frozenset((e.source_id, e.target_id)) for e in known.values()}
    out: list[Edge] = []
    for source, target, _shared, terms in rows:
        if frozenset((source, target)) in related:
            continue  # already related either way, or a person rejected the pair
        eid = edge_id(source, "relates_to", target)
        out.append(
            Edge(
                eid, "relates_to", source, notes[source].path, target, notes[target].path,
                "suggested", "proposed", shared_terms=tuple(terms[:8]),
            )
        )  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# Decisions


def _resolve_note(config: Config, name: str) -> _NoteRow:
    """A topic by key or id, else any indexed note by path, title, alias or id."""
    path: str | None
    try:
        path = memory.find_topic(config, name)
    except NotFoundError:
        path = None
    with db.reading(config.index_path) as con:
        if path is None:
            path = catalog.find_note(con, name).path
        found = queries.note_by_path(con, path)
    if found is None:
        raise NotFoundError(
            f"{name!r} ({path}) is not in the index yet.", hint="Run `vaultmem reconcile`."
        )
    return _NoteRow(*found)


def _endpoints(config: Config, a: str, b: str, type_: str) -> tuple[_NoteRow, _NoteRow]:
    """The two notes of an edge A -[type]-> B, once the type and the pair are checked."""
    if not TYPE_RE.fullmatch(type_):
        raise InvalidArgumentError(
            f"{type_!r} is not an edge type.",
            hint="Lower-case letters, digits, '_' and '-', e.g. relates_to, supersedes.",
        )
    source, target = _resolve_note(config, a), _resolve_note(config, b)
    if source.id == target.id:
        raise InvalidArgumentError(f"{a!r} and {b!r} are the same note; an edge needs two.")
    return source, target


def relate(config: Config, a: str, b: str, type_: str = "relates_to") -> tuple[Edge, Published]:
    """Record a person's edge A -[type]-> B and render it into A's See Also; the edge and what
    was published (the decisions note, the source topic), for `Vault` to index."""
    source, target = _endpoints(config, a, b, type_)
    published = _decide(config, "relate", type_, "human", source, target)
    return _edge(config, edge_id(source.id, type_, target.id)), published


def propose(
    config: Config, a: str, b: str, type_: str = "relates_to"
) -> tuple[Edge, Published | None]:
    """An agent's proposal A -[type]-> B: a `propose` row in the decisions note, status
    `proposed` until a person accepts or rejects it; nothing is rendered into See Also. A pair
    a person already decided (related, accepted, rejected) keeps that decision, and nothing is
    published then."""
    source, target = _endpoints(config, a, b, type_)
    eid = edge_id(source.id, type_, target.id)
    known = {e.id: e for e in edges(config, suggest=False)}
    if eid in known and known[eid].status != "proposed":
        return known[eid], None  # a person's decision (or a link) stands
    published = _record(
        config,
        Decision(
            iso_utc(datetime.now(UTC)), "propose", type_, "suggested", source.path, target.path,
            source.id, target.id, _version(config, source),
        ),
    )  # fmt: skip
    return _edge(config, eid), published


def accept(config: Config, edge: str) -> tuple[Edge, Published]:
    """Accept a proposed (or earlier rejected) edge: it becomes active and is rendered."""
    return _judge(config, edge, "accept")


def reject(config: Config, edge: str) -> tuple[Edge, Published]:
    """Reject an edge: it is never proposed again and leaves See Also."""
    return _judge(config, edge, "reject")


def _judge(config: Config, edge: str, kind: DecisionKind) -> tuple[Edge, Published]:
    current = _edge(config, edge)
    with db.reading(config.index_path) as con:
        rows = queries.notes_by_id(con, [current.source_id, current.target_id])
    notes = {r[0]: _NoteRow(*r) for r in rows}
    source, target = notes[current.source_id], notes[current.target_id]
    published = _decide(config, kind, current.type, current.origin, source, target)
    return _edge(config, edge), published


def _decide(
    config: Config,
    kind: DecisionKind,
    type_: str,
    origin: Origin,
    source: _NoteRow,
    target: _NoteRow,
) -> Published:
    decision = Decision(
        iso_utc(datetime.now(UTC)), kind, type_, origin, source.path, target.path, source.id,
        target.id, _version(config, source),
    )  # fmt: skip
    published = _record(config, decision)
    rendered = render_see_also(config, source.id) if _is_topic(config, source.path) else None
    return published + rendered if rendered else published


def _edge(config: Config, edge: str) -> Edge:
    for candidate in edges(config):
        if candidate.id == edge:
            return candidate
    raise NotFoundError(f"No edge {edge!r}.", hint="List edges with `vaultmem edges`.")


def render_see_also(config: Config, topic_id: str) -> Published | None:
    """Rewrite the generated part of a topic's See Also from its active decided edges; what
    was published, or None when nothing changed. An entry of the block that no decision of
    this topic governs (its link names a note no decision here relates it to, or no note of
    this vault: an OKF import's entry this vault could not make an edge of, `adopt_see_also`)
    is kept as written, in order among the rendered ones."""
    current = [
        e
        for e in edges(config, suggest=False)
        if e.source_id == topic_id and e.origin != "link" and e.status in ("active", "stale")
    ]
    with db.reading(config.index_path) as con:
        path = queries.note_path(con, topic_id)
        titles = queries.note_titles(con, [e.target_id for e in current])
        targets = queries.link_targets(con, topic_id)
    if path is None or not _is_topic(config, path):
        return None
    entries = [
        (
            (e.type, e.target_path),
            f"- [[{e.target_path.removesuffix('.md')}|{_display(titles.get(e.target_id))}]]"
            f" ({e.type})",
        )
        for e in current
    ]
    entries += _ungoverned_entries(config, topic_id, path, targets)
    lines = [line for _, line in sorted(entries)]
    return memory.rewrite_topic(config, path, lambda text: replace_see_also(text, lines))


def _ungoverned_entries(
    config: Config, topic_id: str, path: str, targets: dict[str, str]
) -> list[tuple[tuple[str, str], str]]:
    """The entries of a topic's generated See Also block that no decision of the topic
    governs, each with its sort key (type, target path)."""
    text = managed.read_text(config, path)
    entries = _see_also_matches(text or "")
    if not entries:
        return []
    decided = [d for d in _decisions(config) if d.source_id == topic_id]
    by_id = {(d.type, d.target_id) for d in decided}
    by_path = {(d.type, d.target_path.removesuffix(".md")) for d in decided}
    kept: list[tuple[tuple[str, str], str]] = []
    for entry in entries:
        raw, type_ = entry.group(1), entry.group(2)
        target = raw[2:].partition("|")[0]
        if (type_, targets.get(raw)) in by_id or (type_, target) in by_path:
            continue  # the decisions say whether it shows
        kept.append(((type_, target + ".md"), entry.group(0)))
    return kept


_SEE_ALSO_ENTRY = re.compile(r"- (\[\[[^\[\]|\n]+\|[^\[\]|\n]*\]\]) \(([^()\n]+)\)")
"""A line of a generated See Also block, `- [[target|title]] (type)`, as `render_see_also`
writes it and an OKF import restores it; group 1 is the link as written."""


def _see_also_matches(text: str) -> list[re.Match[str]]:
    """The entries of a topic's generated See Also block, parsed (other lines left out)."""
    return [m for line in see_also_entries(text) if (m := _SEE_ALSO_ENTRY.fullmatch(line))]


def adopt_see_also(config: Config, topic_paths: Sequence[str]) -> Published | None:
    """The See Also entries of topics just imported from an OKF bundle (the edges a person
    decided in the vault that exported them) as this vault's decisions: a `relate` row for
    each entry whose link resolves to another indexed note and that no decision here covers
    yet, then the block rendered from the decisions. Without it the next `relate` of such a
    topic, which renders the block from decisions alone, dropped the imported entries. What
    was published, or None when no entry was adopted."""
    known = {e.id for e in edges(config, suggest=False) if e.origin != "link"}
    now = iso_utc(datetime.now(UTC))
    decisions: list[Decision] = []
    sources: list[str] = []
    with db.reading(config.index_path) as con:
        for path in topic_paths:
            text = managed.read_text(config, path)
            row = queries.note_by_path(con, path)
            if text is None or row is None:
                continue
            source = _NoteRow(*row)
            entries = _see_also_matches(text)
            if not entries:
                continue
            targets = queries.link_targets(con, source.id)
            for entry in entries:
                raw, type_ = entry.group(1), entry.group(2)
                target_id = targets.get(raw)
                if target_id is None or target_id == source.id or not TYPE_RE.fullmatch(type_):
                    continue  # left as written: a link this vault cannot resolve
                eid = edge_id(source.id, type_, target_id)
                target_path = queries.note_path(con, target_id)
                if eid in known or target_path is None:
                    continue
                known.add(eid)
                decisions.append(
                    Decision(
                        now,
                        "relate",
                        type_,
                        "human",
                        source.path,
                        target_path,
                        source.id,
                        target_id,
                        _version(config, source),
                    )
                )
                if source.id not in sources:
                    sources.append(source.id)
    if not decisions:
        return None

    def append(text: str | None) -> str:
        for decision in decisions:
            text = _append_row(text, decision)
        return text or ""

    published = memory.write_note(config, decisions_path(config), append)
    for source_id in sources:
        rendered = render_see_also(config, source_id)
        if rendered is not None:
            published = published + rendered
    return published


def _display(title: object) -> str:
    text = str(title or "note")
    return re.sub(r"[|\[\]\n]", " ", text).strip() or "note"

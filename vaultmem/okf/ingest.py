"""`import okf`: an untrusted bundle's concepts become topics of one named scope.

`bundle.read_bundle` refuses unsafe files first; each concept must then have a YAML mapping
with a `type` (YAML that expands too far is refused by `properties.load_frontmatter`). A concept
ID becomes a key (`concept.key_for`); links between concepts become wikilinks to those keys.
A body is a topic's body as written only when the `vaultmem:` block declares its observation
headings exactly (our own exports); any other body becomes one observation dated `generated.at`
(else v0.1 `timestamp`), with timestamp headings, `See Also` headings and `<!-- id: -->` headers
escaped. An instant in the future is clamped to now, the original written into the body.
Every write goes through `managed` (checked path, per-topic lock, atomic publish); the files
written are returned (`Published`) and `Vault` brings the index up to date for just those.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from vaultmem.core.config import Config
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.models import JSON, Published
from vaultmem.core.secrets import SecretPattern, compile_patterns, find_secrets, redact
from vaultmem.files import managed
from vaultmem.note.properties import load_frontmatter, split_frontmatter
from vaultmem.note.topics import (
    append_observation,
    escape_observation,
    iso_utc,
    map_see_also,
    observation_stamp,
    read_topic,
)
from vaultmem.okf.bundle import (
    BundleError,
    BundleFile,
    Limits,
    concept_id,
    is_reserved,
    read_bundle,
)
from vaultmem.okf.concept import (
    MEMORY_TYPES,
    TOPIC_FIELDS,
    dump_yaml,
    has_offset,
    key_for,
    parse_instant,
    relation_properties,
    render,
)
from vaultmem.okf.rewrite import import_links, timestamp_headings

__all__ = ["Conflict", "ImportReport", "import_bundle"]

Conflict = Literal["skip", "replace", "merge"]
_CONSUMED = ("type", "title", "description", "tags", "generated", "timestamp", "vaultmem")
_SECRET_GATED = ("global", "federated")
_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class ImportReport:
    dry_run: bool
    imported: int
    replaced: int
    merged: int
    skipped: int
    rejected: tuple[dict[str, str], ...]
    links_rewritten: int
    timestamps_clamped: int
    markers_escaped: int
    redacted: tuple[dict[str, JSON], ...]
    topics: tuple[dict[str, str], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(slots=True)
class _Concept:
    path: str
    id: str
    frontmatter: dict[str, JSON]
    body: str
    key: str = ""


@dataclass(slots=True)
class _Counts:
    links: int = 0
    clamped: int = 0
    escaped: int = 0


def import_bundle(
    config: Config,
    source: Path,
    *,
    scope: str,
    scope_id: str | None = None,
    conflict: Conflict = "skip",
    dry_run: bool = False,
    now: datetime | None = None,
    limits: Limits = _LIMITS,
) -> tuple[ImportReport, Published]:
    """Import every acceptable concept of `source` into `scope`/`scope_id`; the report and the
    topic files written (for `Vault` to index)."""
    if conflict not in ("skip", "replace", "merge"):
        raise InvalidArgumentError(f"--conflict {conflict!r}: choose skip, replace or merge.")
    managed.topic_path(config, scope, scope_id, "probe")  # checks scope and scope id
    moment = (now or datetime.now(UTC)).replace(microsecond=0)
    try:
        bundle = read_bundle(source, limits)
    except BundleError as exc:
        raise InvalidArgumentError(
            f"The bundle {source} was refused: {exc}.",
            hint="Inspect the bundle; vaultmem imports only what it can read safely.",
        ) from exc
    rejected = [{"path": r.path, "reason": r.reason} for r in bundle.rejected]
    name_patterns = compile_patterns(config.secret_patterns)
    concepts: list[_Concept] = []
    taken: dict[str, str] = {}
    for file in bundle.files:
        if is_reserved(file.path):
            continue
        if len(file.data) > config.max_note_bytes:
            why = f"larger than max_note_bytes ({config.max_note_bytes} bytes)"
            rejected.append({"path": file.path, "reason": why})
            continue
        concept, reason = _read_concept(file.path, file.data.decode("utf-8"), limits)
        if concept is None:
            rejected.append({"path": file.path, "reason": reason})
            continue
        vm = _mapping(concept.frontmatter.get("vaultmem"))
        concept.key = key_for(concept.id, vm.get("key"))
        named = find_secrets(f"{file.path}\n{concept.key}", name_patterns)
        if named:
            # the key names the topic's file: a token there would reach the vault, the index
            # and every later export (`store` refuses such keys too)
            why = f"its name or key holds a secret ({', '.join(named)}); rename it in the bundle"
            rejected.append({"path": file.path, "reason": why})
            continue
        if concept.key in taken:
            why = f"key {concept.key!r} is already taken by {taken[concept.key]}"
            rejected.append({"path": file.path, "reason": why})
            continue
        taken[concept.key] = file.path
        concepts.append(concept)
    _refuse_non_bundle(source, bundle.files, concepts, rejected)
    keys = {c.id: c.key for c in concepts}
    patterns = compile_patterns(config.secret_patterns)
    counts = _Counts()
    tally = {"imported": 0, "replaced": 0, "merged": 0, "skipped": 0}
    redacted: list[dict[str, JSON]] = []
    topics: list[dict[str, str]] = []
    written: list[str] = []
    holders = _topic_ids(config)
    for concept in concepts:
        rel = managed.topic_path(config, scope, scope_id, concept.key)
        fm, body, observations = _topic(concept, keys, scope, scope_id, moment, counts)
        topic_id = str(fm.get("id"))
        holder = holders.get(topic_id)
        if holder is not None and holder != rel:
            # Two topics with one id: `get`/`forget` by id would act on whichever the index
            # picked, so the existing topic keeps its id and this concept is not imported.
            why = f"its vaultmem.id {topic_id} is the id of the existing topic {holder}"
            rejected.append({"path": concept.path, "reason": why + " (conflict)"})
            continue
        holders[topic_id] = rel
        found = redact(body + "\n" + dump_yaml(fm), patterns).found
        if found and scope in _SECRET_GATED:
            why = f"holds a secret ({', '.join(found)}); scope {scope} refuses secrets"
            rejected.append({"path": concept.path, "reason": why})
            continue
        if found:
            body = redact(body, patterns).text
            observations = [(at, redact(obs, patterns).text) for at, obs in observations]
            fm = _redact_values(fm, patterns)
            redacted.append({"path": concept.path, "patterns": list(found)})
        text = render(fm, body)
        if len(text.encode("utf-8")) > config.max_note_bytes:
            why = f"its topic would be larger than max_note_bytes ({config.max_note_bytes} bytes)"
            rejected.append({"path": concept.path, "reason": why})
            continue
        action = _write(config, rel, text, observations, conflict, dry_run, config.max_note_bytes)
        if action == "too_large":
            why = f"merged topic over max_note_bytes ({config.max_note_bytes} bytes)"
            rejected.append({"path": concept.path, "reason": why})
            continue
        tally[action] += 1
        if action != "skipped" and not dry_run:
            written.append(rel)
        topics.append({"concept": concept.id, "key": concept.key, "path": rel, "action": action})
    published = Published(tuple(written), ("write", "publish"), f"{len(written)} topics imported")
    report = ImportReport(
        dry_run=dry_run,
        imported=tally["imported"],
        replaced=tally["replaced"],
        merged=tally["merged"],
        skipped=tally["skipped"],
        rejected=tuple(sorted(rejected, key=lambda r: (r["path"], r["reason"]))),
        links_rewritten=counts.links,
        timestamps_clamped=counts.clamped,
        markers_escaped=counts.escaped,
        redacted=tuple(redacted),
        topics=tuple(topics),
    )
    return report, published


def _topic_ids(config: Config) -> dict[str, str]:
    """{id: path} of every topic file in the managed folder (read from the files: the index
    may be behind them)."""
    out: dict[str, str] = {}
    for rel in managed.list_topics(config):
        text = managed.read_text(config, rel)
        if text is None:
            continue
        topic_id = read_topic(rel, text).id
        if topic_id:
            out.setdefault(topic_id, rel)
    return out


def _refuse_non_bundle(
    source: Path,
    files: Sequence[BundleFile],
    concepts: Sequence[_Concept],
    rejected: Sequence[Mapping[str, str]],
) -> None:
    """A folder with no root index.md and not one concept is not an OKF bundle: say so instead
    of reporting an empty import as a success."""
    if concepts or any(f.path == "index.md" for f in files):
        return
    first = f" (first refusal: {rejected[0]['path']}: {rejected[0]['reason']})" if rejected else ""
    raise InvalidArgumentError(
        f"{source} is not an OKF bundle: it has no index.md at its root and none of its "
        f"{len(files)} Markdown files is a concept{first}.",
        hint="Import a folder or archive made by `vaultmem export okf` or another OKF producer.",
    )


def _read_concept(path: str, text: str, limits: Limits) -> tuple[_Concept | None, str]:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    block = split_frontmatter(text)
    if block is None:
        return None, "no YAML frontmatter (not an OKF concept)"
    fm = load_frontmatter(block)
    if fm.status != "valid":
        if fm.problems:
            return None, fm.problems[0][1]
        return None, "empty frontmatter (no type)"
    if _chars_over(fm.data, limits.max_frontmatter_chars):
        return None, (
            f"frontmatter expands past {limits.max_frontmatter_chars} characters "
            "(YAML aliases?); refused before any work on it"
        )
    kind = fm.data.get("type")
    if not isinstance(kind, str) or not kind.strip():
        return None, "no type (required by OKF)"
    return _Concept(path, concept_id(path), fm.data, block.body), ""


def _chars_over(value: JSON, limit: int) -> bool:
    """Do the strings and keys of `value` add up to more than `limit` characters? Walks with
    an explicit stack and stops as soon as they do, so an expanded alias graph costs little."""
    total = 0
    stack: list[JSON] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += sum(len(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            total += len(item)
            stack.extend(item)
        else:
            total += 8
        if total > limit:
            return True
    return False


def _mapping(value: JSON) -> dict[str, JSON]:
    return value if isinstance(value, dict) else {}


def _topic(
    concept: _Concept,
    keys: Mapping[str, str],
    scope: str,
    scope_id: str | None,
    now: datetime,
    counts: _Counts,
) -> tuple[dict[str, JSON], str, list[tuple[str, str]]]:
    """The topic frontmatter, its body, and its observations as (timestamp, text) (for merges).

    A trusted body (our own export) keeps its observations; any other body is one observation.
    """
    src = concept.frontmatter
    vm = _mapping(src.get("vaultmem"))
    generated = _mapping(src.get("generated"))
    raw_at = next((v for v in (generated.get("at"), src.get("timestamp")) if has_offset(v)), None)
    when = parse_instant(str(raw_at)) if raw_at is not None else now
    clamped = when > now
    if clamped:
        counts.clamped += 1
        when = now
    # Milliseconds when the instant has them (the topic writer's own precision): cut to whole
    # seconds, `updated` fell before a `created` of the same second.
    at = observation_stamp(when) if when.microsecond else iso_utc(when)
    created_raw = vm.get("created")
    created = (
        str(created_raw)
        if has_offset(created_raw) and parse_instant(str(created_raw)) <= parse_instant(at)
        else at
    )
    kind = str(src["type"]).strip()
    tags = _tags(src.get("tags"))
    # Our own bundles say who wrote the topic in the block; a third-party concept's producer is
    # its `generated.by`.
    source = vm.get("source") if "vaultmem" in src else generated.get("by")
    declared_id = vm.get("id")
    topic_id = str(declared_id) if _is_uuid(declared_id) else _stable_id(concept)

    linked: list[str] = []

    def key_of(target: str) -> str | None:
        key = keys.get(target)
        if key is not None and key not in linked:
            linked.append(key)
        return key

    links = import_links(concept.body, concept.id, key_of)
    counts.links += links.rewritten
    listed = vm.get("observations")
    declared = [o for o in listed if isinstance(o, str)] if isinstance(listed, list) else []
    headings = timestamp_headings(links.text)
    trusted = (
        bool(declared)
        and declared == headings
        and all(has_offset(o) and parse_instant(o) <= now for o in declared)
        and not clamped
    )
    # The topic writer's own escaping: the reader gives this text back byte for byte, and no
    # heading, supersede line or see-also marker in it can act as structure.
    escaped, n = escape_observation(links.text)
    counts.escaped += 0 if trusted else n
    observation = escaped
    if clamped:
        observation += (
            f"\n\n> Imported with generated.at {raw_at}, which lay in the future; clamped to {at}."
        )
    body = links.text if trusted else f"# {concept.key}\n\n## {at}\n{observation}\n"
    if trusted:
        body = _restore_see_also(body, vm.get("relations"))
        body = _restore_fields(body, vm.get("relations"))
    observations: list[tuple[str, str]] = (
        [(o.timestamp, o.text) for o in read_topic(concept.path, body).observations]
        if trusted
        else [(at, observation)]
    )

    okf: dict[str, JSON] = {"id": concept.id}
    if kind not in MEMORY_TYPES:
        okf["type"] = kind
    if raw_at is not None and raw_at != at and not clamped:
        okf["generated_at"] = raw_at
    fm: dict[str, JSON] = {
        "id": topic_id,
        "key": concept.key,
        "scope": scope,
        "scope_id": scope_id,
        "type": kind if kind in MEMORY_TYPES else "reference",
        "tags": tags,
        "created": created,
        "updated": at,
        "source": source if isinstance(source, str) and source else None,
        "okf": okf,
    }
    for name in ("title", "description"):
        if isinstance(src.get(name), str):
            fm[name] = src[name]
    for name, value in src.items():
        if name not in _CONSUMED and name not in fm:
            fm[name] = value
    aside: dict[str, JSON] = {}
    for name, value in _mapping(vm.get("properties")).items():
        if name in fm or name in TOPIC_FIELDS:
            aside[name] = value
        else:
            fm[name] = value
    if aside:
        okf["properties"] = aside
    relations = vm.get("relations")
    if isinstance(relations, list):
        rel_items = [r for r in relations if isinstance(r, dict)]
        for name, targets in relation_properties(rel_items).items():
            links_out = [f"[[{_relation_target(t, keys)}]]" for t in targets]
            fm[name] = links_out[0] if len(links_out) == 1 else list(links_out)
    elif "vaultmem" not in src and linked and "relates_to" not in fm:
        # A third-party concept's plain links are untyped: they become `relates_to` edges.
        fm["relates_to"] = [f"[[{key}]]" for key in linked]
    return fm, body, observations


_LINK_PART = re.compile(r"[^\[\]|\n]+")


def _restore_see_also(body: str, relations: JSON) -> str:
    """Our own export writes a See Also entry whose target left the bundle as plain text
    (`- Title (relates_to)`) and keeps the link in `vaultmem.relations` (`via: see_also`): the
    entry becomes the wikilink it was, so the edge survives the round trip."""
    if not isinstance(relations, list):
        return body
    links: dict[str, str] = {}
    for rel in relations:
        if not isinstance(rel, dict) or rel.get("via") != "see_also":
            continue
        kind, target, text = rel.get("type"), rel.get("target"), rel.get("text")
        parts = (kind, target, text)
        if all(isinstance(p, str) and _LINK_PART.fullmatch(p) for p in parts) and not str(
            target
        ).startswith("/"):
            links.setdefault(f"- {text} ({kind})", f"- [[{target}|{text}]] ({kind})")
    return map_see_also(body, lambda line: links.get(line, line)) if links else body


def _restore_fields(body: str, relations: JSON) -> str:
    """Our own export writes an inline field whose link left the bundle as plain text
    (`blocks:: Zeta`) and keeps the link in `vaultmem.relations` (`via: field`, with that
    `text`): the field's value becomes the wikilink it was (`blocks:: [[zeta|Zeta]]`), the first
    such field of that name and text, so the edge survives the round trip."""
    if not isinstance(relations, list):
        return body
    for rel in relations:
        if not isinstance(rel, dict) or rel.get("via") != "field":
            continue
        kind, target, text = rel.get("type"), rel.get("target"), rel.get("text")
        parts = (kind, target, text)
        if not all(isinstance(p, str) and _LINK_PART.fullmatch(p) for p in parts) or str(
            target
        ).startswith("/"):
            continue
        link = f"[[{target}]]" if text == target else f"[[{target}|{text}]]"
        name, value = re.escape(str(kind)), re.escape(str(text))
        field = re.compile(rf"(?m)((?:^|[\[(\s])(?i:{name})::[ \t]*){value}(?=[ \t]*(?:$|[\])]))")
        body = field.sub(lambda m: m.group(1) + link, body, count=1)  # noqa: B023 (used at once)
    return body


def _relation_target(target: str, keys: Mapping[str, str]) -> str:
    if target.startswith("/"):
        from urllib.parse import unquote

        path, _, fragment = unquote(target[1:]).partition("#")
        key = keys.get(path.removesuffix(".md"))
        if key is not None:
            return key + ("#" + fragment if fragment else "")
    return target.replace("[", "").replace("]", "")


def _tags(value: JSON) -> list[JSON]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    out: list[JSON] = []
    for item in items:
        if isinstance(item, str):
            tag = "-".join(item.strip().lstrip("#").split())
            if tag and tag not in out:
                out.append(tag)
    return out


def _is_uuid(value: JSON) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _stable_id(concept: _Concept) -> str:
    digest = hashlib.sha256(f"okf:{concept.id}".encode()).hexdigest()
    return str(uuid.uuid5(uuid.NAMESPACE_URL, digest))


def _redact_values(fm: dict[str, JSON], patterns: Sequence[SecretPattern]) -> dict[str, JSON]:
    def walk(value: JSON) -> JSON:
        if isinstance(value, str):
            return redact(value, patterns).text
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return {k: walk(v) for k, v in fm.items()}


def _write(
    config: Config,
    rel: str,
    text: str,
    observations: list[tuple[str, str]],
    conflict: Conflict,
    dry_run: bool,
    max_bytes: int,
) -> Literal["imported", "replaced", "merged", "skipped", "too_large"]:
    if dry_run:
        # Even a lock file is a write: a dry run only reads.
        current = managed.read_text(config, rel, errors="surrogateescape")
        action, new = _plan(current, text, observations, conflict)
        return "too_large" if _too_large(new, max_bytes) else action
    with managed.topic_lock(config, rel):
        current = managed.read_text(config, rel, errors="surrogateescape")
        action, new = _plan(current, text, observations, conflict)
        if _too_large(new, max_bytes):
            return "too_large"
        if new is not None:
            managed.write_text(config, rel, new)
        return action


def _too_large(text: str | None, max_bytes: int) -> bool:
    return text is not None and len(text.encode("utf-8", "surrogateescape")) > max_bytes


def _plan(
    existing: str | None, text: str, observations: list[tuple[str, str]], conflict: Conflict
) -> tuple[Literal["imported", "replaced", "merged", "skipped"], str | None]:
    """What to do with one topic, and the text to write (the existing text for a merge)."""
    if existing is None:
        return "imported", text
    if existing == text or conflict == "skip":
        return "skipped", None
    if conflict == "replace":
        return "replaced", text
    # Merge: append each observation of the bundle's topic whose text the file does not hold,
    # with its own timestamp; the person's edits in the file stay as they are.
    merged = existing
    for stamp, body in observations:
        if body.strip() and body.strip() not in merged:
            merged = append_observation(merged, stamp, body)
    return ("skipped", None) if merged == existing else ("merged", merged)

"""The mapping between a vault note's frontmatter and an OKF concept's frontmatter; pure.

Export (`concept_frontmatter`): what the note says is turned into OKF fields in a fixed order
(type, title, description, tags, generated, verified, status, stale_after), keys OKF does not
define are carried over in the note's order, and everything only vaultmem understands goes into
one `vaultmem:` block. Import (`topic_frontmatter`): the reverse, onto a topic's fields. YAML is
written by `dump_yaml` (block style, keys in insertion order, no aliases) and read back with
`properties.load_frontmatter`, which never turns timestamp text into datetimes, so every
timestamp is written exactly as it was read. The table is in docs/okf.md.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from vaultmem.core.models import JSON
from vaultmem.core.names import KEY_RE, is_reserved_name

__all__ = [
    "KEY_RE",
    "MEMORY_TYPES",
    "OKF_COMPUTED",
    "TOPIC_FIELDS",
    "ConceptSource",
    "Relation",
    "concept_frontmatter",
    "dump_yaml",
    "format_instant",
    "has_offset",
    "key_for",
    "normalise_verified",
    "parse_instant",
    "render",
    "retention_stale_after",
]

MEMORY_TYPES = ("user", "feedback", "project", "reference")

TOPIC_FIELDS = ("id", "key", "scope", "scope_id", "type", "tags", "created", "updated", "source")
"""The fields a topic note's frontmatter owns (issue 5)."""
OKF_COMPUTED = ("type", "title", "description", "tags", "generated", "verified", "status")
OKF_COMPUTED_ALL = (*OKF_COMPUTED, "stale_after")
OKF_STATUSES = ("draft", "stable", "deprecated")
# Vault conventions read on export and never carried over themselves.
REVIEW_KEYS = ("reviewed", "reviewed_by", "reviewed_at")
_CONSUMED_ALWAYS = ("tag", "okf", *REVIEW_KEYS)

_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})"
)

RETENTION_DAYS = {"session": 14, "project": 90}
"""Days until a topic of a scope goes stale; other scopes, and types user/feedback, never."""


def has_offset(value: JSON) -> bool:
    """True for an ISO 8601 instant with an explicit offset (`2026-06-30T14:00:00Z`)."""
    return isinstance(value, str) and _INSTANT.fullmatch(value) is not None


def parse_instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_instant(moment: datetime) -> str:
    """UTC, whole seconds, `Z`: the one form vaultmem writes."""
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def retention_stale_after(scope: str, memory_type: str, at: str) -> str | None:
    days = RETENTION_DAYS.get(scope)
    if days is None or memory_type in ("user", "feedback") or not has_offset(at):
        return None
    return format_instant(parse_instant(at) + timedelta(days=days))


def key_for(concept_id: str, declared: JSON = None) -> str:
    """The topic key of a concept: its declared `vaultmem.key`, else its ID when that is a
    valid key, else a slug of the ID plus an 8-digit digest of it (so `a/x` and `b/x` differ)."""
    if isinstance(declared, str) and KEY_RE.fullmatch(declared) and not is_reserved_name(declared):
        return declared
    if KEY_RE.fullmatch(concept_id) and not is_reserved_name(concept_id):
        return concept_id
    slug = re.sub(r"[^a-z0-9]+", "-", concept_id.lower()).strip("-")[:51].strip("-")
    digest = hashlib.sha256(concept_id.encode("utf-8")).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else digest


def normalise_verified(value: JSON) -> list[JSON] | None:
    """`verified` as a list: a single bare mapping is read as a one-item list (OKF v0.2)."""
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and value:
        return list(value)
    return None


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed link: `type` is the property or inline-field name (for a topic's See Also entry,
    the edge's type); `target` a bundle URL when the target is in the bundle, else the link
    text; `via` where the vault note holds it (`property`, `field`, `see_also`); `text` the
    See Also entry's display text, which the body keeps when the link leaves the bundle, and
    for a field whose link leaves the bundle the plain text the body keeps in its place."""

    type: str
    target: str
    via: str
    text: str = ""

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"type": self.type, "target": self.target, "via": self.via}
        if self.text:
            out["text"] = self.text
        return out


@dataclass(frozen=True, slots=True)
class ConceptSource:
    """What export knows about one note, ready for mapping."""

    frontmatter: Mapping[str, JSON]
    is_topic: bool
    key: str
    scope: str
    scope_id: str | None
    title: str
    tags: tuple[str, ...]
    description: str
    generated_at: str
    relations: tuple[Relation, ...]
    property_keys: frozenset[str]
    observations: tuple[str, ...]


def _verified(fm: Mapping[str, JSON], at: str) -> list[JSON] | None:
    own = normalise_verified(fm.get("verified"))
    if own is not None:
        return own
    # Vault convention: `reviewed_by: alice` (or a list), optional `reviewed_at`; `reviewed:
    # true` alone names no one and is recorded as `human:unknown`.
    by = fm.get("reviewed_by")
    names = (
        [by]
        if isinstance(by, str)
        else [b for b in by if isinstance(b, str)]
        if (isinstance(by, list))
        else []
    )
    if not names and fm.get("reviewed") is True:
        names = ["unknown"]
    if not names:
        return None
    when = fm.get("reviewed_at")
    stamp = when if isinstance(when, str) and has_offset(when) else at
    return [
        {"by": n if n.startswith("human:") else f"human:{n.strip()}", "at": stamp} for n in names
    ]


def concept_frontmatter(src: ConceptSource, producer: str) -> dict[str, JSON]:
    """The OKF frontmatter of one exported note, keys in a fixed order."""
    fm = src.frontmatter
    okf = fm.get("okf") if isinstance(fm.get("okf"), dict) else {}
    assert isinstance(okf, dict)
    own_type = okf.get("type") or fm.get("type")
    concept_type = own_type.strip() if isinstance(own_type, str) and own_type.strip() else "Note"
    out: dict[str, JSON] = {"type": concept_type, "title": src.title}
    if src.description:
        out["description"] = src.description
    if src.tags:
        out["tags"] = list(src.tags)
    out["generated"] = {"by": producer, "at": src.generated_at}
    verified = _verified(fm, src.generated_at)
    if verified is not None:
        out["verified"] = verified
    kept: dict[str, JSON] = {}
    status = fm.get("status")
    if isinstance(status, str) and status in OKF_STATUSES:
        out["status"] = status
    elif "status" in fm:
        kept["status"] = status
    stale = fm.get("stale_after")
    if has_offset(stale):
        out["stale_after"] = stale
    else:
        if "stale_after" in fm:
            kept["stale_after"] = stale
        memory_type = fm.get("type") if isinstance(fm.get("type"), str) else ""
        computed = (
            retention_stale_after(src.scope, str(memory_type), src.generated_at)
            if src.is_topic
            else None
        )
        if computed is not None:
            out["stale_after"] = computed

    consumed = set(_CONSUMED_ALWAYS) | set(OKF_COMPUTED_ALL) | src.property_keys
    consumed |= {"title", "description", "verified"}
    if src.is_topic:
        consumed |= set(TOPIC_FIELDS)
    for name, value in fm.items():
        if name in consumed or name.lower() in ("tags", "tag"):
            continue
        if name in TOPIC_FIELDS or name in ("generated", "timestamp", "vaultmem"):
            # A human note's own `created`, `id`, `generated`... would collide on import.
            kept[name] = value
            continue
        out[name] = value
    extra = okf.get("properties")
    if isinstance(extra, dict):
        kept = {**extra, **kept}

    block: dict[str, JSON] = {"key": src.key, "scope": src.scope, "scope_id": src.scope_id}
    if src.is_topic:
        for name in ("id", "created", "source"):
            if fm.get(name) is not None:
                block[name] = fm[name]
        block["observations"] = list(src.observations)
    if src.relations:
        block["relations"] = [r.to_json() for r in src.relations]
    if kept:
        block["properties"] = kept
    out["vaultmem"] = block
    return out


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Mapping[str, JSON]) -> str:
    """Block-style YAML in insertion order; strings that would read as another type (a
    timestamp, `yes`, `0.2`) are quoted by the dumper, so they read back as the same text."""
    text: str = yaml.dump(
        dict(data),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )
    return text


def render(frontmatter: Mapping[str, JSON], body: str) -> str:
    """A Markdown file: the frontmatter block, then the body ending in one newline."""
    body = body.strip("\n")
    return f"---\n{dump_yaml(frontmatter)}---\n" + (f"{body}\n" if body else "")


def relation_properties(relations: Sequence[Mapping[str, JSON]]) -> dict[str, list[str]]:
    """Property relations of a `vaultmem:` block grouped by name (field relations live in the
    body and need nothing)."""
    out: dict[str, list[str]] = {}
    for rel in relations:
        if rel.get("via") == "property" and isinstance(rel.get("type"), str):
            target = rel.get("target")
            if isinstance(target, str) and target:
                out.setdefault(str(rel["type"]), []).append(target)
    return out

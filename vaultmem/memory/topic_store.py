"""Agent memory: store, correct, forget, get and prune topics in the managed folder.

The write path (`store`, `correct`) runs in a fixed order, and each step is a named phase:

1. resolve: the scope id (`identity`), the key (given and checked, or derived from the text);
2. redact: secrets become `[redacted:<name>]` markers; a `global` or `federated` write that held
   one is refused instead (the error names the pattern, never the bytes);
3. lock: the topic's own lock (`managed.topic_lock`), so writers of different topics never wait
   for each other and writers of one topic take turns;
4. read: the file as it is now; a person may have edited it in Obsidian since the last write,
   and every byte they wrote is kept because the change is an insertion into that text;
5. write + publish: temp file, fsync, rename, fsync of the folder (`managed.write_text`);
6. index: not here. Every writer returns what it published (`Published`: the paths and the
   phases done) and `Vault` alone updates the index for those paths (`Vault._publish`).

The vault file and the index are two durability domains with no common commit. Once step 5 has
published the file the observation is saved; if the index update fails, `Vault` raises
`PartialWriteError` listing the phases done and naming `vaultmem reconcile` as the repair. The
caller must not retry: a retry appends the observation a second time. Same key, scope and scope
id means the same file, so a second store appends a section; it never makes a second topic. A
store whose text repeats a live observation of the topic (`duplicates.is_duplicate`) appends
nothing and returns that observation's stamp as `duplicate_of`.

Retention (`topics.is_expired`) hides expired topics from `get`; `prune` lists them and with
`apply` moves them to `<managed>/.trash/`. Only topic files are ever pruned, never human notes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from vaultmem.core import secrets
from vaultmem.core.config import Config
from vaultmem.core.errors import (
    AmbiguousError,
    IndexUnavailableError,
    InvalidArgumentError,
    LockedError,
    NotFoundError,
    SecretError,
)
from vaultmem.core.models import NOTHING_PUBLISHED, SCOPES, Published
from vaultmem.files import managed
from vaultmem.memory import duplicates, usage
from vaultmem.memory.identity import check_scope_id, resolve_scope_id
from vaultmem.memory.usage import Usage
from vaultmem.note.topics import (
    GIT_ATTRIBUTES,
    STATE_GITIGNORE,
    TOPIC_TYPES,
    Topic,
    append_observation,
    check_key,
    check_tags,
    derive_key,
    expires_at,
    is_expired,
    iso_utc,
    observation_stamp,
    read_topic,
    render_topic,
    supersede,
    topics_base,
)
from vaultmem.storage import store as db
from vaultmem.storage import topic_queries

__all__ = [
    "ForgetResult",
    "PruneItem",
    "PruneResult",
    "StoreResult",
    "TopicView",
    "correct",
    "find_topic",
    "forget",
    "get",
    "is_expired",
    "prune",
    "rewrite_topic",
    "store",
]

_GATED_SCOPES = frozenset({"global", "federated"})
MAX_SOURCE = 200


@dataclass(frozen=True, slots=True)
class StoreResult:
    """What a store or correct wrote. `created`: a new topic file; `redacted`: pattern names."""

    id: str | None
    key: str
    path: str
    scope: str
    scope_id: str | None
    timestamp: str
    created: bool
    redacted: tuple[str, ...]
    phases: tuple[str, ...]
    corrected: bool = False
    duplicate_of: str | None = None
    """The stamp of the live observation this store repeated; then nothing was appended."""


@dataclass(frozen=True, slots=True)
class TopicView:
    """One topic as `get` returns it, with its recall statistics."""

    path: str
    topic: Topic
    expires: str | None
    usage: Usage | None

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            **self.topic.to_dict(),
            "expires": self.expires,
            "access_count": self.usage.count if self.usage else 0,
            "last_access": self.usage.last_access if self.usage else None,
        }


@dataclass(frozen=True, slots=True)
class ForgetResult:
    key: str
    path: str
    trashed_to: str


@dataclass(frozen=True, slots=True)
class PruneItem:
    path: str
    key: str
    scope: str | None
    scope_id: str | None
    type: str | None
    updated: str | None
    expired_at: str
    trashed_to: str | None = None


@dataclass(frozen=True, slots=True)
class PruneResult:
    applied: bool
    items: tuple[PruneItem, ...] = field(default=())


# ---------------------------------------------------------------------------------------------
# Writing


def store(
    config: Config,
    key: str | None,
    text: str,
    *,
    scope: str = "project",
    scope_id: str | None = None,
    type: str = "project",
    tags: Sequence[str] = (),
    source: str | None = None,
    cwd: Path | None = None,
    now: datetime | None = None,
) -> tuple[StoreResult, Published]:
    """Append an observation to the topic (key, scope, scope id), creating it when new."""
    return _write(config, key, text, scope, scope_id, type, tags, source, cwd, now, False)


def correct(
    config: Config,
    key: str,
    text: str,
    *,
    scope: str | None = None,
    scope_id: str | None = None,
    source: str | None = None,
    cwd: Path | None = None,
    now: datetime | None = None,
) -> tuple[StoreResult, Published]:
    """Supersede the topic's latest observation with `text`; the old one stays, marked."""
    rel = find_topic(config, key, scope=scope, scope_id=scope_id)
    topic = read_topic(rel, managed.read_text(config, rel) or "")
    where = config.scope_of(rel)
    assert where is not None, rel
    type_ = topic.type if topic.type in TOPIC_TYPES else "project"
    return _write(config, _stem(rel), text, where[0], where[1], type_, (), source, cwd, now, True)


def _write(
    config: Config,
    key: str | None,
    text: str,
    scope: str,
    scope_id: str | None,
    type_: str,
    tags: Sequence[str],
    source: str | None,
    cwd: Path | None,
    now: datetime | None,
    correcting: bool,
) -> tuple[StoreResult, Published]:
    phases: list[str] = []
    if scope not in SCOPES:
        raise InvalidArgumentError(f"{scope!r} is not a scope; allowed: {', '.join(SCOPES)}.")
    if type_ not in TOPIC_TYPES:
        raise InvalidArgumentError(
            f"{type_!r} is not a topic type; allowed: {', '.join(TOPIC_TYPES)}."
        )
    if not text.strip():
        raise InvalidArgumentError("Nothing to store: the text is empty.")
    if _has_surrogate(text):
        raise InvalidArgumentError(
            "The text holds a lone surrogate (not Unicode text); nothing was written.",
            hint="Send the text as valid UTF-8.",
        )
    extra = secrets.compile_patterns(config.secret_patterns)
    # Names become files, folders and frontmatter: one holding a secret is refused before any
    # check can echo it in an error message.
    _refuse_secret_names(key, scope_id, tags, extra)
    resolved_id = resolve_scope_id(scope, scope_id, cwd or Path.cwd(), config)
    if key is not None:
        check_key(key)
    tag_list = check_tags(tags)
    source = _check_source(source)
    phases.append("resolved")

    cleaned = secrets.redact(text, extra)
    cleaned_source = secrets.redact(source, extra) if source else None
    found = tuple(sorted({*cleaned.found, *(cleaned_source.found if cleaned_source else ())}))
    if found and scope in _GATED_SCOPES:
        raise SecretError(
            f"The text holds a secret ({', '.join(found)}); a {scope} write is refused.",
            hint=f"Remove the secret; {scope} memory is shared, so it is never stored there.",
        )
    phases.append("redacted")
    # A derived key comes from the redacted text: a secret must never reach a file name.
    if key is None:
        key = derive_key(cleaned.text)
        # Slugging can make a token of text that was none (`xoxb 1234567890 abcdefghij`)
        _refuse_secret_names(key, None, (), extra)
    rel = managed.topic_path(config, scope, resolved_id, key)

    with managed.topic_lock(config, rel):
        phases.append("locked")
        # surrogateescape: bytes of a person's file that are not UTF-8 are written back as is.
        current = managed.read_text(config, rel, errors="surrogateescape")
        phases.append("read")
        existing = read_topic(rel, current) if current else None
        if existing is not None and not correcting:
            live = [(o.timestamp, o.text) for o in existing.observations if not o.superseded_by]
            repeated = duplicates.duplicate_of(cleaned.text, live)
            if repeated is not None:
                # The fact is already there: appending it again is the duplicate recall and
                # context would have to collapse. Nothing is written, so nothing to index.
                return StoreResult(
                    id=existing.id, key=key, path=rel, scope=scope, scope_id=resolved_id,
                    timestamp=repeated, created=False, redacted=found, phases=tuple(phases),
                    duplicate_of=repeated,
                ), NOTHING_PUBLISHED  # fmt: skip
        taken = [o.timestamp for o in existing.observations] if existing else []
        timestamp = observation_stamp(now or datetime.now(UTC), taken)
        if current is None:
            if correcting:
                raise NotFoundError(f"No topic {key!r} at {rel} to correct.")
            new_id = str(uuid.uuid4())
            topic_id: str | None = new_id
            new_text = render_topic(
                id=new_id, key=key, scope=scope, scope_id=resolved_id,
                type=type_, tags=tag_list,
                source=cleaned_source.text if cleaned_source else None,
                timestamp=timestamp, text=cleaned.text,
            )  # fmt: skip
        else:
            topic_id = read_topic(rel, current).id
            edit = supersede if correcting else append_observation
            new_text = edit(current, timestamp, cleaned.text)
        size = len(new_text.encode("utf-8", "surrogateescape"))
        if size > config.max_note_bytes:
            raise InvalidArgumentError(
                f"{rel} would grow to {size} bytes, over max_note_bytes "
                f"({config.max_note_bytes}); nothing was written.",
                hint="Store under a new key, or raise max_note_bytes in .vaultmem/config.toml.",
            )
        managed.write_text(config, rel, new_text)
        phases += ["written", "published"]
    if current is None:
        write_generated(config)
    what = f"key {key!r}, scope {_where(scope, resolved_id)}, file {rel}"
    result = StoreResult(
        id=topic_id,
        key=key,
        path=rel,
        scope=scope,
        scope_id=resolved_id,
        timestamp=timestamp,
        created=current is None,
        redacted=found,
        phases=tuple(phases),
        corrected=correcting,
    )
    return result, Published((rel,), tuple(phases), what)


def write_generated(config: Config, *, git: bool = False) -> list[str]:
    """The managed folder's generated files, each written only when its bytes change: the
    Bases view of the topics and, with `git`, `.gitattributes` (union merge of topics) and
    `.vaultmem/.gitignore` (machine-local state). Returns the paths written."""
    from vaultmem.core.atomic import replace_file

    folder = config.managed_folder
    wanted = {f"{folder}/{managed.TOPICS_BASE}": topics_base(folder)}
    if git:
        wanted[f"{folder}/{managed.GITATTRIBUTES}"] = GIT_ATTRIBUTES
    written = [rel for rel, text in wanted.items() if managed.ensure_text(config, rel, text)]
    if git:
        ignore = config.config_path.parent / ".gitignore"  # .vaultmem/, shared with the vault
        if not ignore.is_file() or ignore.read_text(encoding="utf-8") != STATE_GITIGNORE:
            ignore.parent.mkdir(parents=True, exist_ok=True)
            replace_file(ignore, STATE_GITIGNORE.encode("utf-8"))
            written.append(f"{ignore.parent.name}/{ignore.name}")
    return written


def _refuse_secret_names(
    key: str | None,
    scope_id: str | None,
    tags: Sequence[str],
    extra: Sequence[secrets.SecretPattern],
) -> None:
    named = [("key", key), ("scope id", scope_id), *(("tag", t) for t in tags)]
    for what, value in named:
        found = secrets.find_secrets(value, extra) if value else ()
        if found:
            raise SecretError(
                f"The {what} holds a secret ({', '.join(found)}); it would name a file, folder "
                "or tag, so nothing was written.",
                hint=f"Choose a {what} without the credential; vaultmem never redacts a name.",
            )


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _where(scope: str, scope_id: str | None) -> str:
    return scope + (f":{scope_id}" if scope_id else "")


def _check_source(source: str | None) -> str | None:
    if source is None or not source.strip():
        return None
    source = source.strip()
    if len(source) > MAX_SOURCE or any(ord(c) < 0x20 for c in source):
        raise InvalidArgumentError(
            f"--source must be one line of at most {MAX_SOURCE} characters.",
            hint="Name the agent or tool, e.g. --source claude-code.",
        )
    return source


def rewrite_topic(config: Config, rel: str, change: Callable[[str], str]) -> Published | None:
    """Apply `change` to a managed file's text under its lock; what it published, or None
    when the text did not change."""
    phases: list[str] = []
    with managed.topic_lock(config, rel):
        phases.append("locked")
        current = managed.read_text(config, rel, errors="surrogateescape")
        phases.append("read")
        if current is None:
            raise NotFoundError(f"No file {rel} in the managed folder.")
        new = change(current)
        if new == current:
            return None
        managed.write_text(config, rel, new)
        phases += ["written", "published"]
    return Published((rel,), tuple(phases), f"file {rel}")


def write_note(config: Config, rel: str, change: Callable[[str | None], str]) -> Published:
    """Create or change a managed non-topic note (the decisions note) under its lock."""
    phases: list[str] = []
    with managed.topic_lock(config, rel):
        phases.append("locked")
        current = managed.read_text(config, rel, errors="surrogateescape")
        phases.append("read")
        managed.write_text(config, rel, change(current))
        phases += ["written", "published"]
    return Published((rel,), tuple(phases), f"file {rel}")


# ---------------------------------------------------------------------------------------------
# Finding and reading


def _stem(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".md")


def find_topic(
    config: Config, key_or_id: str, *, scope: str | None = None, scope_id: str | None = None
) -> str:
    """The path of the topic named by key (optionally narrowed by scope) or by id."""
    if scope_id is not None:
        check_scope_id(scope_id)
    topics = managed.list_topics(config)

    def in_scope(rel: str) -> bool:
        where = config.scope_of(rel)
        return where is not None and (
            (scope is None or where[0] == scope) and (scope_id is None or where[1] == scope_id)
        )

    by_key = [rel for rel in topics if _stem(rel) == key_or_id and in_scope(rel)]
    if len(by_key) == 1:
        return by_key[0]
    if len(by_key) > 1:
        raise AmbiguousError(
            f"The key {key_or_id!r} names {len(by_key)} topics in different scopes.",
            by_key,
            hint="Add --scope (and --scope-id), or name the topic by its id.",
        )
    by_id = _find_by_id(config, key_or_id, topics)
    if by_id is not None and in_scope(by_id):
        return by_id
    raise NotFoundError(f"No topic with key or id {key_or_id!r}.")


def _find_by_id(config: Config, topic_id: str, topics: list[str]) -> str | None:
    if config.index_path.exists():
        try:
            with db.reading(config.index_path) as con:
                path = topic_queries.managed_path_by_id(con, topic_id)
            if path is not None and path in topics:
                return path
        except (IndexUnavailableError, LockedError):
            pass  # fall back to the files
    # The index may be stale (after a partial write): the files are the truth.
    for rel in topics:
        text = managed.read_text(config, rel)
        if text is not None and read_topic(rel, text).id == topic_id:
            return rel
    return None


def get(
    config: Config,
    key_or_id: str,
    *,
    scope: str | None = None,
    scope_id: str | None = None,
    include_expired: bool = False,
    now: datetime | None = None,
) -> TopicView:
    """Read a topic from its file and count the recall. Expired topics are not recalled."""
    moment = now or datetime.now(UTC)
    rel = find_topic(config, key_or_id, scope=scope, scope_id=scope_id)
    text = managed.read_text(config, rel)
    if text is None:
        raise NotFoundError(f"The topic file {rel} vanished.")
    topic = _redacted(config, _with_location(config, rel, read_topic(rel, text)))
    limit = expires_at(topic.scope, topic.type, topic.updated)
    if is_expired(topic, moment) and not include_expired:
        raise NotFoundError(
            f"The topic {topic.key!r} ({rel}) expired on {iso_utc(limit or moment)}.",
            hint="Store it again to renew it, or run `vaultmem prune --apply` to trash it.",
        )
    usage.record(config.state_dir, [topic.id or rel], iso_utc(moment))
    counts = usage.read_usage(config.state_dir)
    return TopicView(rel, topic, iso_utc(limit) if limit else None, counts.get(topic.id or rel))


def _redacted(config: Config, topic: Topic) -> Topic:
    """The topic as `get` shows it: a secret a person pasted into the file by hand is replaced
    by its marker too (what `store` wrote is already redacted; redacting again changes nothing)."""
    extra = secrets.compile_patterns(config.secret_patterns)
    observations = tuple(
        replace(o, text=secrets.redact(o.text, extra).text) for o in topic.observations
    )
    return replace(topic, observations=observations)


def _with_location(config: Config, rel: str, topic: Topic) -> Topic:
    """The path decides the scope: a header that disagrees (a hand-moved file) does not."""
    where = config.scope_of(rel)
    if where is None:
        return topic
    return replace(topic, scope=where[0], scope_id=where[1])


# ---------------------------------------------------------------------------------------------
# Removing


def forget(
    config: Config,
    key_or_id: str,
    *,
    scope: str | None = None,
    scope_id: str | None = None,
    now: datetime | None = None,
) -> tuple[ForgetResult, Published]:
    """Move the topic file to `<managed>/.trash/` and drop it from the index."""
    rel = find_topic(config, key_or_id, scope=scope, scope_id=scope_id)
    phases: list[str] = ["resolved"]
    with managed.topic_lock(config, rel):
        phases.append("locked")
        target = managed.move_to_trash(config, rel, now or datetime.now(UTC))
        phases.append("trashed")
    published = Published((rel,), tuple(phases), f"{rel} moved to {target}")
    return ForgetResult(_stem(rel), rel, target), published


def prune(
    config: Config, *, apply: bool = False, now: datetime | None = None
) -> tuple[PruneResult, Published]:
    """List the topics past their retention; with `apply`, move them to the trash."""
    moment = now or datetime.now(UTC)
    items: list[PruneItem] = []
    for rel in managed.list_topics(config):
        text = managed.read_text(config, rel)
        if text is None:
            continue
        topic = _with_location(config, rel, read_topic(rel, text))
        limit = expires_at(topic.scope, topic.type, topic.updated)
        if limit is None or moment < limit:
            continue
        item = PruneItem(
            rel, topic.key, topic.scope, topic.scope_id, topic.type, topic.updated, iso_utc(limit)
        )
        if apply:
            item = _trash_if_still_expired(config, item, moment)
        items.append(item)
    moved = tuple(i.path for i in items if i.trashed_to)
    published = Published(moved, ("listed", "trashed"), f"{len(moved)} expired topics trashed")
    return PruneResult(apply, tuple(items)), published


def _trash_if_still_expired(config: Config, item: PruneItem, moment: datetime) -> PruneItem:
    # Re-read under the lock: an agent or a person may have renewed the topic since the listing.
    with managed.topic_lock(config, item.path):
        text = managed.read_text(config, item.path)
        if text is None:
            return item
        topic = _with_location(config, item.path, read_topic(item.path, text))
        if not is_expired(topic, moment):
            return item
        target = managed.move_to_trash(config, item.path, moment)
    return replace(item, trashed_to=target)

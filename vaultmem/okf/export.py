"""`export okf`: managed topics and/or a mapped folder's notes written as an OKF v0.2 bundle.

The vault is read from the files (scan, read, parse), never from the index. Two passes: the
first selects notes, applies the secret check (skip, or redact with `--redact`) and assigns each
kept note its concept ID, so the second pass can rewrite links knowing exactly what the bundle
holds. Output is a pure function of the notes: `generated.at` comes from the note (`updated`,
else the file's mtime), listings and the log are sorted, archives carry fixed dates and owners,
and a file whose bytes would not change is not written at all. The files an export wrote are
recorded with their SHA-256 in the vault's state folder's `exports.json` (keyed by the bundle's
absolute path), outside the bundle, which OKF allows to hold only concepts, index.md and log.md.

A bundle folder is written like the managed folder: every folder is opened relative to the one
above it with `O_NOFOLLOW` and files are replaced through the folder descriptor, so a link inside
the bundle folder (`OUT/project -> ~/vault/Knowledge`) is refused instead of followed. Before
anything is written, an export refuses a non-empty folder that no earlier export wrote, and a file
in the way that no export wrote. `--prune` deletes a recorded file only while its bytes still
hash to what this export wrote: a person's edit, or a person's file, is never deleted. An
`OSError` (permissions, a full disk, `/proc`) becomes `FileAccessError` naming the path.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import os
import posixpath
import re
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from vaultmem.core.atomic import replace_at, replace_file
from vaultmem.core.config import Config
from vaultmem.core.errors import FileAccessError, InvalidArgumentError, PathEscapeError
from vaultmem.core.models import JSON, SCOPES, ExportFormat
from vaultmem.core.note_model import Note
from vaultmem.core.secrets import (
    SecretPattern,
    compile_patterns,
    redact,
    redact_value,
    secret_names,
)
from vaultmem.core.version import __version__
from vaultmem.files import managed
from vaultmem.files.scan import read_note, scan_vault
from vaultmem.note.links import LinkResolver
from vaultmem.note.parse import parse_note
from vaultmem.note.properties import split_frontmatter
from vaultmem.note.topics import read_topic, see_also_entries
from vaultmem.okf.bundle import name_problem
from vaultmem.okf.concept import (
    ConceptSource,
    Relation,
    concept_frontmatter,
    dump_yaml,
    format_instant,
    has_offset,
    key_for,
    parse_instant,
    render,
)
from vaultmem.okf.rewrite import (
    bundle_url,
    drop_comments,
    export_links,
    plain_text,
    timestamp_headings,
)

__all__ = ["EXPORTS_RECORD", "ExportReport", "Format", "export_bundle"]

Format = ExportFormat
PRIVATE_SCOPES = ("session", "agent")
EXPORTS_RECORD = "exports.json"
PRODUCER = f"vaultmem/{__version__}"
_DESCRIPTION_MAX = 200
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class ExportReport:
    out: str
    format: str
    concepts: int
    written: tuple[str, ...]
    unchanged: int
    pruned: tuple[str, ...]
    skipped: tuple[dict[str, JSON], ...]
    redacted: tuple[dict[str, JSON], ...]
    links_rewritten: int
    links_outside: int
    problems: tuple[dict[str, JSON], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(slots=True)
class _Item:
    path: str
    note: Note
    body: str
    is_topic: bool
    scope: str
    scope_id: str | None
    text: str = ""
    concept: str = ""
    mtime_ns: int = 0


def export_bundle(
    config: Config,
    out: Path,
    *,
    scope: str | None = None,
    scope_id: str | None = None,
    folder: str | None = None,
    include_private: bool = False,
    redact_secrets: bool = False,
    prune: bool = False,
    fmt: Format = "dir",
) -> ExportReport:
    """Write the bundle to `out` (a folder, or an archive file for tar.gz/zip)."""
    out = out.expanduser().resolve()
    root = config.root.resolve()
    if out == root or root in out.parents:
        raise InvalidArgumentError(
            f"The bundle path {out} is inside the vault {root}.",
            hint="Export to a folder outside the vault; vaultmem never writes notes there.",
        )
    items, problems = _select(config, scope, scope_id, folder, include_private)
    patterns = compile_patterns(config.secret_patterns)
    skipped: list[dict[str, JSON]] = []
    redacted: list[dict[str, JSON]] = []
    kept: list[_Item] = []
    named = secret_names([item.path for item in items], patterns)
    for item in items:
        if item.path in named:
            # its file name would become the concept's file, key and listing entries
            found = redact(item.path, patterns).found
            skipped.append(
                {"path": named[item.path], "patterns": list(found), "reason": "secret_in_name"}
            )
            continue
        found = redact(item.body + "\n" + dump_yaml(item.note.frontmatter), patterns).found
        if found and not redact_secrets:
            skipped.append({"path": item.path, "patterns": list(found)})
            continue
        if found:
            item.body = redact(item.body, patterns).text
            redacted.append({"path": item.path, "patterns": list(found)})
        kept.append(item)
    _assign_concepts(kept, scope, scope_id, folder, config)
    files, rewritten, outside = _render_all(config, kept, patterns if redact_secrets else None)
    files = _without_secrets(files, patterns)
    if fmt == "dir":
        written, unchanged, pruned = _write_folder(config, out, files, prune)
    else:
        written, pruned = _write_file(config, out, _archive(files, fmt)), []
        unchanged = 0 if written else 1
    return ExportReport(
        out=str(out),
        format=fmt,
        concepts=len(kept),
        written=tuple(written),
        unchanged=unchanged,
        pruned=tuple(pruned),
        skipped=tuple(skipped),
        redacted=tuple(redacted),
        links_rewritten=rewritten,
        links_outside=outside,
        problems=tuple(problems),
    )


# --- selection -------------------------------------------------------------------------------


def _select(
    config: Config,
    scope: str | None,
    scope_id: str | None,
    folder: str | None,
    include_private: bool,
) -> tuple[list[_Item], list[dict[str, JSON]]]:
    if folder is not None and scope is not None:
        raise InvalidArgumentError("Name either --scope or --folder, not both.")
    if scope_id is not None and scope is None:
        raise InvalidArgumentError("--scope-id needs --scope.")
    if scope is not None and scope not in SCOPES:
        raise InvalidArgumentError(f"{scope!r} is not a scope; allowed: {', '.join(SCOPES)}.")
    private_hint = "Add --include-private to export session and agent memories."
    problems: list[dict[str, JSON]] = []
    paths: list[tuple[str, bool, str, str | None]] = []
    if folder is not None:
        folder = folder.strip("/")
        mapping = config.mapping_for(folder) if folder else config.mapping_for("")
        if mapping is None:
            raise InvalidArgumentError(f"{folder!r} is not inside a mapped folder.")
        if mapping.scope in PRIVATE_SCOPES and not include_private:
            raise InvalidArgumentError(
                f"{folder!r} belongs to the private scope {mapping.scope}.", hint=private_hint
            )
        scan = scan_vault(config)
        for fp in scan.notes:
            inside = folder == "" or fp.path.startswith(folder + "/")
            if inside and not config.is_managed(fp.path):
                paths.append((fp.path, False, mapping.scope, mapping.scope_id))
        for p in scan.problems:  # names holding a secret: never a concept (shown redacted)
            if p.code == "secret_in_name" and (folder == "" or p.path.startswith(folder + "/")):
                problems.append({"path": p.path, "code": p.code, "message": p.message})
    else:
        if scope in PRIVATE_SCOPES and not include_private:
            raise InvalidArgumentError(f"The scope {scope} is private.", hint=private_hint)
        base = config.managed_folder + ("/" + scope if scope else "")
        base += "/" + scope_id if scope_id else ""
        for rel in managed.list_topics(config):
            if not rel.startswith(base + "/"):
                continue
            owner = config.scope_of(rel)
            if owner is None or (owner[0] in PRIVATE_SCOPES and not include_private):
                continue
            paths.append((rel, True, owner[0], owner[1]))
    items: list[_Item] = []
    for path, is_topic, item_scope, item_id in sorted(paths):
        data = read_note(config, path)
        if not isinstance(data, bytes):
            problems.append({"path": path, "code": data.code, "message": data.message})
            continue
        parsed = parse_note(path, data, max_bytes=config.max_note_bytes)
        if parsed.note.frontmatter_status == "invalid":
            problems.append(
                {
                    "path": path,
                    "code": "frontmatter_invalid",
                    "message": "invalid frontmatter; note not exported",
                }
            )
            continue
        text = data.decode("utf-8", "replace").removeprefix("\ufeff")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        block = split_frontmatter(text)
        body = block.body if block is not None else text
        mtime = (config.root / path).stat().st_mtime_ns
        note = parsed.note
        if is_topic:
            note, body = _as_topic(path, text, note, body)
        items.append(_Item(path, note, body, is_topic, item_scope, item_id, text, "", mtime))
    return items, problems


_COMMENT_HEADER = re.compile(r"^<!--.*\b(?:id|scope)\s*:.*-->\s*$")
_OLD_OBSERVATION = re.compile(r"^###([ \t]+\d{4}-\d{2}-\d{2}T[0-9:.]+Z[ \t]*)$")


def _as_topic(path: str, text: str, note: Note, body: str) -> tuple[Note, str]:
    """A topic's fields from either topic form. The older comment form is exported as the
    current one: its header comment becomes fields, its `###` observations `##` headings."""
    topic = read_topic(path, text)
    fm: dict[str, JSON] = dict(note.frontmatter)
    fields: dict[str, str | None] = {
        "id": topic.id,
        "key": topic.key,
        "type": topic.type,
        "created": topic.created,
        "updated": topic.updated,
        "source": topic.source,
    }
    for name, value in fields.items():
        if fm.get(name) is None and value is not None:
            fm[name] = value
    tags = tuple(dict.fromkeys((*topic.tags, *note.tags)))
    if topic.form == "comment":
        lines = body.split("\n")
        for i, line in enumerate(lines[:8]):
            if _COMMENT_HEADER.match(line.strip()):
                del lines[i]
                break
        body = "\n".join(_OLD_OBSERVATION.sub(r"##\1", line) for line in lines)
    return replace(note, frontmatter=fm, tags=tags), body


def _assign_concepts(
    items: list[_Item],
    scope: str | None,
    scope_id: str | None,
    folder: str | None,
    config: Config,
) -> None:
    if folder is not None:
        base = folder.strip("/")
    else:
        base = config.managed_folder + ("/" + scope if scope else "")
        base += "/" + scope_id if scope_id else ""
    taken: set[str] = set()
    for item in items:
        rel = item.path[len(base) + 1 :] if base else item.path
        concept = rel[:-3]
        okf = item.note.frontmatter.get("okf")
        declared = okf.get("id") if isinstance(okf, dict) else None
        if item.is_topic and isinstance(declared, str) and name_problem(declared + ".md") is None:
            concept = declared.strip("/")
        if concept.casefold() in taken or posixpath.basename(concept) in ("index", "log"):
            digest = hashlib.sha256(item.path.encode()).hexdigest()[:8]
            concept = f"{concept}-{digest}"
        taken.add(concept.casefold())
        item.concept = concept


# --- rendering -------------------------------------------------------------------------------


def _render_all(
    config: Config, items: list[_Item], patterns: Sequence[SecretPattern] | None
) -> tuple[dict[str, bytes], int, int]:
    scan = scan_vault(config)
    resolver = LinkResolver(scan.files)
    by_path = {item.path: item.concept for item in items}
    files: dict[str, bytes] = {}
    rewritten = outside = 0
    listing: list[tuple[str, str, str, str, str]] = []
    for item in items:

        def target_of(target: str, subpath: str, source: str = item.path) -> str | None:
            resolved = resolver.resolve(target, source)
            concept = by_path.get(resolved) if resolved is not None else None
            return None if concept is None else bundle_url(concept, subpath)

        body = drop_comments(item.body)
        result = export_links(body, target_of)
        rewritten += result.rewritten
        outside += result.plain
        relations, property_keys = _relations(item, target_of)
        relations += _see_also(item, target_of)
        fm = item.note.frontmatter
        at = _generated_at(item)
        description = fm.get("description")
        if not isinstance(description, str) or not description.strip():
            description = _first_sentence(body)
        observations: tuple[str, ...] = ()
        if item.is_topic:
            observations = tuple(timestamp_headings(body))
        src = ConceptSource(
            frontmatter=fm,
            is_topic=item.is_topic,
            key=_key(item),
            scope=item.scope,
            scope_id=item.scope_id,
            title=item.note.title,
            tags=item.note.tags,
            description=description.strip(),
            generated_at=at,
            relations=relations,
            property_keys=property_keys,
            observations=observations,
        )
        concept_fm = concept_frontmatter(src, PRODUCER)
        if patterns is not None:
            redacted_fm = redact_value(concept_fm, patterns)
            assert isinstance(redacted_fm, dict)
            concept_fm = redacted_fm
        files[item.concept + ".md"] = render(concept_fm, result.text).encode("utf-8")
        title = str(concept_fm["title"])
        desc = str(concept_fm.get("description", ""))
        created = fm.get("created") if item.is_topic else None
        listing.append((item.concept, title, desc, at, str(created or "")))
    files.update(_indexes(listing))
    files["log.md"] = _log(listing).encode("utf-8")
    return files, rewritten, outside


def _key(item: _Item) -> str:
    declared = item.note.frontmatter.get("key") if item.is_topic else None
    stem = posixpath.basename(item.path)[:-3]
    return key_for(stem, declared)


def _relations(
    item: _Item, target_of: Callable[[str, str], str | None]
) -> tuple[tuple[Relation, ...], frozenset[str]]:
    relations: list[Relation] = []
    property_keys: set[str] = set()
    fm = item.note.frontmatter
    for link in item.note.links:
        if link.kind not in ("property", "field") or not link.relation:
            continue
        url = target_of(link.target, link.subpath)
        if isinstance(url, str):
            relations.append(Relation(link.relation, url, link.kind))
        else:
            # A field's link to a note outside the bundle is plain text in the body: `text`
            # is that text, so import can make the link again (`ingest._restore_fields`).
            text = export_links(link.raw, lambda _t, _s: None).text if link.kind == "field" else ""
            target = link.target + link.subpath
            relations.append(Relation(link.relation, target, link.kind, text))
        if link.kind == "property" and _all_links(fm.get(link.relation)):
            property_keys.add(link.relation)
    return tuple(relations), frozenset(property_keys)


_SEE_ALSO_ENTRY = re.compile(r"- \[\[([^\[\]|\n]+)\|([^\[\]|\n]*)\]\] \(([^()\n]+)\)")
"""A line of a topic's generated See Also block (`memory.relations.render_see_also`)."""


def _see_also(item: _Item, target_of: Callable[[str, str], str | None]) -> tuple[Relation, ...]:
    """A topic's See Also edges as relations, so one whose target leaves the bundle (its body
    line becomes plain text) is still a link after import (`ingest._restore_see_also`)."""
    if not item.is_topic:
        return ()
    found: list[Relation] = []
    for line in see_also_entries(item.body):
        m = _SEE_ALSO_ENTRY.fullmatch(line)
        if m is not None:
            target, text, kind = m.groups()
            found.append(Relation(kind, target_of(target, "") or target, "see_also", text))
    return tuple(found)


def _all_links(value: JSON) -> bool:
    values = value if isinstance(value, list) else [value]
    return bool(values) and all(
        isinstance(v, str) and v.strip().startswith("[[") and v.strip().endswith("]]")
        for v in values
    )


def _generated_at(item: _Item) -> str:
    fm = item.note.frontmatter
    updated = fm.get("updated") if item.is_topic else fm.get("updated", fm.get("modified"))
    okf = fm.get("okf")
    original = okf.get("generated_at") if isinstance(okf, dict) else None
    if isinstance(updated, str) and has_offset(updated):
        # The bundle's own spelling of the instant survives a round trip through a topic.
        if has_offset(original) and parse_instant(str(original)) == parse_instant(updated):
            return str(original)
        return updated
    return format_instant(datetime.fromtimestamp(item.mtime_ns / 1e9, UTC))


_SENTENCE = re.compile(r"^(.+?[.!?])(?=\s|$)", re.S)
_SKIP_LINE = re.compile(r"^\s*(#|>\s*\[!|```|~~~|<!--|\||---|\*\*\*|!\[)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|>\s*)")


def _first_sentence(body: str) -> str:
    """The first sentence of the first paragraph of prose, at most 200 characters."""
    paragraph: list[str] = []
    for line in body.split("\n"):
        if not line.strip() or _SKIP_LINE.match(line) or "::" in line:
            if paragraph:
                break
            continue
        if paragraph and _LIST_MARK.match(line):
            break
        paragraph.append(_LIST_MARK.sub("", line).strip())
    text = " ".join(plain_text(" ".join(paragraph)).split())
    m = _SENTENCE.match(text)
    sentence = m.group(1) if m else text
    if len(sentence) > _DESCRIPTION_MAX:
        cut = sentence[: _DESCRIPTION_MAX - 1]
        sentence = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
    return sentence


def _indexes(listing: list[tuple[str, str, str, str, str]]) -> dict[str, bytes]:
    """One index.md per folder: its concepts, then its subfolders with a trailing `/`."""
    folders: dict[str, tuple[list[str], set[str]]] = {"": ([], set())}
    for concept, title, desc, _at, _created in sorted(listing):
        parent = posixpath.dirname(concept)
        name = posixpath.basename(concept)
        entry = f"* [{_md_text(title)}]({_rel_url(name + '.md')})" + (f" - {desc}" if desc else "")
        folders.setdefault(parent, ([], set()))[0].append(entry)
        while parent:
            up = posixpath.dirname(parent)
            folders.setdefault(up, ([], set()))[1].add(posixpath.basename(parent))
            folders.setdefault(parent, ([], set()))
            parent = up
    out: dict[str, bytes] = {}
    for folder, (entries, subfolders) in folders.items():
        lines = ['---\nokf_version: "0.2"\n---\n'] if folder == "" else []
        lines.append(f"# {posixpath.basename(folder) or 'Bundle'}\n")
        if entries:
            lines.append("\n## Concepts\n\n" + "\n".join(entries) + "\n")
        if subfolders:
            subs = [f"* [{_md_text(s)}/]({_rel_url(s)}/index.md)" for s in sorted(subfolders)]
            lines.append("\n## Folders\n\n" + "\n".join(subs) + "\n")
        path = (folder + "/" if folder else "") + "index.md"
        out[path] = "".join(lines).encode("utf-8")
    return out


def _log(listing: list[tuple[str, str, str, str, str]]) -> str:
    """Entries grouped by the date of each concept's `generated.at`, newest first."""
    days: dict[str, list[str]] = {}
    for concept, title, _desc, at, created in listing:
        day = at[:10]
        word = "Creation" if created[:10] == day or not created else "Update"
        url = _rel_url(concept + ".md")
        days.setdefault(day, []).append(f"* **{word}**: [{_md_text(title)}]({url})")
    lines = ["# Bundle Update Log\n"]
    for day in sorted(days, reverse=True):
        lines.append(f"\n## {day}\n\n" + "\n".join(sorted(days[day])) + "\n")
    return "".join(lines)


def _md_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]").replace("\n", " ")


def _rel_url(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


# --- writing ---------------------------------------------------------------------------------


def _write_folder(
    config: Config, out: Path, files: Mapping[str, bytes], prune: bool
) -> tuple[list[str], int, list[str]]:
    """Write the bundle into the folder `out`, never through a link and never over a file no
    export wrote. `<state>/exports.json` records each written file's path and SHA-256; prune
    deletes only recorded files whose bytes still have the recorded hash."""
    record = _load_record(config)
    key = str(out)
    earlier = record.get(key)
    _check_out(out, files, earlier)
    written: list[str] = []
    unchanged = 0
    pruned: list[str] = []
    digests = {rel: _sha256(data) for rel, data in files.items()}
    # Claimed before a byte is written: an unwritable state folder fails here, with the bundle
    # untouched, and a run cut short leaves files its retry is allowed to replace.
    record[key] = {**(earlier or {}), **digests}
    _save_record(config, record)
    try:
        out.mkdir(parents=True, exist_ok=True)
        root = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for rel in sorted(files):
                *folders, name = rel.split("/")
                with _folder_at(root, folders, out, create=True) as folder:
                    assert folder is not None
                    if _read_at(folder, name, out / rel) == files[rel]:
                        unchanged += 1
                        continue
                    replace_at(folder, name, files[rel])
                written.append(rel)
            stale = sorted(set(earlier or {}) - set(files))
            kept: dict[str, str] = {}
            for rel in stale:
                if prune and name_problem(rel) is None and _prune(root, rel, out, earlier or {}):
                    pruned.append(rel)
                elif _read_at_path(root, rel, out) is not None:
                    kept[rel] = (earlier or {})[rel]
        finally:
            os.close(root)
    except OSError as exc:
        raise _access_error(exc, out) from exc
    record[key] = {**kept, **digests}
    _save_record(config, record)
    return written, unchanged, pruned


def _check_out(out: Path, files: Mapping[str, bytes], earlier: Mapping[str, str] | None) -> None:
    """Refuse before writing anything: OUT that is not a folder, a link anywhere inside it, a
    non-empty folder no export wrote, a file in the way that no export wrote."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _access_error(exc, out) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidArgumentError(f"{out} exists and is not a folder.")
    try:
        empty = not any(os.scandir(out))
    except OSError as exc:
        raise _access_error(exc, out) from exc
    if empty:
        return
    if earlier is None:
        raise InvalidArgumentError(
            f"{out} is not empty and no earlier export wrote it; vaultmem never overwrites "
            "files it did not write.",
            hint="Export to a new or empty folder.",
        )
    for folder, dirs, names in os.walk(out):
        for name in (*dirs, *names):
            path = Path(folder) / name
            if path.is_symlink():
                raise PathEscapeError(
                    f"{path} is a symbolic link inside the bundle folder; an export never writes "
                    "through a link.",
                    hint="Remove the link (or export to a new folder).",
                )
    for rel in sorted(files):
        target = out / rel
        if rel in earlier or not os.path.lexists(target):
            continue
        try:
            same = target.read_bytes() == files[rel]
        except OSError:
            same = False
        if not same:
            raise InvalidArgumentError(
                f"{target} exists and no earlier export wrote it; vaultmem never overwrites "
                "files it did not write.",
                hint="Move that file away, or export to a new folder.",
            )


@contextmanager
def _folder_at(root: int, parts: Sequence[str], out: Path, *, create: bool) -> Iterator[int | None]:
    """The open folder `root/parts…`, walked with O_NOFOLLOW (a link on the way is refused);
    None when missing and not created."""
    fd = os.dup(root)
    try:
        for i, part in enumerate(parts):
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    shown = out.joinpath(*parts[: i + 1])
                    raise PathEscapeError(
                        f"{shown} is a symbolic link or not a folder; an export never writes "
                        "through a link.",
                        hint="Remove the link (or export to a new folder).",
                    ) from exc
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _read_at(folder: int, name: str, shown: Path) -> bytes | None:
    """A regular file's bytes in `folder`, None when missing; a link or a FIFO is refused."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathEscapeError(
                f"{shown} is a symbolic link; an export never writes through a link."
            ) from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InvalidArgumentError(
                f"{shown} is not a regular file; the export will not replace it."
            )
        return handle.read()


def _read_at_path(root: int, rel: str, out: Path) -> bytes | None:
    *folders, name = rel.split("/")
    with _folder_at(root, folders, out, create=False) as folder:
        return None if folder is None else _read_at(folder, name, out / rel)


def _prune(root: int, rel: str, out: Path, earlier: Mapping[str, str]) -> bool:
    """Delete a file an earlier export wrote, only while its bytes are exactly what it wrote."""
    *folders, name = rel.split("/")
    with _folder_at(root, folders, out, create=False) as folder:
        if folder is None:
            return False
        data = _read_at(folder, name, out / rel)
        if data is None or not earlier.get(rel) or _sha256(data) != earlier[rel]:
            return False
        os.unlink(name, dir_fd=folder)
    for depth in range(len(folders), 0, -1):  # drop folders the prune left empty
        with _folder_at(root, folders[: depth - 1], out, create=False) as parent:
            if parent is None:
                break
            try:
                os.rmdir(folders[depth - 1], dir_fd=parent)
            except OSError:
                break
    return True


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _access_error(exc: OSError, path: Path) -> FileAccessError:
    where = exc.filename if isinstance(exc.filename, str) else str(path)
    return FileAccessError(f"Cannot write the bundle at {where}: {exc.strerror or exc}.")


def _without_secrets(
    files: Mapping[str, bytes], patterns: Sequence[SecretPattern]
) -> dict[str, bytes]:
    """The last look before anything is written: the generated listings (`index.md`, `log.md`
    name every concept's title) redacted, and no file whose name holds a secret (the items
    whose path held one were skipped, so none is expected)."""
    named = secret_names(list(files), patterns)
    out: dict[str, bytes] = {}
    for rel, data in files.items():
        if rel in named:
            continue
        if rel.rsplit("/", 1)[-1] in ("index.md", "log.md"):
            text = data.decode("utf-8")
            cleaned = redact(text, patterns)
            data = cleaned.text.encode("utf-8") if cleaned.found else data
        out[rel] = data
    return out


def _write_file(config: Config, out: Path, data: bytes) -> list[str]:
    """Write an archive to the file `out`: never over a file no export wrote (the archive's
    own record in `<state>/exports.json` says one did)."""
    record = _load_record(config)
    key = str(out)
    try:
        if out.read_bytes() == data:
            return []
        if out.name not in record.get(key, {}):
            raise InvalidArgumentError(
                f"{out} exists and no earlier export wrote it; vaultmem never overwrites "
                "files it did not write.",
                hint="Export to a new file name, or move that file away first.",
            )
    except FileNotFoundError:
        pass
    except IsADirectoryError as exc:
        raise InvalidArgumentError(
            f"{out} is a folder; an archive export needs a file path."
        ) from exc
    except OSError as exc:
        raise _access_error(exc, out) from exc
    record[key] = {out.name: _sha256(data)}
    _save_record(config, record)  # before the archive: see `_write_folder`
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        replace_file(out, data)
    except OSError as exc:
        raise _access_error(exc, out) from exc
    return [out.name]


def _archive(files: Mapping[str, bytes], fmt: Format) -> bytes:
    """A reproducible archive: sorted members, fixed dates, owners and modes."""
    buffer = io.BytesIO()
    if fmt == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for rel in sorted(files):
                info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, files[rel])
        return buffer.getvalue()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for rel in sorted(files):
            member = tarfile.TarInfo(rel)
            member.size = len(files[rel])
            member.mode = 0o644
            member.mtime = 0
            archive.addfile(member, io.BytesIO(files[rel]))
    return buffer.getvalue()


def _load_record(config: Config) -> dict[str, dict[str, str]]:
    """`{bundle folder: {file: sha256}}`; a record from before hashes were kept maps files to
    "" (never pruned: nothing says their bytes are still ours)."""
    try:
        data = json.loads((config.state_dir / EXPORTS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, dict[str, str]] = {}
    for folder, files in data.items():
        if isinstance(files, list):
            out[str(folder)] = {p: "" for p in files if isinstance(p, str)}
        elif isinstance(files, dict):
            out[str(folder)] = {
                p: h for p, h in files.items() if isinstance(p, str) and isinstance(h, str)
            }
    return out


def _save_record(config: Config, record: Mapping[str, Mapping[str, str]]) -> None:
    path = config.state_dir / EXPORTS_RECORD
    data = (json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _record_error(exc, path) from exc
    try:
        config.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(path, data)
    except OSError as exc:
        raise _record_error(exc, path) from exc


def _record_error(exc: OSError, path: Path) -> FileAccessError:
    return FileAccessError(
        f"Cannot write the export record {path}: {exc.strerror or exc}.",
        hint=f"Make {path.parent} writable for this user, then export again (the record is "
        "written before the bundle, so nothing was exported without it).",
    )

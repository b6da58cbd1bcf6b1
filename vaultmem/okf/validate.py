"""`validate okf`: our own OKF v0.2 checker, strict on conformance, helpful on style.

Errors break conformance or make a field unreadable: a concept without a parseable YAML mapping
or without a non-empty `type`, frontmatter in a non-root `index.md` (the root one may hold only
`okf_version: "0.2"`), an `index.md`/`log.md` line outside its reserved structure, a timestamp
without an offset, a malformed `generated`/`verified`/`status`/`stale_after`/`sources`, and a
file that is not UTF-8. Warnings never block: broken links, leftover wikilinks, a missing title
or description, actors not written `<producer>/<version>`, `human:<id>` or `process:<id>`,
`tags` given as a string, and names that are not portable or differ only by case.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from vaultmem.core.models import JSON
from vaultmem.note.properties import load_frontmatter, split_frontmatter
from vaultmem.okf.bundle import Limits, name_problem, shown_name
from vaultmem.okf.concept import has_offset
from vaultmem.okf.rewrite import code_segments

__all__ = ["Finding", "ValidationReport", "validate_bundle"]

Level = Literal["error", "warning"]
_Add = Callable[[Level, str], None]
_ACTOR = re.compile(r"(?:human|process):\S+|[^\s/:]+/[^\s/]+")
_STATUSES = ("draft", "stable", "deprecated")
_INDEX_ITEM = re.compile(r"^\* \[(?:[^\]\\]|\\.)+\]\([^()\s]+\)(?: - .*)?$")
_LOG_DATE = re.compile(r"^## (\d{4}-\d{2}-\d{2})$")
_LINK = re.compile(r"!?\[(?:[^\]\\\n]|\\.)*\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+\"[^\"\n]*\")?\s*\)")
_WIKILINK = re.compile(r"\[\[[^\[\]\n]+\]\]")
_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    level: Level
    message: str


@dataclass(frozen=True, slots=True)
class ValidationReport:
    root: str
    concepts: int
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == "warning")

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, object]:
        return {
            "root": self.root,
            "ok": self.ok,
            "concepts": self.concepts,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [
                {"path": f.path, "level": f.level, "message": f.message} for f in self.findings
            ],
        }


def _files(root: Path, limits: Limits) -> tuple[list[str], bool]:
    """Every file under `root` (links not followed), and whether the walk stopped at
    `limits.max_files` (a folder that big is not a knowledge bundle)."""
    out: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        rel = Path(folder).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        out.extend(prefix + n for n in sorted(names))
        if len(out) > limits.max_files:
            return out[: limits.max_files], True
    return out, False


def validate_bundle(root: Path, limits: Limits = _LIMITS) -> ValidationReport:
    """Check every file of the bundle folder `root`. Reading is bounded like an import: links,
    FIFOs and devices are not opened, a file over `max_file_bytes` is not read, and at most
    `max_files` files are looked at."""
    findings: list[Finding] = []
    files, cut = _files(root, limits)
    if cut:
        findings.append(
            Finding(".", "error", f"more than {limits.max_files} files: not a knowledge bundle")
        )
    present = {f.casefold() for f in files}
    seen: dict[str, str] = {}
    concepts = 0
    for rel in files:
        add = _adder(findings, shown_name(rel))
        problem = name_problem(rel)
        if problem is not None:
            add("warning", problem)
        folded = rel.casefold()
        if folded in seen:
            add("warning", f"name differs only by case from {seen[folded]}")
        seen.setdefault(folded, rel)
        if not rel.endswith(".md"):
            continue
        data = _read(root / rel, limits, add)
        if data is None:
            continue
        try:
            text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
        except UnicodeDecodeError as exc:
            add("error", f"not UTF-8 (byte {exc.start})")
            continue
        name = rel.rsplit("/", 1)[-1]
        if name == "index.md":
            _check_index(text, rel == "index.md", add)
        elif name == "log.md":
            _check_log(text, add)
        else:
            concepts += 1
            _check_concept(rel, text, present, add)
    if concepts == 0 and "index.md" not in files:
        findings.append(
            Finding(
                ".",
                "error",
                "not an OKF bundle: no index.md at the root and no concept "
                "(a .md file whose YAML frontmatter has a `type`)",
            )
        )
    return ValidationReport(str(root), concepts, tuple(findings))


def _read(path: Path, limits: Limits, add: _Add) -> bytes | None:
    """A regular file's bytes, or None after a finding (a link, FIFO or device, too large)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        add("error", f"unreadable: {exc.strerror}")
        return None
    if not stat.S_ISREG(st.st_mode):
        add("error", "not a regular file (a link, FIFO or device)")
        return None
    if st.st_size > limits.max_file_bytes:
        add("error", f"larger than {limits.max_file_bytes} bytes")
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limits.max_file_bytes + 1)
    except OSError as exc:
        add("error", f"unreadable: {exc.strerror}")
        return None


def _adder(findings: list[Finding], rel: str) -> _Add:
    def add(level: Level, message: str) -> None:
        findings.append(Finding(rel, level, message))

    return add


def _check_index(text: str, is_root: bool, add: _Add) -> None:
    block = split_frontmatter(text)
    body = text
    if block is not None:
        body = block.body
        fm = load_frontmatter(block)
        if not is_root:
            add("error", "index.md below the bundle root must have no frontmatter")
        elif fm.status != "valid" or fm.data != {"okf_version": "0.2"}:
            add("error", 'the root index.md frontmatter may hold only okf_version: "0.2"')
    for n, line in enumerate(body.split("\n"), 1):
        if line.strip() and not line.startswith("#") and not _INDEX_ITEM.match(line):
            add("error", f"line {n}: not a heading or a '* [Title](url) - description' item")


def _check_log(text: str, add: _Add) -> None:
    if split_frontmatter(text) is not None:
        add("error", "log.md must have no frontmatter")
    dates: list[str] = []
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            m = _LOG_DATE.match(line)
            if m is None:
                add("error", f"line {n}: log sections are '## YYYY-MM-DD' headings")
            else:
                dates.append(m.group(1))
    if dates != sorted(dates, reverse=True):
        add("error", "log dates must run newest first")


def _check_concept(rel: str, text: str, present: set[str], add: _Add) -> None:
    block = split_frontmatter(text)
    if block is None:
        add("error", "no YAML frontmatter")
        return
    fm = load_frontmatter(block)
    if fm.status != "valid":
        add("error", "frontmatter is not a parseable YAML mapping")
        return
    data = fm.data
    kind = data.get("type")
    if not isinstance(kind, str) or not kind.strip():
        add("error", "missing or empty 'type'")
    for name in ("title", "description"):
        if not isinstance(data.get(name), str) or not str(data.get(name)).strip():
            add("warning", f"no {name}")
    if isinstance(data.get("tags"), str):
        add("warning", "'tags' is a string; write a YAML list")
    _check_trust(data, add)
    _check_body(rel, block.body, present, add)


def _instant(value: JSON, field: str, add: _Add, *, required: bool = False) -> None:
    if value is None and not required:
        return
    if not has_offset(value):
        add("error", f"{field}: {value!r} is not an ISO 8601 timestamp with an offset")


def _actor(value: JSON, field: str, add: _Add) -> None:
    if not isinstance(value, str) or not value.strip():
        add("error", f"{field}: an actor is required")
    elif not _ACTOR.fullmatch(value):
        add(
            "warning", f"{field}: {value!r} is not <producer>/<version>, human:<id> or process:<id>"
        )


def _check_trust(data: dict[str, JSON], add: _Add) -> None:
    if "generated" in data:
        gen = data["generated"]
        if not isinstance(gen, dict):
            add("error", "generated: must be a mapping {by, at}")
        else:
            _actor(gen.get("by"), "generated.by", add)
            _instant(gen.get("at"), "generated.at", add)
    if "verified" in data:
        ver = data["verified"]
        items = [ver] if isinstance(ver, dict) else ver if isinstance(ver, list) else None
        if not items:
            add("error", "verified: must be a list of {by, at}")
        else:
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    add("error", f"verified[{i}]: must be a mapping {{by, at}}")
                    continue
                _actor(item.get("by"), f"verified[{i}].by", add)
                _instant(item.get("at"), f"verified[{i}].at", add)
    if "status" in data and data["status"] not in _STATUSES:
        add("error", f"status: {data['status']!r} is not one of {', '.join(_STATUSES)}")
    if "stale_after" in data:
        _instant(data["stale_after"], "stale_after", add, required=True)
    if "sources" in data:
        sources = data["sources"]
        if not isinstance(sources, list):
            add("error", "sources: must be a list")
        else:
            for i, src in enumerate(sources):
                if not isinstance(src, dict) or not isinstance(src.get("resource"), str):
                    add("error", f"sources[{i}]: needs a 'resource'")
                elif "last_modified" in src:
                    _instant(src["last_modified"], f"sources[{i}].last_modified", add)
    if "usage_window" in data:
        window = data["usage_window"]
        if not isinstance(window, dict):
            add("error", "usage_window: must be a mapping {from, to}")
        else:
            for end in ("from", "to"):
                _instant(window.get(end), f"usage_window.{end}", add)


def _check_body(rel: str, body: str, present: set[str], add: _Add) -> None:
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    for chunk, code in code_segments(body):
        if code:
            continue
        if _WIKILINK.search(chunk):
            add("warning", "leftover [[wikilink]] (not an OKF link)")
        for m in _LINK.finditer(chunk):
            dest = m.group(1).strip("<>")
            if ":" in dest.split("/", 1)[0] or dest.startswith("#"):
                continue
            path = unquote(dest.split("#", 1)[0])
            parts = (
                path.lstrip("/").split("/")
                if path.startswith("/")
                else [
                    *([folder] if folder else []),
                    *path.split("/"),
                ]
            )
            resolved: list[str] = []
            for part in parts:
                if part == "..":
                    if resolved:
                        resolved.pop()
                elif part not in ("", "."):
                    resolved.append(part)
            if "/".join(resolved).casefold() not in present:
                add("warning", f"broken link to {dest}")

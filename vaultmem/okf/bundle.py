"""Reading a bundle that nobody vouches for: a folder, a `.tar`/`.tar.gz` or a `.zip`.

Every Markdown file comes out as a `BundleFile` (bundle-relative POSIX path and bytes) or a
`Rejection` with a reason; one bad member never stops the rest. Refused per file: symbolic and
hard links, devices, absolute paths, `..` and backslash names, names that are not portable,
files over `max_file_bytes`, non-UTF-8 text, and names that differ only by case (all of them,
since either could be the one meant). An archive whose members declare or actually expand past
`max_total_bytes`, whose zip members compress better than `max_ratio` (a zip bomb), or which
holds more than `max_files` members is refused whole. Nothing is ever extracted to disk: members
are read into memory through size-limited readers, so a lying header cannot exhaust the disk.
Only files ending in `.md` are returned; other files (`references/…`) are ignored.
"""

from __future__ import annotations

import gzip
import io
import os
import posixpath
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from vaultmem.core.names import portable_problem

__all__ = [
    "Bundle",
    "BundleError",
    "BundleFile",
    "Limits",
    "Rejection",
    "concept_id",
    "is_reserved",
    "read_bundle",
    "shown_name",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """Upper bounds for one bundle; the defaults suit knowledge bundles, not media archives."""

    max_file_bytes: int = 1_000_000
    max_total_bytes: int = 64_000_000
    max_files: int = 10_000
    max_ratio: int = 100
    # A concept's frontmatter as loaded (aliases expanded), counted in characters of its
    # strings: YAML that stays under the node limit can still expand a 16 KB file to 20 MB.
    max_frontmatter_chars: int = 256_000


@dataclass(frozen=True, slots=True)
class BundleFile:
    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Rejection:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Bundle:
    """The readable Markdown files of a bundle (sorted by path) and every refusal."""

    files: tuple[BundleFile, ...]
    rejected: tuple[Rejection, ...] = field(default=())


class BundleError(Exception):
    """The whole bundle is refused (bomb, too many members, unreadable archive)."""


def name_problem(path: str) -> str | None:
    """Why `path` (as written in the bundle) is unsafe to use, or None when it is fine."""
    if not path:
        return "empty name"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    if "\x00" in path:
        return "NUL byte in the name"
    if "\\" in path:
        return "backslash in the name (not a bundle path)"
    if path.startswith("/") or re.match(r"^[A-Za-z]:(?:[/\\]|$)", path):
        return "absolute path"  # `a:b.md` is not one: the portability check names its `:`
    parts = path.split("/")
    if any(part == ".." for part in parts):
        return "'..' escapes the bundle root"
    for part in parts:
        if part in ("", "."):
            continue
        problem = portable_problem(part)
        if problem is not None:
            return f"name {part!r} {problem}"
    if len(path.encode("utf-8")) > 1000:
        return "name too long"
    return None


def _clean(path: str) -> str:
    return "/".join(p for p in path.split("/") if p not in ("", "."))


class _Budget:
    """Counts bytes actually produced by decompression across the whole archive."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.members = 0

    def member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_files:
            raise BundleError(f"more than {self.limits.max_files} members")

    def spend(self, n: int) -> None:
        self.total += n
        if self.total > self.limits.max_total_bytes:
            raise BundleError(
                f"expands past {self.limits.max_total_bytes} bytes (an archive bomb?)"
            )


class _Capped(io.RawIOBase):
    """A read-only stream that fails once more than the budget has been read through it."""

    def __init__(self, inner: IO[bytes], budget: _Budget) -> None:
        self.inner = inner
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        self.budget.spend(len(data))
        buffer[: len(data)] = data
        return len(data)


def _check_text(path: str, data: bytes, limits: Limits) -> Rejection | None:
    if len(data) > limits.max_file_bytes:
        return Rejection(path, f"larger than {limits.max_file_bytes} bytes")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejection(path, f"not UTF-8 text (byte {exc.start})")
    return None


def read_bundle(source: Path, limits: Limits = Limits()) -> Bundle:
    """Read `source` (folder, .tar, .tar.gz/.tgz or .zip) into memory, refusing what is unsafe.

    Raises `BundleError` when the bundle as a whole cannot be trusted or read.
    """
    if source.is_symlink():
        raise BundleError("the bundle path is a symbolic link")
    if source.is_dir():
        raw = list(_walk_folder(source, limits))
    elif source.is_file():
        name = source.name.lower()
        if name.endswith(".zip"):
            raw = list(_read_zip(source, limits))
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            raw = list(_read_tar(source, limits))
        else:
            raise BundleError("not a folder, .tar, .tar.gz or .zip")
    else:
        raise BundleError("no such folder or file")
    return _assemble(raw)


_Item = BundleFile | Rejection


def _walk_folder(root: Path, limits: Limits) -> Iterator[_Item]:
    budget = _Budget(limits)
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                rel = prefix + entry.name
                if entry.is_symlink():
                    yield Rejection(rel, "symbolic link")
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), rel + "/"))
                    continue
                if not rel.endswith(".md"):
                    continue
                budget.member()
                problem = name_problem(rel)
                if problem is not None:
                    yield Rejection(rel, problem)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    yield Rejection(rel, "not a regular file")
                    continue
                size = entry.stat(follow_symlinks=False).st_size
                if size > limits.max_file_bytes:
                    yield Rejection(rel, f"larger than {limits.max_file_bytes} bytes")
                    continue
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as handle:
                    data = handle.read(limits.max_file_bytes + 1)
                budget.spend(len(data))
                yield _check_text(rel, data, limits) or BundleFile(rel, data)


def _read_tar(path: Path, limits: Limits) -> Iterator[_Item]:
    budget = _Budget(limits)
    raw = path.open("rb")
    try:
        gz = path.name.lower().endswith((".gz", ".tgz"))
        source = cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if gz else cast(IO[bytes], raw)
        # Streaming through the capped reader: the decompressed byte count is enforced even for
        # members we skip, so a gzip bomb stops at the budget instead of filling memory.
        capped = io.BufferedReader(_Capped(source, budget))
        with tarfile.open(fileobj=capped, mode="r|") as archive:
            for member in archive:
                budget.member()
                name = member.name
                problem = name_problem(name)
                if member.issym() or member.islnk():
                    yield Rejection(name, "symbolic or hard link")
                    continue
                if member.isdir():
                    continue
                if not name.endswith(".md"):
                    continue
                if problem is not None:
                    yield Rejection(name, problem)
                    continue
                if not member.isfile():
                    yield Rejection(name, "not a regular file")
                    continue
                if member.size > limits.max_file_bytes:
                    yield Rejection(name, f"larger than {limits.max_file_bytes} bytes")
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    yield Rejection(name, "unreadable member")
                    continue
                data = handle.read(limits.max_file_bytes + 1)
                yield _check_text(name, data, limits) or BundleFile(_clean(name), data)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"unreadable tar archive: {exc}") from exc
    finally:
        raw.close()


def _read_zip(path: Path, limits: Limits) -> Iterator[_Item]:
    budget = _Budget(limits)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"unreadable zip archive: {exc}") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_files:
            raise BundleError(f"more than {limits.max_files} members")
        declared = sum(info.file_size for info in infos)
        if declared > limits.max_total_bytes:
            raise BundleError(f"declares {declared} bytes, over {limits.max_total_bytes}")
        for info in infos:
            name = info.filename
            if info.is_dir():
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                yield Rejection(name, "symbolic link")
                continue
            if not name.endswith(".md"):
                continue
            problem = name_problem(name)
            if problem is not None:
                yield Rejection(name, problem)
                continue
            if info.flag_bits & 0x1:
                yield Rejection(name, "encrypted member")
                continue
            if info.file_size > limits.max_file_bytes:
                yield Rejection(name, f"larger than {limits.max_file_bytes} bytes")
                continue
            if info.compress_size and info.file_size / info.compress_size > limits.max_ratio:
                yield Rejection(name, f"compression ratio over {limits.max_ratio} (a zip bomb?)")
                continue
            try:
                with archive.open(info) as handle:
                    # The declared size may lie: read one byte past the limit to find out.
                    data = handle.read(limits.max_file_bytes + 1)
            except (zipfile.BadZipFile, OSError, NotImplementedError) as exc:
                yield Rejection(name, f"unreadable member: {exc}")
                continue
            budget.spend(len(data))
            yield _check_text(name, data, limits) or BundleFile(_clean(name), data)


def shown_name(path: str) -> str:
    """A member name safe to print and put in JSON: undecodable bytes as `\\xNN`."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _assemble(items: list[_Item]) -> Bundle:
    files = [item for item in items if isinstance(item, BundleFile)]
    rejected = [
        Rejection(shown_name(item.path), item.reason)
        for item in items
        if isinstance(item, Rejection)
    ]
    # Archives often wrap everything in one top folder (`bundle/...`): that folder is the root.
    tops = {f.path.split("/", 1)[0] for f in files}
    if files and len(tops) == 1 and all("/" in f.path for f in files):
        cut = len(tops.pop()) + 1
        files = [BundleFile(f.path[cut:], f.data) for f in files]
    groups: dict[str, list[BundleFile]] = {}
    for f in files:
        groups.setdefault(f.path.casefold(), []).append(f)
    kept: list[BundleFile] = []
    for group in groups.values():
        if len(group) == 1:
            kept.append(group[0])
        else:
            names = sorted(f.path for f in group)
            for f in group:
                others = [n for n in names if n != f.path]
                reason = (
                    f"name differs only by case from {', '.join(others)}"
                    if others
                    else "duplicate name"
                )
                rejected.append(Rejection(f.path, reason))
    kept.sort(key=lambda f: f.path)
    rejected.sort(key=lambda r: (r.path, r.reason))
    return Bundle(tuple(kept), tuple(rejected))


def concept_id(path: str) -> str:
    """`tables/orders.md` → `tables/orders`."""
    return path[:-3] if path.endswith(".md") else path


def is_reserved(path: str) -> bool:
    """index.md and log.md, at any level, are not concepts."""
    return posixpath.basename(path) in ("index.md", "log.md")

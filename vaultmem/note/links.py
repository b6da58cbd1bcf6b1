"""Link resolution exactly as Obsidian does it: link path → file, subpath → heading or block.

This module owns spec rules 4, 6, 7, 14 and 15 and is pure (no I/O). `LinkResolver` indexes every
vault file by its *name key* (`file_name_key`): the lower-cased NFC stem of a note or full name of
an attachment. A link can only ever resolve to a file whose name key equals the link's
`link_name_key`, which is what lets reconcile re-resolve just the links whose outcome can change
when a file is added, removed or renamed. The algorithm and every "(uncertain)" choice are
documented step by step in `docs/links.md`.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import accumulate

from vaultmem.core.note_model import Block, Heading, Link, Resolution

__all__ = [
    "LazyLinkResolver",
    "LinkResolver",
    "SubpathIndex",
    "file_name_key",
    "fold_name",
    "link_name_key",
    "resolve_link",
    "subpath_matches",
]

_MD = ".md"


def fold_name(text: str) -> str:
    """The one case- and normalisation-insensitive form of a name: lower-cased, then NFC.

    Every comparison of names goes through it: file name keys, link paths, alias keys and the
    lookups of `show`/`links`/`backlinks`. Lower-casing, not `casefold`, because Obsidian
    compares with JavaScript's `toLowerCase()`: `[[STRASSE]]` does not find `Straße.md`, while
    `[[straße]]` does. One recipe means a name that resolves as a link is found by a lookup.
    """
    lowered = text.lower()
    # NFC is the expensive part; ASCII text is already in NFC.
    return lowered if lowered.isascii() else unicodedata.normalize("NFC", lowered)


_fold = fold_name


def _strip_md(folded_name: str) -> str:
    return folded_name[: -len(_MD)] if folded_name.endswith(_MD) else folded_name


def file_name_key(path: str) -> str:
    """The key under which a file can be linked: a note's stem, an attachment's full name.

    Lower-cased and NFC. `Projects/Café.md` → `café`; `img/Figure 1.png` → `figure 1.png`.
    """
    return _strip_md(_fold(path[path.rfind("/") + 1 :]))


def link_name_key(target: str) -> str:
    """The key of the only files a link target can resolve to (see `file_name_key`).

    The last path segment, lower-cased, NFC, with one trailing `.md` removed: `Sub/Alpha.md` →
    `alpha`, `v1.2 Release` → `v1.2 release` (which is also the key of `v1.2 Release.md`).
    """
    return _strip_md(_fold(target[target.rfind("/") + 1 :]))


def _name_variants(folded_path: str) -> tuple[str, ...]:
    """The folded link paths to look up, in order of preference (rule 6a and 7).

    A last segment with a `.` is first looked up as written (`Report.pdf`), then with `.md`
    appended (`v1.2 Release` → `v1.2 Release.md`). A segment without a `.` only names a note
    (`Note` → `Note.md`): attachments need their extension. A segment already ending in `.md`
    is never given a second `.md`, which keeps every variant's name key equal to the link's.
    """
    name = folded_path[folded_path.rfind("/") + 1 :]
    if name.endswith(_MD):
        return (folded_path,)
    if "." in name:
        return (folded_path, folded_path + _MD)
    return (folded_path + _MD,)


def _folder_of(path: str) -> str:
    slash = path.rfind("/")
    return path[:slash] if slash >= 0 else ""


def join_relative(folder: str, target: str) -> str | None:
    """Resolve a `./` or `../` link path against `folder`; None if it climbs above the vault."""
    parts = folder.split("/") if folder else []
    for segment in target.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    return "/".join(parts)


class _Order:
    """One name-key bucket, sorted three ways for the rule 6e search.

    Sorted by folded path, the files under a folder prefix form one contiguous run (found by
    bisection), so a big bucket (`README` in every folder) does not cost a full scan per link.
    Sorted by reversed folded path, the files ending with a link's path form one run too: a
    link that few or none of a big bucket's files end with (`[[archive/README]]` where no
    `archive/` holds one) is answered from that run, where scanning the bucket for it made a
    build of 6,000 `README.md`s quadratic (36M suffix tests, 25 s).
    """

    __slots__ = ("by_folded", "by_length", "folded_keys", "tail_ranks", "tails")

    def __init__(self, bucket: dict[str, str]) -> None:
        self.by_length = sorted(bucket.items(), key=lambda item: (len(item[0]), item[0]))
        self.by_folded = sorted(bucket.items(), key=lambda item: (item[1], item[0]))
        self.folded_keys = [folded for _, folded in self.by_folded]
        tails = sorted((folded[::-1], rank) for rank, (_, folded) in enumerate(self.by_length))
        self.tails = [tail for tail, _ in tails]
        self.tail_ranks = [rank for _, rank in tails]  # positions in `by_length`

    def _ending(self, variant: str) -> range:
        """The positions in `tails` of the files whose folded path ends with `variant` (never
        empty: a link path has a name)."""
        head = variant[::-1]  # the run of reversed paths starting with it
        start = bisect_left(self.tails, head)
        last = ord(head[-1])
        if last < sys.maxunicode:
            return range(start, bisect_left(self.tails, head[:-1] + chr(last + 1), start))
        stop = start  # no code point follows: count the run
        while stop < len(self.tails) and self.tails[stop].startswith(head):
            stop += 1
        return range(start, stop)

    def first_under(self, folder: str, variant: str) -> str | None:
        """The shortest path starting with `folder` and ending with `variant`, if any."""
        ending = self._ending(variant)
        if len(ending) <= _FEW_ENDING:
            ranks = self.tail_ranks[ending.start : ending.stop]
            under = [r for r in ranks if self.by_length[r][1].startswith(folder)]
            return self.by_length[min(under)][0] if under else None
        best: str | None = None
        for index in range(bisect_left(self.folded_keys, folder), len(self.folded_keys)):
            path, folded = self.by_folded[index]
            if not folded.startswith(folder):
                break
            if folded.endswith(variant) and (best is None or (len(path), path) < (len(best), best)):
                best = path
        return best

    def first(self, variant: str) -> str | None:
        """The shortest path ending with `variant` (the smallest of equal length), if any."""
        ending = self._ending(variant)
        if not ending:
            return None
        if len(ending) <= _FEW_ENDING:
            return self.by_length[min(self.tail_ranks[ending.start : ending.stop])][0]
        for path, folded in self.by_length:  # many end with it: one is near the front
            if folded.endswith(variant):
                return path
        return None


_FEW_ENDING = 256
"""Up to this many files ending with a link's path, the least of them is taken from the run
of `_Order.tails` that holds them; more, and the bucket's files are scanned in order, where
one that matches is met early (every file of a bucket ends with its bare name)."""


class LinkResolver:
    """Resolves link paths to vault files (rules 6 and 7), incrementally updatable.

    Built from every vault file path (vault-relative POSIX, notes and attachments). Two indexes:
    name key → {path: folded path} (the only files a link can reach, see `file_name_key`) and
    folded full path → path (the exact-path steps). Results never depend on insertion order, so
    `add`/`remove` give exactly what a fresh build would.
    """

    __slots__ = ("_by_key", "_by_path", "_ordered")

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._by_key: dict[str, dict[str, str]] = {}
        # Several real paths can fold to one (`A.md` and `a.md` on a case-sensitive disk): the
        # smallest wins, so the answer does not depend on the order files were added.
        self._by_path: dict[str, str] = {}
        # Bucket entries sorted shortest path first, built lazily on the first search that needs
        # them and dropped when the bucket changes; big buckets (`README`) then scan in order.
        self._ordered: dict[str, _Order] = {}
        for path in paths:
            self.add(path)

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._by_key.values())

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        bucket = self._by_key.get(file_name_key(path))
        return bucket is not None and path in bucket

    def add(self, path: str) -> None:
        """Index a file. Adding a known path is a no-op."""
        folded = _fold(path)
        key = _strip_md(folded[folded.rfind("/") + 1 :])
        bucket = self._by_key.get(key)
        if bucket is None:
            self._by_key[key] = {path: folded}
        else:
            bucket[path] = folded
            self._ordered.pop(key, None)
        known = self._by_path.get(folded)
        if known is None or path < known:
            self._by_path[folded] = path

    def remove(self, path: str) -> None:
        """Forget a file. Removing an unknown path is a no-op."""
        folded = _fold(path)
        key = _strip_md(folded[folded.rfind("/") + 1 :])
        bucket = self._by_key.get(key)
        if bucket is None or bucket.pop(path, None) is None:
            return
        self._ordered.pop(key, None)
        if not bucket:
            del self._by_key[key]
        if self._by_path[folded] == path:
            # Fall back to a remaining case-only duplicate; it lives in the same bucket.
            rest = [other for other, other_folded in bucket.items() if other_folded == folded]
            if rest:
                self._by_path[folded] = min(rest)
            else:
                del self._by_path[folded]

    def resolve(self, target: str, source_path: str) -> str | None:
        """The path of the file `target` points to from the note `source_path`, or None.

        `target` is the link path as written, without its subpath; "" means the source itself.
        """
        if target == "":
            return source_path
        if target.startswith("/"):
            # Rule 6d: a vault-absolute link resolves by exact path only.
            return self._exact(_fold(target.lstrip("/")))
        if target.startswith(("./", "../")) or target in (".", ".."):
            # Rule 6c: relative to the linking note's folder, exact path only (choice: no
            # fallback to the name search, whose suffix test could never match `../X`).
            joined = join_relative(_folder_of(source_path), target)
            if joined is None or target.rsplit("/", 1)[-1] in ("", ".", ".."):
                return None  # climbs out of the vault, or names a folder
            return self._exact(_fold(joined))
        return self._search(_fold(target), source_path)

    def _exact(self, folded_path: str) -> str | None:
        if folded_path.endswith("/") or not folded_path:
            return None  # a folder (or the vault root) is never a target
        for variant in _name_variants(folded_path):
            path = self._by_path.get(variant)
            if path is not None:
                return path
        return None

    def _search(self, folded_target: str, source_path: str) -> str | None:
        name = folded_target[folded_target.rfind("/") + 1 :]
        if not name:
            return None  # `Folder/`: folders are not targets
        key = _strip_md(name)
        bucket = self._by_key.get(key)
        if bucket is None:
            return None
        # Quirk (uncertain, kept): the folder test is a plain prefix test with no `/` boundary,
        # so a note in `Pro/` also prefers files under `Projects/`. Obsidian's root folder path
        # is "/", which no file path starts with, so from the root nothing is preferred.
        folder = _fold(_folder_of(source_path)) or "/"
        for variant in _name_variants(folded_target):
            exact = self._by_path.get(variant)
            if exact is not None:
                return exact  # rule 6d: the exact full path wins
            if len(bucket) == 1:
                ((path, folded),) = bucket.items()
                if folded.endswith(variant):
                    return path
                continue
            order = self._ordered.get(key)
            if order is None:
                order = self._ordered[key] = _Order(bucket)
            # Rule 6e: the best suffix match under the linking note's folder, else the first
            # anywhere. Quirk (uncertain, kept): no segment boundary, so `b/Note` also matches
            # `ab/Note.md`. The bucket already guarantees the file name itself is equal.
            under = order.first_under(folder, variant)
            if under is not None:
                return under
            first = order.first(variant)
            if first is not None:
                return first
        return None


class LazyLinkResolver(LinkResolver):
    """`LinkResolver(paths)` for a few links: indexes a name key's files when a link first asks.

    A link only ever reaches files of its own name key (every look-up variant keeps the key), so
    a resolver holding just those files answers it exactly as the full one does. Building the
    full one costs a fold and two dict updates per vault file (~0.3 s at 100,000 files), which
    a one-note edit would pay for a handful of links. Here the folded paths are one string,
    searched per key (`str.find`, C speed: ~2 ms a key at 100,000 files), a match's path cut
    from the unfolded string at the same place when folding kept every length; past `eager_after`
    new keys in one run (where the full build gets cheaper), or when a path holds a line break
    (the string could not be split back), every file is indexed as usual.

    A resolver kept for the next run (the watcher's next batch over the same files) counts
    its new keys from `begin_run`: counted over its whole life, the keys of a few saves added
    up past `eager_after` and one later save paid the full build (~1 s at 100,000 files).
    """

    __slots__ = (
        "_asked",
        "_blob",
        "_eager_after",
        "_joined",
        "_keys",
        "_lines",
        "_listed",
        "_paths",
        "_starts",
    )

    def __init__(
        self, paths: Collection[str], eager_after: int = 32, *, lines: str | None = None
    ) -> None:
        """`lines`: the paths already joined as the search needs them ("\n" before, between
        and after each), when a caller holds them so (`index_state.ListedFiles.lines`)."""
        super().__init__()
        self._paths = paths
        self._keys: set[str] | None = set()
        self._asked = 0  # keys first asked in this run
        self._eager_after = eager_after
        self._blob: str | None = None
        self._joined: str | None = None  # the paths as `_blob` holds them, before the fold
        self._starts: list[int] = []
        self._listed: list[str] = []
        self._lines = lines

    def resolve(self, target: str, source_path: str) -> str | None:
        keys = self._keys
        if keys is not None and target:
            key = _lookup_key(target, source_path)
            if key is not None and key not in keys:
                keys.add(key)
                self._asked += 1
                if self._asked > self._eager_after or not self._index_key(key):
                    self._index_all()
        return super().resolve(target, source_path)

    def begin_run(self) -> None:
        """Start counting new keys afresh: what earlier runs indexed stays."""
        self._asked = 0

    def _index_all(self) -> None:
        self._keys = None
        for path in self._paths:
            self.add(path)  # adding a known path is a no-op

    def _index_key(self, key: str) -> bool:
        """Add the files whose name key is `key`; False when the search cannot be used."""
        if not key:
            return True  # `Folder/`: no file has an empty name
        if self._blob is None:
            whole = self._lines or "\n" + "\n".join(self._paths) + "\n"
            self._lines = None
            lowered = whole.lower()  # lower-casing never shortens a character, NFC may
            in_place = len(lowered) == len(whole) and unicodedata.is_normalized("NFC", lowered)
            folded = lowered if in_place else _fold(whole)
            if folded.count("\n") != len(self._paths) + 1:
                return False  # a path with a line break (or a fold that made one)
            self._blob = folded
            if in_place:  # each character folded to one: a match's line is its path's
                self._joined = whole
            else:  # where each line break is, to find the path
                self._listed = whole[1:-1].split("\n")  # in the order of the lines
                lengths = [len(line) + 1 for line in folded[1:-1].split("\n")]
                self._starts = list(accumulate(lengths, initial=0))
        blob, joined = self._blob, self._joined
        assert blob is not None
        for name in (key, key + _MD):
            needle = name + "\n"
            at = blob.find(needle, 1)
            while at >= 0:
                if blob[at - 1] in "\n/":  # the whole file name, not the end of a longer one
                    end = at + len(name)  # the path's folded form ends in `name` here
                    if joined is not None:
                        path = joined[blob.rfind("\n", 0, at) + 1 : end]
                    else:
                        path = self._listed[bisect_left(self._starts, end) - 1]
                    if file_name_key(path) == key:
                        self.add(path)
                at = blob.find(needle, at + 1)
        return True


def _lookup_key(target: str, source_path: str) -> str | None:
    """The name key `LinkResolver.resolve` looks `target` up under; None when it looks nothing
    up (a link that climbs out of the vault)."""
    if target.startswith("/"):
        folded = _fold(target.lstrip("/"))
    elif target.startswith(("./", "../")) or target in (".", ".."):
        joined = join_relative(_folder_of(source_path), target)
        if joined is None:
            return None
        folded = _fold(joined)
    else:
        folded = _fold(target)
    return _strip_md(folded[folded.rfind("/") + 1 :])


_HEADING_PUNCT = re.compile(r"[!\"#$%&()*+,.:;<=>?@^`{|}~/\[\]\\\r\n]")
_SPACES = re.compile(r"\s+")
_PDF_PAGE = re.compile(r"#page=\d+")


def outline_digest(headings: Iterable[Heading], blocks: Iterable[Block]) -> str:
    """A digest of all `SubpathIndex.matches` reads of a note: its heading keys and levels in
    line order, its folded block ids. An edit that keeps it changes no stored link's answer
    about a subpath into the note, so reconcile need not look those links up (a scan of every
    link). Computed from the stored (redacted) headings on both sides."""
    keys = [(_heading_key(h.text), h.level) for h in sorted(headings, key=lambda h: h.line)]
    ids = sorted({block.id.lower() for block in blocks})
    return hashlib.blake2b(repr((keys, ids)).encode(), digest_size=8).hexdigest()


def _heading_key(text: str) -> str:
    """Obsidian's heading match key (rule 14).

    Each listed punctuation character and line break becomes a space (choice: replaced, not
    deleted, as Obsidian's own heading-to-link cleaning does), whitespace collapses, the ends are
    trimmed, and case and Unicode normalisation fold away. Both sides go through this, so
    `[[N#Q&A]]` matches `## Q&A` either way.
    """
    return _fold(_SPACES.sub(" ", _HEADING_PUNCT.sub(" ", text)).strip())


class SubpathIndex:
    """One note's headings and blocks, arranged so each subpath is checked without a scan.

    `#^id` is a set lookup, and so is a one-part `#H` (the usual subpath); `#H1#H2` looks each
    part up among the headings of that key in line order. Checking every link by scanning every
    heading made a note of 20,000 `[[#hN]]` links over 20,000 `## hN` headings quadratic
    (255 s). Build one per target note, then ask it.
    """

    __slots__ = ("_blocks", "_by_key", "_key_set", "_keys", "_levels")

    def __init__(self, headings: Sequence[Heading], blocks: Sequence[Block]) -> None:
        ordered = sorted(headings, key=lambda heading: heading.line)
        self._fill(
            [_heading_key(heading.text) for heading in ordered],
            [heading.level for heading in ordered],
            (block.id for block in blocks),
        )

    @classmethod
    def of_anchors(
        cls, anchors: Sequence[str], levels: Sequence[int], block_ids: Iterable[str]
    ) -> SubpathIndex:
        """The index of a stored outline (`index_writes.StoredOutline`): its headings'
        anchors and levels in line order, its block ids as written.

        A stored anchor is `markdown.heading_anchor(text)`: the same punctuation and white
        space rules as `_heading_key`, lower-cased, so folding it gives the key without the
        regexes, which were most of a build's subpath check."""
        index = cls.__new__(cls)
        keys = list(anchors) if "".join(anchors).isascii() else list(map(_fold, anchors))
        index._fill(keys, list(levels), block_ids)
        return index

    def _fill(self, keys: list[str], levels: list[int], block_ids: Iterable[str]) -> None:
        """Both constructors' state: heading keys and levels in line order, block ids."""
        self._keys = keys
        self._levels = levels
        self._key_set = frozenset(keys)
        self._blocks = frozenset(block_id.lower() for block_id in block_ids)
        self._by_key: dict[str, list[tuple[int, int]]] | None = None

    def matches(self, subpath: str) -> bool:
        """Whether a subpath (`#H1#H2`, `#^id`, with its leading `#`) exists in the note.

        `#^id` looks the block id up case-insensitively (rule 15). Otherwise each `#` part
        names a heading; every later heading must come after the previous match and be deeper
        (levels may be skipped). Matching is greedy from the top, so duplicate headings resolve
        to the first (rule 14). An empty subpath, or one whose parts are all empty, matches.
        """
        body = subpath[1:] if subpath.startswith("#") else subpath
        if body.startswith("^"):
            wanted = body[1:].lower()
            return bool(wanted) and wanted in self._blocks
        keys = [key for key in map(_heading_key, body.split("#")) if key]
        if len(keys) <= 1:  # any heading of the key: every level is deeper than none
            return not keys or keys[0] in self._key_set
        position, level = -1, 0
        for key in keys:
            candidates = self._keys_by_line().get(key, ())
            at = bisect_right(candidates, (position, sys.maxsize))
            found = next(((p, lv) for p, lv in candidates[at:] if lv > level), None)
            if found is None:
                return False
            position, level = found
        return True

    def _keys_by_line(self) -> dict[str, list[tuple[int, int]]]:
        """Each heading key's (position, level) pairs in line order, made on the first ask."""
        if self._by_key is None:
            self._by_key = {}
            for position, (key, level) in enumerate(zip(self._keys, self._levels, strict=True)):
                self._by_key.setdefault(key, []).append((position, level))
        return self._by_key


def subpath_matches(subpath: str, headings: Sequence[Heading], blocks: Sequence[Block]) -> bool:
    """Whether `subpath` exists among one note's headings and blocks (`SubpathIndex.matches`).

    For one check; a caller checking many subpaths against one note builds a `SubpathIndex`.
    """
    return SubpathIndex(headings, blocks).matches(subpath)


def resolution_scope(target: str, source_path: str) -> str:
    """What the file a link `target` resolves to depends on besides the target itself: the
    linking note's folder (a relative path, rule 6c, and the best match under it, rule 6e),
    or the note itself for a link to itself (`[[#Heading]]`). Links equal in target,
    subpath and this resolve alike."""
    return source_path if target == "" else _folder_of(source_path)


def resolve_link(
    link: Link,
    source_path: str,
    resolver: LinkResolver,
    headings_of: Callable[[str], SubpathIndex | None],
) -> Resolution:
    """Resolve one link: its target file, and whether its subpath exists there.

    `headings_of(path)` gives a note's `SubpathIndex`, or None when its headings are not known;
    `subpath_found` is then None, as it is for a link without subpath or an unresolved link.
    Only a note's headings and blocks and a PDF's `#page=N` are checkable subpaths (spec rule
    15): on any other file a subpath is a viewer option (`![[icon.svg#icon]]`, `#height=400`
    on a PDF), never a broken link, so `subpath_found` is None there.
    """
    path = resolver.resolve(link.target, source_path)
    if not link.subpath or path is None:
        return Resolution(path=path, subpath_found=None)
    lowered = path.lower()
    if not lowered.endswith(_MD):
        checkable = lowered.endswith(".pdf") and _PDF_PAGE.fullmatch(link.subpath) is not None
        return Resolution(path=path, subpath_found=True if checkable else None)
    index = headings_of(path)
    if index is None:
        return Resolution(path=path, subpath_found=None)
    return Resolution(path=path, subpath_found=index.matches(link.subpath))

"""rjieba's cut of a short Chinese text without loading jieba's whole dictionary (pure).

`import rjieba` builds its default `Jieba()` from the ~349,000 words of jieba's dictionary,
holding the interpreter for ~0.2 s: more than the rest of a cold search. Yet jieba cuts a
text from the dictionary's entries that occur in it and the dictionary's total frequency
alone (its DAG holds only substrings of the text; a route scores each word by its frequency
over that total; runs of single characters go to a built-in HMM). So an empty `Jieba` given
just those entries, plus one word that occurs in no text carrying the rest of the total,
cuts the text exactly as the full one does (tests/core/test_jieba_slice.py compares them).

The entries come from `jieba-words.bin` beside this module: jieba 0.42.1's `dict.txt`
(MIT licence, (c) 2013 Sun Junyi), the dictionary jieba-rs builds into rjieba, grouped by
first two characters so that a text parses the groups at its own positions only, and read
through a memory map. `write_slices` makes it (`make jieba-words`). rjieba's engine is loaded
from its extension module without running the package's `__init__` (which would build the
default dictionary); importing `rjieba` later reuses that module. Only with the rjieba
releases the tests compared (`VERIFIED_RJIEBA`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import mmap
import struct
import sys
import threading
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

DATA_PATH = Path(__file__).with_name("jieba-words.bin")
_MAGIC = b"VMJIEBA2"
_HEAD = struct.Struct("<QII")  # total frequency, one-character words, two-character keys
_FILLER = "\ue000"
"""A private-use character, in no Han or kana run: the word that carries the rest of the
total, so that every route is scored against the full dictionary's total."""


def _key(first: str, second: str) -> int:
    """A word's first two characters as one sortable integer (code points < 2**21)."""
    return ord(first) << 21 | ord(second)


def write_slices(dict_txt: Path, out: Path) -> None:
    """Write `out` from jieba's `dict.txt` (`word freq [tag]` lines), read as jieba-rs reads
    it: the total frequency; the one-character words (code points, frequencies); the first
    two characters of the longer words as sorted keys, each with its group's offset; then
    each group's `rest<TAB>freq` lines (a word less its first two characters). A text then
    finds the words at a position with two binary searches (`bisect` on the arrays, in C)
    and parses only those groups."""
    freqs: dict[str, int] = {}
    for line in dict_txt.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if parts:  # as jieba-rs loads it: no frequency is 0, a word met again takes the later
            freqs[parts[0]] = int(parts[1]) if len(parts) > 1 else 0
    singles = sorted((ord(w), f) for w, f in freqs.items() if len(w) == 1)
    groups: dict[int, list[str]] = {}
    for word, freq in freqs.items():
        if len(word) > 1:
            groups.setdefault(_key(word[0], word[1]), []).append(f"{word[2:]}\t{freq}\n")
    keys = sorted(groups)
    blobs = ["".join(groups[k]).encode("utf-8") for k in keys]
    offsets = array("I", [0])
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    arrays = [
        array("I", [c for c, _ in singles]),
        array("I", [f for _, f in singles]),
        array("Q", keys),
        offsets,
    ]
    if sys.byteorder != "little":  # the file is little-endian wherever it is made
        for values in arrays:
            values.byteswap()
    head = _HEAD.pack(sum(freqs.values()), len(singles), len(keys))  # each word once
    out.write_bytes(b"".join([_MAGIC, head, *(a.tobytes() for a in arrays), *blobs]))


class _Slices:
    """The data file's arrays, read in place (a memory map: nothing copied but the groups a
    text parses, each on its first use)."""

    def __init__(self, data: bytes | mmap.mmap) -> None:
        view = memoryview(data)
        if view[: len(_MAGIC)] != _MAGIC or sys.byteorder != "little":
            raise ValueError(f"{DATA_PATH} is not a jieba word list here: reinstall vaultmem")
        self.total, singles, keys = _HEAD.unpack_from(view, len(_MAGIC))
        at = len(_MAGIC) + _HEAD.size

        def take(code: Literal["I", "Q"], count: int) -> memoryview[int]:
            nonlocal at
            size = struct.calcsize(code) * count
            values = view[at : at + size].cast(code)
            at += size
            return values

        self._single_chars = take("I", singles)
        self._single_freqs = take("I", singles)
        self._keys = take("Q", keys)
        self._offsets = take("I", keys + 1)
        self._view = view
        self._base = at
        self._groups: dict[int, tuple[tuple[str, int], ...]] = {}

    def _text(self, i: int) -> str:
        """Group `i`'s lines."""
        start, end = self._offsets[i], self._offsets[i + 1]
        return str(self._view[self._base + start : self._base + end], "utf-8")

    def single(self, char: str) -> int | None:
        """The frequency of the one-character word `char`, if it is one."""
        code = ord(char)
        i = bisect_left(self._single_chars, code)
        if i < len(self._single_chars) and self._single_chars[i] == code:
            return self._single_freqs[i]
        return None

    def starting(self, first: str, second: str) -> tuple[tuple[str, int], ...]:
        """The words of two characters or more that start with `first` and `second`."""
        key = _key(first, second)
        group = self._groups.get(key)
        if group is None:
            i = bisect_left(self._keys, key)
            group = ()
            if i < len(self._keys) and self._keys[i] == key:
                prefix = first + second
                pairs = (line.split("\t") for line in self._text(i).splitlines())
                group = tuple((prefix + rest, int(freq)) for rest, freq in pairs)
            self._groups[key] = group
        return group

    def words(self) -> Iterator[tuple[str, int]]:
        """Every word with its frequency (for tests and checks: parses the whole list)."""
        for char, freq in zip(self._single_chars, self._single_freqs, strict=True):
            yield chr(char), freq
        for i, key in enumerate(self._keys):
            prefix = chr(key >> 21) + chr(key & (1 << 21) - 1)
            for line in self._text(i).splitlines():
                rest, count = line.split("\t")
                yield prefix + rest, int(count)


class _Cutter:
    """One empty `Jieba` that gathers the entries of every text it has cut: a word that
    does not occur in a text is not in its DAG, so it changes nothing there, and the
    filler's frequency is set again (jieba keeps the total as the sum of the frequencies)
    so that the total stays the dictionary's."""

    def __init__(self, slices: _Slices, engine: Any) -> None:
        self._slices = slices
        self._jieba = engine.Jieba.empty()
        self._added: set[str] = set()
        self._carried = 0
        # The MCP server searches in threads: one text at a time adds its words, sets the
        # filler and cuts, or a filler set from a stale sum would move the total.
        self._lock = threading.Lock()

    def tokenize(self, run: str) -> list[tuple[str, int, int]]:
        with self._lock:
            return self._tokenize(run)

    def _tokenize(self, run: str) -> list[tuple[str, int, int]]:
        slices, added, jieba = self._slices, self._added, self._jieba
        carried = self._carried
        for i, char in enumerate(run):
            if char not in added and (freq := slices.single(char)) is not None:
                added.add(char)
                jieba.add_word(char, freq, None)
                carried += freq
            if i + 1 < len(run):
                for word, freq in slices.starting(char, run[i + 1]):
                    if word not in added and run.startswith(word, i):
                        added.add(word)
                        jieba.add_word(word, freq, None)
                        carried += freq
        if carried != self._carried:
            self._carried = carried
            jieba.add_word(_FILLER, slices.total - carried, None)
        cut: list[tuple[str, int, int]] = jieba.tokenize(run)
        return cut


_cutter: _Cutter | None = None


VERIFIED_RJIEBA = ("0.2.2",)
"""rjieba releases whose built-in dictionary is the one `jieba-words.bin` holds (the tests
compare their cuts): with another, the caller cuts with rjieba's own dictionary instead."""


def _rjieba_engine() -> Any:
    """rjieba's compiled module, without the package's `__init__` (its default dictionary)."""
    module = sys.modules.get("rjieba.rjieba")
    if module is not None:
        return module
    spec = importlib.util.find_spec("rjieba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("rjieba is not installed: pip install vaultmem again")
    site = Path(spec.submodule_search_locations[0]).parent
    if not any((site / f"rjieba-{v}.dist-info").is_dir() for v in VERIFIED_RJIEBA):
        raise ImportError("an rjieba release whose dictionary was not compared with ours")
    finder = importlib.machinery.FileFinder(
        spec.submodule_search_locations[0],
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    )
    ext = finder.find_spec("rjieba.rjieba")
    if ext is None or ext.loader is None:
        raise ImportError("rjieba's compiled module is missing: pip install vaultmem again")
    module = importlib.util.module_from_spec(ext)
    sys.modules["rjieba.rjieba"] = module  # `import rjieba` later reuses it, never inits twice
    ext.loader.exec_module(module)
    return module


_made = threading.Lock()


def tokenize(run: str) -> list[tuple[str, int, int]]:
    """`rjieba.tokenize(run)` for a run of Han (`_FILLER` is in no such run), from the
    dictionary entries that occur in it."""
    global _cutter
    if _cutter is None:
        with _made:
            if _cutter is None:
                with open(DATA_PATH, "rb") as handle:
                    data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                _cutter = _Cutter(_Slices(data), _rjieba_engine())
    return _cutter.tokenize(run)


if __name__ == "__main__":  # `make jieba-words`
    write_slices(Path(sys.argv[1]), DATA_PATH)
    print(f"wrote {DATA_PATH} ({DATA_PATH.stat().st_size:,} bytes)")

"""A fresh build's boilerplate weights, cut by the workers while they parse.

A body line is boilerplate once `BOILERPLATE_NOTES` notes of the vault hold it, which only the
load knows, after every note is parsed; it then cuts what those lines add to each section
holding one (`search_rows._stage_boilerplate_weights`). On obsidian-hub, whose notes end in the
same footer, that cut came after the pool: ~2 s of a ~10 s build, the section texts read back
out of DuckDB and sent to workers whose word memos start empty.

A worker's own notes give a lower bound of each line's count: a line in that many of them is
boilerplate for the vault too. So in a build from nothing each worker counts the candidate
lines of the notes it parsed (`SearchDocument.line_keys`, each note once), and after every chunk
cuts the chunk's sections holding a line it knows by then, as the load would
(`documents.boilerplate_tsv_lines`), writing their weights and, per section, the lines it cut.
The load takes a section's weights from there when those lines are exactly the section's
boilerplate lines, and cuts the others (a section parsed before its line was known) as before:
the result is the load's own cut, byte for byte, whatever the workers knew.

The count is bounded: past `PRUNE_AT` distinct lines, those seen once are forgotten (a fresh
line is most lines: 1.6 of the 1.8 million at 100,000 generated notes). Forgetting only lowers
a count, so what a worker knows stays boilerplate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vaultmem.core.documents import BOILERPLATE_NOTES, SearchDocument, boilerplate_tsv_lines
from vaultmem.storage.rows import PRECUT_LINES, PRECUT_WEIGHTS

PRUNE_AT = 200_000
"""Distinct lines a worker counts before it forgets those seen once (~20 MB of counter)."""


class EarlyCut:
    """One worker's count of candidate lines over the notes it parsed in this build, and the
    lines known to be boilerplate from it."""

    __slots__ = ("counts", "known", "language")

    def __init__(self, language: str) -> None:
        self.language = language
        self.counts: Counter[int] = Counter()
        self.known: set[int] = set()

    def cut(
        self,
        notes: Sequence[tuple[int, str, Sequence[SearchDocument]]],
        folder: Path,
        stem: str,
    ) -> tuple[Path, ...]:
        """Count a chunk's notes (number, title, documents), then append the weights of its
        sections holding a known line to `<stem>` + `PRECUT_WEIGHTS` and the lines cut to
        `<stem>` + `PRECUT_LINES` (`storage.rows`; the load reads both); both paths when a
        section was cut, else none."""
        self._count(notes)
        known = self.known
        if not known:
            return ()
        sections: list[tuple[int, int, str | None, str]] = []
        lines: list[str] = []
        for number, _, documents in notes:
            for doc in documents:
                if doc.ord and not known.isdisjoint(doc.line_keys):
                    sections.append((number, doc.ord, doc.heading, doc.text))
                    lines += [f"{number}\t{doc.ord}\t{k}\n" for k in doc.line_keys if k in known]
        if not sections:
            return ()
        weights, cut = folder / f"{stem}{PRECUT_WEIGHTS}", folder / f"{stem}{PRECUT_LINES}"
        with open(weights, "a", encoding="utf-8", newline="\n") as out:
            out.writelines(boilerplate_tsv_lines(sections, frozenset(known), self.language))
        with open(cut, "a", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
        return weights, cut

    def _count(self, notes: Sequence[tuple[int, str, Sequence[SearchDocument]]]) -> None:
        counts, known = self.counts, self.known
        for _, _, documents in notes:
            keys = set().union(*(doc.line_keys for doc in documents))
            counts.update(keys)
            known.update(k for k in keys if counts[k] >= BOILERPLATE_NOTES)
        if len(counts) > PRUNE_AT:
            self.counts = Counter({k: n for k, n in counts.items() if n > 1})

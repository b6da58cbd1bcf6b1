"""`vaultmem parse`: one note read from disk and parsed as reconcile would, with each link
resolved against the files of the vault as they are now (not against the index, which may be
stale or missing). Link targets' headings and blocks come from parsing those files, once each.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from vaultmem.core.config import Config
from vaultmem.core.errors import NotFoundError
from vaultmem.core.note_model import ParsedNote, Problem, Resolution
from vaultmem.core.secrets import compile_patterns
from vaultmem.files.scan import read_note, scan_vault
from vaultmem.note.links import LinkResolver, SubpathIndex, resolve_link
from vaultmem.note.parse import parse_note, redacted_note


@dataclass(frozen=True, slots=True)
class ParsedView:
    """`vaultmem parse`: a note's model with each link's resolution against the whole vault."""

    parsed: ParsedNote
    resolutions: tuple[Resolution, ...]

    def to_dict(self) -> dict[str, Any]:
        note = asdict(self.parsed.note)
        for link, res in zip(note["links"], self.resolutions, strict=True):
            link["resolved"] = asdict(res)
        return {
            "note": note,
            "problems": [{**asdict(p), "severity": p.severity} for p in self.parsed.problems],
        }


def preview(config: Config, rel: str) -> ParsedView:
    """Parse the note at vault-relative `rel` and resolve its links against every file."""
    data = read_note(config, rel)
    if isinstance(data, Problem):
        raise NotFoundError(f"Cannot read {rel}: {data.message}")
    parsed = parse_note(rel, data, max_bytes=config.max_note_bytes)
    resolver = LinkResolver(scan_vault(config).files)
    cache: dict[str, SubpathIndex | None] = {
        rel: SubpathIndex(parsed.note.headings, parsed.note.blocks)
    }

    def headings_of(path: str) -> SubpathIndex | None:
        if path not in cache:
            raw = read_note(config, path) if path.lower().endswith(".md") else None
            found = (
                parse_note(path, raw, max_bytes=config.max_note_bytes).note
                if isinstance(raw, bytes)
                else None
            )
            cache[path] = SubpathIndex(found.headings, found.blocks) if found else None
        return cache[path]

    resolutions = tuple(
        resolve_link(link, rel, resolver, headings_of) for link in parsed.note.links
    )
    # shown as the index holds it: redacted once its links are resolved
    note = redacted_note(parsed.note, compile_patterns(config.secret_patterns))
    return ParsedView(replace(parsed, note=note), resolutions)

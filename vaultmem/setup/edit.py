"""Edits of an agent's JSON or TOML config file that keep everything else, previewed, backed up
and undone.

A `FileChange` names one file and two functions on its parsed document: `add` puts vaultmem's
entries in, `strip` takes them out. Planning reads the file, applies the function to a parsed
copy and renders the result; nothing is written until `apply`. The rules:

- Every other key stays, in its order (JSON through `json`, whose objects keep order; TOML
  through tomlkit, which keeps comments, spacing and layout). A JSON file is rewritten with the
  indentation it used (2 spaces when new); a file whose parsed value does not change is not
  rewritten at all, so a second run changes nothing.
- Before a file is edited, its bytes are copied to `<name>.vaultmem-backup-<UTC stamp>` beside
  it (a new file has nothing to back up).
- Removing restores the exact previous bytes when it can prove nothing else changed since: the
  newest backup whose content, with vaultmem's entries added, gives exactly today's bytes. A file
  that holds exactly what set-up creates from nothing is deleted. Otherwise (someone edited the
  file since) only vaultmem's entries are taken out and the rest is kept as it now is.
- A file that is not a JSON object (or not TOML) is left alone with an error naming it.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from vaultmem.core.atomic import replace_file
from vaultmem.core.errors import FileAccessError, VaultmemError


class AgentConfigError(VaultmemError):
    """An agent's config file that setup cannot read as JSON or TOML: it is left alone."""

    code = "agent_config_invalid"


Format = Literal["json", "toml"]
Action = Literal["create", "update", "unchanged", "delete", "restore"]
BACKUP_INFIX = ".vaultmem-backup-"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One config file and how vaultmem's entries go into it and come out of it."""

    path: Path
    format: Format
    entries: tuple[str, ...]
    """What vaultmem adds there, for people: `mcpServers.vaultmem`, `hooks.SessionStart`."""
    add: Callable[[Any], None]
    strip: Callable[[Any], None]


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """What applying a change does to one file: its text before and after."""

    path: str
    action: Action
    entries: tuple[str, ...]
    before: str | None
    after: str | None
    backup: str | None = None

    @property
    def changed(self) -> bool:
        return self.action != "unchanged"

    def diff(self) -> str:
        """A unified diff of the file's text (empty when unchanged)."""
        if not self.changed:
            return ""
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            "/dev/null" if self.before is None else self.path,
            "/dev/null" if self.after is None else self.path,
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "action": self.action,
            "entries": list(self.entries),
            "backup": self.backup,
            "diff": self.diff(),
        }


# -- parsing and rendering -----------------------------------------------------------------


def parse(text: str, fmt: Format, path: Path) -> Any:
    """The file's document: a JSON object (dict) or a tomlkit document."""
    if fmt == "toml":
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            return tomlkit.parse(text)
        except TOMLKitError as error:
            raise AgentConfigError(
                f"{path} is not valid TOML ({error}); vaultmem setup leaves it alone.",
                hint="Fix the file (its backup copies sit beside it), then run setup again.",
            ) from error
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as error:
        raise AgentConfigError(
            f"{path} is not valid JSON ({error}); vaultmem setup leaves it alone.",
            hint="Fix the file (its backup copies sit beside it), then run setup again.",
        ) from error
    if not isinstance(doc, dict):
        raise AgentConfigError(
            f"{path} holds a JSON {type(doc).__name__}, not an object; setup leaves it alone.",
            hint="An agent's config file is a JSON object: fix it, then run setup again.",
        )
    return doc


def render(doc: Any, fmt: Format, like: str | None) -> str:
    """The document as text; JSON keeps the indentation of `like` (the file's old text)."""
    if fmt == "toml":
        import tomlkit

        return tomlkit.dumps(doc)
    return json.dumps(doc, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _indent_of(text: str | None) -> int | str:
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _same(before: str | None, doc: Any, fmt: Format, path: Path) -> bool:
    if before is None:
        return False
    if fmt == "toml":
        return render(doc, fmt, before) == before
    return bool(parse(before, fmt, path) == doc)


# -- planning ------------------------------------------------------------------------------


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise AgentConfigError(
            f"{path} is not UTF-8 text; vaultmem setup leaves it alone.",
            hint="Fix or move the file, then run setup again.",
        ) from error
    except OSError as error:
        raise FileAccessError(f"Cannot read {path}: {error.strerror}.") from error


def plan_add(change: FileChange) -> PlannedFile:
    """What adding vaultmem's entries does to the file."""
    before = read_text(change.path)
    doc = parse(before or "", change.format, change.path)
    change.add(doc)
    if _same(before, doc, change.format, change.path):
        return PlannedFile(str(change.path), "unchanged", change.entries, before, before)
    after = render(doc, change.format, before)
    action: Action = "create" if before is None else "update"
    return PlannedFile(str(change.path), action, change.entries, before, after)


def added_text(change: FileChange, text: str) -> str:
    """`text` with vaultmem's entries added, as `plan_add` would write it."""
    doc = parse(text, change.format, change.path)
    change.add(doc)
    if _same(text, doc, change.format, change.path):
        return text
    return render(doc, change.format, text)


def plan_remove(change: FileChange) -> PlannedFile:
    """What taking vaultmem's entries out does to the file (see the module docstring)."""
    path, before = change.path, read_text(change.path)
    if before is None:
        return PlannedFile(str(path), "unchanged", change.entries, None, None)
    for backup in backups(path):
        old = read_text(backup)
        if old is not None and old != before and added_text(change, old) == before:
            return PlannedFile(str(path), "restore", change.entries, before, old, str(backup))
    if added_text(change, "") == before:
        return PlannedFile(str(path), "delete", change.entries, before, None)
    doc = parse(before, change.format, path)
    change.strip(doc)
    if _same(before, doc, change.format, path):
        return PlannedFile(str(path), "unchanged", change.entries, before, before)
    return PlannedFile(
        str(path), "update", change.entries, before, render(doc, change.format, before)
    )


def backups(path: Path) -> list[Path]:
    """The file's backups, newest first (the stamps sort as text)."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    prefix = path.name + BACKUP_INFIX
    return [
        path.parent / n for n in sorted((n for n in names if n.startswith(prefix)), reverse=True)
    ]


# -- applying ------------------------------------------------------------------------------


def apply(planned: PlannedFile, *, now: datetime | None = None) -> PlannedFile:
    """Write the planned text (or delete the file), after copying the old bytes to a backup.
    Returns the plan with the backup's path; an unchanged file is not touched."""
    if not planned.changed:
        return planned
    path = Path(planned.path)
    target = path.resolve() if path.is_symlink() else path
    backup: str | None = None
    try:
        if planned.before is not None:
            stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")
            copy = target.parent / f"{target.name}{BACKUP_INFIX}{stamp}"
            replace_file(copy, target.read_bytes())
            backup = str(copy)
        if planned.after is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            replace_file(target, planned.after.encode("utf-8"))
    except OSError as error:
        raise FileAccessError(f"Cannot write {target}: {error.strerror}.") from error
    return PlannedFile(
        planned.path, planned.action, planned.entries, planned.before, planned.after, backup
    )

"""The parameters and bounds several operations share (`--vault`, a note, a scope, `--limit`).

The bounds keep one call's work small (an MCP `memory_store` with 100,000 tags once held the
server for 50 s) and are the ones docs/agents.md lists.
"""

from __future__ import annotations

from typing import Any

from vaultmem.adapters.contract import Param
from vaultmem.core.models import SCOPES

MAX_TEXT = 1_000_000  # characters of one observation (the byte limit is max_note_bytes)
MAX_QUERY = 2_000  # characters of a search or recall query
MAX_NAME = 4_096  # a note name or path (PATH_MAX)
MAX_ID = 200  # a key, scope id, tag, source or edge id
MAX_ITEMS = 32  # tags, scopes or SQL parameters in one call
SCOPE_SPEC = r"^(session|project|global|agent|federated)(:[^\s,]{1,200})?$"

VAULT = Param(
    "vault",
    "path",
    "Vault folder (default: $VAULTMEM_VAULT, else the nearest folder above the working "
    "directory holding .vaultmem/).",
    metavar="DIR",
    mcp=False,
)
NOTE = Param(
    "note",
    "str",
    "A note: path (.md optional), title, alias, file name or id.",
    required=True,
    positional=True,
    metavar="NOTE",
    min_length=1,
    max_length=MAX_NAME,
)
KEY_OR_ID = Param(
    "key",
    "str",
    "The topic's key (e.g. build-and-test-commands) or its id.",
    required=True,
    positional=True,
    metavar="KEY",
    min_length=1,
    max_length=MAX_ID,
)
SCOPE = Param("scope", "str", "The scope.", choices=SCOPES, metavar="SCOPE")
SCOPE_ID = Param(
    "scope_id",
    "str",
    "Which session, project or agent (a project's default: the repository it comes from, the "
    "working directory or the MCP client's root: its mapped folder in the vault, else its git "
    "remote, else a digest of its path).",
    metavar="ID",
    max_length=MAX_ID,
)
SCOPE_ID_FILTER = Param(
    "scope_id",
    "str",
    "Only this session, project or agent id (default: any id).",
    metavar="ID",
    max_length=MAX_ID,
)
SCOPES_PARAM = Param(
    "scopes",
    "strs",
    "Scopes as SCOPE or SCOPE:SCOPE_ID, e.g. project:atlas (default: every scope).",
    flags=("--scope", "--scopes"),
    metavar="SCOPE[:ID]",
    pattern=SCOPE_SPEC,
    max_length=MAX_ID + 12,
    max_items=16,
    comma_lists=True,
)
SOURCE = Param(
    "source", "str", "The agent or tool that stores it.", metavar="NAME", max_length=MAX_ID
)
KIND = Param(
    "kind",
    "str",
    "topics (agent memory), notes (people's) or all.",
    "all",
    choices=("all", "topics", "notes"),
    metavar="KIND",
)


def LIMIT(default: int, maximum: int) -> Param:
    return Param(
        "limit", "int", "At most this many results.", default, minimum=1, maximum=maximum,
        metavar="N",
    )  # fmt: skip


def text(name: str, help: str, **kw: Any) -> Param:
    """A string param."""
    return Param(name, "str", help, **kw)

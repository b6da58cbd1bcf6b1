"""The operations both adapters serve: the table the CLI commands and MCP tools come from.

Each `Operation` names a command (and, with `tool`, an MCP tool), its params with their bounds,
and `run`: one call to the `Vault` facade. How the table is read, checked and rendered is in
`contract.py` (its docstring says how to add an operation); the bounds below are the ones
docs/agents.md lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from vaultmem.adapters.contract import (
    Call,
    Hits,
    Initialised,
    Links,
    Operation,
    Param,
)
from vaultmem.core.errors import InvalidArgumentError, NotFoundError, VaultNotFoundError
from vaultmem.core.models import (
    EDGE_STATUSES,
    PROBLEM_CODES,
    SCOPES,
    SEARCH_MODE_WHEN_ON,
    SEARCH_MODES,
    TOPIC_TYPES,
    ContextTarget,
    ExportFormat,
    RecallMode,
    RecallSort,
)
from vaultmem.core.names import KEY_PATTERN
from vaultmem.vault import Vault

# The bounds every adapter enforces. They keep one call's work small (an MCP `memory_store`
# with 100,000 tags once held the server for 50 s) and are documented in docs/agents.md.
MAX_TEXT = 1_000_000  # characters of one observation (the byte limit is max_note_bytes)
MAX_QUERY = 2_000  # characters of a search or recall query
MAX_NAME = 4_096  # a note name or path (PATH_MAX)
MAX_ID = 200  # a key, scope id, tag, source or edge id
MAX_ITEMS = 32  # tags, scopes or SQL parameters in one call
SCOPE_SPEC = r"^(session|project|global|agent|federated)(:[^\s,]{1,200})?$"

# -- shared parameters ------------------------------------------------------------------------

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
QUERY_HELP = 'Words, "exact phrases", -excluded words, tag:x, path:folder/, type:y.'


def LIMIT(default: int, maximum: int) -> Param:
    return Param(
        "limit", "int", "At most this many results.", default, minimum=1, maximum=maximum,
        metavar="N",
    )  # fmt: skip


def _text(name: str, help: str, **kw: Any) -> Param:
    return Param(name, "str", help, **kw)


# -- the operations -----------------------------------------------------------------------------


def _init(call: Call) -> Initialised:
    return init_vault(call.args)


def init_vault(a: Mapping[str, Any]) -> Initialised:
    """`init` with what the README promises: the managed folder is mapped when no --map
    covers it, and a mapped folder that does not exist is a warning, not a silent no-op."""
    from vaultmem.core.config import FolderMapping

    root = Path(a["path"]).expanduser()
    if not root.is_dir():
        raise VaultNotFoundError(f"{root} is not a folder.", hint="Create it, or pass another.")
    mappings = [_mapping(text) for text in a["map"]]
    managed = str(a["managed_folder"]).strip("/")
    warnings = []
    covered = any(m.folder == "" or (managed + "/").startswith(m.folder + "/") for m in mappings)
    if mappings and not covered:
        mappings.append(FolderMapping(managed, "project", None))
        warnings.append(
            f"The managed folder {managed}/ is in no mapped folder: mapped it as project "
            f"(to choose: --map {managed}=SCOPE[:SCOPE_ID])."
        )
    for m in mappings:
        if m.folder and m.folder != managed and not (root / m.folder).is_dir():
            warnings.append(f"The mapped folder {m.folder}/ does not exist in {root.resolve()}.")
    existing = (root / ".vaultmem" / "config.toml").is_file()
    if a["git"] and existing and not a["force"] and not mappings:
        vault = Vault(root)  # an existing vault: only the git files are added
    else:
        vault = Vault.init(root, managed_folder=managed, mappings=mappings, force=a["force"])
    written = vault.write_generated(git=a["git"])
    return Initialised(
        vault.root,
        vault.config.config_path,
        vault.config.managed_folder,
        vault.config.mappings,
        tuple(warnings),
        tuple(written),
    )


def _mapping(text: str) -> Any:
    from vaultmem.core.config import FolderMapping

    folder, sep, rest = text.partition("=")
    scope, _, scope_id = rest.partition(":")
    if not sep or scope not in SCOPES or (not folder.strip("/") and folder != ""):
        raise InvalidArgumentError(
            f"--map {text!r} is not FOLDER=SCOPE[:SCOPE_ID].",
            hint=f"SCOPE is one of {', '.join(SCOPES)}; e.g. --map Projects=project:atlas",
        )
    return FolderMapping(folder.strip("/"), scope, scope_id or None)


RECONCILE_LOCK_S = 10.0
"""How long an MCP reconcile waits for another writer's lock (then `locked`); the CLI waits
30 s like every writer."""


def _reconcile(call: Call) -> Any:
    check_is_a_vault(call.v)
    return call.v.reconcile(
        rebuild=call.args.get("rebuild", False),
        progress=call.progress,
        lock_timeout_s=call.args.get("lock_timeout_s") or 30.0,
    )


def check_is_a_vault(vault: Vault) -> None:
    """Refuse to index a folder that is neither a vaultmem vault nor an Obsidian vault: a typo
    in --vault would otherwise leave a `.vaultmem/` folder in some random directory."""
    if not (vault.root / ".vaultmem").is_dir() and not (vault.root / ".obsidian").is_dir():
        raise VaultNotFoundError(
            f"{vault.root} is neither a vaultmem vault (no .vaultmem/) nor an Obsidian vault "
            "(no .obsidian/).",
            hint=f"Run `vaultmem init {vault.root}` first, or pass the right --vault.",
        )


def _search(call: Call) -> Hits:
    from vaultmem.search.query import SearchFilters

    a = call.args
    filters = SearchFilters(
        a["scope"], a["scope_id"], a["type"], a["tag"], a["folder"], a["since"], a["until"]
    )
    return Hits(call.v.search(a["query"], filters, limit=a["limit"], mode=a["mode"]))


def _recall(call: Call) -> Hits:
    a = call.args
    hits = call.v.recall(
        a["query"],
        scopes=a["scopes"] or (),
        mode=a["mode"],
        sort=a["sort"],
        kind=a["kind"],
        limit=a["limit"],
        include_related=a["include_related"],
    )
    return Hits(hits)


def _recent(call: Call) -> dict[str, Any]:
    a = call.args
    return {"notes": call.v.recent(since=a["since"], kind=a["kind"], limit=a["limit"])}


def _links(call: Call) -> Links:
    a = call.args
    if a["direction"] == "backlinks":
        ref, rows = call.v.backlinks(a["note"])
    elif a["direction"] == "neighbours":
        ref, rows = call.v.neighbours(a["note"], a["depth"])
    else:
        ref, rows = call.v.links(a["note"])
    return Links(ref, a["direction"], rows)


def _context(call: Call) -> Any:
    a = call.args
    scopes = a["scopes"] or DEFAULT_CONTEXT_SCOPES
    size = {"per_scope": a["per_scope"], "budget_chars": a["budget_chars"]}
    where = {"project_dir": a["project"], "session": a["session"]}
    if a.get("write") is None:
        return call.v.context(scopes=scopes, **where, **size)
    target: ContextTarget = a["write"]
    return call.v.write_context(target, scopes=scopes, **where, **size)


def _store(call: Call) -> Any:
    a = call.args
    return call.v.store(
        a["key"] or None,
        a["content"],
        scope=a["scope"],
        scope_id=a["scope_id"],
        type=a["type"],
        tags=a["tags"],
        source=a["source"],
    )


def _sql(call: Call) -> Any:
    a = call.args
    formats = [f for f in ("csv", "tsv", "jsonl") if a[f]]
    if len(formats) > 1:
        raise InvalidArgumentError(
            f"Choose one output format, not {' and '.join('--' + f for f in formats)}."
        )
    return call.v.sql(a["query"], limit=a["max_rows"], params=a["param"], timeout_s=a["timeout_s"])


def _import(call: Call) -> Any:
    a = call.args
    if not a["source"].exists():
        raise NotFoundError(
            f"No bundle at {a['source']}.", hint="Pass a bundle folder, .tar.gz or .zip."
        )
    return call.v.import_okf(
        a["source"],
        scope=a["scope"],
        scope_id=a["scope_id"],
        conflict=a["conflict"],
        dry_run=a["dry_run"],
    )


MODES: tuple[RecallMode, ...] = get_args(RecallMode)
SORTS: tuple[RecallSort, ...] = get_args(RecallSort)
TARGETS: tuple[ContextTarget, ...] = get_args(ContextTarget)
FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
DEFAULT_CONTEXT_SCOPES = ("session", "project", "global")

EDGE = _text(
    "edge",
    "Edge id (from vaultmem edges).",
    required=True,
    positional=True,
    metavar="EDGE",
    min_length=1,
    max_length=MAX_ID,
)
"""The edge `accept` and `reject` act on."""


OPERATIONS: tuple[Operation, ...] = (
    # -- index --------------------------------------------------------------------------------
    Operation(
        "init",
        "Create .vaultmem/config.toml and the managed folder in a vault.",
        "Index",
        (
            Param(
                "path",
                "path",
                "The vault folder.",
                Path("."),
                positional=True,
                metavar="DIR",
                mcp=False,
            ),
            Param(
                "managed_folder",
                "str",
                "The one folder vaultmem writes into.",
                "agent-memory",
                metavar="FOLDER",
                max_length=MAX_NAME,
                mcp=False,
            ),
            Param(
                "map",
                "strs",
                "FOLDER=SCOPE[:SCOPE_ID], repeatable (default: the whole "
                "vault as one project scope). The managed folder is mapped as project when "
                "no --map covers it.",
                (),
                metavar="FOLDER=SCOPE[:ID]",
                max_items=256,
                mcp=False,
            ),
            Param("force", "bool", "Overwrite an existing config.", False, mcp=False),
            Param(
                "git",
                "bool",
                "The vault is a git repository: topics merge with git's union driver "
                "(.gitattributes in the managed folder) and .vaultmem/ keeps only the config "
                "(its .gitignore). On an existing vault, adds just these.",
                False,
                mcp=False,
            ),
        ),
        _init,
        examples=(
            "vaultmem init ~/Notes --map Projects=project:work --map Knowledge=global",
            "vaultmem init .",
            "vaultmem init ~/Notes --git",
        ),
        needs_vault=False,
        read_only=False,
    ),
    Operation(
        "reconcile",
        "Bring the index up to date with the vault (only what changed is re-read).",
        "Index",
        (
            VAULT,
            # Not an option: a tool call waits a bounded time for another writer.
            Param(
                "lock_timeout_s",
                "float",
                "",
                None,
                cli=False,
                mcp=False,
                mcp_default=RECONCILE_LOCK_S,
            ),
        ),
        _reconcile,
        examples=("vaultmem reconcile --vault ~/Notes",),
        tool="memory_reconcile",
        tool_title="Bring the index up to date",
        tool_description="Re-read what changed in the vault since the last run (people's edits, "
        "another machine's stores, sync-conflict copies of topics) and update the index, under "
        "the index's write lock (waits at most 10 s for another writer). Run it when a result "
        "says it is stale or after `partial_write`; a second run is a no-op.",
        read_only=False,
        idempotent=True,
    ),
    Operation(
        "rebuild",
        "Build the index from nothing (the same rows as any sequence of reconciles).",
        "Index",
        (VAULT, Param("rebuild", "bool", "", True, cli=False, mcp=False)),
        _reconcile,
        read_only=False,
    ),
    Operation(
        "status",
        "Notes per scope and folder, the last run, files changed since, problems, index size.",
        "Index",
        (VAULT,),
        lambda call: call.v.status(),
        examples=("vaultmem status --json",),
        tool="memory_status",
        tool_title="Index status",
        tool_description="How many notes the index holds per scope and folder, link and "
        "problem counts, the last reconcile and how many files changed since (stale results "
        "are possible when that is not 0).",
    ),
    Operation(
        "problems",
        "Files the index could not read fully, with the reason.",
        "Index",
        (VAULT, _text("code", "Only this problem code.", metavar="CODE", choices=PROBLEM_CODES)),
        lambda call: call.v.problems(code=call.args["code"]),
        examples=("vaultmem problems --code frontmatter_invalid",),
    ),
    # -- query ---------------------------------------------------------------------------------
    Operation(
        "show",
        "One note's metadata as the index holds it.",
        "Query",
        (NOTE, VAULT),
        lambda call: call.v.show(call.args["note"]),
        examples=('vaultmem show "Decision log"', "vaultmem show Projects/Atlas/Overview.md"),
    ),
    Operation(
        "links",
        "A note's links and where each resolves (outgoing, backlinks or neighbours).",
        "Query",
        (
            NOTE,
            VAULT,
            Param(
                "direction",
                "str",
                "outgoing links, backlinks (notes linking to it) or "
                "neighbours (notes within --depth hops either way).",
                "outgoing",
                choices=("outgoing", "backlinks", "neighbours"),
                metavar="DIRECTION",
            ),
            Param(
                "depth", "int", "Hops, for neighbours only.", 1, minimum=1, maximum=5, metavar="N"
            ),
        ),
        _links,
        examples=("vaultmem links Architecture", "vaultmem links DuckDB --direction neighbours"),
        tool="memory_links",
        tool_title="Links of a note",
        tool_description="The link graph around one note (name it by path, title, alias, file "
        "name or id): `outgoing` links with where each resolves, `backlinks` (notes linking to "
        "it) or `neighbours` (notes within `depth` hops either way, nearest first).",
    ),
    Operation(
        "backlinks",
        "Notes that link to a note.",
        "Query",
        (NOTE, VAULT),
        lambda call: dict(
            zip(("note", "backlinks"), call.v.backlinks(call.args["note"]), strict=True)
        ),
        examples=("vaultmem backlinks DuckDB",),
    ),
    Operation(
        "unresolved",
        "Links that point at no file, most-wanted first.",
        "Query",
        (VAULT, LIMIT(100, 100_000)),
        lambda call: call.v.unresolved(limit=call.args["limit"]),
    ),
    Operation(
        "search",
        "BM25 search over every note's sections; results grouped by note, best first.",
        "Query",
        (
            _text(
                "query",
                QUERY_HELP,
                required=True,
                positional=True,
                metavar="QUERY",
                min_length=1,
                max_length=MAX_QUERY,
            ),
            VAULT,
            SCOPE,
            SCOPE_ID_FILTER,
            _text(
                "type", "Only notes of this frontmatter type.", metavar="TYPE", max_length=MAX_ID
            ),
            _text(
                "tag",
                "Only notes with this tag (a parent tag matches nested ones).",
                metavar="TAG",
                max_length=MAX_ID,
            ),
            _text(
                "folder",
                "Only notes under this vault folder, e.g. Projects.",
                metavar="FOLDER",
                max_length=MAX_NAME,
            ),
            _text(
                "since",
                "Updated at or after this ISO date or time.",
                iso_date=True,
                metavar="DATE",
                max_length=64,
            ),
            _text(
                "until",
                "Updated before this ISO date or time.",
                iso_date=True,
                metavar="DATE",
                max_length=64,
            ),
            LIMIT(10, 500),
            Param(
                "mode",
                "str",
                "words: BM25; vectors: by meaning (needs semantic recall on); hybrid: "
                "both rankings fused. Default: "
                + (
                    "hybrid when the index holds vectors, else words."
                    if SEARCH_MODE_WHEN_ON == "hybrid"
                    else "words."
                ),
                None,
                choices=SEARCH_MODES,
                metavar="MODE",
            ),
        ),
        _search,
        examples=(
            'vaultmem search "duckdb lock" --scope project --limit 5',
            'vaultmem search "deploy tag:ops -draft" --since 2026-11-01 --json',
            'vaultmem search "how do I get my money back" --mode hybrid',
        ),
        tool="memory_search",
        tool_title="Search the vault",
        tool_description="BM25 full-text search over every note of the vault (not only memory "
        "topics), grouped by note with the best section's heading, line and snippet. The query "
        'takes words, "exact phrases", -excluded words and tag:x, path:folder/, type:y '
        "operators. mode: words (BM25), vectors (by meaning) or hybrid (both fused); the "
        "last two need semantic recall on for the vault, else a semantic_unavailable error.",
    ),
    Operation(
        "sql",
        "Run one read-only SQL statement on the index (file access is disabled).",
        "Query",
        (
            _text(
                "query",
                "One read-only statement; tables: vaultmem sql 'SHOW TABLES'.",
                required=True,
                positional=True,
                metavar="SQL",
                min_length=1,
                max_length=100_000,
            ),
            VAULT,
            Param(
                "max_rows",
                "int",
                "Return at most this many rows; more sets truncated.",
                1000,
                minimum=1,
                maximum=1_000_000,
                flags=("--max-rows", "--limit"),
                metavar="N",
            ),
            Param(
                "param",
                "pairs",
                "A named parameter: -p name value is $name in the SQL; repeatable.",
                (),
                flags=("-p", "--param"),
                metavar="NAME VALUE",
                max_items=MAX_ITEMS,
                max_length=MAX_TEXT,
            ),
            Param(
                "timeout_s",
                "float",
                "Interrupt the statement after this many seconds (writers wait for it).",
                10.0,
                minimum=0.01,
                maximum=600,
                metavar="S",
            ),
            Param("csv", "bool", "Print CSV with a header row.", False),
            Param("tsv", "bool", "Print tab-separated values with a header row.", False),
            Param("jsonl", "bool", "Print one JSON object per row.", False),
        ),
        _sql,
        examples=(
            'vaultmem sql "SELECT scope, count(*) AS n FROM notes GROUP BY scope"',
            "vaultmem sql 'SELECT path FROM notes WHERE scope = $s' -p s global --csv",
        ),
    ),
    Operation(
        "parse",
        "Debugging view: one note's model, links resolved against the vault (JSON).",
        "Query",
        (
            Param(
                "file",
                "path",
                "A note file, relative to the vault or the working directory.",
                required=True,
                positional=True,
                metavar="FILE",
            ),
            VAULT,
        ),
        lambda call: call.v.parse(call.args["file"]).to_dict(),
        examples=("vaultmem parse Journal/2026-11-26.md",),
    ),
    # -- memory ----------------------------------------------------------------------------------
    Operation(
        "store",
        "Save an observation: appended to the topic's file (created when new), secrets redacted.",
        "Memory",
        (
            Param(
                "key",
                "str",
                "Topic key: 1-60 lower-case letters, digits, hyphens; '' (or "
                "omitted over MCP) derives one from the content.",
                positional=True,
                cli_required=True,
                metavar="KEY",
                max_length=60,
                pattern=f"^({KEY_PATTERN})?$",
            ),
            Param(
                "content",
                "str",
                "The observation, in Markdown: one self-contained fact ('-' reads stdin).",
                required=True,
                positional=True,
                cli_default="-",
                stdin_dash=True,
                metavar="TEXT",
                min_length=1,
                max_length=MAX_TEXT,
            ),
            VAULT,
            Param(
                "scope",
                "str",
                "Where the fact applies: session (kept 14 days), project "
                "(90 days), global (every project), agent, federated.",
                "project",
                choices=SCOPES,
                metavar="SCOPE",
            ),
            SCOPE_ID,
            Param(
                "type",
                "str",
                "user (a preference) and feedback (a correction) never "
                "expire; project and reference follow the scope's retention.",
                "project",
                choices=TOPIC_TYPES,
                metavar="TYPE",
            ),
            Param(
                "tags",
                "strs",
                "Tags without # (repeatable or comma-separated).",
                (),
                metavar="TAGS",
                pattern=r"^[A-Za-z0-9_/-]{1,64}$",
                max_length=64,
                max_items=MAX_ITEMS,
                comma_lists=True,
            ),
            Param(
                "source",
                "str",
                "The agent or tool that stores it.",
                None,
                mcp_default="mcp",
                metavar="NAME",
                max_length=MAX_ID,
            ),
        ),
        _store,
        examples=(
            'vaultmem store ci-cache "CI caches the uv download folder." --scope-id atlas '
            "--tags ci,build",
            'echo "A fact" | vaultmem store "" --scope session --scope-id s1 --json',
        ),
        tool="memory_store",
        tool_title="Store a memory",
        tool_description="Save one observation into a memory topic (a Markdown note in the "
        "vault's managed folder). The same key and scope append a new timestamped section to "
        "the existing topic; it never creates a second one. Store reusable conclusions "
        "(decisions, working commands, preferences, corrections), not transcripts. Secrets are "
        "redacted; a secret in a global or federated write is rejected (code "
        "`secret_detected`). On a `partial_write` error the note is saved but the index is "
        "stale: do not retry.",
        read_only=False,
        idempotent=True,  # the same text again appends nothing (duplicate_of)
    ),
    Operation(
        "correct",
        "Supersede a topic's latest observation; the old one stays visible, marked.",
        "Memory",
        (
            KEY_OR_ID,
            Param(
                "content",
                "str",
                "The corrected observation ('-' reads stdin).",
                required=True,
                positional=True,
                stdin_dash=True,
                metavar="TEXT",
                min_length=1,
                max_length=MAX_TEXT,
            ),
            VAULT,
            SCOPE,
            SCOPE_ID,
            SOURCE,
        ),
        lambda call: call.v.correct(
            call.args["key"],
            call.args["content"],
            scope=call.args["scope"],
            scope_id=call.args["scope_id"],
            source=call.args["source"],
        ),
        examples=('vaultmem correct ci-cache "Cache key is the uv.lock hash."',),
        tool="memory_correct",
        tool_title="Correct a memory",
        tool_description="Correct a topic whose latest observation is wrong: the old one stays "
        "in the file marked `Superseded by`, the correction is appended and becomes what recall "
        "and memory_get return as latest. Name the topic by key (with scope/scope_id when the "
        "key exists in several scopes) or id. On `partial_write` do not retry.",
        read_only=False,
    ),
    Operation(
        "get",
        "One topic, read from its file, with every observation (counts as a use).",
        "Memory",
        (
            KEY_OR_ID,
            VAULT,
            SCOPE,
            SCOPE_ID,
            Param("include_expired", "bool", "Also show a topic past its retention.", False),
        ),
        lambda call: call.v.get(
            call.args["key"],
            scope=call.args["scope"],
            scope_id=call.args["scope_id"],
            include_expired=call.args["include_expired"],
        ),
        examples=("vaultmem get ci-cache --scope project --scope-id atlas",),
        tool="memory_get",
        tool_title="Read a memory topic",
        tool_description="Read one memory topic in full: metadata and every observation, "
        "newest last, with corrections marked. Name it by key (with scope/scope_id when the "
        "key exists in several scopes) or by id.",
        read_only=False,  # it records a use (.vaultmem/usage.jsonl)
    ),
    Operation(
        "forget",
        "Move a topic to the managed folder's .trash/ and drop it from the index.",
        "Memory",
        (KEY_OR_ID, VAULT, SCOPE, SCOPE_ID),
        lambda call: call.v.forget(
            call.args["key"], scope=call.args["scope"], scope_id=call.args["scope_id"]
        ),
        examples=("vaultmem forget ci-cache --scope-id borealis",),
        tool="memory_forget",
        tool_title="Forget a memory topic",
        tool_description="Forget one memory topic: its file moves to the managed folder's "
        "`.trash/` (a person can restore it) and it leaves the index, so recall never returns "
        "it again.",
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Operation(
        "prune",
        "List topics past their retention (session 14 d, project 90 d); --apply trashes them.",
        "Memory",
        (VAULT, Param("apply", "bool", "Move them to .trash/.", False)),
        lambda call: call.v.prune(apply=call.args["apply"]),
        examples=("vaultmem prune", "vaultmem prune --apply --json"),
        read_only=False,
    ),
    Operation(
        "relate",
        "Record an edge A → B (kept in agent-memory/_decisions.md) and add it to A's See Also.",
        "Memory",
        (
            _text(
                "a",
                "Source: a topic key or id, or a note.",
                required=True,
                positional=True,
                metavar="A",
                min_length=1,
                max_length=MAX_NAME,
            ),
            _text(
                "b",
                "Target: a topic key or id, or a note.",
                required=True,
                positional=True,
                metavar="B",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
            _text(
                "type",
                "relates_to, supersedes, contradicts or another relation name.",
                default="relates_to",
                metavar="TYPE",
                pattern=r"^[a-z][a-z0-9_-]{0,39}$",
                max_length=40,
            ),
            Param(
                "propose",
                "bool",
                "Only propose it (status proposed) for a person to accept; an MCP call always "
                "proposes.",
                False,
                mcp=False,
                mcp_default=True,
            ),
        ),
        lambda call: call.v.relate(
            call.args["a"], call.args["b"], type=call.args["type"], propose=call.args["propose"]
        ),
        examples=(
            "vaultmem relate duckdb-index-decision Architecture",
            "vaultmem relate writer-rule duckdb-index-decision --type supersedes --propose",
        ),
        tool="memory_relate",
        tool_title="Propose a relationship",
        tool_description="Propose a typed edge from A to B (relates_to, supersedes, contradicts "
        "or another name) between topics or notes. It is recorded as `proposed` in the vault's "
        "decisions note; a person accepts or rejects it (`vaultmem accept EDGE`), and only then "
        "does it join A's See Also. A pair a person already decided keeps that decision.",
        read_only=False,
        idempotent=True,
    ),
    Operation(
        "edges",
        "Typed edges between notes: from links, people's decisions and suggestions.",
        "Memory",
        (
            VAULT,
            _text(
                "status", "Only edges with this status.", choices=EDGE_STATUSES, metavar="STATUS"
            ),
            Param("stale", "bool", "Only stale edges.", False),
        ),
        lambda call: call.v.edges(status=call.args["status"], stale=call.args["stale"]),
        examples=("vaultmem edges --status proposed",),
    ),
    Operation(
        "accept",
        "Accept a proposed edge: it becomes active and joins the topic's See Also.",
        "Memory",
        (
            EDGE,
            VAULT,
        ),
        lambda call: call.v.accept(call.args["edge"]),
        read_only=False,
    ),
    Operation(
        "reject",
        "Reject an edge: it is never proposed again.",
        "Memory",
        (
            EDGE,
            VAULT,
        ),
        lambda call: call.v.reject(call.args["edge"]),
        read_only=False,
    ),
    # -- agents -----------------------------------------------------------------------------------
    Operation(
        "recall",
        "Recall memories for a question: topics and notes of the given scopes, never expired.",
        "Agents",
        (
            _text(
                "query",
                "The question or keywords, e.g. how do I run the tests.",
                required=True,
                positional=True,
                metavar="QUERY",
                min_length=1,
                max_length=MAX_QUERY,
            ),
            VAULT,
            SCOPES_PARAM,
            Param(
                "mode",
                "str",
                "blended: BM25 blended with name matches and the agent's own topics; metadata: "
                "name matches only; words, vectors, hybrid: search's modes alone (vectors and "
                "hybrid need semantic recall on).",
                "blended",
                choices=MODES,
                metavar="MODE",
            ),
            KIND,
            Param(
                "sort",
                "str",
                "score blends relevance 90 %, recency 5 %, usage 5 %.",
                "score",
                choices=SORTS,
                metavar="SORT",
            ),
            LIMIT(10, 100),
            Param(
                "include_related",
                "bool",
                "Also return up to 5 notes linked from the hits "
                "(typed relations and See Also), one level deep.",
                False,
            ),
        ),
        _recall,
        examples=(
            'vaultmem recall "how do I run the tests" --scope project:atlas --scope global',
            'vaultmem recall "release process" --include-related --json',
        ),
        tool="memory_recall",
        tool_title="Recall memories",
        tool_description="Find the memories (agent topics and people's notes) that answer a "
        "question. Blended mode (the default) ranks BM25 full-text matches blended with name "
        "matches (key, title, alias, tag) and weighs the agent's own topics: one holding "
        "every word of the question ranks with the best note; words, vectors and hybrid are "
        "memory_search's modes alone. Expired and forgotten topics are never returned. "
        "Each hit has id, key, scope, scope_id, path, title, snippet, score, updated, `fresh` "
        "(false when the file changed since it was indexed) and `related` (pulled in by a link "
        "from another hit). Read a hit in full with memory_read. Not a use: the same question "
        "gives the same order; call memory_used for a note that helped.",
    ),
    Operation(
        "read",
        "A note's text from its file (frontmatter apart, secrets redacted); counts as a use.",
        "Agents",
        (
            _text(
                "note",
                "NOTE, NOTE#Heading, NOTE#Parent#Child or NOTE#^block: path, title, alias, "
                "file name, topic key or id.",
                required=True,
                positional=True,
                metavar="NOTE",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
            Param(
                "max_bytes",
                "int",
                "At most this many bytes of text; the rest comes with offset=next_offset.",
                64_000,
                minimum=1,
                maximum=1_000_000,
                metavar="N",
            ),
            Param(
                "offset",
                "int",
                "Start here: the next_offset of a capped read.",
                0,
                minimum=0,
                maximum=1_000_000_000,
                metavar="N",
            ),
        ),
        lambda call: call.v.read(
            call.args["note"], max_bytes=call.args["max_bytes"], offset=call.args["offset"]
        ),
        examples=(
            'vaultmem read "Runbook - Running tests#Quick run"',
            "vaultmem read build-commands --json",
        ),
        tool="memory_read",
        tool_title="Read a note",
        tool_description="Read any note of the vault (a person's note or a memory topic) as "
        "text, straight from its file: name it by path, title, alias, file name, topic key or "
        "id, optionally with `#Heading` (`#Parent#Child`) or `#^block` for that part alone. "
        "Frontmatter comes back apart; secrets are redacted. A long text comes in pieces of "
        "max_bytes: when `next_offset` is not null, call again with offset=next_offset. Counts "
        "as a use.",
        read_only=False,  # it records a use (.vaultmem/usage.jsonl)
    ),
    Operation(
        "recent",
        "Notes changed most recently (file modification time), newest first.",
        "Agents",
        (
            VAULT,
            _text(
                "since",
                "Changed at or after this ISO date or time (UTC).",
                iso_date=True,
                metavar="DATE",
                max_length=64,
            ),
            KIND,
            LIMIT(20, 500),
        ),
        _recent,
        examples=("vaultmem recent --since 2026-11-01 --kind topics",),
        tool="memory_recent",
        tool_title="Recently changed notes",
        tool_description="Notes by file modification time, newest first: what changed while "
        "you were away. Each has id, path, title, scope, scope_id, managed (a memory topic), "
        "updated, modified and size.",
    ),
    Operation(
        "used",
        "Record that a note helped: one use, a bounded tie-breaker in recall.",
        "Agents",
        (
            _text(
                "note",
                "Topic key, or a note's id, path, title or alias.",
                required=True,
                positional=True,
                metavar="NOTE",
                min_length=1,
                max_length=MAX_NAME,
            ),
            VAULT,
        ),
        lambda call: call.v.used(call.args["note"]),
        examples=("vaultmem used build-commands",),
        tool="memory_used",
        tool_title="Mark a note as used",
        tool_description="Record that a note or topic helped answer (one use). Uses decay over "
        "30 days and reorder only near-ties in memory_recall.",
        read_only=False,  # it records a use (.vaultmem/usage.jsonl)
    ),
    Operation(
        "context",
        "Print the <vaultmem-memory> context block, or write it into an agent's file.",
        "Agents",
        (
            VAULT,
            Param(
                "scopes",
                "strs",
                "Scopes in block order, SCOPE or SCOPE:SCOPE_ID.",
                DEFAULT_CONTEXT_SCOPES,
                flags=("--scopes", "--scope"),
                metavar="SCOPE[:ID]",
                pattern=SCOPE_SPEC,
                max_length=MAX_ID + 12,
                max_items=16,
                comma_lists=True,
            ),
            Param(
                "per_scope",
                "int",
                "At most this many entries per scope.",
                10,
                minimum=1,
                maximum=50,
                metavar="N",
            ),
            Param(
                "budget_chars",
                "int",
                "Size limit of the whole block, in characters; each "
                "scope gets an equal share that is not lent to another.",
                3000,
                minimum=200,
                maximum=100_000,
                metavar="N",
            ),
            Param(
                "write",
                "str",
                "Write the block between markers into .claude/CLAUDE.md "
                "(claude), AGENTS.md (codex) or .kiro/steering/vaultmem-memory.md (kiro).",
                choices=TARGETS,
                metavar="AGENT",
                mcp=False,
            ),
            Param(
                "project",
                "path",
                "The project folder: whose project memories the block holds and, with "
                "--write, where the file goes (default: the working directory).",
                metavar="DIR",
                mcp=False,
            ),
            Param(
                "session",
                "str",
                "The session whose memories come first (a bare `session` scope is left out "
                "without it).",
                metavar="ID",
                max_length=MAX_ID,
            ),
        ),
        _context,
        examples=(
            "vaultmem context --scopes session,project:atlas,global --budget-chars 1500",
            "vaultmem context --write claude --project ~/code/atlas",
        ),
        tool="memory_context",
        tool_title="Memory context block",
        tool_description="A compact `<vaultmem-memory>` block of the most useful memories, "
        "scope by scope (default: this project's, the client's root deciding which; then "
        "global; a session's first when `session` names it), for the start of a task. Each line "
        "is `- [scope] key: latest content`; `[related]` marks notes linked from a chosen "
        "topic. Secrets are redacted; the block never exceeds budget_chars.",
    ),
    # -- OKF --------------------------------------------------------------------------------------
    Operation(
        "export okf",
        "Write topics or notes as an OKF v0.2 bundle (a folder, .tar.gz or .zip).",
        "OKF",
        (
            Param(
                "out",
                "path",
                "Bundle folder or archive, outside the vault.",
                required=True,
                positional=True,
                metavar="OUT",
            ),
            VAULT,
            Param("scope", "str", "This scope's topics.", choices=SCOPES, metavar="SCOPE"),
            SCOPE_ID_FILTER,
            _text(
                "folder",
                "Export the notes of this mapped folder.",
                metavar="FOLDER",
                max_length=MAX_NAME,
            ),
            Param("include_private", "bool", "Allow session and agent scopes.", False),
            Param("redact", "bool", "Redact secrets instead of skipping the note.", False),
            Param("prune", "bool", "Delete files an earlier export wrote, this one not.", False),
            Param("format", "str", "The bundle's form.", "dir", choices=FORMATS, metavar="FORMAT"),
        ),
        lambda call: call.v.export_okf(
            call.args["out"],
            scope=call.args["scope"],
            scope_id=call.args["scope_id"],
            folder=call.args["folder"],
            include_private=call.args["include_private"],
            redact=call.args["redact"],
            prune=call.args["prune"],
            format=call.args["format"],
        ),
        examples=("vaultmem export okf /tmp/atlas-memory --scope project --scope-id atlas",),
        read_only=False,
    ),
    Operation(
        "import okf",
        "Import an OKF bundle's concepts as topics of one scope.",
        "OKF",
        (
            Param(
                "source",
                "path",
                "Bundle folder, .tar.gz or .zip.",
                required=True,
                positional=True,
                metavar="SOURCE",
            ),
            Param(
                "scope", "str", "The target scope.", required=True, choices=SCOPES, metavar="SCOPE"
            ),
            VAULT,
            Param("scope_id", "str", "The target scope id.", metavar="ID", max_length=MAX_ID),
            Param(
                "conflict",
                "str",
                "When the topic exists.",
                "skip",
                choices=("skip", "replace", "merge"),
                metavar="ACTION",
            ),
            Param("dry_run", "bool", "Report only; write nothing.", False),
        ),
        _import,
        examples=("vaultmem import okf /tmp/knowledge.tar.gz --scope global --dry-run",),
        read_only=False,
    ),
    Operation(
        "validate okf",
        "Check a bundle folder against OKF v0.2; exit 1 when it has errors.",
        "OKF",
        (
            Param(
                "bundle", "path", "A bundle folder.", required=True, positional=True, metavar="DIR"
            ),
        ),
        lambda call: Vault.validate_okf(call.args["bundle"]),
        examples=("vaultmem validate okf /tmp/atlas-memory",),
        needs_vault=False,
        exit_code=lambda report: 0 if report.ok else 1,
    ),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
BY_TOOL: dict[str, Operation] = {op.tool: op for op in OPERATIONS if op.tool}

"""Search commands: `search` (ranked notes) and `sql` (read-only SQL on the index). Each
operation holds its params, its run and its text renderer."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import (
    LIMIT,
    MAX_ID,
    MAX_ITEMS,
    MAX_NAME,
    MAX_QUERY,
    MAX_TEXT,
    SCOPE,
    SCOPE_ID_FILTER,
    VAULT,
    text,
)
from vaultmem.adapters.contract import Call, Hits, Operation, Param
from vaultmem.adapters.output import escape
from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.models import SEARCH_MODE_WHEN_ON, SEARCH_MODES

P = output.plural
QUERY_HELP = 'Words, "exact phrases", -excluded words, tag:x, path:folder/, type:y.'


def _search(call: Call) -> Hits:
    from vaultmem.search.query import SearchFilters

    a = call.args
    filters = SearchFilters(
        scope=a["scope"],
        scope_id=a["scope_id"],
        type=a["type"],
        tag=a["tag"],
        folder=a["folder"],
        since=a["since"],
        until=a["until"],
    )
    return Hits(call.v.search(a["query"], filters, limit=a["limit"], mode=a["mode"]))


def _search_text(result: Hits, args: dict[str, Any]) -> None:
    if not result.hits:
        return output.line("No notes match.")
    for i, hit in enumerate(result.hits, 1):
        # The section under the note's own H1 is named by the title already.
        where = f" › {hit.heading}" if hit.heading and hit.heading != hit.title else ""
        ranked_hit(
            i,
            hit.title,
            where,
            f"{hit.path}:{hit.line} · {hit.scope} · {hit.score:.3f}",
            hit.snippet,
        )


def ranked_hit(rank: int, name: str, after: str, where: str, snippet: str) -> None:
    """One search or recall hit: `N. name after  where`, then its snippet indented. Plain text
    when stdout is not a terminal; user text escaped before rich styles the rest."""
    if not output.stdout_is_terminal():
        output.line(f"{rank}. {name}{after}  {where}")
        output.line("   " + snippet)
        return
    output.console.print(f"{rank}. [bold]{escape(name)}[/]{escape(after)}  [dim]{escape(where)}[/]")
    output.console.print("   " + output.marked(snippet))


def _sql(call: Call) -> Any:
    a = call.args
    formats = [f for f in ("csv", "tsv", "jsonl") if a[f]]
    if len(formats) > 1:
        raise InvalidArgumentError(
            f"Choose one output format, not {' and '.join('--' + f for f in formats)}."
        )
    return call.v.sql(a["query"], limit=a["max_rows"], params=a["param"], timeout_s=a["timeout_s"])


def _sql_text(result: Any, args: dict[str, Any]) -> None:
    if args["jsonl"]:
        for row in result.rows:
            output.line(json.dumps(dict(zip(result.columns, row, strict=True)), ensure_ascii=False))
    elif args["csv"] or args["tsv"]:
        writer = csv.writer(
            sys.stdout, dialect="excel-tab" if args["tsv"] else "excel", lineterminator="\n"
        )
        writer.writerow(result.columns)
        writer.writerows(
            [json.dumps(v) if isinstance(v, list | dict) else v for v in row] for row in result.rows
        )
    else:
        output.table(None, result.columns, result.rows, empty="(no rows)")
    if result.truncated:
        output.err_console.print(
            f"Warning: only the first {P(len(result.rows), 'row')} are shown "
            "(--max-rows raises the limit).",
            markup=False,
        )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "search",
        "BM25 search over every note's sections; results grouped by note, best first.",
        "Query",
        (
            text(
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
            text("type", "Only notes of this frontmatter type.", metavar="TYPE", max_length=MAX_ID),
            text(
                "tag",
                "Only notes with this tag (a parent tag matches nested ones).",
                metavar="TAG",
                max_length=MAX_ID,
            ),
            text(
                "folder",
                "Only notes under this vault folder, e.g. Projects.",
                metavar="FOLDER",
                max_length=MAX_NAME,
            ),
            text(
                "since",
                "Updated at or after this ISO date or time.",
                iso_date=True,
                metavar="DATE",
                max_length=64,
            ),
            text(
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
                "words: BM25; vectors: by meaning; hybrid: both rankings fused. vectors and "
                "hybrid need semantic recall, which is off by default: pip install "
                "'vaultmem[semantic]', put `semantic = true` under [search] in "
                ".vaultmem/config.toml, then vaultmem reconcile. Default: "
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
            'vaultmem search "refund policy" --folder Knowledge',
        ),
        tool="memory_search",
        tool_title="Search the vault",
        tool_description="BM25 full-text search over every note of the vault (not only memory "
        "topics), grouped by note with the best section's heading, line and snippet. The query "
        'takes words, "exact phrases", -excluded words and tag:x, path:folder/, type:y '
        "operators. mode: words (BM25), vectors (by meaning) or hybrid (both fused); the "
        "last two need semantic recall on for the vault, else a semantic_unavailable error.",
        render=_search_text,
    ),
    Operation(
        "sql",
        "Run one read-only SQL statement on the index (file access is disabled).",
        "Query",
        (
            text(
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
                "Stop the statement after this many seconds (a writer stops it at once).",
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
        render=_sql_text,
    ),
)

"""Query commands about notes and the link graph: `show`, `links`, `backlinks`, `unresolved`,
`parse`. Each operation holds its params, its run and its text renderer."""

from __future__ import annotations

from typing import Any

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import LIMIT, NOTE, VAULT
from vaultmem.adapters.contract import Call, Links, Operation, Param

P = output.plural


def _links(call: Call) -> Links:
    a = call.args
    if a["direction"] == "backlinks":
        ref, rows = call.v.backlinks(a["note"])
    elif a["direction"] == "neighbours":
        ref, rows = call.v.neighbours(a["note"], a["depth"])
    else:
        ref, rows = call.v.links(a["note"])
    return Links(ref, a["direction"], rows)


def _show_text(detail: Any, args: dict[str, Any]) -> None:
    n = detail.note
    output.line(f"{n['title']}  ({n['path']})")
    output.line(
        f"id {n['id']} · scope {n['scope']}"
        + (f":{n['scope_id']}" if n["scope_id"] else "")
        + (" · managed" if n["managed"] else "")
        + f" · frontmatter {n['frontmatter_status']}"
    )
    if detail.aliases:
        output.line("aliases: " + ", ".join(detail.aliases))
    if detail.tags:
        output.line("tags: " + ", ".join("#" + t for t in detail.tags))
    for h in detail.headings:
        output.line(f"{'  ' * (h['level'] - 1)}{'#' * h['level']} {h['text']}  (line {h['line']})")
    output.line(f"{P(detail.links_out, 'outgoing link')}, {P(detail.backlinks, 'backlink')}")
    for p in detail.problems:
        output.line(f"problem: {p['code']} (line {p['line']}): {p['message']}")


def _link_rows(rows: list[dict[str, Any]], source: bool) -> list[tuple[Any, ...]]:
    return [
        (
            *((r["source_path"],) if source else ()),
            r["line"],
            r["kind"]
            + (f":{r['relation']}" if r["relation"] else "")
            + (" embed" if r["embed"] else ""),
            r["raw"],
            r["target_path"] or "(unresolved)",
            {None: "", True: "yes", False: "MISSING"}[r["subpath_found"]],
        )
        for r in rows
    ]


def _links_text(result: Links, args: dict[str, Any]) -> None:
    path = result.note.path
    if result.direction == "neighbours":
        output.table(
            f"Neighbours of {path}",
            ["depth", "path", "title"],
            [(r["depth"], r["path"], r["title"]) for r in result.links],
            empty=f"No note is linked to or from {path}.",
        )
    elif result.direction == "backlinks":
        _backlinks_text({"note": result.note, "backlinks": result.links}, args)
    else:
        output.table(
            f"Links from {path}",
            ["line", "kind", "link", "target", "subpath"],
            _link_rows(list(result.links), source=False),
            empty=f"{path} has no outgoing links.",
        )


def _backlinks_text(result: dict[str, Any], args: dict[str, Any]) -> None:
    path = result["note"].path
    output.table(
        f"Backlinks to {path}",
        ["source", "line", "kind", "link", "target", "subpath"],
        _link_rows(list(result["backlinks"]), source=True),
        empty=f"No note links to {path}.",
    )


def _unresolved_text(rows: list[dict[str, Any]], args: dict[str, Any]) -> None:
    output.table(
        "Unresolved links",
        ["target", "links", "from"],
        [
            (
                r["target"],
                r["links"],
                ", ".join(r["sources"][:3]) + (" …" if len(r["sources"]) > 3 else ""),
            )
            for r in rows
        ],
        empty="No unresolved links: every link points at a file.",
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "show",
        "One note's metadata as the index holds it.",
        "Query",
        (NOTE, VAULT),
        lambda call: call.v.show(call.args["note"]),
        examples=('vaultmem show "Decision log"', "vaultmem show Projects/Atlas/Overview.md"),
        render=_show_text,
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
        render=_links_text,
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
        render=_backlinks_text,
    ),
    Operation(
        "unresolved",
        "Links that point at no file, most-wanted first.",
        "Query",
        (VAULT, LIMIT(100, 100_000)),
        lambda call: call.v.unresolved(limit=call.args["limit"]),
        render=_unresolved_text,
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
)

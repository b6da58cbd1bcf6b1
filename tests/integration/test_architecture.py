"""Structural tests: imports point down the layers, only storage/ runs SQL, docs/schema.md
matches the DDL, every CLI command is documented in docs/cli.md."""

from __future__ import annotations

import ast
import functools
import graphlib
from pathlib import Path

import pytest

from vaultmem.adapters import cli, reference
from vaultmem.storage.schema import render_schema_doc

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "vaultmem"

LAYERS: tuple[tuple[str, str], ...] = (
    (
        "core",
        "values, errors, config and the rules every layer shares: names, atomic writes, "
        "secret shapes, the tokenizer, search documents",
    ),
    (
        "note",
        "the note model as Obsidian reads it (frontmatter, Markdown, links, canvas) and the "
        "topic format",
    ),
    (
        "files",
        "the only code that reads or writes vault files: the scan, the managed folder, the lock",
    ),
    ("storage", "the only code that runs SQL: the DDL, bulk loads, each capability's queries"),
    ("search", "ranking: queries, German compounds, BM25, proximity, the resident index, vectors"),
    ("query", "reads of the index: the note catalog, the graph, reading a note, status"),
    ("index", "builds the index: survey, plan, parallel parse, write, watch"),
    ("memory", "agent memory in the managed folder: store, recall, context, relations, usage"),
    ("okf", "Open Knowledge Format bundles in and out"),
    (
        "setup",
        "agents' own config files, outside the vault: the MCP server and hook entries, "
        "previewed, backed up, undone",
    ),
    ("vault", "the facade: the one API both adapters call, and the only publisher"),
    (
        "adapters",
        "the CLI, the MCP server and their shared operation table; click, rich and mcp live here",
    ),
)
"""(folder, job), lower layers first. The folders are the layers: a module's layer is its
top-level package (`vault.py` is the facade, `__main__` an adapter), and a module may import its
own package or a lower one, never a higher one. No per-module exceptions."""


def layer_of(module: str) -> int | None:
    """The layer index of `vaultmem.<module>` (a dotted name), or None when unclassified."""
    top = {"": "core", "__init__": "core", "__main__": "adapters"}.get(module, module)
    top = top.split(".")[0]
    for index, (name, _) in enumerate(LAYERS):
        if name == top:
            return index
    return None


def render_layer_diagram() -> str:
    """The layer diagram docs/architecture.md shows, generated from LAYERS (top layer first)."""
    lines = ["```"]
    for name, job in reversed(LAYERS):
        shown = "vault.py" if name == "vault" else f"{name}/"
        lines.append(f"{shown:<10} {job}")
    lines.append("```")
    return "\n".join(lines) + "\n"


PACKAGES = frozenset(
    p.parent.relative_to(PACKAGE).as_posix().replace("/", ".")
    for p in PACKAGE.rglob("__init__.py")
    if p.parent != PACKAGE
)


def package_modules() -> dict[str, Path]:
    """Every module of the package by dotted name relative to `vaultmem` (`db.store`)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    """A module's parsed source, read once per test session: four checks walk every module."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_modules(module: str, path: Path) -> set[str]:
    """The `vaultmem` modules `module` imports (absolute or relative), as dotted names."""
    tree = syntax_tree(path)
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vaultmem."):
                    found.add(alias.name.removeprefix("vaultmem."))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module == "vaultmem":
                target = ""
            elif node.module and node.module.startswith("vaultmem."):
                target = node.module.removeprefix("vaultmem.")
            else:
                continue
            prefix = f"{target}." if target else ""
            # `from vaultmem.index import catalog` imports the module `index.catalog`.
            submodules = {f"{prefix}{a.name}" for a in node.names} & MODULES
            found.update(submodules or ({target} if target else set()))
    return found


MODULES = frozenset(package_modules())
FRONT_DOOR = {("__init__", "vault")}
"""The package root hands out `vaultmem.Vault` lazily (a module `__getattr__`): the one import
that may point up, because the root is the library's front door, not one of its layers."""


def test_every_module_is_classified() -> None:
    unknown = sorted(m for m in package_modules() if m and layer_of(m) is None)
    assert not unknown, (
        f"Modules {unknown} are in no layer: put each in a layer's package, or add its package "
        "to LAYERS in tests/integration/test_architecture.py and run `make docs`."
    )


def test_imports_point_down_the_layers() -> None:
    violations = []
    for module, path in package_modules().items():
        own = layer_of(module)
        if own is None:
            continue  # reported by test_every_module_is_classified
        for target in sorted(imported_modules(module, path)):
            if (module, target) in FRONT_DOOR:
                continue
            other = layer_of(target)
            if other is not None and other > own:
                violations.append(
                    f"vaultmem.{module} ({LAYERS[own][0]}) imports vaultmem.{target} "
                    f"({LAYERS[other][0]})"
                )
    assert not violations, "Imports pointing up the layers:\n" + "\n".join(violations)


def test_no_module_imports_form_a_cycle() -> None:
    """Inside a layer imports may run sideways, but never in a circle (function-level imports
    included): a cycle would make two modules one idea split across two files."""
    graph = {m: imported_modules(m, p) - {m} for m, p in package_modules().items()}
    graph = {m: {t for t in ts if (m, t) not in FRONT_DOOR} for m, ts in graph.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as cycle:
        pytest.fail(f"Modules import each other in a circle: {' -> '.join(cycle.args[1])}")


def test_the_layer_check_sees_an_upward_import() -> None:
    assert layer_of("storage.store") < layer_of("search.query")  # type: ignore[operator]
    assert layer_of("nosuch.module") is None
    assert [name for name, _ in LAYERS].index("vault") == layer_of("vault")


def test_only_adapters_import_ui_libraries() -> None:
    ui = {"typer", "rich", "click", "mcp"}
    offenders = []
    for module, path in package_modules().items():
        if layer_of(module) == len(LAYERS) - 1:
            continue
        for node in ast.walk(syntax_tree(path)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"vaultmem.{module}: {n}" for n in names if n.split(".")[0] in ui]
    assert not offenders, offenders


DUCKDB_CALLS = frozenset(
    {
        "execute",
        "executemany",
        "sql",
        "query",
        "fetchone",
        "fetchmany",
        "fetchall",
        "fetchdf",
        "fetch_df",
        "fetchnumpy",
        "fetch_arrow_table",
        "fetch_record_batch",
        "fetch_dicts",  # storage.store's helper: the query it runs is the caller's SQL
    }
)
"""Names whose call runs SQL or reads a result: DuckDB's connection and cursor methods."""

FACADE_NAMESAKES = {("adapters", "sql")}
"""`Vault.sql` shares DuckDB's method name: the adapters call it on a `Vault`, which runs the
user's query through storage. (package, method) pairs exempt from DUCKDB_CALLS."""


def duckdb_uses(module: str, path: Path) -> list[str]:
    """Where `module` imports duckdb or calls one of DUCKDB_CALLS, as `line N: what`."""
    package = module.split(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            names = []
        # `_duckdb` is the engine module inside the duckdb package (storage/store.py)
        found += [
            (node.lineno, f"import {n}") for n in names if n.split(".")[0] in ("duckdb", "_duckdb")
        ]
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            if name in DUCKDB_CALLS and (package, name) not in FACADE_NAMESAKES:
                found.append((node.lineno, f"{name}(...)"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_only_storage_runs_sql() -> None:
    """SQL lives in storage/ (a `*_queries` module per capability); operations call it."""
    offenders = {
        module: uses
        for module, path in package_modules().items()
        if layer_of(module) is not None and not module.startswith("storage")
        if (uses := duckdb_uses(module, path))
    }
    assert not offenders, (
        "Only vaultmem.storage.* may import duckdb or run SQL; move these into a storage "
        f"module (e.g. storage/<topic>_queries.py) and call it: {offenders}"
    )


def test_the_sql_check_sees_duckdb_use(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "import duckdb\n"
        "from duckdb import connect\n"
        "rows = con.execute('SELECT 1').fetchall()\n"
        "fetch_dicts(con, 'SELECT 2')\n"
        "vault.sql('SELECT 3')\n"
        "text.split()\n",
        encoding="utf-8",
    )
    assert duckdb_uses("index.sample", source) == [
        "line 1: import duckdb",
        "line 2: import duckdb",
        "line 3: execute(...)",
        "line 3: fetchall(...)",
        "line 4: fetch_dicts(...)",
        "line 5: sql(...)",
    ]
    assert duckdb_uses("adapters.sample", source)[-1] == "line 4: fetch_dicts(...)"


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("core.models", 0),
        ("core", 0),
        ("note.parse", 1),
        ("files.scan", 2),
        ("storage.store", 3),
        ("search.query", 4),
        ("query.catalog", 5),
        ("index.reconcile", 6),
        ("memory.topic_store", 7),
        ("okf.export", 8),
        ("setup.agents", 9),
        ("vault", 10),
        ("adapters.cli", 11),
        ("__main__", 11),
    ],
)
def test_layer_table(module: str, layer: int) -> None:
    assert layer_of(module) == layer


def test_schema_doc_is_generated_from_the_ddl() -> None:
    doc = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    assert doc == render_schema_doc(), "docs/schema.md is stale: run `make docs`."


def test_layer_diagram_in_the_docs_is_generated_from_the_table() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc.split(DIAGRAM_START, 1)[1].split(DIAGRAM_END, 1)[0].lstrip("\n")
    assert block == render_layer_diagram(), (
        "docs/architecture.md's layer diagram is stale: run `make docs`."
    )


def command_names() -> list[str]:
    """Every command of the CLI, group commands as `export okf`."""
    return sorted(op.name for op in cli.OPERATIONS)


def documented_commands(doc: str) -> list[str]:
    """The commands docs/cli.md has a `## vaultmem <name>` section for."""
    return [line.removeprefix("## vaultmem ").strip() for line in doc.splitlines()
            if line.startswith("## vaultmem ")]  # fmt: skip


def test_every_cli_command_is_documented() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = sorted(set(command_names()) - set(documented_commands(doc)))
    assert not missing, f"docs/cli.md has no `## vaultmem <name>` section for {missing}."
    assert len(command_names()) >= 12


def test_the_cli_doc_is_generated_from_the_operation_table() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert doc == reference.render(doc), "docs/cli.md is stale: run `make docs`."


def test_the_cli_doc_checks_see_a_deleted_group_command() -> None:
    """Cutting `export okf`'s section, or only its generated block, fails both checks."""
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    start = doc.index("## vaultmem export okf\n")
    end = doc.index("## vaultmem ", start + 1)
    cut = doc[:start] + doc[end:]
    assert "export okf" not in documented_commands(cut)
    assert reference.render(cut) != cut
    block = doc.index(reference.GENERATED_START, start)
    after = doc.index(reference.GENERATED_END, block) + len(reference.GENERATED_END)
    assert reference.render(doc[:block] + doc[after:]) != doc[:block] + doc[after:]


DIAGRAM_START = (
    "<!-- layers:start (generated by `make docs` from tests/integration/test_architecture.py) -->"
)
DIAGRAM_END = "<!-- layers:end -->"


if __name__ == "__main__":  # `make docs`: rewrite the diagram between the markers
    doc_path = ROOT / "docs" / "architecture.md"
    doc = doc_path.read_text(encoding="utf-8")
    head, rest = doc.split(DIAGRAM_START, 1)
    tail = rest.split(DIAGRAM_END, 1)[1]
    doc_path.write_text(
        f"{head}{DIAGRAM_START}\n{render_layer_diagram()}{DIAGRAM_END}{tail}", encoding="utf-8"
    )

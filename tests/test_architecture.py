"""Structural tests: imports point down the layers, only storage/ runs SQL, docs/schema.md
matches the DDL, every CLI command is documented in docs/cli.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vaultmem.adapters.cli import app
from vaultmem.storage.schema import render_schema_doc

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vaultmem"

LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "base",
        "shared values, errors and configuration; every package may use them",
        (
            "__init__",
            "models",
            "errors",
            "config",
            "digest",
            "files.atomic",
            "files.names",
            "*.__init__",
        ),
    ),
    (
        "pure core",
        "no I/O: the note model, the tokenizer, change planning, topic format, secret shapes",
        (
            "note.*",
            "search.tokenizer",
            "search.documents",
            "index.plan",
            "memory.secrets",
            "memory.topics",
        ),
    ),
    (
        "edges",
        "the only code that touches files or DuckDB",
        ("files.*", "storage.*", "index.journal", "index.parallel"),
    ),
    (
        "operations",
        "one capability each: reconcile, search, memory, OKF",
        ("index.*", "search.*", "memory.*", "okf.*"),
    ),
    ("facade", "the one API both adapters call", ("vault",)),
    ("adapters", "typer, rich and mcp live only here", ("adapters.*", "__main__")),
)
"""(layer, job, module patterns), lower layers first. A pattern ending in `.*` covers a
package's modules; the first layer that names a module wins, so a package can lend a module to a
lower layer (`index.plan` is pure core, the rest of `index` is operations)."""


def layer_of(module: str) -> int | None:
    """The layer index of `vaultmem.<module>` (a dotted name), or None when unclassified."""
    for index, (_, _, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern == "*.__init__":
                if module in PACKAGES:
                    return index
            elif pattern.endswith(".*"):
                if module.startswith(pattern[:-1]):
                    return index
            elif module == pattern:
                return index
    return None


def render_layer_diagram() -> str:
    """The layer diagram docs/architecture.md shows, generated from LAYERS (top layer first)."""
    lines = ["```"]
    for name, job, patterns in reversed(LAYERS):
        shown = [p for p in patterns if p != "*.__init__"]
        lines.append(f"{name:<11} {' · '.join(shown)}")
        lines.append(f"{'':<11} ({job})")
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


def imported_modules(module: str, path: Path) -> set[str]:
    """The `vaultmem` modules `module` imports (absolute or relative), as dotted names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
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
        f"Modules {unknown} are in no layer: add each to LAYERS in tests/test_architecture.py "
        "(and to the layer diagram in docs/architecture.md)."
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


def test_only_adapters_import_ui_libraries() -> None:
    ui = {"typer", "rich", "click", "mcp"}
    offenders = []
    for module, path in package_modules().items():
        if layer_of(module) == len(LAYERS) - 1:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
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
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            names = []
        found += [(node.lineno, f"import {n}") for n in names if n.split(".")[0] == "duckdb"]
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
        ("models", 0),
        ("note", 0),
        ("note.parse", 1),
        ("index.plan", 1),
        ("storage.store", 2),
        ("index.reconcile", 3),
        ("okf.export", 3),
        ("memory.topic_store", 3),
        ("vault", 4),
        ("adapters.cli", 5),
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
    names = []
    for command in app.registered_commands:
        callback = command.callback
        assert callback is not None
        names.append(command.name or callback.__name__.strip("_").replace("_", "-"))
    return sorted(names)


def test_every_cli_command_is_documented() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    headings = {line.strip() for line in doc.splitlines() if line.startswith("## ")}
    missing = [n for n in command_names() if f"## vaultmem {n}" not in headings]
    assert not missing, f"docs/cli.md has no `## vaultmem <name>` section for {missing}."
    assert len(command_names()) >= 12


DIAGRAM_START = "<!-- layers:start (generated by `make docs` from tests/test_architecture.py) -->"
DIAGRAM_END = "<!-- layers:end -->"


if __name__ == "__main__":  # `make docs`: rewrite the diagram between the markers
    doc_path = ROOT / "docs" / "architecture.md"
    doc = doc_path.read_text(encoding="utf-8")
    head, rest = doc.split(DIAGRAM_START, 1)
    tail = rest.split(DIAGRAM_END, 1)[1]
    doc_path.write_text(
        f"{head}{DIAGRAM_START}\n{render_layer_diagram()}{DIAGRAM_END}{tail}", encoding="utf-8"
    )

"""Structural tests: imports point down the layers, docs/schema.md matches the DDL, every CLI
command is documented in docs/cli.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vaultmem.cli import app
from vaultmem.db.schema import render_schema_doc

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vaultmem"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("__init__", "models", "errors", "atomic", "config")),
    (
        "pure core",
        (
            "parse",
            "markdown",
            "properties",
            "links",
            "text",
            "plan",
            "documents",
            "secrets",
            "topics",
        ),
    ),
    ("edges", ("scan", "db", "lock", "journal", "parallel", "managed")),
    (
        "operations",
        (
            "reconcile",
            "search",
            "catalog",
            "graph",
            "watch",
            "okf*",
            "memory*",
            "identity",
            "usage",
            "edges",
            "relations",
            "context",
            "recall",
        ),
    ),
    ("facade", ("vault",)),
    ("adapters", ("cli", "mcp*", "output")),
)
"""Lower layers first. A name ending in `*` covers every module starting with it."""


def layer_of(module: str) -> int | None:
    """The layer index of `vaultmem.<module>` (a dotted name), or None when unclassified."""
    head = module.split(".")[0]
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            if head == name or (name.endswith("*") and head.startswith(name[:-1])):
                return index
    return None


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
            if target:
                found.add(target)
            else:  # `from vaultmem import catalog, graph`: each name is a module
                found.update(a.name for a in node.names if a.name != "__version__")
    return found


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


@pytest.mark.parametrize(
    ("module", "layer"),
    [("models", 0), ("db.store", 2), ("okf_export", 3), ("memory_store", 3), ("cli", 5)],
)
def test_layer_table(module: str, layer: int) -> None:
    assert layer_of(module) == layer


def test_schema_doc_is_generated_from_the_ddl() -> None:
    doc = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    assert doc == render_schema_doc(), (
        "docs/schema.md is stale: run `.venv/bin/python -m vaultmem.db.schema > docs/schema.md`."
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

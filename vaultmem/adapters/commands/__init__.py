"""The registry: every operation of the CLI and the MCP server, gathered from one module per
group of commands.

A command module (`index`, `notes`, `search`, `memory`, `agents`, `okf`, `program`) holds, for
each of its operations, the params (shared ones come from `params.py`), the run (one call to
`Vault`) and the text renderer, in a tuple `OPERATIONS` of `contract.Operation`; a module may
also name CLI command groups in `GROUPS` (`{"export": "help"}`: `export okf` is the `okf`
command of `export`). `MODULES` below lists the modules in help order; `OPERATIONS`,
`BY_NAME`, `BY_TOOL` and `GROUPS` are what both adapters read. Neither adapter names an
operation: `cli.py` builds a click command from each (and declares `mcp`, the one command the
registry cannot hold: the server imports the registry), `mcp_server.py` a tool from each with
a `tool` name.

How to add an operation (e.g. `vaultmem touch NOTE`, MCP tool `memory_touch`):
1. vault.py: the `Vault` method, the one hop to the capability (skip when it exists).
2. The command module of its group (e.g. commands/notes.py): append to its `OPERATIONS`

       Operation(
           "touch", "One line of help.", "Query",          # name, summary, help panel
           (NOTE, VAULT, Param("force", "bool", "Help.", False)),
           lambda call: call.v.touch(call.args["note"], force=call.args["force"]),
           examples=("vaultmem touch Architecture",),
           tool="memory_touch", tool_title="...", tool_description="...",  # MCP too
           read_only=False,
           render=_touch_text,                             # its text output, same module
       )

   `run(call)` gets the bound arguments in `call.args` and the opened vault in `call.v`; it
   returns a named tuple, a frozen dataclass or a dict (give it a `to_dict()` when its JSON
   differs from its fields); the same value is the `--json` envelope's `data` and the MCP
   tool's result. `render(result, args)` prints it for people (`output.line`/`output.table`);
   without one the CLI prints the JSON. Mark a param `mcp=False` or `cli=False` when one
   adapter must not offer it. A new group of commands is a new module, added to `MODULES`.
That is all the code. The tests then ask for the rest: tests/adapters/test_parity.py wants a
sample call in its `SAMPLES` for a new tool, and the docs test wants the command's section in
docs/cli.md.
"""

from __future__ import annotations

from importlib import import_module

from vaultmem.adapters.contract import Operation

MODULES = ("index", "notes", "search", "memory", "agents", "okf", "program")
"""The command modules, in the order of the CLI's help."""

_modules = [import_module(f"{__name__}.{name}") for name in MODULES]
OPERATIONS: tuple[Operation, ...] = tuple(op for m in _modules for op in m.OPERATIONS)
BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
BY_TOOL: dict[str, Operation] = {op.tool: op for op in OPERATIONS if op.tool}
GROUPS: dict[str, str] = {k: v for m in _modules for k, v in getattr(m, "GROUPS", {}).items()}
"""CLI command groups and their help (`export` holds `export okf`)."""

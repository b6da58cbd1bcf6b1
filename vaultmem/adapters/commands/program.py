"""Commands about the program itself: `version`."""

from __future__ import annotations

from vaultmem.adapters import output
from vaultmem.adapters.contract import Operation
from vaultmem.core.version import __version__

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "version",
        "Print the version (as --version does).",
        "",
        (),
        lambda call: {"version": __version__},
        needs_vault=False,
        json_help=None,
        render=lambda result, args: output.line(f"vaultmem {result['version']}"),
    ),
)

"""OKF commands, each a group command: `export okf`, `import okf`, `validate okf`. Each
operation holds its params, its run and its text renderer."""

from __future__ import annotations

from typing import Any, get_args

from vaultmem.adapters import output
from vaultmem.adapters.commands.params import MAX_ID, MAX_NAME, SCOPE_ID_FILTER, VAULT, text
from vaultmem.adapters.contract import Call, Operation, Param
from vaultmem.core.errors import NotFoundError
from vaultmem.core.models import SCOPES, ExportFormat
from vaultmem.vault import Vault

P = output.plural
FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
GROUPS = {
    "export": "Export memory from the vault (OKF bundles).",
    "import": "Import memory into the vault (OKF bundles).",
    "validate": "Validate files vaultmem reads or writes.",
}
"""The CLI's command groups (`export okf` is the `okf` command of `export`): their help."""


def _export_text(report: Any, args: dict[str, Any]) -> None:
    output.line(
        f"{P(report.concepts, 'concept')} → {report.out}: {P(len(report.written), 'file')} "
        f"written, {report.unchanged} unchanged, {len(report.pruned)} pruned; "
        f"{P(report.links_rewritten, 'link')} rewritten, {report.links_outside} outside the "
        "bundle made plain text"
    )
    for item in report.skipped:
        output.line(f"skipped {item['path']}: holds a secret ({item['patterns']})")


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


def _import_text(report: Any, args: dict[str, Any]) -> None:
    output.line(
        ("Dry run: " if report.dry_run else "")
        + f"{report.imported} imported, {report.replaced} replaced, {report.merged} merged, "
        f"{report.skipped} skipped, {len(report.rejected)} rejected; "
        f"{P(report.links_rewritten, 'link')} rewritten, "
        f"{P(report.timestamps_clamped, 'timestamp')} clamped"
    )
    for item in report.rejected:
        output.line(f"rejected {item['path']}: {item['reason']}")


def _validate_text(report: Any, args: dict[str, Any]) -> None:
    for f in report.findings:
        output.line(f"{f.level}: {f.path}: {f.message}")
    output.line(
        f"{P(report.concepts, 'concept')}, {P(len(report.errors), 'error')}, "
        f"{P(len(report.warnings), 'warning')}"
    )


OPERATIONS: tuple[Operation, ...] = (
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
            text(
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
        render=_export_text,
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
        render=_import_text,
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
        render=_validate_text,
    ),
)

"""Issue 27, item 15: an export whose record cannot be written writes no bundle (and its retry
is not refused), and `import okf --scope project` without `--scope-id` goes to the project
`store` would write to from the same folder. Real CLI subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import cli_env, state_of


def _cli(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", *args, "--json"],
        capture_output=True, text=True, cwd=cwd, env=cli_env(), check=False,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


def _built(example_vault: Path) -> str:
    code, out = _cli("reconcile", "--vault", str(example_vault))
    assert code == 0, out
    return str(example_vault)


def test_an_unwritable_export_record_writes_no_bundle(example_vault: Path, tmp_path: Path) -> None:
    vault = _built(example_vault)
    # The record's path is taken by a folder: as good as an unwritable state folder, and it
    # binds for root too.
    record = state_of(example_vault) / "exports.json"
    (record / "in-the-way").mkdir(parents=True)
    for out, fmt in ((tmp_path / "bundle", "dir"), (tmp_path / "bundle.zip", "zip")):
        code, failed = _cli("export", "okf", str(out), "--folder", "Knowledge", "--format", fmt,
                            "--vault", vault)  # fmt: skip
        assert code == 1 and failed["error"]["code"] == "io_error", failed
        assert "export record" in failed["error"]["message"]
        assert not out.exists(), "the bundle was written although its record could not be"
    shutil.rmtree(record)
    for out, fmt in ((tmp_path / "bundle", "dir"), (tmp_path / "bundle.zip", "zip")):
        code, done = _cli("export", "okf", str(out), "--folder", "Knowledge", "--format", fmt,
                          "--vault", vault)  # fmt: skip
        assert code == 0, done
        assert out.exists()


def test_a_project_import_without_a_scope_id_goes_where_store_writes(
    example_vault: Path, tmp_path: Path
) -> None:
    vault = _built(example_vault)
    bundle = tmp_path / "bundle"
    code, out = _cli("export", "okf", str(bundle), "--folder", "Knowledge", "--vault", vault)
    assert code == 0, out
    project = tmp_path / "some-project"
    project.mkdir()
    code, imported = _cli("import", "okf", str(bundle), "--scope", "project", "--vault", vault,
                          cwd=project)  # fmt: skip
    assert code == 0, imported
    code, stored = _cli("store", "item-15-probe", "where does this go", "--vault", vault,
                        cwd=project)  # fmt: skip
    assert code == 0, stored
    folder = Path(stored["data"]["path"]).parent
    assert folder.parts[-2] == "project"
    written = [p.relative_to(example_vault).parent for p in (example_vault / folder).glob("*.md")]
    assert len(written) > 1  # the imported topics sit beside the stored one

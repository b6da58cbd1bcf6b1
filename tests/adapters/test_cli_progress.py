"""`--json` progress: JSON Lines on stderr, one each time a phase of a long run passes another
tenth (`{"progress": {"phase", "done", "total"}}`), the result alone on stdout. A real CLI
subprocess on a vault of a few chunks, the threshold lowered with VAULTMEM_PROGRESS_MIN_NOTES."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.helpers import cli_env, index_of
from vaultmem.vault import Vault

NOTES = 300
"""~4 KB each: ~1.2 MB, three of the parse's chunks (`parallel.CHUNK_BYTES`)."""


def reconcile_json(vault: Path, minimum: int | None) -> tuple[dict[str, Any], list[Any]]:
    env = cli_env()
    if minimum is not None:
        env["VAULTMEM_PROGRESS_MIN_NOTES"] = str(minimum)
    done = subprocess.run(
        [sys.executable, "-m", "vaultmem", "reconcile", "--json", "--vault", str(vault)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    return json.loads(done.stdout), lines


def assert_tenths(lines: list[Any], phase: str, total: int) -> None:
    assert len(lines) >= 2, lines
    assert all(set(line) == {"progress"} for line in lines)
    shown = [line["progress"] for line in lines]
    assert all(set(p) == {"phase", "done", "total"} for p in shown)
    assert {p["phase"] for p in shown} == {phase}
    assert {p["total"] for p in shown} == {total}
    done = [p["done"] for p in shown]
    assert done == sorted(set(done)) and done[-1] == total
    tenths = [d * 10 // total for d in done]
    assert tenths == sorted(set(tenths)) and len(tenths) <= 10  # at most one line a tenth


@pytest.mark.slow
def test_json_progress_lines_for_a_build_and_an_upgrade(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    Vault.init(root)
    body = "".join(f"Line {j} of the note, with a few words to index.\n" for j in range(80))
    for i in range(NOTES):
        (root / f"Note {i:03d}.md").write_text(f"# Note {i}\n\n{body}", encoding="utf-8")

    result, lines = reconcile_json(root, minimum=1)
    assert result["ok"] and result["data"]["added"] == NOTES
    assert_tenths(lines, "parse", NOTES)

    # The search tables of an older tokenizer: the upgrade reports its own phase.
    con = duckdb.connect(str(index_of(root)))
    con.execute("UPDATE meta SET value = 'old' WHERE key = 'tokenizer_version'")
    con.close()
    result, lines = reconcile_json(root, minimum=1)
    assert result["ok"] and result["data"]["added"] == 0
    assert_tenths(lines, "search", NOTES)


def test_no_progress_lines_below_the_threshold(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    Vault.init(root)
    for i in range(3):
        (root / f"Note {i}.md").write_text(f"# Note {i}\n", encoding="utf-8")
    result, lines = reconcile_json(root, minimum=None)  # 500 notes by default
    assert result["ok"] and lines == []

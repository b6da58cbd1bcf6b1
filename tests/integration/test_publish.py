"""One publish path: every write that changed the vault reports a failed index update as
`partial_write` (phases done, do not retry), whatever failed underneath.

The index update is the one reconcile entry `Vault` calls; it is made to raise an `OSError`
(a full disk) or a DuckDB error (a broken index file) after the operation has published its
files. The files stay as written; the index does not know them until `vaultmem reconcile`."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from vaultmem.adapters.cli import main
from vaultmem.core.errors import PartialWriteError
from vaultmem.index.reconcile import reconcile
from vaultmem.vault import Vault

THIRD_PARTY = Path(__file__).resolve().parent.parent / "vaults" / "okf-third-party"
ATLAS = {"scope": "project", "scope_id": "atlas"}
LATER = datetime.now(UTC) + timedelta(days=400)

Write = Callable[[Vault], object]


def _store(vault: Vault) -> object:
    return vault.store("fresh-fact", "Stored while the index broke.", **ATLAS)


def _correct(vault: Vault) -> object:
    return vault.correct("seeded", "Corrected while the index broke.")


def _forget(vault: Vault) -> object:
    return vault.forget("seeded")


def _prune(vault: Vault) -> object:
    return vault.prune(apply=True, now=LATER)


def _relate(vault: Vault) -> object:
    return vault.relate("seeded", "release-process", type="supersedes")


def _accept(vault: Vault) -> object:
    proposed = [e for e in vault.edges(status="proposed") if "seeded" in e.source_path]
    return vault.accept((proposed or vault.edges(status="proposed"))[0].id)


def _reject(vault: Vault) -> object:
    return vault.reject(vault.edges(status="proposed")[0].id)


def _import(vault: Vault) -> object:
    return vault.import_okf(THIRD_PARTY, scope="project", scope_id="sales")


WRITES: dict[str, Write] = {
    "store": _store,
    "correct": _correct,
    "forget": _forget,
    "prune": _prune,
    "relate": _relate,
    "accept": _accept,
    "reject": _reject,
    "import": _import,
}
FAILURES: dict[str, BaseException] = {
    "os_error": OSError(28, "No space left on device"),
    "duckdb_error": duckdb.IOException("IO Error: could not write the index file"),
}


@pytest.fixture
def vault(example_vault: Path) -> Vault:
    vault = Vault(example_vault)
    vault.reconcile()
    old = datetime.now(UTC) - timedelta(days=20)
    vault.store("seeded", "DuckDB read_only connections serve the readers.", **ATLAS)
    vault.store("expiring", "Session note.", scope="session", scope_id="s-1", now=old)
    return vault


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_failed_reindex_is_a_partial_write(
    vault: Vault, write: str, failure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise FAILURES[failure]

    monkeypatch.setattr("vaultmem.index.reconcile.reconcile", broken)
    with pytest.raises(PartialWriteError) as info:
        WRITES[write](vault)
    envelope = info.value.to_dict()
    assert envelope["code"] == "partial_write" and envelope["retry"] is False
    phases = envelope["phases_done"]
    assert isinstance(phases, list) and phases and "indexed" not in phases
    assert "vaultmem reconcile" in str(envelope["hint"])
    assert "Do not retry" in str(envelope["message"])
    assert type(FAILURES[failure]).__name__ in str(envelope["message"])

    monkeypatch.undo()
    report = reconcile(vault.config)  # the repair finds what was published and not indexed
    assert report.added + report.changed + report.removed >= 1


def test_a_failed_import_reindex_reaches_the_cli_as_partial_write(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("vaultmem.index.reconcile.reconcile", broken)
    code = main(["import", "okf", str(THIRD_PARTY), "--scope", "global",
                 "--vault", str(vault.root), "--json"])  # fmt: skip
    envelope = json.loads(capsys.readouterr().out)
    assert code == 1 and envelope["ok"] is False
    assert envelope["error"]["code"] == "partial_write"
    assert envelope["error"]["retry"] is False
    assert envelope["error"]["phases_done"] == ["write", "publish"]

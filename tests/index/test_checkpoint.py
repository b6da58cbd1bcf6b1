"""The watcher's deferred checkpoint (`index.checkpoint`): a batch closes the index leaving its
commits in DuckDB's write-ahead log, readers see them, and the fold when idle keeps the
recorded state and the last survey, so the next run still reads no rows."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from vaultmem.core.config import Config
from vaultmem.index.checkpoint import checkpoint_index
from vaultmem.index.reconcile import reconcile, recorded_state
from vaultmem.storage import store
from vaultmem.storage.last_survey import index_token, read_last_survey
from vaultmem.vault import Vault


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    root = tmp_path / "vault"
    root.mkdir()
    config = Vault.init(root).config
    (root / "A.md").write_text("# A\n\nalpha words [[B]]\n", "utf-8")
    (root / "B.md").write_text("# B\n\nbeta words\n", "utf-8")
    reconcile(config)
    return config


def _count_state_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from vaultmem.storage import index_writes

    reads: list[int] = []
    real = index_writes.read_state

    def counted(*args: Any) -> Any:
        reads.append(1)
        return real(*args)

    monkeypatch.setattr(index_writes, "read_state", counted)
    return reads


def _terms(config: Config, term: str) -> int:
    with store.reading(config.index_path) as con:
        row = con.execute("SELECT count(*) FROM postings WHERE term = ?", [term]).fetchone()
    return int(row[0]) if row else 0


def test_a_batch_leaves_its_commits_in_the_log_and_readers_see_them(vault: Config) -> None:
    wal = store.wal_path(vault.index_path)
    assert not wal.exists()  # a whole reconcile closes with a checkpoint
    (vault.root / "A.md").write_text("# A\n\nalpha words zebra\n", "utf-8")
    assert reconcile(vault, paths=["A.md"], checkpoint=False).changed == 1
    assert wal.exists() and wal.stat().st_size > 0
    assert _terms(vault, "zebra") == 1  # a reader replays the log
    assert checkpoint_index(vault)
    assert not wal.exists() or wal.stat().st_size == 0
    assert _terms(vault, "zebra") == 1
    assert not checkpoint_index(vault)  # nothing left to fold


def test_the_fold_carries_the_recorded_state_and_the_last_survey(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint moves the index file's identity; the records keyed by it follow, so the
    next runs take them (no row read, the no-op settled by the last survey)."""
    from vaultmem.storage import index_state

    (vault.root / "B.md").write_text("# B\n\nbeta words, edited\n", "utf-8")
    assert reconcile(vault, checkpoint=False).changed == 1  # a whole walk: remembered
    before = index_token(vault.index_path)
    survey = read_last_survey(vault.state_dir)
    assert survey is not None and survey.token == before
    assert checkpoint_index(vault)
    after = index_token(vault.index_path)
    assert after != before
    carried = read_last_survey(vault.state_dir)
    assert carried is not None and carried == survey._replace(token=after)
    monkeypatch.setattr(index_state, "_KEPT", {})  # a new process reads the record's file
    assert recorded_state(vault, after) is not None
    reads = _count_state_reads(monkeypatch)
    assert reconcile(vault).unchanged == 2  # settled by the carried survey
    (vault.root / "A.md").write_text("# A\n\nalpha words, edited [[B]]\n", "utf-8")
    assert reconcile(vault).changed == 1
    assert reads == []  # the carried record, never the rows


def test_a_fold_waits_for_no_writer(vault: Config) -> None:
    """A writer holding the lock keeps its own checkpoint: the fold gives up at once."""
    from vaultmem.files.lock import writer_lock

    (vault.root / "A.md").write_text("# A\n\nalpha words again\n", "utf-8")
    reconcile(vault, paths=["A.md"], checkpoint=False)
    with writer_lock(vault.state_dir):
        assert not checkpoint_index(vault)
    assert checkpoint_index(vault)


def test_the_watcher_folds_its_batches_when_idle_and_when_it_stops(vault: Config) -> None:
    from vaultmem.index.watch import WatchEvent, watch

    events: list[WatchEvent] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=watch, args=(vault.root,), kwargs={"emit": events.append, "stop": stop}
    )
    thread.start()
    wal = store.wal_path(vault.index_path)
    try:
        deadline = time.monotonic() + 60
        while not any(e.kind == "sweep" for e in events) and time.monotonic() < deadline:
            time.sleep(0.05)
        (vault.root / "A.md").write_text("# A\n\nalpha words quagga\n", "utf-8")
        while not any(e.kind == "batch" for e in events) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _terms(vault, "quagga") == 1
        while wal.exists() and wal.stat().st_size and time.monotonic() < deadline:
            time.sleep(0.05)  # folded once idle (IDLE_CHECKPOINT_S)
        assert not wal.exists() or wal.stat().st_size == 0
        (vault.root / "B.md").write_text("# B\n\nbeta words okapi\n", "utf-8")
        while sum(e.kind == "batch" for e in events) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(60)
    assert _terms(vault, "okapi") == 1
    assert not wal.exists() or wal.stat().st_size == 0  # folded on the way out

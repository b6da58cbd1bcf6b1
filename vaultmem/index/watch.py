"""Watch: keep the index following the vault while people edit it, until told to stop.

`watch` follows the vault root with watchfiles (inotify, FSEvents, ...) and turns each debounced
batch of file-system events into one incremental `reconcile(config, paths=...)` of exactly the
paths that changed; reconcile expands a folder path to everything under it, so folder renames
and deletes need nothing special here. What it does around that, and why:

- Events are filtered on the path alone: hidden names (`.obsidian/`, `.trash/`, `.git/`,
  `.vaultmem/`) and sync or editor droppings never wake reconcile, but for a sync tool's
  conflict copy, which the batch unites (a topic's) or reports (`index.conflicts`). The two
  files that shape the configuration are exceptions too: `.vaultmem/config.toml` and
  Obsidian's `.obsidian/app.json` (its `userIgnoreFilters`). A change to either reloads the
  config; when the result differs, the index is rebuilt, because a walk keeps an unchanged
  note's old scope (see docs/watch.md).
- Attachments and unmapped notes are passed too: they change how links resolve.
- A full reconcile runs at start-up (the index may be stale or missing) and every `sweep_s`
  seconds, catching events the operating system dropped.
- A note that changed while it was read (`file_unstable`) is queued again for a short while
  later, so a file still being written is indexed once it settles.
- A burst (`BURST_PATHS` paths in one batch) waits until no change came for `BURST_QUIET_S`
  (at most `BURST_MAX_S`), so a burst written for longer than the debounce is still one
  reconcile, and one that goes on for minutes is indexed as it goes.
- Trouble never stops the watcher. Any failure of a run (a locked index or writer lock, any
  other `VaultmemError`, an I/O error, interrupted parse workers) is reported as one `error`
  event and retried with exponential backoff (1 s doubling to 30 s, reset by a success): a
  failed batch re-queues its paths, a failed sweep or config rebuild runs again then. A
  malformed note is not a failure, just a problem row in the report.
- The index is never held open between batches: reconcile opens it per transaction only.
- `stop` ends the loop between batches; a batch in progress finishes (or, interrupted, is rolled
  back by DuckDB), so the caller can exit cleanly on SIGINT/SIGTERM.

This module prints nothing: every outcome is a `WatchEvent` handed to `emit`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import watchfiles

from vaultmem.core.config import CONFIG_FILE_NAME, STATE_DIR_NAME, Config, load_config
from vaultmem.core.errors import LockedError, VaultmemError
from vaultmem.core.names import conflict_copy_original
from vaultmem.files.scan import is_dropping
from vaultmem.index.reconcile import ReconcileReport, reconcile, warm_up
from vaultmem.storage import problem_queries, store

WatchKind = Literal["started", "batch", "sweep", "config", "error", "stopped"]

CONFIG_FILES = frozenset({f"{STATE_DIR_NAME}/{CONFIG_FILE_NAME}", ".obsidian/app.json"})
"""Vault-relative files whose change reloads the configuration."""

SETTLE_S = 0.5
"""How long a file that changed while it was read gets to settle before it is read again."""

LOCK_WAIT_S = 2.0
"""How long one attempt waits for another writer's lock before backing off."""

MAX_BACKOFF_S = 30.0
TICK_MS = 250
"""How often an idle watcher wakes to run due retries and sweeps."""

BURST_PATHS = 50
"""A batch of at least this many paths is a burst (a sync, a checkout, a script's writes)."""
BURST_QUIET_S = 0.2
"""How long a burst waits for no new change before it runs: `debounce_ms` is the longest one
batch gathers, so a burst written over a longer span came as two or more; held until the writes
pause, it runs as one (a single save is never held)."""
BURST_MAX_S = 2.0
"""The longest a burst is held: a sync that writes for minutes is indexed as it goes."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One line of the watcher's log: a batch, a sweep, a config reload, an error, start or stop.

    The counts are those of the `ReconcileReport` (zero when no reconcile ran); `notes` and
    `problems` are totals in the index after the run, the others what the run did.
    """

    kind: WatchKind
    paths: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    renamed: int = 0
    touched: int = 0
    problems: int = 0
    notes: int = 0
    duration_s: float = 0.0
    message: str = ""
    at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def from_report(
        cls, kind: WatchKind, paths: int, report: ReconcileReport, message: str = ""
    ) -> WatchEvent:
        return cls(
            kind=kind,
            paths=paths,
            added=report.added,
            changed=report.changed,
            removed=report.removed,
            renamed=report.renamed,
            touched=report.touched,
            problems=report.problems,
            notes=report.notes,
            duration_s=report.duration_s,
            message=message or "; ".join(report.warnings),
        )

    def to_dict(self) -> dict[str, object]:
        """Every field in declaration order, the duration rounded and the time as ISO text."""
        return {**asdict(self), "duration_s": round(self.duration_s, 6), "at": self.at.isoformat()}


Emit = Callable[[WatchEvent], None]


def watch(
    root: Path,
    *,
    debounce_ms: int = 300,
    sweep_s: float = 300,
    emit: Emit,
    stop: threading.Event | None = None,
) -> None:
    """Follow the vault at `root` and keep its index current until `stop` is set.

    `debounce_ms` is the longest a burst of events is gathered before its batch runs (a quiet
    spell of 50 ms ends a batch sooner); `sweep_s` the period of the full reconcile.
    """
    stop = stop if stop is not None else threading.Event()
    follower = _Follower(load_config(root), sweep_s, emit)
    emit(WatchEvent("started", message=f"watching {follower.config.root}"))
    try:
        for changes in watchfiles.watch(
            follower.config.root,
            watch_filter=follower.wanted,
            debounce=max(1, debounce_ms),
            step=max(1, min(50, debounce_ms)),
            stop_event=stop,
            rust_timeout=TICK_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            recursive=True,
        ):
            follower.note_changes(path for _, path in changes)
            follower.run_due(stop)
            if stop.is_set():
                break
    finally:
        emit(WatchEvent("stopped", message="watcher stopped"))


class _Follower:
    """The watcher's state between batches: the config, queued paths and when to run what."""

    def __init__(self, config: Config, sweep_s: float, emit: Emit) -> None:
        self.config = config
        self.sweep_s = sweep_s
        self.emit = emit
        self.prefixes = _root_prefixes(config.root)
        self.pending: dict[str, float] = {}  # path -> not before (monotonic seconds)
        self.config_due: float | None = None
        self.next_sweep = 0.0  # a full reconcile at start-up
        self.backoff = 0.0
        self.burst_until = 0.0  # a burst's paths wait until then (monotonic seconds)
        self.burst_limit = 0.0  # and no longer than this (0: no burst held)

    # -- events -----------------------------------------------------------------------------

    def relative(self, path: str) -> str | None:
        for prefix in self.prefixes:
            if path.startswith(prefix):
                return path[len(prefix) :].replace(os.sep, "/")
        return None

    def wanted(self, _change: watchfiles.Change, path: str) -> bool:
        """watchfiles' filter: cheap, on the path alone."""
        rel = self.relative(path)
        if not rel:
            return False
        if rel in CONFIG_FILES:
            return True
        *folders, name = rel.split("/")
        if any(is_dropping(part) for part in folders):
            return False
        # A sync tool's conflict copy is a dropping reconcile still looks at: a topic's is
        # united into the topic, any other reported (`index.conflicts`).
        return not is_dropping(name) or conflict_copy_original(name) is not None

    def note_changes(self, paths: Iterable[str]) -> None:
        now = time.monotonic()
        noted = 0
        for path in paths:
            rel = self.relative(path)
            if not rel:
                continue
            if rel in CONFIG_FILES:
                self.config_due = now
            else:
                self.pending[rel] = now
                noted += 1
        if self.burst_limit and now >= self.burst_limit:
            return  # a burst held to its bound: it runs now, these paths with it
        held = self.burst_until > now
        if noted >= BURST_PATHS or (noted and held):  # a burst, or more of one: wait on
            if not held:
                self.burst_limit = now + BURST_MAX_S
            self.burst_until = min(now + BURST_QUIET_S, self.burst_limit)

    # -- running what is due ------------------------------------------------------------------

    def run_due(self, stop: threading.Event) -> None:
        now = time.monotonic()
        if self.config_due is not None and self.config_due <= now:
            self.reload_config()
        if stop.is_set():
            return
        if now < self.burst_until:
            due = []  # a burst still being written
        else:
            self.burst_limit = 0.0
            due = sorted(p for p, t in self.pending.items() if t <= now)
        if due:
            for path in due:
                del self.pending[path]
            self.run_batch(due)
        if not stop.is_set() and time.monotonic() >= self.next_sweep:
            self.run_sweep()

    def run_batch(self, paths: list[str]) -> None:
        report = self._reconcile(paths=paths)
        if report is not None:
            self.emit(WatchEvent.from_report("batch", len(paths), report))
            self._requeue_unstable(report)

    def run_sweep(self) -> None:
        first = self.next_sweep == 0.0
        self.next_sweep = time.monotonic() + self.sweep_s
        report = self._reconcile(paths=None)
        if report is not None:
            if first:  # before the event that says the watcher is ready
                warm_up(self.config)  # the first save is then as quick as the next ones
            self.emit(WatchEvent.from_report("sweep", 0, report))
            self._requeue_unstable(report)

    def reload_config(self) -> None:
        self.config_due = None
        try:
            config = load_config(self.config.root)
        except VaultmemError as error:
            self.emit(WatchEvent("config", message=f"kept the previous config: {error.message}"))
            return
        if config == self.config:
            self.emit(
                WatchEvent(
                    "config", message="config reloaded; nothing that the index depends on changed"
                )
            )
            return
        # A walk keeps an unchanged note's rows, old scope included: only a rebuild applies a
        # new mapping to every note. The rename journal keeps the ids.
        report = self._reconcile(paths=None, rebuild=True, config=config)
        if report is None:
            self.config_due = time.monotonic() + self.backoff
            return
        self.config = config
        self.next_sweep = time.monotonic() + self.sweep_s
        self.emit(WatchEvent.from_report("config", 0, report, "config changed; index rebuilt"))

    def _reconcile(
        self, *, paths: list[str] | None, rebuild: bool = False, config: Config | None = None
    ) -> ReconcileReport | None:
        """One reconcile; on failure one error event, a retry scheduled, and None."""
        started = time.perf_counter()
        try:
            report = reconcile(
                config or self.config, paths=paths, rebuild=rebuild, lock_timeout_s=LOCK_WAIT_S
            )
        except LockedError as error:
            self._failed(paths, started, f"index locked: {error.message}")
            return None
        except VaultmemError as error:
            self._failed(paths, started, f"{error.code}: {error.message}")
            return None
        except OSError as error:  # e.g. a folder vanished while it was listed
            self._failed(paths, started, f"I/O error: {error}")
            return None
        except BrokenProcessPool:
            # Ctrl-C in a terminal reaches the parse workers too; nothing was written yet.
            self._failed(paths, started, "the parse workers were interrupted")
            return None
        self.backoff = 0.0
        return report

    def _failed(self, paths: list[str] | None, started: float, what: str) -> None:
        self.backoff = min(MAX_BACKOFF_S, max(1.0, self.backoff * 2))
        retry_at = time.monotonic() + self.backoff
        if paths is None:
            self.next_sweep = min(self.next_sweep, retry_at)
        else:
            for path in paths:
                self.pending[path] = max(self.pending.get(path, 0.0), retry_at)
        self.emit(
            WatchEvent(
                "error",
                paths=len(paths or ()),
                duration_s=time.perf_counter() - started,
                message=f"{what}; retrying in {self.backoff:.0f} s",
            )
        )

    def _requeue_unstable(self, report: ReconcileReport) -> None:
        """Queue again the notes that changed while they were read, once they had time to settle."""
        if not report.problems:
            return
        try:
            with store.reading(self.config.index_path, timeout_s=1.0) as con:
                paths = problem_queries.paths_with_problem(con, "file_unstable")
        except VaultmemError:
            return  # the next sweep re-reads them anyway
        retry_at = time.monotonic() + SETTLE_S
        for path in paths:
            self.pending[path] = max(self.pending.get(path, 0.0), retry_at)


def _root_prefixes(root: Path) -> tuple[str, ...]:
    """The vault root as events may spell it (as given and with links resolved), with a `/`."""
    spelled = {str(root), os.path.realpath(root)}
    return tuple(sorted((s.rstrip(os.sep) + os.sep for s in spelled), key=len, reverse=True))

"""Crashes and concurrency with real processes: `kill -9` of a reconcile, readers during a long
reconcile, and a second writer while one holds the lock."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import dump_index
from vaultmem.core.config import Config
from vaultmem.core.errors import LockedError
from vaultmem.files.lock import writer_lock
from vaultmem.index.reconcile import reconcile
from vaultmem.vault import Vault

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.generate_vault import generate_vault  # noqa: E402

pytestmark = pytest.mark.slow  # real processes killed mid-write: seconds each

NOTES = 800
"""~1.6 MB of Markdown: above `parallel.PARALLEL_MIN_BYTES`, so the build uses workers."""


def dump(config: Config) -> dict[str, list[tuple[Any, ...]]]:
    return dump_index(config.index_path)


def vault_files(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] != ".vaultmem" and path.is_file():
            out[rel.as_posix()] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                path.stat().st_mtime_ns,
            )
    return out


def env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }


def start_reconcile(
    root: Path, command: str = "reconcile", *, piped: bool = True
) -> subprocess.Popen[str]:
    """A CLI reconcile. One that will be killed must not be `piped`: its orphaned parse
    workers would hold the pipes open and `communicate` would never return."""
    sink = subprocess.PIPE if piped else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-m", "vaultmem", command, "--vault", str(root), "--json"],
        env=env(),
        stdout=sink,
        stderr=sink,
        text=True,
    )


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (parse workers, the forkserver)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def kill_9(victim: subprocess.Popen[str]) -> set[int]:
    """SIGKILL a reconcile; return the processes it had started (they outlive it, see below)."""
    children = descendants(victim.pid)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)
    return children


def reap(pids: set[int]) -> None:
    """End processes a killed reconcile of ours left behind, by pid."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def drop_index(config: Config) -> None:
    for path in config.state_dir.glob("index.duckdb*"):
        path.unlink()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, float, dict[str, Any]]:
    """A generated vault, how long a full reconcile subprocess takes, and the index it builds."""
    root = tmp_path_factory.mktemp("crash") / "vault"
    generate_vault(root, NOTES)
    config = Vault(root).config
    began = time.monotonic()
    done = start_reconcile(root)
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0, err
    assert json.loads(out)["data"]["notes"] == NOTES
    return config, time.monotonic() - began, dump(config)


def test_kill_9_during_a_full_build(big: tuple[Config, float, dict[str, Any]]) -> None:
    config, duration, expected = big
    files = vault_files(config.root)
    rng = random.Random(3)
    for fraction in sorted(rng.uniform(0.4, 0.95) for _ in range(2)):
        drop_index(config)
        victim = start_reconcile(config.root, piped=False)
        time.sleep(duration * fraction)
        reap(kill_9(victim))
        report = reconcile(config)
        assert report.notes == NOTES
        assert dump(config) == expected, f"differs after a kill at {fraction:.0%} of a build"
    assert vault_files(config.root) == files
    assert not list(config.root.glob("**/*.tmp"))


def test_kill_9_during_an_incremental_reconcile(
    big: tuple[Config, float, dict[str, Any]],
) -> None:
    config, duration, _ = big
    reconcile(config)
    notes = sorted(p for p in vault_files(config.root) if p.endswith(".md"))
    for i, rel in enumerate(notes[::3]):
        with (config.root / rel).open("a", encoding="utf-8") as handle:
            handle.write(f"\nedited {i} [[New note {i % 7}]]\n")
    for i in range(7):
        (config.root / f"New note {i}.md").write_text(f"# New {i}\n", encoding="utf-8")
    files = vault_files(config.root)
    victim = start_reconcile(config.root, piped=False)
    time.sleep(duration * random.Random(5).uniform(0.4, 0.8))
    reap(kill_9(victim))

    reconcile(config)
    incremental = dump(config)
    reconcile(config, rebuild=True)
    assert incremental == dump(config)
    assert vault_files(config.root) == files


def test_killed_reconcile_leaves_no_worker_behind(
    big: tuple[Config, float, dict[str, Any]],
) -> None:
    config, duration, _ = big
    drop_index(config)
    victim = start_reconcile(config.root, piped=False)
    deadline = time.monotonic() + duration
    children: set[int] = set()
    while time.monotonic() < deadline and len(children) < 2:
        time.sleep(0.05)
        children = descendants(victim.pid)
    orphans = kill_9(victim)
    try:
        time.sleep(3)
        alive = {pid for pid in orphans if Path(f"/proc/{pid}").exists()}
        zombies = {pid for pid in alive if ") Z" in Path(f"/proc/{pid}/stat").read_text()}
        assert orphans and not alive - zombies
    finally:
        reap(orphans)


READER = """
import json, sys, time
from pathlib import Path
from vaultmem.core.errors import VaultmemError
from vaultmem.vault import Vault

root, stop = sys.argv[1], Path(sys.argv[2])
answers, errors = [], []
while not stop.exists():
    try:
        answers.append(Vault(root).status().notes)
    except VaultmemError as error:
        errors.append(f"{error.code}: {error.message}")
print(json.dumps({"answers": answers, "errors": errors}))
"""


@pytest.mark.parametrize("rebuild", [False, True])
def test_reader_sees_old_or_new_never_an_error(
    big: tuple[Config, float, dict[str, Any]], tmp_path: Path, rebuild: bool
) -> None:
    config, _, _ = big
    reconcile(config)
    old = Vault(config.root).status().notes
    for i in range(50):
        (config.root / f"Reader {rebuild} {i}.md").write_text("# r\n[[x]]\n", encoding="utf-8")
    for rel in sorted(p for p in vault_files(config.root) if p.endswith(".md"))[::4]:
        with (config.root / rel).open("a", encoding="utf-8") as handle:
            handle.write("\nmore words for the index\n")
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(config.root), str(stop)],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)  # let the reader get going
    writer = start_reconcile(config.root, "rebuild" if rebuild else "reconcile")
    _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    time.sleep(0.5)
    stop.touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result["errors"] == []
    assert set(result["answers"]) <= {old, old + 50}
    assert result["answers"][-1] == old + 50


HOLDER = """
import sys, time
from pathlib import Path
from vaultmem.files.lock import writer_lock
from tests.helpers import dump_index
with writer_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_second_writer_waits_for_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "Note.md").write_text("# Note\n", encoding="utf-8")
    config = Vault.init(root).config
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(config.state_dir), "2.5"],
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    began = time.monotonic()
    with pytest.raises(LockedError) as caught:
        reconcile(config, lock_timeout_s=0.2)
    assert caught.value.code == "locked"
    assert f"pid {holder.pid}" in caught.value.message
    waiter = start_reconcile(root)
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert json.loads(out)["data"]["notes"] == 1
    assert time.monotonic() - began >= 1.5  # it waited for the holder to let go
    holder.wait(timeout=30)


def test_lock_is_released_by_a_killed_holder(tmp_path: Path) -> None:
    state = tmp_path / ".vaultmem"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(state), "60"],
        env=env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with writer_lock(state, timeout_s=5):
        pass

"""Statting on two cores (`files/stat_pair.py`): the answer of the forked child and this process
together is the answer of one process alone, a folder cut between the two included, and the
fork is refused where it is unsafe.

The fork is taken only in a single-threaded process, which a pytest worker is not (its
channel to the controller runs threads), so each case runs in a fresh interpreter, with the
threshold lowered so that a small real tree forks, and prints its answers as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from vaultmem.files import stat_pair

needs_fork = pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(__import__("os").sched_getaffinity(0)) < 2,
    reason="the fork is taken on Linux with two processors or more",
)

_COUNT_FORKS = """
import os
forks = []
fork = os.fork
def counted_fork():
    pid = fork()
    if pid:
        forks.append(pid)
    return pid
os.fork = counted_fork
"""
"""The scripts' prelude: `forks` lists the children this process forked."""

_RUN = (
    _COUNT_FORKS
    + """
import json, sys
from vaultmem.files import stat_pair
folders = json.loads(sys.argv[1])
def plain(answers):
    return [None if a is None else [a[0].tolist(), a[1].tolist()] for a in answers]
alone = plain([stat_pair.stat_names(path, names) for path, names in folders])
stat_pair.PARALLEL_MIN = 2
{setup}
together = plain(stat_pair.stat_folders(folders))
print(json.dumps({{"forks": len(forks), "alone": alone, "together": together}}))
"""
)


def _tree(root: Path, sizes: dict[str, int]) -> list[tuple[str, list[str]]]:
    """Folders of files with distinct sizes, as (folder, names) the walk would stat."""
    folders: dict[str, list[str]] = {}
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
        folders.setdefault(str(path.parent), []).append(path.name)
    return sorted(folders.items())


def _stat_in_a_fresh_process(folders: list[tuple[str, list[str]]], setup: str = "") -> Any:
    code = _RUN.format(setup=textwrap.dedent(setup))
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(folders)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


@needs_fork
def test_two_processes_answer_as_one_with_a_folder_cut_between_them(tmp_path: Path) -> None:
    sizes = {f"A/n{i}.md": i for i in range(7)} | {f"B/n{i}.md": 100 + i for i in range(4)}
    out = _stat_in_a_fresh_process(_tree(tmp_path, sizes))  # 11 names: the cut is inside A
    assert out["forks"] == 1
    assert out["together"] == out["alone"]
    assert out["together"][0][0] == [0, 1, 2, 3, 4, 5, 6]
    assert out["together"][1][0] == [100, 101, 102, 103]


@needs_fork
def test_a_vanished_name_marks_its_folder_in_either_half(tmp_path: Path) -> None:
    folders = _tree(tmp_path, {f"{d}/n{i}.md": i for d in "ABCD" for i in range(3)})
    folders[0][1].append("gone.md")  # in this process's half
    folders[3][1].append("gone.md")  # in the child's
    out = _stat_in_a_fresh_process(folders)
    assert out["forks"] == 1
    assert [a is None for a in out["together"]] == [True, False, False, True]
    assert out["together"] == out["alone"]


@needs_fork
def test_a_child_without_an_answer_is_made_up_for_here(tmp_path: Path) -> None:
    folders = _tree(tmp_path, {f"{d}/n{i}.md": i for d in "AB" for i in range(3)})
    # The child fails before it writes a byte (this process reads its answer with loads).
    out = _stat_in_a_fresh_process(folders, "stat_pair.pickle.dumps = None")
    assert out["forks"] == 1
    assert out["together"] == out["alone"]


def test_no_fork_in_a_process_with_another_thread() -> None:
    """A child of a threaded process could wait forever on a lock another thread held."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not stat_pair._can_fork()
    finally:
        stop.set()
        thread.join()


_WALK = (
    _COUNT_FORKS
    + """
import json, sys, time
from pathlib import Path
from vaultmem.core.config import Config, FolderMapping
from vaultmem.files import folder_cache, stat_pair
from vaultmem.files.scan import scan_vault
root = Path(sys.argv[1])
config = Config(root=root, mappings=(FolderMapping("Notes", "project", "v"),))
config.state_dir.mkdir(parents=True, exist_ok=True)
stat_pair.PARALLEL_MIN = 2
def walk():
    cache = folder_cache.load(config, time.time_ns() + 3600 * 10**9)
    result = scan_vault(config, cache)
    folder_cache.save(config, cache)
    return sorted(fp.path for fp in result.notes), [list(fp) for fp in result.notes]
first = walk()
record = config.state_dir / folder_cache.RECORD_NAME
data = json.loads(record.read_bytes())
data["folders"]["Notes/b/"][1].append("ghost.md")  # a recorded note the folder lost
data["folders"]["Notes/b/"][2] += "1"  # (the record's note names are flags over its files)
record.write_text(json.dumps(data), encoding="utf-8")
second = walk()
truth = [list(fp) for fp in scan_vault(config).notes]
print(json.dumps({"first": first[1], "second": second[1], "truth": truth, "forks": len(forks)}))
"""
)


@needs_fork
def test_a_forked_walk_through_the_record_is_the_walk_without_it(tmp_path: Path) -> None:
    """The walk itself on two cores: the notes of recorded folders, statted by the pair, are
    the notes a walk without a record finds, and a recorded name that vanished makes its
    folder listed again."""
    for folder, count in (("a", 5), ("b", 4), ("c", 3)):
        for i in range(count):
            path = tmp_path / "Notes" / folder / f"n{i}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x" * (10 * i + len(folder)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _WALK, str(tmp_path.resolve())],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(done.stdout)
    assert len(out["truth"]) == 12
    assert out["forks"] == 2  # the second walk and the walk again after the vanished name
    assert out["first"] == out["truth"]
    assert out["second"] == out["truth"]

"""The same-run floor and the measuring helpers every benchmark shares.

The floor is the least work any indexer must do: walk the vault, read every `.md` file and load
its frontmatter with PyYAML's C loader. Benchmarks report their medians as ratios to a floor
measured in the same run on the same machine, so figures survive a change of hardware. This
module also owns the timing helper (`measure`: median/p95/min over repeats with
`time.perf_counter`), the process peak memory (`peak_rss_mb`) and `run_in_subprocess`, which runs
a `module:function` in a fresh interpreter to measure that function's own peak memory.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = frozenset({".obsidian", ".trash", ".git", ".vaultmem"})

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.S | re.M)
_RESULT_MARK = "@@benchmark-result@@"


@dataclass(frozen=True, slots=True)
class FloorResult:
    """One floor run: wall seconds, Markdown files read, their bytes, frontmatter blocks loaded."""

    seconds: float
    files: int
    bytes: int
    frontmatter: int
    frontmatter_errors: int
    loader: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Stats:
    """Timings of repeated runs in seconds; `p95` is nearest-rank, so with 3 runs it is the max."""

    median: float
    p95: float
    min: float
    runs: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        return {"median": self.median, "p95": self.p95, "min": self.min, "runs": list(self.runs)}


@dataclass(frozen=True, slots=True)
class SubprocessResult:
    """What a function run in a fresh interpreter returned, its seconds and the peak RSS."""

    result: Any
    seconds: float
    peak_rss_mb: float


def markdown_files(root: Path) -> list[Path]:
    """Every `.md` file under `root`, sorted, skipping hidden and tool folders (not symlinks)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        base = Path(dirpath)
        found.extend(base / name for name in sorted(filenames) if name.endswith(".md"))
    return found


def frontmatter_block(text: str) -> str | None:
    """The YAML between the opening `---` at byte 0 and the next `---` line, or None."""
    match = _FRONTMATTER.match(text)
    return match.group(1) if match else None


def read_floor(root: Path) -> FloorResult:
    """Walk, read and load every note's frontmatter once; the baseline for every ratio."""
    start = time.perf_counter()
    files = nbytes = loaded = errors = 0
    for path in markdown_files(root):
        data = path.read_bytes()
        files += 1
        nbytes += len(data)
        block = frontmatter_block(data.decode("utf-8", errors="replace"))
        if block is None:
            continue
        try:
            yaml.load(block, Loader=_LOADER)
            loaded += 1
        except yaml.YAMLError:
            errors += 1
    return FloorResult(
        seconds=time.perf_counter() - start,
        files=files,
        bytes=nbytes,
        frontmatter=loaded,
        frontmatter_errors=errors,
        loader=_LOADER.__name__,
    )


def floor_entry(args: Sequence[str]) -> dict[str, object]:
    """`run_in_subprocess` entry point: the floor over the vault at `args[0]`."""
    return read_floor(Path(args[0])).to_json()


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (ru_maxrss is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes
    return peak * scale / 1_000_000


def measure(fn: Callable[[], object], repeat: int = 3, warmup: int = 0) -> Stats:
    """Run `fn` `warmup` times untimed, then `repeat` times timed; medians beat means here."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    for _ in range(warmup):
        fn()
    runs: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    ordered = sorted(runs)
    return Stats(
        median=statistics.median(ordered),
        p95=ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)],
        min=ordered[0],
        runs=tuple(runs),
    )


_CHILD = f"""
import importlib, json, resource, sys, time
module, _, name = sys.argv[1].partition(":")
fn = getattr(importlib.import_module(module), name)
start = time.perf_counter()
result = fn(sys.argv[2:])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
peak_mb = peak * (1 if sys.platform == "darwin" else 1024) / 1_000_000
out = {{"result": result, "seconds": seconds, "peak_rss_mb": peak_mb}}
print({_RESULT_MARK!r} + json.dumps(out))
"""


def run_in_subprocess(
    target: str, args: Sequence[str] = (), timeout: float = 600.0
) -> SubprocessResult:
    """Run `target` ("module:function", called with `args` as a list of str, returning JSON-able
    data) in a fresh interpreter and report its result, seconds and the child's peak RSS.

    The peak includes the interpreter and the imports the function needs, as a CLI call would.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, target, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_RESULT_MARK):
            data = json.loads(line[len(_RESULT_MARK) :])
            return SubprocessResult(data["result"], data["seconds"], data["peak_rss_mb"])
    tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
    raise RuntimeError(f"{target} failed in a subprocess (exit {proc.returncode}): {tail[0]}")


@dataclass(frozen=True, slots=True)
class TreeResult:
    """A command's wall seconds and the peak RSS of its processes, in MB.

    `main_peak_mb` is the command's own process; `largest_peak_mb` the largest of every process
    of its tree seen by polling `/proc` (workers, forkserver), or of the reaped descendants'
    `RUSAGE_CHILDREN` maximum, whichever is larger; `processes` how many distinct pids were seen.
    `cpu_s`: user + system CPU seconds of the whole tree (each polled process's last reading;
    the command's own from `RUSAGE_CHILDREN`, exact), a figure the machine's load moves far
    less than wall time; a worker's last ~0.2 s before it exits can be missed.
    """

    seconds: float
    main_peak_mb: float
    largest_peak_mb: float
    processes: int
    cpu_s: float = 0.0


def _children_of() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _hwm_mb(pid: int) -> float | None:
    """A process's peak RSS so far (VmHWM), in MB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1_000_000
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> float | None:
    """A process's user + system CPU seconds so far."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ensure_bytecode(package: Path = REPO_ROOT / "vaultmem") -> None:
    """Write the package's bytecode before cold processes are timed. An installed package has
    it (pip compiles at install), but a source tree edited since its last import, run with
    PYTHONDONTWRITEBYTECODE set (as test environments do), compiles every changed module in
    every process: up to ~0.17 s of a cold one-note edit, which no user pays twice."""
    import compileall

    compileall.compile_dir(str(package), quiet=1)


def run_process_tree(
    cmd: Sequence[str], timeout: float = 3600.0, poll_s: float = 0.2
) -> TreeResult:
    """Run `cmd`, polling the peak RSS of it and every descendant (Linux `/proc`)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks: dict[int, float] = {}
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        if time.perf_counter() - start > timeout:
            proc.kill()
            raise RuntimeError(f"{cmd[:3]} timed out after {timeout:.0f} s")
        tree = _children_of()
        todo = [proc.pid]
        while todo:
            pid = todo.pop()
            hwm = _hwm_mb(pid)
            if hwm is not None:
                peaks[pid] = max(peaks.get(pid, 0.0), hwm)
            used = _cpu_s(pid)
            if used is not None:
                cpu[pid] = max(cpu.get(pid, 0.0), used)
            todo.extend(tree.get(pid, ()))
        # A wait, not a sleep: the command's end is seen when it comes, not at the next
        # poll (a sleep made every short command read as a multiple of `poll_s`).
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=poll_s)
    seconds = time.perf_counter() - start
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        raise RuntimeError(f"{cmd[:3]} failed (exit {proc.returncode}): {stderr[-500:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    after = usage.ru_maxrss
    reaped = after * 1024 / 1_000_000 if after > before else 0.0
    main = max(peaks.get(proc.pid, 0.0), reaped if len(peaks) <= 1 else 0.0)
    # the command itself is reaped here: its exact CPU replaces its last polled reading
    cpu[proc.pid] = usage.ru_utime + usage.ru_stime - cpu_before
    return TreeResult(seconds, main, max([reaped, *peaks.values()]), len(peaks), sum(cpu.values()))

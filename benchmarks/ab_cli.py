"""Two command lines timed in interleaved pairs: the A/B the cold-CLI targets are read from.

`hyperfine` runs one command's repeats in a block, so on a shared machine a load that rises
between blocks reads as a difference between the commands. Here every round runs both, in
alternating order, each after the same `--prepare` command (e.g. restore a note and append a
line to it, for a one-note edit), and the report is each side's median and the ratio of the
medians, of wall time and of CPU time (user + system of the command and the children it waited
for: what the other tenants of a shared machine move least). Run it from the vault folder:

    cd <reconciled copy of a 10,000-note vault>
    python -m benchmarks.ab_cli --prepare ./append.sh --rounds 40 \\
        --a "env PYTHONPATH=<old tree> .venv/bin/python -m vaultmem reconcile --json" \\
        --b "vaultmem reconcile --json"

A cold search, the same way (no `--prepare`: a search changes nothing):

    python -m benchmarks.ab_cli --rounds 20 \\
        --a "env PYTHONPATH=<old tree> python -m vaultmem search 'meeting notes budget' --json" \\
        --b "python -m vaultmem search 'meeting notes budget' --json"

Give each tree a state folder of its own (`env VAULTMEM_STATE_DIR=<copy> ...` on each side)
when the two record the walk or the index's state differently (a digest, a record's format):
sharing one, each run would find the other's record, take the slow path and rewrite it, and
both sides would measure that.

Compile both trees first (`python -m compileall -q <tree>/vaultmem`): with
PYTHONDONTWRITEBYTECODE set, a tree edited since its last import compiles its changed modules
in every process, which an installed package never does (`floor.ensure_bytecode`).
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import statistics
import subprocess
import time
from typing import Any

WARMUP_ROUNDS = 2


def children_cpu_s() -> float:
    """User + system seconds of this process's children that have been waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pairs(a: str, b: str, rounds: int, prepare: str | None = None) -> dict[str, Any]:
    """Median wall and CPU seconds of `a` and `b` over `rounds` interleaved pairs (after
    warm-up rounds)."""
    commands = {"a": shlex.split(a), "b": shlex.split(b)}
    times: dict[str, list[float]] = {"a": [], "b": []}
    cpu: dict[str, list[float]] = {"a": [], "b": []}
    for i in range(rounds + WARMUP_ROUNDS):
        order = ("a", "b") if i % 2 == 0 else ("b", "a")
        for side in order:
            if prepare:
                subprocess.run(shlex.split(prepare), check=True)
            cpu_start = children_cpu_s()
            start = time.perf_counter()
            subprocess.run(commands[side], stdout=subprocess.DEVNULL, check=True)
            if i >= WARMUP_ROUNDS:
                times[side].append(time.perf_counter() - start)
                cpu[side].append(children_cpu_s() - cpu_start)
    a_median, b_median = statistics.median(times["a"]), statistics.median(times["b"])
    a_cpu, b_cpu = statistics.median(cpu["a"]), statistics.median(cpu["b"])
    return {
        "rounds": rounds,
        "a_median_s": a_median,
        "b_median_s": b_median,
        "ratio_b_to_a": b_median / a_median,
        "a_cpu_median_s": a_cpu,
        "b_cpu_median_s": b_cpu,
        "cpu_ratio_b_to_a": b_cpu / a_cpu if a_cpu else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="the baseline command line")
    parser.add_argument("--b", required=True, help="the command line compared with it")
    parser.add_argument("--prepare", help="run before every timed command")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run_pairs(args.a, args.b, args.rounds, args.prepare)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"a {result['a_median_s']:.3f} s, b {result['b_median_s']:.3f} s wall; "
            f"a {result['a_cpu_median_s']:.3f} s, b {result['b_cpu_median_s']:.3f} s CPU "
            f"(medians of {args.rounds} interleaved pairs): b/a {result['ratio_b_to_a']:.3f} "
            f"wall, {result['cpu_ratio_b_to_a']:.3f} CPU"
        )


if __name__ == "__main__":
    main()

"""The agents' hooks: a cold `vaultmem hook session-start` and `hook prompt` on a 10,000-note
vault, and the prompt hook's relevance floor.

Timing: each run is a fresh process, `vaultmem hook session-start --vault V` with the agent's
JSON on stdin, as Claude Code or Codex starts it (the target: median ≤ 0.3 s); then `hook prompt`
with the labelled prompts below in turn, as every message to the agent runs it. The vault is the
generated benchmark vault (benchmarks/generate_vault.py) copied with its index, plus
`len(TOPICS)` topics of one project and the global scope.

Floor: for each labelled prompt the prompt hook's candidates (recall over the project and global
scopes) are scored by the share of the prompt's search terms each holds (`hook.coverage`). A
prompt written for a topic should show that topic; an unrelated prompt (the everyday requests of
a coding session) should show nothing. For each floor it reports precision (shown hits that were
the expected topic) and recall (expected topics shown), and the floor with the best F1.

Usage: `python -m benchmarks.bench_hook [--quick] [--json] [--vault INDEXED_VAULT] [--runs 21]`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate_vault import ensure_vault

# (key, scope, text, a prompt this topic answers); a project topic goes to the project of the
# folder the hook runs from (`prepare`), as an agent's own writes from there would.
TOPICS: tuple[tuple[str, str, str, str], ...] = (
    (
        "build-commands",
        "project",
        "Build the wheel with uv build; the container with docker build -t app:dev .",
        "how do I build the container image",
    ),
    (
        "test-commands",
        "project",
        "Run the suite with make test; a single file with pytest -k name.",
        "which command runs a single pytest file",
    ),
    (
        "release-process",
        "project",
        "Releases are tagged vX.Y.Z on main after the changelog is updated.",
        "what are the steps to tag a release",
    ),
    (
        "database-choice",
        "project",
        "We chose DuckDB over SQLite for the index: columnar scans and full text.",
        "why did we pick duckdb instead of sqlite",
    ),
    (
        "ci-runner",
        "project",
        "CI runs on the self-hosted runner named hopper; jobs time out after 30 minutes.",
        "what runner does ci use and when do jobs time out",
    ),
    (
        "deploy-freeze",
        "project",
        "No deploys on Fridays; the freeze starts Thursday 18:00 UTC.",
        "can I deploy on friday",
    ),
    (
        "api-versioning",
        "project",
        "The public API is versioned in the URL path, /v2 is current, /v1 sunsets in March.",
        "how is the public api versioned",
    ),
    (
        "logging-format",
        "project",
        "Logs are JSON lines with ts, level, msg and request_id fields.",
        "what format do our logs use",
    ),
    (
        "secrets-storage",
        "project",
        "Secrets live in the vault service under app/prod; never in env files.",
        "where are production secrets stored",
    ),
    (
        "feature-flags",
        "project",
        "Feature flags come from the flags.yaml file, read at start up.",
        "where are feature flags configured",
    ),
    (
        "user-editor",
        "global",
        "The user edits with Neovim and wants diffs, not whole files.",
        "should I show whole files or diffs",
    ),
    (
        "user-tests",
        "global",
        "Use pytest, never unittest; fixtures over setUp methods.",
        "should new tests use unittest or pytest",
    ),
    (
        "user-typing",
        "global",
        "Type hints everywhere; mypy --strict must pass before a commit.",
        "does mypy strict have to pass",
    ),
    (
        "user-commits",
        "global",
        "Commit messages say why, in the imperative, under 72 characters a line.",
        "how should commit messages be written",
    ),
    (
        "user-language",
        "global",
        "Answer in English even when the code comments are in German.",
        "which language should answers be in",
    ),
    (
        "user-review",
        "global",
        "Pull requests under 400 changed lines; split refactors from behaviour changes.",
        "how big may a pull request be",
    ),
)
UNRELATED: tuple[str, ...] = (
    "rename the variable x to count",
    "fix the typo in the docstring",
    "add a blank line at the end of the file",
    "what does this regular expression match",
    "explain this stack trace",
    "make this loop faster",
    "write a haiku about autumn",
    "convert this function to async",
    "sort the imports in main.py",
    "hello",
    "thanks, that works",
    "undo the last change",
    "split this function in two",
    "add a docstring to parse_args",
    "why is this list empty",
    "translate this comment",
)
FLOORS = (0.0, 0.2, 0.25, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75, 1.0)


def prepare(source: Path, target: Path, cwd: Path) -> tuple[Path, str]:
    """A copy of an indexed vault with the benchmark's topics stored in it, and the project
    the hook finds for `cwd`, which holds the project topics (before, they went to a fixed id
    no hook run from `cwd` asked for: the timed prompts never met them)."""
    from vaultmem.vault import Vault

    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.lock", "hooks"))
    vault = Vault(target)
    if not vault.config.index_path.exists():
        vault.reconcile()
    project = str(vault.project(cwd).scope_id)
    for key, scope, text, _ in TOPICS:
        vault.store(key, text, scope=scope, scope_id=project if scope == "project" else None)
    vault.close()
    return target, project


def time_hook(vault: Path, runs: int, cwd: Path, event: str = "session-start") -> dict[str, Any]:
    """Cold `vaultmem hook EVENT` processes: `session-start` as an agent starts it, or `prompt`
    with the labelled prompts in turn (what every message a person sends an agent costs)."""
    prompts = [p for *_, p in TOPICS] + list(UNRELATED)
    argv = [sys.executable, "-m", "vaultmem", "hook", event, "--vault", str(vault)]
    seconds: list[float] = []
    size = 0
    for i in range(runs):
        event_json = {"cwd": str(cwd), "session_id": "bench", "source": "startup"}
        if event == "prompt":  # a session of its own: nothing given before, so hits show
            event_json.update(prompt=prompts[i % len(prompts)], session_id=f"bench-prompt-{i}")
        start = time.perf_counter()
        done = subprocess.run(
            argv, input=json.dumps(event_json), capture_output=True, text=True, check=True
        )
        seconds.append(time.perf_counter() - start)
        size = max(size, len(done.stdout))
        if event == "session-start" and not done.stdout.startswith("<vaultmem-memory>"):
            raise RuntimeError(f"the hook gave no block: {done.stdout!r}")
    return {
        "runs": runs,
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "output_chars": size,
    }


def measure_floor(vault_path: Path, project: str) -> dict[str, Any]:
    from vaultmem.adapters import hook
    from vaultmem.vault import Vault

    vault = Vault(vault_path)
    labelled = [(prompt, key) for key, _, _, prompt in TOPICS] + [(p, None) for p in UNRELATED]
    scored: list[tuple[list[tuple[float, str]], str | None]] = []
    for prompt, expected in labelled:
        terms = hook.prompt_terms(prompt)
        hits = vault.recall(
            prompt, scopes=[f"project:{project}", "global"], limit=hook.PROMPT_LIMIT
        )
        scored.append(
            (
                [(hook.coverage(terms, f"{h.key} {h.title} {h.snippet}"), h.key) for h in hits],
                expected,
            )
        )
    vault.close()
    table = []
    for floor in FLOORS:
        shown = tp = 0
        for hits, expected in scored:
            above = [key for cover, key in hits if cover >= floor]
            shown += len(above)
            tp += expected in above
        precision = tp / shown if shown else 1.0
        recall = tp / len(TOPICS)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        table.append(
            {"floor": floor, "shown": shown, "precision": precision, "recall": recall, "f1": f1}
        )
    best = max(table, key=lambda row: (row["f1"], row["floor"]))
    return {"prompts": len(labelled), "table": table, "best": best, "in_use": hook.RELEVANCE_FLOOR}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, 5 runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--vault", type=Path, help="an indexed vault to copy (default: generated)")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args(argv)
    notes = 1000 if args.quick else 10_000
    runs = 5 if args.quick else args.runs
    source = args.vault or ensure_vault(notes)[0]
    if args.vault:
        from benchmarks.floor import markdown_files

        notes = len(markdown_files(args.vault))
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        vault, project = prepare(source, Path(tmp) / "vault", Path(tmp))
        timing = time_hook(vault, runs, Path(tmp))
        prompt = time_hook(vault, runs, Path(tmp), "prompt")
        floor = measure_floor(vault, project)
    result = {
        "benchmark": "hook",
        "notes": notes,
        "session_start": timing,
        "prompt": prompt,
        "floor": floor,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    for event, t in (("session-start", timing), ("prompt", prompt)):
        print(
            f"hook {event}, cold, {notes} notes: median {t['median_s'] * 1000:.0f} ms "
            f"(min {t['min_s'] * 1000:.0f}, max {t['max_s'] * 1000:.0f}; {t['runs']} runs; "
            f"largest output {t['output_chars']} chars)"
        )
    print(f"prompt relevance floor on {floor['prompts']} labelled prompts:")
    for row in floor["table"]:
        print(
            f"  floor {row['floor']:.2f}: shown {row['shown']:3}, precision "
            f"{row['precision']:.3f}, recall {row['recall']:.3f}, F1 {row['f1']:.3f}"
        )
    print(f"best F1 at floor {floor['best']['floor']:.2f}; in use {floor['in_use']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

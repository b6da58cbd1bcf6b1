"""Where a full build's time goes: phase timers around one in-process `rebuild`.

Wraps the build's steps (survey, worker preparation, identities, each SQL statement of the
write transaction, the close that checkpoints) with wall-clock timers, runs one rebuild of the
vault given, and prints the phases longest first. Nothing in `vaultmem` is changed: the timers
are wrappers installed by this script. Reconcile a *copy* of a shared vault, never the original.

    python -m benchmarks.profile_build /tmp/copy-of-gen-100k [--json]

`--stages N` instead times, in this one process and in CPU seconds, each stage a parse worker
runs for the first N notes (read and hash, parse, resolve, search documents, rows, postings
lines, writing the files) beside mistune's own pass over the same text: what the build costs
outside mistune, per note. It reads the vault and writes only to a temporary folder.

`--worker N` runs the workers' own code (`_Worker.chunk`) over the first N notes in this
process, for an instruction count: `valgrind --tool=callgrind --callgrind-out-file=/dev/null
python -m benchmarks.profile_build <vault> --worker 600`, less the same with `--worker 0`.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TIMES: dict[str, float] = defaultdict(float)
CPU: dict[str, float] = defaultdict(float)
"""Main-process CPU seconds (every thread: DuckDB's too) per phase: steadier than wall time
on a loaded machine."""
COUNTS: dict[str, int] = defaultdict(int)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[name] += time.perf_counter() - start
            CPU[name] += time.process_time() - cpu
            COUNTS[name] += 1

    return wrapper


_WORDS = re.compile(r"\s+")


def _statement(sql: str) -> str:
    """A short name for a statement: its first words, without parameters."""
    return "sql: " + _WORDS.sub(" ", sql.strip())[:70]


class _TimedConnection:
    """A DuckDB connection whose `execute` and `close` are timed, statement by statement."""

    def __init__(self, con: Any) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return self._con.execute(sql, *args)
        finally:
            TIMES[_statement(sql)] += time.perf_counter() - start
            CPU[_statement(sql)] += time.process_time() - cpu
            COUNTS[_statement(sql)] += 1

    def close(self) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            self._con.close()
        finally:
            TIMES["close (checkpoint)"] += time.perf_counter() - start
            CPU["close (checkpoint)"] += time.process_time() - cpu
            COUNTS["close (checkpoint)"] += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def install() -> None:
    """Wrap the build's steps with timers."""
    from vaultmem.index import parallel, preparation, reconcile, transaction
    from vaultmem.storage import index_writes, search_rows, store

    for module, name in (  # each step where the runner (or the transaction) looks it up
        (reconcile, "load_state"),
        (reconcile, "_survey"),
        (preparation, "prepare"),
        (reconcile, "outcomes"),
        (reconcile, "identities"),
        (transaction, "transaction"),
    ):
        setattr(module, name, _timed(f"step: {name.lstrip('_')}", getattr(module, name)))
    transaction.check_subpaths = _timed("step: check subpaths", transaction.check_subpaths)
    for module, names in (
        (index_writes, ("load_staged", "number_notes", "replace_problems", "replace_files")),
        (search_rows, ("build_postings", "load_postings", "recount_terms")),
        (store, ("create_schema",)),
    ):
        for name in names:
            setattr(module, name, _timed(f"call: {name}", getattr(module, name)))
    parallel.prepare_all = _timed("call: prepare_all", parallel.prepare_all)
    original_connect = store.connect

    def connect(path: Path, *, read_only: bool, **kwargs: Any) -> Any:
        con = original_connect(path, read_only=read_only, **kwargs)
        return con if read_only else _TimedConnection(con)

    store.connect = connect


def profile(vault: Path) -> dict[str, Any]:
    install()
    from vaultmem.vault import Vault

    start = time.perf_counter()
    report = Vault(vault).reconcile(rebuild=True)
    wall = time.perf_counter() - start
    phases = sorted(TIMES.items(), key=lambda kv: -kv[1])
    return {
        "wall_s": wall,
        # the workers' share and the main process's serial tail after them (the transaction)
        "pool_share": TIMES["call: prepare_all"] / wall,
        "transaction_share": TIMES["step: transaction"] / wall,
        "notes": report.notes,
        "main_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "phases": [
            {"name": k, "seconds": v, "cpu_s": CPU[k], "calls": COUNTS[k]} for k, v in phases
        ],
    }


def stages(vault: Path, limit: int) -> dict[str, Any]:
    """CPU seconds per worker stage over the first `limit` notes, one process, no profiler."""
    import tempfile

    import mistune
    from mistune import helpers

    from vaultmem.core.config import load_config
    from vaultmem.core.documents import note_documents, postings_lines
    from vaultmem.core.secrets import compile_patterns, redact_value
    from vaultmem.files.scan import content_hash, read_note_fingerprinted, scan_vault
    from vaultmem.note import markdown as ours
    from vaultmem.note.links import LinkResolver, resolve_link
    from vaultmem.note.parse import parse_note, redacted_note
    from vaultmem.storage.rows import NoteRecord, StagedRows

    config = load_config(vault)
    patterns = compile_patterns(config.secret_patterns)
    scan = scan_vault(config)
    notes = sorted(scan.notes, key=lambda f: f.path)[:limit]
    resolver = LinkResolver(tuple(sorted(scan.files)))
    markdown = mistune.create_markdown(renderer=None)
    cpu: dict[str, float] = defaultdict(float)
    rows, lines = StagedRows(), list[str]()
    clock = time.process_time
    folders: dict[str, str | None] = {}  # as a worker's chunk: each folder resolved once
    for number, fp in enumerate(notes):
        start = clock()
        got = read_note_fingerprinted(config, fp.path, folders)
        if not isinstance(got, tuple):
            continue
        data, read = got
        digest = content_hash(data)
        cpu["read and hash"] += (t := clock()) - start
        # mistune's pass as mistune ships it: without our link destination scanner
        helpers._parse_link_href = ours._plain_link_href
        markdown(data.decode("utf-8", "replace"))
        helpers._parse_link_href = ours._link_href
        cpu["mistune's own pass (beside)"] += (start := clock()) - t
        parsed = parse_note(fp.path, data, max_bytes=config.max_note_bytes)
        cpu["parse_note"] += (t := clock()) - start
        resolutions = [resolve_link(link, fp.path, resolver, _none) for link in parsed.note.links]
        cpu["resolve links"] += (start := clock()) - t
        note = redacted_note(parsed.note, patterns)
        redact_value(parsed.problems, patterns)
        cpu["redact"] += (t := clock()) - start
        start = t
        documents = note_documents(note, config.search_language)
        cpu["search documents (tokenizer)"] += (t := clock()) - start
        scope = config.scope_of(fp.path) or ("global", None)
        record = NoteRecord(
            note, number, scope[0], scope[1], False, read.size, read.mtime_ns, digest, None,
            resolutions, documents,
        )  # fmt: skip
        rows.add_note(record)
        cpu["rows"] += (start := clock()) - t
        lines.extend(postings_lines(number, documents))
        cpu["postings lines"] += clock() - start
    with tempfile.TemporaryDirectory(prefix="vaultmem-stages-") as folder:
        start = clock()
        rows.write(Path(folder), "chunk")
        with open(Path(folder) / "postings.tsv", "w", encoding="utf-8") as handle:
            handle.writelines(lines)
        cpu["write files"] += clock() - start
    worker = sum(v for k, v in cpu.items() if "beside" not in k)
    return {
        "notes": len(notes),
        "worker_cpu_s": worker,
        "ms_per_note": 1000 * worker / max(len(notes), 1),
        "stages": [{"name": k, "cpu_s": v, "share": v / worker} for k, v in cpu.items()],
    }


def worker(vault: Path, limit: int) -> dict[str, Any]:
    """The parse workers' own code path (`_Worker.chunk`, chunked as a pool would) over the first
    `limit` notes in this process: what to run under `valgrind --tool=callgrind`, once with N
    notes and once with 0 (the set-up alone: scan, file list, resolver, imports) to subtract."""
    import tempfile

    from vaultmem.core.config import load_config
    from vaultmem.files.scan import scan_vault
    from vaultmem.index.parallel import Context, Job, _Worker, chunk_jobs

    config = load_config(vault)
    scan = scan_vault(config)
    notes = sorted(scan.notes, key=lambda f: f.path)[:limit]
    with tempfile.TemporaryDirectory(prefix="vaultmem-worker-") as folder:
        prepare = _Worker(Context(config, tuple(sorted(scan.files)), folder))
        jobs = [Job(i, fp.path, fp.size, None) for i, fp in enumerate(notes)]
        start = time.process_time()
        for index, chunk in enumerate(chunk_jobs(jobs)):
            prepare.chunk(index, chunk)
        cpu = time.process_time() - start
    return {"notes": len(notes), "worker_cpu_s": cpu}


def _none(path: str) -> None:
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--stages", type=int, help="time a worker's stages over N notes")
    parser.add_argument("--worker", type=int, help="run the workers' code over N notes")
    args = parser.parse_args(argv)
    if args.worker is not None:
        out = worker(args.vault, args.worker)
        print(
            json.dumps(out)
            if args.json
            else f"{out['notes']} notes: {out['worker_cpu_s']:.2f} s CPU"
        )
        return 0
    if args.stages:
        out = stages(args.vault, args.stages)
        if args.json:
            print(json.dumps(out))
            return 0
        print(
            f"worker stages over {out['notes']} notes, one process: {out['worker_cpu_s']:.2f} s "
            f"CPU ({out['ms_per_note']:.2f} ms a note)"
        )
        for stage in out["stages"]:
            print(f"  {stage['cpu_s']:7.2f} s cpu {100 * stage['share']:5.1f}%  {stage['name']}")
        return 0
    result = profile(args.vault)
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"rebuild of {result['notes']} notes: {result['wall_s']:.1f} s wall, "
        f"main process peak {result['main_peak_rss_mb']:.0f} MB; the pool "
        f"{100 * result['pool_share']:.0f}% of it, the write transaction after it "
        f"{100 * result['transaction_share']:.0f}%"
    )
    for phase in result["phases"]:
        if phase["seconds"] >= 0.01:
            print(
                f"  {phase['seconds']:8.2f} s wall {phase['cpu_s']:8.2f} s cpu "
                f"x{phase['calls']:<4} {phase['name']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The preparing pipeline (`index.parallel`): what a run reads and writes, not how fast."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import vaultmem.index.parallel as parallel
from tests.index.test_reconcile import assert_equals_rebuild, query, write
from vaultmem.core.config import Config
from vaultmem.index.reconcile import reconcile
from vaultmem.vault import Vault


@pytest.fixture
def vault(tmp_path: Path) -> Config:
    root = tmp_path / "vault"
    root.mkdir()
    return Vault.init(root).config


@pytest.fixture
def jobs_seen(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The paths of every batch of jobs a reconcile hands to `prepare_all`."""
    seen: list[list[str]] = []
    real = parallel.prepare_all

    def recording(jobs: Any, context: Any, **kwargs: Any) -> Any:
        seen.append([job.path for job in jobs])
        return real(jobs, context, **kwargs)

    # reconcile imports it when a note must be prepared (not at import: a no-op never does)
    monkeypatch.setattr(parallel, "prepare_all", recording)
    return seen


def test_a_no_op_reads_no_note_and_writes_nothing(vault: Config, jobs_seen: list[Any]) -> None:
    for i in range(5):
        write(vault.root, f"N{i}.md", f"# N{i}\n\n[[N{(i + 1) % 5}]]\n")
    reconcile(vault)
    runs = query(vault, "SELECT count(*) FROM reconcile_runs")
    index = vault.index_path
    before = (index.stat().st_mtime_ns, index.stat().st_size)
    report = reconcile(vault)
    assert (report.unchanged, report.added, report.changed) == (5, 0, 0)
    assert jobs_seen == [[f"N{i}.md" for i in range(5)]]  # only the first run prepared notes
    assert (index.stat().st_mtime_ns, index.stat().st_size) == before
    assert query(vault, "SELECT count(*) FROM reconcile_runs") == runs


def test_one_edit_prepares_that_note_only(vault: Config, jobs_seen: list[Any]) -> None:
    for i in range(20):
        write(vault.root, f"N{i}.md", f"# N{i}\n\n[[N{(i + 1) % 20}#N{(i + 1) % 20}]]\n")
    reconcile(vault)
    write(vault.root, "N7.md", "# N7\n\n## New heading\n\n[[N8]]\n")
    report = reconcile(vault)
    assert jobs_seen[1:] == [["N7.md"]]
    assert (report.changed, report.unchanged) == (1, 19)
    assert_equals_rebuild(vault)


def test_a_changed_scan_problem_is_not_a_no_op(vault: Config) -> None:
    write(vault.root, "A.md", "# A\n")
    reconcile(vault)
    os.mkfifo(vault.root / "F.md")
    reconcile(vault)
    assert query(vault, "SELECT path, code FROM problems") == [("F.md", "file_unreadable")]
    os.unlink(vault.root / "F.md")
    reconcile(vault)
    assert query(vault, "SELECT count(*) FROM problems") == [(0,)]


def test_chunks_cover_every_job_in_order() -> None:
    jobs = [parallel.Job(i, f"n{i}.md", size, None) for i, size in enumerate([10, 500, 10, 10])]
    chunks = parallel.chunk_jobs(jobs, chunk_bytes=400)
    assert [[j.number for j in c] for c in chunks] == [[0, 1], [2, 3]]


@pytest.mark.slow
def test_the_pool_and_the_calling_process_stage_the_same_rows(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault above the pool threshold, built by workers and again in one process."""
    body = "Some words about storage, latency and [[Other]] notes. " * 40
    for i in range(800):
        write(vault.root, f"F{i % 7}/N{i}.md", f"# N{i}\n\n## Part\n\n{body}\n[[N{i + 1}#Part]]\n")
    assert sum(p.stat().st_size for p in vault.root.rglob("*.md")) > parallel.PARALLEL_MIN_BYTES
    monkeypatch.setattr(parallel, "worker_count", lambda: 2)
    reconcile(vault)
    pooled = assert_equals_rebuild(vault)  # the rebuild also runs in the pool
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 10**12)
    reconcile(vault, rebuild=True)
    alone = assert_equals_rebuild(vault)
    assert pooled == alone
    assert query(vault, "SELECT count(*) FROM links WHERE subpath_found") == [(799,)]


def test_a_pool_that_breaks_after_some_chunks_leaves_no_row_twice(
    vault: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's chunks append to its files (staged rows and postings), so chunks it
    finished are in them whether or not the pool reported them before it broke: every chunk is
    prepared again in this process, and the build equals one from nothing."""
    from concurrent.futures.process import BrokenProcessPool

    body = "Some words about storage, latency and [[Other]] notes. " * 40
    for i in range(900):  # ~2 MB: the batch's end in quarter chunks, many per worker
        write(vault.root, f"F{i % 5}/N{i}.md", f"# N{i}\n\n## Part\n\n{body}\n")
    monkeypatch.setattr(parallel, "worker_count", lambda: 2)
    real = parallel._prepare_in_pool
    broke: list[int] = []

    def breaking(chunks: Any, context: Any, workers: int, record: Any) -> None:
        def record_then_break(index: int, chunk: Any) -> None:
            record(index, chunk)
            if index == 2:
                broke.append(len(chunks))
                raise BrokenProcessPool("a worker died")

        real(chunks, context, workers, record_then_break)

    monkeypatch.setattr(parallel, "_prepare_in_pool", breaking)
    reconcile(vault)
    assert broke and broke[0] > 6, broke
    monkeypatch.setattr(parallel, "_prepare_in_pool", real)
    assert_equals_rebuild(vault)


def test_staged_rows_keep_their_types(vault: Config) -> None:
    """Rows travel as JSON column lists: frontmatter must land as a JSON object, not a JSON string,
    and NULL, booleans and text with tabs, quotes and newlines must survive the trip."""
    write(
        vault.root,
        "A.md",
        '---\ntitle: "Tab\\there"\ntags: [x]\nflag: true\nnone: null\n---\n# A\n\n'
        'Text with "quotes", a tab\tand\nnew lines.\n\n![[missing.png]]\n',
    )
    reconcile(vault)
    assert query(vault, "SELECT json_type(frontmatter), title FROM notes") == [
        ("OBJECT", "Tab\there")
    ]
    assert query(vault, "SELECT frontmatter->>'$.flag', frontmatter->'$.none' FROM notes") == [
        ("true", "null")
    ]
    assert query(vault, "SELECT embed, target_path, target_id, subpath_found FROM links") == [
        (True, None, None, None)
    ]
    texts = [t for (t,) in query(vault, "SELECT text FROM documents ORDER BY ord")]
    assert any('"quotes", a tab\tand\nnew lines.' in t for t in texts)


def test_a_staged_file_beyond_duckdbs_default_json_object_size_loads(vault: Config) -> None:
    """A chunk's file is one JSON object, which DuckDB must read whole: a note of control
    characters (each escaped to six bytes) makes a documents file over the 16 MiB default."""
    text = "# Big\n\nstart " + "\x01" * 3_000_000 + " end\n"
    write(vault.root, "Big.md", text)
    write(vault.root, "Small.md", "# Small\n\n[[Big]]\n")
    reconcile(vault)
    (staged_text,) = query(vault, "SELECT max(length(text)) FROM documents")[0]
    assert staged_text > 3_000_000
    assert query(vault, "SELECT count(*) FROM links WHERE target_path = 'Big.md'") == [(1,)]


def test_a_fresh_build_stores_postings_in_term_order(vault: Config) -> None:
    """Zone maps skip a row group only when postings are stored sorted by term."""
    for i in range(40):
        write(vault.root, f"N{i}.md", f"# N{i}\n\nzebra{i} apple{40 - i} mango{i % 3} words\n")
    reconcile(vault)
    stored = [t for (t,) in query(vault, "SELECT term FROM postings")]  # storage order
    assert len(stored) > 100
    assert stored == sorted(stored)


def test_a_pooled_batch_ends_in_quarter_chunks() -> None:
    """The last chunks are short, so that the workers finish close together."""
    jobs = [parallel.Job(i, f"n{i}.md", 100, None) for i in range(40)]  # 4,000 bytes
    alone = parallel.chunk_jobs(jobs, chunk_bytes=400)
    pooled = parallel.chunk_jobs(jobs, chunk_bytes=400, workers=2)
    assert [len(c) for c in alone] == [4] * 10
    # the last TAPER_CHUNKS x 2 workers x 400 bytes (1,600) go in chunks of 100 bytes
    assert [len(c) for c in pooled] == [4] * 6 + [1] * 16
    assert [j for c in pooled for j in c] == jobs


_WORKER_SCRIPT = """
import sys
from concurrent.futures import ProcessPoolExecutor

from vaultmem.index.parallel import worker_context


def where() -> str:
    return sys.modules["vaultmem.index.parallel"].__file__


if __name__ == "__main__":
    with ProcessPoolExecutor(2, mp_context=worker_context(["vaultmem.index.parallel"])) as pool:
        print(pool.submit(where).result())
"""


def test_workers_never_import_a_vaultmem_of_the_current_folder(tmp_path: Path) -> None:
    """Python 3.11's forkserver imports its preload with the current folder first on its
    path: run from inside a folder holding a `vaultmem/` package (another checkout, a hostile
    download), that package's code ran in the workers' server. A real process, started from
    such a folder, whose worker must run this tree's module and no code of the folder."""
    import subprocess
    import sys

    folder = tmp_path / "elsewhere"
    (folder / "vaultmem").mkdir(parents=True)
    marker = tmp_path / "imported"
    (folder / "vaultmem" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "raise ImportError('not vaultmem')\n",
        encoding="utf-8",
    )
    script = tmp_path / "pool.py"
    script.write_text(_WORKER_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(parallel.__file__)
    assert not marker.exists(), "the folder's vaultmem/ ran in the workers' server"

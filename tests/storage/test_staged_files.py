"""Staged rows cut into parts and loaded a bounded group a statement (`storage.staged_files`):
the same rows as one statement over every file, within a memory cap one statement exceeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import dump_index
from vaultmem.storage import index_writes, search_upgrade, staged_files, store
from vaultmem.storage.rows import StagedRows
from vaultmem.vault import Vault


def _links(note: int, count: int) -> list[tuple[object, ...]]:
    """`count` staged link rows of note number `note` (the 14 staged columns of `links`)."""
    return [
        (note, i, "wikilink", None, f"[[Target {i} of {note}]]", f"Target {i} of {note}", "",
         None, False, 3, f"target {i} of {note}", None, None, None)
        for i in range(count)
    ]  # fmt: skip


def _objects(path: Path) -> list[dict[str, list[object]]]:
    """The JSON objects a staged file holds, one after the other."""
    text, decoder, at, out = path.read_text("utf-8"), json.JSONDecoder(), 0, []
    while at < len(text):
        obj, at = decoder.raw_decode(text, at)
        out.append(obj)
    return out


def test_a_process_continues_its_file_in_a_new_part_once_it_is_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staged_files, "PART_BYTES", 10_000)
    written = []
    for chunk in range(6):
        rows = StagedRows()
        rows.rows["links"] += _links(chunk, 40)  # ~4 KB an object
        written.append(rows.write(tmp_path, "chunk-run-1")["links"][0])
    names = sorted({p.name for p in written})
    assert names == [
        "chunk-run-1.1.links.json",
        "chunk-run-1.links.json",
    ], names  # parts of 3 objects: the third written while the file was under 10,000 bytes
    assert written == sorted(written, key=lambda p: (p.name != "chunk-run-1.links.json", p.name))
    # every object whole, in the order written, each in one part
    notes = [obj["source_id"][0] for p in dict.fromkeys(written) for obj in _objects(p)]
    assert notes == list(range(6))


def test_statement_groups_keep_the_order_and_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staged_files, "STATEMENT_BYTES", 100)
    paths = []
    for i, size in enumerate((40, 40, 30, 150, 10, 100)):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_bytes(b"x" * size)
    groups = staged_files.statement_groups([str(p) for p in paths])
    assert [[Path(p).name for p in g] for g in groups] == [
        ["0.json", "1.json"],  # 80: the next would make 110
        ["2.json"],
        ["3.json"],  # larger than a statement: read alone
        ["4.json"],
        ["5.json"],
    ]
    assert staged_files.statement_groups([]) == []


def test_links_past_what_one_statement_can_hold_load_in_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """26 MB of staged links under a 96 MiB cap: one statement over them all fails with
    DuckDB's out-of-memory error (as 154 MB did under the write's 512 MiB: a build of 5,000
    notes of 300 links each), parts of 1 MB read 2 MB a statement load every row."""
    monkeypatch.setattr(staged_files, "PART_BYTES", 1 << 20)
    monkeypatch.setattr(staged_files, "STATEMENT_BYTES", 2 << 20)
    staging = tmp_path / "staging"
    staging.mkdir()
    notes = 200
    for first in range(0, notes, 20):
        rows = StagedRows()
        for note in range(first, first + 20):
            rows.rows["links"] += _links(note, 1000)
        rows.write(staging, "chunk-run-1")
    paths = sorted(staging.glob("*.links.json"))
    assert sum(p.stat().st_size for p in paths) > 24 << 20 and len(paths) > 5
    con = store.connect(tmp_path / "index.duckdb", read_only=False)
    try:
        store.create_schema(con, {})
        index_writes.number_notes(con, [(n, f"id{n}") for n in range(notes)])
        index_writes.bound_memory(con, 96, staging / "spill")
        index_writes.load_staged(con, {"links": paths})
        assert con.execute(
            "SELECT count(*), count(DISTINCT source_id), max(ord) FROM links"
        ).fetchone() == (notes * 1000, notes, 999)
    finally:
        con.close()


def _vault_of_several_chunks(root: Path) -> Path:
    """~1 MB of Markdown: parsed in this process (under `parallel.PARALLEL_MIN_BYTES`, so the
    sizes a test sets are the ones staging and load use), in three chunks."""
    root.mkdir()
    Vault.init(root)
    for i in range(300):
        links = " ".join(f"[[Note {(i * 7 + k) % 300}#Part {k % 3}]]" for k in range(12))
        parts = "\n\n".join(f"## Part {k}\n\n{f'words about note {i} ' * 30}" for k in range(3))
        (root / f"Note {i}.md").write_text(
            f"---\naliases: [N{i}]\ntags: [t{i % 9}, area/x{i % 4}]\n---\n# Note {i}\n\n"
            f"{links} #inline{i % 5}\n\n{parts}\n",
            "utf-8",
        )
    return root


def _built_and_recorded(
    root: Path, monkeypatch: pytest.MonkeyPatch, loader: object
) -> tuple[Vault, dict[str, list[tuple[object, ...]]], list[list[str]]]:
    """A vault of several chunks built once and dumped, and the groups `loader`'s
    `statement_groups` hands out from now on, recorded."""
    vault = Vault(_vault_of_several_chunks(root))
    vault.reconcile(rebuild=True)
    statements: list[list[str]] = []

    def recorded(paths: list[str]) -> list[list[str]]:
        groups = staged_files.statement_groups(paths)
        statements.extend(groups)
        return groups

    monkeypatch.setattr(loader, "statement_groups", recorded)
    return vault, dump_index(vault.config.index_path), statements


def test_a_build_loaded_in_many_statements_equals_one_loaded_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, whole, statements = _built_and_recorded(tmp_path / "vault", monkeypatch, index_writes)
    monkeypatch.setattr(staged_files, "PART_BYTES", 1)  # every object a part of its own
    monkeypatch.setattr(staged_files, "STATEMENT_BYTES", 1)  # every part a statement
    vault.reconcile(rebuild=True)
    assert dump_index(vault.config.index_path) == whole
    assert len(statements) > 7 and all(len(group) == 1 for group in statements)


def test_an_upgrade_loads_its_documents_in_many_statements_as_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tokenizer-only upgrade reads its cut documents (a file a chunk) a group a statement,
    into a table of their own that is then joined to the index's sections once."""
    vault, whole, statements = _built_and_recorded(tmp_path / "vault", monkeypatch, search_upgrade)
    monkeypatch.setattr(staged_files, "STATEMENT_BYTES", 1)
    con = store.connect(vault.config.index_path, read_only=False)
    try:
        con.execute("UPDATE meta SET value = '0-english' WHERE key = 'tokenizer_version'")
    finally:
        con.close()
    report = vault.reconcile()
    assert any("no note was read" in w for w in report.warnings), report.warnings
    assert dump_index(vault.config.index_path) == whole
    assert len(statements) > 1 and all(len(group) == 1 for group in statements)

"""A build from nothing loads its postings its own way (`search_rows.build_postings`: straight
from the workers' files, boilerplate subtracted in the INSERT); an incremental run stages them
(`load_postings`). Both must give the same rows, and the fresh build's physical order must
stay sorted by term (search's zone maps rely on it). Real temp vaults, real DuckDB files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import count_postings_runs, dump_index
from vaultmem.core.documents import BOILERPLATE_NOTES
from vaultmem.index import early_cut
from vaultmem.storage import search_rows, store
from vaultmem.vault import Vault

# `page` occurs in the footer and in the text above it (its posting loses the footer's share);
# `discord` and `contribute` only in the footer (their postings go).
FOOTER = "Contribute on GitHub · Edit this page · Join our Discord"


def note(i: int) -> str:
    return (
        f"# Topic {i}\n\nA page about subject{i}, page after page.\n\n"
        f"## Links\n\nSee [[Topic {(i + 1) % 30}]], the next page.\n\n---\n{FOOTER}\n"
    )


def write_notes(root: Path, numbers: range) -> None:
    for i in numbers:
        (root / f"Topic {i}.md").write_text(note(i), encoding="utf-8")
    (root / "Editing.md").write_text("# Editing\n\nEdit a page, then save.\n", encoding="utf-8")


def rebuilt(root: Path, more: dict[str, str] | None = None) -> Vault:
    """A new vault at `root` of the 30 topics (and `more`: name -> text), built from nothing."""
    root.mkdir()
    write_notes(root, range(30))
    for name, text in (more or {}).items():
        (root / name).write_text(text, encoding="utf-8")
    vault = Vault.init(root)
    vault.reconcile(rebuild=True)
    return vault


def test_a_fresh_build_equals_the_staged_incremental_load(tmp_path: Path) -> None:
    built = tmp_path / "built"
    built.mkdir()
    write_notes(built, range(30))
    fresh = Vault.init(built)
    fresh.reconcile(rebuild=True)
    # The same notes loaded incrementally, in a batch large enough to take the SQL filter
    # (`FEW_STAGED_NOTES`), onto an index built from one note.
    grown = tmp_path / "grown"
    grown.mkdir()
    write_notes(grown, range(1))
    vault = Vault.init(grown)
    vault.reconcile()
    write_notes(grown, range(30))
    vault.reconcile()
    ours, theirs = dump_index(fresh.config.index_path), dump_index(vault.config.index_path)
    for table in ("postings", "terms", "search_stats", "boilerplate_lines", "documents"):
        assert ours[table] == theirs[table], table
    with store.reading(fresh.config.index_path) as con:
        # the footer, and the `## Links` heading over a section of every topic
        assert con.execute("SELECT count(*) FROM boilerplate_lines").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM postings WHERE term = 'discord'").fetchone() == (
            0,
        )
        # `page` in a `Links` section: once above the footer, once in it (taken out again)
        assert con.execute(
            "SELECT DISTINCT p.tf FROM postings p JOIN notes n USING (note_key) "
            "JOIN documents d ON d.note_id = n.id AND d.ord = p.ord "
            "WHERE p.term = 'page' AND d.heading = 'Links'"
        ).fetchall() == [(1.0,)]
        unsorted = con.execute(
            "SELECT count(*) FROM (SELECT term < lag(term) OVER (ORDER BY rowid) AS down "
            "FROM postings) WHERE down"
        ).fetchone()
    assert unsorted == (0,)


def test_the_fresh_sections_query_finds_what_the_staged_query_finds(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    write_notes(root, range(BOILERPLATE_NOTES + 3))
    vault = Vault.init(root)
    vault.reconcile()
    con = store.connect(vault.config.index_path, read_only=False)
    try:
        con.execute(
            "CREATE TEMP TABLE note_numbers AS SELECT (row_number() OVER (ORDER BY path))::INTEGER"
            " AS number, id AS note_id FROM notes"
        )
        lines = [k for (k,) in con.execute("SELECT line_key FROM boilerplate_lines").fetchall()]
        assert lines
        found = con.execute(search_rows._FRESH_SECTIONS).fetchall()
        expected = con.execute(search_rows._STAGED_SECTIONS, [sorted(lines)]).fetchall()
    finally:
        con.close()
    assert len(found) == BOILERPLATE_NOTES + 3 and sorted(found) == sorted(expected)


WORDS = "apple 42nd zebra éclair яблоко 東京 서울 ひらがな mango quartz umbrella Über _under"


def test_a_build_sorted_bucket_by_bucket_equals_one_sorted_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large build writes its postings by term bucket and sorts them bucket by bucket
    (`search_rows.postings_runs`); the table must be the one a single sort gives, row for row
    and in the same physical order (sorted by term), whatever script a term starts with."""
    from vaultmem.index import parallel

    runs = count_postings_runs(monkeypatch)
    dumps = []
    for name, bucket_from in (("once", 10**12), ("bucketed", 0)):
        monkeypatch.setattr(parallel, "BUCKET_POSTINGS_BYTES", bucket_from)
        words = {f"Word {i}.md": f"# {w}\n\n{w} and {WORDS}\n" for i, w in enumerate(WORDS.split())}
        vault = rebuilt(tmp_path / name, words)
        dumps.append(dump_index(vault.config.index_path))
        with store.reading(vault.config.index_path) as con:
            in_order = con.execute(
                "SELECT list(term ORDER BY rowid) = list(term ORDER BY term) FROM postings"
            ).fetchone()
        assert in_order == (True,), name
    assert runs[0] == 1 and runs[1] > 5, runs
    for table in ("postings", "terms", "search_stats", "boilerplate_lines", "documents"):
        assert dumps[0][table] == dumps[1][table], table


def test_boilerplate_weights_cut_in_a_pool_equal_those_cut_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build with many sections holding boilerplate cuts their weights in workers, each a
    contiguous part (`parallel.cut_boilerplate`); the tables must be the ones a cut in this
    process gives, whatever the parts (a section lost or cut twice leaves a footer's words in
    its postings or takes them out twice)."""
    from vaultmem.index import parallel

    cuts: list[int] = []
    real_cut = parallel.cut_boilerplate

    def counted_cut(sections, lines, language, folder):  # type: ignore[no-untyped-def]
        paths = real_cut(sections, lines, language, folder)
        cuts.append(sum(1 for p in paths if p.stat().st_size))
        return paths

    monkeypatch.setattr(parallel, "cut_boilerplate", counted_cut)
    monkeypatch.setattr(parallel, "CUT_PART_SECTIONS", 7)  # several parts per worker
    monkeypatch.setattr(early_cut.EarlyCut, "cut", lambda self, notes, folder, stem: ())
    dumps = []
    for name, cut_from in (("here", 10**9), ("pool", 1)):
        monkeypatch.setattr(search_rows, "CUT_APART_SECTIONS", cut_from)
        dumps.append(dump_index(rebuilt(tmp_path / name).config.index_path))
    assert len(cuts) == 1 and cuts[0] > parallel.worker_count(), "parts in flight, one build"
    for table in ("postings", "terms", "search_stats", "boilerplate_lines", "documents"):
        assert dumps[0][table] == dumps[1][table], table
    assert dumps[0]["boilerplate_lines"], "the notes' footer is boilerplate"


def test_staged_rows_probed_by_their_files_load_as_under_duckdbs_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large table's staged files are the join's probe side (`store.build_side_as_written`);
    a small one keeps DuckDB's plan. Every table loaded either way gives the same rows, the
    links' `target_id` (a LEFT JOIN to the notes) included."""
    from vaultmem.storage import index_writes

    more = {"Other.md": "# Other\n\n[[Topic 3#Links]] [[Nowhere]] [[Editing]]\n"}
    monkeypatch.setattr(index_writes, "_PARALLEL_LOAD_BYTES", 0)  # every table probed so
    vault = rebuilt(tmp_path / "vault", more)
    probed = dump_index(vault.config.index_path)
    monkeypatch.setattr(index_writes, "_PARALLEL_LOAD_BYTES", 2**62)  # none
    vault.reconcile(rebuild=True)
    assert probed == dump_index(vault.config.index_path)
    assert any(row[-2] is not None for row in probed["links"])  # resolved links carry their id


def _sections_cut_by_the_load(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many sections the load cut itself (the rest the workers cut early), added to the
    list's last number: append a 0 before each build."""
    counts: list[int] = []
    real = search_rows.boilerplate_tsv_lines

    def counted(sections, lines, language):  # type: ignore[no-untyped-def]
        sections = list(sections)
        counts[-1] += len(sections)
        return real(sections, lines, language)

    monkeypatch.setattr(search_rows, "boilerplate_tsv_lines", counted)
    return counts


def test_boilerplate_cut_early_by_the_workers_is_the_loads_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a build from nothing the workers cut the boilerplate lines their own notes already
    show (`index.early_cut`): all of them when one chunk holds every note, the later chunks'
    when each note is a chunk of its own (the first notes were parsed before the footer was
    known, and the first seven of the last notes before their second footer line was: the
    load cuts those). The tables must be a build's without the early cut."""
    from vaultmem.index import parallel

    signed = "Signed by the editors of the zeppelin wiki"
    more = {
        f"Zeppelin {i}.md": f"# Zeppelin {i}\n\nAbout zeppelin {i}.\n\n---\n{FOOTER}\n{signed}\n"
        for i in range(BOILERPLATE_NOTES)
    }

    cut_here = _sections_cut_by_the_load(monkeypatch)
    real_cut, real_chunks = early_cut.EarlyCut.cut, parallel.chunk_jobs
    dumps = []
    for name, early, chunk_bytes in (
        ("late", False, parallel.CHUNK_BYTES),
        ("early", True, parallel.CHUNK_BYTES),
        ("some", True, 1),
    ):
        monkeypatch.setattr(
            parallel, "chunk_jobs", lambda jobs, workers=1, b=chunk_bytes: real_chunks(jobs, b)
        )
        monkeypatch.setattr(
            early_cut.EarlyCut, "cut", real_cut if early else lambda self, notes, f, s: ()
        )
        cut_here.append(0)
        dumps.append(dump_index(rebuilt(tmp_path / name, more).config.index_path))
    assert len(dumps[0]["boilerplate_lines"]) == 3, "the footer, `## Links` and the signature"
    assert cut_here == [30 + BOILERPLATE_NOTES, 0, 2 * (BOILERPLATE_NOTES - 1)], cut_here
    for table in ("postings", "terms", "search_stats", "boilerplate_lines", "documents"):
        assert dumps[1][table] == dumps[0][table], table
        assert dumps[2][table] == dumps[0][table], table


def test_a_line_a_worker_took_for_boilerplate_wrongly_is_cut_again_by_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should a worker's count ever exceed the vault's (it must not: each note is counted
    by one worker, once), the load takes no section whose early cut is not exactly its
    boilerplate lines: here the workers take a line of three notes for boilerplate."""
    cut_here = _sections_cut_by_the_load(monkeypatch)
    shared = "A line three notes share, with its own words: quince, walnut."
    more = {f"Extra {i}.md": f"# Extra {i}\n\n{shared}\n\n---\n{FOOTER}\n" for i in range(3)}
    real_cut = early_cut.EarlyCut.cut
    monkeypatch.setattr(early_cut.EarlyCut, "cut", lambda self, notes, f, s: ())
    cut_here.append(0)
    want = dump_index(rebuilt(tmp_path / "want", more).config.index_path)
    monkeypatch.setattr(early_cut.EarlyCut, "cut", real_cut)
    monkeypatch.setattr(early_cut, "BOILERPLATE_NOTES", 2)
    cut_here.append(0)
    got = dump_index(rebuilt(tmp_path / "got", more).config.index_path)
    # the load cuts again the three sections holding the shared line and the footer
    assert cut_here == [33, 3], cut_here
    assert any(row[0] == "quinc" for row in got["postings"]), "the line is ordinary text"
    for table in ("postings", "terms", "search_stats", "boilerplate_lines", "documents"):
        assert got[table] == want[table], table

"""Boilerplate lines (a body line in at least `BOILERPLATE_NOTES` notes) give no postings.

Real temp vaults, real DuckDB files: the footer's words stop matching and stop inflating df,
a line crossing the threshold either way re-scores the sections holding it, and after any
sequence of edits the index equals a rebuild.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.core import documents
from vaultmem.core.documents import BOILERPLATE_NOTES, line_keys, section_postings
from vaultmem.storage import search_rows, store
from vaultmem.vault import Vault

FOOTER = "Contribute on GitHub · Edit this page · Join our Discord"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_vault(root: Path, notes: dict[str, str]) -> Vault:
    root.mkdir(parents=True, exist_ok=True)
    vault = Vault.init(root)
    for rel, text in notes.items():
        write(root, rel, text)
    vault.reconcile()
    return vault


def rows(vault: Vault, sql: str, *params: object) -> list[tuple[object, ...]]:
    with store.reading(vault.config.index_path) as con:
        return [tuple(r) for r in con.execute(sql, list(params)).fetchall()]


def footer_vault(root: Path, with_footer: int) -> Vault:
    notes = {
        f"Topic {i}.md": f"# Topic {i}\n\nAbout subject{i} and its details.\n\n---\n{FOOTER}\n"
        for i in range(with_footer)
    }
    notes["Editing pages.md"] = (
        "# Editing pages\n\nHow to edit a page: open it, edit the text, save the page.\n"
    )
    notes["Git basics.md"] = "# Git basics\n\nCommit, branch and merge with git.\n"
    return make_vault(root, notes)


def test_a_footer_in_many_notes_gives_no_postings(tmp_path: Path) -> None:
    vault = footer_vault(tmp_path / "v", BOILERPLATE_NOTES + 2)
    (key,) = line_keys(FOOTER)
    assert rows(vault, "SELECT line_key, notes FROM boilerplate_lines") == [
        (key, BOILERPLATE_NOTES + 2)
    ]
    # `discord` occurs only in the footer: no posting at all; `edit` only in the real note.
    assert rows(vault, "SELECT count(*) FROM postings WHERE term = 'discord'") == [(0,)]
    edit_notes = "SELECT count(DISTINCT note_key) FROM postings WHERE term = 'edit'"
    assert rows(vault, edit_notes) == [(1,)]
    assert vault.search("edit page")[0].path == "Editing pages.md"
    # The footer still counts in the section's length and shows in its text.
    (length,) = rows(vault, "SELECT max(length) FROM documents WHERE text LIKE '%Discord%'")
    assert length[0] is not None and int(str(length[0])) > 5


def test_below_the_threshold_a_repeated_line_is_ordinary_text(tmp_path: Path) -> None:
    vault = footer_vault(tmp_path / "v", BOILERPLATE_NOTES - 1)
    assert rows(vault, "SELECT count(*) FROM boilerplate_lines") == [(0,)]
    assert rows(vault, "SELECT df FROM terms WHERE term = 'discord'") == [(BOILERPLATE_NOTES - 1,)]


def test_crossing_the_threshold_rescores_the_other_notes_both_ways(tmp_path: Path) -> None:
    vault = footer_vault(tmp_path / "v", BOILERPLATE_NOTES - 1)
    root = vault.root
    write(root, "Extra.md", f"# Extra\n\nOne more.\n\n{FOOTER}\n")
    vault.reconcile()  # the 8th note: every note's footer section is re-scored
    assert rows(vault, "SELECT count(*) FROM postings WHERE term = 'discord'") == [(0,)]
    assert rows(vault, "SELECT count(*) FROM terms WHERE term = 'discord'") == [(0,)]
    (root / "Extra.md").unlink()
    vault.reconcile()  # back under: the footer's words are postings again
    assert rows(vault, "SELECT df FROM terms WHERE term = 'discord'") == [(BOILERPLATE_NOTES - 1,)]


def test_fenced_code_is_never_boilerplate() -> None:
    text = "Intro words\n```go\nif err != nil {\n```\n~~~\nreturn (\n~~~\nOutro words"
    assert len(line_keys(text)) == 2  # the intro and the outro, not the code or its fences
    dropped = section_postings(None, text, frozenset(line_keys("Intro words")))
    assert "intro" not in dropped and "err" in dropped and "outro" in dropped
    # Code lines are kept even when their key is boilerplate elsewhere.
    assert "err" in section_postings(None, text, frozenset(line_keys("if err != nil {")))


def test_section_postings_without_boilerplate_equal_the_workers() -> None:
    from vaultmem.note.parse import parse_note

    note = parse_note("n.md", b"# T\n\n## Locks\nlock timeout, TestPager\n\nDuckDB rows\n").note
    section = documents.note_documents(note)[-1]
    weighted = dict(
        line.split("\t")[0:4:3]
        for line in "".join(documents.postings_lines(1, [section])).splitlines()  # term, tf
    )
    again = section_postings(section.heading, section.text, frozenset())
    assert again == {t: float(tf) for t, tf in weighted.items()}


_LINE_PARTS = [
    "lock timeout",
    "Edit [this](https://x/a.md)",
    "Édition",
    "ﬁle",
    "```",
    "~~~",
    "  ",
    "",
    "the",
    "DuckDB_rows",
    "v1.2",
    "東京都",
]


@settings(max_examples=300, deadline=None)
@given(
    heading=st.one_of(st.none(), st.sampled_from(_LINE_PARTS)),
    lines=st.lists(st.sampled_from(_LINE_PARTS), max_size=12),
    drop=st.sets(st.sampled_from(_LINE_PARTS)),
)
def test_the_full_postings_less_the_boilerplate_weights_are_section_postings(
    heading: str | None, lines: list[str], drop: set[str]
) -> None:
    """The load subtracts `boilerplate_weights` from the workers' postings: what is left must
    be exactly what re-tokenising the section without its boilerplate lines gives."""
    text = "\n".join(lines)
    boilerplate = frozenset(k for line in drop for k in line_keys(line))
    full = section_postings(heading, text, frozenset())
    removed = documents.boilerplate_weights(heading, text, boilerplate)
    left = {t: tf - removed.get(t, 0) for t, tf in full.items()}
    assert {t: tf for t, tf in left.items() if tf} == section_postings(heading, text, boilerplate)
    assert set(removed) <= set(full)


# -- incremental equals rebuild, with a low threshold so few notes cross it -----------------

LINES = ["lock timeout", "Edit this page", "Back to [[Index]]", "queries", "```", "DuckDB"]
note_text = st.lists(st.sampled_from(LINES), max_size=5).map(
    lambda lines: "# N\n\n" + "\n".join(lines) + "\n"
)
edit = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 4), note_text),
    st.tuples(st.just("delete"), st.integers(0, 4), st.just("")),
    st.tuples(st.just("rename"), st.integers(0, 4), st.integers(0, 4).map(str)),
)
DUMPS = {
    "documents": "SELECT n.path, d.ord, d.length, d.text, d.line_keys "
    "FROM documents d JOIN notes n ON n.id = d.note_id",
    "postings": "SELECT p.term, n.path, p.ord, p.tf, p.length, p.note_length "
    "FROM postings p JOIN notes n ON n.note_key = p.note_key",
    "terms": "SELECT term, df FROM terms",
    "boilerplate_lines": "SELECT line_key, notes FROM boilerplate_lines",
}


@pytest.fixture
def low_threshold() -> Iterator[None]:
    """Three notes make a line boilerplate (the pass runs in this process)."""
    saved = search_rows.BOILERPLATE_NOTES
    search_rows.BOILERPLATE_NOTES = 3
    yield
    search_rows.BOILERPLATE_NOTES = saved


def dump(vault: Vault) -> dict[str, list[tuple[object, ...]]]:
    with store.reading(vault.config.index_path) as con:
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in DUMPS.items()}


@pytest.mark.slow  # ~100 reconciles: 10-30 s on the shared machine
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(edits=st.lists(edit, min_size=1, max_size=8))
def test_incremental_equals_rebuild_across_the_threshold(
    low_threshold: None, edits: list[tuple[str, int, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        start = {f"n{i}.md": "# N\n\nEdit this page\nlock timeout\n" for i in range(3)}
        vault = make_vault(root, start)
        assert dump(vault)["boilerplate_lines"]  # the run starts above the threshold
        clock = itertools.count(1_700_000_000_000_000_000, 1_000_000_000)
        for action, index, arg in edits:
            rel = f"n{index}.md"
            if action == "write":
                write(root, rel, arg)
                stamp = next(clock)
                os.utime(root / rel, ns=(stamp, stamp))
            elif action == "delete":
                (root / rel).unlink(missing_ok=True)
            elif (root / rel).exists() and not (root / f"n{arg}.md").exists():
                (root / rel).rename(root / f"n{arg}.md")
            vault.reconcile()
        incremental = dump(vault)
        vault.reconcile(rebuild=True)
        assert incremental == dump(vault)


def test_a_footer_linking_to_each_note_itself_is_one_line() -> None:
    def footer(path: str) -> str:
        return (
            f'<span>[Edit In GitHub](https://github.dev/o/hub/blob/main/{path} "git-hub-edit") '
            f"| [Copy](https://raw.example.org/{path}) · see https://example.org/{path}</span>"
        )

    assert line_keys(footer("A%20note.md")) == line_keys(footer("Other.md"))
    assert line_keys("[Edit](x.md)") != line_keys("[Copy](x.md)")  # the words still count


def test_a_repeated_heading_is_boilerplate_too(tmp_path: Path) -> None:
    notes = {
        f"N{i}.md": f"# N{i}\n\nsubject{i} words\n\n## This note in GitHub\n\n[Edit](https://x/{i})\n"
        for i in range(BOILERPLATE_NOTES)
    }
    notes["Intro.md"] = "# Intro\n\n## GitHub\n\nHow to use GitHub for notes.\n"
    vault = make_vault(tmp_path / "v", notes)
    assert rows(vault, "SELECT count(DISTINCT note_key) FROM postings WHERE term = 'github'") == [
        (1,)
    ]
    assert vault.search("github note")[0].path == "Intro.md"


@pytest.mark.parametrize("staged", [1, search_rows.FEW_STAGED_NOTES + 4])
def test_an_incremental_run_finds_the_staged_sections_the_build_query_finds(
    tmp_path: Path, staged: int
) -> None:
    """A few staged notes come back whole, more by their line keys first: either way the
    sections the one-statement query finds."""
    vault = footer_vault(tmp_path / "vault", BOILERPLATE_NOTES + staged + 2)
    con = store.connect(vault.config.index_path, read_only=False)
    try:
        con.execute(  # a note without the footer and `staged` notes with it
            "CREATE TEMP TABLE note_numbers AS SELECT (row_number() OVER (ORDER BY path))::INTEGER"
            " AS number, id AS note_id FROM notes WHERE path <> 'Editing pages.md'"
            " ORDER BY path LIMIT $1",
            [staged + 1],
        )
        lines = frozenset(
            k for (k,) in con.execute("SELECT line_key FROM boilerplate_lines").fetchall()
        )
        assert lines
        found = search_rows._few_staged_sections(con, lines)
        expected = con.execute(search_rows._STAGED_SECTIONS, [sorted(lines)]).fetchall()
    finally:
        con.close()
    assert found and sorted(found) == sorted(expected)

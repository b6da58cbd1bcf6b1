"""Bounded work on hostile notes (issue 27, items 6 and 7): the parser and link checks grow
linearly with a note's lines, and one note with an absurd tag becomes a problem row, never a
failed reconcile.

Linearity is checked as a ratio measured in this process (the time for 50,000 lines over the
time for 5,000), never as a wall-clock bound: linear work gives about 10, the quadratic code
these tests replaced gave about 100.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultmem.note.links import SubpathIndex, subpath_matches
from vaultmem.note.parse import MAX_TAG_LEVELS, parse_note
from vaultmem.storage import store
from vaultmem.vault import Vault

SMALL, LARGE = 5_000, 50_000
LINEAR_RATIO_BOUND = 35.0
"""10× the lines may cost up to 35× the time: room for noise and cache effects, far from the
~100× that quadratic work gives."""


def _rows(vault: Vault, sql: str) -> list[tuple[object, ...]]:
    with store.reading(vault.config.index_path) as con:
        return [tuple(r) for r in con.execute(sql).fetchall()]


def _best_of_two(work: Callable[[], object]) -> float:
    times = []
    for _ in range(2):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _ratio(build: Callable[[int], Callable[[], object]]) -> float:
    small, large = build(SMALL), build(LARGE)
    return _best_of_two(large) / _best_of_two(small)


def _field_links(lines: int) -> bytes:
    return "".join(f"f{i}:: [[x{i}]]\n" for i in range(lines)).encode()


def _heading_links(lines: int) -> tuple[bytes, SubpathIndex]:
    text = "".join(f"## h{i}\n[[note#h{i}]]\n" for i in range(lines // 2))
    note = parse_note("note.md", text.encode()).note
    return text.encode(), SubpathIndex(note.headings, note.blocks)


@pytest.mark.slow
def test_field_lines_with_links_parse_in_linear_time() -> None:
    parsed = parse_note("n.md", _field_links(1000)).note
    assert [(link.kind, link.relation, link.target) for link in parsed.links[:2]] == [
        ("field", "f0", "x0"),
        ("field", "f1", "x1"),
    ]

    def build(lines: int) -> Callable[[], object]:
        data = _field_links(lines)
        return lambda: parse_note("n.md", data)

    assert _ratio(build) < LINEAR_RATIO_BOUND


def test_inline_field_wins_over_its_line_field() -> None:
    note = parse_note("n.md", b"up:: [[a]] [down:: [[b]]] [[c]]\n").note
    assert [(link.target, link.relation) for link in note.links] == [
        ("a", "up"),
        ("b", "down"),
        ("c", "up"),
    ]


@pytest.mark.slow
def test_heading_subpaths_check_in_linear_time() -> None:
    _, index = _heading_links(2000)
    note = parse_note("note.md", _heading_links(2000)[0]).note
    assert all(index.matches(link.subpath) for link in note.links)

    def build(lines: int) -> Callable[[], object]:
        data, index = _heading_links(lines)
        subpaths = [link.subpath for link in parse_note("note.md", data).note.links]
        return lambda: [index.matches(s) for s in subpaths]

    assert _ratio(build) < LINEAR_RATIO_BOUND


@pytest.mark.parametrize(
    ("subpath", "expected"),
    [
        ("#A", True),
        ("#a#c", True),  # levels may be skipped
        ("#B#C", True),
        ("#C#B", False),  # order matters
        ("#A#A", False),  # the second part must be deeper
        ("#B#B2", False),  # B2 is no deeper than B
        ("#^Blk", True),
        ("#^nope", False),
        ("#", True),
        ("#Missing", False),
    ],
)
def test_subpath_index_agrees_with_the_rules(subpath: str, expected: bool) -> None:
    text = "# A\n## B\nx ^blk\n#### C\n## B2\n"
    note = parse_note("n.md", text.encode()).note
    assert SubpathIndex(note.headings, note.blocks).matches(subpath) is expected
    assert subpath_matches(subpath, note.headings, note.blocks) is expected


@pytest.mark.slow
def test_a_note_of_20000_heading_links_reconciles(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    vault = Vault.init(tmp_path / "v")
    data, _ = _heading_links(40_000)
    (tmp_path / "v" / "note.md").write_bytes(data)
    vault.reconcile()
    assert _rows(vault, "SELECT count(*), count(*) FILTER (subpath_found) FROM links") == [
        (20_000, 20_000)
    ]


@pytest.mark.slow
def test_a_30000_level_tag_is_a_problem_not_a_failed_run(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    vault = Vault.init(root)
    (root / "deep.md").write_text("#" + "/".join(["a"] * 30_000) + " #fine/tag\n")
    levels = "/".join(["b"] * MAX_TAG_LEVELS)  # 32 parts: 31 slashes, still a tag
    (root / "edge.md").write_text(f"#{levels} and #{levels}/c\n")
    (root / "other.md").write_text("an ordinary note #ok\n")
    vault.reconcile()
    problems = vault.problems(code="tag_too_large")
    assert sorted(p["path"] for p in problems) == ["deep.md", "edge.md"]
    tags = {str(r[0]) for r in _rows(vault, "SELECT tag FROM tags")}
    assert {"fine/tag", "fine", "ok", levels} <= tags
    assert max(len(t) for t in tags) < 100

"""Tests for vaultmem.note.links: one small case per resolution rule (spec rules 4, 6, 7, 14,
15)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vaultmem import Vault
from vaultmem.core.errors import NotFoundError
from vaultmem.core.note_model import Block, Heading, Link
from vaultmem.note import links as links_module
from vaultmem.note.links import (
    LazyLinkResolver,
    LinkResolver,
    SubpathIndex,
    _heading_key,
    file_name_key,
    fold_name,
    link_name_key,
    resolve_link,
    subpath_matches,
)
from vaultmem.note.markdown import heading_anchor

VAULT = [
    "Duplicate.md",
    "Projects/Duplicate.md",
    "Projects/Plan.md",
    "Projects/Sub/Duplicate.md",
    "Archive/Sub/Duplicate.md",
    "Unique Thing.md",
    "Deep/er/Only Here.md",
    "v1.2 Release.md",
    "Docs/Report.pdf",
    "img/Figure 1.png",
    "Café.md",
    "Dog.md",
    "Folder/Inside.md",
    "Same/Shared.md",
    "Same/Linker.md",
    "Shared.md",
    "Other/Far/Away/Shared.md",
]


@pytest.fixture
def resolver() -> LinkResolver:
    return LinkResolver(VAULT)


def _link(target: str, subpath: str = "") -> Link:
    return Link(
        target=target,
        subpath=subpath,
        display=None,
        embed=False,
        line=1,
        kind="wikilink",
        relation=None,
        raw=f"[[{target}{subpath}]]",
    )


# --- name keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("Projects/Café.md", "café"),
        ("Note.MD", "note"),
        ("img/Figure 1.png", "figure 1.png"),
        ("v1.2 Release.md", "v1.2 release"),
        ("Makefile", "makefile"),
        ("Cafe\u0301.md", "café"),
    ],
)
def test_file_name_key(path: str, key: str) -> None:
    assert file_name_key(path) == key


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("Sub/Alpha.md", "alpha"),
        ("v1.2 Release", "v1.2 release"),
        ("../img/Figure 1.png", "figure 1.png"),
        ("/Note", "note"),
        ("Cafe\u0301", "café"),
    ],
)
def test_link_name_key(target: str, key: str) -> None:
    assert link_name_key(target) == key


def test_v12_release_keys_coincide() -> None:
    assert link_name_key("v1.2 Release") == file_name_key("v1.2 Release.md")


# --- rule 6 ---------------------------------------------------------------------------------


def test_exact_path_wins_over_same_folder(resolver: LinkResolver) -> None:
    assert resolver.resolve("Duplicate", "Projects/Plan.md") == "Duplicate.md"


def test_unique_name_anywhere(resolver: LinkResolver) -> None:
    assert resolver.resolve("Only Here", "Projects/Plan.md") == "Deep/er/Only Here.md"


def test_same_folder_preferred_then_shortest() -> None:
    r = LinkResolver(["Same/Shared.md", "Other/Shared.md", "X/Shared.md", "Same/Linker.md"])
    assert r.resolve("Shared", "Same/Linker.md") == "Same/Shared.md"
    # No candidate under the linking note's folder: shortest path, ties by path.
    assert r.resolve("Shared", "Elsewhere/Linker.md") == "X/Shared.md"


def test_shortest_path_among_rest() -> None:
    r = LinkResolver(["A/Long/Path/N.md", "B/N.md", "C/Deeper/N.md"])
    assert r.resolve("N", "Z/Linker.md") == "B/N.md"


def test_under_folder_group_includes_subfolders() -> None:
    r = LinkResolver(["A/N.md", "P/Deep/Deeper/N.md"])
    # Under the linking note's folder (at any depth) beats a shorter path elsewhere.
    assert r.resolve("N", "P/Linker.md") == "P/Deep/Deeper/N.md"


def test_folder_prefix_has_no_slash_boundary() -> None:
    # Quirk (uncertain, kept): `Pro` is a plain string prefix of `Projects/...`.
    r = LinkResolver(["A/N.md", "Projects/Deep/N.md", "Pro/Linker.md"])
    assert r.resolve("N", "Pro/Linker.md") == "Projects/Deep/N.md"


def test_root_source_prefers_nothing() -> None:
    r = LinkResolver(["Zed/Deep/N.md", "A/N.md"])
    assert r.resolve("N", "Linker.md") == "A/N.md"


def test_suffix_path_link(resolver: LinkResolver) -> None:
    # `Sub/Duplicate` is not an exact path; two suffix candidates, neither under `Projects`...
    assert resolver.resolve("Sub/Duplicate", "Linker.md") == "Archive/Sub/Duplicate.md"
    # ...but from `Projects/Plan.md` the one under `Projects` comes first.
    assert resolver.resolve("Sub/Duplicate", "Projects/Plan.md") == "Projects/Sub/Duplicate.md"


def test_suffix_test_has_no_segment_boundary() -> None:
    # Quirk (uncertain, kept): `b/Note` is a string suffix of `ab/Note.md`.
    r = LinkResolver(["ab/Note.md"])
    assert r.resolve("b/Note", "x.md") == "ab/Note.md"
    assert r.resolve("c/Note", "x.md") is None
    assert r.resolve("ote", "x.md") is None  # the file name itself must be equal


def test_path_link_needs_a_suffix_match() -> None:
    r = LinkResolver(["Other/Note.md"])
    assert r.resolve("Sub/Note", "x.md") is None


def test_relative_links(resolver: LinkResolver) -> None:
    assert resolver.resolve("./Duplicate", "Projects/Plan.md") == "Projects/Duplicate.md"
    assert resolver.resolve("../Duplicate", "Projects/Sub/Duplicate.md") == "Projects/Duplicate.md"
    assert resolver.resolve("../Folder/Inside.md", "Projects/Plan.md") == "Folder/Inside.md"
    assert resolver.resolve("./Sub/Duplicate", "Projects/Plan.md") == "Projects/Sub/Duplicate.md"


def test_relative_link_without_exact_match_is_unresolved(resolver: LinkResolver) -> None:
    assert resolver.resolve("./Unique Thing", "Projects/Plan.md") is None
    assert resolver.resolve("../../Duplicate", "Projects/Plan.md") is None  # above the vault
    assert resolver.resolve("..", "Projects/Plan.md") is None
    assert resolver.resolve("./", "Projects/Plan.md") is None


def test_leading_slash(resolver: LinkResolver) -> None:
    assert resolver.resolve("/Projects/Duplicate", "Archive/x.md") == "Projects/Duplicate.md"
    assert resolver.resolve("/Duplicate", "Projects/Plan.md") == "Duplicate.md"
    # No exact match: unresolved, even though the name is unique.
    assert resolver.resolve("/Unique Thing.md", "x.md") == "Unique Thing.md"
    assert resolver.resolve("/Only Here", "x.md") is None


def test_md_extension_optional(resolver: LinkResolver) -> None:
    assert resolver.resolve("Unique Thing.md", "x.md") == "Unique Thing.md"
    assert resolver.resolve("Unique Thing", "x.md") == "Unique Thing.md"
    assert resolver.resolve("Projects/Plan.md", "x.md") == "Projects/Plan.md"


def test_dotted_name_falls_back_to_md(resolver: LinkResolver) -> None:
    assert resolver.resolve("v1.2 Release", "x.md") == "v1.2 Release.md"


def test_dotted_name_as_written_first() -> None:
    r = LinkResolver(["Report.pdf.md", "Sub/Report.pdf"])
    assert r.resolve("Report.pdf", "x.md") == "Sub/Report.pdf"


def test_md_link_never_gets_a_second_md() -> None:
    r = LinkResolver(["Alpha.md.md"])
    assert r.resolve("Alpha.md", "x.md") is None
    assert r.resolve("Alpha.md.md", "x.md") == "Alpha.md.md"


def test_empty_target_is_source(resolver: LinkResolver) -> None:
    assert resolver.resolve("", "Projects/Plan.md") == "Projects/Plan.md"


def test_case_insensitive(resolver: LinkResolver) -> None:
    assert resolver.resolve("unique thing", "x.md") == "Unique Thing.md"
    assert resolver.resolve("PROJECTS/duplicate", "x.md") == "Projects/Duplicate.md"
    assert resolver.resolve("docs/report.PDF", "x.md") == "Docs/Report.pdf"


def test_case_only_duplicates_are_deterministic() -> None:
    assert LinkResolver(["a.md", "A.md"]).resolve("a", "x.md") == "A.md"
    assert LinkResolver(["A.md", "a.md"]).resolve("a", "x.md") == "A.md"


def test_nfc(resolver: LinkResolver) -> None:
    assert resolver.resolve("Cafe\u0301", "x.md") == "Café.md"
    nfd = LinkResolver(["Cafe\u0301.md"])  # a macOS disk may hand us NFD names
    assert nfd.resolve("Café", "x.md") == "Cafe\u0301.md"


# --- rule 7 ---------------------------------------------------------------------------------


def test_attachment_with_extension(resolver: LinkResolver) -> None:
    assert resolver.resolve("Report.pdf", "x.md") == "Docs/Report.pdf"
    assert resolver.resolve("Figure 1.png", "x.md") == "img/Figure 1.png"


def test_attachment_without_extension_unresolved(resolver: LinkResolver) -> None:
    assert resolver.resolve("Figure 1", "x.md") is None
    assert resolver.resolve("Report", "x.md") is None


def test_extensionless_file_needs_no_dot_link() -> None:
    # Choice: a link without `.` in its last segment names a note only.
    assert LinkResolver(["Makefile"]).resolve("Makefile", "x.md") is None


def test_folder_not_a_target(resolver: LinkResolver) -> None:
    assert resolver.resolve("Folder", "x.md") is None
    assert resolver.resolve("Folder/", "x.md") is None
    assert resolver.resolve("/Folder", "x.md") is None
    assert resolver.resolve("/", "x.md") is None


def test_alias_never_resolves(resolver: LinkResolver) -> None:
    # `Dog.md` may declare `aliases: [Doggo]`; the resolver never sees aliases at all.
    assert resolver.resolve("Doggo", "x.md") is None
    assert resolver.resolve("Dog", "x.md") == "Dog.md"


def test_block_suffix_in_name_is_a_file_name(resolver: LinkResolver) -> None:
    # `[[Dog^id]]` (no `#`) names a file called `Dog^id`.
    assert resolver.resolve("Dog^id", "x.md") is None


def test_add_and_remove() -> None:
    r = LinkResolver(["A/N.md"])
    r.add("N.md")
    assert r.resolve("N", "A/x.md") == "N.md"
    r.remove("N.md")
    assert r.resolve("N", "A/x.md") == "A/N.md"
    r.remove("N.md")  # unknown: no-op
    r.add("A/N.md")  # known: no-op
    assert len(r) == 1
    assert "A/N.md" in r
    r.remove("A/N.md")
    assert r.resolve("N", "A/x.md") is None
    assert len(r) == 0


# --- rules 4, 14, 15: subpaths -------------------------------------------------------------

HEADINGS = [
    Heading(level=1, text="Intro", line=1, anchor=""),
    Heading(level=2, text="Setup", line=3, anchor=""),
    Heading(level=4, text="Details", line=5, anchor=""),
    Heading(level=1, text="Usage", line=7, anchor=""),
    Heading(level=2, text="Setup", line=9, anchor=""),
    Heading(level=2, text="Q&A: what's [new]?", line=11, anchor=""),
    Heading(level=3, text="C# tips", line=13, anchor=""),
]
BLOCKS = [Block(id="Ref-1", line=2), Block(id="abc", line=4)]


@pytest.mark.parametrize(
    ("subpath", "found"),
    [
        ("", True),
        ("#Intro", True),
        ("#intro", True),
        ("#Intro#Setup", True),
        ("#Intro#Details", True),  # skipped level
        ("#Intro#Setup#Details", True),
        ("#Usage#Setup", True),  # duplicate heading, matched after `Usage`
        ("#Setup", True),  # duplicate: the first one
        ("#Setup#Intro", False),  # not deeper, not after
        ("#Details#Setup", False),  # `Setup` after `Details` is shallower
        ("#Usage#Details", False),  # `Details` comes before `Usage`
        ("#Missing", False),
        ("#Q&A: what's [new]?", True),
        ("#Q A what's new", True),  # punctuation stripped on both sides
        ("#q&a   WHAT'S new", True),
        ("#C tips", True),
        ("#^ref-1", True),  # block ids are case-insensitive
        ("#^REF-1", True),
        ("#^abc", True),
        ("#^missing", False),
        ("#^", False),
        ("#", True),
    ],
)
def test_subpath_matches(subpath: str, found: bool) -> None:
    assert subpath_matches(subpath, HEADINGS, BLOCKS) is found
    # the same outline as the index stores it: anchors and levels in line order, block ids
    ordered = sorted(HEADINGS, key=lambda h: h.line)
    stored = SubpathIndex.of_anchors(
        [heading_anchor(h.text) for h in ordered], [h.level for h in ordered], ["Ref-1", "abc"]
    )
    assert stored.matches(subpath) is found


_HEADING_TEXT = st.text(
    st.sampled_from("aAzZéÉ\u0301\u0130ßΣς İ&:#.\t\n-_/[]?!日本"), max_size=12
) | st.text(max_size=12)


@given(text=_HEADING_TEXT, asked=_HEADING_TEXT, level=st.integers(1, 6))
@example(text="Cafe\u0301", asked="CAFÉ", level=1)
@example(text="İstanbul", asked="i̇stanbul", level=2)
@example(text="ΣΑΣ", asked="σας", level=1)
def test_a_stored_anchor_matches_as_the_heading_text_does(
    text: str, asked: str, level: int
) -> None:
    """A build checks subpaths against the stored anchors (`heading_anchor`), an edit's
    preview against parsed headings: both give the same answer for any text."""
    parsed = SubpathIndex([Heading(level, text, 1, "")], [])
    stored = SubpathIndex.of_anchors([heading_anchor(text)], [level], [])
    for subpath in (f"#{asked}", f"#{text}", f"#{text}#{asked}", f"#{asked}#{text}"):
        assert stored.matches(subpath) is parsed.matches(subpath)
    if "#" not in text and not text.startswith("^"):  # else a path of parts, or a block
        assert stored.matches(f"#{text}")


def test_heading_key() -> None:
    assert _heading_key("  A\nB  ") == "a b"
    assert _heading_key("Q&A: what's [new]?") == "q a what's new"
    assert _heading_key("Ünïcode!") == "ünïcode"
    assert _heading_key("Cafe\u0301") == "café"


def test_subpath_ignores_anchor_field() -> None:
    heading = Heading(level=1, text="Real Text", line=1, anchor="something-else")
    assert subpath_matches("#Real Text", [heading], [])
    assert not subpath_matches("#something-else", [heading], [])


def test_greedy_first_match() -> None:
    # Duplicates resolve to the first match; the chain does not backtrack.
    headings = [
        Heading(level=2, text="A", line=1, anchor=""),
        Heading(level=1, text="A", line=2, anchor=""),
        Heading(level=2, text="B", line=3, anchor=""),
    ]
    assert not subpath_matches("#A#B", headings, [])


def test_chain_needs_no_section_nesting() -> None:
    # Only "after and deeper" is required, not "inside the previous heading's section".
    headings = [
        Heading(level=1, text="A", line=1, anchor=""),
        Heading(level=1, text="B", line=2, anchor=""),
        Heading(level=2, text="C", line=3, anchor=""),
    ]
    assert subpath_matches("#A#C", headings, [])


# --- resolve_link ---------------------------------------------------------------------------


def _headings_of(path: str) -> SubpathIndex | None:
    if path == "Unknown.md":
        return None
    return SubpathIndex(HEADINGS, BLOCKS)


@pytest.fixture
def link_resolver() -> LinkResolver:
    return LinkResolver(
        ["Note.md", "Docs/Report.pdf", "img/pic.png", "Unknown.md", "icons/icon.svg"]
    )


@pytest.mark.parametrize(
    ("target", "subpath", "path", "found"),
    [
        ("Note", "", "Note.md", None),
        ("Note", "#Intro#Setup", "Note.md", True),
        ("Note", "#Nope", "Note.md", False),  # still resolved: a missing heading is recorded
        ("Note", "#^abc", "Note.md", True),
        ("", "#Usage", "Here.md", True),  # `[[#Usage]]` points at the source itself
        ("Missing", "#Intro", None, None),
        ("Report.pdf", "#page=3", "Docs/Report.pdf", True),
        # Issue 18 point 3, spec rule 15 (the help vault's "Embed files" page): on anything
        # but a note only a PDF's `#page=N` is checkable; the rest are viewer options
        # (`#height=400`, an SVG's `#icon`), never "subpath not found".
        ("Report.pdf", "#height=400", "Docs/Report.pdf", None),
        ("Report.pdf", "#Intro", "Docs/Report.pdf", None),
        ("pic.png", "#page=3", "img/pic.png", None),
        ("icon.svg", "#icon", "icons/icon.svg", None),
        ("Unknown", "#Intro", "Unknown.md", None),  # headings not known
    ],
)
def test_resolve_link(
    link_resolver: LinkResolver, target: str, subpath: str, path: str | None, found: bool | None
) -> None:
    resolution = resolve_link(_link(target, subpath), "Here.md", link_resolver, _headings_of)
    assert resolution.path == path
    assert resolution.subpath_found is found


# --- properties -----------------------------------------------------------------------------

_SEGMENTS = st.sampled_from(
    ["a", "A", "b", "ab", "x.y", "n.md", "N.MD", "é", "e\u0301", "Pro", "Projects", "."]
)
_NAMES = st.sampled_from(
    ["a", "A", "b", "ab", "x.y", "é", "e\u0301", "n", "N", "n.md", "Makefile", "x.y.md"]
)
_EXTS = st.sampled_from(["", ".md", ".md", ".MD", ".pdf", ".png", ".md.md"])


@st.composite
def _paths(draw: st.DrawFn) -> str:
    folders = draw(st.lists(_SEGMENTS.filter(lambda s: s != "."), max_size=3))
    return "/".join([*folders, draw(_NAMES) + draw(_EXTS)])


@st.composite
def _targets(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(["", "", "/", "./", "../", "../../"]))
    folders = draw(st.lists(_SEGMENTS, max_size=2))
    name = draw(_NAMES) + draw(st.sampled_from(["", "", ".md", ".pdf", ".png", ".md.md", "/"]))
    return prefix + "/".join([*folders, name])


@settings(max_examples=300, deadline=None)
@given(
    files=st.lists(_paths(), max_size=25),
    targets=st.lists(_targets(), min_size=1, max_size=15),
    sources=st.lists(_paths(), min_size=1, max_size=4),
)
def test_resolution_only_within_name_key(
    files: list[str], targets: list[str], sources: list[str]
) -> None:
    resolver = LinkResolver(files)
    for source in sources:
        for target in targets:
            resolved = resolver.resolve(target, source)
            assert resolved is None or resolved in files
            if resolved is not None:
                assert file_name_key(resolved) == link_name_key(target)


@settings(max_examples=200, deadline=None)
@given(
    initial=st.lists(_paths(), max_size=15),
    ops=st.lists(st.tuples(st.booleans(), _paths()), max_size=25),
    targets=st.lists(_targets(), min_size=1, max_size=10),
    sources=st.lists(_paths(), min_size=1, max_size=3),
)
def test_incremental_equals_fresh(
    initial: list[str],
    ops: list[tuple[bool, str]],
    targets: list[str],
    sources: list[str],
) -> None:
    incremental = LinkResolver(initial)
    current = set(initial)
    for is_add, path in ops:
        if is_add:
            incremental.add(path)
            current.add(path)
        else:
            incremental.remove(path)
            current.discard(path)
    fresh = LinkResolver(sorted(current, reverse=True))
    assert len(incremental) == len(current)
    for source in sources:
        for target in targets:
            assert incremental.resolve(target, source) == fresh.resolve(target, source)


def _reference_resolve(files: set[str], target: str, source: str) -> str | None:
    """Rules 6 and 7 read straight off the spec: a full scan per link, no index."""

    def fold(text: str) -> str:
        return unicodedata.normalize("NFC", text.lower())

    def variants(path: str) -> list[str]:
        name = path.split("/")[-1]
        if name.endswith(".md"):
            return [path]
        return [path, path + ".md"] if "." in name else [path + ".md"]

    def exact(path: str) -> str | None:
        if not path or path.endswith("/"):
            return None
        for variant in variants(fold(path)):
            hits = sorted(f for f in files if fold(f) == variant)
            if hits:
                return hits[0]
        return None

    if target == "":
        return source
    if target.startswith("/"):
        return exact(target.lstrip("/"))
    if target.startswith(("./", "../")) or target in (".", ".."):
        if target.split("/")[-1] in ("", ".", ".."):
            return None
        parts = source.split("/")[:-1]
        for segment in target.split("/"):
            if segment == "..":
                if not parts:
                    return None
                parts.pop()
            elif segment not in ("", "."):
                parts.append(segment)
        return exact("/".join(parts))
    if target.endswith("/"):
        return None
    folder = fold(source.rpartition("/")[0]) or "/"
    for variant in variants(fold(target)):  # as written first, then with `.md` (rule 6a)
        hits = sorted(f for f in files if fold(f) == variant)
        if hits:
            return hits[0]
        name = variant.split("/")[-1]
        candidates = [
            f for f in files if fold(f).split("/")[-1] == name and fold(f).endswith(variant)
        ]
        if candidates:
            return min(candidates, key=lambda f: (not fold(f).startswith(folder), len(f), f))
    return None


@settings(max_examples=300, deadline=None)
@given(
    files=st.lists(_paths(), max_size=30),
    targets=st.lists(_targets(), min_size=1, max_size=15),
    sources=st.lists(_paths(), min_size=1, max_size=4),
)
# Rule 6a: a dotted name is looked up as written (finding `a/x.y` anywhere) before `x.y.md`.
@example(files=["x.y.md", "a/x.y"], targets=["x.y"], sources=["a/n.md", "n.md"])
def test_index_agrees_with_full_scan(
    files: list[str], targets: list[str], sources: list[str]
) -> None:
    resolver = LinkResolver(files)
    unique = set(files)
    for source in sources:
        for target in targets:
            assert resolver.resolve(target, source) == _reference_resolve(unique, target, source)


@settings(max_examples=150, deadline=None)
@given(
    files=st.lists(_paths(), max_size=30),
    targets=st.lists(_targets(), min_size=1, max_size=15),
    sources=st.lists(_paths(), min_size=1, max_size=4),
    few=st.sampled_from([0, 1, 2]),
)
def test_index_agrees_with_full_scan_whichever_way_a_run_is_searched(
    files: list[str], targets: list[str], sources: list[str], few: int
) -> None:
    """`_Order` answers a link from its run of files ending with the link's path when the run
    is short, else by a scan in order: both ways agree with the reference."""
    with patch.object(links_module, "_FEW_ENDING", few):
        resolver = LinkResolver(files)
        unique = set(files)
        for source in sources:
            for target in targets:
                want = _reference_resolve(unique, target, source)
                assert resolver.resolve(target, source) == want


def test_a_big_bucket_of_one_name_answers_as_the_full_scan() -> None:
    """3,000 `README.md`s: a link that none of them ends with (`archive/README`), a few do
    (`12/docs/README`: the suffix test has no segment boundary), hundreds do (`2/docs/README`)
    or all do, from inside and outside their folders, each as the spec's full scan says."""
    files = [f"p{i}/docs/README.md" for i in range(3000)] + ["docs/README.md", "q/README.md"]
    unique = set(files)
    resolver = LinkResolver(files)
    targets = ["archive/README", "12/docs/README", "2/docs/README", "docs/README", "README"]
    targets += ["p7/docs/README", "s/README", "q/README.md"]
    sources = ["p12/docs/Note.md", "p2/Other.md", "q/Note.md", "Note.md", "zz/Note.md"]
    for source in sources:
        for target in targets:
            want = _reference_resolve(unique, target, source)
            assert resolver.resolve(target, source) == want, (target, source)


# --- speed ----------------------------------------------------------------------------------


def _big_vault(count: int) -> list[str]:
    return [f"Area {i % 50}/Topic {i % 997}/Note {i}.md" for i in range(count)]


def test_100k_paths_resolve_by_name_key() -> None:
    """At vault scale every answer is the one file with the link's name (speed is measured in
    benchmarks/, never asserted here)."""
    paths = _big_vault(100_000)
    resolver = LinkResolver(paths)
    targets = [f"Note {(i * 7919) % 120_000}" for i in range(65_000)]
    sources = [paths[(i * 31) % len(paths)] for i in range(65_000)]
    found = 0
    for target, source in zip(targets, sources, strict=True):
        path = resolver.resolve(target, source)
        if path is not None:
            found += 1
            assert file_name_key(path) == link_name_key(target)
    assert found == sum(1 for t in targets if int(t.split()[1]) < 100_000)


# --- issue 11 point 4 / issue 18 point 10: one folding rule ------------------------------------


def test_fold_name_is_obsidians_to_lower_case_then_nfc() -> None:
    # Obsidian compares names with JavaScript's toLowerCase(): `ß` stays `ß` (casefold would
    # make it `ss`), and NFC makes a decomposed `é` equal to the composed one.
    assert fold_name("Straße") == "straße"
    assert fold_name("CAFE\u0301") == fold_name("Café") == "café"
    assert file_name_key("Orte/Straße.md") == link_name_key("STRAßE") == fold_name("Straße")


def test_a_name_that_resolves_as_a_link_is_the_same_key_everywhere() -> None:
    resolver = LinkResolver(["Orte/Straße.md"])
    assert resolver.resolve("straße", "x.md") == "Orte/Straße.md"
    assert resolver.resolve("strasse", "x.md") is None


# --- through a real reconcile: excluded targets, canvas sources, lookups ----------------------


def _indexed_vault(tmp_path: Path, files: dict[str, str]) -> Vault:
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    vault = Vault.init(root)
    vault.reconcile()
    return vault


def _links_of(vault: Vault, name: str) -> list[tuple[str, str | None]]:
    return [(row["target"], row["target_path"]) for row in vault.links(name)[1]]


def test_files_obsidian_excludes_stay_link_targets(tmp_path: Path) -> None:
    # Issue 18 point 1, spec rule 17, after Obsidian's help on Settings > Files and links >
    # Excluded files: exclusion hides files from search, graph and unlinked mentions only, so
    # links to them still resolve.
    vault = _indexed_vault(
        tmp_path,
        {
            ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/"]}),
            "Archive/Meeting.md": "# Old meeting\n",
            "Archive/Deep/Notes.md": "old\n",
            "Projects/Sub/Meeting.md": "# New meeting\n",
            "Home.md": "[[Archive/Meeting]] [[Notes]] [[Meeting]]\n",
        },
    )
    assert _links_of(vault, "Home") == [
        ("Archive/Meeting", "Archive/Meeting.md"),
        ("Notes", "Archive/Deep/Notes.md"),
        ("Meeting", "Archive/Meeting.md"),  # the shortest path wins, excluded or not
    ]
    with pytest.raises(NotFoundError):
        vault.show("Archive/Meeting")  # not indexed as a note


def test_canvas_files_are_link_sources(tmp_path: Path) -> None:
    # Issue 18 point 7, spec rule 18 (after Obsidian's 1.12 release notes: canvases count as
    # link sources for backlinks): file nodes and wikilinks in text nodes are links.
    canvas = {
        "nodes": [
            {"id": "a", "type": "file", "file": "Projects/Plan.md", "subpath": "#Goals"},
            {"id": "b", "type": "text", "text": "see [[Alpha]] and #idea"},
            {"id": "c", "type": "link", "url": "https://example.com"},
            {"id": "d", "type": "group", "label": "[[Not a link]]"},
        ],
        "edges": [{"id": "e", "fromNode": "a", "toNode": "b"}],
    }
    vault = _indexed_vault(
        tmp_path,
        {
            "Board.canvas": json.dumps(canvas),
            "Projects/Plan.md": "# Plan\n## Goals\n",
            "Alpha.md": "alpha\n",
            "Broken.canvas": "{not json",
        },
    )
    sources = [row["source_path"] for row in vault.backlinks("Plan")[1]]
    assert sources == ["Board.canvas"]
    assert [row["source_path"] for row in vault.backlinks("Alpha")[1]] == ["Board.canvas"]
    outgoing = vault.links("Board.canvas")[1]
    assert [(r["kind"], r["target_path"], r["subpath_found"]) for r in outgoing] == [
        ("canvas", "Projects/Plan.md", True),
        ("wikilink", "Alpha.md", None),
    ]
    assert vault.show("Board.canvas").tags == ["idea"]
    problems = [p["code"] for p in vault.show("Broken.canvas").problems]
    assert problems == ["canvas_invalid"]


def test_show_finds_every_name_a_link_finds(tmp_path: Path) -> None:
    # Issue 11 point 4 / issue 18 point 10: `[[Straße]]` resolved while `show Straße` found
    # nothing (lookups used casefold, `ß` → `ss`; links use Obsidian's toLowerCase).
    vault = _indexed_vault(
        tmp_path,
        {
            "Orte/Straße.md": "---\naliases: [Große Allee]\n---\n",
            "Home.md": "[[straße]]\n",
        },
    )
    assert _links_of(vault, "Home") == [("straße", "Orte/Straße.md")]
    for name in ("Straße", "STRAßE", "orte/straße.md", "große allee"):
        assert vault.show(name).note["path"] == "Orte/Straße.md"


@settings(max_examples=300, deadline=None)
@example(  # İ lengthens by one, NFC shortens é by one: the same total, shifted places
    files=["İstanbul.md", "e\u0301"], targets=["İstanbul"], sources=["a"], eager_after=1
)
@given(
    files=st.lists(
        st.one_of(
            _paths(),
            # Folding that keeps lengths, folding that changes them (İ lowers to two
            # characters, NFC joins e + U+0301 into one), a name no line can hold.
            st.sampled_from(
                ["ΑΣ.md", "ας.md", "Σ/Σ.md", "İstanbul.md", "a/Cafe\u0301.md", "line\nbreak.md"]
            ),
        ),
        max_size=25,
    ),
    targets=st.lists(
        st.one_of(
            _targets(),
            st.sampled_from(["ΑΣ", "ας", "Σ", "break", "İstanbul", "i\u0307stanbul", "café"]),
        ),
        max_size=15,
    ),
    sources=st.lists(_paths(), min_size=1, max_size=3),
    eager_after=st.sampled_from([1, 3, 64]),
)
def test_the_lazy_resolver_answers_as_the_full_one(
    files: list[str], targets: list[str], sources: list[str], eager_after: int
) -> None:
    full = LinkResolver(files)
    lazy = LazyLinkResolver(files, eager_after=eager_after)
    # The same files handed over already joined, as a state record keeps them (a set: no
    # order to take them back by but the lines').
    lines = "\n" + "\n".join(files) + "\n"
    joined = LazyLinkResolver(frozenset(files), eager_after=eager_after, lines=lines)
    if len(set(files)) != len(files):
        joined = LazyLinkResolver(files, eager_after=eager_after, lines=lines)
    for source in sources:
        for target in targets:
            expected = full.resolve(target, source)
            assert lazy.resolve(target, source) == expected, (target, source)
            assert joined.resolve(target, source) == expected, (target, source)


def test_a_lazy_resolver_counts_its_new_keys_per_run() -> None:
    """Kept for the watcher's next batch, a resolver counts from `begin_run`: the keys of
    earlier runs no longer add up to a full build that one later save pays for."""
    lazy = LazyLinkResolver(VAULT, eager_after=2)
    assert lazy.resolve("Dog", "a.md") == "Dog.md"
    assert lazy.resolve("Café", "a.md") == "Café.md"
    lazy.begin_run()
    assert lazy.resolve("Unique Thing", "a.md") == "Unique Thing.md"
    assert lazy.resolve("Inside", "a.md") == "Folder/Inside.md"
    assert len(lazy) == 4  # each key's one file, not all 17
    assert lazy.resolve("Plan", "a.md") == "Projects/Plan.md"  # a third new key in one run
    assert len(lazy) == len(VAULT)


def test_the_lazy_resolver_indexes_only_the_keys_asked() -> None:
    lazy = LazyLinkResolver(VAULT)
    assert lazy.resolve("Sub/Duplicate", "Projects/Plan.md") == "Projects/Sub/Duplicate.md"
    assert lazy.resolve("café", "Dog.md") == "Café.md"
    assert len(lazy) == 5  # four `duplicate` files and one `café`, of 17

"""Faster forms in `search.documents` that must give what the plain form gives."""

from __future__ import annotations

from collections import Counter
from hashlib import blake2b

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.core import documents


def _plain_line_key(line: str) -> int | None:
    """`_line_key` as first written: both destination branches in one pattern, always."""
    if "](" in line or "://" in line:
        line = documents._DESTINATION.sub("]", line)
    if line.isascii():
        if documents._ALNUM.search(line) is None:
            return None
        norm = " ".join(line.split()).lower()
    else:
        norm = " ".join(line.split()).casefold()
        if documents._ALNUM.search(norm) is None:
            return None
    return int.from_bytes(blake2b(norm.encode(), digest_size=8).digest(), "big") >> 1


_PIECES = st.sampled_from(
    ["[t](x.md)", "](", "://", "http://a.b/c", "HTTPS://X", "see", " ", "\t", ")", "(", "]",
     "a](b c)", "x://", "é", "ᾳ", "1", "_", "-"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_a_line_key_is_the_plain_forms(line: str) -> None:
    assert documents._line_key(line) == _plain_line_key(line)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_a_line_key_of_any_text_is_the_plain_forms(line: str) -> None:
    assert documents._line_key(line) == _plain_line_key(line)


def test_a_link_destination_alone_takes_the_one_branch_pattern() -> None:
    line = "Edit [on GitHub](https://x/y.md) and [here](y.md)"
    assert documents._line_key(line) == documents._line_key("Edit [on GitHub] and [here]")
    assert documents._line_key("[here](y.md) now") == documents._line_key("[here] now")
    assert documents._line_key("go http://a/b now") == documents._line_key("go ] now")


@given(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=30))
def test_a_terms_bucket_never_decreases_as_the_term_grows(terms: list[str]) -> None:
    """Buckets sorted one after the other must be the postings sorted by term: DuckDB orders
    VARCHAR by code point, so the bucket must not decrease along that order."""
    from vaultmem.core.documents import postings_bucket

    ordered = sorted(terms)
    buckets = [postings_bucket(t) for t in ordered]
    assert buckets == sorted(buckets)


def test_bucketed_postings_lines_are_the_postings_lines_split_by_bucket() -> None:
    from vaultmem.core.documents import (
        POSTINGS_BUCKET_BOUNDS,
        bucketed_postings_lines,
        note_documents,
        postings_bucket,
        postings_lines,
    )
    from vaultmem.note.parse import parse_note

    text = "# Über apples\n\nzebra 42 éclair 東京 and apples, apples.\n\n## Quartz\n\nmango ソフト"
    documents = note_documents(parse_note("a.md", text.encode()).note)
    buckets: list[list[str]] = [[] for _ in range(len(POSTINGS_BUCKET_BOUNDS) + 1)]
    bucketed_postings_lines(7, documents, buckets)
    whole = "".join(postings_lines(7, documents)).splitlines(keepends=True)
    assert sorted(line for lines in buckets for line in lines) == sorted(whole)
    for b, lines in enumerate(buckets):
        assert all(postings_bucket(line.split("\t")[0]) == b for line in lines)
    assert sum(1 for lines in buckets if lines) >= 5


_LINES = st.sampled_from(
    ["Edit this page", "edit  THIS page", "Back to [[Index]]", "running runners", "```", "~~~",
     "return (x)", "the", "v1.2", "**Pros**", "", "Edit [here](a.md) now", "Edit [here](b.md) now"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    heading=st.one_of(st.none(), _LINES),
    lines=st.lists(_LINES, min_size=1, max_size=10),
    drop=st.sets(_LINES),
)
def test_a_document_without_its_boilerplate_has_the_sections_postings(
    heading: str | None, lines: list[str], drop: set[str]
) -> None:
    """An upgrade's workers take the boilerplate out of a document themselves
    (`without_boilerplate`): what is left must be what a build loads for the section,
    `section_postings` (the section re-tokenised without those lines), its length kept."""
    text = "\n".join(lines)
    boilerplate = frozenset(k for line in drop for k in documents.line_keys(line))
    section = documents.SearchDocument(1, heading, 1, text, 0, {})
    cut = documents.documents_of("Title", (), (), [section], None)
    if len(cut) == 1:
        return  # a section without terms makes no document
    doc = cut[1]
    seen: dict[str, Counter[str]] = {}
    left = documents.without_boilerplate(doc, boilerplate, lines_seen=seen)
    assert dict(left.weights) == documents.section_postings(heading, text, boilerplate)
    assert (left.length, left.line_keys, left.text) == (doc.length, doc.line_keys, doc.text)
    assert documents.without_boilerplate(cut[0], boilerplate) is cut[0]  # the note's own

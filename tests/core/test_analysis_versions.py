"""The analysis may not change without its version: an index made by one analysis and read by
another answers wrongly (its postings hold terms the queries no longer ask), and only a version
bump makes the next reconcile cut the notes again.

The text covers what vaultmem's own code decides (identifiers, numbers, apostrophes, English and
Russian stemming, the bigrams of kana, Hangul and Thai); the Chinese segmenter's dictionary is
rjieba's and is left out. A change to this output must bump `TOKENIZER_VERSION` or, when it only
touches `SEGMENTED_CHARS` text, `SEGMENT_VERSION`, and record the new output here under the new
versions.
"""

from __future__ import annotations

from vaultmem.core.models import SEGMENT_VERSION, TOKENIZER_VERSION
from vaultmem.core.tokenizer import tokenize

TEXT = (
    "TestPagerOrder vault_root v1.2 2026-01-02 OpenAI's don't synced queries Notizen "
    "Bearbeitungskürzel заметки заметку шаблонами україна 東京タワー 노트를 ภาษาไทย ﬁle"
)

OUTPUT: dict[tuple[int, int], list[str]] = {
    (3, 4): [
        *("testpagerord", "test", "pager", "order", "vault_root", "vault", "root", "v1.2"),
        *("2026-01-02", "2026", "01", "02", "openai", "open", "ai", "sync", "queri"),
        *("notizen", "bearbeitungskürzel", "заметк", "заметк", "шаблон", "україн"),
        *("東京", "京タ", "タワ", "ワー", "노트를", "노트", "트를"),
        *("ภา", "าษ", "ษา", "าไ", "ไท", "ทย", "file"),
    ],
}


def test_the_analysis_output_is_recorded_for_these_versions() -> None:
    versions = (TOKENIZER_VERSION, SEGMENT_VERSION)
    assert versions in OUTPUT, (
        f"TOKENIZER_VERSION, SEGMENT_VERSION = {versions}: record tokenize(TEXT) under them"
    )
    assert tokenize(TEXT) == OUTPUT[versions], (
        "The analysis changed without its version: bump TOKENIZER_VERSION (or SEGMENT_VERSION "
        "for text of SEGMENTED_CHARS alone) and record the new output under the new versions."
    )


# What a release may leave out of `meta`'s decision (`index.upgrade.RECORDED_ONLY`): the
# search documents a note makes (fields and their weights, lengths, the title document, the
# boilerplate line keys and threshold) are pinned to the versions that make an index cut them
# again, so a release that changes them without a bump fails here, not in a user's index.
NOTE = (
    "---\ntitle: Sync Guide\naliases: [Syncing, 同期]\ntags: [setup/sync, Devices]\n---\n"
    "# Sync Guide\n\nKeep your notes synced across devices. See [docs](https://x.io/a_b).\n\n"
    "## Conflicts\n\nWhen two devices edit the same note, the newer edit wins. ^conflicts\n\n"
    "```python\nsync(vault_root)\n```\n\n## 設定\n\n東京の設定を同期する。\n"
)

DOCUMENTS: dict[tuple[int, int, int, int], str] = {
    (3, 4, 1, 8): "eb8d0ffd4f940519",
}


def _documents_digest() -> str:
    import json
    from hashlib import blake2b

    from vaultmem.core.documents import BOILERPLATE_NOTES, note_documents
    from vaultmem.note.parse import parse_note

    note = parse_note("Guides/Sync.md", NOTE.encode()).note
    shape = [
        [d.ord, d.heading, d.line, d.text, d.length, sorted(d.weights.items()), list(d.line_keys)]
        for d in note_documents(note, "english")
    ]
    return blake2b(json.dumps([shape, BOILERPLATE_NOTES]).encode(), digest_size=8).hexdigest()


def test_the_search_documents_are_recorded_for_these_versions() -> None:
    from vaultmem.core.documents import BOILERPLATE_NOTES
    from vaultmem.core.models import LINE_KEY_VERSION

    versions = (TOKENIZER_VERSION, SEGMENT_VERSION, LINE_KEY_VERSION, BOILERPLATE_NOTES)
    got = _documents_digest()
    assert DOCUMENTS.get(versions) == got, (
        f"The search documents are {got} under {versions}: when they changed, bump "
        "TOKENIZER_VERSION (SEGMENT_VERSION for text of SEGMENTED_CHARS alone, "
        "LINE_KEY_VERSION for the line keys alone) and record the digest under the new versions."
    )

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

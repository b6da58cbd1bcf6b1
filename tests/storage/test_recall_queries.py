"""The note key recall matches names with (`storage.recall_queries._KEY`): written with string
functions for a scan of every note, it must give what the JSON and regex reading gave."""

from __future__ import annotations

import json

import duckdb
import pytest

from vaultmem.storage.recall_queries import _KEY

_AS_BEFORE = "coalesce(frontmatter->>'key', regexp_extract(path, '([^/]*)\\.md$', 1))"


def _frontmatter(value: object) -> str | None:
    """As the index stores it (`storage.rows`)."""
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize(
    ("path", "frontmatter", "key"),
    [
        ("Projects/Atlas/Plan.md", None, "Plan"),
        ("Plan.md", {"title": "x"}, "Plan"),
        ("a/b.md.md", None, "b.md"),
        ("a/B.MD", None, ""),  # not a Markdown name as the key reads it
        ("a/board.canvas", None, ""),
        ("a/.md", None, ""),
        ("Ünïcode/Café.md", None, "Café"),
        ("a/two\nlines.md", None, "two\nlines"),
        ("agent-memory/x.md", {"key": "deploy-notes"}, "deploy-notes"),
        ("a/n.md", {"other": {"key": "nested"}}, "n"),  # only the top-level `key` counts
        ("a/n.md", {"tags": ["key"]}, "n"),  # `"key"` as a value, not a name
        ("a/n.md", {"key": None}, "n"),
        ("a/n.md", {"key": 5}, "5"),
        ("a/n.md", {"key": ""}, ""),
        ("a/n.md", {"Key": "capital"}, "n"),
        ("a/n.md", {"kéy": "x", "key": 'ü "quoted"'}, 'ü "quoted"'),
    ],
)
def test_the_key_is_what_the_json_and_regex_reading_gave(
    path: str, frontmatter: object, key: str
) -> None:
    con = duckdb.connect()
    row = con.execute(
        f"SELECT {_KEY}, {_AS_BEFORE} FROM (SELECT $1::VARCHAR AS path, $2::JSON AS frontmatter)",
        [path, _frontmatter(frontmatter)],
    ).fetchone()
    assert row == (key, key)

"""`storage.search_queries.nearest_terms`: the typo lookup computes the edit distance only for
terms that can be that close (`near_pieces`), and must find exactly what computing it for
every term of a near length finds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.storage import search_queries, store
from vaultmem.storage.store import Connection

_EVERY_TERM = (
    "SELECT term FROM terms WHERE length(term) BETWEEN $lo AND $hi "
    "AND damerau_levenshtein(term, $term) <= $d "
    "ORDER BY damerau_levenshtein(term, $term), df DESC, term LIMIT $limit"
)


def _every_term(con: Connection, term: str, d: int, limit: int) -> list[str]:
    params = {"term": term, "lo": len(term) - d, "hi": len(term) + d, "d": d, "limit": limit}
    return [r[0] for r in con.execute(_EVERY_TERM, params).fetchall()]


def _terms(con: Connection, terms: dict[str, int]) -> None:
    con.execute("DELETE FROM terms")
    con.execute(
        "INSERT INTO terms SELECT unnest($1::VARCHAR[]), unnest($2::INTEGER[])",
        [list(terms), list(terms.values())],
    )


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Connection:
    connection = store.connect(tmp_path_factory.mktemp("q") / "index.duckdb", read_only=False)
    store.create_schema(connection, {})
    return connection


# Each edit where the pieces meet: `coroutine` is cut co|ro|ut|in|e (d = 2) and `rotate`
# ro|ta|te (d = 1); a transposition across a cut, an insertion in front (every piece moves),
# two transpositions, a deletion at the end, letters outside ASCII.
_NEAR = {
    "coroutine": 9,
    "coroutin": 7,
    "rotate": 5,
    "rotat": 4,
    "router": 3,
    "routine": 2,
    "ortate": 1,
    "rottae": 1,
    "xrotate": 1,
    "croroutine": 2,
    "ocroutine": 1,
    "corotuine": 1,
    "crooutien": 1,
    "rotatex": 1,
    "σημειώσεις": 3,
    "σημειωσεις": 1,
    "configuración": 2,
    "𝒜𝒷𝒸𝒹ef": 2,  # letters outside the BMP: one character each, in Python as in DuckDB
    "x𝒜𝒷𝒸𝒹ef": 1,
    "दिनांक": 1,  # combining vowel signs, each a character of its own
}


@pytest.mark.parametrize(
    ("query", "d"),
    [
        ("rotate", 1),
        ("rotaet", 1),
        ("orate", 1),
        ("coroutine", 2),
        ("corotuine", 2),
        ("xcoroutine", 2),
        ("croutin", 1),
        ("σημειώσει", 2),
        ("configuracion", 2),
        ("zzzz", 1),
        ("𝒷𝒜𝒸𝒹ef", 1),
        ("दिनाक", 1),
    ],
)
@pytest.mark.parametrize("limit", [1, 3, 20])
def test_the_lookup_finds_what_every_term_compared_finds(
    con: Connection, query: str, d: int, limit: int
) -> None:
    _terms(con, _NEAR)
    expected = _every_term(con, query, d, limit)
    assert search_queries.nearest_terms(con, query, d, limit) == expected
    if query in ("rotaet", "corotuine", "xcoroutine", "𝒷𝒜𝒸𝒹ef", "दिनाक"):
        assert expected  # the cases that exercise the pieces do find something


def test_every_piece_is_looked_for_where_it_could_have_moved() -> None:
    assert search_queries.near_pieces("rotate", 1) == [("ro", 1, 4), ("ta", 2, 4), ("te", 4, 4)]
    assert [p for p, _, _ in search_queries.near_pieces("coroutine", 2)] == [
        "co",
        "ro",
        "ut",
        "in",
        "e",
    ]
    assert search_queries.near_pieces("abc", 2) == []  # too short to cut: no filter


_LETTERS = st.text(alphabet="abcdeé", min_size=4, max_size=11)


@settings(max_examples=150, deadline=None)
@given(
    terms=st.dictionaries(_LETTERS, st.integers(1, 5), min_size=1, max_size=40),
    query=_LETTERS,
    limit=st.integers(1, 4),
)
def test_any_terms_and_query_agree_with_comparing_every_term(
    con: Connection, terms: dict[str, int], query: str, limit: int
) -> None:
    d = 1 if len(query) <= 7 else 2
    _terms(con, terms)
    assert search_queries.nearest_terms(con, query, d, limit) == _every_term(con, query, d, limit)

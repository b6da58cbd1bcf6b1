"""The search package's front door: one `search` for every mode.

`words` is BM25 over the index (`query.search`, with the resident index when one is held);
`vectors` and `hybrid` need the document vectors (`vectors.semantic_search`). Without a mode a
search uses `vectors.DEFAULT_WHEN_ON` when the index holds vectors, else words; an unknown mode
is an `InvalidArgumentError`, as `recall`'s is. The vector side (`vectors`, `embedding`,
`vector_queries`) is imported only for a search that uses it: a cold CLI's words search never
loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vaultmem.core.errors import InvalidArgumentError
from vaultmem.core.models import SEARCH_MODE_WHEN_ON, SEARCH_MODES, SearchMode
from vaultmem.search import query
from vaultmem.search.query import SearchFilters, SearchHit
from vaultmem.storage import search_queries
from vaultmem.storage.store import Connection

if TYPE_CHECKING:  # numpy: loaded only when a Vault holds the index
    from vaultmem.search.resident import Resident

Mode = SearchMode
MODES = SEARCH_MODES  # the same objects as `vectors.MODES`, without importing it

__all__ = ["MODES", "Mode", "search"]


def search(
    con: Connection,
    text: str,
    filters: SearchFilters | None = None,
    *,
    mode: Mode | None = None,
    limit: int = 10,
    k1: float = 1.2,
    b: float = 0.75,
    language: str | None = None,
    clean: Callable[[str], str] | None = None,
    resident: Resident | None = None,
) -> list[SearchHit]:
    """Search by `mode` (docs/search.md). `language` is the stemmer (the index's when None),
    `clean` the redaction applied before a snippet is cut, `resident` the index held in memory
    (`search/resident.py`)."""
    if mode is None:  # no meta read per search while the default is words anyway
        mode = SEARCH_MODE_WHEN_ON  # `vectors.DEFAULT_WHEN_ON`
        if mode != "words":
            from vaultmem.storage import vector_queries

            if vector_queries.embedding_model(con) == "none":
                mode = "words"
    if mode not in MODES:
        raise InvalidArgumentError(
            f"Unknown search mode {mode!r}.", hint=f"Use one of {', '.join(MODES)}."
        )
    filters = filters or SearchFilters()
    language = language or search_queries.index_language(con)
    if mode == "words":
        return query.search(
            con, text, filters, limit=limit, k1=k1, b=b, language=language, clean=clean,
            resident=resident,
        )  # fmt: skip
    from vaultmem.search import vectors

    return vectors.semantic_search(
        con, text, filters, mode=mode, limit=limit, k1=k1, b=b, language=language, clean=clean,
        resident=resident,
    )  # fmt: skip

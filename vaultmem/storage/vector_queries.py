"""SQL for the `vectors` table: loading document embeddings and the nearest notes to a query.

The parse workers embed the documents they make and stage them in one Parquet file per chunk
(`stage_vectors`: note numbers, ords, embeddings and heads); the write transaction loads every
file in one INSERT (`load_staged_vectors`), numbers joined to ids through `note_numbers` as for
the other staged rows. Numpy rows become `FLOAT[n]` through a registered object column (one
array per row), not a LIST parameter: binding 60,000 x 256 floats as Python lists took 20 s,
the registered column 0.6 s. This module imports neither numpy nor DuckDB at import time (the
parse workers import it). Search
uses DuckDB's built-in `array_inner_product` (the rows are unit vectors, so it is the cosine):
no extension, nothing downloaded. It runs in two stages: a scan of every document's `head`
(its first HEAD_DIMS dimensions, renormalised: the model is trained to be cut) keeps the
closest `max(1,000, limit x 50)` documents, and only those are scored on all dimensions.
The scan's cost is reading and multiplying the arrays, so half the dimensions is about half
the time. benchmarks/bench_semantic.py measures it against the exact scan, and the recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from vaultmem.storage.store import Connection

Ranked = list[tuple[str, list[tuple[int, float]]]]
"""Notes, best first, each with its best documents as (ord, score), best first."""


HEAD_DIMS = 128
"""Dimensions of `vectors.head`, the first stage's vector."""


def heads(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """The first HEAD_DIMS columns of each row, normalised to length 1 (a zero row stays 0)."""
    import numpy as np

    head = matrix[:, :HEAD_DIMS].astype(np.float64)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    out: NDArray[np.float64] = np.divide(head, norms, out=np.zeros_like(head), where=norms > 0)
    return out.astype(np.float32)


def _column(rows: NDArray[np.float32]) -> NDArray[Any]:
    import numpy as np

    column = np.empty(len(rows), dtype=object)
    column[:] = list(rows)
    return column


def stage_vectors(
    path: Path, numbers: Sequence[int], ords: Sequence[int], matrix: NDArray[np.float32]
) -> None:
    """Write one chunk's vectors as a Parquet file for `load_staged_vectors`: row i is
    document `ords[i]` of the note numbered `numbers[i]` in this run. Runs in the worker,
    with a private in-memory DuckDB (one thread: the pool already uses every core); the
    conversion of numpy rows to `FLOAT[n]` arrays happens here, not in the loading process."""
    import duckdb
    import numpy as np

    dims = int(matrix.shape[1]) if matrix.ndim == 2 else 0
    with duckdb.connect(config={"threads": 1}) as con:
        con.register(
            "vectors_staged",
            {
                "number": np.asarray(numbers, dtype=np.int64),
                "ord": np.asarray(ords, dtype=np.int32),
                "embedding": _column(matrix),
                "head": _column(heads(matrix)),
            },
        )
        con.execute(
            f"COPY (SELECT number, ord, embedding::FLOAT[{dims}] AS embedding, "
            f"head::FLOAT[{HEAD_DIMS}] AS head FROM vectors_staged) TO $path (FORMAT parquet)",
            {"path": str(path)},
        )


def load_staged_vectors(con: Connection, paths: Sequence[Path]) -> int:
    """Insert the staged vectors of these chunk files in one statement, each note's number
    joined to its id through `note_numbers` (`index_writes.number_notes`): rows of a number
    not in it (a note prepared again since) are dropped. Returns the rows inserted.

    One INSERT from the files lets DuckDB write the rows out as it goes, within the
    connection's memory limit. Inserting the same rows from registered numpy columns, 20,000
    per statement, held all of them in memory until the commit: 1.5 GB for 533,000 vectors
    (the 100,000-note build peaked at 1.8 GB), against 0.64 GB from the files."""
    if not paths:
        return 0
    row = con.execute(
        "INSERT INTO vectors SELECT m.note_id, s.ord, s.embedding, s.head "
        "FROM read_parquet($paths) s JOIN note_numbers m ON m.number = s.number",
        {"paths": [str(p) for p in paths]},
    ).fetchone()
    return int(row[0]) if row else 0


def embedding_model(con: Connection) -> str:
    """`meta.embedding_model`: the model that filled `vectors`, or `none`."""
    row = con.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    return str(row[0]) if row else "none"


_FIRST_SQL = """
first_stage AS (
    SELECT v.rowid AS row FROM vectors v {join} WHERE {filters}
    ORDER BY array_inner_product(v.head, $head::FLOAT[{head_dims}]) DESC, v.note_id, v.ord
    LIMIT {documents}
),
"""

_NEAREST_SQL = """
WITH {first} scored AS (
    SELECT v.note_id, v.ord, array_inner_product(v.embedding, $q::FLOAT[{dims}]) AS score
    FROM vectors v {join} WHERE {filters} {top}
)
SELECT note_id, max(score) AS best,
       list(ord ORDER BY score DESC, ord)[1:5] AS ords,
       list(score ORDER BY score DESC, ord)[1:5] AS scores
FROM scored GROUP BY note_id ORDER BY best DESC, note_id LIMIT $limit
"""

CANDIDATE_DOCUMENTS = 50
MIN_CANDIDATES = 1_000
"""The first stage keeps the `max(1,000, limit x 50)` documents closest by `head`: on 10,000
generated notes that found 99.5% of brute force's top 10 notes in 0.65x its time (docs/search.md
has the figures). More candidates cost more than they find: ranking 5,000 of them made hybrid's
50-note pool slower than the exact scan. An index of fewer documents is searched exactly:
every document passes the first stage."""

CANDIDATES_PER_NOTE = 10
"""The closest `limit x 10` documents are ranked first; grouping every document by note cost a
third of a query at 100,000 notes. Their notes, by best document, are exactly the top notes
whenever they number at least `limit` (else the query runs again over all documents)."""


def nearest_notes(
    con: Connection,
    vector: Sequence[float],
    *,
    limit: int,
    where: str = "true",
    params: dict[str, Any] | None = None,
    excluded: Sequence[str] = (),
    candidates: int | None = None,
) -> Ranked:
    """The `limit` notes whose best document is closest to `vector` (cosine), each with its
    closest documents (up to five). `where` filters on the note (alias `n`), as BM25's does;
    a note holding an `excluded` term is left out. Only the `candidates` documents closest by
    `head` (default `max(MIN_CANDIDATES, limit x CANDIDATE_DOCUMENTS)`) are scored;
    `candidates=0` scores every document (brute force, exact)."""
    if candidates is None:
        candidates = max(MIN_CANDIDATES, limit * CANDIDATE_DOCUMENTS)
    join = "" if where == "true" else "JOIN notes n ON n.id = v.note_id"
    bound = {"q": list(vector), "limit": limit, **(params or {})}
    if excluded:
        where += (
            " AND v.note_id NOT IN (SELECT xn.id FROM postings x "
            "JOIN notes xn ON xn.note_key = x.note_key "
            "WHERE x.term IN (SELECT unnest($excluded::VARCHAR[])))"
        )
        bound["excluded"] = list(excluded)
    top = f"ORDER BY score DESC, v.note_id, v.ord LIMIT {limit * CANDIDATES_PER_NOTE}"
    exact = {"first": "", "dims": len(vector), "join": join, "filters": where}
    attempts = [(exact, top), (exact, "")]  # the second: fewer than `limit` notes in the first
    if candidates > 0:
        first = _FIRST_SQL.format(
            join=join, filters=where, head_dims=HEAD_DIMS, documents=candidates
        )
        staged = {
            **exact,
            "first": first,
            "join": "",
            "filters": "v.rowid IN (SELECT row FROM first_stage)",
        }
        attempts[0] = (staged, top)
    rows: list[Any] = []
    for parts, ordered in attempts:
        sql = _NEAREST_SQL.format(**parts, top=ordered)
        rows = con.execute(
            sql, {**bound, "head": heads_of(vector)} if parts["first"] else bound
        ).fetchall()
        if len(rows) >= limit:
            break
    return [(r[0], [(int(o), float(s)) for o, s in zip(r[2], r[3], strict=True)]) for r in rows]


def heads_of(vector: Sequence[float]) -> list[float]:
    """A query's `head`, as `heads` makes a document's."""
    import numpy as np

    return [float(x) for x in heads(np.array([vector], dtype=np.float32))[0]]


def note_cards(con: Connection, note_ids: Sequence[str]) -> dict[str, tuple[str, str, str, Any]]:
    """id → (path, title, scope, scope_id) of these notes."""
    if not note_ids:
        return {}
    rows = con.execute(
        f"SELECT id, path, title, scope, scope_id FROM notes WHERE id IN "
        f"({', '.join('?' * len(note_ids))})",
        list(note_ids),
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

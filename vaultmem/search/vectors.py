"""Semantic recall: static embeddings of the search documents, fused with BM25 at query time.

What words cannot find is vocabulary mismatch ("money back" vs a note titled *Refund policy*).
Each search document (a note's title document and each section, `documents.py`) gets one unit
vector: the mean of its tokens' static embeddings. A query is embedded the same way and the
documents closest by cosine are found by brute force in DuckDB (`storage/vector_queries.py`).

The model is wordllama's `l2_supercat` token table (32,000 tokens x 256 dimensions, float16,
16 MB) with its tokenizer, both shipped inside the `wordllama` wheel. We open those two files
directly and never import `wordllama` itself: its loader looks for the tokenizer in a folder the
wheel does not have and then downloads it from a model hub, and it configures the root logger
at import. So nothing here can touch the network. The files are read with `safetensors` and
`tokenizers`, the optional `semantic` extra; without it, asking for vectors raises
`SemanticUnavailableError` with the install command.

Pure parts (no I/O, no numpy): `embedding_text`, `query_text`, `fuse`. The I/O part is
`Embedder.load` (reads the model files); `Embedder.embed` is numpy arithmetic.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.errors import QueryError, SemanticUnavailableError
from vaultmem.models import SEARCH_MODE_WHEN_ON, SEARCH_MODES, SearchMode
from vaultmem.search import query
from vaultmem.search.documents import SearchDocument
from vaultmem.search.query import SearchFilters, SearchHit
from vaultmem.storage import search_queries, vector_queries
from vaultmem.storage.store import Connection
from vaultmem.storage.vector_queries import Ranked

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

Mode = SearchMode
MODES = SEARCH_MODES

MODEL_ID = "wordllama/l2_supercat_256"
TEXT_VERSION = 1
"""Bump when `embedding_text` changes: the stored vectors then no longer match a query's."""
INDEX_ID = f"{MODEL_ID}/text-v{TEXT_VERSION}"
"""Recorded in `meta.embedding_model`; another value (semantic off: `none`) rebuilds."""
DIMENSIONS = 256
MAX_CHARS = 512
"""A document is embedded from its first 512 characters (with the note's title and the
section's heading in front). Measured on the question sets against 1,024 and 2,048: as good or
better (a mean over a long section drifts towards generic words), and tokenizing is most of
the embedding time."""
MAX_TOKENS = 256
RRF_K = 60
"""Reciprocal rank fusion's constant: a note at rank r in a ranking earns 1 / (RRF_K + r)."""
DEFAULT_WHEN_ON = SEARCH_MODE_WHEN_ON
"""The mode a search without `--mode` uses when the index holds vectors (else `words`). Set by
the rule in docs/search.md: hybrid becomes it only if it beats words on r@5 AND MRR@10 on every
question set and stays within 2x of words' warm latency. After search v2 it does not
(benchmarks/bench_semantic.py: it loses to words on dwarvesf-brain and example-vault, ties on
example-vault-mismatch's r@5), so vectors are asked for explicitly."""
POOL = 50
"""How many notes each ranking contributes to a fusion (at least; more for a larger limit)."""

_WEIGHTS_FILE = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER_FILE = ("tokenizers", "l2_supercat_tokenizer_config.json")
_OPERATOR = re.compile(r"(?:^|\s)(?:-\S+|(?:tag|path|type):\S+)", re.I)
_CHUNK = 32
"""Documents pooled per numpy step: the gathered token vectors stay in the CPU cache."""

# -- pure ----------------------------------------------------------------------------------


def embedding_text(title: str, ord_: int, heading: str | None, text: str) -> str:
    """What a document's vector is made of, cut to MAX_CHARS: the note-level document's text
    (title, aliases, tags); for a section, the note's title, its heading and its text (the title
    tells what a section of a note is about: better r@5 and MRR on both question sets)."""
    if ord_ == 0:
        return text[:MAX_CHARS]
    return f"{title}\n{heading or ''}\n{text}"[:MAX_CHARS]


def embedding_texts(documents: Sequence[SearchDocument]) -> list[str]:
    """`embedding_text` of each document of one or more notes, each note's in order: its
    title is the first line of its note-level document (ord 0), which comes first."""
    texts, title = [], ""
    for doc in documents:
        if doc.ord == 0:
            title = doc.text.split("\n", 1)[0]
        texts.append(embedding_text(title, doc.ord, doc.heading, doc.text))
    return texts


def query_text(query: str) -> str:
    """The words of a query without its operators (`tag:x`, `path:p`, `type:t`, `-excluded`),
    which filter rather than describe; quotes are dropped."""
    return " ".join(_OPERATOR.sub(" ", query).replace('"', " ").split())


def fuse(
    rankings: Sequence[Sequence[str]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each ranking (ids, best first) gives an id w / (k + rank), rank
    from 1; ids are returned by the sum, best first, ties by id."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


# -- the model -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Embedder:
    """A static embedding model: a token table and the tokenizer that indexes it."""

    table: NDArray[np.float32]
    tokenizer: Tokenizer
    name: str = MODEL_ID

    @property
    def dimensions(self) -> int:
        return int(self.table.shape[1])

    @classmethod
    def load(cls, dimensions: int = DIMENSIONS) -> Embedder:
        """Open the model files inside the installed `wordllama` package (no network, ever).

        `dimensions` below 256 keeps the first ones (the table is trained Matryoshka-style
        for 64 and 128 too); the benchmark compares them."""
        try:
            import numpy as np
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as error:
            raise _missing(str(error)) from None
        try:
            spec = importlib.util.find_spec("wordllama")
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.origin is None:
            raise _missing("the `wordllama` package is not installed")
        root = Path(spec.origin).parent
        weights, tokenizer_file = root.joinpath(*_WEIGHTS_FILE), root.joinpath(*_TOKENIZER_FILE)
        if not weights.is_file() or not tokenizer_file.is_file():
            raise _missing(f"the `wordllama` package at {root} lacks its model files")
        table = load_file(str(weights))["embedding.weight"][:, :dimensions]
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        name = MODEL_ID if dimensions == DIMENSIONS else f"{MODEL_ID}@{dimensions}"
        # The vectors stored in the index are this name's, with TEXT_VERSION's text.
        return cls(np.ascontiguousarray(table, dtype=np.float32), tokenizer, name)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One unit vector per text (a row of zeros for a text without tokens)."""
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(
            [t[:MAX_CHARS] for t in texts], add_special_tokens=False
        )
        vocabulary = self.table.shape[0]
        for first in range(0, len(texts), _CHUNK):
            chunk = encoded[first : first + _CHUNK]
            lengths = np.fromiter((len(e.ids) for e in chunk), np.int64, len(chunk))
            if not lengths.any():
                continue
            ids = np.fromiter((i for e in chunk for i in e.ids), np.int64, int(lengths.sum()))
            # Count each (document, token) pair once and gather each token vector once.
            keys = np.repeat(np.arange(len(chunk), dtype=np.int64), lengths) * vocabulary + ids
            pairs, counts = np.unique(keys, return_counts=True)
            rows = self.table[pairs % vocabulary] * counts[:, None].astype(np.float32)
            owners = pairs // vocabulary
            present = np.unique(owners)
            starts = np.searchsorted(owners, present)
            out[first + present] = np.add.reduceat(rows, starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: NDArray[np.float32] = out / norms
        return result


def _missing(why: str) -> SemanticUnavailableError:
    return SemanticUnavailableError(
        f"Semantic recall needs the optional `semantic` extra: {why}.",
        hint="pip install 'vaultmem[semantic]' (or set `semantic = false` under [search] in "
        ".vaultmem/config.toml).",
    )


@functools.cache
def embedder() -> Embedder:
    """The process's model, loaded once (~0.2 s)."""
    return Embedder.load()


def embed_documents(documents: Sequence[SearchDocument]) -> NDArray[np.float32]:
    """One unit vector per search document, rows in the given order (whole notes, each note's
    documents in order, as `note_documents` makes them)."""
    return embedder().embed(embedding_texts(documents))


EMBED_NOTES = 2_000
"""Notes embedded and loaded per step of `index_notes`: their texts and vectors are all that is
held, so a 100,000-note build's memory no longer grows with the vault."""


def index_notes(con: Connection, note_ids: Sequence[str]) -> int:
    """The reconcile hook: embed the search documents of these notes, already written in the
    caller's transaction, and insert their vectors there too, EMBED_NOTES notes at a time. A
    one-note edit embeds that note only; deletes and renames go with the note's other rows
    (`storage/rows.NOTE_TABLES`). Returns the number of vectors written."""
    model = embedder()
    written = 0
    for start in range(0, len(note_ids), EMBED_NOTES):
        rows = vector_queries.embedding_rows(con, note_ids[start : start + EMBED_NOTES])
        matrix = model.embed([embedding_text(t, o, h, x) for _, o, t, h, x in rows])
        vector_queries.load_vectors(con, [r[0] for r in rows], [r[1] for r in rows], matrix)
        written += len(rows)
    return written


def embed_query(query: str) -> list[float]:
    """A query's unit vector, as the list DuckDB binds to `FLOAT[256]`."""
    vector: list[Any] = embedder().embed([query_text(query)])[0].tolist()
    return [float(x) for x in vector]


# -- search --------------------------------------------------------------------------------


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
) -> list[SearchHit]:
    """Search by `mode`: words (BM25, `query.search`), vectors (cosine over the document
    vectors) or hybrid (both rankings fused by reciprocal rank). Filters, operators and
    -exclusions apply to every mode; `"phrases"` constrain the words ranking only. Without a
    mode: DEFAULT_WHEN_ON when the index holds vectors, else words. `language` and `clean` are
    `query.search`'s (the stemmer; the redaction applied before a snippet is cut)."""
    if mode is None:  # no meta read per search while the default is words anyway
        mode = DEFAULT_WHEN_ON
        if mode != "words" and vector_queries.embedding_model(con) == "none":
            mode = "words"
    if mode not in MODES:
        raise QueryError(f"Unknown search mode {mode!r}.", hint=f"Use one of {', '.join(MODES)}.")
    filters = filters or SearchFilters()
    language = language or search_queries.index_language(con)
    if mode == "words":
        return query.search(
            con, text, filters, limit=limit, k1=k1, b=b, language=language, clean=clean
        )
    require_vectors(con)
    if not query_text(text):
        raise QueryError(
            f"The query {text!r} has no words to compare by meaning.",
            hint='Ask in words, e.g. vaultmem search "how do I get my money back" --mode vectors',
        )
    parsed = query.parse_query(text, language)
    notes = query.note_filter(parsed, filters)
    pool = limit if mode == "vectors" else max(POOL, limit)
    nearest = vector_queries.nearest_notes(
        con,
        embed_query(text),
        limit=pool,
        where=notes.where,
        params=notes.params,
        excluded=parsed.excluded,
    )
    terms = set(parsed.terms)
    if mode == "vectors":
        return _hits(con, nearest, terms, language, clean)
    worded: list[search_queries.RankedNote] = []
    if parsed.terms:  # a query of stop words only: the vectors still understand it
        worded, terms = query.ranked_notes(
            con, text, filters, limit=pool, k1=k1, b=b, language=language
        )
    fused = fuse([[note.note_id for note in worded], [note_id for note_id, _ in nearest]])
    # A note's shown section: its best by words when words found it, else by vectors.
    docs = {**dict(nearest), **{note.note_id: note.documents for note in worded}}
    ranked = [(note_id, docs[note_id]) for note_id, _ in fused[:limit]]
    scores = dict(fused)
    return [
        replace(hit, score=round(scores[hit.note_id], 6))
        for hit in _hits(con, ranked, terms, language, clean)
    ]


def require_vectors(con: Connection) -> None:
    """Fail clearly when the index holds no vectors (semantic recall off for this vault)."""
    if vector_queries.embedding_model(con) == "none":
        raise SemanticUnavailableError(
            "This index has no vectors: semantic recall is off for this vault.",
            hint="Set `semantic = true` under [search] in .vaultmem/config.toml and run "
            "`vaultmem reconcile` (needs pip install 'vaultmem[semantic]'); or use --mode words.",
        )


def _hits(
    con: Connection,
    ranked: Ranked,
    terms: set[str],
    language: str,
    clean: Callable[[str], str] | None,
) -> list[SearchHit]:
    """Hits for ranked notes: the best-ranked section with text is the one shown."""
    ids = [note_id for note_id, _ in ranked]
    if not ids:
        return []
    cards = vector_queries.note_cards(con, ids)
    sections = search_queries.note_sections(con, ids)
    hits = []
    for note_id, docs in ranked:
        path, title, scope, scope_id = cards[note_id]
        heading, line, body = query.shown_section(docs, sections.get(note_id, {}))
        if clean is not None:
            body = clean(body)
        hits.append(
            SearchHit(
                note_id=note_id,
                path=path,
                title=title,
                scope=scope,
                scope_id=scope_id,
                heading=heading,
                line=line,
                score=round(docs[0][1], 6) if docs else 0.0,
                snippet=query.snippet(body, terms, language=language),
                sections=tuple({"ord": o, "score": round(sc, 6)} for o, sc in docs[:5]),
            )
        )
    return hits

"""The embedding model of semantic recall, and the parse workers' hook that uses it.

Each search document (a note's title document and each section, `documents.py`) gets one unit
vector: the mean of its tokens' static embeddings. The model is wordllama's `l2_supercat`
token table (32,000 tokens x 256 dimensions, float16, 16 MB) with its tokenizer, both shipped
inside the `wordllama` wheel. We open those two files directly and never import `wordllama`
itself: its loader looks for the tokenizer in a folder the wheel does not have and then
downloads it from a model hub, and it configures the root logger at import. So nothing here can
touch the network. The files are read with `safetensors` and `tokenizers`, the optional
`semantic` extra; without it, loading the model raises `SemanticUnavailableError` with the
install command.

Documents are embedded where they are made: in the parse workers, chunk by chunk
(`stage_vectors`, handed to `index.parallel` by reconcile), so a full build embeds on every core
and a one-note edit embeds that note only. This module imports neither DuckDB nor numpy at
import time: a worker loads the model once, on its first chunk.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vaultmem.core.documents import SearchDocument
from vaultmem.core.errors import SemanticUnavailableError
from vaultmem.storage import vector_queries

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

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

_WEIGHTS_FILE = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER_FILE = ("tokenizers", "l2_supercat_tokenizer_config.json")
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
    """The process's model, loaded once (~0.2 s): in each parse worker, on its first chunk."""
    return Embedder.load()


# -- the parse workers' hook ------------------------------------------------------------------


def stage_vectors(path: Path, notes: Sequence[tuple[int, str, Sequence[SearchDocument]]]) -> Path:
    """Embed the search documents of a chunk's parsed notes, given as (note number, title, its
    documents), and stage them in `path`, a Parquet file that the write transaction loads
    (`vector_queries.load_staged_vectors`). Runs in the process that made the documents: a
    parse worker, or reconcile's own process for a small batch."""
    texts = [
        embedding_text(title, doc.ord, doc.heading, doc.text)
        for _, title, docs in notes
        for doc in docs
    ]
    numbers = [number for number, _, docs in notes for _ in docs]
    ords = [doc.ord for _, _, docs in notes for doc in docs]
    vector_queries.stage_vectors(path, numbers, ords, embedder().embed(texts))
    return path

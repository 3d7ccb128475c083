"""Search measurements: in how many groups of the reference collection a PII span occurs,
alone and together with each other PII span of the same text.

A span is looked up as the documents that contain *every* word segment of it (a span such
as ``36110/97`` is two segments; a segment longer than the index's ``max_n`` is split into
``max_n``-word windows): the same N-gram index and normalisation as :mod:`presidio_delink.
linkage`, applied to combinations of PII spans instead of free N-grams. Frequencies are in
groups (distinct people or cases) when the index has groups, as ``k`` is everywhere else.

Cost: one look-up per segment window, then one sorted-array intersection per pair of spans
(``O(s^2)`` intersections for ``s`` spans, each linear in the shorter posting list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from presidio_delink.index.ngram_index import NgramIndex


def span_postings(index: NgramIndex, span_text: str) -> np.ndarray | None:
    """Sorted document ordinals containing every word of ``span_text``; ``None`` when it has
    no word (it then constrains nothing)."""
    n = index.max_n
    post: np.ndarray | None = None
    for seg in index.primary.tokenizer.word_segments(span_text):
        for i in range(0, len(seg), n):
            found = np.asarray(index.lookup(seg[i : i + n]), dtype=np.int64)
            post = found if post is None else np.intersect1d(post, found, assume_unique=True)
    return post


def _count(index: NgramIndex, ordinals: np.ndarray | None) -> int:
    if ordinals is None:
        return index.n_groups
    return int(len(index.groups_of(ordinals)))


def measure(
    index: NgramIndex, span_texts: Sequence[str], max_docs: int = 5
) -> list[dict[str, Any]]:
    """Per span: ``df`` (groups containing it), ``min_pair_df`` (fewest groups containing it
    and one other span), ``partner`` (that other span's position), ``n_pairs_unique``
    (other spans it occurs with in at most one group) and ``docs`` (up to ``max_docs`` ids
    of the documents of its rarest combination: the explanation)."""
    posts = [span_postings(index, t) for t in span_texts]
    out: list[dict[str, Any]] = []
    for i, p in enumerate(posts):
        df = _count(index, p)
        best, partner, best_post, n_unique = df, None, p, 0
        for j, q in enumerate(posts):
            if j == i or span_texts[j].strip().lower() == span_texts[i].strip().lower():
                continue
            if p is None:
                both = q
            elif q is None:
                both = p
            else:
                both = np.intersect1d(p, q, assume_unique=True)
            c = _count(index, both)
            if c <= 1:
                n_unique += 1
            if c < best:
                best, partner, best_post = c, j, both
        docs = (
            [index.doc_ids[int(o)] for o in best_post[:max_docs]] if best_post is not None else []
        )
        out.append(
            {
                "df": df,
                "min_pair_df": best,
                "partner": partner,
                "n_pairs_unique": n_unique,
                "docs": docs,
            }
        )
    return out

"""Evaluation of the privacy risk indicators (:mod:`presidio_delink.risk`).

Definitions:

- *MASK decision*: precision, recall and F1 of the spans an indicator masks against the
  human MASK / NO_MASK label of each span in the span tables.
- *Entity-level recall* (TAB, Pilán et al. 2022; TAE): an entity the annotators marked
  DIRECT or QUASI (its first mention's type decides which; an entity is to be masked when
  any of its mentions is) counts as protected only if every mention that needs masking is
  masked. A mention is masked when every character of it is covered by a masked span,
  ignoring punctuation, spaces and the function words of :data:`SKIP_WORDS` (annotators
  differ on including them). Entities of several annotators are counted separately
  (micro-average over annotators).
- *Downstream*: words inside masked spans, and search linkage of the masked text (spans
  replaced by ``<TYPE>``) in the reference index: documents with an N-gram found in fewer
  than ``k`` groups.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SKIP_WORDS = (
    "mr", "mrs", "ms", "and", "or", "from", "until", "to", "about", "after", "as", "at",
    "before", "between", "by", "during", "for", "in", "into", "of", "on", "over", "since",
    "with", "the", "a", "an", "no", "nr", "’s", "'s",
)
_SKIP = re.compile(
    "(?:"
    + "|".join([r"\b" + re.escape(w) + r"\b" for w in SKIP_WORDS]
               + [re.escape(c) for c in ",.-;:/&()[]–'\" ’“”"])
    + ")",
    re.IGNORECASE,
)


@dataclass
class GoldEntity:
    entity_id: str
    direct: bool
    need_mask: bool
    mentions: list[tuple[int, int, bool]] = field(default_factory=list)


def load_gold(data_root: Path, dataset: str) -> dict[str, list[GoldEntity]]:
    """Gold entities per document: Wikipedia test (all annotators) or the TAB test documents
    of ``tab_sample144_one_annotator.jsonl`` (one annotator each; the only TAB test texts
    with entity annotations here)."""
    docs: list[tuple[str, list[list[dict[str, Any]]]]] = []
    if dataset == "wiki":
        for d in json.loads((data_root / "wikibio/wiki_test_annotated_100.json").read_text()):
            docs.append((d["doc_id"], [a["entity_mentions"] for a in d["annotations"].values()]))
    else:
        with (data_root / "tab/tab_sample144_one_annotator.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                prov = d["metadata"]["provenance"]
                if prov.get("dataset_type") == "test":
                    docs.append((prov["doc_id"], [d["entities"]]))
    out: dict[str, list[GoldEntity]] = {}
    for doc_id, annotators in docs:
        ents: list[GoldEntity] = []
        for n, mentions in enumerate(annotators):
            by_id: dict[str, GoldEntity] = {}
            for m in mentions:
                kind = m["identifier_type"]
                need = kind in ("DIRECT", "QUASI")
                key = f"{n}:{m['entity_id']}"
                ent = by_id.get(key)
                if ent is None:
                    ent = by_id[key] = GoldEntity(key, kind == "DIRECT", need)
                ent.need_mask = ent.need_mask or need
                ent.mentions.append((int(m["start_offset"]), int(m["end_offset"]), need))
            ents += by_id.values()
        out[doc_id] = ents
    return out


def covered(length: int, spans: Iterable[tuple[int, int]]) -> np.ndarray:
    mask = np.zeros(length, dtype=bool)
    for s, e in spans:
        mask[max(0, s) : max(0, e)] = True
    return mask


def mention_masked(text: str, mask: np.ndarray, start: int, end: int) -> bool:
    left = ~mask[start:end]
    if not left.any():
        return True
    for m in _SKIP.finditer(text[start:end]):
        left[m.start() : m.end()] = False
    return not left.any()


def entity_recall(
    gold: dict[str, list[GoldEntity]],
    texts: dict[str, str],
    masked: dict[str, Sequence[tuple[int, int]]],
    direct: bool | None,
) -> tuple[int, int]:
    """``(protected, total)`` entities to mask (``direct``: True DIRECT only, False QUASI
    only, None both) in the documents of ``masked``."""
    hit = total = 0
    for doc_id, spans in masked.items():
        text = texts[doc_id]
        mask = covered(len(text), spans)
        for ent in gold.get(doc_id, []):
            if not ent.need_mask or (direct is not None and ent.direct != direct):
                continue
            total += 1
            hit += all(
                mention_masked(text, mask, s, e) for s, e, need in ent.mentions if need
            )
    return hit, total


def prf(pred: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    tp = int((pred & (y == 1)).sum())
    p = tp / max(1, int(pred.sum()))
    r = tp / max(1, int((y == 1).sum()))
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def propagate(doc_ids: Sequence[str], texts: Sequence[str], pred: np.ndarray) -> np.ndarray:
    """Mask every span whose text (case-folded) is masked elsewhere in the same document:
    the mentions of one entity share one decision."""
    hot = {(d, t.casefold().strip()) for d, t, p in zip(doc_ids, texts, pred, strict=True) if p}
    return np.array(
        [bool(p) or (d, t.casefold().strip()) in hot
         for d, t, p in zip(doc_ids, texts, pred, strict=True)]
    )


def words_in(text: str, spans: Iterable[tuple[int, int]]) -> int:
    mask = covered(len(text), spans)
    return sum(1 for m in re.finditer(r"\w+", text) if mask[m.start() : m.end()].any())


def masked_text(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with each span replaced by ``<TYPE>`` (overlaps merged into the first)."""
    out, pos = [], 0
    for s, e, t in sorted(spans):
        if e <= pos:
            continue
        s = max(s, pos)
        out.append(text[pos:s])
        out.append(f"<{t}>")
        pos = e
    out.append(text[pos:])
    return "".join(out)


def linkage(index: Any, texts: dict[str, str], k: int = 2) -> tuple[int, int]:
    """``(documents that link, flagged N-grams)`` of masked texts in ``index``."""
    from presidio_delink.linkage import analyze

    linked = flagged = 0
    for text in texts.values():
        rep = analyze(index, text, k=k, arity=1)
        linked += bool(rep.linkable)
        flagged += len(rep.flagged)
    return linked, flagged

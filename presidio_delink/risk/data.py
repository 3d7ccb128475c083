"""The span tables of Papadopoulou et al. (``indicator_spans/*.csv``) and their texts.

Each row is one detected PII span: ``semantic_type`` (PERSON, ORG, LOC, DATETIME, DEM,
QUANTITY, CODE, MISC), ``offsets`` ``(start, end)`` into the document text, ``label``
MASK / NO_MASK (the human decision), ``probability`` (the paper's BERT log-probability of
each subtoken) and ``no_tokens`` / ``no_subtokens``. Texts exist for Wikipedia *test* and
TAB *test* only (Wikipedia train has rows but no texts here).
"""

from __future__ import annotations

import ast
import csv
import json
from dataclasses import dataclass
from pathlib import Path

from presidio_delink.errors import InputError

SPAN_TABLES = {
    ("wiki", "train"): "wikibio/indicator_spans/wiki_train_spans.csv",
    ("wiki", "test"): "wikibio/indicator_spans/wiki_test_spans.csv",
    ("tab", "test"): "tab/indicator_spans/tab_test_spans.csv",
}
TEXTS = {"wiki": "wikibio/wiki_test_annotated_100.json", "tab": "tab/tab_test_texts.json"}


@dataclass(frozen=True)
class SpanRow:
    doc_id: str
    start: int
    end: int
    label_type: str
    text: str
    mask: bool
    bert_logprobs: tuple[float, ...]
    no_tokens: int
    no_subtokens: int


def load_span_table(data_root: Path, dataset: str, split: str) -> dict[str, list[SpanRow]]:
    """Rows of one span table grouped by document, in table order."""
    try:
        rel = SPAN_TABLES[(dataset, split)]
    except KeyError:
        raise InputError(f"no span table for {dataset!r} {split!r}") from None
    path = Path(data_root) / rel
    out: dict[str, list[SpanRow]] = {}
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            for n, rec in enumerate(csv.DictReader(fh), start=2):
                try:
                    start, end = ast.literal_eval(rec["offsets"])
                    row = SpanRow(
                        doc_id=rec["doc_id"],
                        start=int(start),
                        end=int(end),
                        label_type=rec["semantic_type"],
                        text=rec["span_text"],
                        mask=rec["label"] == "MASK",
                        bert_logprobs=tuple(float(x) for x in ast.literal_eval(rec["probability"])),
                        no_tokens=int(rec["no_tokens"]),
                        no_subtokens=int(rec["no_subtokens"]),
                    )
                except (KeyError, ValueError, SyntaxError, TypeError) as exc:
                    raise InputError(f"{path}:{n}: bad span row ({exc})") from None
                out.setdefault(row.doc_id, []).append(row)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    return out


def load_texts(data_root: Path, dataset: str) -> dict[str, str]:
    """``{doc_id: text}`` of the test documents of ``dataset`` (``wiki`` or ``tab``)."""
    path = Path(data_root) / TEXTS[dataset]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    if isinstance(data, list):
        return {d["doc_id"]: d["text"] for d in data}
    return {k: v for k, v in data.items() if isinstance(v, str)}

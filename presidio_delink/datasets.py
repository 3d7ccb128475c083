"""Loaders of the shared evaluation data: TAB (ECHR cases) and Wikipedia biographies.

The data lives outside the package (``../shared/data`` beside the repository, or the
folder named by ``PRESIDIO_DELINK_DATA``); see its READMEs for provenance and licences.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from presidio_delink.errors import InputError

REDACTED = "[REDACTED]"


def data_dir() -> Path:
    """The shared data folder: ``$PRESIDIO_DELINK_DATA`` or ``../shared/data``."""
    env = os.environ.get("PRESIDIO_DELINK_DATA")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for c in candidates:
        if (c / "tab").is_dir():
            return c
    raise InputError(
        "shared data not found: set PRESIDIO_DELINK_DATA to the folder holding tab/ and wikibio/"
    )


def _load(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc


def apply_masks(
    text: str, spans: Sequence[Sequence[object]], placeholder: str | None = REDACTED
) -> str:
    """Replace character spans ``[start, end, (label)]`` by a placeholder.

    Overlapping or touching spans are merged first.  With ``placeholder=None`` each span
    becomes ``<LABEL>`` (Presidio's replace style).
    """
    cleaned = sorted(
        (int(s[0]), int(s[1]), str(s[2]) if len(s) > 2 else "REDACTED")  # type: ignore[call-overload]
        for s in spans
    )
    merged: list[tuple[int, int, str]] = []
    for a, b, lab in cleaned:
        if not 0 <= a <= b <= len(text):
            raise InputError(f"mask span {a}-{b} is outside a text of {len(text)} characters")
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b), merged[-1][2])
        else:
            merged.append((a, b, lab))
    out: list[str] = []
    pos = 0
    for a, b, lab in merged:
        out.append(text[pos:a])
        out.append(placeholder if placeholder is not None else f"<{lab}>")
        pos = b
    out.append(text[pos:])
    return "".join(out)


def tab_collection(root: Path | None = None) -> Iterator[tuple[str, str]]:
    """The TAB reference collection: 1,635 documents, about 1.07 M words.

    The 127 test texts (``tab:ID``), the 144 annotated documents less the 31 already among
    the test texts (``tab:ID``), the HUDOC public text of each test case (``hudoc:ID``)
    and the 10 % HUDOC sample (``hudoc10:ID``; null texts kept as empty documents).
    """
    d = (root or data_dir()) / "tab"
    test = _load(d / "tab_test_texts.json")
    assert isinstance(test, dict)
    for k, v in test.items():
        yield f"tab:{k}", v
    with open(d / "tab_sample144_one_annotator.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            doc_id = rec["metadata"]["provenance"]["doc_id"]
            if doc_id not in test:
                yield f"tab:{doc_id}", rec["text"]
    for name, prefix in (
        ("tab_test_hudoc_public_full.json", "hudoc"),
        ("tab_all_hudoc_public_10pct.json", "hudoc10"),
    ):
        docs = _load(d / name)
        assert isinstance(docs, dict)
        for k, v in docs.items():
            yield f"{prefix}:{k}", v or ""


def tab_test(
    masks: str = "gold", root: Path | None = None, placeholder: str | None = REDACTED
) -> Iterator[tuple[str, str, str]]:
    """The 127 TAB test documents: ``(collection_id, original, de-identified)``.

    Args:
        masks: ``"gold"`` (manual entity masks) or ``"presidio"`` (Presidio's masks).
        placeholder: what replaces a masked span; None gives ``<LABEL>``.
    """
    files = {
        "gold": "tab_test_masks_manual_entity.json",
        "presidio": "tab_test_masks_presidio_entity.json",
    }
    if masks not in files:
        raise InputError(f"masks must be one of {sorted(files)}, got {masks!r}")
    d = (root or data_dir()) / "tab"
    texts = _load(d / "tab_test_texts.json")
    spans = _load(d / files[masks])
    assert isinstance(texts, dict) and isinstance(spans, dict)
    for k, text in texts.items():
        yield f"tab:{k}", text, apply_masks(text, spans.get(k, []), placeholder)


def wikibio_collection(root: Path | None = None) -> Iterator[tuple[str, str]]:
    """Wikipedia biographies: the 100 test summaries (``wiki:ID``) and the public background
    text of the 553 people (``wikibg:ID``, null entries skipped)."""
    d = (root or data_dir()) / "wikibio"
    for doc in _load(d / "wiki_test_annotated_100.json"):  # type: ignore[attr-defined]
        yield f"wiki:{doc['doc_id']}", doc["text"]
    bg = _load(d / "wiki553_public_background.json")
    assert isinstance(bg, dict)
    for k, v in bg.items():
        if v:
            yield f"wikibg:{k}", v


def wikibio_test(
    masks: str = "manual", root: Path | None = None, placeholder: str | None = REDACTED
) -> Iterator[tuple[str, str, str]]:
    """The 100 Wikipedia test summaries: ``(collection_id, original, de-identified)``.

    Args:
        masks: ``"manual"``, ``"presidio"`` or ``"spacy"`` masks of the Wiki553 set.
    """
    if masks not in ("manual", "presidio", "spacy"):
        raise InputError(f"masks must be manual, presidio or spacy, got {masks!r}")
    d = (root or data_dir()) / "wikibio"
    spans = _load(d / f"wiki553_masks_{masks}.json")
    assert isinstance(spans, dict)
    for doc in _load(d / "wiki_test_annotated_100.json"):  # type: ignore[attr-defined]
        k, text = doc["doc_id"], doc["text"]
        yield f"wiki:{k}", text, apply_masks(text, spans.get(k, []), placeholder)

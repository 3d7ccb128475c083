"""Loaders of the evaluation data: TAB (ECHR cases) and Wikipedia biographies, and the
converter from their official releases.

The data lives outside the package: ``presidio-delink eval --data DIR``, the folder
named by ``PRESIDIO_DELINK_DATA``, or ``../shared/data`` beside the repository.  Layout
(what :func:`convert` writes; ``presidio-delink data convert`` makes it from the
official files)::

    DIR/tab/tab_test_texts.json                  {doc_id: text}: the TAB test documents
    DIR/tab/tab_test_masks_manual_entity.json    {doc_id: [[start, end, TYPE], ...]}: gold
                                                 masks (DIRECT and QUASI mentions)
    DIR/tab/tab_test_masks_presidio_entity.json  the same, found by Presidio (tab-presidio)
    DIR/tab/tab_train_dev_texts.json             {doc_id: text}: more collection documents
    DIR/tab/tab_sample144_one_annotator.jsonl    optional: {"metadata": {"provenance":
                                                 {"doc_id"}}, "text"} per line
    DIR/tab/tab_test_hudoc_public_full.json,
    DIR/tab/tab_all_hudoc_public_10pct.json      optional: {doc_id: text} background text
    DIR/wikibio/wiki_test_annotated_100.json     list of {"doc_id", "text", ...}: the test
                                                 biographies (TAB schema)
    DIR/wikibio/wiki553_masks_manual.json        {doc_id: [[start, end, TYPE], ...]}
    DIR/wikibio/wiki553_masks_presidio.json      the same, found by Presidio
    DIR/wikibio/wiki553_public_background.json   optional: {doc_id: text} background text

The TAB collection is every text of ``tab/`` (test, train/dev, optional files); the
Wikipedia collection is the test biographies plus their background text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from presidio_delink.errors import InputError

REDACTED = "[REDACTED]"


LAYOUT = (__doc__ or "").split("::\n\n", 1)[-1].split("\n\nThe TAB collection", 1)[0]
"""The folder layout (the block above), for help texts."""


def data_dir() -> Path:
    """The data folder: ``$PRESIDIO_DELINK_DATA`` or ``../shared/data``."""
    env = os.environ.get("PRESIDIO_DELINK_DATA")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for c in candidates:
        if (c / "tab").is_dir() or (c / "wikibio").is_dir():
            return c
    raise InputError(
        "evaluation data not found: give --data DIR (or set PRESIDIO_DELINK_DATA) to a folder "
        "holding tab/ and wikibio/; 'presidio-delink data convert' makes one from the official "
        "TAB release (echr_*.json) and the Wikipedia biography annotations"
    )


def _load(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        hint = (
            " (it holds one JSON value per line: JSONL, not a release file)"
            if "Extra data" in str(exc) else ""
        )
        raise InputError(
            f"{path}" + (f":{line}" if line else "") + ": not a JSON file" + hint
        ) from exc


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
    seen = set(test)
    for k, v in test.items():
        yield f"tab:{k}", v
    if (d / "tab_train_dev_texts.json").is_file():
        more = _load(d / "tab_train_dev_texts.json")
        assert isinstance(more, dict)
        for k, v in more.items():
            if k not in seen:
                seen.add(k)
                yield f"tab:{k}", v
    if (d / "tab_sample144_one_annotator.jsonl").is_file():
        with open(d / "tab_sample144_one_annotator.jsonl", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                doc_id = rec["metadata"]["provenance"]["doc_id"]
                if doc_id not in seen:
                    seen.add(doc_id)
                    yield f"tab:{doc_id}", rec["text"]
    for name, prefix in (
        ("tab_test_hudoc_public_full.json", "hudoc"),
        ("tab_all_hudoc_public_10pct.json", "hudoc10"),
    ):
        if not (d / name).is_file():
            continue
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
    if not (d / "wiki553_public_background.json").is_file():
        return
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


# -- conversion from the official releases -------------------------------------------------
MASKED = ("DIRECT", "QUASI")
"""Identifier types the annotators marked for masking (``NO_MASK`` mentions stay)."""


def _tab_docs(path: Path) -> list[dict[str, object]]:
    docs = _load(path)
    if not isinstance(docs, list) or not all(
        isinstance(d, dict) and isinstance(d.get("doc_id"), str) and isinstance(d.get("text"), str)
        for d in docs
    ):
        raise InputError(
            f"{path}: not a TAB release file (a JSON list of documents with doc_id and text)"
        )
    return docs


def gold_masks(doc: dict[str, object]) -> list[list[object]]:
    """``[[start, end, ENTITY_TYPE], ...]``: every mention any annotator marked DIRECT or
    QUASI (the union: what one annotator left visible, another found identifying)."""
    text = doc["text"]
    assert isinstance(text, str)
    spans: set[tuple[int, int, str]] = set()
    annotations = doc.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise InputError(f"document {doc['doc_id']!r}: 'annotations' must be an object")
    for ann in annotations.values():
        for m in (ann or {}).get("entity_mentions") or []:
            if m.get("identifier_type") not in MASKED:
                continue
            a, b = int(m["start_offset"]), int(m["end_offset"])
            if not 0 <= a < b <= len(text):
                raise InputError(f"document {doc['doc_id']!r}: mention {a}-{b} is outside its text")
            spans.add((a, b, str(m.get("entity_type") or "MISC")))
    return [list(s) for s in sorted(spans)]


def _split_of(doc: dict[str, object], path: Path) -> str:
    split = doc.get("dataset_type")
    if isinstance(split, str) and split:
        return split
    name = path.name.lower()
    return "test" if "test" in name else "dev" if "dev" in name else "train"


def convert(
    out: Path,
    tab_files: Sequence[Path] = (),
    wiki_files: Sequence[Path] = (),
    wiki_background: Path | None = None,
    pii_masks: object = None,
    progress: bool = False,
) -> list[Path]:
    """Write the evaluation layout (see the module docstring) under ``out``.

    Args:
        out: the data folder to create (``tab/`` and ``wikibio/`` inside).
        tab_files: the official TAB release files (``echr_train.json``, ``echr_dev.json``,
            ``echr_test.json``): JSON lists of documents with ``doc_id``, ``text``,
            ``dataset_type`` and ``annotations``.  The test documents become the test set,
            all of them the collection.
        wiki_files: Wikipedia biography annotations in the same schema (e.g.
            ``wiki_test.json`` of the bootstrapping-anonymization repository).
        wiki_background: optional ``{doc_id: text}`` background text of the biographies.
        pii_masks: a callable ``text -> [[start, end, TYPE], ...]`` (e.g. Presidio) for
            the ``*-presidio`` masks; None skips them.
        progress: progress bars (stderr).

    Returns:
        The files written.

    Raises:
        InputError: a file is not in the expected format.
    """
    from tqdm import tqdm

    from presidio_delink.io import atomic_output

    written: list[Path] = []

    def dump(path: Path, obj: object) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with atomic_output(path) as f:
            f.write(json.dumps(obj, ensure_ascii=False))
        written.append(path)

    def masks_by(fn: object, docs: dict[str, str], what: str) -> dict[str, object]:
        assert callable(fn)
        return {
            k: fn(t)
            for k, t in tqdm(docs.items(), desc=f"{what} masks", unit="doc", disable=not progress)
        }

    if tab_files:
        test: dict[str, str] = {}
        rest: dict[str, str] = {}
        gold: dict[str, object] = {}
        for path in tab_files:
            for doc in _tab_docs(Path(path)):
                k, text = str(doc["doc_id"]), str(doc["text"])
                if _split_of(doc, Path(path)) == "test":
                    test[k] = text
                    gold[k] = gold_masks(doc)
                else:
                    rest[k] = text
        if not test:
            raise InputError("no test documents among the TAB files (give echr_test.json)")
        d = out / "tab"
        dump(d / "tab_test_texts.json", test)
        dump(d / "tab_test_masks_manual_entity.json", gold)
        dump(d / "tab_train_dev_texts.json", {k: v for k, v in rest.items() if k not in test})
        if pii_masks is not None:
            dump(d / "tab_test_masks_presidio_entity.json", masks_by(pii_masks, test, "TAB"))
    if wiki_files:
        docs: list[dict[str, object]] = []
        for path in wiki_files:
            docs += _tab_docs(Path(path))
        d = out / "wikibio"
        dump(d / "wiki_test_annotated_100.json", docs)
        dump(d / "wiki553_masks_manual.json", {str(x["doc_id"]): gold_masks(x) for x in docs})
        if pii_masks is not None:
            texts = {str(x["doc_id"]): str(x["text"]) for x in docs}
            dump(d / "wiki553_masks_presidio.json", masks_by(pii_masks, texts, "Wikipedia"))
        if wiki_background is not None:
            bg = _load(Path(wiki_background))
            if not isinstance(bg, dict):
                raise InputError(f"{wiki_background}: expected a JSON object {{doc_id: text}}")
            dump(d / "wiki553_public_background.json", bg)
    return written

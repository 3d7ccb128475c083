"""`DelinkEngine`: the whole job with Presidio's own objects, verified until nothing links.

Presidio's `AnonymizerEngine` makes one pass over the results it is given; linkage needs
a loop, since a rewrite can leave (or, rarely, create) a linkable N-gram.  The engine:

1. standard PII analysis (the analyzer's recognizers, ``LINKABLE_NGRAM`` excluded) and
   anonymization (``<ENTITY_TYPE>`` placeholders by default);
2. linkage analysis of the redacted text (:class:`LinkageRiskRecognizer`);
3. the fewest words to change (a minimum stabbing set of the flagged N-grams, widened to
   whole written words: :mod:`presidio_delink.edits`, as the pipeline does), anonymized
   by the ``delink`` operator, which plans one LLM request per sentence;
4. verify; repeat (LLM for ``passes`` passes, then redaction only) until nothing links
   below k.  A placeholder breaks every N-gram through it and creates none, so this
   ends; a text that still links is never returned (:class:`DelinkError`).

The result is Presidio's `EngineResult`: the final text and every item, PII ones
included, with offsets into that text.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine, RecognizerResult
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import EngineResult, OperatorConfig, OperatorResult

from presidio_delink.edits import apply, choose_tokens, runs, whole_words
from presidio_delink.errors import ConfigError, DelinkError
from presidio_delink.index import NgramIndex
from presidio_delink.llm.base import CircuitBreaker, Rewriter, find_breaker
from presidio_delink.presidio.operator import DelinkOperator
from presidio_delink.presidio.overlaps import resolve_overlaps
from presidio_delink.presidio.recognizer import ENTITY, LinkageRiskRecognizer
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)

_Item = tuple[int, int, str, str, str]  # start, end, entity type, text, operator


class DelinkEngine:
    """PII anonymization, then delinking until nothing links below ``k``.

    Args:
        analyzer: a Presidio ``AnalyzerEngine`` (e.g. :func:`make_analyzer`); its
            recognizers give the PII.
        anonymizer: a Presidio ``AnonymizerEngine``; the ``delink`` operator is added when
            missing.
        index: the reference collection's index.
        k: nothing may occur in fewer than ``k`` documents (>= 2).
        arity: combinations of up to ``arity`` N-grams are checked too (1..3).
        max_n: longest N-gram (default: the index's).
        rewriter: the LLM backend (:func:`presidio_delink.llm.make_rewriter`); None means
            redaction only.  It gets a circuit breaker when it has none.
        passes: LLM passes before redaction only.
        language: the analysis language.
        pii_operators: Presidio operators for the PII (default ``replace``:
            ``<ENTITY_TYPE>``).
    """

    def __init__(
        self,
        analyzer: AnalyzerEngine,
        anonymizer: AnonymizerEngine,
        index: NgramIndex,
        *,
        k: int = 2,
        arity: int = 1,
        max_n: int | None = None,
        rewriter: Rewriter | None = None,
        passes: int = 2,
        language: str = "en",
        pii_operators: dict[str, OperatorConfig] | None = None,
    ) -> None:
        if passes < 0:
            raise ConfigError(f"passes must be >= 0, got {passes}")
        self.recognizer = LinkageRiskRecognizer(
            index, k=k, arity=arity, max_n=max_n, supported_language=language
        )
        self.analyzer = analyzer
        self.anonymizer = anonymizer
        if "delink" not in anonymizer.get_anonymizers():
            anonymizer.add_anonymizer(DelinkOperator)
        self.index = index
        self.k, self.arity, self.max_n = k, arity, max_n
        if rewriter is not None and find_breaker(rewriter) is None:
            rewriter = CircuitBreaker(rewriter)
        self.rewriter = rewriter
        self.passes = passes
        self.language = language
        self.pii_operators = pii_operators or {"DEFAULT": OperatorConfig("replace")}
        self.tokenizer = index.tokenizer
        self._words = Tokenizer(fold="fine", placeholders=index.tokenizer.placeholders)

    # -- public -----------------------------------------------------------------------
    def analyze_pii(self, text: str) -> list[RecognizerResult]:
        """The analyzer's results for ``text``, linkage results excluded."""
        return self._pii_only(
            self.analyzer.analyze(text, language=self.language, entities=self._pii_entities())
        )

    def anonymize(self, text: str) -> EngineResult:
        """PII anonymization, then delinking, verified.

        Raises:
            DelinkError: the text could not be made linkage-free (it is not returned).
        """
        return self._delink(text, self.analyze_pii(text))

    def anonymize_iterator(
        self, texts: Iterable[str], *, batch_size: int = 8, progress: bool = False
    ) -> Iterator[EngineResult]:
        """Like Presidio's batch engines: PII analysis in batches (``nlp.pipe``), then
        each document delinked; results in input order."""
        texts = list(texts)
        batch = BatchAnalyzerEngine(self.analyzer)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), unit="doc", desc="delinking")
        try:
            for i in range(0, len(texts), batch_size):
                chunk = texts[i : i + batch_size]
                found = batch.analyze_iterator(
                    chunk, self.language, batch_size=batch_size, entities=self._pii_entities()
                )
                for text, pii in zip(chunk, found, strict=True):
                    yield self._delink(text, self._pii_only(pii))
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()

    def anonymize_list(
        self, texts: Iterable[str], *, batch_size: int = 8, progress: bool = False
    ) -> list[EngineResult]:
        """:meth:`anonymize_iterator` as a list."""
        return list(self.anonymize_iterator(texts, batch_size=batch_size, progress=progress))

    # -- internals ----------------------------------------------------------------------
    def _pii_entities(self) -> list[str]:
        return [e for e in self.analyzer.get_supported_entities(self.language) if e != ENTITY]

    @staticmethod
    def _pii_only(results: Iterable[RecognizerResult]) -> list[RecognizerResult]:
        return [r for r in results if r.entity_type != ENTITY]

    def _delink(self, text: str, pii: Sequence[RecognizerResult]) -> EngineResult:
        if not isinstance(text, str):
            raise DelinkError("text must be a string")
        pii = resolve_overlaps(pii, text)
        forbidden = sorted({text[r.start : r.end] for r in pii if text[r.start : r.end].strip()})
        items: list[_Item] = []
        current = text
        if pii:
            out = self.anonymizer.anonymize(text, pii, operators=self.pii_operators)  # type: ignore[arg-type]
            current = out.text
            items = [(i.start, i.end, i.entity_type, i.text, i.operator) for i in out.items]
        rep = self._check(current)
        limit = sum(len(s) for s in self.tokenizer.segments(current)) + 2
        pass_no = 0
        while rep.linkable and pass_no <= limit:
            pass_no += 1
            segs = self.tokenizer.segments(current)
            tokens = [t for s in segs for t in s]
            chosen = choose_tokens([(a, b) for a, b, _ in rep.spans()], tokens)
            chosen = whole_words(chosen, tokens, self._words.tokens(current))
            why = rep.spans()
            results: list[RecognizerResult] = []
            for r in runs(chosen, segs):
                f = next((f for a, b, f in why if a <= r.start and r.end <= b), None)
                meta = {"df": f.df, "ngram": f.key, "arity": f.arity} if f else {}
                results.append(
                    RecognizerResult(ENTITY, r.start, r.end, 1.0, recognition_metadata=meta)
                )
            params: dict[str, Any] = {
                DelinkOperator.DOCUMENT: current,
                DelinkOperator.RESULTS: results,
                DelinkOperator.FORBIDDEN: forbidden,
            }
            if self.rewriter is not None and pass_no <= self.passes:
                params[DelinkOperator.REWRITER] = self.rewriter
            out = self.anonymizer.anonymize(
                current,
                results,  # type: ignore[arg-type]
                operators={ENTITY: OperatorConfig("delink", params)},
                merge_entities_with_spaces=False,
            )
            new = sorted(out.items, key=lambda i: i.start)
            edits = [(r.start, r.end, i.text) for r, i in zip(results, new, strict=False)]
            if len(new) != len(results) or apply(current, edits)[0] != out.text:
                raise DelinkError("internal error: the anonymizer merged delink spans")
            items = _carry(items, edits, new, out.text)
            current = out.text
            rep = self._check(current)
        if rep.linkable:
            raise DelinkError("the text still links after every fallback; it is withheld")
        log.debug("delinked in %d pass(es), %d items", pass_no, len(items))
        return EngineResult(
            text=current,
            items=[OperatorResult(a, b, t, s, op) for a, b, t, s, op in sorted(items)],
        )

    def _check(self, text: str) -> Any:
        self.recognizer.analyze(text, [ENTITY])
        return self.recognizer.last_report


def _carry(
    items: list[_Item],
    edits: list[tuple[int, int, str]],
    new: list[OperatorResult],
    text: str,
) -> list[_Item]:
    """Earlier items moved into the new text; an item an edit touches merges into the
    edit's item (its span the union of both)."""
    out: list[_Item] = []
    merged: dict[int, tuple[int, int]] = {}
    starts = []  # (old start, old end, new start, new end) of each edit
    delta = 0
    for a, b, rep in edits:
        starts.append((a, b, a + delta, a + delta + len(rep)))
        delta += len(rep) - (b - a)

    def moved(pos: int) -> int:
        d = 0
        for _a, b, _na, nb in starts:
            if b <= pos:
                d = nb - b
        return pos + d

    for s, e, t, txt, op in items:
        hit = [j for j, (a, b, _, _) in enumerate(starts) if a < e and s < b]
        if not hit:
            out.append((moved(s), moved(e), t, txt, op))
            continue
        for j in hit:
            ns, ne = merged.get(j, (starts[j][2], starts[j][3]))
            ms = ns if s >= starts[j][0] else min(ns, moved(s))
            me = ne if e <= starts[j][1] else max(ne, moved(e))
            merged[j] = (ms, me)
    for j, i in enumerate(new):
        a, b = merged.get(j, (starts[j][2], starts[j][3]))
        out.append((a, b, i.entity_type, text[a:b], i.operator))
    return out

"""The one verification every review action goes through.

A reviewed text *verifies* when three things hold:

1. **No linkage.** :func:`presidio_delink.linkage.analyze` finds no N-gram (nor, with
   ``arity`` > 1, combination) of the text in fewer than ``k`` groups, in any view of the
   index: the same check the delinker's loop ends with.  A refusal names each phrase, its
   df, groups and view (and, with ``explain_docs``, the collection documents it links to).
2. **No PII back.** No string that PII redaction removed (the ``before`` of the document's
   ``pii`` edits) is in the text, compared as folded words (case, diacritics, look-alike
   letters), nor an uncommon word of one that the delinker's own output did not contain.
3. **No attack gains.** Each attack of the panel (``containment``; ``ranked``, BM25 search,
   and ``fused``, the audit's learned reading, when :mod:`presidio_delink.attacks.ranked`
   is importable; ``semantic`` when a monitor is given)
   ranks the source's group no better than it ranked it in the delinker's output, when
   the source is known: an attack that did not put the source first there may not put it
   first now.  The default panel is ``delink``'s audit
   (:meth:`~presidio_delink.attacks.audit.Auditor.read`: the audit's twenty readings, the
   searcher's rank), so the ranks the reviewer sees after an edit are the
   ranks the audit gave the delinker's output, read again.  The panel cannot demand more
   than the release had: ``delink`` without ``--protect`` leaves most sources first under
   containment search, and the reviewer sees that rank, but a document is not refused for
   it.

Cost: one ``analyze`` plus one run of each attack; the times:
``benchmarks/results/bench_review.md`` (``benchmarks/bench_review.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from presidio_delink.attacks.audit import Auditor
from presidio_delink.attacks.base import rank_of
from presidio_delink.edits import COMMON_WORDS, fold_word, fold_words
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.settings import DelinkSettings

__all__ = ["PiiGuard", "Verification", "Verifier"]

_COMMON = frozenset(fold_word(w) for w in COMMON_WORDS)


@dataclass
class Verification:
    """The answer for one text.

    Attributes:
        ok: the text verifies (all three conditions of the module docstring).
        linkable: the linkable phrases (``phrase``, ``ngram``, ``df``, ``groups``,
            ``arity``, ``start``, ``end``; ``views``: where it links; ``linked_docs`` with
            ``explain_docs``).
        pii: the removed PII strings (or words of them) the text shows again.
        attacks: attack name -> ``source_rank`` (None: not in its top list or unknown
            source), ``baseline_rank``, ``top_group``, ``margin_claims`` (the attack's
            calibrated margin claims the source), ``exposed`` (the crowd rule: the source
            ranked within the first ``settings.crowd`` places), ``regressed``.
        exposed: the attacks that expose the source (the crowd rule).  A text that
            verifies may still be exposed (the panel does not demand more than the
            release had): the review app says so beside "verifies".
        reasons: one line per failure, for the reviewer (document text only as the phrase).
        seconds: how long the verification took.
    """

    ok: bool
    linkable: list[dict[str, Any]] = field(default_factory=list)
    pii: list[str] = field(default_factory=list)
    attacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    exposed: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 4)
        return out


class Verifier:
    """Verifies reviewed texts against one index and one attack panel.

    Args:
        index: the reference collection's index.
        settings: the delink run's settings (``k``, ``arity`` and ``max_n`` are read;
            :class:`~presidio_delink.settings.DelinkSettings`); keyword ``overrides``
            replace some of them by name.
        attacks: further attacks read beside the panel, name -> attack (``verdict(text,
            top)``, see :mod:`presidio_delink.attacks`; ``semantic`` is one).
        panel: the audit whose attacks are read
            (:class:`~presidio_delink.attacks.audit.Auditor`; only its
            :meth:`~presidio_delink.attacks.audit.Auditor.read`, nothing is counted); True:
            one over ``index``; False: none.
        explain_docs: name the collection documents a linkable phrase links to (their ids
            may be sensitive: off by default).
        top: how deep the attacks' rankings are read for the source's rank.
    """

    def __init__(
        self,
        index: NgramIndex,
        settings: DelinkSettings | None = None,
        *,
        attacks: dict[str, Any] | None = None,
        panel: Auditor | bool = True,
        explain_docs: bool = False,
        top: int = 50,
        **overrides: Any,
    ) -> None:
        self.settings = st = (settings or DelinkSettings()).replace(**overrides)
        k, arity, max_n = st.k, st.arity, st.max_n
        analyze(index, "", k=k, arity=arity, max_n=max_n)  # validates max_n for the index
        self.index, self.k, self.arity, self.max_n = index, k, arity, max_n
        self.panel: Auditor | None = None
        if isinstance(panel, Auditor):
            self.panel = panel
        elif panel:
            self.panel = Auditor(index, k, crowd=st.crowd)
        self.attacks = dict(attacks or {})
        self.explain_docs = explain_docs
        self.top = top
        self._group_of = dict(zip(index.doc_ids, index.doc_groups, strict=True))

    def group_of(self, source_id: str) -> str | None:
        """The group of a collection document id (None when the collection lacks it)."""
        return self._group_of.get(source_id)

    def verify(
        self,
        text: str,
        *,
        group: str | None = None,
        pii: PiiGuard | None = None,
        baseline: dict[str, dict[str, Any]] | None = None,
    ) -> Verification:
        """Verify ``text`` (see the module docstring).

        Args:
            text: the reviewed text.
            group: its source's group (None: the attacks' ranks are not judged).
            pii: the document's removed PII (None: nothing was removed).
            baseline: the attacks' answers for the delinker's output (``attacks`` of an
                earlier :class:`Verification`); None: nothing to regress from.
        """
        t0 = time.perf_counter()
        v = Verification(ok=True)
        rep = analyze(self.index, text, k=self.k, arity=self.arity, max_n=self.max_n)
        ids = self.index.doc_ids
        # One item per phrase occurrence, the views in which it links listed together.
        seen: dict[tuple[int, int, int], dict[str, Any]] = {}
        for a, b, f in rep.spans():
            key = (a, b, f.arity)
            if key in seen:
                if f.view not in seen[key]["views"]:
                    seen[key]["views"].append(f.view)
                continue
            item: dict[str, Any] = {
                "phrase": text[a:b],
                "ngram": f.key,
                "df": f.df,
                "groups": f.groups,
                "views": [f.view],
                "arity": f.arity,
                "partners": list(f.partners),
                "start": a,
                "end": b,
            }
            if self.explain_docs:
                item["linked_docs"] = [ids[d] for d in f.docs[:10]]
            seen[key] = item
            v.linkable.append(item)
        for item in v.linkable:
            why = (
                f"{item['phrase']!r} links: found in {item['df']} document(s) of "
                f"{item['groups']} group(s) (k={self.k}; {', '.join(item['views'])} view"
                f"{'s' if len(item['views']) > 1 else ''})"
            )
            if item["arity"] > 1:
                why += f", with {', '.join(repr(p) for p in item['partners'][:3])}"
            if self.explain_docs:
                why += f"; links to {', '.join(item['linked_docs'][:5])}"
            v.reasons.append(why)
        v.pii = pii.back(text) if pii is not None else []
        for s in v.pii:
            v.reasons.append(f"re-exposes removed PII: {s!r}")
        if group is not None:
            read: dict[str, tuple[int | None, str | None, bool]] = {}
            if self.panel is not None:
                for name, rec in self.panel.read(text, group).items():
                    read[name] = (rec["source_rank"], rec["top_group"], rec["margin_claims"])
            for name, attack in self.attacks.items():
                verdict = _verdict(attack, text, self.top)
                top = verdict.ranking[0].group if verdict.ranking else None
                read[name] = (rank_of(verdict.ranking, group), top,
                              bool(verdict.linked) and top == group)
            for name, (rank, top, claims) in read.items():
                base = (baseline or {}).get(name, {}).get("source_rank", "none")
                regressed = rank == 1 and base not in ("none", 1)
                exposed = rank is not None and rank <= self.settings.crowd
                v.attacks[name] = {
                    "source_rank": rank,
                    "baseline_rank": None if base == "none" else base,
                    "top_group": top,
                    "margin_claims": claims,
                    "exposed": exposed,
                    "regressed": regressed,
                }
                if exposed:
                    v.exposed.append(name)
                if regressed:
                    v.reasons.append(
                        f"the {name} attack now ranks the source first "
                        f"(the delinked output: rank {base})"
                    )
        v.ok = not v.reasons
        v.seconds = time.perf_counter() - t0
        return v


class PiiGuard:
    """The PII strings removed from one document, and where the delinker's output already
    shows them (its own occurrences are not the reviewer's doing, so they do not count).

    Args:
        forbidden: the strings PII redaction removed.
        reference: the delinker's output.
        tokenizer: the index's tokenizer (the words as a search engine folds them).
    """

    def __init__(self, forbidden: Iterable[str], reference: str, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.forbidden = [
            (f, fw)
            for f in dict.fromkeys(s for s in forbidden if s.strip())
            if (fw := fold_words(f, tokenizer))
        ]
        ref = fold_words(reference, tokenizer) if self.forbidden else []
        self._ref_words = set(ref)
        self._ref_counts = {f: _count(ref, fw) for f, fw in self.forbidden}

    def back(self, text: str) -> list[str]:
        """The removed strings (or uncommon words of them) ``text`` shows again."""
        if not self.forbidden:
            return []
        words = fold_words(text, self.tokenizer)
        have = set(words)
        out: list[str] = []
        for f, fw in self.forbidden:
            if _count(words, fw) > self._ref_counts[f]:
                out.append(f)
                continue
            back = [
                w
                for w in fw
                if len(w) > 1 and w not in _COMMON and w in have and w not in self._ref_words
            ]
            if back:
                out.append(" ".join(dict.fromkeys(back)))
        return out


def _count(words: list[str], needle: list[str]) -> int:
    n = len(needle)
    return sum(1 for i in range(len(words) - n + 1) if words[i : i + n] == needle)


def _verdict(attack: Any, text: str, top: int) -> Any:
    """``attack.verdict`` with the ranking ``top`` deep where the attack takes it."""
    try:
        return attack.verdict(text, top=top)
    except TypeError:  # an attack whose verdict has no depth
        return attack.verdict(text)

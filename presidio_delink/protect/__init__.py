"""`--protect`: attack-guided edits after delinking, when the source's group is known.

* ``containment`` (:mod:`.containment`): cut the chains that let a text-reuse aligner find
  the source, until no variant of the containment attack ranks its group first;
* ``ranked`` (:mod:`.ranked`): remove the terms that give the source's group its BM25 lead,
  until no member of the ranked attack's panel ranks it first, for the whole text and for
  each sentence;
* ``all``: both, ranked first, repeated until both hold.

Order.  The ranked protection removes whole terms (every occurrence of the words with
the largest BM25 lead); many of the chains the containment protection would cut run
through those words, so running it first leaves containment fewer words to cut, at less
CPU (measured on held-in documents only: ``benchmarks/README.md``, "--protect").

Where it runs.  Not inside the delink loop: the adapters (``Delinker``, the Presidio
engine) run :class:`ProtectStep` on the loop's result, through the loop's public
interface (:class:`.common.LoopAPI`).

Edits.  The chosen words go to :class:`.editor.LoopEditor` first: a deterministic
generalisation, or the configured LLM's rewrite, each validated by the pipeline's
checks and refused when it writes the word again; the rest are redacted, and after
:data:`.common.DEFAULT_REWRITE_ROUNDS` rounds every further edit is a redaction.

Placeholders.  A run of adjacent redactions leaves as one ``[REDACTED]``
(:func:`~presidio_delink.edits.merged_redactions`): one a word would tell an attacker
where each kept word stood in the source.

Every edit is verified against the index (what an edit made linkable is redacted by the
pipeline's rule), and the attacks run again on the edited text, so the output stays
linkage-free at the delinker's ``k`` and arity and the stop rules are checked on what
is released.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from presidio_delink.edits import merged_redactions
from presidio_delink.errors import ConfigError
from presidio_delink.protect.common import (
    DEFAULT_REDACTION_COST,
    Guarantee,
    LoopAPI,
    ProtectJob,
    ProtectOutcome,
)
from presidio_delink.protect.containment import (
    DEFAULT_SAFETY,
    protect_containment,
    sensitive,
    variants,
)
from presidio_delink.results import DelinkResult
from presidio_delink.settings import PROTECT_MODES, parse_modes

__all__ = [
    "DEFAULT_CONTAINMENT_CROWD",
    "DEFAULT_SAFETY",
    "MODES",
    "Guarantee",
    "LoopAPI",
    "ProtectJob",
    "ProtectOutcome",
    "ProtectStep",
    "Protector",
    "parse_modes",
    "protect_containment",
    "sensitive",
    "variants",
]

#: The protections, in the order they run.
MODES = PROTECT_MODES
#: The containment protection's crowd (text-reuse detectors answer with their argmax;
#: chosen on held-in data with ``benchmarks/ranked/calibrate_crowd.py``).
DEFAULT_CONTAINMENT_CROWD = 1
#: The guard's crowds, as multiples of the ranked protection's crowd, tried in turn while
#: the guard's fused reading still ranks the source within the crowd (:meth:`Protector.
#: protect`).  Why: the ranked protection stops as soon as every reading of its panel puts
#: ``crowd`` groups above the source, so the source sits just behind the first groups of
#: *every* reading, a mark no other group bears; a ranker fitted on texts the tool
#: protected learns it (boosted trees over the audit's readings, fitted on the unguarded
#: outputs, found the source first for 14 and in their top 5 for 24 of 113 held-in TAB
#: train/dev texts out of fold, where each reading alone found 0 and at most 5).  Chosen on
#: those held-in texts only (``benchmarks/results/ranked_crowd.md``, run of 2026-12-05 at 54ce3b1):
#: with the guard at 2x then 4x, words changed rose from 69.4 % to 71.5 %, and trees
#: fitted again on the guarded outputs (out of fold) found 3 first and 5 in their top 5
#: (with a logistic regression as the guard's model: 71.2 % of words, 5 and 10).
GUARD_CROWDS = (2, 4)


class Protector:
    """Runs the chosen protections on pipeline results (one attack object per index).

    Args:
        delinker: the delink loop whose results are protected (its index, settings and
            :meth:`rewrite_runs`: :class:`.common.LoopAPI`).
        modes: protections (see :func:`parse_modes`).
        containment: the containment attack (default: one over the delinker's index).
        ranked: the ranked attack (default: one over the delinker's index with the
            protection's panel, :data:`~presidio_delink.attacks.ranked.PROTECT_MEMBERS`).
        max_rounds: alternations between the protections when both run.
        rewrite: hand the chosen words to the delinker's generalisations and LLM first
            (:class:`.editor.LoopEditor`); False: redact them.
        ranked_safety, sentence_safety, containment_safety: the stop rules' margins
            (defaults: chosen on TAB train/dev, see the modules).
        crowd: the crowd rule of the ranked protection's whole-text goal (default: the
            loop's ``settings.crowd``): that many other groups above the source.
        sentence_crowd: the same for sentences (default
            :data:`.ranked.DEFAULT_SENTENCE_CROWD`, at most ``crowd``).
        containment_crowd: the same for the containment protection (default
            :data:`DEFAULT_CONTAINMENT_CROWD`, at most ``crowd``).
        whole_per_round: the ranked protection's whole-text goals fixed per round
            (default :data:`.ranked.DEFAULT_WHOLE_PER_ROUND`).
        cover: the ranked protection's whole-text cover, ``"joint"`` or ``"worst"``
            (default :data:`.ranked.DEFAULT_COVER`).
        redaction_cost: what a word the editor would redact costs the covers, against 1
            for one it may rewrite (default :data:`.common.DEFAULT_REDACTION_COST`; 1: no
            preference).
        guard: after the ranked protection holds, read the text with the guard's fused
            reading (:class:`~presidio_delink.attacks.fused.FusedReading`, the file
            ``ranked_fusion_guard.json``: the audit's readings combined, fitted on held-in
            outputs of the protection without the guard) and, while it ranks the source
            within ``crowd``, protect again at the larger crowds of :data:`GUARD_CROWDS`.
            The audit reads another fit (on the guarded outputs), so that it is not the
            reading the protection aimed at.
    """

    def __init__(
        self,
        delinker: LoopAPI,
        modes: str | Sequence[str],
        *,
        containment: Any = None,
        ranked: Any = None,
        max_rounds: int = 6,
        rewrite: bool = True,
        ranked_safety: float | None = None,
        sentence_safety: float | None = None,
        containment_safety: float | None = None,
        crowd: int | None = None,
        sentence_crowd: int | None = None,
        containment_crowd: int | None = None,
        whole_per_round: int | None = None,
        cover: str | None = None,
        redaction_cost: float | None = None,
        guard: bool = True,
    ) -> None:
        from presidio_delink.protect import ranked as pr

        self.delinker = delinker
        self.modes = parse_modes(modes)
        if not self.modes:
            raise ConfigError("no protection chosen")
        if "containment" in self.modes and containment is None:
            from presidio_delink.attacks.containment import ContainmentAttack

            containment = ContainmentAttack(delinker.index, k=delinker.settings.k)
        self.containment = containment
        self.ranked = ranked  # built on first use (a few seconds, once per index)
        self.max_rounds = max_rounds
        self.rewrite = rewrite
        self.ranked_safety = pr.DEFAULT_RANKED_SAFETY if ranked_safety is None else ranked_safety
        self.sentence_safety = (
            pr.DEFAULT_SENTENCE_SAFETY if sentence_safety is None else sentence_safety
        )
        self.containment_safety = (
            DEFAULT_SAFETY if containment_safety is None else containment_safety
        )
        self.crowd = delinker.settings.crowd if crowd is None else crowd
        self.sentence_crowd = (
            min(self.crowd, pr.DEFAULT_SENTENCE_CROWD) if sentence_crowd is None
            else sentence_crowd
        )
        self.containment_crowd = (
            min(self.crowd, DEFAULT_CONTAINMENT_CROWD) if containment_crowd is None
            else containment_crowd
        )
        self.whole_per_round = (
            pr.DEFAULT_WHOLE_PER_ROUND if whole_per_round is None else whole_per_round
        )
        self.cover = pr.DEFAULT_COVER if cover is None else cover
        self.guard = guard
        self._guard: tuple[Any, Any] | None = None  # (audit panel, fused model), on first use
        self.redaction_cost = (
            DEFAULT_REDACTION_COST if redaction_cost is None else redaction_cost
        )
        if not self.redaction_cost >= 1.0:
            raise ConfigError(f"redaction_cost must be >= 1, got {self.redaction_cost!r}")
        if self.cover not in pr.COVERS:
            raise ConfigError(f"cover must be one of {pr.COVERS}, got {self.cover!r}")
        for name in ("crowd", "sentence_crowd", "containment_crowd", "whole_per_round"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")

    def protect(
        self, res: DelinkResult, group: str, forbidden: Sequence[str] = ()
    ) -> DelinkResult:
        """Protect ``res`` in place (text, audit, marks, words changed) and return it.

        ``forbidden``: strings a rewrite may not put back (the removed PII)."""
        if res.text is None:
            return res
        t0 = time.perf_counter()
        d = self.delinker
        st = d.settings
        editor = None
        if self.rewrite:
            from presidio_delink.protect.editor import LoopEditor

            editor = LoopEditor(d, res, forbidden)
        keep = Guarantee.of(st)
        total = 0
        for _ in range(self.max_rounds):
            changed = 0
            for mode in self.modes:
                job = ProtectJob(
                    res.text, group, keep, res.marks, editor,
                    redaction_cost=self.redaction_cost,
                )
                if mode == "containment":
                    out = protect_containment(
                        job, self.containment, safety=self.containment_safety,
                        crowd=self.containment_crowd,
                    )
                else:
                    from presidio_delink.protect import ranked as pr

                    if self.ranked is None:
                        from presidio_delink.attacks.ranked import PROTECT_MEMBERS, RankedAttack

                        self.ranked = RankedAttack(d.index, k=st.k, members=PROTECT_MEMBERS)
                    out = pr.protect_ranked(
                        job, self.ranked, safety=self.ranked_safety,
                        sentence_safety=self.sentence_safety, crowd=self.crowd,
                        sentence_crowd=self.sentence_crowd,
                        whole_per_round=self.whole_per_round, cover=self.cover,
                    )
                changed += self._take(res, out)
            total += changed
            if not changed or len(self.modes) == 1:
                break
        if self.guard and "ranked" in self.modes:
            total += self._guarded(res, group, keep, editor)
        if res.text is not None:  # one placeholder a run of redactions (merged_redactions)
            res.text, res.marks = merged_redactions(res.text, res.marks)
        res.linkable_after = False
        if d.monitor is not None and total:
            res.semantic = dict(d.monitor.assess(res.text))  # of the text released
        res.seconds += time.perf_counter() - t0
        return res

    def guard_exposes(self, text: str, group: str) -> bool:
        """The guard's fused reading ranks ``group`` within the crowd for ``text``."""
        if self._guard is None:
            from presidio_delink.attacks.fused import FusedReading
            from presidio_delink.attacks.ranked import FUSED_MEMBERS, RankedAttack

            model = FusedReading.shipped(guard=True)
            model.check_panel(FUSED_MEMBERS)
            d = self.delinker
            self._guard = (RankedAttack(d.index, k=d.settings.k, members=FUSED_MEMBERS), model)
        attack, model = self._guard
        if not attack.has_group(group):
            return False
        rank = model.rank(attack.scores(text, sentences=False), attack.group_ordinal(group))
        return rank is not None and rank <= self.crowd

    def _guarded(self, res: DelinkResult, group: str, keep: Any, editor: Any) -> int:
        """The guard (see ``guard`` above): words changed."""
        from presidio_delink.protect import ranked as pr

        changed = 0
        for times in GUARD_CROWDS:
            if res.text is None or not self.guard_exposes(res.text, group):
                break
            job = ProtectJob(
                res.text, group, keep, res.marks, editor, redaction_cost=self.redaction_cost
            )
            out = pr.protect_ranked(
                job, self.ranked, safety=self.ranked_safety,
                sentence_safety=self.sentence_safety, crowd=self.crowd * times,
                sentence_crowd=self.sentence_crowd, whole_per_round=self.whole_per_round,
                cover=self.cover,
            )
            changed += self._take(res, out)
        return changed

    @staticmethod
    def _take(res: DelinkResult, out: ProtectOutcome) -> int:
        res.text = out.text
        res.marks = out.marks
        res.audit.extend(out.audit)
        res.words_redacted += out.words_cut + out.words_relinked
        res.words_rewritten += out.words_rewritten
        return out.words_cut + out.words_relinked + out.words_rewritten


class ProtectStep:
    """The protection as a step after the delink loop: what the adapters call.

    ``step(res, group, forbidden)`` protects ``res`` in place when the loop's
    ``settings.protect`` names protections, the source's ``group`` is known and the
    result was released (its text is not None); otherwise it returns ``res`` unchanged.
    The :class:`Protector` (its attacks take seconds to build) is built on first use, once,
    and shared by the threads that call the step.
    """

    def __init__(self, loop: LoopAPI) -> None:
        self.loop = loop
        self._protector: Protector | None = None
        self._lock = threading.Lock()

    @property
    def protector(self) -> Protector:
        """The protector (built on first use)."""
        with self._lock:
            if self._protector is None:
                self._protector = Protector(self.loop, self.loop.settings.protect or "")
            return self._protector

    def __call__(
        self, res: DelinkResult, group: str | None, forbidden: Sequence[str] = ()
    ) -> DelinkResult:
        if not self.loop.settings.protect or group is None or res.text is None:
            return res
        return self.protector.protect(res, group, forbidden=forbidden)

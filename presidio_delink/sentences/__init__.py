"""The ``sentences`` rewrite mode: a sentence the cheap steps could not settle is written
again by the LLM (:mod:`.prompt`), verified (:mod:`.facts`, the index) and aligned with the
old one for the audit (:mod:`.align`); :class:`~.rewrite.SentenceStep` runs it for the
loop (:meth:`presidio_delink.rewriting.Rewriting.rewrite_sentences`)."""

from presidio_delink.sentences.align import Change, changed_span, changes
from presidio_delink.sentences.facts import Verdict, check_facts
from presidio_delink.sentences.rewrite import Job, SentenceStep

__all__ = ["Change", "Job", "SentenceStep", "Verdict", "changed_span", "changes", "check_facts"]

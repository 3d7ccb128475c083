"""Rewrites by construction: propose replacements from cheap sources, verify each with the
loop's checks and the original's word form, score the survivors in context, and choose.

:class:`CandidateChooser` is used by :meth:`presidio_delink.rewriting.Rewriting.rewrite_runs`
when ``DelinkSettings.rewrite == "candidates"``; where no candidate survives, a modifier
may be left out (:mod:`.drop`), and the LLM writes only for the runs left.  Modules:
:mod:`.lexicon` (WordNet, inflection), :mod:`.propose`, :mod:`.verify`, :mod:`.score`,
:mod:`.drop`, :mod:`.chooser` (with :mod:`.choice`, :mod:`.company` and :mod:`.context`),
:mod:`.register` (with its table of legal stand-ins, :mod:`.legal_terms`).
"""

from __future__ import annotations

from presidio_delink.candidates.chooser import CandidateChooser, Choice
from presidio_delink.candidates.lexicon import WordNet
from presidio_delink.candidates.propose import Candidate
from presidio_delink.candidates.score import LMScorer
from presidio_delink.candidates.verify import Tagger

__all__ = ["Candidate", "CandidateChooser", "Choice", "LMScorer", "Tagger", "WordNet"]

"""Drop: leave out a modifier, the least specific generalisation, before a redaction.

Definitions. A one-word run may be *dropped* (replaced by nothing, with one of the spaces
around it) when it modifies the word that follows it and the sentence keeps its grammar
and its claims without it (:func:`droppable`):

* an attributive adjective (not after a verb) before a noun or another adjective
  (``the constitutional complaint`` -> ``the complaint``; ``an armed gang`` is refused
  for its article), never one of :data:`KEEP_ADJECTIVES`: negations, hedges and words
  that say which one (``the alleged offence``, ``the second applicant``, ``the same
  court``);
* a noun before a lower-case noun (``police statements`` -> ``statements``), not one of
  :data:`KEEP_NOUNS` (``life imprisonment``) nor after an adjective (``mental health
  facilities``);
* a proper noun that opens a longer name (``the Erzincan Martial Law Court`` -> ``the
  Martial Law Court``; not ``Martial``, nor after ``and`` or ``of``), never a title
  (``Mrs``) nor a rank (:data:`RANKS`), where two capitalised words or more are left
  (``the Directorate General`` -> ``the General`` names someone else, ``the High Court``
  -> ``the Court`` another court);
* an adverb of :data:`DROP_ADVERBS` (``subsequently``, ``later``) between two words;
* the past perfect's ``had`` right before a participle that is also the verb's past
  tense (``the court had dismissed the appeal`` -> ``the court dismissed the appeal``;
  not ``had taken``, ``had been`` or ``had not``): the event is told in the simple past,
  only its being earlier than the narrative's moment is left implicit;
* a gloss in brackets after a word, whole (:func:`gloss_span`): the original's name of
  what the sentence has just named (``the Constitutional Court (Verfassungsgerichtshof)``,
  ``a conscription order (Stellungsbescheid)``), an acronym (``(GDR)``) or a short
  definition (``(“the Ministry”)``).  The sentence says the same without it.

The word must sit between two words of its sentence (no punctuation either side: a
dropped opener would leave ``, he was``), outside a quotation (a quote is not edited
silently), and an indefinite article before it must still
fit the next word (``a serious offence`` is refused: it would need ``an``).  The chooser
then asks the log-probability engine whether what follows still reads as well without
the word (:data:`DROP_MARGIN`): a modifier that a phrase cannot lose (``a high speed car
chase``: ``a high car chase``) reads far worse there and is refused.

Why it is safe to claim: a modifier left out makes the statement less specific, never
another one (``four`` -> ``several`` is the same kind of edit); the words that would
change a claim by their absence are kept.  The result still passes the loop's linkage
check like any other edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from presidio_delink.candidates.lexicon import inflect, lemma_of
from presidio_delink.candidates.propose import TITLES
from presidio_delink.candidates.verify import article_for

__all__ = [
    "DROP_ADVERBS", "DROP_MARGIN", "KEEP_ADJECTIVES", "KEEP_NOUNS", "RANKS", "droppable",
    "gloss_span",
]


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


#: How many nats worse the next words may read without the word than with it.  A next
#: word the modifier made likely reads a few nats worse without it (``the Izmir State
#: Security Court``: -5.0, ``received prison sentences``: -3.7); a phrase broken by the
#: gap reads far worse (``a high speed car chase`` -> ``a high car chase``: -14.9,
#: ``the Erzincan Martial Law Court`` -> ``the Erzincan Law Court``: -11.0).
DROP_MARGIN = 6.0
#: Adjectives whose absence changes a claim or its referent: negations, hedges,
#: privatives, ordinals, the words that pick one thing among others, and those that say
#: whether a thing is lawful ("membership of an illegal organisation" is another charge
#: than "of an organisation").
KEEP_ADJECTIVES = _words("""
alleged former false fake so-called potential possible suspected attempted proposed draft
putative apparent would-be mock fictitious counterfeit imaginary purported supposed
ostensible presumed probable likely unlikely only sole same other another further
additional next last previous following latter first second third fourth fifth sixth
seventh eighth ninth tenth new old present current respective particular certain such own
whole entire main principal total partial full maximum minimum late early mere alternative
opposite contrary different separate single double joint individual no non unknown known
prior subsequent initial final interim provisional temporary permanent minor major
open closed private public secret mental physical indefinite definite limited unlimited
illegal legal unlawful lawful illicit licit arbitrary unjustified justified
constitutional reasonable mandatory majority unfair fair procedural substantive armed
""")
#: Nouns whose absence changes what the head names (``life imprisonment``, ``family
#: life``, ``death penalty``; read on Wikipedia biographies: ``child pornography``,
#: ``state security system``, ``stage name``, ``term limits``).
KEEP_NOUNS = _words("life death family health child security stage term")
#: First words of a name that rank or scope it: without them the rest names another
#: body (``the Supreme Court of Appeal`` is not ``the Court of Appeal``; ``the Grand
#: Chamber`` is not a Chamber).
RANKS = _words("Supreme High Higher Lower Upper Grand Constitutional Federal Central")
#: Adverbs that may be left out between two words: time and manner, never a negation,
#: a hedge or a degree (``allegedly``, ``never``, ``only``, ``partly`` change the claim).
DROP_ADVERBS = _words("""
subsequently later again also then thereafter meanwhile eventually finally immediately
promptly duly fully formally officially personally initially originally recently shortly
briefly repeatedly expressly specifically explicitly separately jointly
""")
#: Heads of the names of public bodies that each town or region has its own of: the
#: name's first word may be left out before them (:func:`droppable`).
PLACE_BODIES = _words("""
court courts tribunal tribunals prosecutor prosecutors police directorate directorates
ministry office offices prison prisons council councils authority authorities
inspectorate department administration registry gendarmerie hospital
""")
_TITLES = TITLES | {"Lord", "Lady"}
_NOUNS = frozenset({"NN", "NNS", "NNP", "NNPS"})


def droppable(text: str, toks: Sequence[tuple[int, int, str]], i: int) -> str | None:
    """Why the word ``toks[i]`` (``(start, end, Penn tag)``, punctuation left out, read in
    context) may not be dropped, or None when it may (module docstring)."""
    if i <= 0 or i + 1 >= len(toks):
        return "not between two words"
    (pa, pb, pt), (a, b, tag), (na, nb, nt) = toks[i - 1], toks[i], toks[i + 1]
    if text[pb:a] != " " or text[b:na] != " ":
        return "not between two words"
    word, nxt = text[a:b], text[na:nb]
    if not word.isalpha() and "-" not in word:
        return "not a plain word"
    low = word.casefold()
    if tag == "JJ":
        # attributive, not after a verb ("was unlawful today" says the detention was),
        # before a common noun
        ok = (nt in ("NN", "NNS", "JJ")) and nxt.islower()
        ok = ok and not pt.startswith(("VB", "RB", "MD"))
        # nor the second of two coordinated adjectives ("military or civilian service"
        # would read "military or service")
        ok = ok and pt != "CC"
        ok = ok and low not in KEEP_ADJECTIVES and not low.startswith("non")
    elif tag == "NN":
        # a noun before a lower-case noun, not after an adjective that may be its own
        # ("mental health facilities"), nor a verb the tagger read as a noun ("to frame
        # grounds of appeal")
        ok = nt in ("NN", "NNS") and word.islower() and nxt.islower()
        ok = ok and low not in KEEP_NOUNS and pt not in ("JJ", "TO", "MD")
        # nor before an "-ing" word, most often a verb read as a noun ("the contractor
        # effecting removal")
        ok = ok and not nxt.endswith("ing")
    elif tag in ("NNP", "NNPS"):
        # the first word of a name only: "the Erzincan Martial Law Court" may lose
        # "Erzincan", not "Martial"; not after "and" or "of" (a longer name:
        # "the Asylum and Immigration Tribunal")
        ok = nt in _NOUNS and word[:1].isupper() and nxt[:1].isupper()
        ok = ok and word.rstrip(".") not in _TITLES and not text[pa:pb][:1].isupper()
        ok = ok and pt != "CC" and text[pa:pb] != "of" and word not in RANKS
        # two capitalised words left at least: "the High Court" -> "the Court" would name
        # another court (in a judgment of the ECHR, the ECHR itself)
        ok = ok and _capitalised_after(text, toks, i + 1)
        # and only where the rest names a kind of public body each place has its own of
        # ("the Izmir State Security Court"); "the Canadian Football League" or "the
        # Ottawa District Hockey Association" without it names another body (read on
        # Wikipedia biographies)
        ok = ok and _name_head(text, toks, i + 1) in PLACE_BODIES
    elif tag == "RB":
        ok = low in DROP_ADVERBS
    elif tag == "VBD" and low == "had":
        # the past perfect's auxiliary before a participle that is also the verb's past
        # tense: "the court had dismissed the appeal" -> "the court dismissed the appeal"
        ok = nt == "VBN" and _simple_past(nxt)
    else:
        ok = False
    # an "-ing" word after a noun is a participle with its object, not a modifier of the
    # next word ("the contractor effecting removal would be informed")
    ok = ok and not (low.endswith("ing") and pt in _NOUNS)
    if not ok:
        return "not a modifier that can be left out"
    article = text[pa:pb].casefold()
    if article in ("a", "an") and article != article_for(nxt):
        return "its article would not fit the next word"
    if text[pa:pb].casefold() == nxt.casefold():
        return "would double a word"
    if _quoted(text, a):
        return "inside a quotation"
    return None


def _simple_past(participle: str) -> bool:
    """Whether ``participle`` (a verb's past participle) is also its past tense
    (``dismissed``, ``held``; not ``taken``, ``been`` or ``gone``)."""
    low = participle.casefold()
    if not low.isalpha():
        return False
    lemma = lemma_of(low, "v")
    return inflect(lemma, "VBD") == low and inflect(lemma, "VBN") == low


def _quoted(text: str, at: int) -> bool:
    """Whether ``text[at]`` lies inside a quotation opened earlier in its paragraph."""
    para = text[text.rfind("\n", 0, at) + 1 : at]
    return para.count("“") > para.count("”") or para.count('"') % 2 == 1


def _name_head(text: str, toks: Sequence[tuple[int, int, str]], j: int) -> str:
    """The last word (lower case) of the run of capitalised words from ``toks[j]``, one
    space apart."""
    while _capitalised_after(text, toks, j):
        j += 1
    return text[toks[j][0] : toks[j][1]].casefold()


def _capitalised_after(text: str, toks: Sequence[tuple[int, int, str]], j: int) -> bool:
    """Whether the word ``toks[j]`` is followed, after one space, by another capitalised
    word: the name goes on."""
    if j + 1 >= len(toks):
        return False
    (_a, b, _t), (na, nb, _nt) = toks[j], toks[j + 1]
    return text[b:na] == " " and text[na:nb][:1].isupper()


#: The most words a gloss in brackets may hold (:func:`gloss_span`).
GLOSS_WORDS = 12


def gloss_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The bracketed gloss that holds ``text[start:end]``, brackets included, or None.

    A gloss opens with ``(`` after a word and one space, holds at most
    :data:`GLOSS_WORDS` words on one line, no other bracket, no digit, no ``§`` and no
    placeholder (a reference, a date, an amount or a redaction is no gloss), and begins
    with a capital or a quotation mark: a name (``(Verwaltungsgerichtshof)``,
    ``(Diakon, Dienstamtgehilfe)``) or a definition (``(“the Ministry”)``), not an
    aside (``(about 30 pages)``, ``(b)``)."""
    lo = text.rfind("(", max(0, start - 400), start + 1)
    hi = text.find(")", max(end - 1, lo + 1), end + 400)
    if lo <= 0 or hi < 0 or text[lo - 1] != " " or end > hi + 1:
        return None
    inner = text[lo + 1 : hi]
    before = text[max(0, lo - 2) : lo - 1]
    if not before or not (before[-1].isalpha() or before[-1] in "’'”\""):
        return None
    if any(c in inner for c in "()[]<>\n§") or any(c.isdigit() for c in inner):
        return None
    if len(inner.split()) > GLOSS_WORDS or not (inner[:1].isupper() or inner[:1] in "“\"„‘"):
        return None
    return lo, hi + 1

"""A small thesaurus of the legal register: words a judgment may say either way.

Why: WordNet's senses are general English.  The words a judgment uses most are often
missing from the sense it means (``dismiss`` has no ``reject``; ``pension`` no
one-word hypernym) or share a synset with words of another register (``judgment`` ->
``opinion``), and the collection's company check then refuses them
(:func:`~.company.used_otherwise`).  Of the one-word runs the loop redacted on 28
held-in TAB train/dev texts without the register, the most frequent content words were
``dismissed``, ``appeal``, ``pension``, ``case``, ``proceedings``, ``judgment``,
``ordered``, ``rejected`` and ``offence`` (``benchmarks/results/rewrite_candidates.md``).

Definitions. :data:`LEGAL` (the table, :mod:`.legal_terms`'s: data, curated by hand, and
re-exported here) maps a WordNet part of speech and a lemma to the lemmas that may stand
in for it in a court's text, in every frame where the word commonly occurs there:
``dismiss`` -> ``reject`` (the appeal, the complaint, the request), ``quash`` ->
``annul``.  A pair is listed only where the stand-in keeps what the sentence says in
those frames; a word whose frames split its meaning is left out (``hold``: "held that" /
"held in custody"; ``claim``: "claimed that" / "claimed compensation"; ``release``: a
prisoner / a statement), or given stand-ins in the frames where one holds, told by the
next word (:data:`FRAMES`: "held that" -> "found that", "claimed compensation" ->
"sought compensation"); a preposition has stand-ins only there ("under section 103" ->
"pursuant to", never "under arrest").  A more general word counts where it names the
same thing at a coarser grain (``pension`` -> ``benefit``, ``wife`` -> ``spouse``): the
generalisation the loop exists to make.  :data:`TAGS` limits an entry to some Penn tags
(``alleged`` before a noun is an adjective: "the alleged violation" cannot become "the
claimed violation"); in another tag the word is listed with none.  Some words are listed
with no stand-in: WordNet's words for them read another sense in a judgment (``trial``
-> ``test``, ``appeal`` -> ``prayer``, ``its position`` -> ``its place``), so they get
no lexicon word and are redacted (or left to the LLM as part of a phrase).

Where the register lists a word, it replaces WordNet for it: WordNet's words are not
proposed.  Each stand-in is inflected to the original's tag (:func:`~.lexicon.inflect`)
and cased like it.  The chooser treats these candidates like WordNet's (prior 1, the
most frequent sense), but does not judge them by the collection's company: the list is
the sense check.  Every other check still applies: the word form in context, the article
before it, the collection's pairings (``legal aid``), the scorer, and the linkage of the
result.  A stand-in counts as a known word even where the collection never uses it
(:func:`is_stand_in`): the known-word check keeps out invented and archaic words, and a
small collection's vocabulary is no measure of these.

The stand-ins are curated by hand from general legal English and the held-in list above,
not from the test documents.  Some of the words listed with no stand-in were read in the
rewrite benchmark's outputs on TAB test documents (marked where listed), so that
benchmark's readings of those words are not independent.  The licence is the project's.
"""

from __future__ import annotations

from presidio_delink.candidates.legal_terms import LEGAL
from presidio_delink.candidates.lexicon import inflect, lemma_of, wordnet_pos

__all__ = [
    "FRAMES", "LEGAL", "RELATION", "STAND_INS", "TAGS", "is_stand_in", "listed",
    "register_candidates",
]

#: The relation of a stand-in to its word (:class:`~.propose.Candidate.relation`).
RELATION = "legal register"

#: Entries limited to some Penn tags: ``alleged`` before a noun, a verb's past participle
#: used as an adjective, would read as another word.  In another tag the word is listed
#: with no stand-in (WordNet's words are not proposed either: ``in some cases`` ->
#: ``facts``, read on held-in texts).  (An adjective's entry applies to ``JJ`` alone and
#: an adverb's to ``RB``: :func:`_entry`.)
TAGS: dict[tuple[str, str], frozenset[str]] = {
    ("v", "allege"): frozenset({"VBD", "VBZ", "VBP", "VB"}),
    ("v", "rule"): frozenset({"VBD", "VBZ"}),
    ("v", "order"): frozenset({"VBD", "VBZ", "VBP", "VB", "VBG"}),
    ("v", "remit"): frozenset({"VBD", "VBN"}),
    ("v", "terminate"): frozenset({"VBD", "VBZ", "VBP", "VB", "VBG"}),
    ("n", "case"): frozenset({"NN"}),
    ("n", "permission"): frozenset({"NN"}),  # "permissions" are no "leaves"
    ("n", "salary"): frozenset({"NN"}),
    ("v", "register"): frozenset({"VBD", "VBZ", "VBP", "VB", "VBG"}),
    ("n", "remuneration"): frozenset({"NN"}),
    ("n", "passage"): frozenset({"NNS"}),
}


#: Stand-ins that hold in one frame only, by the word after: a verb whose frames split
#: its meaning keeps one of them before ``that`` (``held that`` is ``found that``, where
#: ``held in custody`` is not ``found``; ``claimed that`` is ``maintained that``, where
#: ``claimed compensation`` is ``sought compensation``).  A frame's entry wins over
#: :data:`LEGAL`'s, which may list the word with no stand-in.
FRAMES: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("v", "hold"): {"that": ("find",)},
    ("v", "consider"): {"that": ("find",)},
    ("v", "claim"): {"that": ("maintain",), "compensation": ("seek",), "damages": ("seek",)},
    ("v", "submit"): {"that": ("argue", "maintain")},
    ("v", "state"): {"that": ("declare",)},
    ("v", "note"): {"that": ("observe",)},
    ("v", "admit"): {"that": ("acknowledge",)},
    ("v", "allege"): {"that": ("claim",)},
    ("v", "argue"): {"that": ("contend",)},
    ("v", "maintain"): {"that": ("argue",)},
    ("v", "find"): {"that": ("hold",)},
    # held-in texts: "requested the officer to" is "asked", where
    # "requested an oral hearing" is not; "lived in" is "resided in", "worked as" "served
    # as"; "costs and expenses" keeps its words
    ("v", "request"): {"to": ("ask",), "that": ("ask",), "him": ("ask",), "her": ("ask",),
                       "them": ("ask",)},
    ("v", "complain"): {"that": ("allege",)},
    ("v", "live"): {"in": ("reside",), "at": ("reside",), "there": ("reside",),
                    "with": ("reside",)},
    ("v", "work"): {"as": ("serve",)},
    ("v", "establish"): {"whether": ("determine",), "that": ("find",)},
    ("v", "indicate"): {"that": ("state",)},
    ("n", "cost"): {"and": ()},
    ("n", "hearing"): {"of": ()},  # "the hearing of witnesses" is no "session of"
    ("v", "observe"): {"that": ("note",)},
    ("v", "explain"): {"that": ("state",)},
    # "provided that" is a condition, not a thing rendered (the same reading)
    ("v", "provide"): {"that": ()},
    ("in", "provided"): {"that": ()},
    # a preposition (Penn IN) by its frame alone: "under section 103" is "pursuant to",
    # where "under the guardianship of" or "under arrest" is not
    ("in", "under"): {w: ("pursuant to",) for w in (
        "section", "sections", "subsection", "paragraph", "paragraphs", "clause", "rule")},
    ("n", "question"): {"whether": ("issue",), "of": ("issue",)},
    ("n", "prospect"): {"of": ("chance",)},
    # a plot of land, not a plot to kill; a registered letter is no recorded one
    ("n", "plot"): {"of": ("parcel",), "no": ("parcel",), "nos": ("parcel",),
                    "number": ("parcel",)},
    ("v", "register"): {"in": ("record",), "under": ("record",), "as": ("record",)},
    ("r", "further"): {w: ("also",) for w in (
        "held", "noted", "found", "stated", "argued", "submitted", "complained", "observed",
        "considered", "claimed", "alleged", "maintained", "requested", "asked", "ordered",
        "decided", "pointed", "referred", "relied", "contended", "rejected", "confirmed",
        "dismissed", "indicated", "explained", "emphasised", "stressed", "added")},
    # held-in texts: "refused to entertain the complaint" is "examine",
    # where "entertained doubts" is not; "the refusal of legal aid" is its "denial", where
    # "a refusal to testify" is not; "enforcement of the judgment" is its "execution",
    # where "law enforcement" is not; "had already been" is "had previously been", where
    # "is already pending" is not
    ("v", "entertain"): {w: ("examine",) for w in (
        "the", "their", "his", "her", "its", "this", "these")},
    ("n", "refusal"): {"of": ("denial",)},
    ("n", "ground"): {"for": ("reason",)},  # "there were grounds for suspecting him"
    ("n", "enforcement"): {"of": ("execution",)},
    # "an application for leave" is a request for it; "the case originated in an
    # application" (to the Court) and "in application of the law" are not
    ("n", "application"): {"for": ("request",)},
    # an appeal that modifies a noun is no challenge: "appeal court", "appeal proceedings"
    ("n", "appeal"): {w: () for w in (
        "court", "courts", "proceedings", "procedure", "hearing", "hearings", "judge",
        "judges", "instance", "body", "bodies", "board", "tribunal", "stage", "decision",
        "judgment", "lay", "lies", "lie", "lodged", "panel", "chamber", "division")},
    ("v", "conclude"): {"that": ("find",)},  # "concluded a contract" is no "found"
    ("a", "national"): {w: ("domestic",) for w in (
        "law", "laws", "legislation", "court", "courts", "authorities", "authority",
        "proceedings", "remedies", "remedy", "judge", "judges", "level", "legal")},
    ("r", "already"): {w: ("previously",) for w in (
        "been", "made", "paid", "served", "examined", "considered", "decided", "dismissed",
        "rejected", "granted")},
}
"""Stand-ins by WordNet part of speech and lemma, then by the next word (lower case)."""


def _entry(
    text: str, tag: str, next_word: str = ""
) -> tuple[str, tuple[str, ...]] | None:
    """The part of speech and stand-ins of :data:`LEGAL`'s entry for ``text`` tagged
    ``tag``, where it has one for that tag; a frame of :data:`FRAMES` for it before
    ``next_word`` first."""
    pos = "in" if tag == "IN" else wordnet_pos(tag)  # a preposition: by its frame only
    if pos is None or tag in ("JJR", "JJS", "RBR", "RBS"):  # "earlier" is no "previouser"
        return None
    lemma = lemma_of(text, pos) if pos in ("n", "v") else text.lower()
    framed = FRAMES.get((pos, lemma), {}).get(next_word.lower())
    if framed is not None:
        return pos, framed
    table = LEGAL.get(pos, {})
    if lemma not in table:
        return None
    allowed = TAGS.get((pos, lemma))
    if allowed is not None and tag not in allowed:
        return pos, ()  # listed, with no stand-in in this form: WordNet's read worse
    return pos, table[lemma]


def listed(text: str, tag: str, next_word: str = "") -> bool:
    """Whether the register has an entry for ``text`` tagged ``tag`` before
    ``next_word``, stand-ins or none (:data:`LEGAL`, :data:`FRAMES`): then WordNet's
    words for it are not proposed."""
    return _entry(text, tag, next_word) is not None


def register_candidates(text: str, tag: str, next_word: str = "") -> list[str]:
    """The stand-ins of the word ``text`` tagged ``tag`` before ``next_word`` (module
    docstring), inflected and cased like it; none for a word not in :data:`LEGAL` or
    :data:`FRAMES`, or listed without one."""
    entry = _entry(text, tag, next_word)
    if entry is None:
        return []
    pos, stand_ins = entry
    out: list[str] = []
    for stand_in in stand_ins:
        form = stand_in if " " in stand_in and pos in ("r", "in") else inflect(stand_in, tag)
        if form is None or form.lower() == text.lower() or form in out:
            continue
        out.append(form[:1].upper() + form[1:] if text[:1].isupper() else form)
    return out


#: Every stand-in's lemma: common words of the register, known whatever the collection.
STAND_INS = frozenset(
    [w for table in LEGAL.values() for ins in table.values() for w in ins]
    + [w for frames in FRAMES.values() for ins in frames.values() for w in ins]
)


def is_stand_in(word: str) -> bool:
    """Whether ``word`` is a form of one of the register's stand-ins (:data:`STAND_INS`):
    a word a rewrite may use though the collection never does (the loop's known-word
    check, :meth:`~presidio_delink.core.DelinkLoop._known_word`)."""
    low = word.lower()
    if low in STAND_INS:
        return True
    return any(lemma_of(low, pos) in STAND_INS for pos in ("n", "v"))

"""Synonyms and hypernyms from WordNet 3.0, inflected to the original word's form.

Definitions. For a word ``w`` tagged ``t`` (a Penn Treebank tag, read by spaCy in context),
its lemma ``l`` (:mod:`lemminflect`) is looked up in WordNet's index for ``t``'s part of
speech (noun, verb, adjective, adverb).  Of its first :data:`SENSES` senses (WordNet orders
them by frequency in its tagged corpus), the other words of each synset are *synonyms*;
for nouns, the words of each synset's direct hypernyms are *hypernyms* (a more general
word: ``detention`` -> ``confinement``; a verb's would change what was done: ``accepted``
and ``rejected`` -> ``evaluated``); for adjectives, the first word of each
synset it is *similar* to (``sufficient`` -> ``adequate``).  Each is inflected to ``t``
(``arrested`` VBD -> ``detained``, ``courts`` NNS -> ``tribunals``); a candidate that
cannot be inflected to ``t`` is dropped: a wrong verb form is worse than a redaction.

The data: the WordNet 3.0 database files (``index.*``, ``data.*``) of Debian's
``wordnet-base`` package (``/usr/share/wordnet``; ``$WORDNET_DIR`` names another folder
holding them).  WordNet's licence permits use, copying and distribution with its
copyright notice.  Nothing is downloaded: without the files the lexicon proposes nothing
(:attr:`WordNet.available` is False) and the other sources still work.

Cost: an index file is read once, on first use of its part of speech (about a second for
nouns); a synset is one seek and one line.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SENSES", "SENSE_DEPTH", "TOO_GENERAL", "LexCandidate", "WordNet", "inflect", "lemma_of",
    "wordnet_pos",
]

SENSES = 4
#: Hypernym levels :meth:`WordNet.stands_for` climbs: ``mesothelioma`` -> ``carcinoma``
#: -> ``cancer``; further up the classes say little (``act``, ``entity``).
SENSE_DEPTH = 3
#: Words too general to stand in for another (``accepted`` -> ``had``, ``took``), and
#: ``too``, WordNet's synonym of ``also`` that before an adjective says "excessively"
#: (read: "It was also open to" became "It was too [REDACTED] to").
TOO_GENERAL = frozenset({
    "be", "have", "do", "make", "take", "get", "give", "go", "put", "set", "come", "let",
    "keep", "hold", "see", "thing", "entity", "object", "abstraction", "act", "too",
    # pronouns WordNet lists with "person": "the only person to" -> "the only someone"
    "someone", "somebody", "mortal", "soul",
})
_DEFAULT_DIRS = ("/usr/share/wordnet", "/usr/share/wordnet/dict", "/usr/local/WordNet-3.0/dict")
_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_UPOS = {"n": "NOUN", "v": "VERB", "a": "ADJ", "r": "ADV"}


@dataclass(frozen=True)
class LexCandidate:
    """A lexicon word for a word: its text (inflected), relation and sense rank."""

    text: str
    relation: str  # "synonym" or "hypernym"
    rank: int


def wordnet_pos(tag: str) -> str | None:
    """WordNet's part of speech of a Penn tag (proper nouns and closed classes: None)."""
    if tag in ("NN", "NNS"):
        return "n"
    if tag.startswith("VB"):
        return "v"
    if tag.startswith("JJ"):
        return "a"
    if tag in ("RB", "RBR", "RBS"):
        return "r"
    return None


def lemma_of(word: str, pos: str) -> str:
    """The lemma of ``word`` as part of speech ``pos`` (``n``/``v``/``a``/``r``)."""
    from lemminflect import getLemma

    forms = getLemma(word.lower(), upos=_UPOS[pos])
    return forms[0] if forms else word.lower()


def inflect(lemma: str, tag: str) -> str | None:
    """``lemma`` (one or more words) in the form of Penn tag ``tag``: a verb's first word
    and a noun's last word are inflected; None when lemminflect has no such form."""
    from lemminflect import getInflection

    words = lemma.split()
    if not words:
        return None
    if tag in ("NN", "VB", "VBP", "JJ", "RB") and not (tag == "VBP" and words[0] == "be"):
        return lemma
    i = 0 if tag.startswith("VB") else len(words) - 1
    pos = "v" if tag.startswith("VB") else "n" if tag.startswith("NN") else "a"
    # a verb's lemma is its base form already: lemmatised again, WordNet's "found" (to
    # establish) would be read as "find" and stay "found" in the past tense
    base = words[i] if pos != "n" else lemma_of(words[i], pos)
    forms = getInflection(base, tag=tag) or (
        getInflection(lemma_of(base, pos), tag=tag) if pos == "v" else ()
    )
    if not forms:
        return None
    words[i] = forms[0]
    return " ".join(words)


class WordNet:
    """WordNet 3.0's database files, read lazily (module docstring).

    Args:
        directory: the folder holding ``index.noun``, ``data.noun``...; None looks in
            ``$WORDNET_DIR``, then Debian's ``/usr/share/wordnet``.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = _find_dir(directory)
        self._index: dict[str, dict[str, list[int]]] = {}
        self._places: dict[str, str | None] = {}  # place_kind's answers, by name
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.directory is not None

    def _offsets(self, lemma: str, pos: str) -> list[int]:
        if self.directory is None:
            return []
        with self._lock:
            table = self._index.get(pos)
            if table is None:
                table = _read_index(self.directory / f"index.{_FILES[pos]}")
                self._index[pos] = table
        return table.get(lemma.lower().replace(" ", "_"), [])

    def _synset(
        self, pos: str, offset: int, pointer: str | None = None
    ) -> tuple[list[str], list[int]]:
        """Words of a synset, and the offsets of its direct hypernyms (nouns, verbs) or
        of the synsets it is similar to (adjectives: ``sufficient`` -> ``adequate``);
        with ``pointer``, of the synsets that pointer names (``@i``: what a name is an
        instance of)."""
        assert self.directory is not None
        with open(self.directory / f"data.{_FILES[pos]}", "rb") as f:
            f.seek(offset)
            line = f.readline().decode("utf-8", "replace")
        parts = line.split(" | ", 1)[0].split()
        n_words = int(parts[3], 16)
        words = [parts[4 + 2 * i] for i in range(n_words)]
        j = 4 + 2 * n_words
        wanted = ("&", ("a", "s")) if pos == "a" else (pointer or "@", (pos,))
        related = [
            int(parts[j + 2 + 4 * p])
            for p in range(int(parts[j]))
            if parts[j + 1 + 4 * p] == wanted[0] and parts[j + 3 + 4 * p] in wanted[1]
        ]
        return [_clean(w) for w in words], related

    def candidates(self, word: str, tag: str) -> list[LexCandidate]:
        """Synonyms, then hypernyms, of ``word`` tagged ``tag``, inflected to ``tag``,
        most frequent sense first (no duplicates, never ``word``'s own lemma)."""
        pos = wordnet_pos(tag)
        if pos is None or self.directory is None:
            return []
        lemma = lemma_of(word, pos)
        out: dict[str, LexCandidate] = {}
        for rank, off in enumerate(self._offsets(lemma, pos)[:SENSES]):
            words, hyper = self._synset(pos, off)
            found = [(w, "synonym") for w in words]
            if pos == "n":  # a verb's hypernym changes what was done: refused -> responded
                for h in hyper[:2]:
                    found += [(w, "hypernym") for w in self._synset(pos, h)[0][:2]]
            elif pos == "a":
                for h in hyper[:3]:
                    found += [(w, "similar") for w in self._synset(pos, h)[0][:1]]
            for w, rel in found:
                if w == lemma or lemma in w.split() or len(w.split()) > 3:
                    continue
                if any(c.isupper() or c.isdigit() for c in w) or w in TOO_GENERAL:
                    continue  # a name or a code is no stand-in for a common word
                form = inflect(w, tag)
                if form is not None and form.lower() != word.lower() and form not in out:
                    out[form] = LexCandidate(form, rel, rank)
        return list(out.values())

    def stands_for(self, old: str, new: str, depth: int = SENSE_DEPTH) -> bool:
        """Whether the word or phrase ``new`` names what ``old`` names, or a class above
        it, in some sense WordNet gives: the same lemma, a synonym (one synset), a
        hypernym at most ``depth`` levels up (``barrister`` -> ``lawyer``,
        ``mesothelioma`` -> ``cancer``; an adjective's *similar*), or a verb's troponym
        one level down (``live`` -> ``reside``).  Sister terms are not:
        ``interest`` -> ``fee`` and ``hearing`` -> ``trial`` share a hypernym and name
        other things.  Multi-word phrases are looked up whole (``car chase``), then by
        their last word where ``new`` adds no other word, hyphened ones with the same
        first parts by their last part (``non-pecuniary`` -> ``non-monetary``); every
        part of speech is tried.  False without the WordNet files or for a word WordNet
        does not hold: nothing vouches for it."""
        if self.directory is None:
            return False
        a, b = " ".join(old.lower().split()), " ".join(new.lower().split())
        if not a or not b:
            return False
        if a == b:
            return True
        heads = [(a, b)]
        lead_a, _sp, last_a = a.rpartition(" ")
        lead_b, _sp, last_b = b.rpartition(" ")
        if (lead_a or lead_b) and lead_b in ("", lead_a):
            # by the last word only where nothing else is new: ``car chase`` ->
            # ``pursuit``, ``criminal convictions`` -> ``criminal offences``; not
            # ``holding`` -> ``refusing to hold``, whose ``refusing`` says the opposite
            heads.append((last_a, last_b))
        x, y = heads[-1]
        if "-" in x and "-" in y and x.split("-")[:-1] == y.split("-")[:-1]:
            # compounds WordNet lacks, the same but for their last part
            heads.append((x.rsplit("-", 1)[-1], y.rsplit("-", 1)[-1]))  # non-pecuniary
        for x, y in heads:
            for pos in ("n", "v", "a", "r"):
                lx, ly = _lemma(x, pos), _lemma(y, pos)
                if lx == ly and (self._offsets(lx, pos) or " " not in lx):
                    return True
                want, have = set(self._offsets(ly, pos)), self._offsets(lx, pos)
                if want and any(o in want or self._above(pos, o, want, depth) for o in have):
                    return True
                # a verb's troponym, one level down, is a manner of the same act
                # (``live`` -> ``reside``, ``ordered`` -> ``directed``); a noun's
                # hyponym is another thing (``interest`` -> ``fee``, an interest in land)
                if pos == "v" and any(self._above(pos, o, set(have), 1) for o in want):
                    return True
        return False

    def _above(self, pos: str, offset: int, want: set[int], depth: int) -> bool:
        """Whether a synset of ``want`` is a hypernym of ``offset`` within ``depth``
        levels (an adjective's *similar* synsets, one level)."""
        if pos == "r":
            return False
        seen, front = {offset}, [offset]
        for _level in range(1 if pos == "a" else depth):
            nxt = []
            for o in front:
                for h in self._synset(pos, o)[1]:
                    if h in want:
                        return True
                    if h not in seen:
                        seen.add(h)
                        nxt.append(h)
            front = nxt
        return False

    def place_kind(self, name: str) -> str | None:
        """What kind of place the capitalised ``name`` is, where WordNet names it:
        ``"country"`` (``Turkey``: an Asian country), ``"city"`` (``Istanbul``,
        ``Moscow``) or ``"region"`` (``Anatolia``; ``Texas``, an American state); None for a
        name WordNet does not hold as a place (``Famagusta``, ``GDR``).  Only a sense
        whose words hold ``name`` as written counts (``turkey`` the bird is not
        ``Turkey``).  Asked for every typed name of every protection round: each name's
        answer is kept (a few seeks into ``data.noun`` the first time)."""
        if self.directory is None or not name[:1].isupper() or " " in name.strip():
            return None
        if name not in self._places:
            self._places[name] = self._read_place_kind(name)
        return self._places[name]

    def _read_place_kind(self, name: str) -> str | None:
        for off in self._offsets(name, "n"):
            words, kinds = self._synset("n", off, "@i")
            if name not in words:
                continue
            for k in kinds:
                for w in self._synset("n", k)[0]:
                    head = w.lower().rsplit(" ", 1)[-1]
                    for kind, heads in PLACE_KINDS:
                        if head in heads:
                            return kind
        return None


#: What the instance-of words of a WordNet name say it is (:meth:`WordNet.place_kind`):
#: the last word of one of them.
PLACE_KINDS = (
    ("country", frozenset({"country", "nation", "kingdom", "republic"})),
    ("city", frozenset({"city", "town", "port", "metropolis", "capital", "village"})),
    ("region", frozenset({"region", "area", "island", "peninsula", "province", "district",
                          "county", "territory", "state"})),
)


def _lemma(phrase: str, pos: str) -> str:
    """``phrase``'s lemma as part of speech ``pos``: a word's (:func:`lemma_of`), a
    phrase's last word's (``criminal convictions`` -> ``criminal conviction``)."""
    head, _sp, last = phrase.rpartition(" ")
    lemma = lemma_of(last, pos) if last.isalpha() else last
    return f"{head} {lemma}" if head else lemma


def _clean(word: str) -> str:
    w = word.replace("_", " ")
    cut = w.find("(")  # adjective markers: "big(a)"
    return w[:cut] if cut > 0 else w


def _find_dir(directory: str | Path | None) -> Path | None:
    tried = [directory] if directory is not None else [os.environ.get("WORDNET_DIR")]
    if directory is None:
        tried += list(_DEFAULT_DIRS)
    for d in tried:
        if d and (Path(d) / "index.noun").is_file() and (Path(d) / "data.noun").is_file():
            return Path(d)
    return None


def _read_index(path: Path) -> dict[str, list[int]]:
    """lemma -> synset offsets of a WordNet ``index.*`` file."""
    table: dict[str, list[int]] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(" "):
                continue  # the licence at the top
            parts = line.split()
            n_ptr = int(parts[3])
            n_syn = int(parts[2])
            table[parts[0]] = [int(x) for x in parts[6 + n_ptr : 6 + n_ptr + n_syn]]
    return table

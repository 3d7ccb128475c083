"""The BM25 engine of the ranked attack: SQLite FTS5 (standard library) over the index's
documents, with the postings that score many queries fast.

Definitions.  Document ``d`` of the index is its normalised words
(``NgramIndex.doc_words``; the raw text is not stored in the index: the words are
NFKC-casefolded and diacritic-folded, which is what a search engine's own folding does)
joined by spaces.  A *member* of the panel is an FTS5 tokenizer (``unicode61``, or
``porter`` over it) and a stop-word choice (:data:`STOP_WORDS` dropped from documents
and queries alike, as Lucene's ``StopFilter`` does before stemming).  A word's *terms*
are what the member's FTS5 tokenizer makes of it, asked of FTS5 itself (a helper table
and its ``fts5vocab`` instance table; cached per word).

Scores are FTS5's ``bm25()`` (``k1 = 1.2, b = 0.75``), negated so that higher is better::

    score(D) = sum_t idf(t) * f(t, D) (k1 + 1) / (f(t, D) + k1 (1 - b + b |D| / avgdl))
    idf(t) = log((N - n_t + 0.5) / (n_t + 0.5)), or 1e-6 where that is not positive

with ``|D|`` the document's terms, ``avgdl`` their mean over the ``N`` documents and
``n_t`` the documents holding ``t``.  The protection's panel adds members (:class:`Member`)
with other ``k1``/``b``, Lucene's idf ``log(1 + (N - n_t + .5) / (n_t + .5))``, and the
*group model* "a group is one document": ``D`` ranges over the groups, each its documents'
terms together (``N`` groups, ``|D|`` and ``f`` summed over its documents); such a member
gives every document its group's score.  FTS5's own ``bm25()`` computes the members with
its defaults (one FTS5 row per group for the group model); the others are checked against
a brute-force BM25 in the tests.  Why postings and not FTS5 queries: a whole-text OR
query makes FTS5 walk the postings of the commonest words (every document holds "the"),
and the audit asks one query per sentence per member, so FTS5 queries cost the audit
far more (``benchmarks/results/ranked_audit.md``).  So each
member's summands ``w(t, d)`` (every factor above but the sum) are computed once from
FTS5's tokenisation of the collection, and a query's scores are one weighted
``bincount`` of its terms' postings.  The FTS5 table of each member is still built on
demand (:meth:`Engine.fts5_search`), and the tests check that both give the same scores.

Cost.  A member the index stores (:mod:`presidio_delink.index.readings`, written by
``index build`` through :mod:`~presidio_delink.attacks.readings`) is memory-mapped: nothing
is built; over an index with added segments, a document member is scored from the parts'
stored counts (:mod:`~presidio_delink.attacks.segment_scores`).  Any other member is
built once per index and process when a panel first holds it (panels share them): the
collection's words once, their terms under each FTS5 tokenizer
(one insert of the distinct words), and one sort of its (term, document) pairs; the word
and character n-grams across words by a Python pass over every document's words.  That
is minutes on TAB for the audit's panel (``benchmarks/results/bench_living_index.md``).
A query of ``T`` terms: the sum of their posting lengths.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from presidio_delink.attacks import scoring
from presidio_delink.attacks.grams import (
    CHAR_NGRAMS,
    CROSS_NGRAMS,
    GAPPED_NGRAMS,
    KEPT_NGRAMS,
    SPANNING_NGRAMS,
    STOP_WORDS,
    WINDOW_NGRAMS,
    WORD_NGRAMS,
    char_grams,
    cross_grams,
    kept_grams,
    spanning_grams,
    window_grams,
    word_grams,
)
from presidio_delink.attacks.segment_scores import segment_member
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.index.segment_readings import SegmentReadings

__all__ = [
    "ALL_MEMBERS", "CHAR_NGRAMS", "CROSS_NGRAMS", "EXTRA_MEMBERS", "MEMBERS",
    "PROTECT_MEMBERS", "PROTECT_MEMBERS_BASE", "PROTECT_MEMBERS_KEPT", "PROTECT_MEMBERS_PAIRS",
    "PROTECT_MEMBERS_QTF",
    "SPANNING_NGRAMS",
    "STOP_WORDS", "Engine",
    "KEPT_NGRAMS", "PROTECT_MEMBERS_COSINE", "WORD_NGRAMS", "Member", "char_grams",
    "GAPPED_NGRAMS", "WINDOW_NGRAMS", "window_grams",
    "READINGS_CODE", "cross_grams", "engine", "kept_grams", "spanning_grams", "stored_spec",
    "word_grams",
]

log = logging.getLogger(__name__)

_K1, _B = 1.2, 0.75  # FTS5's bm25() defaults
#: The version of the code that turns the collection into a member's postings (its
#: grams and weights), stored with each reading (:func:`stored_spec`): change it with
#: that code, so that readings stored by other code are built again, never misread.
#: A TF-IDF cosine reading's is one more (:func:`stored_spec`): its document norms are
#: summed in the terms' code-point order, so that a reader over segments sums them alike.
READINGS_CODE = 1
#: An index of at least this many words without stored readings gets a warning (building
#: its readings takes seconds or more: about 100 s a million words on TAB).
WARN_WORDS = 100_000

_TOKENIZERS = {
    "unicode61": "unicode61 remove_diacritics 2",
    "porter": "porter unicode61 remove_diacritics 2",
}


class Member(NamedTuple):
    """One ranking function of the panel.

    Attributes:
        tokenizer: the FTS5 tokenizer (``unicode61`` or ``porter``).
        stop: English stop words (:data:`STOP_WORDS`) dropped from documents and queries.
        k1, b: BM25's term-frequency saturation and length normalisation.
        unit: ``"doc"``: a group scores as its best document; ``"group"``: a group is
            ONE document, its documents' words concatenated (an engine that indexes a
            case file, or a person's pages, as one record).
        idf: ``"fts5"`` (``log((N - n + .5) / (n + .5))``, 1e-6 where not positive) or
            ``"lucene"`` (``log(1 + (N - n + .5) / (n + .5))``, always positive); for the
            cosine model ``"smooth"`` is scikit-learn's ``log((1 + N) / (1 + n)) + 1``
            (common terms keep a weight of about 1), any other ``log(N / n)``.
        qtf: each term's summand counts once per occurrence in the query (a query
            parser that keeps every pasted word as a clause: repeated terms weigh more);
            False: once per distinct term (an OR query of the distinct terms).
        model: ``"bm25"``, or ``"cosine"``: the vector space model before BM25, a
            document's TF-IDF vector (``(1 + ln f) ln(N / n)``) divided by its length,
            against the query's distinct terms weighted by their idf (k1 and b
            unused).  Its score is a sum over the query's terms too.
    """

    tokenizer: str
    stop: bool
    k1: float = _K1
    b: float = _B
    unit: str = "doc"
    idf: str = "fts5"
    qtf: bool = False
    model: str = "bm25"

    @property
    def is_fts5(self) -> bool:
        """Whether FTS5's own ``bm25()`` computes this member (per-document, its k1/b/idf)."""
        return self.tokenizer in _TOKENIZERS and (
            self.k1, self.b, self.idf, self.qtf, self.model) == (_K1, _B, "fts5", False, "bm25")


#: The audit's panel (``attack --method ranked``, ``delink``'s audit): FTS5's ``bm25()``
#: under four tokenisers.  Its decision margins are calibrated on these four
#: (``ranked_calibration.json``).
MEMBERS: dict[str, Member] = {
    "fts5-unicode61": Member("unicode61", False),
    "fts5-porter": Member("porter", False),
    "fts5-unicode61-stop": Member("unicode61", True),
    "fts5-porter-stop": Member("porter", True),
}

#: Further ranking functions: corners of the space the audit's four do not reach, for
#: the two tokenisation extremes (no stemming with stop words; Porter without them).
#: ``-k2b1``: strong term-frequency weight and full length normalisation (k1 = 2, b = 1)
#: with Lucene's always-positive idf (common words count); ``-k09b04``: weak saturation
#: and length normalisation (k1 = 0.9, b = 0.4, Anserini's defaults), Lucene's idf;
#: ``-case``: the group as one concatenated document.  A source pushed below its
#: competitor under the corners of (k1, b, idf, group model) is below it under most
#: functions in between, which is what a margin alone had to buy before
#: (``benchmarks/README.md``).
EXTRA_MEMBERS: dict[str, Member] = {
    "bm25-unicode61-k2b1": Member("unicode61", False, 2.0, 1.0, "doc", "lucene"),
    "bm25-porter-stop-k2b1": Member("porter", True, 2.0, 1.0, "doc", "lucene"),
    "fts5-unicode61-case": Member("unicode61", False, _K1, _B, "group"),
    "fts5-porter-stop-case": Member("porter", True, _K1, _B, "group"),
    "bm25-unicode61-case-k2b1": Member("unicode61", False, 2.0, 1.0, "group", "lucene"),
    "bm25-porter-stop-case-k2b1": Member("porter", True, 2.0, 1.0, "group", "lucene"),
    "bm25-unicode61-k09b04": Member("unicode61", False, 0.9, 0.4, "doc", "lucene"),
    "bm25-porter-stop-k09b04": Member("porter", True, 0.9, 0.4, "doc", "lucene"),
    "bm25-unicode61-case-k09b04": Member("unicode61", False, 0.9, 0.4, "group", "lucene"),
    "bm25-porter-stop-case-k09b04": Member("porter", True, 0.9, 0.4, "group", "lucene"),
    # what every query parser does with pasted text: each occurrence a clause
    "fts5-unicode61-qtf": Member("unicode61", False, _K1, _B, "doc", "fts5", True),
    "fts5-porter-stop-qtf": Member("porter", True, _K1, _B, "doc", "fts5", True),
    # the same at Anserini's defaults, Lucene's idf (common words repeated count)
    "bm25-unicode61-k09b04-qtf": Member("unicode61", False, 0.9, 0.4, "doc", "lucene", True),
    "bm25-porter-stop-k09b04-qtf": Member("porter", True, 0.9, 0.4, "doc", "lucene", True),
    # character 4-grams across words (:data:`CROSS_NGRAMS`), every occurrence counted
    "bm25-char4x-qtf": Member("char4x", False, _K1, _B, "doc", "lucene", True),
    "bm25-char4x-k2b1": Member("char4x", False, 2.0, 1.0, "doc", "lucene"),
    # character 4-grams of each word (:data:`CHAR_NGRAMS`), every occurrence counted
    "bm25-char4-qtf": Member("char4", False, _K1, _B, "doc", "lucene", True),
    "bm25-char4-k09b04-qtf": Member("char4", False, 0.9, 0.4, "doc", "lucene", True),
    # word pairs (:data:`WORD_NGRAMS`), by BM25 and by the vector space model (TF-IDF
    # cosine: no saturation, a length-normalised vector)
    "bm25-word2": Member("word2", False, idf="lucene"),
    "cosine-word2": Member("word2", False, model="cosine"),
    # word triples: what a phrase or shingle engine reads (3-word fingerprints)
    "bm25-word3": Member("word3", False, idf="lucene"),
    # the same with every occurrence counted, and the vector space model over words and
    # over triples: readings of the audit only
    "bm25-word3-qtf": Member("word3", False, idf="lucene", qtf=True),
    "cosine-word1": Member("unicode61", False, model="cosine"),
    "cosine-word3": Member("word3", False, model="cosine"),
    # the same over a group as one document (its texts' pairs or triples together): the
    # held-in vector family's strongest readings
    "cosine-word2-case": Member("word2", False, unit="group", model="cosine"),
    "cosine-word3-case": Member("word3", False, unit="group", model="cosine"),
    # scikit-learn's smoothed idf: the pairs and triples every document shares count too
    "cosine-word2-smooth": Member("word2", False, idf="smooth", model="cosine"),
    "cosine-word3-smooth": Member("word3", False, idf="smooth", model="cosine"),
    # kept pairs (:data:`KEPT_NGRAMS`): none across a placeholder
    "cosine-word2k": Member("word2k", False, model="cosine"),
    "bm25-word2k": Member("word2k", False, idf="lucene"),
    # window pairs (:data:`WINDOW_NGRAMS`), every occurrence counted: a reading of the
    # audit and (three positions) of the protection
    "bm25-pair3w-qtf": Member("pair3w", False, idf="lucene", qtf=True),
    "bm25-pair5w-qtf": Member("pair5w", False, idf="lucene", qtf=True),
    "bm25-pair8w-qtf": Member("pair8w", False, idf="lucene", qtf=True),
}

#: Every member a panel may hold.
ALL_MEMBERS: dict[str, Member] = {**MEMBERS, **EXTRA_MEMBERS}

#: The protection's panel before the query-side readings: the audit's four and the corners
#: above but ``-k09b04`` (on held-in data, 40 TAB train/dev texts at margin 0.05, adding
#: the four ``-k09b04`` changed 53.2 % of the words against 49.9 %, and without them the
#: held-in family stayed within the calibration's 5 %: ``benchmarks/README.md``).
PROTECT_MEMBERS_BASE: tuple[str, ...] = tuple(
    m for m in ALL_MEMBERS
    if "k09b04" not in m and not m.endswith("-qtf")
    and not m.startswith("bm25-char") and "-word" not in m
)
#: The same with FTS5's two query-tf readings (a query parser's: repeated terms weigh more).
PROTECT_MEMBERS_QTF: tuple[str, ...] = (
    *PROTECT_MEMBERS_BASE, "fts5-unicode61-qtf", "fts5-porter-stop-qtf")
#: A smaller protection panel (the calibration scripts compare it): the base panel, the
#: two query-tf readings and character 4-grams across word boundaries with every occurrence counted
#: (``bm25-char4x-qtf``).  Chosen on held-in data only, with the crowd size
#: (``benchmarks/ranked/calibrate_crowd.py``, 40 TAB train/dev texts, a held-in family of
#: 48 BM25 variants of its own, word and character n-gram, distinct and repeated query
#: terms): the cheapest panel, crowd and margin at which no family member ranks the source
#: first for more than 5 % of the texts nor in its top 5 for more than 20 %.  With the
#: base panel a character 5-gram member of the family still finds the source first for
#: 29-33 of 40 (``benchmarks/results/ranked_crowd.md``).  And BM25 over word pairs
#: (``bm25-word2``): without it, word-pair readers of the pairs a text keeps in its
#: source's order (TF-IDF cosine over word bigrams, BM25 over them) ranked the source
#: first for 9-10 of 30 held-in texts and in their top 5 for 17-19; with it, for none and
#: at most 1, for 4.2 points more words (56.7 % -> 60.9 %; ``ranked_crowd.md``).
PROTECT_MEMBERS_PAIRS: tuple[str, ...] = (
    *PROTECT_MEMBERS_QTF, "bm25-char4x-qtf", "bm25-word2")
#: A candidate panel (the calibration scripts compare it): the panel above and the vector space
#: model (TF-IDF cosine, no saturation of term frequency) over word pairs and over word
#: triples.  Chosen on held-in data only (``benchmarks/ranked/calibrate_crowd.py
#: --vector``, runs in ``benchmarks/ranked/calibrate_vector.json``: 80 TAB train/dev
#: texts): the rule above, read also by a held-in family that does not rank by BM25
#: (``benchmarks/ranked/vector_family.py``: TF-IDF cosine over word 1-, 2- and 3-grams,
#: its own code).  With the panel above, that family's worst member found the source
#: first for 8 of each half's 40 texts (20 %) and in its top 5 for 14 and 16; with this
#: one, for 3 and 15 of the 80, the only panel of those tried that met the rule (66.7 %
#: of words against 63.2-63.5 %).  BM25 over pairs (``bm25-word2``) alone leaves the
#: cosine's other weighting: a pair a document repeats counts by its log, not
#: saturated, and the document's vector is scaled to unit length.
PROTECT_MEMBERS_COSINE: tuple[str, ...] = (
    *PROTECT_MEMBERS_PAIRS, "cosine-word2", "cosine-word3")
#: The protection's panel (``--protect ranked``): the query-tf panel, character 4-grams
#: across words, and the *kept* word pairs (:data:`KEPT_NGRAMS`: none across a
#: placeholder) by BM25 and by TF-IDF cosine, in place of the pairs joined across
#: placeholders, and TF-IDF cosine over triples.  Chosen on held-in data (80 TAB
#: train/dev texts, ``calibrate_vector.json``) once the held-in family had BM25 over kept
#: pairs and triples of its own: under it the panel above failed the rule (its worst
#: member first for 18 of 80, top 5 for 37; on the TAB test outputs BM25 over kept pairs
#: found 29-38 of 127 first).  This one held (0 and 3 of 80) at 68.5 % of words; the
#: panel above with ``bm25-word2k`` added held too, at 70.2 %.  The panel below without
#: the window pairs.
PROTECT_MEMBERS_KEPT: tuple[str, ...] = (
    *PROTECT_MEMBERS_QTF, "bm25-char4x-qtf", "bm25-word2k", "cosine-word2k", "cosine-word3")
#: The protection's panel (``--protect ranked``): the kept panel above and BM25 over the
#: *window* pairs (:data:`WINDOW_NGRAMS`, ``bm25-pair3w-qtf``): each word and each of the
#: next three positions, a run of placeholders one position that pairs with nothing.
#: Without it a held-out reader of such pairs found the source first for 58 of the 127
#: TAB test outputs of ``--protect all`` and in its top 5 for 74: the words kept around a
#: placeholder stand at their distance in the source.  Chosen on held-in data (113 TAB
#: train/dev texts): every independent window reader 0 first and at most 4 in the top 5
#: (up to 73 / 86 with the kept panel), for 78.1 % of words against 71.5 %
#: (``benchmarks/results/ranked_crowd.md``).
PROTECT_MEMBERS: tuple[str, ...] = (*PROTECT_MEMBERS_KEPT, "bm25-pair3w-qtf")


def stored_spec(member: str) -> list[object]:
    """What a stored reading of ``member`` must have been made with to be read: the
    code version (:data:`READINGS_CODE`) and the member's definition."""
    spec = ALL_MEMBERS[member]
    return [READINGS_CODE + (spec.model == "cosine"), *spec]


class _Member:
    """One member's BM25 postings: per engine term, the units (documents, or groups for
    a ``"group"`` member) holding it and the term's BM25 summand in each (the member's
    formula on FTS5's own tokenisation)."""

    def __init__(
        self,
        term_ids: Mapping[str, int],
        ptr: np.ndarray,
        docs: np.ndarray,
        weights: np.ndarray,
        unit_of: np.ndarray | None = None,
    ) -> None:
        self.term_ids = term_ids
        self.ptr, self.docs, self.weights = ptr, docs, weights
        self.unit_of = unit_of  # document -> its unit (None: the document itself)

    def postings(
        self, terms: Sequence[str], counts: Sequence[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Documents and summands of ``terms`` (concatenated; unknown terms have none),
        each summand times its term's ``counts`` entry when given."""
        keep = [(self.term_ids[t], 1 if counts is None else counts[j])
                for j, t in enumerate(terms) if t in self.term_ids]
        if not keep:
            return np.empty(0, dtype=np.int32), np.empty(0)
        sl = [slice(self.ptr[i], self.ptr[i + 1]) for i, _ in keep]
        w = np.concatenate([self.weights[x] for x in sl])
        if counts is not None:
            w = w * np.repeat([float(c) for _, c in keep], [x.stop - x.start for x in sl])
        return np.concatenate([self.docs[x] for x in sl]), w


class Engine:
    """The engine of one index: FTS5 helper tables that tokenise words (one per FTS5
    tokenizer), each member's postings (built when a panel first asks for the member),
    and (on demand, for checks) one FTS5 table per member holding the collection.  One
    per index and process (see :func:`engine`): panels that share members share their
    postings."""

    @property
    def index(self) -> NgramIndex:
        """The engine's index (it is built for one, and only lives as long as it)."""
        got = self._index()
        if got is None:
            raise RuntimeError("the index of this ranked engine is gone")
        return got

    def __init__(self, index: NgramIndex, members: Sequence[str] = ()) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.lock = threading.RLock()
        # A weak reference: the engines are kept in a WeakKeyDictionary keyed by the
        # index, and a value that held its key would keep every index ever audited in
        # the process alive, with its mapped files open.
        self._index = weakref.ref(index)
        self.n_docs = index.n_docs
        self.tables: dict[str, str] = {}
        self.term_cache: dict[str, dict[str, tuple[str, ...]]] = {}
        self._collection: tuple[list[str], np.ndarray, np.ndarray] | None = None
        table = scoring.group_table(index)
        self.group_of = table.of
        self.n_groups = table.n_groups
        self.members: dict[str, _Member] = {}
        self.built: list[str] = []  # members built here (not read from the index)
        self.add(members)

    def collection(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The collection's distinct words, each token's word id and document (the index's
        own ids renumbered densely; each distinct word decoded once): what building a
        member reads, made on first use."""
        if self._collection is None:
            index = self.index
            per_doc = [index.doc_word_ids(d) for d in range(self.n_docs)]
            lens = np.fromiter((len(x) for x in per_doc), dtype=np.int64, count=self.n_docs)
            raw = np.concatenate(per_doc) if per_doc else np.empty(0, dtype=np.int64)
            uniq, word_ids = np.unique(raw, return_inverse=True)
            words = [index.word_of(int(w)) for w in uniq.tolist()]
            doc_of = np.repeat(np.arange(self.n_docs, dtype=np.int64), lens)
            self._collection = (words, word_ids.astype(np.int64).ravel(), doc_of)
        return self._collection

    def prepare(self, member: str) -> None:
        """Create the helper table that maps a query's words to the member's terms."""
        tok = ALL_MEMBERS[member].tokenizer
        if tok in SPANNING_NGRAMS:
            return
        if tok in CHAR_NGRAMS:
            self.term_cache.setdefault(tok, {})
        elif tok not in self.term_cache:
            self.db.execute(
                f"CREATE VIRTUAL TABLE tok_{tok} USING fts5(body, "
                f"tokenize='{_TOKENIZERS[tok]}')"
            )
            self.db.execute(
                f"CREATE VIRTUAL TABLE tokv_{tok} USING fts5vocab(tok_{tok}, instance)"
            )
            self.term_cache[tok] = {}

    def add(self, members: Sequence[str]) -> None:
        """Open the postings of the ``members`` not open yet: those the index stores
        (:func:`stored_spec` matching) are memory-mapped, the others built here."""
        store = getattr(self.index, "readings", None)
        if store is not None:  # their checksums, on a few threads at once
            store.check([m for m in members if m not in self.members
                         and store.spec(m) == stored_spec(m)])
        built = []
        for m in members:
            if m in self.members:
                continue
            self.prepare(m)
            got = self._stored(m)
            if got is None:
                got = self.build(m)
                built.append(m)
            self.members[m] = got
        if built:
            self._tell(built)
            self.built += built

    def _stored(self, member: str) -> _Member | None:
        store = getattr(self.index, "readings", None)
        if isinstance(store, SegmentReadings):  # over segments: scored from their counts
            got = segment_member(store, ALL_MEMBERS[member], READINGS_CODE, self.group_of)
            return got  # type: ignore[return-value]
        if store is None or store.spec(member) != stored_spec(member):
            return None
        p = store.get(member)
        if p is None:
            return None
        unit_of = self.group_of if ALL_MEMBERS[member].unit == "group" else None
        return _Member(p.terms, p.ptr, p.docs, p.weights, unit_of)

    def _tell(self, built: list[str]) -> None:
        """Say once per engine why readings were built here, and how to store them."""
        if self.built:
            return
        store = getattr(self.index, "readings", None)
        where = self.index.directory
        how = f"store them once with `presidio-delink index readings {where}`"
        if store is None:
            # a warning where building takes seconds or more; below, what it costs is
            # less than the message
            level = logging.WARNING if self.index.meta["n_words"] >= WARN_WORDS else logging.INFO
            log.log(
                level,
                "the index at %s has no stored readings (an older index, or one made by "
                "NgramIndex.build): building %d ranked readings in this process, which takes "
                "minutes on a large collection; %s", where, len(built), how)
        elif any(store.spec(m) is not None for m in built):
            log.warning(
                "the readings stored with the index at %s were made by another version: "
                "building %d ranked readings in this process; %s", where, len(built), how)
        else:
            log.info("building %d ranked readings the index at %s does not store: %s",
                     len(built), where, ", ".join(built))

    def build(self, member: str) -> _Member:
        """The member's postings, built from the collection's words."""
        return self._weights(ALL_MEMBERS[member], *self.occurrences(member))

    def occurrences(self, member: str) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        """The member's terms (term -> id, in order of first reading) and the term id and
        document of each occurrence in the collection, documents in order."""
        spec = ALL_MEMBERS[member]
        tok, stop = spec.tokenizer, spec.stop
        words, word_ids, doc_of = self.collection()
        term_ids: dict[str, int] = {}
        if tok in SPANNING_NGRAMS:  # a word's grams depend on the next words
            bounds = np.searchsorted(doc_of, np.arange(self.n_docs + 1))
            tl: list[int] = []
            dl_: list[int] = []
            for d in range(self.n_docs):
                ws = [words[i] for i in word_ids[bounds[d] : bounds[d + 1]].tolist()]
                ids = [term_ids.setdefault(g, len(term_ids))
                       for gs in spanning_grams(tok, ws) for g in gs]
                tl += ids
                dl_ += [d] * len(ids)
            return term_ids, np.asarray(tl, dtype=np.int64), np.asarray(dl_, dtype=np.int64)
        mapped = self.terms(tok, words)
        per_word = [
            []
            if stop and w in STOP_WORDS
            else [term_ids.setdefault(t, len(term_ids)) for t in mapped[w]]
            for w in words
        ]
        n_of = np.fromiter((len(x) for x in per_word), dtype=np.int64, count=len(per_word))
        flat = np.fromiter((t for x in per_word for t in x), dtype=np.int64, count=int(n_of.sum()))
        start = np.concatenate(([0], np.cumsum(n_of)[:-1])).astype(np.int64)
        reps = n_of[word_ids]
        tdoc = np.repeat(doc_of, reps)
        # the j-th term of each token's word: its word's start + 0..n-1
        first = np.repeat(start[word_ids], reps)
        within = np.arange(len(tdoc)) - np.repeat(np.cumsum(reps) - reps, reps)
        return term_ids, flat[first + within], tdoc

    def _weights(
        self, spec: Member, term_ids: Mapping[str, int], terms: np.ndarray, tdoc: np.ndarray
    ) -> _Member:
        """The member's postings from its (term, document) occurrences."""
        unit_of = None
        n = self.n_docs
        if spec.unit == "group":  # a group is one document: its documents' terms together
            unit_of = self.group_of
            tdoc = self.group_of[tdoc]
            n = self.n_groups
        keys, tf = np.unique(terms * n + tdoc, return_counts=True)
        t_of, d_of = keys // n, keys % n
        ptr = np.searchsorted(t_of, np.arange(len(term_ids) + 1))
        df = np.diff(ptr).astype(np.float64)
        f = tf.astype(np.float64)
        idf = scoring.idf(spec, df, n)
        if spec.model == "cosine":  # the norm summed in the terms' code-point order
            order = scoring.lex_order(list(term_ids), t_of, d_of)
            norm = scoring.cosine_norms(idf[t_of], f, d_of, order, n)
            w = scoring.cosine(idf[t_of], f, norm[d_of])
        else:
            dl = np.bincount(tdoc, minlength=n).astype(np.float64)  # FTS5's column size
            w = scoring.bm25(spec, idf[t_of], f, dl[d_of], dl.sum() / n if n else 0.0)
        return _Member(term_ids, ptr, d_of.astype(np.int32), w, unit_of)

    def token_terms(
        self, tok: str, words: Sequence[str], gaps: Sequence[bool] | None = None
    ) -> list[tuple[str, ...]]:
        """The terms of each word of a word sequence (a text's, in order): the word's own
        terms (:meth:`terms`), or for :data:`SPANNING_NGRAMS` the grams it starts.
        ``gaps[i]``: a placeholder stands between ``words[i - 1]`` and ``words[i]``
        (read by :data:`GAPPED_NGRAMS` only)."""
        if tok in GAPPED_NGRAMS and gaps is not None and any(gaps):
            ext: list[str] = []
            own: list[int] = []
            for w, gap in zip(words, gaps, strict=True):
                if gap:
                    ext.append("")
                own.append(len(ext))
                ext.append(w)
            grams = spanning_grams(tok, ext)
            return [grams[i] for i in own]
        if tok in SPANNING_NGRAMS:
            return spanning_grams(tok, words)
        mapped = self.terms(tok, words)
        return [mapped[w] for w in words]

    def terms(self, tok: str, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The engine's terms of each word under tokenizer ``tok`` (cached)."""
        cache = self.term_cache[tok]
        if len(cache) > 2_000_000:  # before the look-up: every word asked is then filled
            cache.clear()
        new = [w for w in dict.fromkeys(words) if w not in cache]
        if new and tok in CHAR_NGRAMS:
            cache.update((w, char_grams(w, CHAR_NGRAMS[tok])) for w in new)
        elif new:
            self.db.executemany(
                f"INSERT INTO tok_{tok}(rowid, body) VALUES (?, ?)", enumerate(new, 1)
            )
            got: dict[int, list[tuple[int, str]]] = {}
            for doc, off, term in self.db.execute(f"SELECT doc, offset, term FROM tokv_{tok}"):
                got.setdefault(doc, []).append((off, term))
            self.db.execute(f"DELETE FROM tok_{tok}")
            for i, w in enumerate(new, 1):
                cache[w] = tuple(t for _, t in sorted(got.get(i, [])))
        return {w: cache[w] for w in words}

    def scores(
        self, member: str, terms: Sequence[str], counts: Sequence[int] | None = None
    ) -> np.ndarray:
        """Every document's score for the OR query of distinct ``terms`` (for a
        ``"group"`` member, each document has its group's score); for a ``qtf`` member
        each term weighs its ``counts`` entry (its occurrences in the query; 1 when
        not given)."""
        m = self.members[member]
        docs, w = m.postings(terms, counts if ALL_MEMBERS[member].qtf else None)
        if m.unit_of is None:
            return np.bincount(docs, weights=w, minlength=self.n_docs)
        return np.bincount(docs, weights=w, minlength=self.n_groups)[m.unit_of]

    def summands(
        self, member: str, terms: Sequence[str], doc: int, counts: Sequence[int] | None = None
    ) -> list[float]:
        """Each term's summand of document ``doc``'s score (0.0 where absent; for a
        ``qtf`` member times its ``counts`` entry)."""
        m = self.members[member]
        mult = counts if counts is not None and ALL_MEMBERS[member].qtf else None
        if m.unit_of is not None:
            doc = int(m.unit_of[doc])
        if not isinstance(m, _Member):  # over segments
            return [float(w[docs == doc].sum()) * (mult[j] if mult is not None else 1)
                    for j, (docs, w) in enumerate(m.postings([t]) for t in terms)]
        out = []
        for t in terms:
            i = m.term_ids.get(t)
            if i is None:
                out.append(0.0)
                continue
            a, b = int(m.ptr[i]), int(m.ptr[i + 1])
            j = a + int(np.searchsorted(m.docs[a:b], doc))
            w = float(m.weights[j]) if j < b and m.docs[j] == doc else 0.0
            out.append(w * (mult[len(out)] if mult is not None else 1))
        return out

    # -- the FTS5 tables themselves (checks) --------------------------------------------
    def fts5_table(self, member: str) -> str:
        """The member's FTS5 table of the collection (for a ``"group"`` member, one row
        per group: its documents' words in order), built on first use."""
        spec = ALL_MEMBERS[member]
        if not spec.is_fts5:
            raise ConfigError(f"FTS5's bm25() does not compute {member!r} (its k1/b/idf)")
        table = self.tables.get(member)
        if table is None:
            tok, stop = spec.tokenizer, spec.stop
            table = f"m{len(self.tables)}"
            self.db.execute(
                f"CREATE VIRTUAL TABLE {table} USING fts5(body, tokenize='{_TOKENIZERS[tok]}', "
                "detail=column)"
            )
            bodies = [
                " ".join(w for w in self.index.doc_words(d) if w and not (stop and w in STOP_WORDS))
                for d in range(self.n_docs)
            ]
            if spec.unit == "group":
                per: list[list[str]] = [[] for _ in range(self.n_groups)]
                for d, body in enumerate(bodies):
                    per[int(self.group_of[d])].append(body)
                bodies = [" ".join(x) for x in per]
            rows = ((i + 1, body) for i, body in enumerate(bodies))
            self.db.executemany(f"INSERT INTO {table}(rowid, body) VALUES (?, ?)", rows)
            self.tables[member] = table
        return table

    def fts5_search(self, member: str, match: str) -> list[tuple[int, float]]:
        """``(ordinal, -bm25)`` of every document FTS5 matches (for a ``"group"``
        member, every document of each matching group, with its group's score)."""
        table = self.fts5_table(member)
        rows = self.db.execute(
            f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?", (match,)
        )
        got = [(r - 1, -s) for r, s in rows]
        if ALL_MEMBERS[member].unit != "group":
            return got
        score = dict(got)
        return [(d, score[g]) for d, g in enumerate(self.group_of.tolist()) if g in score]


_ENGINES: weakref.WeakKeyDictionary[NgramIndex, Engine] = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def engine(index: NgramIndex, members: tuple[str, ...]) -> Engine:
    """The engine of ``index`` with (at least) ``members`` built, made on first use in
    this process."""
    with _ENGINES_LOCK:
        eng = _ENGINES.get(index)
        if eng is None:
            eng = _ENGINES[index] = Engine(index, members)
    with eng.lock:
        eng.add(members)
    return eng

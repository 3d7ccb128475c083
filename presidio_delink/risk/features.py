"""Spans, entity types and the feature vectors of the risk indicators (pure functions).

Each indicator turns *measurements* of a span (the model's token log-probabilities, the same
with the other spans masked, document frequencies in the N-gram index) into one feature row;
:mod:`presidio_delink.risk.model` turns a row into a probability. Training
(:mod:`presidio_delink.risk.train`) and run time use these same functions.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from presidio_delink.errors import InputError

TYPES = ("PERSON", "ORG", "LOC", "DATETIME", "DEM", "QUANTITY", "CODE", "MISC")
"""The entity types of TAB and of the span tables (the classifiers' vocabulary)."""

PRESIDIO_TYPES: dict[str, str] = {
    "PERSON": "PERSON",
    "ORGANIZATION": "ORG",
    "ORG": "ORG",
    "LOCATION": "LOC",
    "GPE": "LOC",
    "LOC": "LOC",
    "ADDRESS": "LOC",
    "DATE_TIME": "DATETIME",
    "DATE": "DATETIME",
    "TIME": "DATETIME",
    "DATETIME": "DATETIME",
    "NRP": "DEM",
    "DEM": "DEM",
    "AGE": "QUANTITY",
    "QUANTITY": "QUANTITY",
    "MISC": "MISC",
    "CODE": "CODE",
    **{
        name: "CODE"
        for name in (
            "CREDIT_CARD", "CRYPTO", "EMAIL_ADDRESS", "IBAN_CODE", "IP_ADDRESS", "MAC_ADDRESS",
            "MEDICAL_LICENSE", "PHONE_NUMBER", "UK_NHS", "URL", "US_BANK_NUMBER",
            "US_DRIVER_LICENSE", "US_ITIN", "US_PASSPORT", "US_SSN", "UUID",
        )
    },
}
"""Presidio entity types (and TAB's own) mapped to the classifiers' types."""


class ResultLike(Protocol):
    """What is read of a Presidio ``RecognizerResult``."""

    start: int
    end: int
    entity_type: str


@dataclass(frozen=True)
class Span:
    """One PII span to assess: offsets into the text, classifier type, its text."""

    start: int
    end: int
    entity_type: str
    text: str


def spans_of(
    text: str, results: Sequence[ResultLike], entity_map: Mapping[str, str] | None = None
) -> list[Span]:
    """Check Presidio results against ``text`` and map their types.

    Raises:
        InputError: a span outside the text or empty, or an entity type that is not in
            :data:`PRESIDIO_TYPES` nor in ``entity_map`` (pass one to add types).
    """
    types = {**PRESIDIO_TYPES, **(entity_map or {})}
    out = []
    for r in results:
        start, end = r.start, r.end
        if not (isinstance(start, int) and isinstance(end, int)) or not (
            0 <= start < end <= len(text)
        ):
            raise InputError(
                f"span ({start!r}, {end!r}) of type {r.entity_type!r} lies outside the text "
                f"(0..{len(text)}) or is empty"
            )
        mapped = types.get(r.entity_type)
        if mapped not in TYPES:
            raise InputError(
                f"unknown entity type {r.entity_type!r}: map it to one of {', '.join(TYPES)} "
                "with entity_map={...}"
            )
        out.append(Span(start, end, mapped, text[start:end]))
    return out


# -- feature blocks ------------------------------------------------------------------------

TYPE_FEATURES = tuple(f"type={t}" for t in TYPES)
LM_FEATURES = ("lp_min", "lp_max", "lp_mean", "lp_sum", "n_words", "n_subtokens")
SHAPE_FEATURES = ("log_chars", "has_digit", "cap_words", "all_upper")
PERTURBATION_FEATURES = ("lp_mean", "masked_lp_mean", "delta_mean", "delta_sum", "delta_max")
SEARCH_FEATURES = ("log_df", "log_min_pair_df", "unique_alone", "unique_pair", "n_pairs_unique")
HASH_DIMS = 256


def type_row(entity_type: str) -> list[float]:
    return [1.0 if entity_type == t else 0.0 for t in TYPES]


def lm_row(logprobs: Sequence[float], span_text: str) -> list[float]:
    """Aggregates of the span's token log-probabilities (the paper's LLM features)."""
    if not logprobs:
        raise InputError("a span has no scored tokens")
    n_words = max(1, len(span_text.split()))
    return [
        min(logprobs),
        max(logprobs),
        sum(logprobs) / len(logprobs),
        sum(logprobs),
        float(n_words),
        float(max(0, len(logprobs) - n_words)),
    ]


def shape_row(span_text: str) -> list[float]:
    words = span_text.split() or [span_text]
    return [
        math.log1p(len(span_text)),
        1.0 if any(c.isdigit() for c in span_text) else 0.0,
        sum(1 for w in words if w[:1].isupper()) / len(words),
        1.0 if span_text.isupper() else 0.0,
    ]


def hash_row(span_text: str, dims: int = HASH_DIMS) -> list[float]:
    """Signed feature hashing of the span's lower-cased words and character 3-grams,
    L2-normalised: a vector representation of the span's text that needs no model."""
    vec = [0.0] * dims
    low = span_text.lower()
    grams = [f"w:{w}" for w in low.split()]
    padded = f" {low} "
    grams += [f"c:{padded[i:i + 3]}" for i in range(max(0, len(padded) - 2))]
    for g in grams:
        h = zlib.crc32(g.encode("utf-8"))
        vec[h % dims] += 1.0 if (h >> 31) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm else vec


def hash_features(dims: int = HASH_DIMS) -> tuple[str, ...]:
    return tuple(f"hash_{i}" for i in range(dims))


def perturbation_row(logprobs: Sequence[float], masked: Sequence[float]) -> list[float]:
    """How much the other spans tell the model about this one: the span's log-probability
    with the text as it is, minus the same with every other span before it masked."""
    if not logprobs or len(masked) == 0:
        raise InputError("a span has no scored tokens")
    mean = sum(logprobs) / len(logprobs)
    mmean = sum(masked) / len(masked)
    if len(masked) == len(logprobs):
        deltas = [a - b for a, b in zip(logprobs, masked, strict=True)]
    else:  # another tokenisation under the masked context: compare totals
        deltas = [sum(logprobs) - sum(masked)]
    return [mean, mmean, mean - mmean, sum(logprobs) - sum(masked), max(deltas)]


def search_row(m: Mapping[str, Any]) -> list[float]:
    """From :func:`presidio_delink.risk.search.measure`: frequencies in groups."""
    df = int(m["df"])
    pair = int(m["min_pair_df"])
    return [
        math.log1p(df),
        math.log1p(pair),
        1.0 if df <= 1 else 0.0,
        1.0 if pair <= 1 else 0.0,
        math.log1p(int(m["n_pairs_unique"])),
    ]


_STOP = frozenset({
    "the", "and", "for", "with", "from", "into", "onto", "over", "under", "about", "after",
    "before", "between", "during", "since", "until", "his", "her", "its", "their", "this",
    "that", "these", "those", "who", "whom", "which", "mr", "mrs", "ms", "dr",
})


def _keywords(text: str) -> set[str]:
    return {
        w for w in re.findall(r"\w+", text.casefold()) if len(w) >= 3 and w not in _STOP
    }


def propagate(keys: Sequence[str], spans: Sequence[Span], mask: Sequence[bool]) -> list[bool]:
    """One decision per entity: a span is also masked when a masked span of the same
    document (``keys``) and type shares a word of three or more letters with it (not a
    function word), e.g. "Galip Yalman" -> "Mr Yalman", "15 March 1950" -> "1950"."""
    hot: dict[tuple[str, str], set[str]] = {}
    for k, s, m in zip(keys, spans, mask, strict=True):
        if m:
            hot.setdefault((k, s.entity_type), set()).update(_keywords(s.text))
    return [
        bool(m) or bool(_keywords(s.text) & hot.get((k, s.entity_type), set()))
        for k, s, m in zip(keys, spans, mask, strict=True)
    ]

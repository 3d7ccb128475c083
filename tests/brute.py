"""Brute-force reference models used by the tests."""

from __future__ import annotations

from collections.abc import Sequence

from presidio_delink.text import Tokenizer


def doc_ngram_sets(docs: Sequence[tuple[str, str]], tok: Tokenizer, max_len: int) -> list[set[str]]:
    """Every N-gram key (1..max_len words, inside a segment) of each document."""
    out = []
    for _, text in docs:
        keys: set[str] = set()
        for seg in tok.segments(text):
            words = [t.word for t in seg]
            for i in range(len(words)):
                for n in range(1, min(max_len, len(words) - i) + 1):
                    keys.add(" ".join(words[i : i + n]))
        out.append(keys)
    return out


def postings(sets: list[set[str]], key: str) -> list[int]:
    return [d for d, s in enumerate(sets) if key in s]

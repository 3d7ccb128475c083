"""The byte-level BPE tokeniser of a GGUF vocabulary, as llama.cpp's for
``tokenizer.ggml.model = gpt2`` with the pre-tokenizers ``smollm`` / ``starcoder`` /
``refact`` (see :mod:`presidio_delink.llm.numpy_lm`, which runs the model)."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from presidio_delink.errors import ConfigError

__all__ = ["DIGIT_SPLIT_PRE", "BPETokenizer", "Token", "byte_chars", "gguf_field",
           "tokenizer_from_reader"]

DIGIT_SPLIT_PRE = ("smollm", "starcoder", "refact")




@functools.lru_cache(maxsize=1)
def byte_chars() -> tuple[str, ...]:
    """GPT-2's printable stand-in character of each byte value."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return tuple(out[b] for b in range(256))


def _kind(ch: str) -> str:
    """``L`` letter, ``N`` number, ``S`` whitespace, ``O`` other (llama.cpp's flags)."""
    if ch.isspace():
        return "S"
    cat = unicodedata.category(ch)[0]
    return cat if cat in "LN" else "O"


def _gpt2_split(text: str, lo: int, hi: int, out: list[int]) -> None:
    """Append the end offsets of llama.cpp's GPT-2 pieces of ``text[lo:hi]``."""
    kinds = [_kind(c) for c in text[lo:hi]]

    def kind(p: int) -> str:  # "" outside the segment
        return kinds[p - lo] if lo <= p < hi else ""

    pos = lo
    while pos < hi:
        ch = text[pos]
        if ch == "'" and pos + 1 < hi:
            nxt = text[pos + 1]
            if nxt in "stmd":
                pos += 2
                out.append(pos)
                continue
            if pos + 2 < hi and text[pos + 1:pos + 3] in ("re", "ve", "ll"):
                pos += 3
                out.append(pos)
                continue
        k2 = kind(pos + 1) if ch == " " else kind(pos)
        if k2 in ("L", "N"):
            pos += ch == " "
            while kind(pos) == k2:
                pos += 1
            out.append(pos)
            continue
        if k2 == "O":
            pos += ch == " "
            while kind(pos) == "O":
                pos += 1
            out.append(pos)
            continue
        n_ws = 0
        while kind(pos + n_ws) == "S":
            n_ws += 1
        if n_ws > 1 and pos + n_ws < hi:  # \s+(?!\S): leave the last space to the next piece
            pos += n_ws - 1
        elif n_ws > 0:
            pos += n_ws
        else:
            pos += 1
        out.append(pos)


@dataclass(frozen=True)
class Token:
    """One token of a text: id, piece (decoded), character offsets ``[start, end)``."""

    id: int
    piece: str
    start: int
    end: int


class BPETokenizer:
    """llama.cpp's byte-level BPE tokeniser for a GGUF vocabulary (see the module docstring).

    Args:
        tokens: the vocabulary (``tokenizer.ggml.tokens``), GPT-2 byte characters.
        merges: ``"a b"`` merge rules, highest priority first.
        digit_split: split every ``\\p{N}`` character off first (``smollm`` pre-tokenizer).
    """

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], digit_split: bool) -> None:
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.pieces = tuple(tokens)
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, m in enumerate(merges):
            a, sep, b = m.partition(" ")
            if not sep:
                raise ConfigError(f"malformed BPE merge rule {m!r} in the GGUF")
            self.ranks.setdefault((a, b), rank)
        self.digit_split = digit_split
        chars = byte_chars()
        self._unbyte = {c: b for b, c in enumerate(chars)}
        self._bpe = functools.lru_cache(maxsize=65536)(self._bpe_word)

    def _bpe_word(self, word: str) -> tuple[str, ...]:
        parts = list(word)
        ranks = self.ranks
        while len(parts) > 1:
            best = None
            best_rank = len(ranks) + 1
            for i in range(len(parts) - 1):
                r = ranks.get((parts[i], parts[i + 1]))
                if r is not None and r < best_rank:
                    best, best_rank = i, r
            if best is None:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        out: list[str] = []
        for p in parts:  # llama.cpp: a symbol missing from the vocab is spelt by its bytes,
            # and a byte missing too is dropped (SmolLM2 lacks a few control bytes)
            out.extend([p] if p in self.vocab else [c for c in p if c in self.vocab])
        return tuple(out)

    def pre_split(self, text: str) -> list[int]:
        """End offsets of the pre-tokenizer's pieces of ``text``."""
        ends: list[int] = []
        lo = 0
        if self.digit_split:
            for i, ch in enumerate(text):
                if unicodedata.category(ch)[0] == "N":
                    if lo < i:
                        _gpt2_split(text, lo, i, ends)
                    ends.append(i + 1)
                    lo = i + 1
        if lo < len(text):
            _gpt2_split(text, lo, len(text), ends)
        return ends

    def encode(self, text: str) -> list[Token]:
        """Tokens of ``text`` with character offsets (a token ending inside a multi-byte
        character ends after it; the next one starts at it)."""
        chars = byte_chars()
        out: list[Token] = []
        start = 0
        for end in self.pre_split(text):
            word = text[start:end]
            data = word.encode("utf-8")
            owner: list[int] = []  # character offset of each byte
            for j, ch in enumerate(word):
                owner.extend([start + j] * len(ch.encode("utf-8")))
            encoded = "".join(chars[x] for x in data)
            b = 0
            for piece in self._bpe(encoded):
                b = encoded.index(piece, b)  # skips dropped bytes
                n = len(piece)
                out.append(Token(self.vocab[piece], self.decode_piece(piece),
                                 owner[b], owner[b + n - 1] + 1))
                b += n
            start = end
        return out

    def decode_piece(self, piece: str) -> str:
        return bytes(self._unbyte[c] for c in piece).decode("utf-8", errors="replace")


# -- the model -----------------------------------------------------------------------------


def gguf_field(reader: Any, name: str) -> Any:
    f = reader.fields.get(name)
    return None if f is None else f.contents()


def tokenizer_from_reader(reader: Any) -> BPETokenizer:
    tokens = [str(t) for t in gguf_field(reader, "tokenizer.ggml.tokens") or ()]
    merges = [str(m) for m in gguf_field(reader, "tokenizer.ggml.merges") or ()]
    if not tokens:
        raise ConfigError("the GGUF has no tokenizer.ggml.tokens")
    return BPETokenizer(tokens, merges, digit_split=True)

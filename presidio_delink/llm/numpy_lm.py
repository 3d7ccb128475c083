"""A Llama-architecture GGUF model run in numpy: prompt log-probabilities in one pass.

The only module that runs a model with ``gguf`` (ggml-org's reader;
:mod:`presidio_delink.eval.fluency` only reads a vocabulary with it). llama.cpp's server
reports log-probabilities of *generated* tokens only, so scoring given text there costs one
forced-decoding step per token. Here the causal transformer runs in numpy instead, and one
forward pass over a text gives ``log p(token | all tokens before it)`` for every token.

**Model.** The GGUF's weights (any type ``gguf.quants.dequantize`` reads: here Q4_1, Q8_0,
F32) are dequantised once to float32 (about 4 bytes per parameter: 0.54 GB for
SmolLM2-135M). The forward pass is llama.cpp's ``llama`` graph, every size read from the
metadata: token embedding; per block RMSNorm, Q/K/V projections, RoPE (llama.cpp's "normal"
mode: adjacent pairs, as the GGUF converter permutes Q and K for it; base
``rope.freq_base``), grouped-query attention (query head ``h`` reads key/value head
``h // (n_head / n_head_kv)``), output projection, RMSNorm, SwiGLU MLP; final RMSNorm; output
matrix (``output.weight``, else the tied token embedding). Anything else (another
architecture, RoPE scaling, biases, experts, a tokenizer other than the byte-level BPE below)
is refused with :class:`~presidio_delink.errors.ConfigError` rather than computed wrongly:
use llama.cpp (:class:`presidio_delink.risk.lm.LogprobScorer`) for those.

**Tokeniser.** llama.cpp's for ``tokenizer.ggml.model = gpt2`` with the pre-tokenizers
``smollm`` / ``starcoder`` / ``refact``: every ``\\p{N}`` character is its own piece, then
llama.cpp's hand-written GPT-2 split (``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``, categories from :mod:`unicodedata`), then byte-level
BPE with the GGUF's merges by rank. Text is plain text: control tokens such as
``<|im_start|>`` written in it are spelt, not parsed. Tokens keep character offsets.

**Batched prefixes.** :meth:`NumpyLM.forward` takes one *shared* sequence (causal) and any
number of *branches*: a branch continues the shared sequence after its first ``base``
tokens (positions ``base, base + 1, ...``), sees those and its own earlier tokens, and
nothing of other branches. So spans that each need a different left context, when those
contexts are prefixes of one text, are all scored in one pass (the perturbation measure
of :class:`~presidio_delink.risk.lm.NumpyScorer`).

**Cost.** About ``2 * n_params`` FLOP per token (0.21 GFLOP for SmolLM2-135M without the
embedding), attention ``4 * n_layer * n_head * head_dim * L^2`` for ``L`` rows, and the
output matrix (``2 * n_vocab * n_embd``: 57 MFLOP) only at the rows whose log-probability is
asked. The products are float32 BLAS (``numpy.matmul``), about three quarters of the time;
the elementwise rest (norms, RoPE, softmax, SiLU) is numpy's, one thread per call.

**Threads.** A pass is shared out between ``threads`` threads of the engine (default:
``$PRESIDIO_DELINK_LLM_THREADS``, else the CPUs the process may use) while BLAS runs one
thread per call (threadpoolctl): per layer, the row-wise work (norms, projections, RoPE,
MLP) in one share of rows per thread (of :data:`ROW_CHUNK` rows at least), then the
attention blocks, then the logits. So the elementwise work runs in parallel too, and a
thread whose core is busy makes the others wait without spinning (OpenBLAS's own threads
spin at barriers: with the other core of a 2-core machine busy, 2 BLAS threads were
slower than 1). How the rows are shared out changes a row's numbers by float32
rounding at most (BLAS may pick another kernel for fewer rows). Timings:
``benchmarks/results/bench_risk.md``.

Memory: the weights, plus float32 attention scores of :data:`QUERY_BLOCK` query rows by the
keys they see at a time (``n_head * 64 * L``), so it stays bounded for long inputs; a block
of the causal sequence reads only the keys before it, and only its diagonal part is masked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError
from presidio_delink.llm.gguf_tokenizer import (
    DIGIT_SPLIT_PRE,
    BPETokenizer,
    gguf_field,
    tokenizer_from_reader,
)

logger = logging.getLogger(__name__)

ARCHITECTURES = ("llama",)
"""``tokenizer.ggml.pre`` values whose llama.cpp pre-tokenizer is: single ``\\p{N}``
characters, then the GPT-2 split (llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_STARCODER`` group)."""
QUERY_BLOCK = 64
"""Query rows per attention block: bounds the score matrix at ``n_head * 64 * L``; a causal
block skips the keys after it (small blocks skip more: the scores computed approach the
causal triangle), and a block's scores stay in cache while they are masked, exponentiated
and summed."""
LOGIT_BLOCK = 256
"""Rows per block of output logits (``256 * n_vocab`` float32: 50 MB for 49,152)."""
ROW_CHUNK = 64
"""Fewest rows (tokens) per thread's share of the row-wise work: fewer rows than this do
not pay for a share (each product repacks its weight matrix)."""
MAX_THREADS = 8
BLOCK_TENSORS = frozenset({
    "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
    "ffn_up", "ffn_down",
})


def unsupported_reason(path: str | Path) -> str | None:
    """Why :class:`NumpyLM` cannot run the GGUF at ``path``, or None when it can (reads the
    metadata only)."""
    try:
        import gguf
    except ImportError:
        return "the numpy engine needs the gguf package (`pip install gguf`)"
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except (OSError, ValueError) as exc:
        return f"cannot read {path} as GGUF: {exc}"
    return _check(reader)


def _check(reader: Any) -> str | None:
    arch = gguf_field(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        return f"architecture {arch!r} (the numpy engine runs {', '.join(ARCHITECTURES)})"
    if gguf_field(reader, "tokenizer.ggml.model") != "gpt2":
        return f"tokenizer {gguf_field(reader, 'tokenizer.ggml.model')!r} (only byte-level BPE)"
    pre = gguf_field(reader, "tokenizer.ggml.pre")
    if pre not in DIGIT_SPLIT_PRE:
        return f"pre-tokenizer {pre!r} (supported: {', '.join(DIGIT_SPLIT_PRE)})"
    for key in ("block_count", "embedding_length", "feed_forward_length",
                "attention.head_count", "attention.layer_norm_rms_epsilon"):
        if gguf_field(reader, f"{arch}.{key}") is None:
            return f"no {arch}.{key} in the metadata"
    scaling = gguf_field(reader, f"{arch}.rope.scaling.type")
    if scaling not in (None, "none"):
        return f"RoPE scaling {scaling!r}"
    if gguf_field(reader, f"{arch}.expert_count"):
        return "a mixture of experts"
    n_embd = int(gguf_field(reader, f"{arch}.embedding_length"))
    n_head = int(gguf_field(reader, f"{arch}.attention.head_count"))
    head_dim = n_embd // n_head
    for key in ("rope.dimension_count", "attention.key_length", "attention.value_length"):
        value = gguf_field(reader, f"{arch}.{key}")
        if value is not None and int(value) != head_dim:
            return f"{arch}.{key} = {value} differs from embedding_length / head_count"
    names = {t.name for t in reader.tensors}
    for name in names:
        parts = name.split(".")
        if parts[0] == "blk" and (len(parts) != 4 or parts[2] not in BLOCK_TENSORS
                                  or parts[3] != "weight"):
            return f"tensor {name} (the numpy engine knows no such tensor)"
        if parts[0] != "blk" and name not in ("token_embd.weight", "output_norm.weight",
                                               "output.weight"):
            return f"tensor {name} (the numpy engine knows no such tensor)"
    return None


def _open(path: str | Path, advice: str) -> Any:
    """A GGUF reader of a model this engine runs exactly; ``advice`` ends the refusal.

    Raises:
        ConfigError: the file is unreadable or the model not one this engine runs.
    """
    import gguf

    try:
        reader = gguf.GGUFReader(str(path), "r")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path} as GGUF: {exc}") from exc
    reason = _check(reader)
    if reason is not None:
        raise ConfigError(f"{Path(path).name}: the numpy engine does not run {reason}{advice}")
    return reader


def tokenizer_from_gguf(path: str | Path) -> BPETokenizer:
    """The tokeniser of a GGUF the numpy engine supports, without loading the weights.

    Raises:
        ConfigError: the file is unreadable or its tokenizer is not supported.
    """
    return tokenizer_from_reader(_open(path, ""))


def _rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    mean_sq = np.einsum("ij,ij->i", x, x) / np.float32(x.shape[-1])
    scale = (1.0 / np.sqrt(mean_sq + np.float32(eps))).astype(np.float32)
    return (x * scale[:, None]) * w


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, out: np.ndarray,
          tmp: np.ndarray) -> None:
    """Rotate adjacent pairs of each head of ``x`` (rows, heads, head_dim) into ``out``:
    ``(x0 cos - x1 sin, x1 cos + x0 sin)``, the factors from :meth:`NumpyLM._rotation`
    (``a - b`` and ``a + (-b)`` are the same float, so is the order of a sum of two)."""
    np.multiply(x, cos, out=out)
    pairs = (*x.shape[:-1], -1, 2)
    np.multiply(x.reshape(pairs)[..., ::-1], sin.reshape((*sin.shape[:-1], -1, 2)),
                out=tmp.reshape(pairs))
    out += tmp


def _attention_blocks(
    lay: Layout, size: int, query: np.ndarray | None = None,
) -> list[tuple[int, int, slice | np.ndarray, slice, np.ndarray | None]]:
    """Per block of ``size`` query rows (``query[lo:hi]``, by default all rows): the key
    columns any of them sees (a slice when they are the first ones), the range of those
    columns some row of the block does not see, and an additive mask over that range (0
    visible, -inf not; None when every row sees every column). A causal block skips the
    keys after it, and only its diagonal part is masked. Costliest blocks first, so that
    threads taking them in turn finish together."""
    query = np.arange(len(lay.tok)) if query is None else query
    blocks: list[tuple[int, int, slice | np.ndarray, slice, np.ndarray | None]] = []
    for lo in range(0, len(query), size):
        hi = min(len(query), lo + size)
        vis = lay.visible(query[lo:hi])
        cols = np.flatnonzero(vis.any(axis=0))
        keys: slice | np.ndarray = slice(0, len(cols)) if cols[-1] == len(cols) - 1 else cols
        hidden = np.flatnonzero(~vis[:, cols].all(axis=0))
        if not len(hidden):
            blocks.append((lo, hi, keys, slice(0, 0), None))
            continue
        masked = slice(int(hidden[0]), int(hidden[-1]) + 1)
        bias = np.where(vis[:, cols[masked]], np.float32(0.0), np.float32(-np.inf))
        blocks.append((lo, hi, keys, masked, bias.astype(np.float32)))
    blocks.sort(key=lambda blk: -(blk[1] - blk[0]) * _width(blk[2]))
    return blocks


def threads_from_env() -> int | None:
    """``$PRESIDIO_DELINK_LLM_THREADS`` (the embedded backend's thread count), or None
    when unset.

    Raises:
        ConfigError: the variable set to anything but a positive integer.
    """
    from presidio_delink.llm.embedded import THREADS_ENV

    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"${THREADS_ENV} must be a positive integer (got {raw!r})")
    return int(raw)


def _threads(threads: int | None) -> int:
    """``threads``, else ``$PRESIDIO_DELINK_LLM_THREADS`` (the embedded backend's), else the
    CPUs this process may use (at most :data:`MAX_THREADS`: the engine's threads wait
    without spinning, so all of them pay even on a busy machine); 1 without threadpoolctl,
    which keeps BLAS to one thread per call while the engine's threads share the work.

    Raises:
        ConfigError: a count below 1, or the variable set to anything but one.
    """
    if threads is None:
        threads = threads_from_env()
    if threads is None:
        try:
            threads = min(MAX_THREADS, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            threads = min(MAX_THREADS, os.cpu_count() or 1)
    if threads < 1:
        raise ConfigError(f"threads must be >= 1 (got {threads!r})")
    if threads > 1:
        try:
            import threadpoolctl  # noqa: F401
        except ImportError:
            logger.info("numpy engine: one thread (BLAS's own) without threadpoolctl "
                        "(`pip install threadpoolctl`)")
            return 1
    return threads


def _chunks(n: int, parts: int) -> list[slice]:
    """``range(n)`` cut into ``parts`` consecutive slices of nearly equal length."""
    cuts = [n * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def _width(keys: slice | np.ndarray) -> int:
    return keys.stop - keys.start if isinstance(keys, slice) else len(keys)


@dataclass
class _Block:
    attn_norm: np.ndarray
    qkv: np.ndarray  # (n_embd, n_q + 2 n_kv), transposed for x @ W
    out: np.ndarray
    ffn_norm: np.ndarray
    gate_up: np.ndarray  # (n_embd, 2 n_ff)
    down: np.ndarray


@dataclass(frozen=True)
class Branch:
    """Tokens that continue the shared sequence after its first ``base`` tokens."""

    base: int
    ids: Sequence[int]


@dataclass(frozen=True)
class Layout:
    """The rows of one pass, as both engines lay them out: one or more *groups*, each its
    shared tokens then each of its branches' tokens. Per row its segment (a group's shared
    tokens are one segment, each branch another), position, the segment it also sees
    (``parent``: its group's shared segment for a branch row, -1 for a shared row) and
    the first row of that segment it does not see (``limit``: the shared segment's first
    row plus the branch's base), and token; the targets' rows and ids, and the rows they
    read (sorted, unique)."""

    seg: np.ndarray
    pos: np.ndarray
    parent: np.ndarray
    limit: np.ndarray
    tok: np.ndarray
    t_rows: np.ndarray
    t_ids: np.ndarray
    need: np.ndarray

    @classmethod
    def of(
        cls, shared: Sequence[int], branches: Sequence[Branch],
        targets: Sequence[tuple[int, int]], n_vocab: int,
    ) -> Layout | None:
        """One group's layout (:meth:`of_groups`)."""
        return cls.of_groups([(shared, branches, targets)], n_vocab)

    @classmethod
    def of_groups(
        cls,
        groups: Sequence[tuple[Sequence[int], Sequence[Branch], Sequence[tuple[int, int]]]],
        n_vocab: int,
    ) -> Layout | None:
        """The layout of ``groups``, ``(shared, branches, targets)`` each, its targets'
        rows counted in the group (its shared tokens, then each branch's), one after the
        other: no row sees another group's. None when there is nothing to compute (no
        rows or no targets).

        Raises:
            ValueError: a branch base outside the shared sequence, a token id outside the
                vocabulary, or a target row outside its group's rows.
        """
        seg, pos, parent, limit, ids, t_rows, t_ids = [], [], [], [], [], [], []
        row = n_seg = 0
        for shared, branches, targets in groups:
            first, root = row, n_seg
            seg.append(np.full(len(shared), root, dtype=np.int64))
            pos.append(np.arange(len(shared), dtype=np.int64))
            parent.append(np.full(len(shared), -1, dtype=np.int64))
            limit.append(np.zeros(len(shared), dtype=np.int64))
            ids.append(np.asarray(shared, dtype=np.int64))
            row, n_seg = row + len(shared), n_seg + 1
            for br in branches:
                if not 0 <= br.base <= len(shared):
                    raise ValueError(f"branch base {br.base} outside the shared sequence")
                n = len(br.ids)
                seg.append(np.full(n, n_seg, dtype=np.int64))
                pos.append(br.base + np.arange(n, dtype=np.int64))
                parent.append(np.full(n, root, dtype=np.int64))
                limit.append(np.full(n, first + br.base, dtype=np.int64))
                ids.append(np.asarray(br.ids, dtype=np.int64))
                row, n_seg = row + n, n_seg + 1
            for r, t in targets:
                if not 0 <= r < row - first:
                    raise ValueError("target row outside the rows")
                t_rows.append(first + r)
                t_ids.append(t)
        if not row or not t_rows:
            return None
        s, p, par, lim, tok = (np.concatenate(a) for a in (seg, pos, parent, limit, ids))
        t_id = np.asarray(t_ids, dtype=np.int64)
        if min(tok.min(), t_id.min()) < 0 or max(tok.max(), t_id.max()) >= n_vocab:
            raise ValueError("token id outside the vocabulary")
        t_row = np.asarray(t_rows, dtype=np.int64)
        return cls(s, p, par, lim, tok, t_row, t_id, np.unique(t_row))

    def visible(self, query: np.ndarray) -> np.ndarray:
        """Which rows each row of ``query`` attends to, (len(query), rows) booleans: the
        earlier rows of its own segment, and a branch row its shared segment's rows before
        its base."""
        cols = np.arange(len(self.tok))
        qs, qp, ql = (a[query, None] for a in (self.seg, self.parent, self.limit))
        return ((qs == self.seg[None, :]) & (cols[None, :] <= query[:, None])) | (
            (qp == self.seg[None, :]) & (cols[None, :] < ql))


class LayoutEngine:
    """What both engines share of a pass: :meth:`forward` lays the rows out
    (:class:`Layout`) and hands them to the engine's ``_forward_layout``."""

    n_vocab: int

    def forward(
        self,
        shared: Sequence[int],
        branches: Sequence[Branch] = (),
        targets: Sequence[tuple[int, int]] = (),
    ) -> np.ndarray:
        """Log-probabilities of ``targets``: ``(row, token id)`` pairs, the id predicted after
        ``row`` (rows: the shared tokens, then each branch's tokens in order).

        The shared sequence is causal; a branch sees the first ``base`` shared tokens and its
        own earlier tokens, at positions ``base, base + 1, ...``.
        """
        lay = Layout.of(shared, branches, targets, self.n_vocab)
        if lay is None:
            return np.zeros(0, dtype=np.float32)
        return self._forward_layout(lay, len(shared))

    def forward_groups(
        self,
        groups: Sequence[tuple[Sequence[int], Sequence[Branch], Sequence[tuple[int, int]]]],
    ) -> list[np.ndarray]:
        """:meth:`forward` of each group ``(shared, branches, targets)``, all in one pass
        (:meth:`Layout.of_groups`: no group sees another's rows). Why: a product over a
        few dozen rows runs at about half the speed per row of one over a few hundred
        (numpy's BLAS on one core: 122 against 66 microseconds a row for SmolLM2's MLP),
        and a caller scoring many short contexts at once pays the short products once.
        The values are :meth:`forward`'s, to float32 rounding (other kernels, other
        summation orders)."""
        lay = Layout.of_groups(groups, self.n_vocab)
        sizes = [len(g[2]) for g in groups]
        if lay is None:
            return [np.zeros(n, dtype=np.float32) for n in sizes]
        flat = self._forward_layout(lay, len(groups[0][0]))
        cuts = np.cumsum([0, *sizes])
        return [flat[cuts[i] : cuts[i + 1]] for i in range(len(groups))]

    def _forward_layout(self, lay: Layout, n_shared: int) -> np.ndarray:
        """The log-probabilities of ``lay``'s targets (``n_shared``: its shared rows)."""
        raise NotImplementedError


class NumpyLM(LayoutEngine):
    """A Llama-architecture GGUF in float32 numpy (see the module docstring).

    Args:
        path: the GGUF file.
        threads: threads a pass is shared out between; ``None``:
            ``$PRESIDIO_DELINK_LLM_THREADS``, else the usable CPUs (module docstring).

    Raises:
        ConfigError: the gguf package is missing, the file unreadable, the model not one
            this engine runs exactly, or a thread count below 1.
    """

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        try:
            import gguf
        except ImportError as exc:
            raise ConfigError(
                "the numpy engine needs the gguf package: `pip install gguf` "
                "(or `pip install presidio-delink[embedded]`)"
            ) from exc
        self.path = Path(path)
        reader = _open(path, "; score with a llama.cpp server instead ('openai:URL')")
        arch = gguf_field(reader, "general.architecture")

        def meta(key: str) -> Any:
            return gguf_field(reader, f"{arch}.{key}")

        self.n_layer = int(meta("block_count"))
        self.n_embd = int(meta("embedding_length"))
        self.n_head = int(meta("attention.head_count"))
        self.n_head_kv = int(meta("attention.head_count_kv") or self.n_head)
        self.head_dim = self.n_embd // self.n_head
        self.eps = float(meta("attention.layer_norm_rms_epsilon"))
        self.rope_base = float(meta("rope.freq_base") or 10000.0)
        if self.n_head % self.n_head_kv or self.head_dim % 2:
            raise ConfigError(f"{self.path.name}: head counts {self.n_head}/{self.n_head_kv} "
                              "or head size not supported by the numpy engine")
        tensors = {t.name: t for t in reader.tensors}

        def weight(name: str) -> np.ndarray:
            t = tensors[name]
            arr = gguf.quants.dequantize(t.data, t.tensor_type)
            return np.ascontiguousarray(arr, dtype=np.float32)

        self.embed = weight("token_embd.weight")  # (n_vocab, n_embd)
        self.output = weight("output.weight") if "output.weight" in tensors else self.embed
        self.output_norm = weight("output_norm.weight")
        self.blocks: list[_Block] = []
        for i in range(self.n_layer):
            def w(name: str, i: int = i) -> np.ndarray:
                return weight(f"blk.{i}.{name}.weight")

            self.blocks.append(_Block(
                attn_norm=w("attn_norm"),
                qkv=np.ascontiguousarray(np.concatenate([w("attn_q"), w("attn_k"),
                                                         w("attn_v")]).T),
                out=np.ascontiguousarray(w("attn_output").T),
                ffn_norm=w("ffn_norm"),
                gate_up=np.ascontiguousarray(np.concatenate([w("ffn_gate"), w("ffn_up")]).T),
                down=np.ascontiguousarray(w("ffn_down").T),
            ))
        self.n_vocab = self.embed.shape[0]
        self.n_ff = self.blocks[0].down.shape[0]
        self.inv_freq = self.rope_base ** (
            -np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim
        )
        self.tokenizer = tokenizer_from_reader(reader)
        bos = gguf_field(reader, "tokenizer.ggml.bos_token_id")
        add_bos = gguf_field(reader, "tokenizer.ggml.add_bos_token")
        self.bos: int | None = int(bos) if add_bos and bos is not None else None
        self.threads = _threads(threads)
        self._executor: ThreadPoolExecutor | None = None
        self._blas: Any = None
        self._pool_lock = threading.Lock()
        logger.info("numpy engine: %s, %d layers, %d x %d heads, vocabulary %d, %d thread(s)",
                    self.path.name, self.n_layer, self.n_head, self.n_head_kv, self.n_vocab,
                    self.threads)

    def _rotation(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """RoPE's factors at ``pos`` for :func:`_rope`, (rows, 1, head_dim): the cosine of
        each pair's angle twice, and its sine negated then as it is."""
        ang = pos[:, None].astype(np.float64) * self.inv_freq[None, :]
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        return (np.repeat(cos, 2, axis=1)[:, None, :],
                np.stack([-sin, sin], axis=-1).reshape(len(pos), 1, -1))

    def _forward_layout(self, lay: Layout, n_shared: int) -> np.ndarray:
        p, tok, need, t_rows, t_ids = lay.pos, lay.tok, lay.need, lay.t_rows, lay.t_ids
        n_rows = len(tok)
        x = self.embed[tok]  # a copy: updated in place below
        blocks = _attention_blocks(lay, QUERY_BLOCK)
        # the last layer computes only the rows the logits read (and keys, values of all)
        last_blocks = _attention_blocks(lay, QUERY_BLOCK, need)
        nq, nkv, hd = self.n_head, self.n_head_kv, self.head_dim
        rep = nq // nkv
        scale = np.float32(1.0 / np.sqrt(hd))
        rot_c, rot_s = self._rotation(p)
        qkv = np.empty((n_rows, (nq + 2 * nkv) * hd), dtype=np.float32)
        qk = np.empty((n_rows, nq + nkv, hd), dtype=np.float32)
        tmp = np.empty_like(qk)
        # queries grouped by their key/value head, rows then the heads sharing it:
        # (nkv, rows, rep, hd), so that a block of rows is a contiguous (rows * rep, hd) slice
        qg = np.empty((nkv, n_rows, rep, hd), dtype=np.float32)
        att = np.empty((n_rows, nkv, rep, hd), dtype=np.float32)
        kt = qk[:, nq:].transpose(1, 2, 0)  # (nkv, hd, rows)
        vg = qkv[:, (nq + nkv) * hd:].reshape(n_rows, nkv, hd).transpose(1, 0, 2)
        layer: list[_Block] = []  # the block the tasks below compute
        cur = {"q": qg, "att": att, "x": x}  # their query rows: all, or `need` at the last

        def project(r: slice) -> None:  # rows r: norm, Q/K/V, RoPE
            blk = layer[0]
            np.matmul(_rms_norm(x[r], blk.attn_norm, self.eps), blk.qkv, out=qkv[r])
            n = r.stop - r.start
            _rope(qkv[r, :(nq + nkv) * hd].reshape(n, nq + nkv, hd), rot_c[r], rot_s[r],
                  qk[r], tmp[r])
            np.multiply(qk[r, :nq].reshape(n, nkv, rep, hd).transpose(1, 0, 2, 3), scale,
                        out=qg[:, r])

        def attend(block: tuple[int, int, slice | np.ndarray, slice, np.ndarray | None]
                   ) -> None:
            lo, hi, keys, masked, bias = block
            n_q = hi - lo
            sc = np.matmul(cur["q"][:, lo:hi].reshape(nkv, n_q * rep, hd), kt[:, :, keys])
            if bias is not None:  # only the columns some row of the block does not see
                sc.reshape(nkv, n_q, rep, -1)[..., masked] += bias[:, None, :]
            sc -= sc.max(axis=-1, keepdims=True)
            np.exp(sc, out=sc)
            # normalise after the product with V: rows x head_dim, not rows x keys
            o = np.matmul(sc, vg[:, keys])
            o /= sc.sum(axis=-1, keepdims=True)
            cur["att"][lo:hi] = o.reshape(nkv, n_q, rep, hd).transpose(1, 0, 2, 3)

        def mlp(r: slice) -> None:  # rows r: output projection, norm, SwiGLU
            blk, x = layer[0], cur["x"]
            x[r] += cur["att"][r].reshape(r.stop - r.start, nq * hd) @ blk.out
            gu = _rms_norm(x[r], blk.ffn_norm, self.eps) @ blk.gate_up
            g, u = gu[:, :self.n_ff], gu[:, self.n_ff:]
            act = np.negative(g)  # silu(g) * u = g * u / (1 + exp(-g)), in place
            np.exp(act, out=act)
            act += 1.0
            np.divide(g, act, out=act)
            act *= u
            x[r] += act @ blk.down

        out = np.empty(len(t_ids), dtype=np.float32)
        t_at = np.searchsorted(need, t_rows)  # a target's row among `need`

        def logprobs(r: slice) -> None:  # targets r
            hrow = _rms_norm(cur["x"][t_at[r]], self.output_norm, self.eps)
            logits = hrow @ self.output.T  # (targets, n_vocab)
            picked = logits[np.arange(len(logits)), t_ids[r]]
            m = logits.max(axis=-1)
            logits -= m[:, None]
            np.exp(logits, out=logits)
            out[r] = picked - (m + np.log(logits.sum(axis=-1)))

        def shares(n: int) -> list[slice]:
            return _chunks(n, max(1, min(self.threads, n // ROW_CHUNK)))

        with self._workers() as each:
            for blk in self.blocks:
                layer[:] = [blk]
                each(project, shares(n_rows))
                if blk is self.blocks[-1]:
                    cur.update(q=qg[:, need], att=att[:len(need)], x=x[need])
                    blocks = last_blocks
                each(attend, blocks)
                each(mlp, shares(len(cur["x"])))
            n_t = len(t_ids)
            each(logprobs, _chunks(n_t, max(-(-n_t // LOGIT_BLOCK),
                                            min(self.threads, n_t // ROW_CHUNK))))
        return out

    @contextlib.contextmanager
    def _workers(self) -> Iterator[Callable[[Callable[[Any], None], Sequence[Any]], None]]:
        """``each(task, items)``: ``task`` on every item, on :attr:`threads` threads when
        there are several (BLAS then runs one thread per call: the threads wait for each
        other without spinning, and rows split between them compute as they would
        together)."""
        pool = self._pool()
        if pool is None:
            def serial(task: Callable[[Any], None], items: Sequence[Any]) -> None:
                for item in items:
                    task(item)

            yield serial
            return

        def parallel(task: Callable[[Any], None], items: Sequence[Any]) -> None:
            if len(items) == 1:
                task(items[0])
            else:
                for _ in pool.map(task, items):
                    pass

        with self._blas.limit(limits=1, user_api="blas"):
            yield parallel

    def _pool(self) -> ThreadPoolExecutor | None:
        if self.threads <= 1:
            return None
        with self._pool_lock:
            if self._executor is None:
                from threadpoolctl import ThreadpoolController

                self._blas = ThreadpoolController()
                self._executor = ThreadPoolExecutor(self.threads, "numpy-lm")
            return self._executor


_ENGINES: dict[Path, NumpyLM] = {}
_LOCK = threading.Lock()


def load(path: str | Path) -> NumpyLM:
    """The engine of ``path``, loaded once per process (weights dequantised on first use)."""
    key = Path(path).resolve()
    with _LOCK:
        eng = _ENGINES.get(key)
        if eng is None:
            eng = _ENGINES[key] = NumpyLM(key)
        return eng

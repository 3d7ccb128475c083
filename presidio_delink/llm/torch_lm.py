"""The numpy engine's forward pass in torch, its blocks' products in bfloat16: faster.

:class:`~presidio_delink.llm.numpy_lm.NumpyLM` defines the pass (weights, the layout of
shared rows and branches); :class:`TorchLM` computes it with torch's CPU kernels on the
same weights. With ``products="bfloat16"`` (the default) the blocks' four products (Q/K/V,
output, gate/up, down) take bfloat16 inputs and weights, sum in float32 and round the result
to bfloat16: on a CPU with bfloat16 matrix units (AVX512-BF16, AMX) oneDNN runs them faster
than float32 BLAS (measured: ``benchmarks/results/bench_risk.md``). Everything
else stays float32: norms, RoPE, attention
(``scaled_dot_product_attention``, causal over the shared rows, an explicit mask only for
the branches' rows), the output matrix and log-softmax. ``products="float32"`` computes
what the numpy engine computes (to float32 summation order).

**What bfloat16 changes.** A span token's log-probability moves by a small fraction of a
nat against float32. The classifiers of the risk indicators were trained on float32
log-probabilities; their decisions on bfloat16 ones, and the size of the difference, are
measured in ``benchmarks/results/bench_risk.md``. Emulating the rounding in numpy does
not bring the engines closer: a float32 difference in the last bit flips a value's
bfloat16 rounding now and then, and the model amplifies it (measured: the same mean
difference).

**Which engine.** :func:`load_engine` picks this one when torch (2.5 or later) is installed
and oneDNN multiplies bfloat16 in hardware here, else the numpy engine;
``$PRESIDIO_DELINK_LM_ENGINE`` (``auto``, ``torch``, ``numpy``) overrides the choice.
Threads: torch's own count (process-wide, ``torch.set_num_threads``: by default the
physical cores); with ``$PRESIDIO_DELINK_LLM_THREADS`` set, the engine runs its passes on
that many and restores torch's count after each. torch's OpenMP threads spin while they
wait, like OpenBLAS's: on a machine whose other cores are busy, set the variable to 1, or
``OMP_WAIT_POLICY=PASSIVE`` before torch loads (measured:
``benchmarks/results/bench_risk.md``; the engine sets neither: both govern all of the
process's torch).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError
from presidio_delink.llm.numpy_lm import (
    Layout,
    LayoutEngine,
    NumpyLM,
    load,
    threads_from_env,
)

logger = logging.getLogger(__name__)

ENGINE_ENV = "PRESIDIO_DELINK_LM_ENGINE"
ENGINES = ("auto", "torch", "numpy")


def torch_missing() -> str | None:
    """Why torch cannot run :class:`TorchLM` here (None when it can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    except Exception as exc:  # a broken install (a missing shared library, say)
        return f"torch does not import ({type(exc).__name__}: {exc})"
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 5):
        return f"torch {torch.__version__} is older than 2.5"
    return None


def bfloat16_in_hardware() -> bool:
    """Whether oneDNN multiplies bfloat16 in hardware here (AVX512-BF16 or AMX); without,
    torch emulates it, slower than numpy's float32 BLAS."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


PRODUCTS = ("bfloat16", "float32")


class TorchLM(LayoutEngine):
    """:meth:`forward` of ``lm`` (a loaded :class:`NumpyLM`) in torch; its tokenizer and
    weights are ``lm``'s (with bfloat16 products, their weights copied once: 2 bytes per
    parameter).

    Raises:
        ConfigError: torch is missing or older than 2.5, or ``products`` unknown.
    """

    def __init__(self, lm: NumpyLM, products: str = "bfloat16") -> None:
        if products not in PRODUCTS:
            raise ConfigError(f"products must be one of {', '.join(PRODUCTS)} "
                              f"(got {products!r})")
        reason = torch_missing()
        if reason is not None:
            raise ConfigError(f"the torch engine cannot run: {reason}")
        import torch

        # its own count during its passes only (torch's is process-wide): set, then restored
        self.threads = threads_from_env()
        self._lock = threading.Lock()
        self._torch = torch
        self.lm = lm
        self.tokenizer = lm.tokenizer
        self.bos = lm.bos
        self.path = lm.path
        self.n_vocab = lm.n_vocab
        self.products = products
        prod = torch.bfloat16 if products == "bfloat16" else torch.float32
        self._prod = prod
        def t(a: np.ndarray) -> Any:  # shares numpy's array (never written here)
            return torch.from_numpy(a if a.flags.writeable else a.copy())

        self._embed, self._output, self._output_norm = t(lm.embed), t(lm.output), t(lm.output_norm)
        self._blocks = [
            (t(b.attn_norm), t(b.qkv).to(prod), t(b.out).to(prod), t(b.ffn_norm),
             t(b.gate_up).to(prod), t(b.down).to(prod))
            for b in lm.blocks
        ]
        logger.info("torch engine: %s, %s products, %d thread(s)", lm.path.name, products,
                    self.threads or torch.get_num_threads())

    def _rms_norm(self, x: Any, w: Any) -> Any:
        return x * self._torch.rsqrt(x.square().mean(-1, keepdim=True) + self.lm.eps) * w

    def _product(self, x: Any, w: Any) -> Any:
        return (x.to(self._prod) @ w).float()

    def _forward_layout(self, lay: Layout, n_shared: int) -> np.ndarray:
        torch = self._torch
        with self._lock:  # one pass at a time: the thread count is the process's
            before = torch.get_num_threads()
            if self.threads is not None and self.threads != before:
                torch.set_num_threads(self.threads)
            try:
                with torch.inference_mode():
                    return self._forward(lay, n_shared).numpy()
            finally:
                if torch.get_num_threads() != before:
                    torch.set_num_threads(before)

    def _forward(self, lay: Layout, n_shared: int) -> Any:
        torch, lm = self._torch, self.lm
        sdpa = torch.nn.functional.scaled_dot_product_attention
        nq, nkv, hd = lm.n_head, lm.n_head_kv, lm.head_dim
        n = len(lay.tok)
        cos, sin = (torch.from_numpy(a) for a in lm._rotation(lay.pos))
        branch_rows = np.arange(n_shared, n)
        seen = torch.from_numpy(lay.visible(branch_rows)) if len(branch_rows) else None
        need = torch.from_numpy(lay.need)
        seen_last = torch.from_numpy(lay.visible(lay.need))
        x = self._embed[torch.from_numpy(lay.tok)]
        for i, (attn_norm, qkv_w, out_w, ffn_norm, gate_up_w, down_w) in enumerate(self._blocks):
            qkv = self._product(self._rms_norm(x, attn_norm), qkv_w)
            qk = qkv[:, :(nq + nkv) * hd].reshape(n, nq + nkv, hd)
            # RoPE on adjacent pairs, as numpy_lm._rope: x * cos + (pairs swapped) * sin
            swapped = qk.reshape(n, nq + nkv, hd // 2, 2).flip(-1).reshape(n, nq + nkv, hd)
            qk = qk * cos + swapped * sin
            q = qk[:, :nq].transpose(0, 1)[None]
            k = qk[:, nq:].transpose(0, 1)[None]
            v = qkv[:, (nq + nkv) * hd:].reshape(n, nkv, hd).transpose(0, 1)[None]
            if i == len(self._blocks) - 1:  # only the rows the logits read
                att = sdpa(q[:, :, need], k, v, attn_mask=seen_last, enable_gqa=True)[0]
                x = x[need]
            else:
                att = sdpa(q[:, :, :n_shared], k[:, :, :n_shared], v[:, :, :n_shared],
                           is_causal=True, enable_gqa=True)[0]
                if seen is not None:
                    att = torch.cat([att, sdpa(q[:, :, n_shared:], k, v, attn_mask=seen,
                                               enable_gqa=True)[0]], dim=1)
            x = x + self._product(att.transpose(0, 1).reshape(len(x), nq * hd), out_w)
            gate_up = self._product(self._rms_norm(x, ffn_norm), gate_up_w)
            g, u = gate_up[:, :lm.n_ff], gate_up[:, lm.n_ff:]
            x = x + self._product(torch.nn.functional.silu(g) * u, down_w)
        at = torch.from_numpy(np.searchsorted(lay.need, lay.t_rows))
        logits = self._rms_norm(x[at], self._output_norm) @ self._output.T
        logp = torch.log_softmax(logits, dim=-1)
        return logp.gather(1, torch.from_numpy(lay.t_ids)[:, None])[:, 0]


def chosen_engine() -> str:
    """``torch`` or ``numpy``: ``$PRESIDIO_DELINK_LM_ENGINE`` (default ``auto``: torch when
    it is installed and the CPU multiplies bfloat16 in hardware; ``torch`` runs it even
    without, emulated).

    Raises:
        ConfigError: an unknown value, or ``torch`` where torch cannot run.
    """
    want = os.environ.get(ENGINE_ENV, "").strip().lower() or "auto"
    if want not in ENGINES:
        raise ConfigError(f"${ENGINE_ENV} must be one of {', '.join(ENGINES)} (got {want!r})")
    if want == "numpy":
        return "numpy"
    reason = torch_missing()
    if reason is not None:
        if want == "torch":
            raise ConfigError(f"${ENGINE_ENV}=torch, but {reason}")
        logger.info("numpy engine for log-probabilities: %s", reason)
        return "numpy"
    if want == "auto" and not bfloat16_in_hardware():
        logger.info("numpy engine for log-probabilities: no bfloat16 in this CPU (oneDNN)")
        return "numpy"
    return "torch"


_ENGINES: dict[Path, TorchLM] = {}
_LOCK = threading.Lock()


def load_engine(path: str | Path) -> NumpyLM | TorchLM:
    """The engine for ``path`` (:func:`chosen_engine`), loaded once per process."""
    lm = load(path)
    if chosen_engine() == "numpy":
        return lm
    with _LOCK:
        eng = _ENGINES.get(lm.path)
        if eng is None:
            eng = _ENGINES[lm.path] = TorchLM(lm)
        return eng

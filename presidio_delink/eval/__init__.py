"""Evaluation of presidio-delink: linkage risk, semantic integrity, edit cost, fluency, speed.

Imports nothing heavy: the embedding model (torch, sentence-transformers) is loaded only by
:mod:`presidio_delink.eval.embeddings`, the LLM only by :mod:`presidio_delink.eval.fluency`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DATASETS",
    "Embedder",
    "EvalDataset",
    "Perplexity",
    "SemanticMonitor",
    "Setting",
    "load_dataset",
    "run_eval",
]

_LAZY = {
    "DATASETS": "presidio_delink.eval.data",
    "EvalDataset": "presidio_delink.eval.data",
    "load_dataset": "presidio_delink.eval.data",
    "Embedder": "presidio_delink.eval.embeddings",
    "Perplexity": "presidio_delink.eval.fluency",
    "SemanticMonitor": "presidio_delink.attacks.semantic",
    "Setting": "presidio_delink.eval.runner",
    "run_eval": "presidio_delink.eval.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

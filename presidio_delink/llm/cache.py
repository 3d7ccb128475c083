"""Content-keyed cache of rewriter answers (sqlite file or memory), so reruns are free."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.base import Rewriter, fill_call, sentence_call
from presidio_delink.llm.prompt import TEMPLATE_ID

logger = logging.getLogger(__name__)

_SCHEMA = "CREATE TABLE IF NOT EXISTS rewrites (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"


def cache_key(name: str, context: str, spans: list[str], options: Any = None) -> str:
    """sha256 (hex) of backend name, prompt template, context, spans in order and options."""
    payload = json.dumps(
        [name, TEMPLATE_ID, context, list(spans), options],
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _answer_value(v: object) -> bool:
    return isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))


class CachedRewriter:
    """Wraps a :class:`Rewriter`; answers repeated requests from the cache without a call.

    Only successful answers are stored (an :class:`LLMError` of the inner rewriter propagates
    and nothing is cached). The sqlite file stores document text, so it is created with mode
    0600.

    Args:
        inner: The rewriter that does the actual calls.
        path: sqlite file (created if needed); ``None`` keeps the cache in memory.

    Attributes:
        hits: Requests answered from the cache.
        misses: Requests passed to ``inner``.
    """

    def __init__(self, inner: Rewriter, path: str | os.PathLike[str] | None = None) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.path = Path(path) if path is not None else None
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._memory: dict[str, str] = {}
        self._inflight: dict[str, threading.Event] = {}
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self._db = self._open(self.path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(fd)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the LLM cache {str(path)!r}: {exc}") from exc
        return db

    def key(self, context: str, spans: list[str]) -> str:
        """Cache key of a request to the inner rewriter."""
        return cache_key(self.name, context, spans, getattr(self.inner, "options", None))

    def _get(self, key: str) -> dict[str, Any] | None:
        if self._db is None:
            raw = self._memory.get(key)
        else:
            row = self._db.execute("SELECT answer FROM rewrites WHERE key = ?", (key,)).fetchone()
            raw = row[0] if row else None
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        return {k: v for k, v in value.items() if isinstance(k, str) and _answer_value(v)}

    def _put(self, key: str, answer: dict[str, Any]) -> None:
        raw = json.dumps(answer, ensure_ascii=False, sort_keys=True)
        if self._db is None:
            self._memory[key] = raw
        else:
            self._db.execute(
                "INSERT OR REPLACE INTO rewrites (key, answer) VALUES (?, ?)", (key, raw)
            )

    def _once(
        self, key: str, call: Callable[[], dict[str, Any]], usable: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """The cached answer under ``key`` where ``usable``, else ``call()``'s, stored.

        Safe from several threads: a request whose twin is already in flight waits for
        that call's answer instead of calling again (one call per key); if that call
        fails, the waiting request makes its own.
        """
        while True:
            with self._lock:
                cached = self._get(key)
                if cached is not None and usable(cached):
                    self.hits += 1
                    return cached
                pending = self._inflight.get(key)
                if pending is None:
                    mine = self._inflight[key] = threading.Event()
                    self.misses += 1
                    break
            pending.wait()
        try:
            answer = call()
            with self._lock:
                self._put(key, answer)
        finally:
            with self._lock:
                del self._inflight[key]
            mine.set()
        return answer

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        """Cached :meth:`Rewriter.rewrite` (one call per key, see :meth:`_once`)."""
        answer = self._once(
            self.key(context, spans), lambda: self.inner.rewrite(context, spans), lambda _: True
        )
        return dict(answer)

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """Cached :meth:`~presidio_delink.llm.base.SentenceWriter.complete_sentence` (the key:
        the backend, every message in order and ``max_tokens``; the same one-call-per-key
        rule as :meth:`rewrite`)."""
        key = cache_key(
            self.name, "\x00sentence", [json.dumps(messages, ensure_ascii=False)],
            [getattr(self.inner, "options", None), max_tokens],
        )
        answer = self._once(
            key,
            lambda: {"sentence": sentence_call(self.inner)(messages, max_tokens)},
            lambda cached: isinstance(cached.get("sentence"), str),
        )
        return str(answer["sentence"])

    def continue_sentence(self, messages: list[dict[str, str]], started: str, stops: list[str],
                          max_tokens: int, avoid: list[str]) -> tuple[str, bool]:
        """Cached ``continue_sentence`` of the inner rewriter
        (:func:`~presidio_delink.llm.base.fill_call`; the key: the backend, every
        message, the started answer, the stops, ``max_tokens`` and the banned words)."""
        inner = fill_call(self.inner)
        if inner is None:
            raise LLMError(f"the LLM backend {self.name} continues no answers")
        key = cache_key(
            self.name, "\x00continue",
            [json.dumps([messages, started, stops, avoid], ensure_ascii=False)],
            [getattr(self.inner, "options", None), max_tokens],
        )

        def call() -> dict[str, Any]:
            words, stopped = inner(messages, started, stops, max_tokens, avoid)
            return {"words": words, "stopped": "yes" if stopped else "no"}  # stored as text

        answer = self._once(
            key, call,
            lambda cached: isinstance(cached.get("words"), str)
            and cached.get("stopped") in ("yes", "no"),
        )
        return str(answer["words"]), answer["stopped"] == "yes"

    def __len__(self) -> int:
        with self._lock:
            if self._db is None:
                return len(self._memory)
            return int(self._db.execute("SELECT COUNT(*) FROM rewrites").fetchone()[0])

    def close(self) -> None:
        """Close the sqlite file and the inner rewriter (if it has ``close``)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
                self._memory = {}
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> CachedRewriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

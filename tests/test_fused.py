"""The audit's fused reading: its features against a brute-force count, its model file,
and how the audit counts and re-reads it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_attacks import CORPUS, _edit

from presidio_delink.attacks.audit import Auditor, source_ranks
from presidio_delink.attacks.fused import CANDIDATES, TOP, UNRANKED, FusedReading, Trees, features
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, FUSED_MEMBERS, RankedAttack
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(CORPUS, tmp_path_factory.mktemp("fused") / "idx")


def _brute(rows: np.ndarray) -> tuple[list[int], list[list[float]]]:
    n_members, n_groups = rows.shape
    cands: set[int] = set()
    for s in rows:
        pos = sorted((g for g in range(n_groups) if s[g] > 0), key=lambda g: (-s[g], g))
        cands.update(pos[:CANDIDATES])
    out = []
    for g in sorted(cands):
        rank = [
            1 + sum(s[h] > s[g] for h in range(n_groups)) if s[g] > 0 else UNRANKED
            for s in rows
        ]
        best = [max(s) for s in rows]
        rel = [s[g] / b if b > 0 else 0.0 for s, b in zip(rows, best, strict=True)]
        top = [r <= TOP for r in rank]
        out.append([*rel, *np.log(rank), *(r == 1 for r in rank), *top, sum(top)])
    return sorted(cands), out


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda m: st.integers(1, 45).flatmap(
            lambda n: st.lists(st.lists(st.integers(0, 6), min_size=n, max_size=n),
                               min_size=m, max_size=m)
        )
    )
)
def test_features_match_a_brute_force_count(table: list[list[int]]) -> None:
    # small integer scores: many ties, zeros, and more groups than CANDIDATES
    rows = np.array(table, dtype=float)
    cands, x = features(rows)
    want_c, want_x = _brute(rows)
    assert cands.tolist() == want_c
    assert x.shape == (len(want_c), 4 * len(rows) + 1)
    if want_x:
        np.testing.assert_allclose(x, np.array(want_x, dtype=float))


@pytest.mark.parametrize("guard", [False, True])
def test_shipped_models_read_the_audit_panel(guard: bool) -> None:
    m = FusedReading.shipped(guard=guard)
    # refit (benchmarks/ranked/fit_fusion.py) on a change: both read the window pairs too
    assert m.members == FUSED_MEMBERS == AUDIT_MEMBERS
    n_features = 4 * len(m.members) + 1
    # boosted trees, the guard's fitted on the unguarded protection's outputs, the audit's
    # on the guarded protection's
    assert m.meta["protection"] == ("without the guard" if guard else "with the guard")
    assert m.trees is not None and m.meta["model"] == "trees"
    assert int(m.trees.feature.max()) < n_features and np.isfinite(m.trees.value).all()
    assert m.meta["candidates"] == CANDIDATES and m.meta["top"] == TOP
    assert "train/dev" in m.meta["data"]  # held-in texts, never the test documents


def test_exported_trees_score_as_scikit_learn_does() -> None:
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 9))
    y = (x[:, 0] + x[:, 3] ** 2 - x[:, 8] > 0.5).astype(int)
    model = ensemble.HistGradientBoostingClassifier(
        max_iter=30, max_leaf_nodes=7, random_state=0
    ).fit(x, y)
    trees = Trees.from_list(json.loads(json.dumps(Trees.export(model))))
    base = float(np.ravel(model._baseline_prediction)[0])
    np.testing.assert_allclose(trees.raw(x) + base, model.decision_function(x), atol=1e-9)
    m = FusedReading(("a", "b"), np.zeros(0), base, {}, trees)  # 9 features: two members
    cands, p = m.score(np.array([[3.0, 1.0, 0.0], [2.0, 2.0, 1.0]]))
    assert cands.tolist() == [0, 1, 2] and ((p > 0) & (p < 1)).all()
    with pytest.raises(ConfigError, match="feature 8 of 5"):
        FusedReading(("a",), np.zeros(0), base, {}, trees)


def test_the_audit_reads_another_fit_than_the_guard() -> None:
    # the audit's model is fitted on the guarded protection's outputs: not the reading
    # the protection aimed at
    audit, guard = FusedReading.shipped(), FusedReading.shipped(guard=True)
    assert audit.meta["protection"] != guard.meta["protection"]
    assert audit.trees is not None and guard.trees is not None
    assert audit.trees.value.shape != guard.trees.value.shape or not np.array_equal(
        audit.trees.value, guard.trees.value
    )


def test_malformed_models_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="refit"):
        FusedReading.from_dict({"members": ["a", "b"], "coef": [0.0] * 8, "intercept": 0})
    with pytest.raises(ConfigError, match="malformed"):
        FusedReading.from_dict({"members": ["a"], "intercept": 0})
    m = FusedReading.from_dict({"members": ["a"], "coef": [0.0] * 5, "intercept": 0})
    with pytest.raises(ConfigError, match="lacks: a"):
        m.check_panel(("b",))


@pytest.mark.parametrize("src", [2, 13, 27])
def test_fused_reading_ranks_a_near_verbatim_source_first(index: NgramIndex, src: int) -> None:
    doc_id, text = CORPUS[src]
    att = RankedAttack(index, k=2, members=AUDIT_MEMBERS)
    rec = source_ranks(_edit(text, seed=src), doc_id, None, None, att, FusedReading.shipped())
    assert rec["fused"]["source_rank"] == 1 and rec["fused"]["top_group"] == doc_id
    assert rec["fused"]["margin_claims"] is False  # no calibrated margin: never a claim
    assert isinstance(rec["fused"]["crowd"], int)
    # the model's scores turned against the readings do not rank it first
    m = FusedReading.shipped()
    assert m.trees is not None
    anti = FusedReading(
        m.members, m.coef, -m.intercept, {}, dataclasses.replace(m.trees, value=-m.trees.value)
    )
    rev = source_ranks(_edit(text, seed=src), doc_id, None, None, att, anti)["fused"]
    assert rev["source_rank"] != 1


def test_auditor_counts_the_fused_reading_and_audits_records_without_it(
    index: NgramIndex,
) -> None:
    doc_id, text = CORPUS[5]
    a = Auditor(index, 2)
    rec = a.audit(doc_id, _edit(text, seed=5), doc_id)
    assert set(rec) == {"containment", "ranked", "fused"}
    assert a.first["fused"] == 1 and a.top5["fused"] == 1
    lines = a.lines()
    fused = next(x for x in lines if x.startswith("risk, fused ranked reading"))
    assert "source first for 1, in the top 5 for 1 of 1" in fused
    # a complete stored record is counted as it is, not attacked again (no text needed)
    b = Auditor(index, 2)
    assert b.reuse(doc_id, doc_id, rec, None) == rec and b.first["fused"] == 1
    assert b._ranked is None  # nothing built: the record was read, not re-audited
    # a record written before the audit read the fused reading is audited again
    old = {k: v for k, v in rec.items() if k != "fused"}
    c = Auditor(index, 2)
    again = c.reuse(doc_id, doc_id, old, _edit(text, seed=5))
    assert again is not None and again["fused"]["source_rank"] == 1
    assert json.dumps(again["ranked"], sort_keys=True) == json.dumps(rec["ranked"], sort_keys=True)
    # neither text nor a complete record: the stored counts, as they are
    d = Auditor(index, 2)
    assert d.reuse(doc_id, doc_id, old, None) == old and d.first["fused"] == 0
    assert d.reuse(doc_id, doc_id, None, None) is None


def test_fused_attack_ranks_as_the_audit_reads(index: NgramIndex) -> None:
    from presidio_delink.attacks.base import Attack
    from presidio_delink.attacks.fused import FusedAttack

    att = FusedAttack(index, k=2)
    assert isinstance(att, Attack) and att.name == "fused"
    doc_id, text = CORPUS[13]
    query = _edit(text, seed=13)
    v = att.verdict(query, top=5)
    assert not v.linked and 0 < len(v.ranking) <= 5
    assert v.ranking[0].group == doc_id and v.ranking[0].doc_id == doc_id
    assert all(a.score >= b.score for a, b in zip(v.ranking, v.ranking[1:], strict=False))
    rec = source_ranks(query, doc_id, None, None, att.ranked, att.model)["fused"]
    assert rec["source_rank"] == 1 and rec["top_group"] == v.ranking[0].group

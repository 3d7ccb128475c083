"""The review library: document model, verification, actions, conflicts, export, resume."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from review_helpers import HTML_ID, PII_NAME, make_review_files

from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.review import Conflict, ReviewSession, Verifier, state_path_for
from presidio_delink.review.document import build_chunks, joined, replace_range

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def files(tmp_path_factory, sample_index, sample_deid):  # type: ignore[no-untyped-def]
    return make_review_files(tmp_path_factory.mktemp("review"), sample_index, sample_deid)


@pytest.fixture(scope="module")
def verifier(sample_index):  # type: ignore[no-untyped-def]
    return Verifier(sample_index, k=2)


@pytest.fixture
def session(files, verifier, tmp_path):  # type: ignore[no-untyped-def]
    s = ReviewSession(
        files["delinked"],
        verifier,
        tmp_path / "reviewed.jsonl",
        input_path=files["input"],
        reviewer="ann",
    )
    yield s
    s.close()


def records(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def first_doc(session: ReviewSession) -> dict:  # type: ignore[type-arg]
    return session.document(session.records[0]["id"])


def linking_rewrite(doc: dict) -> dict:  # type: ignore[type-arg]
    """A rewrite whose original (its input text) links: the N-gram that forced it has df 1."""
    return next(
        c
        for c in doc["chunks"]
        if c["kind"] == "rewrite"
        and c["df"] == 1
        and c["ngram"]
        and c["before"]
        and c["ngram"].split()[0] in c["before"].lower()
    )


def test_chunks_rebuild_the_output_and_mark_every_edit(files) -> None:  # type: ignore[no-untyped-def]
    recs = records(files["delinked"])
    ins = {r["id"]: r["text"] for r in records(files["input"])}
    for rec in recs:
        chunks = build_chunks(rec["text"], rec["audit"], ins[rec["id"]])
        assert joined(chunks) == rec["text"]
        assert "".join(c.before if c.kind != "same" else c.text for c in chunks) == ins[rec["id"]]
    chunks = build_chunks(recs[0]["text"], recs[0]["audit"], ins[recs[0]["id"]])
    kinds = {c.kind for c in chunks}
    assert {"same", "rewrite", "pii"} <= kinds
    pii = [c for c in chunks if c.kind == "pii"]
    assert [c.before for c in pii] == [PII_NAME] and pii[0].text == "<PERSON>"
    explained = [c for c in chunks if c.kind == "rewrite" and c.ngram]
    assert explained and all(c.df >= 1 for c in explained)
    # Without the input: one unchanged chunk, the output as it is.
    assert [c.kind for c in build_chunks(recs[0]["text"], recs[0]["audit"], None)] == ["same"]


def test_replace_range_only_inside_unchanged_text() -> None:
    from presidio_delink.review.document import Chunk

    chunks = [
        Chunk("same", "one two "),
        Chunk("rewrite", "x", "y", "x", "pending"),
        Chunk("same", " three"),
    ]
    out, at = replace_range(chunks, 4, 7, "[REDACTED]")
    assert joined(out) == "one [REDACTED] x three" and out[at].kind == "reviewer"
    with pytest.raises(ValueError):
        replace_range(chunks, 8, 9, "[REDACTED]")  # the rewrite itself
    with pytest.raises(ValueError):
        replace_range(chunks, 5, 5, "[REDACTED]")


def test_accept_edit_refused_with_phrase_and_df(session) -> None:  # type: ignore[no-untyped-def]
    doc = first_doc(session)
    assert doc["verification"]["ok"] and doc["version"] == 0
    c = linking_rewrite(doc)
    res = session.act(doc["id"], 0, "accept", chunk=c["i"])
    assert res["ok"] and res["document"]["version"] == 1
    assert res["document"]["chunks"][c["i"]]["status"] == "accepted"
    # Editing it back to the original makes the document link: refused, nothing changed.
    res = session.act(doc["id"], 1, "edit", chunk=c["i"], text=c["before"])
    assert not res["ok"] and res["document"]["version"] == 1
    assert res["document"]["chunks"][c["i"]]["text"] == c["text"]
    assert any("links: found in 1 document(s)" in r for r in res["reasons"])
    phrases = [x["phrase"] for x in res["verification"]["linkable"]]
    assert any(c["before"] in p for p in phrases)
    # Revert re-exposes the same phrase: refused too.
    res = session.act(doc["id"], 1, "revert", chunk=c["i"])
    assert not res["ok"] and res["document"]["chunks"][c["i"]]["status"] == "accepted"
    # An innocuous edit verifies and is saved (a placeholder: no new phrase with the
    # neighbouring words, whichever chunk the delinking left to review).
    res = session.act(doc["id"], 1, "edit", chunk=c["i"], text="[REDACTED]")
    assert res["ok"] and res["document"]["chunks"][c["i"]]["text"] == "[REDACTED]"
    trail = session.store.trail(doc["id"])
    assert [(t["action"], t["ok"]) for t in trail] == [
        ("accept", True),
        ("edit", False),
        ("revert", False),
        ("edit", True),
    ]
    assert trail[1]["before"] == c["text"] and trail[1]["after"] == c["before"]
    assert trail[1]["verification"]["reasons"] and trail[0]["reviewer"] == "ann"


def test_revert_of_pii_is_refused(session) -> None:  # type: ignore[no-untyped-def]
    doc = first_doc(session)
    pii = next(c for c in doc["chunks"] if c["kind"] == "pii")
    res = session.act(doc["id"], 0, "revert", chunk=pii["i"])
    assert not res["ok"]
    assert res["verification"]["pii"] == [PII_NAME]
    assert any("re-exposes removed PII" in r for r in res["reasons"])
    # Part of the name in a free-text edit elsewhere is refused as well.
    c = next(c for c in doc["chunks"] if c["kind"] == "rewrite")
    res = session.act(doc["id"], 0, "edit", chunk=c["i"], text="Mr Quayle")
    assert not res["ok"] and res["verification"]["pii"] == ["quayle"]


def test_redact_more_then_revert_it(session) -> None:  # type: ignore[no-untyped-def]
    doc = first_doc(session)
    same = next(c for c in doc["chunks"] if c["kind"] == "same" and len(c["text"]) > 30)
    a = same["start"] + same["text"].index(" ") + 1
    b = same["start"] + same["text"].index(" ", a - same["start"])
    res = session.act(doc["id"], 0, "redact", start=a, end=b)
    assert res["ok"]
    new = res["document"]
    rev = next(c for c in new["chunks"] if c["kind"] == "reviewer")
    assert (
        rev["text"] == "[REDACTED]"
        and rev["before"] == doc["chunks"][same["i"]]["text"][a - same["start"] : b - same["start"]]
    )
    res = session.act(doc["id"], 1, "revert", chunk=rev["i"])
    assert res["ok"]
    assert joined_text(res["document"]) == joined_text(doc)
    with pytest.raises(ValueError):
        session.act(doc["id"], 2, "redact", start=0, end=0)


def joined_text(doc: dict) -> str:  # type: ignore[type-arg]
    return "".join(c["text"] for c in doc["chunks"])


def test_signoff_needs_every_edit_reviewed(session) -> None:  # type: ignore[no-untyped-def]
    doc = first_doc(session)
    res = session.act(doc["id"], 0, "signoff")
    assert not res["ok"] and "pending" in res["reasons"][0]
    assert session.act(doc["id"], 0, "accept_all")["ok"]
    res = session.act(doc["id"], 1, "signoff")
    assert res["ok"] and res["document"]["status"] == "signed_off"
    q = session.queue("signed_off")
    assert [d["id"] for d in q["documents"]] == [doc["id"]] and q["counts"]["signed_off"] == 1


def test_two_tabs_conflict_loses_nothing(session) -> None:  # type: ignore[no-untyped-def]
    doc = first_doc(session)
    edits = [c for c in doc["chunks"] if c["kind"] == "rewrite"]
    assert session.act(doc["id"], 0, "edit", chunk=edits[0]["i"], text="some matter")["ok"]
    with pytest.raises(Conflict):  # the second tab still shows version 0
        session.act(doc["id"], 0, "edit", chunk=edits[1]["i"], text="another matter")
    now = session.document(doc["id"])
    assert now["version"] == 1 and now["chunks"][edits[0]["i"]]["text"] == "some matter"
    assert now["chunks"][edits[1]["i"]]["text"] == edits[1]["text"]


def test_queue_orders_by_risk_and_filters(session) -> None:  # type: ignore[no-untyped-def]
    q = session.queue()
    risks = [d["risk"] for d in q["documents"]]
    assert risks == sorted(risks, reverse=True) and q["total"] == len(session.records)
    assert {d["id"] for d in session.queue("unreviewed")["documents"]} == {
        r["id"] for r in session.records
    }
    risky = session.queue("risky")["documents"]
    assert all(d["risk"] >= 1 for d in risky)
    assert risky, "containment still ranks sources first after arity-1 delinking"
    assert session.queue("failed")["documents"] == []
    with pytest.raises(ValueError):
        session.queue("nonsense")


def test_queue_says_source_unknown_and_signoff_names_exposure(session) -> None:  # type: ignore[no-untyped-def]
    q = session.queue()
    rows = {d["id"]: d for d in q["documents"]}
    # a source not in the collection is "source unknown", not a safe-looking risk 0.00
    assert rows[HTML_ID]["source_known"] is False and rows[HTML_ID]["risk"] == 0
    assert all(d["source_known"] for i, d in rows.items() if i != HTML_ID)
    assert q["crowd"] == session.verifier.settings.crowd
    rec = next(
        r for r in session.records
        if (r.get("source_ranks") or {}).get("containment", {}).get("source_rank") == 1
    )
    doc = session.document(rec["id"])
    out = session.act(rec["id"], doc["version"], "accept_all")
    v = out["verification"]
    # it verifies (no attack gained), and the verdict says the source is exposed
    assert v["ok"] and "containment" in v["exposed"]
    assert v["attacks"]["containment"]["exposed"] is True
    assert "linked" not in v["attacks"]["containment"]
    js = (ROOT / "presidio_delink" / "review" / "static" / "app.js").read_text()
    assert "a.linked" not in js and "source unknown" in js and "RISK_HELP" in js


def test_export_and_resume(files, verifier, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "reviewed.jsonl"
    s = ReviewSession(files["delinked"], verifier, out, input_path=files["input"], reviewer="bo")
    doc = first_doc(s)
    c = next(c for c in doc["chunks"] if c["kind"] == "rewrite")
    assert s.act(doc["id"], 0, "edit", chunk=c["i"], text="some matter")["ok"]
    assert s.act(doc["id"], 1, "accept_all")["ok"]
    assert s.act(doc["id"], 2, "signoff")["ok"]
    s.close()
    # Closed and resumed: the state is there.
    s = ReviewSession(files["delinked"], verifier, out, input_path=files["input"], reviewer="cy")
    again = first_doc(s)
    assert again["version"] == 3 and again["status"] == "signed_off"
    info = s.export()
    s.close()
    assert info["signed_off"] == 1 and info["documents"] == len(records(files["delinked"]))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state_path_for(out)).st_mode) == 0o600
    recs = records(out)
    first = recs[0]
    assert first["review"]["signed_off"] and first["review"]["reviewers"] == ["bo"]
    assert [t["action"] for t in first["review"]["trail"]] == ["edit", "accept_all", "signoff"]
    t0 = first["review"]["trail"][0]
    assert t0["before"] == c["text"] and t0["after"] == "some matter" and t0["ok"]
    assert t0["at"] and t0["verification"]["ok"]
    assert "some matter" in first["text"] and not analyze(verifier.index, first["text"]).linkable
    assert all(not r["review"]["signed_off"] for r in recs[1:])
    assert recs[-1]["id"] == HTML_ID and recs[-1]["review"]["status"] == "unreviewed"


def test_state_survives_a_crash(files, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A server process killed right after answering: the answered action is on disk."""
    out = tmp_path / "reviewed.jsonl"
    code = f"""
import os, sys
from presidio_delink import NgramIndex
from presidio_delink.review import ReviewSession, Verifier
idx = NgramIndex.build([(d, t) for d, t in __import__('presidio_delink.io', fromlist=['x']).read_many([{str(ROOT / "samples" / "collection.jsonl")!r}])], {str(tmp_path / "idx")!r})
s = ReviewSession({str(files["delinked"])!r}, Verifier(idx, panel=False), {str(out)!r},
                  input_path={str(files["input"])!r}, reviewer='crash')
doc = s.document(s.records[1]['id'])
c = next(c for c in doc['chunks'] if c['kind'] == 'rewrite')
assert s.act(doc['id'], 0, 'accept', chunk=c['i'])['ok']
print(c['i'])
os._exit(9)  # no close, no cleanup
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode == 9, p.stderr[-2000:]
    from presidio_delink import NgramIndex

    s = ReviewSession(
        files["delinked"],
        Verifier(NgramIndex.load(tmp_path / "idx"), panel=False),
        out,
        input_path=files["input"],
    )
    doc = s.document(s.records[1]["id"])
    assert doc["version"] == 1 and doc["chunks"][int(p.stdout)]["status"] == "accepted"
    assert [t["reviewer"] for t in s.store.trail(doc["id"])] == ["crash"]
    s.close()


def test_state_of_another_file_is_refused(files, verifier, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "reviewed.jsonl"
    ReviewSession(files["delinked"], verifier, out).close()
    other = tmp_path / "other.jsonl"
    other.write_text(files["delinked"].read_text("utf-8").replace("a certain", "one certain"))
    with pytest.raises(ConfigError, match="belongs to another delinked file"):
        ReviewSession(other, verifier, out)


def test_bad_records_get_clear_errors(verifier, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.errors import InputError

    bad = tmp_path / "bad.jsonl"
    for content, msg in [
        ("{nope\n", "invalid JSON"),
        ('{"id": 1}\n', "needs 'id' and 'text'"),
        ("", "no records"),
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "duplicate id"),
    ]:
        bad.write_text(content)
        with pytest.raises(InputError, match=msg):
            ReviewSession(bad, verifier, tmp_path / "o.jsonl")


def test_cli_review_refuses_output_over_its_input(files, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from presidio_delink.cli import main

    r = CliRunner().invoke(main, ["review", "--help"])
    assert r.exit_code == 0 and "--reviewer" in r.output and "--input" in r.output
    r = CliRunner().invoke(
        main,
        ["review", "--index", str(tmp_path), str(files["delinked"]), "-o", str(files["delinked"])],
    )
    assert r.exit_code == 2 and "error:" in r.output


def test_panel_reads_as_the_audit(sample_index, sample_docs) -> None:  # type: ignore[no-untyped-def]
    """The review's default panel is the audit's: the same attacks, the same ranks for the
    same text, and reading an edit counts nothing in the audit's tallies."""
    from presidio_delink.attacks.audit import Auditor

    group = sample_index.doc_groups[0]
    text = " ".join(sample_docs[0][1].split()[:120])  # part of the first document
    audit = Auditor(sample_index, k=2)
    want = audit.audit("doc", text, group)
    v = Verifier(sample_index, k=2)
    assert v.panel is not None and v.panel.ATTACKS == ("containment", "ranked", "fused")
    got = v.verify(text, group=group).attacks
    assert set(got) == {"containment", "ranked", "fused"}
    for name in got:
        assert got[name]["source_rank"] == want[name]["source_rank"], name
        assert got[name]["top_group"] == want[name]["top_group"], name
    assert v.panel.ranked.members == audit.ranked.members
    assert v.panel.known == 0 and audit.known == 1


def test_an_attack_that_now_ranks_the_source_first_refuses(sample_index) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.attacks.base import Ranked, Verdict

    calls = []

    class Ranking:
        name = "ranked"

        def verdict(self, text: str) -> Verdict:
            calls.append(text)
            return Verdict("ranked", (Ranked("g1", 2.0, "d1"), Ranked("g2", 1.0, "d2")), True)

    v = Verifier(sample_index, panel=False, attacks={"ranked": Ranking()})
    base = v.verify("some text", group="g2").attacks
    assert set(base) == {"ranked"}
    assert base["ranked"]["source_rank"] == 2 and not base["ranked"]["regressed"]
    # The source moves to first place where the delink output had it second: refused.
    r = v.verify("some text", group="g1", baseline=base)
    assert not r.ok and r.attacks["ranked"]["regressed"] and "ranked attack" in r.reasons[0]
    assert calls


def test_failed_record_is_listed_and_not_editable(verifier, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "ok", "text": "plain words here", "audit": []},
        {"id": "bad", "text": None, "failed": True, "error": "still linkable", "audit": []},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = ReviewSession(path, verifier, tmp_path / "o.jsonl")
    q = s.queue("failed")
    assert [d["id"] for d in q["documents"]] == ["bad"] and q["documents"][0]["risk"] == 2.0
    assert s.queue()["documents"][0]["id"] == "bad"  # highest residual risk first
    assert s.document("bad")["failed"]
    with pytest.raises(ValueError, match="failed in delink"):
        s.act("bad", 0, "signoff")
    with pytest.raises(KeyError):
        s.document("nope")
    s.export()
    out = records(tmp_path / "o.jsonl")
    assert out[1]["text"] is None and out[1]["review"]["status"] == "failed"
    s.close()


_WORDS = ["the", "applicant", "court", "[REDACTED]", "<PERSON>", ",", ".", "\n", " ", "  ", "a"]


def test_chunks_cover_both_texts_exactly() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    words = st.lists(st.sampled_from(_WORDS), max_size=40).map("".join)

    @settings(max_examples=200, deadline=None, database=None)
    @given(words, words)
    def check(a: str, b: str) -> None:
        chunks = build_chunks(b, [], a)
        assert joined(chunks) == b
        assert "".join(c.before if c.kind != "same" else c.text for c in chunks) == a
        assert all(c.text != c.before for c in chunks if c.kind != "same")

    check()


def test_server_import_guard_says_what_to_install(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import importlib

    for name in [m for m in sys.modules if m == "starlette" or m.startswith("starlette.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "starlette", None)
    monkeypatch.delitem(sys.modules, "presidio_delink.review.server", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'presidio-delink\[review\]'"):
        importlib.import_module("presidio_delink.review.server")
    monkeypatch.delitem(sys.modules, "presidio_delink.review.server", raising=False)

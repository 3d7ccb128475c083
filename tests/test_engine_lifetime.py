"""A ranked engine lives no longer than its index: an index no one holds is freed, with
its mapped files (a long-lived process that opens new segments would otherwise keep every
index it ever audited)."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

from presidio_delink import NgramIndex
from presidio_delink.attacks.fts5 import MEMBERS, engine


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_index_no_one_holds_is_freed_with_its_engine(
    tmp_path: Path, sample_docs: list[tuple[str, str]]
) -> None:
    built = NgramIndex.build(sample_docs[:6], tmp_path / "idx")
    del built
    gc.collect()
    before = _fds()
    index = NgramIndex.load(tmp_path / "idx")
    eng = engine(index, tuple(MEMBERS)[:2])
    assert eng.index is index
    assert _fds() > before  # its files are mapped
    ref = weakref.ref(index)
    del index, eng
    gc.collect()
    assert ref() is None
    assert _fds() <= before

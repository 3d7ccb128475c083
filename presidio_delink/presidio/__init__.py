"""Presidio integration: the only package that imports presidio_analyzer/presidio_anonymizer."""

from presidio_delink.presidio.engine import DelinkEngine
from presidio_delink.presidio.operator import DelinkOperator
from presidio_delink.presidio.overlaps import resolve_overlaps
from presidio_delink.presidio.recognizer import ENTITY, LinkageResult, LinkageRiskRecognizer

__all__ = [
    "ENTITY",
    "DelinkEngine",
    "DelinkOperator",
    "LinkageResult",
    "LinkageRiskRecognizer",
    "resolve_overlaps",
]

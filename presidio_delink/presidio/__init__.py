"""Presidio integration: the only package that imports presidio_analyzer/presidio_anonymizer."""

from presidio_delink.presidio.operator import DelinkOperator
from presidio_delink.presidio.recognizer import ENTITY, LinkageRiskRecognizer

__all__ = ["ENTITY", "DelinkOperator", "LinkageRiskRecognizer"]

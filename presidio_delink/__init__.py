"""presidio-delink: find and remove search-based linkage from de-identified text.

The public face: ``from presidio_delink import Delinker, NgramIndex, make_rewriter``.
Each name is imported from its home module on first use, so ``import presidio_delink``
imports the errors and nothing heavy (no numpy, no index, no Presidio).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from presidio_delink.errors import (
    BuildError,
    ConfigError,
    DelinkError,
    IndexFormatError,
    InputError,
    LLMError,
    LLMUnavailable,
    ModelFormatError,
)
from presidio_delink.lazy import lazy_getattr

if TYPE_CHECKING:
    from presidio_delink.index import NgramIndex
    from presidio_delink.llm import make_rewriter
    from presidio_delink.pipeline import Delinker
    from presidio_delink.presidio import DelinkEngine, LinkageRiskRecognizer
    from presidio_delink.results import DelinkResult
    from presidio_delink.settings import DelinkSettings
    from presidio_delink.text import Tokenizer

__version__ = "0.1.0"

_LAZY = {
    "NgramIndex": "presidio_delink.index",
    "Tokenizer": "presidio_delink.text",
    "Delinker": "presidio_delink.pipeline",
    "DelinkResult": "presidio_delink.results",
    "DelinkSettings": "presidio_delink.settings",
    "DelinkEngine": "presidio_delink.presidio",
    "LinkageRiskRecognizer": "presidio_delink.presidio",
    "make_rewriter": "presidio_delink.llm",
}

__all__ = [
    "BuildError",
    "ConfigError",
    "DelinkEngine",
    "DelinkError",
    "DelinkResult",
    "DelinkSettings",
    "Delinker",
    "IndexFormatError",
    "InputError",
    "LLMError",
    "LLMUnavailable",
    "LinkageRiskRecognizer",
    "ModelFormatError",
    "NgramIndex",
    "Tokenizer",
    "__version__",
    "make_rewriter",
]


__getattr__ = lazy_getattr(__name__, _LAZY, keep=globals())
"""Import a public name from its home module on first access, then keep it here."""


def __dir__() -> list[str]:
    return sorted(__all__)


logging.getLogger(__name__).addHandler(logging.NullHandler())

"""presidio-delink: find and remove search-based linkage from de-identified text."""

import logging

from presidio_delink.errors import (
    ConfigError,
    DelinkError,
    IndexFormatError,
    InputError,
    LLMError,
)
from presidio_delink.index import NgramIndex
from presidio_delink.text import Tokenizer

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DelinkError",
    "IndexFormatError",
    "InputError",
    "LLMError",
    "NgramIndex",
    "Tokenizer",
    "__version__",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())

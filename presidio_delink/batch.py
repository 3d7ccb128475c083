"""A batch run of ``delink``: every document of some inputs through one
:class:`~presidio_delink.pipeline.Delinker`, audited, into one JSONL output (and an HTML
report), all or nothing, resumable.

The library entry point the CLI's ``delink`` calls (:func:`delink_batch`); the pieces:

* :func:`run_fingerprint`: what made a record (package version, the index's format and
  checksum, the run's :class:`~presidio_delink.settings.DelinkSettings`, the LLM and its
  prompt template, the PII step); every record carries it (``made_by``) with a digest of
  its input (``input_sha256``: id, text and source group);
* :class:`Journal`: ``OUTPUT.partial``, an append-only file of the finished records,
  flushed after each, so a run stopped in any way (an error, Ctrl-C, SIGTERM, a killed
  process) keeps them; ``resume`` reuses only a record whose ``made_by`` and
  ``input_sha256`` match this run's;
* :func:`plan_inputs`: every input record is read and checked before the first document
  is delinked (a malformed line 10 fails the run at once, not after 9 documents);
* :func:`release`: the file that may be published (ids and texts only).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from presidio_delink.errors import ConfigError, InputError
from presidio_delink.io import atomic_output, read_checked
from presidio_delink.progress import doc_bar
from presidio_delink.results import DelinkResult
from presidio_delink.settings import DEFAULT_SPACY_MODEL, rewrite_for

__all__ = [
    "BatchSummary",
    "Journal",
    "LLMOptions",
    "PIIOptions",
    "ReleaseSummary",
    "Terminated",
    "delink_batch",
    "batch_fingerprint",
    "check_options",
    "input_digest",
    "make_delinker",
    "plan_inputs",
    "record_of",
    "release",
    "run_fingerprint",
    "sigterm_raises",
    "source_map",
]


def run_fingerprint(index: Any, settings: Any, **made_with: Any) -> str:
    """A digest of what makes a run's records: the package version, the index (format
    version and its authenticated ``meta.json``, which lists every file's checksum), the
    settings (all but ``llm_concurrency``, which changes no answer) and ``made_with``:
    the LLM spec, the prompt template, the PII step, anything else that changes a record.
    """
    from presidio_delink import __version__
    from presidio_delink.index.format import FORMAT_VERSION, META_FILE

    meta = getattr(index, "identity_file", Path(index.directory) / META_FILE)
    parts = {
        "version": __version__,
        "index_format": FORMAT_VERSION,
        "index_meta": hashlib.sha256(meta.read_bytes()).hexdigest(),
        "settings": {k: v for k, v in settings.to_dict().items() if k != "llm_concurrency"},
        "made_with": made_with,
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:32]


def input_digest(doc_id: str, text: str, group: str | None) -> str:
    """The digest of one input record (its id, text and source group)."""
    blob = json.dumps([doc_id, text, group], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:32]


def source_map(inputs: tuple[Path, ...], field: str) -> dict[str, str]:
    """``{doc id: source id}`` from the ``field`` of JSONL records."""
    out: dict[str, str] = {}
    for path in inputs:
        if path.is_dir() or path.suffix == ".json":
            raise InputError(f"--source-field needs JSONL input, not {path}")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # the reader names the bad line
                    if isinstance(rec, dict) and field in rec and "id" in rec:
                        out[str(rec["id"])] = str(rec[field])
    return out


def plan_inputs(inputs: Sequence[Path], nulls: list[str]) -> int:
    """Read and check every input record before any is delinked (the errors of
    :func:`~presidio_delink.io.read_checked`, naming file and line: a malformed line, a
    duplicate id, no documents); the number of documents.  Holds no text."""
    return sum(1 for _ in read_checked(inputs, nulls))


class Journal:
    """``OUTPUT.partial``: the finished records of a run, one JSON line each, appended and
    flushed as they finish (mode 0600: they hold document text).

    Args:
        path: the journal file.
        mode: ``"new"`` (an existing journal is an error naming ``--resume`` and
            ``--fresh``), ``"fresh"`` (an existing one is discarded) or ``"resume"`` (its
            records are offered to :meth:`reuse`); ``"read"``: offered, and nothing
            written (a worker's view of the driver's journal).
    """

    def __init__(self, path: Path, mode: str) -> None:
        self.check(path, mode)
        self.path = path
        self._offsets: dict[str, list[int]] = {}
        self.stale = 0  # records of the earlier run made otherwise (not reused)
        self.written = 0
        self._out: IO[str] | None = None
        if mode in ("resume", "read") and path.exists():
            self._scan()
        self._had = bool(self._offsets)
        if mode == "read":
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if mode != "resume" else 0)
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror}") from exc
        self._out = os.fdopen(fd, "a", encoding="utf-8")

    @staticmethod
    def check(path: Path, mode: str) -> None:
        """Refuse (:class:`~presidio_delink.errors.ConfigError`) an earlier run's journal
        in mode ``"new"``: it is never discarded unasked."""
        if mode not in ("new", "fresh", "resume", "read"):
            raise ValueError(f"journal mode {mode!r}")
        if mode == "new" and path.exists():
            raise ConfigError(
                f"{path} holds finished documents of an earlier run: rerun with --resume to "
                "reuse those made with the same settings and input, or --fresh to discard it"
            )

    @property
    def empty(self) -> bool:
        """Nothing in it: no record written by this run, none kept from an earlier one."""
        return self.written == 0 and not self._had

    def _scan(self) -> None:
        with open(self.path, "rb") as f:
            at = 0
            for n, raw in enumerate(f, 1):
                try:
                    rec = json.loads(raw)
                    doc_id = str(rec["id"])
                except (ValueError, KeyError, TypeError) as exc:
                    if not raw.endswith(b"\n"):  # a last line cut by a kill: dropped
                        break
                    raise InputError(
                        f"{self.path}:{n}: not a record of this tool; remove the file or "
                        "rerun with --fresh"
                    ) from exc
                self._offsets.setdefault(doc_id, []).append(at)
                at += len(raw)

    def reuse(self, doc_id: str, made_by: str, digest: str) -> dict[str, Any] | None:
        """The latest earlier record of ``doc_id`` made by ``made_by`` from the input
        ``digest``, or None (counted in :attr:`stale` when there was one made otherwise)."""
        offsets = self._offsets.pop(doc_id, None)
        if not offsets:
            return None
        with open(self.path, "rb") as f:
            for at in reversed(offsets):
                f.seek(at)
                rec = json.loads(f.readline())
                if rec.get("made_by") == made_by and rec.get("input_sha256") == digest:
                    return dict(rec)
        self.stale += 1
        return None

    def append(self, line: str) -> None:
        assert self._out is not None
        self._out.write(line)
        self._out.flush()
        self.written += 1

    def close(self, *, remove: bool) -> None:
        """Close; ``remove`` the file (the run succeeded: the output holds everything)."""
        if self._out is not None:
            with contextlib.suppress(OSError):
                self._out.flush()
                os.fsync(self._out.fileno())
            self._out.close()
            self._out = None
        if remove:
            self.path.unlink(missing_ok=True)


@dataclass
class BatchSummary:
    """What a batch run did (counts only: no document text)."""

    written: int = 0
    failed: int = 0
    reused: int = 0
    redone: int = 0  # records of the earlier run not reused (other settings or input)
    nulls: list[str] = field(default_factory=list)
    report_docs: int = 0
    audit_lines: list[str] = field(default_factory=list)
    flagged: int = 0  # documents an audit attack ranks at risk (exit code 3)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is so that its finished documents are kept."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM (what Dask and container schedulers send) raises
    :class:`Terminated` in the main thread instead of killing the process at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def delink_batch(
    delinker: Any,
    inputs: Sequence[Path],
    output: Path,
    *,
    made_by: str,
    group_of: Callable[[str], str | None],
    auditor: Any = None,
    report: Path | None = None,
    journal_mode: str = "new",
    progress: bool = False,
) -> BatchSummary:
    """Delink every document of ``inputs`` into ``output`` (JSONL, in input order).

    Every input record is checked before the first document is delinked.  Both files
    appear together, and only when the whole run succeeded; until then each finished
    record is kept in ``OUTPUT.partial`` (:class:`Journal`), whatever stops the run.

    Args:
        delinker: the :class:`~presidio_delink.pipeline.Delinker`.
        inputs: the input files or folders.
        output: the JSONL output.
        made_by: :func:`run_fingerprint` of this run.
        group_of: a document id's source group in the collection, or None (unknown).
        auditor: an :class:`~presidio_delink.attacks.audit.Auditor` for the documents
            with a known source, or None.
        report: an HTML report to write too, or None.
        journal_mode: ``"new"``, ``"fresh"`` or ``"resume"`` (see :class:`Journal`).
        progress: show a progress bar.
    """
    summary = BatchSummary()
    partial = output.with_name(output.name + ".partial")
    Journal.check(partial, journal_mode)
    total = plan_inputs(inputs, summary.nulls)
    journal = Journal(partial, journal_mode)
    results: list[DelinkResult] = []
    done = False
    try:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(atomic_output(output))
            page = stack.enter_context(atomic_output(report)) if report else None
            for rec, res in _records(delinker, inputs, total, journal, made_by, group_of,
                                     auditor, progress, summary):
                line = json.dumps(rec, ensure_ascii=False) + "\n"
                out.write(line)
                if res is not None:
                    journal.append(line)
                summary.written += 1
                summary.failed += bool(rec.get("failed"))
                if page is not None:
                    results.append(res if res is not None else _reused_result(rec))
            if page is not None:
                from presidio_delink.report import render

                page.write(render(results, source_ranks=auditor.ranks if auditor else None,
                              crowd=auditor.crowd if auditor else None))
                summary.report_docs = len(results)
        done = True
    except BaseException as exc:
        exc.batch_kept = journal.written + summary.reused  # type: ignore[attr-defined]
        raise
    finally:
        summary.redone = journal.stale
        journal.close(remove=done or journal.empty)  # an empty journal keeps nothing
    if auditor is not None:
        summary.audit_lines = auditor.lines()
        summary.flagged = auditor.flagged
    return summary


def _records(
    delinker: Any,
    inputs: Sequence[Path],
    total: int,
    journal: Journal,
    made_by: str,
    group_of: Callable[[str], str | None],
    auditor: Any,
    progress: bool,
    summary: BatchSummary,
) -> Iterator[tuple[dict[str, Any], DelinkResult | None]]:
    """``(record, result)`` in input order; ``result`` None for a reused record."""
    with doc_bar(progress, total) as tick:
        for doc_id, text in read_checked(inputs):
            group = group_of(doc_id)
            digest = input_digest(doc_id, text, group)
            old = journal.reuse(doc_id, made_by, digest)
            if old is not None:
                summary.reused += 1
                yield reused_record(old, auditor, doc_id, group), None
            else:
                res = delinker.delink_one(doc_id, text, group)
                yield record_of(res, auditor, group, made_by, digest), res
            tick()


def reused_record(
    old: dict[str, Any], auditor: Any, doc_id: str, group: str | None
) -> dict[str, Any]:
    """A record reused from the journal, its audit counted (and redone where it lacks an
    attack the auditor reads: :meth:`~presidio_delink.attacks.audit.Auditor.reuse`)."""
    if auditor is None or group is None:
        return old
    ranks = auditor.reuse(doc_id, group, old.get("source_ranks"), old.get("text"))
    return old if ranks is None else {**old, "source_ranks": ranks}


def record_of(
    res: DelinkResult, auditor: Any, group: str | None, made_by: str, digest: str
) -> dict[str, Any]:
    """A result's JSONL record: audited when its source ``group`` is known, with what made
    it and the digest of its input."""
    rec = res.to_json()
    if auditor is not None and group is not None and res.text is not None:
        rec["source_ranks"] = auditor.audit(res.id, res.text, group)
    rec["made_by"] = made_by
    rec["input_sha256"] = digest
    return rec


def _reused_result(rec: Mapping[str, Any], reused: bool = True) -> DelinkResult:
    """A stored record as the report shows it: its output and figures (the input after
    PII redaction and the linkable N-grams are not in a record)."""
    from presidio_delink.results import AuditEntry

    names = set(AuditEntry.__dataclass_fields__)
    return DelinkResult(
        id=str(rec["id"]),
        text=rec.get("text"),
        input_text="",
        passes=int(rec.get("passes", 0)),
        linkable_after=bool(rec.get("linkable_after")),
        failed=bool(rec.get("failed")),
        error=rec.get("error"),
        audit=[AuditEntry(**{k: v for k, v in a.items() if k in names})
               for a in rec.get("audit", [])],
        llm_calls=int(rec.get("llm_calls", 0)),
        seconds=float(rec.get("seconds", 0.0)),
        n_words=int(rec.get("words", 0)),
        optimum_words=int(rec.get("optimum_words", 0)),
        words_rewritten=int(rec.get("words_rewritten", 0)),
        words_redacted=int(rec.get("words_redacted", 0)),
        warnings=[*rec.get("warnings", []), *(["reused from an earlier run"] if reused else [])],
    )


@dataclass
class ReleaseSummary:
    """What :func:`release` wrote and held back (counts only)."""

    released: int = 0
    failed: int = 0  # failed documents (no text)
    linkable: int = 0  # still linkable under phrase search
    not_signed_off: int = 0  # a review export's documents nobody signed off
    reviewed: bool = False  # the input was a review export


def release(records: Path, output: Path) -> ReleaseSummary:
    """Write the file that may be shared: ``{"id", "text"}`` of each document of a
    ``delink`` output (or a review app export) that came out linkage-free and, for a
    review export, was signed off; no audit, no originals, no review trail.

    Raises:
        InputError: ``records`` is not a delink output or review export (file and line
            named).
    """
    summary = ReleaseSummary()
    for _rec in _release_records(records):  # all checked before anything is written
        summary.reviewed = summary.reviewed or "review" in _rec
    with atomic_output(output) as out:
        for rec in _release_records(records):
            if rec.get("failed") or rec["text"] is None:
                summary.failed += 1
            elif rec["linkable_after"]:
                summary.linkable += 1
            elif summary.reviewed and not (rec.get("review") or {}).get("signed_off"):
                summary.not_signed_off += 1
            else:
                out.write(json.dumps({"id": rec["id"], "text": rec["text"]},
                                     ensure_ascii=False) + "\n")
                summary.released += 1
    return summary


def _release_records(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                ok = isinstance(rec["id"], str) and "linkable_after" in rec and "text" in rec
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                raise InputError(
                    f"{path}:{n}: not a record of `delink` or of the review app's export"
                )
            yield rec


@dataclass(frozen=True)
class LLMOptions:
    """How a batch run reaches its LLM (see :func:`~presidio_delink.llm.make_rewriter`)."""

    spec: str = "none"
    cache_path: Path | None = None
    allow_remote: bool = False
    timeout: float | None = None


@dataclass(frozen=True)
class PIIOptions:
    """The optional Presidio PII step first (``redact``), and the checks of spaCy."""

    redact: bool = False
    spacy_model: str = DEFAULT_SPACY_MODEL
    risk_llm: str = "embedded:smollm2"
    risk_threshold: float | None = None
    pos_check: bool = False


def make_delinker(
    index: Any, settings: Any, llm: LLMOptions, pii: PIIOptions, monitor: Any = None
) -> tuple[Any, str]:
    """The :class:`~presidio_delink.pipeline.Delinker` of a batch run and its
    :func:`run_fingerprint`.

    Raises:
        ConfigError: ``k`` above the index's groups, a bad LLM spec, a missing model,
            ``mask_policy`` "risk" without the PII step.
    """
    from presidio_delink.llm import make_rewriter
    from presidio_delink.pipeline import Delinker

    check_options(index, settings, pii)
    rewriter = make_rewriter(
        llm.spec, cache_path=llm.cache_path, allow_remote=llm.allow_remote,
        timeout=llm.timeout, per_server=settings.llm_concurrency,
    )
    servers = _servers(rewriter)
    if servers > 1 and settings.llm_concurrency is not None:  # it was per server
        settings = settings.replace(llm_concurrency=settings.llm_concurrency * servers)
    analyzer = risk_filter = checks = None
    if pii.redact:
        from presidio_delink.presidio.engines import make_analyzer
        from presidio_delink.presidio.risk_filter import make_risk_filter

        analyzer = make_analyzer(pii.spacy_model)
        risk_filter = make_risk_filter(
            settings.mask_policy, pii.risk_llm, index, threshold=pii.risk_threshold,
            allow_remote=llm.allow_remote, timeout=llm.timeout,
        )
    if pii.pos_check and rewriter is not None:
        from presidio_delink.presidio.pos import PosCheck

        checks = PosCheck(pii.spacy_model)
        checks.load()  # a missing model fails now, not at the first rewrite
    delinker = Delinker(
        index, settings, rewriter=rewriter, analyzer=analyzer, risk_filter=risk_filter,
        monitor=monitor, fluency=checks,
    )
    return delinker, batch_fingerprint(index, settings, llm, pii, monitor is not None)


def _servers(rewriter: Any) -> int:
    """The servers of a :class:`~presidio_delink.llm.pool.RewriterPool` in the
    rewriter's ``.inner`` chain (1 without one)."""
    for _ in range(8):
        members = getattr(rewriter, "members", None)
        if isinstance(members, list):
            return len(members)
        rewriter = getattr(rewriter, "inner", None)
    return 1


def check_options(index: Any, settings: Any, pii: PIIOptions) -> None:
    """Refuse settings that cannot work with this index (:class:`ConfigError`)."""
    if settings.k > index.n_groups:
        raise ConfigError(
            f"-k {settings.k} is larger than the {index.n_groups} groups (documents) of the "
            "index: every phrase would be flagged"
        )
    if settings.mask_policy != "all" and not pii.redact:
        raise ConfigError("--mask-policy risk needs --redact-pii (it filters the PII spans)")


def batch_fingerprint(
    index: Any, settings: Any, llm: LLMOptions, pii: PIIOptions, monitor: bool = False
) -> str:
    """:func:`run_fingerprint` of a batch run with these options."""
    from presidio_delink.llm.prompt import TEMPLATE_ID

    with_llm = llm.spec.strip().lower() != "none"
    settings = settings.replace(rewrite=rewrite_for(settings.rewrite, with_llm))  # the mode run
    return run_fingerprint(
        index, settings, llm=llm.spec if with_llm else "none",
        template=TEMPLATE_ID if with_llm else None,
        pii={"redact": pii.redact, "model": pii.spacy_model if pii.redact else None,
             "risk_llm": pii.risk_llm if settings.mask_policy == "risk" else None,
             "risk_threshold": pii.risk_threshold, "pos_check": pii.pos_check},
        monitor=monitor,
    )

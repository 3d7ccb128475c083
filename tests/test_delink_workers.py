"""`delink --workers` and `--dask-scheduler`: the one-process run's output, kept work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from presidio_delink.cli import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
# a run's own cost: wall-clock seconds (no two runs share them) and tokens spent (a process
# answers a repeated request from its own cache)
TIMINGS = ("seconds", "llm_seconds", "prompt_tokens", "cached_tokens", "generated_tokens")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    idx = tmp_path_factory.mktemp("w") / "idx"
    res = CliRunner().invoke(main, ["index", "build", str(SAMPLES / "collection.jsonl"), "-o",
                                    str(idx), "--no-progress", "--workers", "1"])
    assert res.exit_code == 0, res.output
    return idx


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample documents, each also under 3 other ids (more parts than workers)."""
    docs = [json.loads(x) for x in (SAMPLES / "deidentified.jsonl").read_text().splitlines()]
    rows = [dict(d, id=f"{d['id']}" if i == 0 else f"{d['id']}~{i}")
            for i in range(4) for d in docs]
    p = tmp_path_factory.mktemp("in") / "many.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def delink(index_dir: Path, inp: Path, out: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["delink", "--index", str(index_dir), "--no-progress",
                                    str(inp), "-o", str(out), *args])
    return res.exit_code, res.output


def records(path: Path) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for key in TIMINGS:
            rec.pop(key)
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[str]:
    from ollama_compat_server import OllamaCompatServer
    from test_llm_http import FakeEngine

    with OllamaCompatServer(FakeEngine(), model="fake") as srv:
        yield f"openai:{srv.url}#fake"


@pytest.mark.parametrize("setting", ["none", "protect", "fake"])
def test_workers_give_the_one_process_output(
    index_dir: Path, many: Path, tmp_path: Path, setting: str, fake_llm: str
) -> None:
    args = {"none": ["--llm", "none"], "protect": ["--llm", "none", "--protect", "all"],
            "fake": ["--llm", fake_llm, "--rewrite", "generate"]}[setting]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    code1, out1 = delink(index_dir, many, one, *args)
    code2, out2 = delink(index_dir, many, two, *args, "--workers", "2")
    assert code1 == code2 and code1 in (0, 3), out1 + out2
    assert records(one) == records(two)
    # the same risk lines (the driver tallies the workers' audit)
    assert [x for x in out1.splitlines() if x.startswith("risk")] == [
        x for x in out2.splitlines() if x.startswith("risk")
    ]
    assert not (tmp_path / "two.jsonl.parts").exists()
    assert not (tmp_path / "two.jsonl.partial").exists()


def test_a_dask_cluster_gives_the_one_process_output(
    index_dir: Path, many: Path, tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    one, two = tmp_path / "one.jsonl", tmp_path / "dask.jsonl"
    assert delink(index_dir, many, one, "--llm", "none")[0] in (0, 3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster:
        code, out = delink(index_dir, many, two, "--llm", "none", "--dask-scheduler",
                           cluster.scheduler_address)
    assert code in (0, 3), out
    assert records(one) == records(two)


def test_a_stopped_spread_run_keeps_finished_parts_and_resumes(
    index_dir: Path, many: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from presidio_delink import distributed_delink as dd

    out = tmp_path / "out.jsonl"
    real = dd._copy_part
    calls = {"n": 0}

    def stop_after_two(path, journal):  # type: ignore[no-untyped-def]
        real(path, journal)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(dd, "_copy_part", stop_after_two)
        code, text = delink(index_dir, many, out, "--llm", "none", "--workers", "2")
    assert code == 2 and "kept the" in text, text
    kept = (tmp_path / "out.jsonl.partial").read_text().splitlines()
    assert kept and not out.exists()
    code, text = delink(index_dir, many, out, "--llm", "none", "--workers", "2", "--resume")
    assert code in (0, 3), text
    # a part being copied when the run stopped may be there twice
    assert f"{len({json.loads(x)['id'] for x in kept})} documents reused" in text
    ref = tmp_path / "ref.jsonl"
    delink(index_dir, many, ref, "--llm", "none")
    assert records(out) == records(ref)


def test_one_failing_document_does_not_fail_its_part(
    index_dir: Path, many: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from presidio_delink.batch import LLMOptions, PIIOptions, batch_fingerprint
    from presidio_delink.distributed_delink import DelinkJob, delink_part
    from presidio_delink.index import NgramIndex
    from presidio_delink.pipeline import Delinker
    from presidio_delink.settings import DelinkSettings

    real = Delinker.delink

    def broken(self, text, doc_id="", forbidden=(), **kw):  # type: ignore[no-untyped-def]
        if doc_id.endswith("~2"):
            raise RuntimeError("a bug")
        return real(self, text, doc_id, forbidden, **kw)

    monkeypatch.setattr(Delinker, "delink", broken)
    settings, llm, pii = DelinkSettings(k=2), LLMOptions("none"), PIIOptions()
    idx = NgramIndex.load(index_dir)
    job = DelinkJob(index_dir, None, settings, llm, pii, (many,), None,
                    batch_fingerprint(idx, settings, llm, pii), None, audit=False)
    part = tmp_path / "part.jsonl"
    counts = delink_part(job, 0, 20, part)
    recs = [json.loads(x) for x in part.read_text().splitlines()]
    assert counts["written"] == 20 and counts["failed"] == 5
    bad = [r for r in recs if r["id"].endswith("~2")]
    assert all(r["failed"] and r["text"] is None and r["error"] == "unexpected RuntimeError"
               for r in bad)
    assert all(not r["failed"] for r in recs if not r["id"].endswith("~2"))


def test_a_part_run_again_never_truncates_the_finished_one(
    index_dir: Path, many: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dask runs a finished part again when the worker holding its result dies, while the
    driver may be reading that part's file (to the journal, or into the output): the run
    again, here killed after one document, leaves the finished file whole."""
    from presidio_delink import distributed_delink as dd
    from presidio_delink.batch import LLMOptions, PIIOptions, batch_fingerprint
    from presidio_delink.index import NgramIndex
    from presidio_delink.settings import DelinkSettings

    settings, llm, pii = DelinkSettings(k=2), LLMOptions("none"), PIIOptions()
    idx = NgramIndex.load(index_dir)
    job = dd.DelinkJob(index_dir, None, settings, llm, pii, (many,), None,
                       batch_fingerprint(idx, settings, llm, pii), None, audit=False)
    part = tmp_path / "part-00000.jsonl"
    assert dd.delink_part(job, 0, 4, part)["written"] == 4
    whole = records(part)
    real, calls = dd._delinked, {"n": 0}

    def dies_at_the_second(*args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # the worker killed
        return real(*args)

    monkeypatch.setattr(dd, "_delinked", dies_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        dd.delink_part(job, 0, 4, part)
    assert records(part) == whole
    # what the dead attempt wrote is kept beside it, for a stopped run's journal
    (attempt,) = dd._attempts(part)
    assert records(attempt) == whole[:1]


def test_a_worker_killed_mid_part_loses_nothing(
    index_dir: Path, many: Path, tmp_path: Path
) -> None:
    """A Dask worker process killed (SIGKILL) while it delinks a part: the scheduler runs
    the part again elsewhere, its file is written anew, and the output is the one-process
    run's.  A slow fake LLM keeps the parts running long enough to be killed in."""
    distributed = pytest.importorskip("distributed")
    import os
    import signal
    import threading
    import time

    from ollama_compat_server import OllamaCompatServer
    from test_llm_http import FakeEngine

    class Slow(FakeEngine):
        def chat_completion(self, request: dict) -> dict:  # type: ignore[type-arg]
            time.sleep(0.2)
            return super().chat_completion(request)

    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    parts = tmp_path / "two.jsonl.parts"
    with OllamaCompatServer(Slow(), model="fake") as srv:
        llm = f"openai:{srv.url}#fake"
        assert delink(index_dir, many, one, "--llm", llm, "--rewrite", "generate")[0] in (0, 3)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None, host="127.0.0.1") as cluster, \
                distributed.Client(cluster) as client:
            got: dict[str, tuple[int, str]] = {}
            run = threading.Thread(target=lambda: got.update(r=delink(
                index_dir, many, two, "--llm", llm, "--rewrite", "generate", "--dask-scheduler",
                cluster.scheduler_address)))
            run.start()
            killed = False
            deadline = time.monotonic() + 300
            while run.is_alive() and not killed and time.monotonic() < deadline:
                # a part's file is renamed once complete: count the ones being written too
                written = [p for p in parts.glob("part-*") if p.stat().st_size] \
                    if parts.exists() else []
                if len(written) >= 2 and not two.exists():
                    pid = sorted(client.run(os.getpid).values())[0]
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                time.sleep(0.05)
            run.join(timeout=300)
    assert killed, "the run ended before a worker could be killed"
    code, out = got["r"]
    assert code in (0, 3), out
    assert records(one) == records(two)
    assert not parts.exists() and not (tmp_path / "two.jsonl.partial").exists()

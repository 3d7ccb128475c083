"""``index add --dask-scheduler``: a segment built on a Dask cluster is the plain add's."""

from __future__ import annotations

import filecmp
import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from presidio_delink import NgramIndex
from presidio_delink.cli import main

WORDS = ["a", "b", "c", "d", "e", "the", "court", "oslo", "sat", "in", "judge", "held"]


def _rows(seed: int, n: int, prefix: str) -> list[dict[str, str]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        text = " ".join(rnd.choice(WORDS) + rnd.choice(["", "", ".", ","])
                        for _ in range(rnd.randint(3, 30)))
        row = {"id": f"{prefix}{i}", "text": text}
        if rnd.random() < 0.6:
            row["group"] = f"g{rnd.randint(0, 5)}"  # some join the base's groups
        rows.append(row)
    return rows


def _jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _segment_files_differ(a: Path, b: Path) -> list[str]:
    """Files of segment ``a`` that differ in ``b``.  Allowed to differ: the build time in
    ``meta.json``, the readings' fingerprint of the index (a hash of ``meta.json``), and
    the ``.sig`` files that hold those files' digests."""
    assert sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()) == sorted(
        p.relative_to(b) for p in b.rglob("*") if p.is_file())
    diff = []
    for p in sorted(a.rglob("*")):
        rel = p.relative_to(a)
        if not p.is_file() or rel.suffix == ".sig":
            continue
        if rel.name in ("meta.json", "readings.json"):
            m1, m2 = (json.loads(x.read_text()) for x in (p, b / rel))
            for m in (m1, m2):
                m.pop("created" if rel.name == "meta.json" else "index")
            if m1 != m2:
                diff.append(str(rel))
        elif not filecmp.cmp(p, b / rel, shallow=False):
            diff.append(str(rel))
    return diff


def test_index_add_on_a_dask_cluster_equals_a_plain_add(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    run = CliRunner().invoke
    base = _jsonl(tmp_path / "base.jsonl", _rows(1, 30, "d"))
    new = _jsonl(tmp_path / "new.jsonl", _rows(2, 12, "n"))
    texts = _jsonl(tmp_path / "texts.jsonl", _rows(3, 4, "t") + _rows(2, 2, "n"))
    res = run(main, ["index", "build", str(base), "-o", str(tmp_path / "plain"),
                     "--max-n", "4", "--workers", "1", "--readings"])
    assert res.exit_code == 0, res.output
    shutil.copytree(tmp_path / "plain", tmp_path / "dask")
    res = run(main, ["index", "add", str(tmp_path / "plain"), str(new), "--workers", "1"])
    assert res.exit_code == 0, res.output
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        res = run(main, ["index", "add", str(tmp_path / "dask"), str(new),
                         "--dask-scheduler", cluster.scheduler_address])
    assert res.exit_code == 0, res.output

    plain, dask = (NgramIndex.load(tmp_path / n) for n in ("plain", "dask"))
    assert plain.doc_ids == dask.doc_ids
    assert plain.n_groups == dask.n_groups
    segs = [sorted(p for p in (tmp_path / n).iterdir() if p.is_dir() and p.name.startswith("seg-"))
            for n in ("plain", "dask")]
    assert len(segs[0]) == len(segs[1]) == 1
    # The segment (its N-grams and its count tables for the readings) is the plain add's.
    assert (segs[0][0] / "readings").is_dir()
    assert _segment_files_differ(segs[0][0], segs[1][0]) == []
    for args in (["-k", "2"], ["-k", "5", "--arity", "2"]):
        outs = []
        for n in ("plain", "dask"):
            r = run(main, ["check", "--index", str(tmp_path / n), *args, str(texts)])
            assert r.exit_code in (0, 1), r.output
            outs.append(r.stdout)
        assert outs[0] == outs[1]
        assert outs[0].strip()  # something was flagged, so the comparison means something

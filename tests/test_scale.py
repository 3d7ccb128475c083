"""One global key space: answers do not depend on shards, partitions, workers or Dask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import IndexFormatError, NgramIndex
from presidio_delink.errors import BuildError, InputError
from presidio_delink.index.format import PART_FILES
from presidio_delink.index.shard import partition_of
from presidio_delink.linkage import analyze

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
WORDS = ["a", "b", "c", "d", "e", "f"]
SEPS = [" ", " ", ", ", ". ", " [REDACTED] "]
text_st = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPS)), max_size=20).map(
    lambda parts: "".join(w + s for w, s in parts))


def keys(idx: NgramIndex) -> dict[str, dict[str, int]]:
    return {name: dict(v.iter_keys()) for name, v in idx.views.items()}


def reports(idx: NgramIndex, texts: list[str], arity: int = 3) -> list[object]:
    out = []
    for t in texts:
        rep = analyze(idx, t, k=2, arity=arity, exhaustive=True)
        out.append(([(f.key, f.view, f.df, f.arity, f.spans, f.docs) for f in rep.flagged],
                    rep.combination_docs))
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(text_st, min_size=1, max_size=8), shard_words=st.integers(1, 12),
       n_parts=st.integers(1, 5), query=text_st)
def test_shards_and_partitions_change_nothing(tmp_path_factory, docs, shard_words, n_parts, query) -> None:  # type: ignore[no-untyped-def]
    coll = [(f"d{i}", t) for i, t in enumerate(docs)]
    one = NgramIndex.build(coll, tmp_path_factory.mktemp("s") / "one", max_n=3)
    many = NgramIndex.build(coll, tmp_path_factory.mktemp("s") / "many", max_n=3,
                            shard_words=shard_words, n_parts=n_parts)
    # Global apriori storage: the same keys with the same document frequencies.
    assert keys(many) == keys(one)
    assert reports(many, [query, *docs[:2]]) == reports(one, [query, *docs[:2]])
    for name, v in many.views.items():
        for t in docs[:2]:
            for seg in v.tokenizer.word_segments(t):
                for i in range(len(seg)):
                    for n in range(1, 6):  # beyond max_n too
                        w = seg[i:i + n]
                        assert v.lookup(w).tolist() == one.views[name].lookup(w).tolist()


def _samples() -> list[tuple[str, str]]:
    lines = (SAMPLES / "collection.jsonl").read_text(encoding="utf-8").splitlines()
    return [(r["id"], r["text"]) for r in map(json.loads, lines)]


def _deid() -> list[str]:
    lines = (SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x)["text"] for x in lines][:3]


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(_samples(), tmp_path_factory.mktemp("x") / "single")


def test_sharded_partitioned_build_of_the_samples_is_identical(single, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    many = NgramIndex.build(_samples(), tmp_path / "many", shard_words=2000)
    assert len(many.meta["folds"][0]["doc_shards"]) > 10
    assert all(len(v.parts) > 10 for v in many.views.values())
    assert reports(many, _deid(), arity=1) == reports(single, _deid(), arity=1)


def test_parallel_build_is_identical(tmp_path: Path) -> None:
    # Enough documents for the process pool to take over tokenising (after the first 200)
    # and several shards for counting and writing in parallel.
    sents = [s for _, t in _samples() for s in t.split(". ")]
    docs = [(f"g{i}", ". ".join(sents[i * 7 : i * 7 + 7])) for i in range(450)]
    par = NgramIndex.build(docs, tmp_path / "par", shard_words=5_000, workers=2)
    seq = NgramIndex.build(docs, tmp_path / "seq", shard_words=5_000)
    assert len(par.meta["folds"][0]["doc_shards"]) > 2
    assert keys(par) == keys(seq)
    assert reports(par, _deid(), arity=1) == reports(seq, _deid(), arity=1)


def test_views_built_side_by_side_are_identical(single, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # One shard and one partition cannot keep two workers busy within a view, so the
    # views are built side by side, one per worker process: the same files.
    import presidio_delink.index.build as ib

    calls = []
    real = ib.build_views_side_by_side
    monkeypatch.setattr(
        ib, "build_views_side_by_side", lambda *a: calls.append(a[0].keys()) or real(*a)
    )
    par = NgramIndex.build(_samples(), tmp_path / "par", workers=2)
    assert len(calls) == 1 and list(calls[0]) == list(single.views)
    assert len(par.meta["folds"][0]["doc_shards"]) == 1
    assert all(len(v.parts) == 1 for v in par.views.values())
    assert keys(par) == keys(single)
    for name, view in single.views.items():
        for f in PART_FILES:
            assert (par.views[name].parts[0].own.directory / f).read_bytes() == (
                view.parts[0].own.directory / f
            ).read_bytes()
    assert reports(par, _deid(), arity=1) == reports(single, _deid(), arity=1)


def test_dask_build_reads_its_inputs_and_is_identical(single, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    distributed = pytest.importorskip("distributed")
    docs = _samples()
    parts = []
    for i in range(3):  # the input split into files, one task each
        p = tmp_path / f"part{i}.jsonl"
        p.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in docs[i::3]))
        parts.append(p)
    order = [d for i in range(3) for d in docs[i::3]]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        idx = NgramIndex.build_files(parts, tmp_path / "dask", dask_client=client,
                                     shard_words=20_000)
    ref = NgramIndex.build(order, tmp_path / "ref", shard_words=20_000)
    assert idx.doc_ids == ref.doc_ids
    assert keys(idx) == keys(ref)
    assert reports(idx, _deid(), arity=1) == reports(ref, _deid(), arity=1)


class _DyingClient:
    """A Dask client whose workers die at the n-th batch of tasks."""

    def __init__(self, die_at: int) -> None:
        self.calls = 0
        self.die_at = die_at

    def map(self, fn, *iterables, pure=False):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == self.die_at:
            raise RuntimeError("KilledWorker: worker tcp://127.0.0.1:1 died")
        return [fn(*a) for a in zip(*iterables, strict=True)]

    def gather(self, results):  # type: ignore[no-untyped-def]
        return results


@pytest.mark.parametrize("die_at", [1, 3, 9])
def test_a_dying_worker_fails_the_build_and_leaves_nothing(tmp_path: Path, die_at: int) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in _samples()[:8]))
    out = tmp_path / "i"
    with pytest.raises(BuildError, match="failed"):
        NgramIndex.build_files([src], out, dask_client=_DyingClient(die_at), shard_words=500)
    assert not out.exists()
    with pytest.raises(IndexFormatError):
        NgramIndex.load(out)


def _apriori(segments_per_doc: list[list[list[str]]], max_n: int) -> dict[str, dict[int, None]]:
    """Brute force: every N-gram's documents, then the apriori-stored ones (every word;
    a longer N-gram when its two (n-1)-grams are stored and in two or more documents)."""
    occ: dict[tuple[str, ...], dict[int, None]] = {}
    for d, segs in enumerate(segments_per_doc):
        for seg in segs:
            for i in range(len(seg)):
                for n in range(1, max_n + 1):
                    if i + n <= len(seg):
                        occ.setdefault(tuple(seg[i:i + n]), {})[d] = None
    stored: dict[str, dict[int, None]] = {}
    for g in sorted(occ, key=len):
        if len(g) == 1 or all(
            " ".join(s) in stored and len(stored[" ".join(s)]) >= 2 for s in (g[:-1], g[1:])
        ):
            stored[" ".join(g)] = occ[g]
    return stored


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(text_st, min_size=1, max_size=10), shard_words=st.integers(1, 15),
       n_parts=st.integers(1, 7))
def test_partitioned_merge_counts_exactly(tmp_path_factory, docs, shard_words, n_parts) -> None:  # type: ignore[no-untyped-def]
    # Each partition's keys are merged on their own (a task per partition, every shard's
    # codes of that partition): the keys and postings are those of a brute-force count.
    coll = [(f"d{i}", t) for i, t in enumerate(docs)]
    idx = NgramIndex.build(coll, tmp_path_factory.mktemp("m") / "i", max_n=4,
                           shard_words=shard_words, n_parts=n_parts,
                           views=["folded", "folded-cross"])
    for name, v in idx.views.items():
        want = _apriori([v.tokenizer.word_segments(t) for t in docs], 4)
        got = {k: v.lookup(k.split(" ")).tolist() for k, _ in v.iter_keys()}
        assert got == {k: sorted(d) for k, d in want.items()}, name
        if v.parts[0].parent is not None:
            continue  # stored over another view: its partitions hold differences only
        assert [p.own.n_keys for p in v.parts] == [
            sum(1 for k in want if partition_of(k.split(" ")[0], len(v.parts)) == p)
            for p in range(len(v.parts))
        ]


@pytest.mark.parametrize("task", ["count_shard", "merge_partition", "rank_shard"])
def test_a_worker_dying_mid_merge_fails_the_build(tmp_path: Path, task: str) -> None:
    class Dies(_DyingClient):
        def map(self, fn, *iterables, pure=False):  # type: ignore[no-untyped-def]
            if fn.__name__ == task and self.calls >= 1:
                raise RuntimeError("KilledWorker: worker tcp://127.0.0.1:1 died")
            self.calls += fn.__name__ == task
            return [fn(*a) for a in zip(*iterables, strict=True)]

    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in _samples()[:8]))
    out = tmp_path / "i"
    with pytest.raises(BuildError, match=f"failed.*{task}|{task}.*failed"):
        NgramIndex.build_files([src], out, dask_client=Dies(0), shard_words=500, n_parts=3)
    assert not out.exists()


GROUPED = [
    ("case1-a", "a b c d", "g1"), ("x-2", "b c d e", None), ("case1-b", "c d e f", "g1"),
    ("g1", "a b", None), ("y-3", "d e f a", "g2"), ("case4-a", "e f", None),
    ("z-4", "f a b", "g2"), ("w-5", "a c e", None),
]


@pytest.mark.parametrize(("shard_words", "n_parts"), [(1, 1), (1, 3), (5, 2), (3, 7)])
def test_document_table_does_not_depend_on_shards_or_partitions(
    tmp_path: Path, shard_words: int, n_parts: int
) -> None:
    # Ids and groups go through files split by shard and by partition (`doctable`): the
    # files and the groups are those of a single-process build, groups numbered by their
    # first document (a document without a group is its own, named by its id, even when
    # a given group has that name: "g1").
    one = NgramIndex.build(GROUPED, tmp_path / "one", max_n=2)
    many = NgramIndex.build(GROUPED, tmp_path / "many", max_n=2, shard_words=shard_words,
                            n_parts=n_parts)
    assert len(many.meta["folds"][0]["doc_shards"]) > 1
    for name in ("doc_ids.json", "groups.bin", "group_ids.json"):
        assert (many.directory / "docs" / name).read_bytes() == (
            one.directory / "docs" / name
        ).read_bytes(), name
    assert many.doc_ids == [d for d, _, _ in GROUPED]
    assert many.group_ids == ["g1", "x-2", "g1", "g2", "case4-a", "w-5"]
    assert many.group_of.tolist() == [0, 1, 0, 2, 3, 4, 3, 5]  # type: ignore[union-attr]
    assert many.meta["groups"]["max_group_size"] == 2
    assert many.doc_groups == one.doc_groups
    assert reports(many, ["a b c d e f"]) == reports(one, ["a b c d e f"])


@pytest.mark.parametrize(("shard_words", "n_parts"), [(1, 1), (2, 3), (100, 5)])
def test_a_repeated_id_is_found_across_shards_and_partitions(
    tmp_path: Path, shard_words: int, n_parts: int
) -> None:
    docs = [("a", "x y"), ("b", "y z"), ("c", "z x"), ("b", "x"), ("a", "y")]
    out = tmp_path / "i"
    # The first repeat in document order, as a one-pass build names it.
    with pytest.raises(InputError, match="duplicate document id 'b'"):
        NgramIndex.build(docs, out, shard_words=shard_words, n_parts=n_parts)
    assert not out.exists()


class _RecordingClient(_DyingClient):
    """Runs the tasks here and keeps everything the driver sends and receives, pickled."""

    def __init__(self) -> None:
        super().__init__(0)
        self.sent: list[tuple[str, bytes, bytes]] = []

    def map(self, fn, *iterables, pure=False):  # type: ignore[no-untyped-def]
        import pickle

        out = []
        for a in zip(*iterables, strict=True):
            res = fn(*a)
            self.sent.append((fn.__name__, pickle.dumps(a), pickle.dumps(res)))
            out.append(res)
        return out


def test_the_driver_never_holds_words_or_document_ids(tmp_path: Path) -> None:
    # On Dask the workers read the input; the driver sends and receives only paths and a
    # few numbers per shard and per partition: no word, no document id, no group passes
    # through it, however large the collection (its vocabulary and document table are
    # built in files by the tasks: `vocab`, `doctable`).
    words = [f"zqword{i}" for i in range(300)]
    src = tmp_path / "c.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i in range(60):
            text = " ".join(words[(i * 7 + j) % 300] for j in range(40))
            f.write(json.dumps({"id": f"zqdoc{i}", "text": text, "group": f"zqgroup{i % 9}"})
                    + "\n")
    client = _RecordingClient()
    idx = NgramIndex.build_files([src], tmp_path / "i", dask_client=client, shard_words=400,
                                 n_parts=3, max_n=3, views=["folded", "fine"])
    n_shards = len(idx.meta["folds"][0]["doc_shards"])
    assert n_shards >= 5
    for fn, args, res in client.sent:
        for blob in (args, res):
            assert b"zqword" not in blob and b"zqdoc" not in blob and b"zqgroup" not in blob, fn
        # O(shards + partitions): paths, file records, sizes.
        assert len(res) < 600 * (n_shards + 3), (fn, len(res))
        assert len(args) < 600 * (n_shards + 3), (fn, len(args))
    assert idx.doc_ids == [f"zqdoc{i}" for i in range(60)]
    assert idx.n_groups == 9

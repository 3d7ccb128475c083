"""`presidio-delink data convert` on small synthetic TAB-release files, then `eval --data`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from presidio_delink.cli import main
from presidio_delink.datasets import tab_collection, tab_test, wikibio_test

CONFIG = ["--no-semantic", "--fluency-docs", "0", "--no-html"]


def mention(text: str, phrase: str, etype: str, itype: str) -> dict[str, object]:
    a = text.index(phrase)
    return {"entity_type": etype, "identifier_type": itype, "start_offset": a,
            "end_offset": a + len(phrase), "span_text": phrase}


def echr_doc(doc_id: str, split: str, text: str, masks: list[tuple[str, str, str]]) -> dict[str, object]:
    half = len(masks) // 2
    return {
        "doc_id": doc_id,
        "text": text,
        "dataset_type": split,
        "annotations": {  # two annotators: the union is masked
            "annotator1": {"entity_mentions": [mention(text, *m) for m in masks[:half]]},
            "annotator2": {"entity_mentions": [mention(text, *m) for m in masks[half:]]},
        },
    }


def write(tmp: Path) -> tuple[Path, Path, Path]:
    test = [
        echr_doc("001-1", "test",
                 "The applicant, Mr John Smith, was born in 1960 and lives in Oslo. He was "
                 "arrested at the old ferry terminal of Bergen on a windy morning.",
                 [("John Smith", "PERSON", "DIRECT"), ("1960", "DATETIME", "QUASI"),
                  ("Oslo", "LOC", "QUASI"), ("Bergen", "LOC", "NO_MASK")]),
        echr_doc("001-2", "test",
                 "The applicant, Ms Anna Berg, is a teacher. She complained about the length "
                 "of the proceedings before the district court.",
                 [("Anna Berg", "PERSON", "DIRECT"), ("teacher", "DEM", "QUASI")]),
    ]
    train = [echr_doc("001-3", "train",
                      "The applicant complained about the length of the proceedings.", [])]
    wiki = [echr_doc("jane-doe", "test",
                     "Jane Doe (born 1970) is a Norwegian sculptor known for granite birds.",
                     [("Jane Doe", "PERSON", "DIRECT"), ("1970", "DATETIME", "QUASI")])]
    paths = tmp / "echr_test.json", tmp / "echr_train.json", tmp / "wiki_test.json"
    for p, docs in zip(paths, (test, train, wiki), strict=True):
        p.write_text(json.dumps(docs), encoding="utf-8")
    return paths


def test_convert_then_eval(tmp_path: Path) -> None:
    test, train, wiki = write(tmp_path)
    out = tmp_path / "data"
    runner = CliRunner()
    r = runner.invoke(main, ["data", "convert", "--tab", str(test), "--tab", str(train),
                             "--wiki", str(wiki), "--no-presidio-masks", "--no-progress",
                             "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (out / "tab").iterdir()) == [
        "tab_test_masks_manual_entity.json", "tab_test_texts.json", "tab_train_dev_texts.json"]
    masks = json.loads((out / "tab" / "tab_test_masks_manual_entity.json").read_text())
    assert [m[2] for m in masks["001-1"]] == ["PERSON", "DATETIME", "LOC"]  # not NO_MASK
    assert [d for d, _ in tab_collection(out)] == ["tab:001-1", "tab:001-2", "tab:001-3"]
    (_, original, deid), _ = list(tab_test("gold", out))
    assert "John Smith" in original and "John Smith" not in deid and "Bergen" in deid
    (wid, _, wdeid), = list(wikibio_test("manual", out))
    assert wid == "wiki:jane-doe" and "[REDACTED] (born [REDACTED])" in wdeid
    # the eval example of docs/cli.md, on the converted folder
    r = runner.invoke(main, ["eval", "--data", str(out), "--dataset", "tab-gold", "--dataset",
                             "wiki-manual", "-k", "2", "--arity", "1", "--llm", "none",
                             "--work-dir", str(tmp_path / "work"), "--out",
                             str(tmp_path / "eval-out"), *CONFIG])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "eval-out" / "tab-gold.json").is_file()


def test_convert_refuses_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "echr_test.json"
    bad.write_text(json.dumps({"not": "a list"}))
    r = CliRunner().invoke(main, ["data", "convert", "--tab", str(bad), "--no-presidio-masks",
                                  "-o", str(tmp_path / "d")])
    assert r.exit_code == 2 and "not a TAB release file" in r.output


def test_eval_without_data_says_what_to_do(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["eval", "--data", str(tmp_path), *CONFIG])
    assert r.exit_code == 2 and "data convert" in r.output


def test_a_jsonl_file_given_as_a_release_file_is_named_not_decoded(tmp_path: Path) -> None:
    bad = tmp_path / "docs.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n')
    res = CliRunner().invoke(main, ["data", "convert", "--tab", str(bad), "-o",
                                    str(tmp_path / "out"), "--no-presidio-masks"])
    assert res.exit_code == 2
    assert f"{bad}:2: not a JSON file" in res.output and "JSONL" in res.output
    assert "Extra data" not in res.output

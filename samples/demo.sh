#!/usr/bin/env bash
# The demo: the whole job on samples/, offline, with the default embedded LLM (plain
# `--llm embedded`; see docs/llm.md):
#  1. index the reference collection (40 TAB documents);
#  2. check the 5 de-identified samples against it (they link: exit code 1 is expected);
#  3. delink the two shortest of them (deterministic generalisations, verified candidates, the
#     LLM writing the names and phrases no candidate fits, verified
#     redaction fallback) -> samples/out/delinked.jsonl, with an HTML report
#     samples/out/report.html, and print a few before/after sentences; the audit says how
#     ranked (BM25) and near-verbatim search still rank the sources (exit code 3 when they
#     rank them first);
#  4. check the output again: nothing links (exit code 0);
#  5. release: samples/out/public.jsonl holds only the ids and texts that may be shared.
# Takes about 2 minutes after install on 2 quiet cores (longer on a busy machine).
# DEMO_DOCS=N delinks the N shortest samples instead. Writes only into samples/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS=
CLI=.venv/bin/presidio-delink
OUT=samples/out
rm -rf "$OUT" && mkdir -p "$OUT"
$CLI index build samples/collection.jsonl -o "$OUT/index" --no-progress
echo "== before: linkable N-grams (k=2) per document"
$CLI check --index "$OUT/index" -k 2 samples/deidentified.jsonl -o "$OUT/before.jsonl" || true
.venv/bin/python - "$OUT/before.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['id']}: linkable={r['linkable']}, {len(r['spans'])} linkable N-gram occurrences")
PY
.venv/bin/python - "${DEMO_DOCS:-2}" "$OUT/demo-input.jsonl" <<'PY'
import json, sys
from presidio_delink.io import atomic_output  # a 0600 temporary file, renamed into place
docs = [json.loads(line) for line in open("samples/deidentified.jsonl", encoding="utf-8")]
docs.sort(key=lambda d: len(d["text"]))
with atomic_output(sys.argv[2]) as out:
    for d in docs[: int(sys.argv[1])]:
        out.write(json.dumps(d, ensure_ascii=False) + "\n")
PY
unset PRESIDIO_DELINK_EMBEDDED_MODEL
echo "== delinking the ${DEMO_DOCS:-2} shortest samples with the default embedded model (--llm embedded)"
$CLI delink --index "$OUT/index" -k 2 --llm embedded --passes 2 "$OUT/demo-input.jsonl" \
  -o "$OUT/delinked.jsonl" --report "$OUT/report.html" --cache "$OUT/llm-cache.sqlite" \
  || [ $? -eq 3 ]  # 3: written and phrase-clean, but ranked search still finds the sources
.venv/bin/python - "$OUT/delinked.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['id']}: linkable_after={r['linkable_after']}, {r['words']} words, "
          f"{r['words_rewritten']} rewritten (candidate, generalisation or LLM), {r['words_redacted']} redacted "
          f"(optimum {r['optimum_words']}), {r['llm_calls']} LLM calls, "
          f"{r['prompt_tokens']} prompt / {r['generated_tokens']} generated tokens, "
          f"{r['seconds']:.1f} s")
    shown = 0
    for a in r["audit"]:
        if a["method"] != "redacted" and shown < 8:
            new = repr(a["replacement"]) if a["replacement"] else "(left out)"
            print(f"    {a['method']:11} {a['original']!r} -> {new}")
            shown += 1
PY
echo "== after: the output checked again"
$CLI check --index "$OUT/index" -k 2 "$OUT/delinked.jsonl" -o "$OUT/after.jsonl"
echo "== the file that may be shared: ids and texts only (delinked.jsonl and the report hold the removed phrases)"
$CLI release "$OUT/delinked.jsonl" -o "$OUT/public.jsonl"
echo "no phrase links below k=2 (the phrase guarantee; ranked and near-verbatim search: see the audit lines above); report: $OUT/report.html; shareable: $OUT/public.jsonl"

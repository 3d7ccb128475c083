#!/usr/bin/env bash
# The demo: the whole job on samples/, offline, with the small embedded LLM (SmolLM2-135M,
# `--llm embedded:smollm2`): the default embedded model, Qwen2.5-Coder-1.5B, rewrites far
# better but takes minutes per document on 2 cores (see README, "Rewriting").
#  1. index the reference collection (40 TAB documents);
#  2. check the 5 de-identified samples against it (they link: exit code 1 is expected);
#  3. delink them (LLM rewrites + verified redaction fallback) -> samples/out/delinked.jsonl,
#     with an HTML report samples/out/report.html; the audit says how ranked (BM25) and
#     near-verbatim search still rank the sources (exit code 3 when they rank them first);
#  4. check the output again: nothing links (exit code 0).
# Takes about 5 minutes on 2 cores (about 2 s per LLM call). Writes only into samples/out/.
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
echo "== delinking with the small embedded model (embedded:smollm2; plain 'embedded' is Qwen)"
$CLI delink --index "$OUT/index" -k 2 --llm embedded:smollm2 --passes 1 samples/deidentified.jsonl \
  -o "$OUT/delinked.jsonl" --report "$OUT/report.html" --cache "$OUT/llm-cache.sqlite" \
  || [ $? -eq 3 ]  # 3: written and phrase-clean, but ranked search still finds the sources
.venv/bin/python - "$OUT/delinked.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['id']}: linkable_after={r['linkable_after']}, {r['words']} words, "
          f"{r['words_rewritten']} rewritten by the LLM, {r['words_redacted']} redacted "
          f"(optimum {r['optimum_words']}), {r['llm_calls']} LLM calls, {r['seconds']:.1f} s")
PY
echo "== after: the output checked again"
$CLI check --index "$OUT/index" -k 2 "$OUT/delinked.jsonl" -o "$OUT/after.jsonl"
echo "nothing links below k=2; report: $OUT/report.html"

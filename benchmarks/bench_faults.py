"""Benchmark of the hanging-LLM-server case (issue 10): bounded time, linkage-free output.

An HTTP server on 127.0.0.1 accepts every connection and never answers
(``tests/fault_servers.py``, mode ``hang``). ``presidio-delink delink`` runs as a
subprocess, as a user would, on the first 3 de-identified sample documents against the
index of ``samples/collection.jsonl`` (built first, not timed) with
``--llm ollama:m --llm-timeout 5`` (``--backend openai`` for the OpenAI-compatible one).

Without a timeout and a circuit breaker each sentence call waited 3 x 60 s; the target is
the whole run (process start to exit, imports and index load included) under 60 s, every
document linkage-free (checked again with ``analyze``). Expected: 3 calls of 5 s, then the
backend counts as down and the rest is redacted, about 15 s plus start-up.

    python benchmarks/bench_faults.py [--timeout 5] [--backend ollama|openai]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fault_servers import FaultServer  # noqa: E402

from presidio_delink import NgramIndex  # noqa: E402
from presidio_delink.io import read_documents  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402

TARGET_S = 60.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=5.0, help="--llm-timeout (seconds)")
    ap.add_argument("--backend", choices=("ollama", "openai"), default="ollama")
    ap.add_argument("--docs", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        work = Path(tmp)
        index = NgramIndex.build(read_documents(ROOT / "samples" / "collection.jsonl"),
                                 work / "idx")
        lines = (ROOT / "samples" / "deidentified.jsonl").read_text(encoding="utf-8")
        docs = work / "in.jsonl"
        docs.write_text("\n".join(lines.splitlines()[: args.docs]) + "\n", encoding="utf-8")
        out = work / "out.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
        with FaultServer("hang") as srv:
            if args.backend == "ollama":
                env["OLLAMA_HOST"] = srv.url
                llm = "ollama:m"
            else:
                llm = f"openai:{srv.url}#m"
            cmd = [
                sys.executable, "-c", "from presidio_delink.cli import main; main()",
                "delink", "--index", str(work / "idx"), "--llm", llm,
                "--llm-timeout", str(args.timeout), "--no-progress", str(docs), "-o", str(out),
            ]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            elapsed = time.perf_counter() - t0
            posts = srv.posts
        recs = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        clean = all(
            not r["failed"] and r["text"] is not None
            and not analyze(index, r["text"], k=2).linkable
            for r in recs
        )
    warnings = [x for x in proc.stderr.splitlines() if x.startswith("WARNING")]
    print(f"backend {args.backend}, --llm-timeout {args.timeout:g}, {len(recs)} documents")
    print(f"exit code {proc.returncode}; requests to the hanging server: {posts}; "
          f"LLM calls recorded: {sum(r['llm_calls'] for r in recs)}")
    print(f"warnings on stderr: {len(warnings)}")
    for w in warnings:
        print(f"  {w}")
    print(f"linkage-free: {clean}")
    verdict = "PASS" if elapsed < TARGET_S and clean and proc.returncode == 0 else "FAIL"
    print(f"whole run: {elapsed:.1f} s (target < {TARGET_S:.0f} s): {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

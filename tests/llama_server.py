"""A real llama.cpp OpenAI-compatible server (xllamacpp) in a child process, for the
server and server-pool tests: started on 127.0.0.1 with a random port and API key, and
killed at will (a server going down)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

_CHILD = textwrap.dedent(
    """
    import sys, time
    import xllamacpp as x
    p = x.CommonParams()
    p.model.path = sys.argv[1]
    p.n_ctx = 4096
    p.n_parallel = 2
    p.cpuparams.n_threads = 1
    p.cpuparams_batch.n_threads = 1
    p.sampling.temp = 0.0
    p.sampling.seed = 42
    p.n_predict = 256
    p.warmup = False
    p.verbosity = 0
    p.ui = False
    p.api_keys = [sys.argv[2]]
    server = x.Server(p)
    print(server.listening_address, flush=True)
    while True:
        time.sleep(3600)
    """
)


class LlamaServer:
    """``with LlamaServer(gguf, key) as srv: srv.url``; :meth:`kill` takes it down."""

    def __init__(self, gguf: str, key: str) -> None:
        self.gguf = gguf
        self.key = key
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> LlamaServer:
        env = dict(os.environ, OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, self.gguf, self.key],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.kill()
            raise RuntimeError(f"llama.cpp server did not start (said {line!r})")
        self.url = line
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __exit__(self, *exc: Any) -> None:
        self.kill()

"""Serves a GGUF file over llama.cpp's own OpenAI-compatible HTTP server
(the `xllamacpp` package from PyPI, which embeds it), for
`benches/local_llm.rs`'s HTTP leg.

    python serve.py MODEL.gguf PORT THREADS [SLOTS]

SLOTS requests are served at once (continuous batching), each with a
4096-token context.
"""
import sys
import time

import xllamacpp

model, port, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
slots = int(sys.argv[4]) if len(sys.argv) > 4 else 1
params = xllamacpp.CommonParams()
params.model.path = model
params.n_ctx = 4096 * slots
params.n_parallel = slots
params.port = port
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
server = xllamacpp.Server(params)
print(f"listening {server.listening_address}", flush=True)
while True:
    time.sleep(3600)

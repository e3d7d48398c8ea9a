"""Serves a GGUF file over llama.cpp's own OpenAI-compatible HTTP server
(the `xllamacpp` package from PyPI, which embeds it), for
`benches/local_llm.rs`'s HTTP leg.

    python serve.py MODEL.gguf PORT THREADS
"""
import sys
import time

import xllamacpp

model, port, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
params = xllamacpp.CommonParams()
params.model.path = model
params.n_ctx = 4096
params.n_parallel = 1
params.port = port
params.cpuparams.n_threads = threads
params.cpuparams_batch.n_threads = threads
server = xllamacpp.Server(params)
print(f"listening {server.listening_address}", flush=True)
while True:
    time.sleep(3600)

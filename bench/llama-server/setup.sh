#!/usr/bin/env bash
# Starts llama.cpp's own OpenAI-compatible server on a GGUF file, with no
# build: the PyPI package `xllamacpp` embeds it. Installs it into
# bench/llama-server/.venv on first use, starts the server in the
# background and prints its base URL, for
#   LLAMA_SERVER_URL=<url> cargo bench --features local-llm --bench local_llm
#
#   bench/llama-server/setup.sh MODEL.gguf [PORT] [THREADS] [SLOTS]
# (SLOTS: requests served at once, default 1; `hermes eval --concurrency N`
# against it wants N.)
# Stop it with: kill "$(cat bench/llama-server/server.pid)"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
model="${1:?usage: $0 MODEL.gguf [PORT] [THREADS]}"
port="${2:-18080}"
threads="${3:-$(nproc)}"
slots="${4:-1}"
[ -f "$model" ] || { echo "no model file at $model (hermes model pull 1.5b)" >&2; exit 1; }
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install --quiet xllamacpp >&2
fi
"$here/.venv/bin/python" "$here/serve.py" "$model" "$port" "$threads" "$slots" > "$here/server.log" 2>&1 &
echo $! > "$here/server.pid"
for _ in $(seq 1 120); do
  if grep -q "^listening" "$here/server.log" 2>/dev/null; then
    echo "http://127.0.0.1:$port/v1"
    exit 0
  fi
  kill -0 "$(cat "$here/server.pid")" 2>/dev/null || { cat "$here/server.log" >&2; exit 1; }
  sleep 0.5
done
echo "the server did not start within 60 s; see $here/server.log" >&2
exit 1

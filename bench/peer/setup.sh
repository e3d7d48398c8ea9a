#!/usr/bin/env bash
# Creates bench/peer/.venv with the LangGraph peer's pinned packages.
# Needs python3 (3.10 or newer) with venv, and PyPI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
    "$python" -m venv "$here/.venv"
fi
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$here/.venv/bin/python" -c 'import langgraph, langchain_openai; print("peer ready:", "'"$here"'/.venv")'

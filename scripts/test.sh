#!/usr/bin/env bash
# The test command (README, CI): installs what the tests need when it is
# missing, then runs every test. Extra arguments go to `cargo test`.
#   - chromium: renders the eval HTML report (tests/eval_report.rs)
#   - @modelcontextprotocol/server-everything: a real MCP server (tests/tools_mcp.rs)
#   - python3-venv, then Arize Phoenix from PyPI in .venv-phoenix: a real
#     trace backend (tests/trace_backend.rs; it skips without one unless CI is set)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v chromium >/dev/null || need+=(chromium)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "installing ${need[*]} (needed by the tests)" >&2
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -x .ci/node/node_modules/.bin/mcp-server-everything ]; then
  echo "installing the MCP test server under .ci/node" >&2
  npm install --no-audit --no-fund --silent --prefix .ci/node @modelcontextprotocol/server-everything@2026.8.31
fi

# Phoenix for tests/trace_backend.rs (first time: several minutes; then a no-op).
scripts/trace-backend.sh install >&2 || echo "Phoenix not installed: tests/trace_backend.rs will skip (or fail if CI is set)" >&2

exec cargo test --release --no-fail-fast "$@"

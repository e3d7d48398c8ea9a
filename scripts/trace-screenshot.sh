#!/usr/bin/env bash
# Regenerates docs/trace.png, the README's picture of one `hermes plan`
# trace (planner and two executors) in Phoenix's UI: runs the trace_backend
# test (which starts Phoenix through scripts/trace-backend.sh) with
# HERMES_TRACE_SCREENSHOT set, so headless Chromium photographs the trace.
#   scripts/trace-screenshot.sh [OUT.png]     (default docs/trace.png)
# Needs: chromium (Debian: apt-get install chromium), Python >= 3.11 for
# Phoenix. HERMES_TRACE_SCREENSHOT_SIZE=W,H sets the window (1600,1250).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-docs/trace.png}")"
command -v chromium >/dev/null || { echo "trace-screenshot: needs chromium (apt-get install chromium)" >&2; exit 1; }
# CI=1: fail rather than skip when Phoenix cannot be installed.
CI=1 HERMES_TRACE_SCREENSHOT="$out" cargo test --release --test trace_backend -- --nocapture
echo "wrote $out ($(du -k "$out" | cut -f1) KB)"

#!/usr/bin/env bash
# Hermes against LangGraph on the same scripted OpenAI-compatible server, in one run:
# builds hermes (release), starts `hermes bench serve`, runs `hermes bench http
# --base-url` and the LangGraph peer (bench/peer/langgraph_agent.py) against it at
# CONCURRENCY tasks at once, and prints both figures and the ratios.
#
#   bench/compare.sh                      # 50 at once; 2000 Hermes tasks, 200 LangGraph tasks
#   CONCURRENCY=50 HERMES_TASKS=2000 PEER_TASKS=200 ROUNDS=10 bench/compare.sh
#
# The task counts differ so that each side runs for seconds, not minutes (the
# figures are rates); the concurrency and the script are the same. Needs cargo and
# python3 (3.10+); the first run creates bench/peer/.venv from PyPI (setup.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
concurrency="${CONCURRENCY:-50}"
hermes_tasks="${HERMES_TASKS:-2000}"
peer_tasks="${PEER_TASKS:-200}"
rounds="${ROUNDS:-10}"
target="${CARGO_TARGET_DIR:-$root/target}"

(cd "$root" && cargo build --release --quiet)
hermes="$target/release/hermes"
python="$root/bench/peer/.venv/bin/python"
[ -x "$python" ] || "$root/bench/peer/setup.sh"

out="$(mktemp -d)"
"$hermes" bench serve --port 0 --rounds "$rounds" >"$out/url" 2>"$out/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do
    [ -s "$out/url" ] && break
    sleep 0.1
done
url="$(head -n 1 "$out/url")"
[ -n "$url" ] || { echo "error: the scripted server did not start:" >&2; cat "$out/serve.log" >&2; exit 1; }
echo "scripted server: $url ($rounds rounds per task, $concurrency tasks at once)"

"$hermes" bench http --base-url "$url" --tasks "$hermes_tasks" --concurrency "$concurrency" \
    --rounds "$rounds" --json | tail -n 1 >"$out/hermes.json"
"$python" "$root/bench/peer/langgraph_agent.py" --base-url "$url" --tasks "$peer_tasks" \
    --concurrency "$concurrency" --rounds "$rounds" | tail -n 1 >"$out/langgraph.json"

"$python" - "$out/hermes.json" "$out/langgraph.json" <<'PY'
import json, sys
h, l = (json.load(open(p)) for p in sys.argv[1:3])
rows = [
    ("tasks (finished)", f"{h['tasks']} ({h['finished']})", f"{l['tasks']} ({l['finished']})", ""),
    ("rounds/s", f"{h['rounds_per_sec']:,.0f}", f"{l['rounds_per_sec']:,.0f}",
     f"Hermes / LangGraph = {h['rounds_per_sec'] / l['rounds_per_sec']:.1f}x"),
    ("client CPU per round", f"{h['cpu_per_round_us']:,.0f} us", f"{l['cpu_per_round_us']:,.0f} us",
     f"LangGraph / Hermes = {l['cpu_per_round_us'] / h['cpu_per_round_us']:.1f}x"),
    ("round p50 / p99", f"{h['latency_p50_ms']:.2f} / {h['latency_p99_ms']:.2f} ms",
     f"{l['latency_p50_ms']:.2f} / {l['latency_p99_ms']:.2f} ms", ""),
    ("peak RSS", f"{h['peak_rss_mib']:.1f} MiB", f"{l['peak_rss_mib']:.1f} MiB",
     f"LangGraph / Hermes = {l['peak_rss_mib'] / h['peak_rss_mib']:.1f}x"),
]
print(f"{'':22} {'Hermes':>18} {'LangGraph':>18}   ratio")
for name, a, b, ratio in rows:
    print(f"{name:22} {a:>18} {b:>18}   {ratio}")
print("json:", json.dumps({"hermes": h, "langgraph": l}))
PY

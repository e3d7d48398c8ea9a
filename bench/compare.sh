#!/usr/bin/env bash
# Hermes against its peers on the same scripted OpenAI-compatible server, in one run:
# builds hermes (release) and the Rust peers (bench/peer/rig_agent, bench/peer/autoagents_agent),
# starts `hermes bench serve`, runs `hermes bench http --base-url`, the rig and AutoAgents
# agents and the LangGraph peer (bench/peer/langgraph_agent.py) against it at CONCURRENCY
# tasks at once, and prints one table (a column per framework) and the ratios of Hermes
# against each peer. Every client's memory is also sampled from outside, the same way for
# each (bench/peer/peak_memory.py: peak VmRSS and peak RssAnon from /proc every 10 ms), so the
# table shows what each framework allocates apart from the pages of its own binary.
#
#   bench/compare.sh                      # 50 at once; 2000 Hermes, 1000 rig/AutoAgents, 200 LangGraph tasks
#   CONCURRENCY=1 bench/compare.sh        # one task at a time
#   CONCURRENCY=50 HERMES_TASKS=2000 RUST_PEER_TASKS=1000 PEER_TASKS=200 ROUNDS=10 bench/compare.sh
#   PEERS="rig autoagents" bench/compare.sh   # a subset of the peers (default: rig autoagents langgraph)
#   HERMES_BIN=target/release/hermes bench/compare.sh   # that binary, without building hermes
#
# The task counts differ so that each side runs for seconds, not minutes (the
# figures are rates); the concurrency and the script are the same. Needs cargo and
# python3 (3.10+); the first run creates bench/peer/.venv from PyPI (setup.sh), and
# the Rust peers' first build fetches their pinned crates (Cargo.lock) from crates.io.
# Their build goes to CARGO_TARGET_DIR when it is set, else to bench/peer/<peer>/target.
# A peer that does not build or run (or runs past PEER_TIMEOUT seconds, default 900) is
# reported in its column; the others still run.
#
# WORKLOAD=plan compares multi-agent work instead of one loop: one task planned by one model
# call into SUBTASKS independent subtasks over ROLES roles, every subtask at once on an agent
# of its role (read_file until its answer, ROUNDS rounds), then one call for the team's answer;
# the server waits LATENCY_MS per answer. Hermes runs `hermes bench plan --base-url` (its planner
# and executor actors), each peer its own planner-and-executors program (bench/peer/*_plan*);
# each side runs the task REPEAT times one after another and the table shows the median.
#
#   WORKLOAD=plan bench/compare.sh        # 100 subtasks over 4 roles, 3 rounds each, 100 ms model, 3 runs
#   WORKLOAD=plan SUBTASKS=100 ROLES=4 ROUNDS=3 LATENCY_MS=100 REPEAT=3 bench/compare.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
concurrency="${CONCURRENCY:-50}"
hermes_tasks="${HERMES_TASKS:-2000}"
peer_tasks="${PEER_TASKS:-200}"
rust_peer_tasks="${RUST_PEER_TASKS:-1000}"
workload="${WORKLOAD:-loop}"
case "$workload" in
    loop) rounds="${ROUNDS:-10}"; latency_ms="${LATENCY_MS:-0}"; suffix=agent ;;
    plan) rounds="${ROUNDS:-3}"; latency_ms="${LATENCY_MS:-100}"; suffix=plan ;;
    *) echo "error: WORKLOAD is loop or plan, not $workload" >&2; exit 1 ;;
esac
subtasks="${SUBTASKS:-100}"
roles="${ROLES:-4}"
repeat="${REPEAT:-3}"
peers="${PEERS:-rig autoagents langgraph}"
peer_timeout="${PEER_TIMEOUT:-900}"
target="${CARGO_TARGET_DIR:-$root/target}"

wanted() { [[ " $peers " == *" $1 "* ]]; }

out="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

# Why a peer has no figures: one line, shown in its column.
fail() { printf '%s\n' "$2" >"$out/$1.err"; echo "warning: $1: $2" >&2; }

if [ -n "${HERMES_BIN:-}" ]; then
    hermes="$HERMES_BIN"    # a hermes already built: no build here
else
    (cd "$root" && cargo build --release --quiet)
    hermes="$target/release/hermes"
fi

# The Rust peers: each a Cargo project of its own, with its Cargo.lock.
for peer in rig autoagents; do
    wanted "$peer" || continue
    project="$root/bench/peer/${peer}_agent"
    peer_target="${CARGO_TARGET_DIR:-$project/target}"
    started=$SECONDS
    if cargo build --release --quiet --locked --manifest-path "$project/Cargo.toml" \
        --target-dir "$peer_target" 2>"$out/$peer.build.log"; then
        printf -v "bin_$peer" '%s' "$peer_target/release/${peer}_$suffix"
        echo "built ${peer}_agent ($((SECONDS - started)) s)"
    else
        fail "$peer" "build failed: $(grep -m1 '^error' "$out/$peer.build.log" || tail -n 1 "$out/$peer.build.log")"
        cat "$out/$peer.build.log" >&2
    fi
done

python="$root/bench/peer/.venv/bin/python"
if wanted langgraph && [ ! -x "$python" ]; then
    "$root/bench/peer/setup.sh" || fail langgraph "setup failed (bench/peer/setup.sh: python3 with venv, and PyPI)"
fi

"$hermes" bench serve --port 0 --rounds "$rounds" --latency-ms "$latency_ms" >"$out/url" 2>"$out/serve.log" &
server=$!
for _ in $(seq 50); do
    [ -s "$out/url" ] && break
    sleep 0.1
done
url="$(head -n 1 "$out/url")"
[ -n "$url" ] || { echo "error: the scripted server did not start:" >&2; cat "$out/serve.log" >&2; exit 1; }

# run_peer NAME WHAT COMMAND...: runs the peer's command (its flags included) and keeps its JSON
# line, or why there is none. A plan peer exits 1 when a subtask did not finish; its report
# still stands, and says so.
run_peer() {
    local name="$1" what="$2"
    shift 2
    [ -e "$out/$name.err" ] && return 0
    echo "running $name ($what)"
    local rc=0 limit=()
    command -v timeout >/dev/null && limit=(timeout "$peer_timeout")
    local sample=()
    [ "$workload" = loop ] && sample=(python3 "$root/bench/peer/peak_memory.py" "$out/$name.mem" --)
    ${limit[@]+"${limit[@]}"} ${sample[@]+"${sample[@]}"} "$@" >"$out/$name.out" 2>"$out/$name.log" || rc=$?
    if [ "$rc" -ne 0 ] && { [ "$workload" = loop ] || [ ! -s "$out/$name.out" ]; }; then
        local why
        why="$(tail -n 1 "$out/$name.log")"
        [ "$rc" -eq 124 ] && why="timed out after ${peer_timeout} s"
        fail "$name" "run failed (exit $rc): ${why:-no message}"
        return 0
    fi
    tail -n 1 "$out/$name.out" >"$out/$name.json"
    # Warnings (failed tasks) stay visible.
    grep -i '^warning' "$out/$name.log" >&2 || true
}

if [ "$workload" = plan ]; then
    echo "scripted server: $url ($subtasks subtasks over $roles roles, $rounds rounds each, ${latency_ms} ms a call, $repeat runs)"
    for _ in $(seq "$repeat"); do
        "$hermes" bench plan --base-url "$url" --subtasks "$subtasks" --roles "$roles" --json \
            2>>"$out/hermes.log" | tail -n 1 >>"$out/hermes.jsonl" || true
    done
    for peer in rig autoagents; do
        wanted "$peer" || continue
        bin="bin_$peer"
        run_peer "$peer" "$repeat runs" "${!bin:-false}" --base-url "$url" --subtasks "$subtasks" \
            --roles "$roles" --repeat "$repeat"
    done
    if wanted langgraph; then
        run_peer langgraph "$repeat runs" "$python" "$root/bench/peer/langgraph_plan.py" \
            --base-url "$url" --subtasks "$subtasks" --roles "$roles" --repeat "$repeat"
    fi
    table_python="$python"
    [ -x "$table_python" ] || table_python="python3"
    "$table_python" "$root/bench/peer/plan_table.py" "$out" "$peers" "$latency_ms" "$rounds"
    exit 0
fi
echo "scripted server: $url ($rounds rounds per task, $concurrency tasks at once)"

python3 "$root/bench/peer/peak_memory.py" "$out/hermes.mem" -- \
    "$hermes" bench http --base-url "$url" --tasks "$hermes_tasks" --concurrency "$concurrency" \
    --rounds "$rounds" --json | tail -n 1 >"$out/hermes.json"

for peer in rig autoagents; do
    wanted "$peer" || continue
    bin="bin_$peer"
    run_peer "$peer" "$rust_peer_tasks tasks" "${!bin:-false}" --base-url "$url" \
        --tasks "$rust_peer_tasks" --concurrency "$concurrency" --rounds "$rounds"
done
if wanted langgraph; then
    run_peer langgraph "$peer_tasks tasks" "$python" "$root/bench/peer/langgraph_agent.py" \
        --base-url "$url" --tasks "$peer_tasks" --concurrency "$concurrency" --rounds "$rounds"
fi

table_python="$python"
[ -x "$table_python" ] || table_python="python3"
"$table_python" - "$out" "$peers" <<'PY'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
wanted = sys.argv[2].split()
names = {"hermes": "Hermes", "rig": "rig", "autoagents": "AutoAgents", "langgraph": "LangGraph"}
columns = ["hermes"] + [k for k in ("rig", "autoagents", "langgraph") if k in wanted]


def load(key):
    """The column's figures, or why it has none; with the memory that
    bench/peer/peak_memory.py sampled from outside (the same way for every
    column) as `sampled_rss_mib` and `sampled_anon_mib` when it ran."""
    err = out / f"{key}.err"
    if err.exists():
        return None, err.read_text().strip()
    try:
        d = json.loads((out / f"{key}.json").read_text())
    except (OSError, ValueError) as e:
        return None, f"no figures ({e.__class__.__name__})"
    try:
        mem = json.loads((out / f"{key}.mem").read_text())
        d["sampled_rss_mib"] = mem["peak_rss_kib"] / 1024
        d["sampled_anon_mib"] = mem["peak_anon_kib"] / 1024
    except (OSError, ValueError, KeyError):
        pass
    return d, None


data = {k: load(k) for k in columns}
width = 22


def cell(key, show):
    d, why = data[key]
    if d is None:
        return "-"
    try:
        return show(d)
    except (KeyError, TypeError, ZeroDivisionError):
        return "-"


def shorten(text, n=width):
    return text if len(text) <= n else text[: n - 1] + "~"


def limits(d):
    """What the peer could not do as the task asks: its own `limits`, and
    tasks that did not finish."""
    notes = []
    if d.get("limits"):
        notes.append(d["limits"])
    if d.get("finished", 0) < d.get("tasks", 0):
        notes.append(f"{d['tasks'] - d['finished']} tasks unfinished")
    if d.get("rounds", 0) != d.get("tasks", 0) * d.get("rounds_per_task", 0):
        notes.append(f"{d['rounds']} of {d['tasks'] * d['rounds_per_task']} rounds")
    return "; ".join(notes) or "none"


rows = [
    ("status", lambda k: "ok" if data[k][0] is not None else shorten(data[k][1].split(":")[0])),
    ("tasks (finished)", lambda k: cell(k, lambda d: f"{d['tasks']} ({d['finished']})")),
    ("rounds/s", lambda k: cell(k, lambda d: f"{d['rounds_per_sec']:,.0f}")),
    ("client CPU per round", lambda k: cell(k, lambda d: f"{d['cpu_per_round_us']:,.0f} us")),
    ("round p50 / p99", lambda k: cell(k, lambda d: f"{d['latency_p50_ms']:.2f} / {d['latency_p99_ms']:.2f} ms")),
    ("peak RSS", lambda k: cell(k, lambda d: f"{d['peak_rss_mib']:.1f} MiB")),
    # Sampled from outside every 10 ms: all of it, and the anonymous part
    # (heap and stacks, without the program's own mapped binary).
    ("peak RSS / anonymous", lambda k: cell(k, lambda d: f"{d['sampled_rss_mib']:.1f} / {d['sampled_anon_mib']:.1f} MiB")),
    ("limits", lambda k: cell(k, lambda d: shorten(limits(d)))),
]
print(f"{'':22}" + "".join(f" {names[k]:>{width}}" for k in columns))
for label, show in rows:
    print(f"{label:22}" + "".join(f" {show(k):>{width}}" for k in columns))

# Long texts (a failure, a limit) in full, under the table.
for k in columns:
    d, why = data[k]
    if d is None:
        print(f"  {names[k]}: {why}")
    elif limits(d) != "none" and len(limits(d)) > width:
        print(f"  {names[k]} limits: {limits(d)}")

h = data["hermes"][0]
print()
for k in columns[1:]:
    d = data[k][0]
    peer = names[k]
    if h is None or d is None:
        print(f"Hermes vs {peer}: no ratios ({'Hermes' if h is None else peer} has no figures)")
        continue

    def ratio(a, b):
        return f"{a / b:.1f}x" if b else "-"

    print(
        f"Hermes vs {peer}: rounds/s Hermes / {peer} = {ratio(h['rounds_per_sec'], d['rounds_per_sec'])}, "
        f"CPU per round {peer} / Hermes = {ratio(d['cpu_per_round_us'], h['cpu_per_round_us'])}, "
        f"peak RSS {peer} / Hermes = {ratio(d['peak_rss_mib'], h['peak_rss_mib'])}"
        + (
            f", peak anonymous memory {peer} / Hermes = {ratio(d['sampled_anon_mib'], h['sampled_anon_mib'])}"
            if "sampled_anon_mib" in d and "sampled_anon_mib" in h
            else ""
        )
    )
print("json:", json.dumps({k: data[k][0] if data[k][0] is not None else {"error": data[k][1]} for k in columns}))
PY

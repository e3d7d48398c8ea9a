"""The table of `WORKLOAD=plan bench/compare.sh`: Hermes and each peer on the
multi-agent workload, side by side, then the ratios of each peer to Hermes.

    python3 bench/peer/plan_table.py OUT_DIR "rig autoagents langgraph" LATENCY_MS ROUNDS

OUT_DIR holds `hermes.jsonl` (one `hermes bench plan --json` line per run)
and `<peer>.json` (the peer's one line, bench/peer/harness/src/plan.rs) or
`<peer>.err` (why the peer has no figures).
"""

import json
import pathlib
import statistics
import sys

out = pathlib.Path(sys.argv[1])
wanted = sys.argv[2].split()
latency_ms = float(sys.argv[3])
rounds = int(sys.argv[4])
names = {"hermes": "Hermes", "rig": "rig", "autoagents": "AutoAgents", "langgraph": "LangGraph"}
columns = ["hermes"] + [k for k in ("rig", "autoagents", "langgraph") if k in wanted]
width = 22


def hermes():
    """Hermes' runs as one column: the median run's wall and CPU, the
    highest RSS, counts summed."""
    try:
        lines = [json.loads(l) for l in (out / "hermes.jsonl").read_text().splitlines() if l.strip()]
    except (OSError, ValueError) as e:
        return None, f"no figures ({e.__class__.__name__})"
    if not lines:
        log = out / "hermes.log"
        return None, (log.read_text().strip().splitlines() or ["no figures"])[-1] if log.exists() else "no figures"
    return {
        "framework": "hermes",
        "fan_out": "planner actor, one supervised executor actor per subtask (ractor)",
        "subtasks": lines[0]["subtasks"],
        "repeat": len(lines),
        "finished_subtasks": sum(l["finished_subtasks"] for l in lines),
        "rounds": sum(l["rounds"] for l in lines),
        "model_calls": sum(l["model_calls"] for l in lines),
        "seconds": statistics.median(l["seconds"] for l in lines),
        "seconds_runs": [l["seconds"] for l in lines],
        "cpu_per_round_us": statistics.median(l["cpu_per_round_us"] for l in lines),
        "peak_rss_mib": max(l["peak_rss_mib"] for l in lines),
    }, None


def load(key):
    if key == "hermes":
        return hermes()
    err = out / f"{key}.err"
    if err.exists():
        return None, err.read_text().strip()
    try:
        return json.loads((out / f"{key}.json").read_text()), None
    except (OSError, ValueError) as e:
        return None, f"no figures ({e.__class__.__name__})"


data = {k: load(k) for k in columns}
# The model's critical path of one run: the plan, one subtask's rounds, the answer.
path_s = latency_ms * (rounds + 2) / 1000


def cell(key, show):
    d, _ = data[key]
    if d is None:
        return "-"
    try:
        return show(d)
    except (KeyError, TypeError, ZeroDivisionError):
        return "-"


def shorten(text, n=width):
    return text if len(text) <= n else text[: n - 1] + "~"


def per_run(d, field):
    return d[field] / max(d.get("repeat", 1), 1)


rows = [
    ("status", lambda k: "ok" if data[k][0] is not None else shorten(data[k][1].split(":")[0])),
    ("subtasks finished", lambda k: cell(k, lambda d: f"{d['finished_subtasks']} of {d['subtasks'] * d['repeat']}")),
    ("wall per task (median)", lambda k: cell(k, lambda d: f"{d['seconds']:.3f} s")),
    ("wall - model path", lambda k: cell(k, lambda d: f"{(d['seconds'] - path_s) * 1000:,.0f} ms")),
    ("client CPU per round", lambda k: cell(k, lambda d: f"{d['cpu_per_round_us']:,.0f} us")),
    ("client CPU per task", lambda k: cell(k, lambda d: f"{d['cpu_per_round_us'] * per_run(d, 'rounds') / 1000:,.1f} ms")),
    ("peak RSS", lambda k: cell(k, lambda d: f"{d['peak_rss_mib']:.1f} MiB")),
    ("model calls per task", lambda k: cell(k, lambda d: f"{per_run(d, 'model_calls'):.0f}")),
    ("fan-out", lambda k: cell(k, lambda d: shorten(d.get("fan_out", "")))),
]
print(f"model path per task: {path_s:.3f} s (plan + {rounds} rounds + answer at {latency_ms:.0f} ms)")
print(f"{'':24}" + "".join(f" {names[k]:>{width}}" for k in columns))
for label, show in rows:
    print(f"{label:24}" + "".join(f" {show(k):>{width}}" for k in columns))
for k in columns:
    d, why = data[k]
    if d is None:
        print(f"  {names[k]}: {why}")
    else:
        print(f"  {names[k]} fan-out: {d.get('fan_out', '')}")
        if d.get("error"):
            print(f"  {names[k]} error: {d['error']}")

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

    over_h, over_p = h["seconds"] - path_s, d["seconds"] - path_s
    print(
        f"Hermes vs {peer}: wall {peer} / Hermes = {ratio(d['seconds'], h['seconds'])} "
        f"(beyond the model path {ratio(over_p, over_h)}), "
        f"CPU per round {peer} / Hermes = {ratio(d['cpu_per_round_us'], h['cpu_per_round_us'])}, "
        f"peak RSS {peer} / Hermes = {ratio(d['peak_rss_mib'], h['peak_rss_mib'])}"
    )
print("json:", json.dumps({k: data[k][0] if data[k][0] is not None else {"error": data[k][1]} for k in columns}))

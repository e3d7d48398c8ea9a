#!/usr/bin/env python3
"""Write the suite that ablates every steer that acted in a base pass.

    scripts/ablation-suite.py SUITE.toml BASE_REPORT.json OUT.toml [--controls N] [--only-steer A,B]

A steer changes nothing in a run where it never acted (EVALS.md, sections 29
and 45: the engine samples with fixed seeds, and four runs at once decode as
four in turn), so switching steer X off can only move the runs whose
`steered` field in the base report names X. This script reads the base
report (`hermes eval --report`'s JSON), and for every steer X and every task
it acted in, copies that task's `[[task]]` block from SUITE.toml with the id
`TASK--no-X` and `steer = { X = false }`. `--controls N` also copies the
N quickest tasks of the base, unchanged but for the id
(`TASK--control`): they must repeat the base run for run, which checks the
pairing itself. The output is one suite, so `hermes eval OUT.toml
--concurrency 4` keeps every slot busy; `scripts/ablation-table.py` pairs
its report with the base.

The blocks are copied as text (nothing is re-serialized), so a held-out
suite's tasks are never printed: only ids and counts are.
"""

import argparse
import json
import re
import sys


def blocks(text):
    """The suite's head (before the first task) and each `[[task]]` block by id."""
    parts = re.split(r"(?m)^(?=\[\[task\]\]\s*$)", text)
    head, tasks = parts[0], {}
    for part in parts[1:]:
        m = re.search(r'(?m)^id[ \t]*=[ \t]*"([^"]+)"[ \t]*$', part)
        if not m:
            sys.exit("a [[task]] block has no `id = \"…\"` line")
        if re.search(r"(?m)^(steer\s*=|\[task\.steer\])", part):
            sys.exit(f"task {m.group(1)} sets its own steers; ablate it by hand")
        tasks[m.group(1)] = (part, m)
    return head, tasks


def copy(block, new_id, steer_off=None):
    part, m = block
    line = f'id = "{new_id}"\n'
    if steer_off:
        line += f"steer = {{ {steer_off} = false }}\n"
    return part[: m.start()] + line.rstrip("\n") + part[m.end():]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite")
    ap.add_argument("base")
    ap.add_argument("out")
    ap.add_argument("--controls", type=int, default=0)
    ap.add_argument("--only-steer", default="")
    args = ap.parse_args()

    head, tasks = blocks(open(args.suite, encoding="utf-8").read())
    runs = json.load(open(args.base, encoding="utf-8"))["runs"]
    wanted = {s for s in args.only_steer.split(",") if s}
    out, counts, controls = [head], {}, 0
    for run in runs:
        task = run["task"]
        if task not in tasks:
            sys.exit(f"the base ran {task}, which {args.suite} lacks")
        steered = sorted(run.get("steered") or {})
        for steer in steered:
            if wanted and steer not in wanted:
                continue
            out.append(copy(tasks[task], f"{task}--no-{steer}", steer))
            counts[steer] = counts.get(steer, 0) + 1
    # Controls: the quickest base runs, copied unchanged but for the id.
    for run in sorted(runs, key=lambda r: r.get("seconds", 0))[: args.controls]:
        out.append(copy(tasks[run["task"]], f"{run['task']}--control"))
        controls += 1
    text = "".join(out)
    open(args.out, "w", encoding="utf-8").write(text)
    total = sum(counts.values()) + controls
    for steer, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{steer:20s} {n:3d} runs")
    print(f"{'controls':20s} {controls:3d} runs")
    print(f"{total} runs in {args.out}")


if __name__ == "__main__":
    main()

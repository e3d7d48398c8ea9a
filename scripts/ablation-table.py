#!/usr/bin/env python3
"""Pair an ablation pass with its base: one row per steer.

    scripts/ablation-table.py BASE_REPORT.json ABLATION_REPORT.json [--runs]

The ablation report is `hermes eval`'s JSON for the suite that
`scripts/ablation-suite.py` wrote from the same base: its runs are named
`TASK--no-STEER` (TASK with STEER off) and `TASK--control` (TASK as it was).
For each steer the table gives the runs it acted in, how many passed with it
(the base) and without it, and which moved; a control that does not repeat
its base run (pass, status and rounds) is reported, since then the pairing
does not hold. Only report fields are read (pass, status, rounds, seconds,
steered), never journals, so it serves a held-out suite too. `--runs` lists
every paired run.
"""

import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("ablation")
    ap.add_argument("--runs", action="store_true")
    args = ap.parse_args()

    base = {r["task"]: r for r in json.load(open(args.base, encoding="utf-8"))["runs"]}
    rows = collections.defaultdict(list)
    bad_controls = []
    for run in json.load(open(args.ablation, encoding="utf-8"))["runs"]:
        task, _, what = run["task"].rpartition("--")
        if task not in base:
            sys.exit(f"{run['task']}: the base has no run of {task}")
        was = base[task]
        if what == "control":
            same = all(run.get(k) == was.get(k) for k in ("passed", "status", "rounds"))
            if not same:
                bad_controls.append(task)
            rows["(control)"].append((task, was, run))
        elif what.startswith("no-"):
            rows[what[3:]].append((task, was, run))
        else:
            sys.exit(f"{run['task']}: not a --no-STEER or --control run")

    print("| steer | acted in | passed with it (base) | passed without it | gained off | lost off | runs not the same (status or rounds) | s/run with → without |")
    print("|---|---|---|---|---|---|---|---|")
    for steer, pairs in sorted(rows.items(), key=lambda kv: (kv[0] == "(control)", -len(kv[1]))):
        with_it = sum(w["passed"] for _, w, _ in pairs)
        without = sum(r["passed"] for _, _, r in pairs)
        gained = [t for t, w, r in pairs if r["passed"] and not w["passed"]]
        lost = [t for t, w, r in pairs if w["passed"] and not r["passed"]]
        moved = sum(
            1 for _, w, r in pairs if (w["status"], w["rounds"]) != (r["status"], r["rounds"])
        )
        s_with = sum(w.get("seconds", 0) for _, w, _ in pairs) / len(pairs)
        s_without = sum(r.get("seconds", 0) for _, _, r in pairs) / len(pairs)
        print(
            f"| {steer} | {len(pairs)} | {with_it} | {without} | "
            f"{len(gained)} {', '.join(gained)} | {len(lost)} {', '.join(lost)} | "
            f"{moved} | {s_with:.0f} → {s_without:.0f} |"
        )
    if bad_controls:
        print(f"\ncontrols that did NOT repeat the base: {', '.join(bad_controls)}")
    if args.runs:
        print()
        for steer, pairs in sorted(rows.items()):
            for task, w, r in pairs:
                print(
                    f"{steer:18s} {task:32s} base {w['status']:10s} r{w['rounds']:<2} "
                    f"{'pass' if w['passed'] else 'fail'} -> {r['status']:10s} "
                    f"r{r['rounds']:<2} {'pass' if r['passed'] else 'fail'}"
                )


if __name__ == "__main__":
    main()

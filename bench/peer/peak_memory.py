#!/usr/bin/env python3
"""Runs a command and samples its memory the same way for every framework.

    peak_memory.py OUT.json -- COMMAND [ARGS...]

The command's standard output and error pass through, and its exit code is
this script's. Every 10 ms it reads the command's /proc/PID/status and keeps
the most it saw of:

- VmRSS: resident memory, the figure each harness already reports; it
  includes the pages of the program's own binary and libraries that were
  touched (file-backed, shared with any other process running the same file);
- RssAnon: anonymous resident memory, what the program allocated (heap,
  stacks): the part that grows with the work it does.

OUT.json gets {"peak_rss_kib": N, "peak_anon_kib": N, "samples": N}.
Linux only (no /proc elsewhere: the peaks stay 0).
"""
import json
import subprocess
import sys
import time


def status(pid):
    """VmRSS and RssAnon of `pid`, in KiB (0 when gone or unreadable)."""
    fields = {"VmRSS:": 0, "RssAnon:": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(None, 1)[0] if line.strip() else ""
                if key in fields:
                    fields[key] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return fields["VmRSS:"], fields["RssAnon:"]


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out, command = sys.argv[1], sys.argv[3:]
    try:
        child = subprocess.Popen(command)
    except OSError as e:
        print(f"error: cannot run {command[0]}: {e}", file=sys.stderr)
        return 127
    rss = anon = samples = 0
    while child.poll() is None:
        now_rss, now_anon = status(child.pid)
        rss, anon = max(rss, now_rss), max(anon, now_anon)
        samples += 1
        time.sleep(0.01)
    with open(out, "w") as f:
        json.dump({"peak_rss_kib": rss, "peak_anon_kib": anon, "samples": samples}, f)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())

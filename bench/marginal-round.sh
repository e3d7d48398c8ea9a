#!/usr/bin/env bash
# The loop's own instructions per round, read by the marginal round (BENCHMARKS.md, `hermes bench
# loop`): callgrind on `hermes bench loop --agents 50 --model-latency-ms 0` at 20 and at 40 rounds;
# the program's difference over the 1,000 extra loop rounds and 1,000 extra bare rounds, with the
# bare calls' own difference (`LoopBench::bare`) taken out. One-time and per-run costs drop out.
# Instruction counts do not depend on the machine's load, so this can run beside other work.
#
#   bench/marginal-round.sh [HERMES_BIN]     # default: target/release/hermes
#
# Needs valgrind (apt-get install valgrind) and python3.
set -euo pipefail
bin="${1:-target/release/hermes}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$out"
for rounds in 20 40; do
    valgrind --tool=callgrind --callgrind-out-file="$out/loop$rounds.out" \
        "$bin" bench loop --agents 50 --model-latency-ms 0 --rounds "$rounds" > /dev/null 2>&1
    callgrind_annotate --inclusive=yes "$out/loop$rounds.out" > "$out/loop$rounds.txt" 2>/dev/null
done
python3 - "$out/loop20.txt" "$out/loop40.txt" <<'PY'
import re, sys
def total(path):
    return int(re.search(r'([\d,]+) \(100.0%\)\s+PROGRAM TOTALS', open(path).read()).group(1).replace(',', ''))
def inclusive(path, name):
    for line in open(path):
        m = re.match(r'\s*([\d,]+) \([\s\d.]+%\)\s+\S*?:(.*) \[', line)
        if m and m.group(2).strip() == name:
            return int(m.group(1).replace(',', ''))
    return 0
a, b = sys.argv[1], sys.argv[2]
bare_fn = 'hermes_eval::bench::loops::LoopBench::bare::{{closure}}::{{closure}}'
extra = 1000  # 50 loops x 20 more rounds, and as many bare rounds
bare = (inclusive(b, bare_fn) - inclusive(a, bare_fn)) / extra
loop = (total(b) - total(a)) / extra - bare
print(f"instructions per round: loop {loop / 1000:.1f}k, bare calls {bare / 1000:.1f}k, own share {(loop - bare) / 1000:.1f}k")
PY

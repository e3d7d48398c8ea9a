"""The LangGraph peer of `hermes bench http`.

N tasks, C at a time (asyncio), each a LangGraph `create_react_agent` with a
native `read_file` tool on a temporary workspace, against the same scripted
OpenAI-compatible server (`hermes bench serve`): the server answers each
request that carries `tools` with one `read_file` tool call per round and
plain content in the last, so each task runs the same 10-round script as
Hermes' (9 reads, then the answer).

Prints one JSON object on stdout: rounds/s, client CPU per round (this
process's user + system time divided by the rounds), round latency and
peak RSS (ru_maxrss of this process, imports included).

    bench/peer/.venv/bin/python bench/peer/langgraph_agent.py \
        --base-url http://127.0.0.1:PORT/v1 --tasks 500 --concurrency 50
"""

import argparse
import asyncio
import json
import pathlib
import resource
import sys
import tempfile
import time
import warnings

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

FILES = 4

# create_react_agent is what the comparison names; LangGraph 1.x suggests
# langchain.agents.create_agent instead, and says so on every run.
warnings.filterwarnings("ignore", message="create_react_agent has been moved")


def make_workspace() -> tempfile.TemporaryDirectory:
    """f0.txt .. f3.txt, the same files Hermes' bench reads."""
    folder = tempfile.TemporaryDirectory()
    for k in range(FILES):
        pathlib.Path(folder.name, f"f{k}.txt").write_text(f"file {k}\n" * 20)
    return folder


def make_read_file(root: pathlib.Path):
    """A native read_file tool confined to `root`."""

    @tool
    def read_file(path: str) -> str:
        """Read a UTF-8 text file in the workspace and return its content."""
        target = (root / path).resolve()
        if root not in target.parents:
            return "error: the path is outside the workspace"
        try:
            return target.read_text()
        except OSError as e:
            return f"error: {e}"

    return read_file


def percentile(values: list, q: float) -> float:
    """Nearest-rank quantile, as Hermes' bench computes it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = min(max(int(-(-q * len(ordered) // 1)), 1), len(ordered))
    return ordered[rank - 1]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the scripted server, with /v1")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10, help="the server's --rounds")
    args = parser.parse_args()
    if min(args.tasks, args.concurrency, args.rounds) < 1:
        print("error: --tasks, --concurrency and --rounds must be at least 1", file=sys.stderr)
        return 1

    folder = make_workspace()
    root = pathlib.Path(folder.name).resolve()
    model = ChatOpenAI(
        model="bench",
        base_url=args.base_url,
        api_key="not-needed",
        temperature=0,
        max_retries=0,
        timeout=120,
    )
    agent = create_react_agent(model, [make_read_file(root)])
    config = {"recursion_limit": 2 * args.rounds + 5}
    goal = {"messages": [("user", "Read the files in turn.")]}

    try:  # one request first: a server that is not there is one clear error
        await model.ainvoke("Round 1")
    except Exception as e:  # noqa: BLE001 - any failure here means the same
        print(f"error: the scripted server at {args.base_url} does not answer: {e}", file=sys.stderr)
        return 1

    gate = asyncio.Semaphore(args.concurrency)
    latencies_ms = []

    async def one_task() -> tuple:
        async with gate:
            last = time.perf_counter()
            rounds = 0
            finished = False
            async for step in agent.astream(goal, config, stream_mode="updates"):
                if "agent" in step:  # a model call ended (with its tool call or answer)
                    rounds += 1
                    message = step["agent"]["messages"][-1]
                    finished = not getattr(message, "tool_calls", None)
                if "tools" in step or finished:  # the round is over
                    now = time.perf_counter()
                    latencies_ms.append((now - last) * 1e3)
                    last = now
            return rounds, finished

    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    results = await asyncio.gather(*(one_task() for _ in range(args.tasks)), return_exceptions=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)

    errors = [r for r in results if isinstance(r, BaseException)]
    done = [r for r in results if not isinstance(r, BaseException)]
    rounds = sum(r[0] for r in done)
    cpu_us = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e6
    if errors:
        print(f"warning: {len(errors)} tasks failed, first: {errors[0]!r}", file=sys.stderr)
    report = {
        "framework": "langgraph",
        "tasks": args.tasks,
        "concurrency": args.concurrency,
        "rounds_per_task": args.rounds,
        "base_url": args.base_url,
        "finished": sum(1 for r in done if r[1]),
        "rounds": rounds,
        "seconds": seconds,
        "rounds_per_sec": rounds / seconds if seconds > 0 else 0.0,
        "cpu_per_round_us": cpu_us / rounds if rounds else 0.0,
        "latency_p50_ms": percentile(latencies_ms, 0.50),
        "latency_p99_ms": percentile(latencies_ms, 0.99),
        "peak_rss_mib": after.ru_maxrss / 1024,
    }
    print(json.dumps(report))
    folder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

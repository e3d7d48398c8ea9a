"""The LangGraph peer of `hermes bench plan` (bench/compare.sh, WORKLOAD=plan).

One task, planned by one model call into N independent subtasks over R
roles; every subtask at once, each run by a LangGraph `create_react_agent`
of its role (its own system prompt, a native `read_file` tool on a
temporary workspace) until its plain answer; one last model call for the
team's answer. All against the same scripted OpenAI-compatible server
(`hermes bench serve --rounds 3 --latency-ms 100`), which plans from the
`[bench-plan N ROLES]` marker in the task and gives each executor the
server's `--rounds` rounds (reads, then the answer).

It fans out with LangGraph's map-reduce idiom: a `StateGraph` whose
`planner` node asks for the plan, a conditional edge from it that returns
one `Send("executor", subtask)` per subtask (all in the same superstep),
an `executor` node that runs the role's agent, the results gathered with
an `Annotated[list, operator.add]` reducer, and an `answer` node. LangGraph
runs a superstep's tasks with no cap unless `max_concurrency` is set (it is
not), and the graph takes 3 supersteps, far below the default
`recursion_limit` (10007 in LangGraph 1.2), so no config is raised.

Runs the compiled graph `--repeat` times one after another (`ainvoke`, each
run timed from the plan call's start to the answer's end) and prints one
JSON line with the fields of bench/peer/harness/src/plan.rs's report; the
exit code is 0 when every subtask of every run finished.

    bench/peer/.venv/bin/python bench/peer/langgraph_plan.py \
        --base-url http://127.0.0.1:PORT/v1 --subtasks 100 --roles 4 --repeat 3
"""

import argparse
import asyncio
import importlib.metadata
import json
import operator
import pathlib
import resource
import sys
import time
import warnings
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.types import Send

# The workspace, its read_file tool and the quantile, as the loop peer has them.
from langgraph_agent import make_read_file, make_workspace, percentile  # noqa: E402

# The roles, in the order `hermes bench plan` builds its own.
ROLES = ["reader", "checker", "summariser", "archivist"]

# The prompts and the task marker, as bench/peer/harness/src/plan.rs has them.
PLANNER_SYSTEM = (
    "You are the planner of a team. Split the task into "
    'subtasks for the team\'s roles and answer with JSON only: {"subtasks": [{"id": '
    '"s0", "role": "reader", "goal": "...", "depends_on": []}]}.'
)
ANSWER_SYSTEM = "You write the final answer of a team from its subtasks' results, in one line."

FAN_OUT = (
    "LangGraph StateGraph map-reduce: planner node, conditional edge returning one "
    "Send('executor', subtask) per subtask (one superstep, max_concurrency unset = no cap, "
    "default recursion_limit), each executor runs its role's prebuilt create_react_agent, "
    "results gathered by an Annotated[list, operator.add] reducer, then an answer node"
)

# create_react_agent is what the comparison names; LangGraph 1.x suggests
# langchain.agents.create_agent instead, and says so on every run.
warnings.filterwarnings("ignore", message="create_react_agent has been moved")


def task(subtasks: int, roles: list, t: int) -> str:
    """The task text of run `t`, with the marker the server plans from."""
    return (
        f"[bench-plan {subtasks} {','.join(roles)}] "
        f"Read every file, one subtask at a time (task {t})."
    )


def executor_system(role: str) -> str:
    """An executor's system message for `role`."""
    return f"You are the {role} of a team. You read the files in the workspace with the read_file tool."


def answer_prompt(task_text: str, results: list) -> str:
    """The final answer's prompt: the task and each subtask's result."""
    prompt = f"Task: {task_text}\n\nResults of the subtasks:"
    for subtask_id, result in results:
        prompt += f"\n[{subtask_id}] {result}"
    return prompt


def parse_plan(content: str) -> list:
    """The subtasks of the planner's answer (JSON, possibly inside other text)."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the plan has no JSON object")
    try:
        plan = json.loads(content[start : end + 1])
        subtasks = [
            {"id": s["id"], "role": s["role"], "goal": s["goal"]} for s in plan["subtasks"]
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"the plan is not the expected JSON: {e}") from e
    if not subtasks:
        raise ValueError("the plan has no subtasks")
    return subtasks


class PlanState(TypedDict, total=False):
    """The graph's state: the task, its plan, the gathered results, the answer."""

    task: str
    subtasks: list
    results: Annotated[list, operator.add]
    answer: str


class SubtaskState(TypedDict):
    """What one `Send` hands the executor."""

    id: str
    role: str
    goal: str


def build_graph(model: ChatOpenAI, roles: list, root: pathlib.Path):
    """The planner → executors (one Send each) → answer graph, compiled."""
    read_file = make_read_file(root)
    agents = {
        role: create_react_agent(model, [read_file], prompt=executor_system(role))
        for role in roles
    }

    async def planner(state: PlanState) -> dict:
        reply = await model.ainvoke(
            [SystemMessage(PLANNER_SYSTEM), HumanMessage(state["task"])]
        )
        return {"subtasks": parse_plan(reply.text)}

    def fan_out(state: PlanState) -> list:
        return [Send("executor", subtask) for subtask in state["subtasks"]]

    async def executor(subtask: SubtaskState) -> dict:
        outcome = {"id": subtask["id"], "rounds": 0, "finished": False}
        agent = agents.get(subtask["role"])
        if agent is None:
            outcome["result"] = f"error: no agent has the role {subtask['role']!r}"
            return {"results": [outcome]}
        try:
            done = await agent.ainvoke({"messages": [("user", subtask["goal"])]})
        except Exception as e:  # noqa: BLE001 - the subtask fails, the team goes on
            outcome["result"] = f"error: {e}"
            return {"results": [outcome]}
        messages = done["messages"]
        last = messages[-1]
        outcome["rounds"] = sum(isinstance(m, AIMessage) for m in messages)
        outcome["finished"] = isinstance(last, AIMessage) and not last.tool_calls
        outcome["result"] = last.text if outcome["finished"] else "error: no answer"
        return {"results": [outcome]}

    async def answer(state: PlanState) -> dict:
        results = [(r["id"], r["result"]) for r in state["results"]]
        reply = await model.ainvoke(
            [SystemMessage(ANSWER_SYSTEM), HumanMessage(answer_prompt(state["task"], results))]
        )
        return {"answer": reply.text}

    graph = StateGraph(PlanState)
    graph.add_node("planner", planner)
    graph.add_node("executor", executor)
    graph.add_node("answer", answer)
    graph.add_edge(START, "planner")
    graph.add_conditional_edges("planner", fan_out, ["executor"])
    graph.add_edge("executor", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def versions() -> str:
    return ", ".join(
        f"{name} {importlib.metadata.version(name)}" for name in ("langgraph", "langchain-openai")
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the scripted server, with /v1")
    parser.add_argument("--subtasks", type=int, default=100, help="subtasks in the plan")
    parser.add_argument("--roles", type=int, default=4, help=f"roles the plan spreads them over (1-{len(ROLES)})")
    parser.add_argument("--repeat", type=int, default=1, help="tasks run one after another")
    args = parser.parse_args()
    if min(args.subtasks, args.repeat) < 1 or not 1 <= args.roles <= len(ROLES):
        print(f"error: --subtasks and --repeat must be at least 1, --roles 1 to {len(ROLES)}", file=sys.stderr)
        return 1
    roles = ROLES[: args.roles]

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
    graph = build_graph(model, roles, root)

    try:  # one request first: a server that is not there is one clear error
        await model.ainvoke("Round 1")
    except Exception as e:  # noqa: BLE001 - any failure here means the same
        print(f"error: the scripted server at {args.base_url} does not answer: {e}", file=sys.stderr)
        folder.cleanup()
        return 1

    before = resource.getrusage(resource.RUSAGE_SELF)
    seconds_runs = []
    finished = rounds = model_calls = 0
    error = None
    for t in range(args.repeat):
        started = time.perf_counter()
        try:
            state = await graph.ainvoke({"task": task(args.subtasks, roles, t), "results": []})
        except Exception as e:  # noqa: BLE001 - the run failed; report why
            state, error = None, error or f"run {t} failed: {e!r}"
        seconds_runs.append(time.perf_counter() - started)
        if state is None:
            continue
        results = state["results"]
        run_rounds = sum(r["rounds"] for r in results)
        finished += sum(1 for r in results if r["finished"])
        rounds += run_rounds
        model_calls += 1 + run_rounds + 1
        failed = [r for r in results if not r["finished"]]
        if failed and error is None:
            error = f"run {t}: {len(failed)} subtasks did not finish, first [{failed[0]['id']}] {failed[0]['result']}"
    after = resource.getrusage(resource.RUSAGE_SELF)

    cpu_us = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e6
    report = {
        "framework": "langgraph",
        "version": versions(),
        "workload": "plan",
        "fan_out": FAN_OUT,
        "subtasks": args.subtasks,
        "roles": len(roles),
        "repeat": args.repeat,
        "finished_subtasks": finished,
        "rounds": rounds,
        "model_calls": model_calls,
        "seconds": percentile(seconds_runs, 0.5),
        "seconds_runs": seconds_runs,
        "cpu_per_round_us": cpu_us / rounds if rounds else 0.0,
        "peak_rss_mib": after.ru_maxrss / 1024,
        "error": error,
    }
    if error:
        print(f"warning: {error}", file=sys.stderr)
    print(json.dumps(report))
    folder.cleanup()
    return 0 if finished >= args.subtasks * args.repeat else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

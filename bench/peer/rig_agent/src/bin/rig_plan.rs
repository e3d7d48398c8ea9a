//! The rig peer of the multi-agent plan workload (bench/compare.sh,
//! `WORKLOAD=plan`; the harness is bench/peer/harness/src/plan.rs).
//!
//! A team of rig agents (`AgentBuilder` over rig's OpenAI Chat Completions
//! model, pointed at the scripted server `hermes bench serve`):
//!
//! - the planner: an agent without tools, `PLANNER_SYSTEM` as its preamble,
//!   prompted with the task; its answer is the JSON plan of N subtasks;
//! - the executors: one agent per role (preamble `executor_system(role)`,
//!   the native `read_file` tool of src/lib.rs on a temporary workspace),
//!   built once and shared by every subtask of that role, as a rig
//!   application shares an agent between its requests (`Agent::prompt`
//!   takes `&self`; each run keeps its own history); each subtask is one
//!   run, prompted with its goal, through rig's tool loop until its plain
//!   answer (the server's `--rounds`);
//! - the final answer: an agent without tools, `ANSWER_SYSTEM` as its
//!   preamble, prompted with the task and every subtask's result.
//!
//! Fan-out: rig 0.44 has no fan-out or multi-agent runtime of its own. Its
//! multi-agent idiom is agent-as-tool (`Agent::into_tool`), where a
//! model's tool calls drive the sub-agents; this workload's planner answers
//! with a JSON plan instead, so the program fans out as rig's users do
//! otherwise, with plain tokio: every subtask is spawned at once
//! (`tokio::spawn` on the multi-threaded runtime) and joined in the plan's
//! order.
//!
//! Rounds are the executors' model turns, counted as src/main.rs counts
//! them: a per-run `AgentHook` whose `on_model_turn_finished` adds one.
//! Model calls are the same count plus the planner's and the final
//! answer's turns (their own hook).
//!
//! Prints one JSON line (peer_harness::plan's report):
//!
//!     bench/peer/rig_agent/target/release/rig_plan \
//!         --base-url http://127.0.0.1:PORT/v1 --subtasks 100 --roles 4 --repeat 3

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use peer_harness::plan::{
    ANSWER_SYSTEM, PLANNER_SYSTEM, PlanArgs, PlanPeer, PlanRun, answer_prompt, executor_system,
    measure_plan, parse_plan, parse_plan_args, task,
};
use rig_agent::agent::{AgentHook, HookContext, ModelTurnAction, ModelTurnFinished};
use rig_agent::{Agent, AgentBuilder};
use rig_core::providers::openai::{OpenAI, OpenAIConfig};
use rig_core::wasm_compat::WasmCompatSend;
use rig_peer::ReadFile;

const FRAMEWORK_VERSION: &str = "rig-core 0.44.0, rig-agent 0.44.0";
const FAN_OUT: &str = "plain tokio: every subtask spawned at once (tokio::spawn, multi-threaded \
     runtime), each a run of its role's shared rig Agent (prompt + read_file tool loop); rig 0.44 \
     has no fan-out primitive (its multi-agent idiom, Agent::into_tool, is driven by a model's tool \
     calls, not by a plan)";

/// An executor's model-call budget (rig's `max_turns`: every model call of
/// the run, the first included): room for the server's rounds, whatever
/// `--rounds` it runs with, as an application sets a generous cap.
const EXECUTOR_MAX_TURNS: usize = 64;

// ---------------------------------------------------------------------------
// Counting model turns: a hook on the run (rig's way to observe a run).

/// Model turns, counted by rig's hook as each one finishes.
#[derive(Clone, Default)]
struct Turns(Arc<AtomicUsize>);

impl Turns {
    fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl AgentHook for Turns {
    fn on_model_turn_finished(
        &self,
        _ctx: &HookContext,
        _event: ModelTurnFinished<'_>,
    ) -> impl Future<Output = ModelTurnAction> + WasmCompatSend {
        self.0.fetch_add(1, Ordering::Relaxed);
        std::future::ready(ModelTurnAction::Continue)
    }
}

// ---------------------------------------------------------------------------
// The team.

/// The planner, one executor agent per role, and the final answer's agent.
struct Team {
    planner: Agent,
    executors: HashMap<String, Arc<Agent>>,
    answerer: Agent,
}

impl Team {
    fn new(provider: &OpenAI, roles: &[String], root: &Path) -> Self {
        // rig's OpenAI client defaults to the Responses API; `chat` is its
        // Chat Completions model, which is what an OpenAI-compatible server
        // speaks.
        let model = || provider.chat("bench");
        let planner = AgentBuilder::new(model())
            .name("planner")
            .preamble(PLANNER_SYSTEM)
            .temperature(0.0)
            .build();
        let executors = roles
            .iter()
            .map(|role| {
                let agent = AgentBuilder::new(model())
                    .name(role.as_str())
                    .preamble(executor_system(role))
                    .tool(ReadFile {
                        root: root.to_path_buf(),
                    })
                    .temperature(0.0)
                    .build();
                (role.clone(), Arc::new(agent))
            })
            .collect();
        let answerer = AgentBuilder::new(model())
            .name("answer")
            .preamble(ANSWER_SYSTEM)
            .temperature(0.0)
            .build();
        Self {
            planner,
            executors,
            answerer,
        }
    }

    /// One task: plan, every subtask at once, the final answer.
    async fn run(&self, task: String) -> PlanRun {
        let calls = Turns::default();
        let rounds = Turns::default();
        let done = |finished, error: Option<String>| PlanRun {
            finished,
            rounds: rounds.count(),
            model_calls: calls.count() + rounds.count(),
            error,
        };

        // The plan: one model call.
        let planned = self
            .planner
            .prompt(task.as_str())
            .add_hook(calls.clone())
            .await;
        let plan = match planned {
            Ok(response) => parse_plan(&response.output()),
            Err(e) => Err(format!("the planner failed: {e}")),
        };
        let subtasks = match plan {
            Ok(subtasks) => subtasks,
            Err(why) => return done(0, Some(why)),
        };

        // Every subtask at once, each a run of its role's agent.
        let handles: Vec<_> = subtasks
            .into_iter()
            .map(|subtask| {
                let agent = self.executors.get(&subtask.role).cloned();
                let rounds = rounds.clone();
                let id = subtask.id;
                let handle = tokio::spawn(async move {
                    let Some(agent) = agent else {
                        return Err(format!("no agent for the role {:?}", subtask.role));
                    };
                    agent
                        .prompt(subtask.goal)
                        .max_turns(EXECUTOR_MAX_TURNS)
                        .add_hook(rounds)
                        .await
                        .map(|response| response.output())
                        .map_err(|e| e.to_string())
                });
                (id, handle)
            })
            .collect();
        let mut results = Vec::with_capacity(handles.len());
        let (mut finished, mut error) = (0, None);
        for (id, handle) in handles {
            let result = handle
                .await
                .unwrap_or_else(|e| Err(format!("the subtask panicked: {e}")));
            match result {
                Ok(output) => {
                    finished += 1;
                    results.push((id, output));
                }
                Err(why) => {
                    error.get_or_insert_with(|| format!("subtask {id} failed: {why}"));
                    results.push((id, format!("error: {why}")));
                }
            }
        }

        // The team's answer: one model call.
        let answer = self
            .answerer
            .prompt(answer_prompt(&task, &results))
            .add_hook(calls.clone())
            .await;
        if let Err(e) = answer {
            error.get_or_insert_with(|| format!("the final answer failed: {e}"));
        }
        done(finished, error)
    }
}

#[tokio::main]
async fn main() {
    let args = parse_plan_args("rig_plan").unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    });
    let root = peer_harness::make_workspace("rig_plan").unwrap_or_else(|e| {
        eprintln!("error: cannot make the workspace: {e}");
        std::process::exit(1);
    });
    let code = run(&args, &root).await;
    peer_harness::exit(&root, code);
}

async fn run(args: &PlanArgs, root: &Path) -> i32 {
    let provider: OpenAI = OpenAIConfig::new("not-needed")
        .with_base_url(args.base_url.clone())
        .client();
    let team = Team::new(&provider, &args.roles, root);
    let peer = PlanPeer {
        framework: "rig",
        version: FRAMEWORK_VERSION,
        fan_out: FAN_OUT,
    };
    measure_plan(args, &peer, |t| team.run(task(args, t))).await
}

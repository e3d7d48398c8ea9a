//! The rig peer of `hermes bench http`.
//!
//! N tasks, C at a time (tokio), each one run of a rig agent (`AgentBuilder`
//! over rig's OpenAI Chat Completions model, pointed at the base URL) with a
//! native `read_file` tool (rig's `Tool` trait) on a temporary workspace,
//! against the same scripted OpenAI-compatible server (`hermes bench serve`):
//! the server answers each request that carries `tools` with one `read_file`
//! call per round and plain content in the last, so each task runs the same
//! 10-round script as Hermes' (9 reads, then the answer). One agent serves
//! every task, as a rig application serves its requests: `Agent::prompt`
//! takes `&self` and each run keeps its own history.
//!
//! Prints one JSON object on stdout, with the fields of the LangGraph peer
//! (bench/peer/langgraph_agent.py): rounds/s, client CPU per round (this
//! process's user + system time divided by the rounds), round latency and
//! peak RSS (ru_maxrss of this process).
//!
//! The tool lives in src/lib.rs, shared with the plan workload's peer
//! (src/bin/rig_plan.rs).
//!
//!     bench/peer/rig_agent/target/release/rig_agent \
//!         --base-url http://127.0.0.1:PORT/v1 --tasks 1000 --concurrency 50

use std::path::Path;
use std::sync::Arc;

use peer_harness::{Args, Peer, RoundClock, TaskResult, measure};
use rig_agent::agent::{
    AgentHook, HookContext, ModelTurnAction, ModelTurnFinished, OutcomeAction, OutcomeEvent,
};
use rig_agent::{Agent, AgentBuilder};
use rig_core::effect::EffectKind;
use rig_core::providers::openai::{OpenAI, OpenAIConfig};
use rig_core::wasm_compat::WasmCompatSend;
use rig_peer::ReadFile;

const FRAMEWORK_VERSION: &str = "rig-core 0.44.0, rig-agent 0.44.0";
const LATENCY_NOTE: &str = "a round ends when its read_file call has resolved on the agent's bus \
     (an AgentHook's on_outcome for the tool effect) or, for the last round, when the run \
     returns; it starts where the previous round ended (the first at the task's start)";

// ---------------------------------------------------------------------------
// The round clock: a per-run hook (rig's way to observe a run).

/// The harness's round clock, with rig's hooks on it.
#[derive(Clone)]
struct Hooked(RoundClock);

impl AgentHook for Hooked {
    fn on_model_turn_finished(
        &self,
        _ctx: &HookContext,
        _event: ModelTurnFinished<'_>,
    ) -> impl Future<Output = ModelTurnAction> + WasmCompatSend {
        self.0.turn();
        std::future::ready(ModelTurnAction::Continue)
    }

    fn on_outcome(
        &self,
        _ctx: &HookContext,
        event: OutcomeEvent<'_>,
    ) -> impl Future<Output = OutcomeAction> + WasmCompatSend {
        if matches!(event.kind, EffectKind::ToolCall { .. }) {
            self.0.lap();
        }
        std::future::ready(OutcomeAction::Proceed)
    }
}

/// One run of the shared agent, timed.
async fn one_task(agent: Arc<Agent>, rounds: usize) -> TaskResult {
    let clock = RoundClock::start();
    let result = agent
        .prompt("Read the files in turn.")
        .max_turns(rounds + 1)
        .add_hook(Hooked(clock.clone()))
        .await;
    // The last round (the answer) ends when the run returns.
    if result.is_ok() {
        clock.lap();
    }
    let (rounds, latencies_ms) = clock.take();
    let (finished, error) = match result {
        Ok(_) => (true, None),
        Err(e) => (false, Some(e.to_string())),
    };
    TaskResult {
        rounds,
        finished,
        latencies_ms,
        error,
    }
}

#[tokio::main]
async fn main() {
    let (args, root) = peer_harness::setup("rig_agent");
    let code = run(&args, &root).await;
    peer_harness::exit(&root, code);
}

async fn run(args: &Args, root: &Path) -> i32 {
    // rig's OpenAI client defaults to the Responses API; `chat` is its Chat
    // Completions model, which is what an OpenAI-compatible server speaks.
    let provider: OpenAI = OpenAIConfig::new("not-needed")
        .with_base_url(args.base_url.clone())
        .client();
    let model = provider.chat("bench");

    // One request first: a server that is not there is one clear error.
    if let Err(e) = model.call("Round 1").await {
        eprintln!(
            "error: the scripted server at {} does not answer: {e}",
            args.base_url
        );
        return 1;
    }

    let agent = Arc::new(
        AgentBuilder::new(model)
            .tool(ReadFile {
                root: root.to_path_buf(),
            })
            .temperature(0.0)
            .build(),
    );

    let peer = Peer {
        framework: "rig",
        version: FRAMEWORK_VERSION,
        latency_note: LATENCY_NOTE,
    };
    let rounds = args.rounds;
    measure(args, &peer, || one_task(Arc::clone(&agent), rounds)).await
}

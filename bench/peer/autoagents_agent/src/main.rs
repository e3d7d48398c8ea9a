//! The AutoAgents peer of `hermes bench http`.
//!
//! N tasks, C at a time (tokio), each a run of an AutoAgents ReAct agent
//! (`#[agent]` + `ReActAgent`, built with `AgentBuilder::<_, DirectAgent>`
//! as its examples build one) over AutoAgents' OpenAI backend in its Chat
//! Completions mode, pointed at the base URL, with a native `read_file` tool
//! (`#[tool]` + `ToolRuntime`) on a temporary workspace, against the same
//! scripted OpenAI-compatible server (`hermes bench serve`): the server
//! answers each request that carries `tools` with one `read_file` call per
//! round and plain content in the last, so each task runs the same 10-round
//! script as Hermes' (9 reads, then the answer). All tasks share one LLM
//! client; each builds its own agent, because an AutoAgents agent's
//! conversation is its memory, and a run's history must be its own.
//!
//! Prints one JSON object on stdout, with the fields of the LangGraph peer
//! (bench/peer/langgraph_agent.py): rounds/s, client CPU per round (this
//! process's user + system time divided by the rounds), round latency and
//! peak RSS (ru_maxrss of this process).
//!
//!     bench/peer/autoagents_agent/target/release/autoagents_agent \
//!         --base-url http://127.0.0.1:PORT/v1 --tasks 1000 --concurrency 50

use std::path::{Path, PathBuf};
use std::sync::Arc;

use autoagents::async_trait;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::ReActAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{AgentBuilder, AgentHooks, Context, DirectAgent};
use autoagents::llm::LLMProvider;
use autoagents::llm::backends::openai::{OpenAI, OpenAIApiMode};
use autoagents::llm::builder::LLMBuilder;
use autoagents::llm::chat::{ChatMessage, ChatProvider};
use autoagents_agent::ReadFile;
use autoagents_derive::agent;
use peer_harness::{Args, Peer, RoundClock, TaskResult, measure};

const FRAMEWORK_VERSION: &str = "autoagents 0.4.0";
const LATENCY_NOTE: &str = "a round is one ReAct turn (the model call, the read_file call and \
     the memory writes around them): it ends at the agent's on_turn_complete hook and starts \
     where the previous round ended (the first at the task's start)";

// The tool (`read_file`, as AutoAgents' examples write one) is in
// src/lib.rs, shared with src/bin/autoagents_plan.rs.

// ---------------------------------------------------------------------------
// The agent, and its round clock (AutoAgents' hooks are the agent's own).

#[agent(
    name = "file_reader",
    description = "You read the files in the workspace with the read_file tool.",
    tools = [ReadFile::new(self.root.clone())],
)]
#[derive(Clone)]
pub struct FileReader {
    root: PathBuf,
    clock: RoundClock,
}

#[async_trait]
impl AgentHooks for FileReader {
    async fn on_turn_complete(&self, _turn_index: usize, _ctx: &Context) {
        self.clock.lap();
    }
}

async fn one_task(llm: Arc<dyn LLMProvider>, root: PathBuf, rounds: usize) -> TaskResult {
    let clock = RoundClock::start();
    let reader = FileReader {
        root,
        clock: clock.clone(),
    };
    // The examples' memory is `SlidingWindowMemory::new(10)`; a ReAct run
    // keeps its own history in the agent's memory (the user turn, then two
    // messages a round), so the window holds the whole 10-round script.
    let memory = Box::new(SlidingWindowMemory::new(2 * rounds + 1));
    let failed = |why: String| TaskResult {
        rounds: 0,
        finished: false,
        latencies_ms: Vec::new(),
        error: Some(why),
    };
    let handle =
        match AgentBuilder::<_, DirectAgent>::new(ReActAgent::with_max_turns(reader, rounds + 1))
            .llm(llm)
            .memory(memory)
            .build()
            .await
        {
            Ok(handle) => handle,
            Err(e) => return failed(format!("cannot build the agent: {e}")),
        };
    // Nothing here reads the agent's event stream (its examples print it):
    // dropping the receiver makes each event a no-op send.
    drop(handle.rx);
    let result = handle.agent.run(Task::new("Read the files in turn.")).await;
    let (_, latencies_ms) = clock.take();
    let rounds = latencies_ms.len();
    let (finished, error) = match result {
        // A run that reaches its turn limit also returns, with no answer.
        Ok(answer) if !answer.is_empty() => (true, None),
        Ok(_) => (false, Some("the run ended without an answer".into())),
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
    let (args, root) = peer_harness::setup("autoagents_agent");
    let code = run(&args, &root).await;
    peer_harness::exit(&root, code);
}

async fn run(args: &Args, root: &Path) -> i32 {
    // AutoAgents' OpenAI backend defaults to the Responses API; its
    // ChatCompletions mode is what an OpenAI-compatible server speaks.
    let llm: Arc<OpenAI> = match LLMBuilder::<OpenAI>::new()
        .api_key("not-needed")
        .base_url(args.base_url.clone())
        .model("bench")
        .api_mode(OpenAIApiMode::ChatCompletions)
        .temperature(0.0)
        .build()
    {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("error: cannot build the LLM client: {e}");
            return 1;
        }
    };

    // One request first: a server that is not there is one clear error.
    let probe = [ChatMessage::user().content("Round 1").build()];
    if let Err(e) = llm.chat(&probe, None).await {
        eprintln!(
            "error: the scripted server at {} does not answer: {e}",
            args.base_url
        );
        return 1;
    }
    let llm: Arc<dyn LLMProvider> = llm;

    let peer = Peer {
        framework: "autoagents",
        version: FRAMEWORK_VERSION,
        latency_note: LATENCY_NOTE,
    };
    measure(args, &peer, || {
        one_task(Arc::clone(&llm), root.to_path_buf(), args.rounds)
    })
    .await
}

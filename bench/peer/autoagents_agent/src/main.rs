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
use std::sync::{Arc, Mutex};
use std::time::Instant;

use autoagents::async_trait;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::ReActAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{AgentBuilder, AgentHooks, Context, DirectAgent};
use autoagents::core::tool::{ToolCallError, ToolRuntime, ToolT};
use autoagents::llm::LLMProvider;
use autoagents::llm::backends::openai::{OpenAI, OpenAIApiMode};
use autoagents::llm::builder::LLMBuilder;
use autoagents::llm::chat::{ChatMessage, ChatProvider};
use autoagents_derive::{ToolInput, agent, tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;

const FILES: usize = 4;
const FRAMEWORK_VERSION: &str = "autoagents 0.4.0";
const LATENCY_NOTE: &str = "a round is one ReAct turn (the model call, the read_file call and \
     the memory writes around them): it ends at the agent's on_turn_complete hook and starts \
     where the previous round ended (the first at the task's start)";

// ---------------------------------------------------------------------------
// The tool, as AutoAgents' examples write one: `ToolInput` arguments, a
// `#[tool]` struct and its `ToolRuntime`.

#[derive(Serialize, Deserialize, ToolInput, Debug)]
pub struct ReadFileArgs {
    #[input(description = "The file's path, relative to the workspace")]
    path: String,
}

#[tool(
    name = "read_file",
    description = "Read a UTF-8 text file in the workspace and return its content.",
    input = ReadFileArgs,
)]
pub struct ReadFile {
    root: PathBuf,
}

impl ReadFile {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }
}

fn tool_error(message: String) -> ToolCallError {
    ToolCallError::RuntimeError(message.into())
}

#[async_trait]
impl ToolRuntime for ReadFile {
    async fn execute(&self, args: Value) -> Result<Value, ToolCallError> {
        let args: ReadFileArgs = serde_json::from_value(args)?;
        // Small files, read inline (as Hermes' own read_file does).
        let target = self
            .root
            .join(&args.path)
            .canonicalize()
            .map_err(|e| tool_error(format!("error: {e}")))?;
        if target == self.root || !target.starts_with(&self.root) {
            return Err(tool_error(
                "error: the path is outside the workspace".into(),
            ));
        }
        let text =
            std::fs::read_to_string(&target).map_err(|e| tool_error(format!("error: {e}")))?;
        Ok(Value::String(text))
    }
}

// ---------------------------------------------------------------------------
// The agent, and its round clock (AutoAgents' hooks are the agent's own).

struct Clock {
    last: Instant,
    latencies_ms: Vec<f64>,
}

#[derive(Clone)]
pub struct RoundClock(Arc<Mutex<Clock>>);

impl RoundClock {
    fn start() -> Self {
        Self(Arc::new(Mutex::new(Clock {
            last: Instant::now(),
            latencies_ms: Vec::with_capacity(16),
        })))
    }

    fn lap(&self) {
        let mut clock = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let lap = now.duration_since(clock.last).as_secs_f64() * 1e3;
        clock.latencies_ms.push(lap);
        clock.last = now;
    }

    fn laps(&self) -> Vec<f64> {
        std::mem::take(
            &mut self
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .latencies_ms,
        )
    }
}

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

// ---------------------------------------------------------------------------
// The harness, the same as the other peers'.

struct Args {
    base_url: String,
    tasks: usize,
    concurrency: usize,
    rounds: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut base_url = None;
    let (mut tasks, mut concurrency, mut rounds) = (100usize, 50usize, 10usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            println!(
                "usage: autoagents_agent --base-url URL [--tasks N] [--concurrency C] [--rounds R]"
            );
            std::process::exit(0);
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs a value"))
        };
        let number = |text: String| {
            text.parse::<usize>()
                .map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
        };
        match flag.as_str() {
            "--base-url" => base_url = Some(value()?),
            "--tasks" => tasks = number(value()?)?,
            "--concurrency" => concurrency = number(value()?)?,
            "--rounds" => rounds = number(value()?)?,
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    let base_url = base_url.ok_or("--base-url is required (the scripted server, with /v1)")?;
    if tasks.min(concurrency).min(rounds) < 1 {
        return Err("--tasks, --concurrency and --rounds must be at least 1".into());
    }
    Ok(Args {
        base_url,
        tasks,
        concurrency,
        rounds,
    })
}

/// f0.txt .. f3.txt, the same files Hermes' bench reads, in a fresh
/// temporary folder.
fn make_workspace() -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let folder =
        std::env::temp_dir().join(format!("autoagents-peer-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&folder)?;
    for k in 0..FILES {
        std::fs::write(
            folder.join(format!("f{k}.txt")),
            format!("file {k}\n").repeat(20),
        )?;
    }
    folder.canonicalize()
}

/// Nearest-rank quantile, as Hermes' bench computes it.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// This process's user + system CPU time in seconds, and its peak RSS in KiB.
fn rusage() -> (f64, i64) {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        seconds(usage.ru_utime) + seconds(usage.ru_stime),
        usage.ru_maxrss as i64,
    )
}

#[derive(Serialize)]
struct Report<'a> {
    framework: &'a str,
    tasks: usize,
    concurrency: usize,
    rounds_per_task: usize,
    base_url: &'a str,
    finished: usize,
    rounds: usize,
    seconds: f64,
    rounds_per_sec: f64,
    cpu_per_round_us: f64,
    latency_p50_ms: f64,
    latency_p99_ms: f64,
    /// Rounds timed (each task's, summed): equal to `rounds` when every
    /// round was seen.
    latency_samples: usize,
    peak_rss_mib: f64,
    failed: usize,
    version: &'a str,
    latency_note: &'a str,
}

/// One task's rounds, whether it ended with the answer, and its round times.
type TaskResult = (usize, bool, Vec<f64>, Option<String>);

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
    let handle =
        match AgentBuilder::<_, DirectAgent>::new(ReActAgent::with_max_turns(reader, rounds + 1))
            .llm(llm)
            .memory(memory)
            .build()
            .await
        {
            Ok(handle) => handle,
            Err(e) => {
                return (
                    0,
                    false,
                    Vec::new(),
                    Some(format!("cannot build the agent: {e}")),
                );
            }
        };
    // Nothing here reads the agent's event stream (its examples print it):
    // dropping the receiver makes each event a no-op send.
    drop(handle.rx);
    let result = handle.agent.run(Task::new("Read the files in turn.")).await;
    let latencies_ms = clock.laps();
    let turns = latencies_ms.len();
    match result {
        // A run that reaches its turn limit also returns, with no answer.
        Ok(answer) if !answer.is_empty() => (turns, true, latencies_ms, None),
        Ok(_) => (
            turns,
            false,
            latencies_ms,
            Some("the run ended without an answer".into()),
        ),
        Err(e) => (turns, false, latencies_ms, Some(e.to_string())),
    }
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let root = match make_workspace() {
        Ok(root) => root,
        Err(e) => {
            eprintln!("error: cannot make the workspace: {e}");
            std::process::exit(1);
        }
    };
    let code = run(&args, &root).await;
    let _ = std::fs::remove_dir_all(&root);
    std::process::exit(code);
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

    let gate = Arc::new(Semaphore::new(args.concurrency));
    let (cpu_before, _) = rusage();
    let started = Instant::now();
    let mut handles = Vec::with_capacity(args.tasks);
    for _ in 0..args.tasks {
        let gate = Arc::clone(&gate);
        let llm = Arc::clone(&llm);
        let root = root.to_path_buf();
        let rounds = args.rounds;
        handles.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            one_task(llm, root, rounds).await
        }));
    }
    let mut results = Vec::with_capacity(args.tasks);
    for handle in handles {
        results.push(
            handle
                .await
                .unwrap_or_else(|e| (0, false, Vec::new(), Some(format!("task panicked: {e}")))),
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    let (cpu_after, maxrss_kib) = rusage();

    let rounds: usize = results.iter().map(|r| r.0).sum();
    let finished = results.iter().filter(|r| r.1).count();
    let failed = results.iter().filter(|r| r.3.is_some()).count();
    if let Some(first) = results.iter().find_map(|r| r.3.as_ref()) {
        eprintln!("warning: {failed} tasks failed, first: {first}");
    }
    let mut latencies: Vec<f64> = results.into_iter().flat_map(|r| r.2).collect();
    latencies.sort_by(f64::total_cmp);
    let cpu_us = (cpu_after - cpu_before) * 1e6;
    let report = Report {
        framework: "autoagents",
        tasks: args.tasks,
        concurrency: args.concurrency,
        rounds_per_task: args.rounds,
        base_url: &args.base_url,
        finished,
        rounds,
        seconds,
        rounds_per_sec: if seconds > 0.0 {
            rounds as f64 / seconds
        } else {
            0.0
        },
        cpu_per_round_us: if rounds > 0 {
            cpu_us / rounds as f64
        } else {
            0.0
        },
        latency_p50_ms: percentile(&latencies, 0.50),
        latency_p99_ms: percentile(&latencies, 0.99),
        latency_samples: latencies.len(),
        peak_rss_mib: maxrss_kib as f64 / 1024.0,
        failed,
        version: FRAMEWORK_VERSION,
        latency_note: LATENCY_NOTE,
    };
    match serde_json::to_string(&report) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("error: cannot write the report: {e}");
            return 1;
        }
    }
    0
}

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
//!     bench/peer/rig_agent/target/release/rig_agent \
//!         --base-url http://127.0.0.1:PORT/v1 --tasks 1000 --concurrency 50

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rig_agent::agent::{
    AgentHook, HookContext, ModelTurnAction, ModelTurnFinished, OutcomeAction, OutcomeEvent,
};
use rig_agent::tool::{Tool, ToolContext};
use rig_agent::{Agent, AgentBuilder};
use rig_core::effect::EffectKind;
use rig_core::providers::openai::{OpenAI, OpenAIConfig};
use rig_core::wasm_compat::WasmCompatSend;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

const FILES: usize = 4;
const FRAMEWORK_VERSION: &str = "rig-core 0.44.0, rig-agent 0.44.0";
const LATENCY_NOTE: &str = "a round ends when its read_file call has resolved on the agent's bus \
     (an AgentHook's on_outcome for the tool effect) or, for the last round, when the run \
     returns; it starts where the previous round ended (the first at the task's start)";

// ---------------------------------------------------------------------------
// The tool, as rig's examples write one: a type implementing `Tool`.

#[derive(Deserialize)]
struct ReadFileArgs {
    path: String,
}

#[derive(Debug)]
struct ReadFileError(String);

impl std::fmt::Display for ReadFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadFileError {}

/// A native `read_file` confined to the workspace.
#[derive(Clone)]
struct ReadFile {
    root: PathBuf,
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Args = ReadFileArgs;
    type Output = String;
    type Error = ReadFileError;

    fn description(&self) -> String {
        "Read a UTF-8 text file in the workspace and return its content.".to_string()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file's path, relative to the workspace"
                }
            },
            "required": ["path"]
        })
    }

    async fn call(
        &self,
        _context: &mut ToolContext,
        args: Self::Args,
    ) -> Result<Self::Output, Self::Error> {
        // Small files, read inline (as Hermes' own read_file does).
        let target = self
            .root
            .join(&args.path)
            .canonicalize()
            .map_err(|e| ReadFileError(format!("error: {e}")))?;
        if target == self.root || !target.starts_with(&self.root) {
            return Err(ReadFileError(
                "error: the path is outside the workspace".into(),
            ));
        }
        std::fs::read_to_string(&target).map_err(|e| ReadFileError(format!("error: {e}")))
    }
}

// ---------------------------------------------------------------------------
// The round clock: a per-run hook (rig's way to observe a run).

struct Clock {
    last: Instant,
    turns: usize,
    latencies_ms: Vec<f64>,
}

#[derive(Clone)]
struct RoundClock(Arc<Mutex<Clock>>);

impl RoundClock {
    fn start() -> Self {
        Self(Arc::new(Mutex::new(Clock {
            last: Instant::now(),
            turns: 0,
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
}

impl AgentHook for RoundClock {
    fn on_model_turn_finished(
        &self,
        _ctx: &HookContext,
        _event: ModelTurnFinished<'_>,
    ) -> impl Future<Output = ModelTurnAction> + WasmCompatSend {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).turns += 1;
        std::future::ready(ModelTurnAction::Continue)
    }

    fn on_outcome(
        &self,
        _ctx: &HookContext,
        event: OutcomeEvent<'_>,
    ) -> impl Future<Output = OutcomeAction> + WasmCompatSend {
        if matches!(event.kind, EffectKind::ToolCall { .. }) {
            self.lap();
        }
        std::future::ready(OutcomeAction::Proceed)
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
            println!("usage: rig_agent --base-url URL [--tasks N] [--concurrency C] [--rounds R]");
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
    let folder = std::env::temp_dir().join(format!("rig-peer-{}-{nanos}", std::process::id()));
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

async fn one_task(agent: Arc<Agent>, rounds: usize) -> TaskResult {
    let clock = RoundClock::start();
    let result = agent
        .prompt("Read the files in turn.")
        .max_turns(rounds + 1)
        .add_hook(clock.clone())
        .await;
    // The last round (the answer) ends when the run returns.
    if result.is_ok() {
        clock.lap();
    }
    let (turns, latencies_ms) = {
        let mut clock = clock.0.lock().unwrap_or_else(|e| e.into_inner());
        (clock.turns, std::mem::take(&mut clock.latencies_ms))
    };
    match result {
        Ok(_) => (turns, true, latencies_ms, None),
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

    let gate = Arc::new(Semaphore::new(args.concurrency));
    let (cpu_before, _) = rusage();
    let started = Instant::now();
    let mut handles = Vec::with_capacity(args.tasks);
    for _ in 0..args.tasks {
        let gate = Arc::clone(&gate);
        let agent = Arc::clone(&agent);
        let rounds = args.rounds;
        handles.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            one_task(agent, rounds).await
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
        framework: "rig",
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

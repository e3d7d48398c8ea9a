//! The in-process model against llama.cpp's own HTTP server, on the same
//! GGUF file and the same agent file task, in one run.
//!
//! Each leg runs the README's file task (read `notes.txt`, write a summary,
//! finish) with the real agent loop and the default tools on a fresh
//! workspace, greedy decoding, and reports wall time per task, time per
//! round, and the model's time to first token and decode speed on a chat
//! request. Legs:
//!
//! - `candle`: the built-in engine (default feature `native-llm`) as it
//!   runs by default, under the decision's grammar with jump-forward;
//!   `candle, no grammar` parses free text leniently, and `candle+grammar,
//!   no jump` chooses every token itself;
//! - `llama.cpp+grammar` and `llama.cpp`: the llama.cpp engine with and
//!   without the decision grammar (feature `local-llm`); with the grammar
//!   it feeds each decision's fixed text in one batch (jump-forward,
//!   `LocalConfig::jump_forward`), and `llama.cpp+grammar, no jump` is the
//!   same leg choosing every token itself;
//! - `http server`: llama.cpp's own OpenAI-compatible server on the same
//!   file, through Hermes's HTTP client. `LLAMA_SERVER_URL` names a running
//!   one; otherwise the bench starts one with `bench/llama-server/setup.sh`
//!   (the PyPI package `xllamacpp` in a venv, installed on first use) and
//!   stops it at the end. `HERMES_BENCH_NO_SERVER=1` skips the leg.
//! - `… warm`: the same after another task (`PRIME`, a different goal on
//!   the same tools) ran first, as in everyday use: the engine (candle,
//!   llama.cpp) loaded anew in a fresh state but with the KV cache its first
//!   conversation kept on disk (`LocalConfig::kept_prompts`, what `hermes
//!   run` does), and a server started anew that answered `PRIME` first
//!   (its slots keep that conversation in memory). Both then share the
//!   system prompt and tool list with what they saw, not the goal.
//!
//! ```sh
//! cargo bench --bench local_llm                       # candle + server
//! cargo bench --features local-llm --bench local_llm  # + llama.cpp in-process
//! ```
//!
//! `HERMES_BENCH_PASSES=N` runs every leg N times, in turn and each from
//! cold (engines loaded, the server started anew), and prints the ratios of
//! the medians: this VM's speed drifts by 10% within minutes, so one pass
//! can favour whichever leg ran in a quiet moment.
//!
//! Time to first token = a request with `max_tokens` 1; decode speed =
//! (N - 1) tokens over the extra time a request with `max_tokens` N takes.
//! The model is `HERMES_MODEL_PATH` or the cached 1.5B model
//! (`hermes model pull 1.5b`). Figures are printed, never checked.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes::agent::{Agent, CancellationToken};
use hermes::limits::Limits;
use hermes::llm::{ChatMessage, ChatRequest, Llm, OpenAiClient, OpenAiConfig};
use hermes::tools::defaults::{default_toolbox, SearchChoice, ToolOptions};
use hermes::tools::Workspace;

const DECODE_TOKENS: u32 = 64;
const RUNS: usize = 3;
/// The README's first task.
const TASK: &str = "First use read_file to read notes.txt. Then use write_file to save a one-line summary of it to summary.txt. Then finish.";
/// The task a warm leg's model answered before `TASK`.
const PRIME: &str =
    "Use list_dir to see which files the workspace holds, then finish with their names.";

fn request(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system("You are a helpful assistant."),
            ChatMessage::user("List the planets of the solar system with one fact about each."),
        ],
        temperature: 0.0,
        max_tokens,
        json: false,
        schema: None,
        seed: None,
    }
}

/// Median time of `RUNS` requests, and the completion tokens of the last.
async fn timed(llm: &dyn Llm, max_tokens: u32) -> (Duration, u64) {
    let mut times = Vec::new();
    let mut tokens = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let response = llm.chat(&request(max_tokens)).await.expect("model request");
        times.push(started.elapsed());
        tokens = response.usage.completion_tokens;
    }
    times.sort();
    (times[RUNS / 2], tokens)
}

/// One leg's figures.
#[derive(Clone)]
struct Leg {
    name: &'static str,
    task_wall: Duration,
    status: String,
    rounds: u32,
    /// The model's time in each round, in order.
    round_model: Vec<Duration>,
    prompt_tokens: u64,
    cached_tokens: u64,
    ttft: Duration,
    tokens_per_second: f64,
}

impl Leg {
    fn per_round(&self) -> Duration {
        self.task_wall / self.rounds.max(1)
    }
}

/// Runs `task` on a fresh copy of `examples/workspace`.
async fn file_task(llm: Arc<dyn Llm>, task: &str) -> (Duration, hermes::agent::Outcome) {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace/notes.txt");
    std::fs::copy(&source, dir.path().join("notes.txt")).expect("copy notes.txt");
    let workspace = Workspace::new(dir.path()).expect("workspace");
    let options = ToolOptions {
        search: SearchChoice::Off,
        ..ToolOptions::default()
    };
    let tools = default_toolbox(&workspace, &options)
        .await
        .expect("default tools");
    let limits = Limits {
        temperature: 0.0,
        max_rounds: 10,
        timeout: Duration::from_secs(900),
        ..Limits::default()
    };
    let agent = Agent::new(llm, Arc::new(tools.toolbox)).with_limits(limits);
    let started = Instant::now();
    let outcome = agent.run(task, &CancellationToken::new()).await;
    (started.elapsed(), outcome)
}

async fn measure(name: &'static str, llm: Arc<dyn Llm>) -> Leg {
    let (task_wall, outcome) = file_task(Arc::clone(&llm), TASK).await;
    let (first, _) = timed(llm.as_ref(), 1).await;
    let (full, tokens) = timed(llm.as_ref(), DECODE_TOKENS).await;
    let decode = full.saturating_sub(first).as_secs_f64().max(1e-6);
    let leg = Leg {
        name,
        task_wall,
        status: outcome.status.as_str().to_string(),
        rounds: outcome.rounds,
        round_model: outcome
            .journal
            .iter()
            .map(|e| Duration::from_millis(e.llm_ms))
            .collect(),
        prompt_tokens: outcome.usage.prompt_tokens,
        cached_tokens: outcome.usage.cached_tokens,
        ttft: first,
        tokens_per_second: tokens.saturating_sub(1) as f64 / decode,
    };
    let per_round: Vec<String> = leg
        .round_model
        .iter()
        .map(|d| format!("{:.1}", d.as_secs_f64()))
        .collect();
    println!(
        "{name:<18} task {:>6.1} s ({}, {} rounds, {:>5.1} s/round; model s per round: {})   prompt {} tokens ({} reused)   first token {:>6.0} ms   decode {:>5.1} tokens/s",
        leg.task_wall.as_secs_f64(),
        leg.status,
        leg.rounds,
        leg.per_round().as_secs_f64(),
        per_round.join(" "),
        leg.prompt_tokens,
        leg.cached_tokens,
        leg.ttft.as_secs_f64() * 1e3,
        leg.tokens_per_second,
    );
    leg
}

/// The llama.cpp server to measure: `LLAMA_SERVER_URL`, or one started by
/// `bench/llama-server/setup.sh` (returned second, to stop at the end).
fn server(model: &Path) -> Option<(String, Option<PathBuf>)> {
    if let Ok(url) = std::env::var("LLAMA_SERVER_URL") {
        return Some((url, None));
    }
    if std::env::var_os("HERMES_BENCH_NO_SERVER").is_some() {
        println!("http server: skipped (HERMES_BENCH_NO_SERVER)");
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/llama-server");
    let started = Command::new("bash")
        .arg(dir.join("setup.sh"))
        .arg(model)
        .arg("18080")
        .output();
    match started {
        Ok(out) if out.status.success() => {
            let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
            Some((url, Some(dir.join("server.pid"))))
        }
        Ok(out) => {
            println!(
                "http server: could not start it with bench/llama-server/setup.sh: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
        Err(e) => {
            println!("http server: could not run bench/llama-server/setup.sh: {e}");
            None
        }
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

#[tokio::main]
async fn main() {
    let Some(path) = common::model_path("HERMES_MODEL_PATH") else {
        return;
    };
    println!("model {} · task: {TASK}", path.display());
    let passes = std::env::var("HERMES_BENCH_PASSES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let mut runs: Vec<Leg> = Vec::new();
    for pass in 1..=passes {
        if passes > 1 {
            println!("pass {pass} of {passes}");
        }
        runs.extend(one_pass(&path).await);
    }
    let median = |name: &str| -> Option<Leg> {
        let mut of: Vec<&Leg> = runs.iter().filter(|l| l.name == name).collect();
        of.sort_by_key(|l| l.task_wall);
        of.get(of.len() / 2).map(|l| (*l).clone())
    };
    // The reference: llama.cpp's server, or without it (HERMES_BENCH_NO_SERVER)
    // the built-in engine with no grammar.
    let Some(http) = median(SERVER).or_else(|| median(CANDLE_FREE)) else {
        return;
    };
    if passes > 1 {
        println!("medians of {passes} passes (each pass cold: engines loaded and the server started anew):");
    }
    let http_warm = median(SERVER_WARM);
    for name in LEGS
        .iter()
        .filter(|n| **n != SERVER && **n != SERVER_WARM && **n != http.name)
    {
        let Some(leg) = median(name) else { continue };
        // A warm leg is compared with the warm server.
        let http = match (*name == WARM || *name == CANDLE_WARM, &http_warm) {
            (true, Some(warm)) => warm.clone(),
            _ => http.clone(),
        };
        println!(
            "ratio ({} / {}): wall per task {:.2}x ({:.1} s / {:.1} s), time per round {:.2}x, first token {:.2}x, decode speed {:.2}x",
            leg.name,
            http.name,
            ratio(leg.task_wall, http.task_wall),
            leg.task_wall.as_secs_f64(),
            http.task_wall.as_secs_f64(),
            ratio(leg.per_round(), http.per_round()),
            ratio(leg.ttft, http.ttft),
            leg.tokens_per_second / http.tokens_per_second.max(1e-9),
        );
    }
}

/// The legs, in the order each pass runs them.
const LEGS: [&str; 10] = [
    "candle",
    CANDLE_FREE,
    CANDLE_NO_JUMP,
    CANDLE_WARM,
    "llama.cpp+grammar",
    "llama.cpp",
    NO_JUMP,
    WARM,
    SERVER,
    SERVER_WARM,
];
const CANDLE_WARM: &str = "candle warm";
const CANDLE_FREE: &str = "candle, no grammar";
const CANDLE_NO_JUMP: &str = "candle+grammar, no jump";
const NO_JUMP: &str = "llama.cpp+grammar, no jump";
const WARM: &str = "llama.cpp+grammar warm";
const SERVER: &str = "http server";
const SERVER_WARM: &str = "http server warm";

/// Every leg once, each on a freshly loaded engine (or a freshly started
/// server), so every pass starts cold.
async fn one_pass(path: &Path) -> Vec<Leg> {
    let mut legs = Vec::new();
    #[cfg(feature = "native-llm")]
    {
        use hermes::llm::native::{NativeConfig, NativeLlm};
        for (name, grammar, jump_forward) in [
            (LEGS[0], true, true),
            (CANDLE_FREE, false, false),
            (CANDLE_NO_JUMP, true, false),
        ] {
            let mut config = NativeConfig::new(path);
            config.grammar = grammar;
            config.jump_forward = jump_forward;
            let llm = NativeLlm::load(config).expect("load model (candle)");
            legs.push(measure(name, Arc::new(llm)).await);
        }
        // Warm, as for llama.cpp below: PRIME keeps its state on disk, a
        // new engine starts from it.
        let kept = tempfile::tempdir().expect("temp dir");
        let mut config = NativeConfig::new(path);
        config.kept_prompts = Some(kept.path().to_path_buf());
        let primer = NativeLlm::load(config.clone()).expect("load model (candle)");
        file_task(Arc::new(primer), PRIME).await;
        let llm = NativeLlm::load(config).expect("load model (candle)");
        legs.push(measure(CANDLE_WARM, Arc::new(llm)).await);
    }
    #[cfg(feature = "local-llm")]
    {
        use hermes::llm::local::{LocalConfig, LocalLlm};
        for (name, grammar, jump_forward) in [
            (LEGS[4], true, true),
            (LEGS[5], false, false),
            (NO_JUMP, true, false),
        ] {
            let mut config = LocalConfig::new(path);
            config.grammar = grammar;
            config.jump_forward = jump_forward;
            let llm = LocalLlm::load(config).expect("load model (llama.cpp)");
            legs.push(measure(name, Arc::new(llm)).await);
        }
        // Warm: PRIME on one engine keeps its conversation on disk; a new
        // engine (a new `hermes run`) starts from it.
        let kept = tempfile::tempdir().expect("temp dir");
        let mut config = LocalConfig::new(path);
        config.kept_prompts = Some(kept.path().to_path_buf());
        let primer = LocalLlm::load(config.clone()).expect("load model (llama.cpp)");
        file_task(Arc::new(primer), PRIME).await;
        let llm = LocalLlm::load(config).expect("load model (llama.cpp)");
        legs.push(measure(WARM, Arc::new(llm)).await);
    }
    #[cfg(not(feature = "local-llm"))]
    println!(
        "llama.cpp in-process (with and without the grammar): not built; add --features local-llm"
    );
    for (name, prime) in [(SERVER, false), (SERVER_WARM, true)] {
        let Some((url, pid_file)) = server(path) else {
            return legs;
        };
        let client: Arc<dyn Llm> =
            Arc::new(OpenAiClient::new(OpenAiConfig::new(&url, "served")).expect("HTTP client"));
        if prime {
            file_task(Arc::clone(&client), PRIME).await;
        }
        legs.push(measure(name, client).await);
        if let Some(pid_file) = pid_file {
            stop_server(&pid_file);
        }
    }
    legs
}

/// Stops the server `pid_file` names and waits until it is gone (the
/// next leg starts one on the same port).
fn stop_server(pid_file: &Path) {
    let Ok(pid) = std::fs::read_to_string(pid_file) else {
        return;
    };
    let pid = pid.trim();
    let _ = Command::new("kill").arg(pid).status();
    for _ in 0..100 {
        let alive = Command::new("kill").args(["-0", pid]).output();
        if !alive.is_ok_and(|out| out.status.success()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

//! Time per round over a 10-round run on the in-process llama.cpp engine:
//! does a round cost the same at round 10 as at round 3?
//!
//! The loop runs for real (prompt layout, tools, journal) on a workspace of
//! nine files, and the engine reads every prompt the loop builds and writes
//! a decision under the grammar, as in a run; the decision the loop acts on
//! is a scripted one (read the next file; after nine, finish), so every
//! run has the same 10 rounds whatever the model would choose. The engine's
//! own answer is capped at `DECISION_TOKENS` tokens, so each round decodes
//! the same amount and what is left to vary is the prompt's new tokens.
//! Printed per round: prompt tokens, tokens reused from the cache, the share
//! reused, and the model's time.
//!
//! ```sh
//! cargo bench --features local-llm --bench local_llm_rounds
//! ```
//!
//! The model is `HERMES_MODEL_PATH` or the cached 1.5B model (`hermes model
//! pull 1.5b`). Figures are printed, never checked.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hermes::agent::{Agent, CancellationToken};
use hermes::limits::Limits;
use hermes::llm::local::{LocalConfig, LocalLlm};
use hermes::llm::{ChatRequest, ChatResponse, Llm, LlmError, Usage};
use hermes::tools::defaults::{default_toolbox, SearchChoice, ToolOptions};
use hermes::tools::Workspace;

/// Rounds of the run: nine reads, then `finish`.
const ROUNDS: usize = 10;
/// Tokens the engine writes per round.
const DECISION_TOKENS: u32 = 48;

/// The engine reads each prompt and answers; the loop gets the script's
/// decision instead of the engine's.
struct Scripted {
    engine: LocalLlm,
    decisions: Mutex<VecDeque<String>>,
    rounds: Mutex<Vec<(Duration, Usage)>>,
}

#[async_trait]
impl Llm for Scripted {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let capped = ChatRequest {
            max_tokens: DECISION_TOKENS,
            ..request.clone()
        };
        let started = Instant::now();
        let answer = self.engine.chat(&capped).await?;
        self.rounds
            .lock()
            .expect("rounds")
            .push((started.elapsed(), answer.usage));
        let decision = self
            .decisions
            .lock()
            .expect("decisions")
            .pop_front()
            .unwrap_or_else(finish);
        Ok(ChatResponse {
            content: decision,
            ..answer
        })
    }

    fn model(&self) -> &str {
        self.engine.model()
    }
}

fn finish() -> String {
    r#"{"thought": "all files read", "action": {"name": "finish", "args": {"result": "read nine files"}}}"#.into()
}

#[tokio::main]
async fn main() {
    let Some(path) = common::model_path("HERMES_MODEL_PATH") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut decisions: VecDeque<String> = VecDeque::new();
    for i in 1..ROUNDS {
        let name = format!("part{i}.txt");
        let text = format!(
            "Part {i} of the report: the count for region {i} is {}.\n",
            i * 17
        );
        std::fs::write(dir.path().join(&name), text).expect("write a file");
        decisions.push_back(format!(
            r#"{{"thought": "the next file to read is {name}", "action": {{"name": "read_file", "args": {{"path": "{name}"}}}}}}"#
        ));
    }
    let workspace = Workspace::new(dir.path()).expect("workspace");
    let options = ToolOptions {
        search: SearchChoice::Off,
        ..ToolOptions::default()
    };
    let tools = default_toolbox(&workspace, &options)
        .await
        .expect("default tools");
    let llm = Arc::new(Scripted {
        engine: LocalLlm::load(LocalConfig::new(&path)).expect("load the model"),
        decisions: Mutex::new(decisions),
        rounds: Mutex::new(Vec::new()),
    });
    let limits = Limits {
        temperature: 0.0,
        max_rounds: ROUNDS as u32,
        timeout: Duration::from_secs(900),
        ..Limits::default()
    };
    let agent =
        Agent::new(Arc::clone(&llm) as Arc<dyn Llm>, Arc::new(tools.toolbox)).with_limits(limits);
    let goal = "Read part1.txt to part9.txt one by one, then finish with the sum of the counts.";
    let outcome = agent.run(goal, &CancellationToken::new()).await;
    println!(
        "model {} · {} rounds ({}), scripted decisions, {DECISION_TOKENS} tokens written per round",
        path.display(),
        outcome.rounds,
        outcome.status.as_str()
    );
    println!("round  prompt  reused  share  model s");
    let rounds = llm.rounds.lock().expect("rounds").clone();
    for (i, (took, usage)) in rounds.iter().enumerate() {
        println!(
            "{:>5}  {:>6}  {:>6}  {:>4.0}%  {:>7.2}",
            i + 1,
            usage.prompt_tokens,
            usage.cached_tokens,
            100.0 * usage.cached_tokens as f64 / usage.prompt_tokens.max(1) as f64,
            took.as_secs_f64()
        );
    }
    let later: Vec<f64> = rounds
        .iter()
        .skip(2)
        .map(|(t, _)| t.as_secs_f64())
        .collect();
    if let (Some(first), Some(last)) = (later.first(), later.last()) {
        let mean = later.iter().sum::<f64>() / later.len() as f64;
        println!(
            "rounds 3-{}: mean {mean:.2} s, round {} / round 3 = {:.2}",
            rounds.len(),
            rounds.len(),
            last / first
        );
    }
}

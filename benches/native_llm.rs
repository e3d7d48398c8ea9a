//! The built-in engine's throughput: one request alone against four at
//! once on the same loaded model (the executors of a plan), with time to
//! first token and decode tokens per second for each, and the ratio.
//!
//! ```sh
//! cargo bench --bench native_llm            # the default model from the cache
//! HERMES_TEST_MODEL_PATH=model.gguf cargo bench --bench native_llm
//! HERMES_BENCH_RULES=160 cargo bench --bench native_llm   # a 3,000-token context
//! ```
//!
//! Each prompt carries a system prompt of about 900 tokens, as long as an
//! agent's first round (`HERMES_BENCH_RULES`, default 45 rules of 20 tokens;
//! 160 gives an agent's context after a few rounds). The one-request and four-request legs use different questions
//! after one shared system prompt, which is read once and then reused. Time to first token = a request with
//! `max_tokens` 1; decode speed = the extra tokens over the extra time a
//! request with `max_tokens` N takes. Figures are printed, never checked.
//!
//! A second pair of legs asks for agent decisions under the decision's
//! JSON schema (the grammar and jump-forward, as the loop decodes): the
//! same measures with each token's mask computed and the schema's fixed
//! text fed ahead, which is how an agent's executors share the engine.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes::llm::native::{NativeConfig, NativeLlm};
use hermes::llm::{ChatMessage, ChatRequest, Llm};
use hermes::tools::{builtin, Toolbox, Workspace};
use serde_json::Value;

const DECODE_TOKENS: u32 = 48;
const CONCURRENT: usize = 4;

const QUESTIONS: [&str; CONCURRENT + 1] = [
    "Name three programming languages and what each is known for.",
    "List the planets of the solar system with one fact about each.",
    "List five rivers of Europe with the countries they cross.",
    "Explain in a few lines how a hash map finds a key.",
    "Describe the water cycle in a few short sentences.",
];

/// A system prompt about as long as an agent's (its tools and rules: some
/// 900 tokens by default), so attention over a real context is part of
/// each figure.
fn system_prompt() -> String {
    let rules = std::env::var("HERMES_BENCH_RULES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(45);
    let rule = "Rule: answer plainly, check each fact before stating it, prefer short lists, and never invent a source. ";
    format!("You are a helpful assistant. {}", rule.repeat(rules))
}

fn request(question: &str, max_tokens: u32, schema: Option<&Arc<Value>>) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system(system_prompt()),
            ChatMessage::user(question),
        ],
        temperature: 0.0,
        max_tokens,
        json: schema.is_some(),
        schema: schema.cloned(),
        seed: None,
    }
}

/// The decision schema of an agent with the file tools: what the loop
/// constrains every decision to.
fn decision_schema() -> Arc<Value> {
    let mut toolbox = Toolbox::new();
    let workspace = Workspace::new(std::env::temp_dir()).expect("a workspace");
    builtin::register_file_tools(&mut toolbox, &workspace);
    Arc::new(hermes::agent::decide::decision_schema(&toolbox))
}

/// Wall time of `n` requests sent at once, and their completion tokens.
async fn at_once(
    llm: &NativeLlm,
    questions: &[&str],
    max_tokens: u32,
    schema: Option<&Arc<Value>>,
) -> (Duration, u64) {
    let started = Instant::now();
    let answers = futures::future::join_all(questions.iter().map(|q| async move {
        llm.chat(&request(q, max_tokens, schema))
            .await
            .expect("model")
    }))
    .await;
    let tokens = answers.iter().map(|a| a.usage.completion_tokens).sum();
    (started.elapsed(), tokens)
}

struct Figures {
    ttft: Duration,
    decode_tokens_per_second: f64,
}

/// Time to first token on a cold prompt; then, with the prompts' states
/// cached, decode speed from a 1-token and an N-token request (reading
/// the prompt again would add its own noise to the difference).
async fn measure(llm: &NativeLlm, questions: &[&str], schema: Option<&Arc<Value>>) -> Figures {
    let n = questions.len();
    let (cold, _) = at_once(llm, questions, 1, schema).await;
    let (first, _) = at_once(llm, questions, 1, schema).await;
    let (full, tokens) = at_once(llm, questions, DECODE_TOKENS, schema).await;
    let extra_tokens = tokens.saturating_sub(n as u64) as f64;
    let extra_time = full.saturating_sub(first).as_secs_f64().max(1e-6);
    Figures {
        ttft: cold,
        decode_tokens_per_second: extra_tokens / extra_time,
    }
}

#[tokio::main]
async fn main() {
    let Some(path) = common::model_path("HERMES_TEST_MODEL_PATH") else {
        return;
    };
    let config = NativeConfig::new(&path);
    let started = Instant::now();
    let llm = NativeLlm::load(config).expect("load");
    println!("load: {:.1} s", started.elapsed().as_secs_f64());
    // The first products repack the weights for the CPU, and the shared
    // system prompt is read once: not measured.
    let started = Instant::now();
    let warm = llm
        .chat(&request("Say hello.", 2, None))
        .await
        .expect("model");
    let read = started.elapsed().as_secs_f64();
    println!(
        "prompt: {} tokens, first read (nothing cached) {read:.2} s, {:.0} prompt tokens/s",
        warm.usage.prompt_tokens,
        warm.usage.prompt_tokens as f64 / read
    );
    report(&llm, "", &QUESTIONS, None).await;
    let decisions = DECISION_GOALS.map(|goal| format!("Goal: {goal}\nReply with your decision."));
    let decisions: Vec<&str> = decisions.iter().map(String::as_str).collect();
    report(&llm, "decisions, ", &decisions, Some(&decision_schema())).await;
}

/// Goals the decision legs ask about (one alone, then four at once).
const DECISION_GOALS: [&str; CONCURRENT + 1] = [
    "Count the lines containing ERROR in logs/a.log and write the count to count.txt.",
    "Sum the amount column of sales.csv per region and write summary.md.",
    "Find the owner of every project in projects/ and write owners.md.",
    "Fix avg.py so that it prints the average of numbers.txt.",
    "Convert staff.csv to team.json, a list of objects with name and team.",
];

/// One request alone (the first question), then the others at once, and
/// the ratio of their decode speeds; `label` starts each line.
async fn report(llm: &NativeLlm, label: &str, questions: &[&str], schema: Option<&Arc<Value>>) {
    let one = measure(llm, &questions[..1], schema).await;
    let many = measure(llm, &questions[1..], schema).await;
    println!(
        "{label}1 request:    time to first token {:>6.2} s, decode {:>6.1} tokens/s",
        one.ttft.as_secs_f64(),
        one.decode_tokens_per_second
    );
    println!(
        "{label}{CONCURRENT} at once:    time to first token {:>6.2} s, decode {:>6.1} tokens/s in all",
        many.ttft.as_secs_f64(),
        many.decode_tokens_per_second
    );
    println!(
        "{label}ratio:        {:.2}x the decode tokens/s of one request",
        many.decode_tokens_per_second / one.decode_tokens_per_second
    );
}

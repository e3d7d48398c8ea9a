//! Throughput of the in-process model: time to first token and decode
//! tokens per second, and the same through a llama.cpp-compatible HTTP
//! server serving the same model when `LLAMA_SERVER_URL` names one
//! (`bench/llama-server/setup.sh model.gguf` starts one from the PyPI
//! package `xllamacpp` and prints its URL; or `llama-server -m model.gguf
//! --port 8080` → `http://127.0.0.1:8080/v1`).
//! The ratio shows what skipping the server saves. The built-in candle
//! engine (default feature `native-llm`) is measured on the same file too.
//!
//! ```sh
//! cargo bench --features local-llm --bench local_llm
//! ```
//!
//! Time to first token = a request with `max_tokens` 1; decode speed =
//! (N - 1) tokens over the extra time a request with `max_tokens` N takes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hermes::llm::local::{LocalConfig, LocalLlm};
use hermes::llm::{ChatMessage, ChatRequest, Llm, OpenAiClient, OpenAiConfig};

const DECODE_TOKENS: u32 = 64;
const RUNS: usize = 3;

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

struct Figures {
    ttft: Duration,
    tokens_per_second: f64,
}

async fn measure(name: &str, llm: &dyn Llm) -> Figures {
    let (first, _) = timed(llm, 1).await;
    let (full, tokens) = timed(llm, DECODE_TOKENS).await;
    let decode = full.saturating_sub(first).as_secs_f64().max(1e-6);
    let figures = Figures {
        ttft: first,
        tokens_per_second: tokens.saturating_sub(1) as f64 / decode,
    };
    println!(
        "{name:<12} time to first token {:>8.1} ms   decode {:>6.1} tokens/s",
        figures.ttft.as_secs_f64() * 1000.0,
        figures.tokens_per_second
    );
    figures
}

#[tokio::main]
async fn main() {
    let path = std::env::var("HERMES_MODEL_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/hermes/models/qwen2.5-coder-0.5b-instruct.gguf")
        });
    if !path.is_file() {
        println!(
            "skipped: no model at {} (scripts/fetch-model.sh 0.5b, or set HERMES_MODEL_PATH)",
            path.display()
        );
        return;
    }
    let config = LocalConfig::new(&path);
    println!("model {} · {} threads", path.display(), config.threads);
    let local = LocalLlm::load(config).expect("load model");
    let in_process = measure("llama.cpp", &local).await;
    drop(local);
    #[cfg(feature = "native-llm")]
    {
        let native =
            hermes::llm::native::NativeLlm::load(hermes::llm::native::NativeConfig::new(&path))
                .expect("load model");
        let candle = measure("candle", &native).await;
        println!(
            "ratio (candle / llama.cpp): time to first token {:.2}x, decode speed {:.2}x",
            candle.ttft.as_secs_f64() / in_process.ttft.as_secs_f64(),
            candle.tokens_per_second / in_process.tokens_per_second
        );
    }
    match std::env::var("LLAMA_SERVER_URL") {
        Ok(url) => {
            let server = OpenAiClient::new(OpenAiConfig::new(url, "served")).expect("client");
            let http = measure("http server", &server).await;
            println!(
                "ratio (http / in-process): time to first token {:.2}x, decode speed {:.2}x",
                http.ttft.as_secs_f64() / in_process.ttft.as_secs_f64(),
                http.tokens_per_second / in_process.tokens_per_second
            );
        }
        Err(_) => println!("no LLAMA_SERVER_URL: the HTTP comparison was not run"),
    }
}

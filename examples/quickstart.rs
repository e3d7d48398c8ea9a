//! Quickstart: one agent, one task, from Rust.
//!
//! Runs against any OpenAI-compatible endpoint (Ollama by default):
//!
//! ```sh
//! ollama pull qwen2.5:7b
//! cargo run --release --example quickstart -- "Summarise notes.txt into summary.md"
//! ```
//!
//! `HERMES_BASE_URL`, `HERMES_MODEL` and `HERMES_API_KEY` work as for the CLI.

use std::sync::Arc;

use hermes::agent::{Agent, CancellationToken};
use hermes::limits::Limits;
use hermes::llm::openai::DEFAULT_BASE_URL;
use hermes::llm::{OpenAiClient, OpenAiConfig};
use hermes::tools::defaults::{default_toolbox, ToolOptions};
use hermes::tools::Workspace;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let goal = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Summarise notes.txt into summary.md".into());

    // 1. The model: any OpenAI-compatible chat endpoint.
    let base_url = std::env::var("HERMES_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.into());
    let model = std::env::var("HERMES_MODEL").unwrap_or_else(|_| "qwen2.5:7b".into());
    let mut config = OpenAiConfig::new(base_url, model);
    config.api_key = std::env::var("HERMES_API_KEY").ok();
    let llm = Arc::new(OpenAiClient::new(config)?);

    // 2. The tools: the defaults (file tools confined to a workspace
    //    directory, sandboxed run_code, http_fetch, ...), here only the file tools.
    let workspace = Workspace::new("examples/workspace")?;
    let options = ToolOptions {
        only: Some(vec![
            "read_file".into(),
            "write_file".into(),
            "list_dir".into(),
        ]),
        ..ToolOptions::default()
    };
    let tools = default_toolbox(&workspace, &options).await?;
    for warning in &tools.warnings {
        eprintln!("warning: {warning}");
    }
    let toolbox = tools.toolbox;

    // 3. The loop, with tighter limits than the defaults.
    let limits = Limits {
        max_rounds: 10,
        ..Limits::default()
    };
    let outcome = Agent::new(llm, Arc::new(toolbox))
        .with_limits(limits)
        .run(&goal, &CancellationToken::new())
        .await;

    println!("status: {}", outcome.status.as_str());
    match outcome.result {
        Some(result) => println!("{result}"),
        None => println!("{}", outcome.progress),
    }
    Ok(())
}

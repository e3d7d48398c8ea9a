//! Many agents from Rust: a planner splits a task, executors run the pieces.
//!
//! ```sh
//! cargo run --release --example planner -- "Read notes.txt, list the owners, and write owners.md"
//! ```
//!
//! Uses the roles in `agents/`, the workspace `examples/workspace`, and the
//! model from `HERMES_BASE_URL` / `HERMES_MODEL` (Ollama by default).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hermes::actors::{Hermes, RoleRegistry, TaskRequest};
use hermes::llm::openai::DEFAULT_BASE_URL;
use hermes::llm::{OpenAiClient, OpenAiConfig};
use hermes::tools::defaults::{default_toolbox, known_tools, ToolOptions};
use hermes::tools::Workspace;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let task = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Read notes.txt, list the owners, and write owners.md".into());

    let base_url = std::env::var("HERMES_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.into());
    let model = std::env::var("HERMES_MODEL").unwrap_or_else(|_| "qwen2.5:7b".into());
    let llm = Arc::new(OpenAiClient::new(OpenAiConfig::new(base_url, model))?);

    // Every tool that works here (run_code needs bubblewrap, web_search a
    // configured provider); what is missing is said once.
    let workspace = Workspace::new("examples/workspace")?;
    let tools = default_toolbox(&workspace, &ToolOptions::default()).await?;
    for warning in &tools.warnings {
        eprintln!("warning: {warning}");
    }
    let toolbox = tools.toolbox;
    let roles = RoleRegistry::load_dir(Path::new("agents"), &known_tools(&toolbox))?;

    let hermes = Hermes::builder()
        .llm(llm)
        .toolbox(toolbox)
        .roles(roles)
        .concurrency(4)
        .max_replans(2)
        .on_event(Arc::new(|event| eprintln!("[plan] {event}")))
        .spawn()
        .await?;

    let report = hermes
        .submit(TaskRequest::new(task).with_timeout(Duration::from_secs(600)))
        .await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    hermes.shutdown().await;
    Ok(())
}

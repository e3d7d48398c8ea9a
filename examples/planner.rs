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
use hermes::tools::{builtin, Toolbox, Workspace};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let task = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Read notes.txt, list the owners, and write owners.md".into());

    let base_url = std::env::var("HERMES_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.into());
    let model = std::env::var("HERMES_MODEL").unwrap_or_else(|_| "qwen2.5:7b".into());
    let llm = Arc::new(OpenAiClient::new(OpenAiConfig::new(base_url, model))?);

    let workspace = Workspace::new("examples/workspace")?;
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &workspace);
    let roles = RoleRegistry::load_dir(Path::new("agents"), &toolbox.names())?;

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

//! The agent loop with no model server at all: a scripted model replays
//! three decisions, including one malformed reply that the lenient parser
//! repairs, against real file tools in a temporary workspace.
//!
//! ```sh
//! cargo run --release --example offline_demo
//! ```

use std::sync::Arc;

use hermes::agent::{Agent, CancellationToken};
use hermes::llm::ScriptedLlm;
use hermes::tools::{builtin, Toolbox, Workspace};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("hermes-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("notes.txt"),
        "Ship the loop first. Then the planner.",
    )?;

    let llm = Arc::new(ScriptedLlm::new([
        // Canonical shape.
        r#"{"thought": "Read the notes first.", "action": {"name": "read_file", "args": {"path": "notes.txt"}}}"#,
        // What small models often write: prose, a fence, single quotes, a trailing comma.
        "Sure! Here you go:\n```json\n{'thought': 'Write the summary.', 'action': {'name': 'write_file', 'args': {'path': 'summary.md', 'content': '- loop first\\n- planner next',},}}\n```",
        // ReAct-style finish.
        r#"{"action": "final_answer", "action_input": "summary.md written (2 bullets)"}"#,
    ]));
    let workspace = Workspace::new(&dir)?;
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &workspace);

    let outcome = Agent::new(llm, Arc::new(toolbox))
        .on_round(Arc::new(|e| {
            eprintln!("[round {}] {} {}", e.round, e.action, e.status)
        }))
        .run(
            "Summarise notes.txt into summary.md",
            &CancellationToken::new(),
        )
        .await;

    println!("{}", serde_json::to_string_pretty(&outcome)?);
    println!(
        "summary.md:\n{}",
        std::fs::read_to_string(dir.join("summary.md"))?
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

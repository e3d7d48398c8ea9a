//! What the AutoAgents peers share: the native `read_file` tool on the
//! workspace, written as AutoAgents' examples write one (`ToolInput`
//! arguments, a `#[tool]` struct and its `ToolRuntime`). `src/main.rs` is
//! the peer of `hermes bench http`, `src/bin/autoagents_plan.rs` the peer of
//! the multi-agent plan workload.

use std::path::PathBuf;

use autoagents::async_trait;
use autoagents::core::tool::{ToolCallError, ToolRuntime, ToolT};
use autoagents_derive::{ToolInput, tool};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// A `read_file` confined to the workspace `root` (canonical).
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

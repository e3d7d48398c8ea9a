//! What the rig peers share: the native `read_file` tool on the workspace,
//! written as rig's examples write one (a type implementing rig's `Tool`).
//! `src/main.rs` is the peer of `hermes bench http`, `src/bin/rig_plan.rs`
//! the peer of the multi-agent plan workload.

use std::path::PathBuf;

use rig_agent::tool::{Tool, ToolContext};
use serde::Deserialize;

/// The tool's arguments.
#[derive(Deserialize)]
pub struct ReadFileArgs {
    /// The file's path, relative to the workspace.
    pub path: String,
}

/// Why a read failed, as the model sees it.
#[derive(Debug)]
pub struct ReadFileError(String);

impl std::fmt::Display for ReadFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReadFileError {}

/// A native `read_file` confined to the workspace.
#[derive(Clone)]
pub struct ReadFile {
    /// The workspace (canonical).
    pub root: PathBuf,
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

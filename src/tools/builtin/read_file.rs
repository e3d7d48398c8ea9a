//! `read_file {path}`: a text file from the workspace.

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use tokio::io::AsyncReadExt;

use crate::tools::{ParamKind, ParamSpec, Tool, ToolError, ToolSpec, Workspace};

/// Largest prefix of a file that is read; observations are truncated far
/// below this anyway, and this keeps a huge file from filling memory.
const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Reads a UTF-8 text file inside the workspace.
pub struct ReadFile {
    workspace: Workspace,
}

impl ReadFile {
    /// The tool, confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_file",
            "Read a text file in the workspace and return its content.",
        )
        .param(
            ParamSpec::new(
                "path",
                ParamKind::String,
                "file path relative to the workspace root",
            )
            .required(),
        )
        .example(json!({"path": "notes.txt"}))
        .idempotent()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        super::required_str(&args, "path")?;
        let (path, shown) = self.workspace.resolve_arg(&args)?;
        if path.is_dir() {
            return Err(ToolError::new(format!(
                "`{shown}` is a directory; use list_dir"
            )));
        }
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| ToolError::new(format!("cannot read `{shown}`: {e}")))?;
        let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
        let mut bytes = Vec::new();
        file.take(MAX_READ_BYTES)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| ToolError::new(format!("cannot read `{shown}`: {e}")))?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if size > MAX_READ_BYTES {
            text.push_str(&format!(
                "\n[file is {size} bytes; read the first {MAX_READ_BYTES}]"
            ));
        }
        Ok(Value::String(text))
    }
}

//! `read_file {path}`: a text file from the workspace.

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::io::Read;

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
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || read(&workspace, &args)).await
    }
}

/// The file `args.path` names, as text (lossy UTF-8), cut at
/// [`MAX_READ_BYTES`] with a note saying so.
fn read(workspace: &Workspace, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let (path, shown) = workspace.resolve_arg(args)?;
    if path.is_dir() {
        return Err(ToolError::new(format!(
            "`{shown}` is a directory; use list_dir"
        )));
    }
    let cannot_read = |e: std::io::Error| ToolError::new(format!("cannot read `{shown}`: {e}"));
    let file = std::fs::File::open(&path).map_err(cannot_read)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(size.min(MAX_READ_BYTES) as usize);
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    if size > MAX_READ_BYTES {
        text.push_str(&format!(
            "\n[file is {size} bytes; read the first {MAX_READ_BYTES}]"
        ));
    }
    Ok(Value::String(text))
}

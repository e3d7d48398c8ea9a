//! `read_file {path}`: a text file from the workspace.

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::Path;

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
        // A small file is read right here: a few syscalls on the page
        // cache, cheaper than the blocking pool's hop (a thread woken and
        // put back to sleep, two context switches), which was the largest
        // share of a round's CPU in `hermes bench loop`. Anything else
        // (large, missing, a directory) goes to the pool.
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= INLINE_READ_BYTES);
        if small {
            read(&path, &shown)
        } else {
            super::on_blocking_pool(move || read(&path, &shown)).await
        }
    }
}

/// Files up to this size are read without leaving the calling task.
const INLINE_READ_BYTES: u64 = 64 * 1024;

/// The file at `path` (shown to the model as `shown`), as text (lossy
/// UTF-8), cut at [`MAX_READ_BYTES`] with a note saying so.
fn read(path: &Path, shown: &str) -> Result<Value, ToolError> {
    if path.is_dir() {
        return Err(ToolError::new(format!(
            "`{shown}` is a directory; use list_dir"
        )));
    }
    let cannot_read = |e: std::io::Error| ToolError::new(format!("cannot read `{shown}`: {e}"));
    let file = std::fs::File::open(path).map_err(cannot_read)?;
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

//! `list_dir {path}`: the entries of a workspace directory.

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolError, ToolSpec, Workspace};

/// Most entries listed; the rest are counted.
const MAX_ENTRIES: usize = 500;

/// Lists a directory inside the workspace: folders end in `/`, files show their size.
pub struct ListDir {
    workspace: Workspace,
}

impl ListDir {
    /// The tool, confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_dir",
            "List the files and folders in a workspace directory.",
        )
        .param(ParamSpec::new(
            "path",
            ParamKind::String,
            "directory relative to the workspace root; \".\" is the root",
        ))
        .example(json!({"path": "."}))
        .idempotent()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let (path, shown) = self.workspace.resolve_arg(&args)?;
        let mut reader = tokio::fs::read_dir(&path)
            .await
            .map_err(|e| ToolError::new(format!("cannot list `{shown}`: {e}")))?;
        let mut entries = Vec::new();
        while let Some(entry) = reader
            .next_entry()
            .await
            .map_err(|e| ToolError::new(format!("cannot list `{shown}`: {e}")))?
        {
            if self.workspace.is_state(&entry.path()) {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata().await.ok();
            entries.push(match meta {
                Some(m) if m.is_dir() => format!("{name}/"),
                Some(m) => format!("{name} ({} bytes)", m.len()),
                None => name,
            });
        }
        entries.sort();
        let total = entries.len();
        entries.truncate(MAX_ENTRIES);
        if total > MAX_ENTRIES {
            entries.push(format!("… and {} more", total - MAX_ENTRIES));
        }
        Ok(json!({"path": shown, "entries": entries}))
    }
}

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
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || list(&workspace, &args)).await
    }
}

/// The entries of the directory `args.path` names (the root without one),
/// sorted, at most [`MAX_ENTRIES`] and a count of the rest.
fn list(workspace: &Workspace, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let (path, shown) = workspace.resolve_arg(args)?;
    let cannot_list = |e: std::io::Error| ToolError::new(format!("cannot list `{shown}`: {e}"));
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&path).map_err(cannot_list)? {
        let entry = entry.map_err(cannot_list)?;
        if workspace.is_state(&entry.path()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push(match entry.metadata() {
            Ok(m) if m.is_dir() => format!("{name}/"),
            Ok(m) => format!("{name} ({} bytes)", m.len()),
            Err(_) => name,
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

//! `write_file {path, content}`: creates or replaces a file in the workspace.

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec, Workspace};

/// Writes a text file inside the workspace, creating parent directories.
pub struct WriteFile {
    workspace: Workspace,
}

impl WriteFile {
    /// The tool, confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "write_file",
            "Create or overwrite a text file in the workspace with the given content.",
        )
        .param(
            ParamSpec::new(
                "path",
                ParamKind::String,
                "file path relative to the workspace root",
            )
            .required(),
        )
        .param(ParamSpec::new("content", ParamKind::String, "the full text to write").required())
        .example(
            json!({"path": "report.md", "content": "# Report\nThe build passed on all targets."}),
        )
        .idempotent()
        .effect(ToolEffect::Writes)
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        super::required_str(&args, "path")?;
        super::required_str(&args, "content")?;
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || write(&workspace, &args)).await
    }
}

/// Writes `args.content` to `args.path`, creating its folders.
fn write(workspace: &Workspace, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let content = super::required_str(args, "content")?;
    let (path, shown) = workspace.resolve_arg(args)?;
    if path.is_dir() {
        return Err(ToolError::new(format!("`{shown}` is a directory")));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ToolError::new(format!("cannot create folders for `{shown}`: {e}")))?;
    }
    std::fs::write(&path, content)
        .map_err(|e| ToolError::new(format!("cannot write `{shown}`: {e}")))?;
    Ok(json!({"path": shown, "bytes": content.len()}))
}

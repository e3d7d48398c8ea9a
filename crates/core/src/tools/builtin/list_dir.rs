//! `list_dir {path}`: the entries of a workspace directory.

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec, Workspace};

/// Most entries listed; the rest are counted.
const MAX_ENTRIES: usize = 500;

/// Lists a directory inside the workspace: entries are bare names (folders
/// end in `/`), file sizes come in a map of their own. A size written next
/// to the name (`beach.jpg (17 bytes)`) was copied into answers as part of
/// the name (EVALS.md, section 14).
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
        .inline()
        .effect(ToolEffect::Lists)
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || list(&workspace, &args)).await
    }
}

/// The entries of the directory `args.path` names (the root without one),
/// sorted, at most [`MAX_ENTRIES`] and a count of the rest, with the sizes
/// of the files among them in bytes.
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
            Ok(m) if m.is_dir() => (format!("{name}/"), None),
            Ok(m) => (name, Some(m.len())),
            Err(_) => (name, None),
        });
    }
    entries.sort();
    let total = entries.len();
    entries.truncate(MAX_ENTRIES);
    let mut sizes = Map::new();
    for (name, bytes) in &entries {
        if let Some(bytes) = bytes {
            sizes.insert(name.clone(), json!(bytes));
        }
    }
    let mut names: Vec<String> = entries.into_iter().map(|(name, _)| name).collect();
    if total > MAX_ENTRIES {
        names.push(format!("… and {} more", total - MAX_ENTRIES));
    }
    Ok(json!({"path": shown, "entries": names, "sizes": sizes}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_bare_names_and_sizes_are_apart() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "four").unwrap();
        std::fs::write(dir.path().join("a.csv"), "x,y\n").unwrap();
        std::fs::create_dir(dir.path().join("photos")).unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let listed = list(&workspace, &Map::new()).unwrap();
        assert_eq!(listed["entries"], json!(["a.csv", "b.txt", "photos/"]));
        assert_eq!(listed["sizes"], json!({"a.csv": 4, "b.txt": 4}));
        let missing = list(&workspace, json!({"path": "nope"}).as_object().unwrap()).unwrap_err();
        assert!(
            missing.message.contains("cannot list `nope`"),
            "{}",
            missing.message
        );
    }
}

//! `write_file {path, content}`: creates or replaces a file in the workspace.

use std::borrow::Cow;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::content_format::{self, Checked};
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
        .inline()
        .effect(ToolEffect::Writes)
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        super::required_str(&args, "path")?;
        super::required_str(&args, "content")?;
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || write(&workspace, &args)).await
    }
}

/// Whether `content` opens with a unified diff's hunk header (`@@ -6,3
/// +6,3 @@`): a small model copies the summary run_code shows of a change
/// it saved (`saved`) into write_file, replacing the changed file with the
/// summary (EVALS.md, section 26).
fn is_diff_hunk(content: &str) -> bool {
    let first = content.trim_start().lines().next().unwrap_or("");
    let Some(rest) = first.strip_prefix("@@ -") else {
        return false;
    };
    rest.contains(" +") && rest.contains(" @@")
}

/// Whether a path is meant to hold a diff.
fn is_patch_file(shown: &str) -> bool {
    [".diff", ".patch"].iter().any(|ext| shown.ends_with(ext))
}

/// Writes `args.content` to `args.path`, creating its folders; content
/// that is not the format the name promises is refused (or unwrapped from
/// a code fence, see [`content_format`]).
fn write(workspace: &Workspace, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let content = super::required_str(args, "content")?;
    let (path, shown) = workspace.resolve_arg(args)?;
    if path.is_dir() {
        return Err(ToolError::new(format!("`{shown}` is a directory")));
    }
    if path.is_file() && is_diff_hunk(content) && !is_patch_file(&shown) {
        return Err(ToolError::new(format!(
            "not written: this content is a diff (a change summary, as run_code shows what it saved), not the text of `{shown}`; the file was left as it is. If the change is already saved, read_file `{shown}` to check it; otherwise write the whole new text"
        )));
    }
    let mut repaired = None;
    let content: Cow<'_, str> = match content_format::check(&shown, content) {
        Checked::Fine => Cow::Borrowed(content),
        Checked::Refused(why) => return Err(ToolError::new(why)),
        Checked::Unwrapped(inner) => {
            repaired = Some("the Markdown code fence around the content was dropped");
            Cow::Owned(inner)
        }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ToolError::new(format!("cannot create folders for `{shown}`: {e}")))?;
    }
    std::fs::write(&path, content.as_bytes())
        .map_err(|e| ToolError::new(format!("cannot write `{shown}`: {e}")))?;
    let mut written = json!({"path": shown, "bytes": content.len()});
    if let Some(repaired) = repaired {
        written["repaired"] = json!(repaired);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(path: &str, content: &str) -> Map<String, Value> {
        json!({"path": path, "content": content})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn a_diff_summary_does_not_replace_the_file_it_describes() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        std::fs::write(dir.path().join("app.ini"), "[logging]\nlevel = warning\n").unwrap();
        let hunk = "@@ -6,3 +6,3 @@\n [logging]\n-level = debug\n+level = warning";
        let error = write(&ws, &args("app.ini", hunk)).unwrap_err();
        assert!(
            error
                .message
                .starts_with("not written: this content is a diff"),
            "{}",
            error.message
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("app.ini")).unwrap(),
            "[logging]\nlevel = warning\n"
        );
        // A patch file, or a new file, takes it; so does ordinary text.
        write(&ws, &args("fix.patch", hunk)).unwrap();
        write(&ws, &args("new.txt", hunk)).unwrap();
        write(&ws, &args("app.ini", "[logging]\nlevel = error\n")).unwrap();
    }

    #[test]
    fn content_that_is_not_the_files_format_is_refused_and_a_fence_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let error = write(&ws, &args("team.json", "name,team\nAna,core\n")).unwrap_err();
        assert!(
            error.message.contains("must hold JSON"),
            "{}",
            error.message
        );
        assert!(!dir.path().join("team.json").exists());
        let written = write(&ws, &args("team.json", "```json\n[1, 2]\n```")).unwrap();
        assert_eq!(
            written["repaired"],
            "the Markdown code fence around the content was dropped"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("team.json")).unwrap(),
            "[1, 2]\n"
        );
    }
}

//! `search_files {text, path?}`: the lines of workspace files that hold a
//! text, like `grep -rniF`.
//!
//! Asked which of several files mentions a word, a small model listed the
//! folder and then named a file it never opened (`blue-falcon.md`, in
//! every run of find-file-with-string; EVALS.md, sections 13 to 15). One
//! call that answers "where is this text" is what the task needs, and what
//! agents' file toolsets offer (`grep`).

use std::io::Read;
use std::path::Path;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec, Workspace};

/// Most matching lines returned; the rest are counted.
const MAX_MATCHES: usize = 50;
/// Most characters of a matching line shown.
const MAX_LINE_CHARS: usize = 200;
/// Largest file searched (bytes); larger ones are skipped and counted.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// Searches the text files of a folder (or one file) of the workspace.
pub struct SearchFiles {
    workspace: Workspace,
}

impl SearchFiles {
    /// The tool, confined to `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl Tool for SearchFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "search_files",
            "Search the text files under a workspace folder for the lines that contain some given text (ignoring case), like grep: how many lines matched, and for each its file's path and name, line number and text. Finding none is an error.",
        )
        .param(
            ParamSpec::new(
                "text",
                ParamKind::String,
                "the text to look for, as written (not a pattern)",
            )
            .required(),
        )
        .param(ParamSpec::new(
            "path",
            ParamKind::String,
            "folder or file to search, relative to the workspace root; \".\" (the default) is the whole workspace",
        ))
        .example(json!({"text": "TODO", "path": "."}))
        .idempotent()
        .inline()
        .effect(ToolEffect::Reads)
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let text = super::required_str(&args, "text")?.to_string();
        if text.trim().is_empty() {
            return Err(ToolError::new(
                "parameter `text` is empty: give the words to look for",
            ));
        }
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || search(&workspace, &args, &text)).await
    }
}

/// The matches of `text` in the files under `args.path` (the root without
/// one), in path order, at most [`MAX_MATCHES`].
fn search(
    workspace: &Workspace,
    args: &Map<String, Value>,
    text: &str,
) -> Result<Value, ToolError> {
    let (start, shown) = workspace.resolve_arg(args)?;
    if !start.exists() {
        return Err(ToolError::new(format!(
            "cannot search `{shown}`: no such file or folder in the workspace"
        )));
    }
    let under = start
        .strip_prefix(workspace.root())
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let mut files = Vec::new();
    if start.is_file() {
        files.push(under);
    } else {
        workspace.walk(|path, metadata| {
            if metadata.is_some_and(std::fs::Metadata::is_file) && path.starts_with(&under) {
                files.push(path.to_path_buf());
            }
            true
        });
        files.sort();
    }
    let needle = text.to_lowercase();
    let (mut matches, mut more, mut searched, mut skipped) = (Vec::new(), 0, 0, 0);
    for file in &files {
        let Some(content) = read_text(&workspace.root().join(file)) else {
            skipped += 1;
            continue;
        };
        searched += 1;
        for (i, line) in content.lines().enumerate() {
            if !line.to_lowercase().contains(&needle) {
                continue;
            }
            if matches.len() == MAX_MATCHES {
                more += 1;
                continue;
            }
            let line: String = line.trim().chars().take(MAX_LINE_CHARS).collect();
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
            matches.push(json!({
                "path": file.to_string_lossy(),
                "name": name,
                "line": i + 1,
                "text": line,
            }));
        }
    }
    if matches.is_empty() {
        // As grep's exit status says: nothing found is a failed search, so
        // a search for a value the model only imagined is not taken for a
        // read of the files (the read check), and the model is sent to them.
        let what = if start.is_file() {
            format!("`{shown}`")
        } else {
            format!("the {searched} text file(s) under `{shown}`")
        };
        return Err(ToolError::new(format!(
            "no line of {what} contains `{text}`; read a file (read_file) to see what it holds"
        )));
    }
    let mut found = json!({
        "text": text,
        "path": shown,
        "lines_matched": matches.len() + more,
        "matches": matches,
        "files_searched": searched,
    });
    if more > 0 {
        found["more_matches"] = json!(more);
    }
    if skipped > 0 {
        found["files_skipped"] = json!(skipped);
    }
    Ok(found)
}

/// The file's text; `None` when it is too large or not UTF-8 text.
fn read_text(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn matching_lines_come_with_their_path_and_number() {
        let (_dir, ws) = tree(&[
            ("docs/a.md", b"# A\nnothing here\n"),
            (
                "docs/b.md",
                b"# B\nCalled Blue-Falcon inside.\nblue-falcon again\n",
            ),
            ("notes.txt", b"blue-falcon at the root\n"),
            ("photo.bin", &[0xff, 0xfe, 0x00]),
        ]);
        let tool = SearchFiles::new(ws);
        let found = tool
            .call(args(json!({"text": "blue-falcon", "path": "docs"})))
            .await
            .unwrap();
        assert_eq!(
            found,
            json!({
                "text": "blue-falcon",
                "path": "docs",
                "lines_matched": 2,
                "matches": [
                    {"path": "docs/b.md", "name": "b.md", "line": 2, "text": "Called Blue-Falcon inside."},
                    {"path": "docs/b.md", "name": "b.md", "line": 3, "text": "blue-falcon again"},
                ],
                "files_searched": 2,
            })
        );
        let everywhere = tool
            .call(args(json!({"text": "BLUE-falcon"})))
            .await
            .unwrap();
        assert_eq!(everywhere["matches"].as_array().unwrap().len(), 3);
        assert_eq!(everywhere["files_skipped"], 1);
        let one_file = tool
            .call(args(json!({"text": "root", "path": "notes.txt"})))
            .await
            .unwrap();
        assert_eq!(one_file["matches"][0]["path"], "notes.txt");
    }

    #[tokio::test]
    async fn bad_paths_and_empty_text_are_clear_errors() {
        let (_dir, ws) = tree(&[("a.txt", b"x\n")]);
        let tool = SearchFiles::new(ws);
        let missing = tool
            .call(args(json!({"text": "x", "path": "nope"})))
            .await
            .unwrap_err();
        assert!(
            missing.message.contains("cannot search `nope`"),
            "{missing:?}"
        );
        let outside = tool
            .call(args(json!({"text": "x", "path": "../"})))
            .await
            .unwrap_err();
        assert!(!outside.message.is_empty());
        let empty = tool.call(args(json!({"text": " "}))).await.unwrap_err();
        assert!(empty.message.contains("`text` is empty"), "{empty:?}");
        let none = tool.call(args(json!({"text": "-10.0"}))).await.unwrap_err();
        assert_eq!(
            none.message,
            "no line of the 1 text file(s) under `.` contains `-10.0`; read a file (read_file) to see what it holds"
        );
        let none = tool
            .call(args(json!({"text": "y", "path": "a.txt"})))
            .await
            .unwrap_err();
        assert!(
            none.message.starts_with("no line of `a.txt` contains `y`"),
            "{none:?}"
        );
    }

    #[tokio::test]
    async fn many_matches_are_cut_and_counted() {
        let many = "hit\n".repeat(MAX_MATCHES + 7);
        let (_dir, ws) = tree(&[("log.txt", many.as_bytes())]);
        let found = SearchFiles::new(ws)
            .call(args(json!({"text": "hit"})))
            .await
            .unwrap();
        assert_eq!(found["matches"].as_array().unwrap().len(), MAX_MATCHES);
        assert_eq!(found["more_matches"], 7);
        assert_eq!(found["lines_matched"], MAX_MATCHES + 7);
    }
}

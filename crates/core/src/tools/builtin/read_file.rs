//! `read_file {path}`: a text file from the workspace.

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec, Workspace};

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
        .inline()
        .effect(ToolEffect::Reads)
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
            return read(&path, &shown);
        }
        let workspace = self.workspace.clone();
        super::on_blocking_pool(move || {
            read(&path, &shown).map_err(|e| elsewhere(e, &workspace, &path, &shown))
        })
        .await
    }
}

/// Most other places named in the error for a file that is not there.
const MAX_ELSEWHERE: usize = 3;

/// `error` for a path that does not exist, with where files of the same
/// name are in the workspace: small models drop or invent a folder
/// (`where.txt` for `vault/where.txt`) and then retry the same missing path
/// until the repetition guard stops them (EVALS.md, section 14).
fn elsewhere(mut error: ToolError, workspace: &Workspace, path: &Path, shown: &str) -> ToolError {
    if path.symlink_metadata().is_ok() {
        return error;
    }
    let found: Vec<String> = workspace
        .files_named_like(shown, MAX_ELSEWHERE)
        .into_iter()
        .map(|found| format!("`{found}`"))
        .collect();
    match found.len() {
        0 => {}
        1 => {
            let _ = write!(error.message, "; a file of that name is at {}", found[0]);
        }
        _ => {
            let _ = write!(
                error.message,
                "; files of that name are at {}",
                found.join(", ")
            );
        }
    }
    error
}

/// Files up to this size are read without leaving the calling task.
const INLINE_READ_BYTES: u64 = 64 * 1024;

/// The file at `path` (shown to the model as `shown`), as text (lossy
/// UTF-8), cut at [`MAX_READ_BYTES`] with a note saying so.
fn read(path: &Path, shown: &str) -> Result<Value, ToolError> {
    let cannot_read = |e: std::io::Error| ToolError::new(format!("cannot read `{shown}`: {e}"));
    // A directory opens too; the open file's metadata says what it is, so
    // the path is looked up once.
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    let metadata = file.metadata().map_err(cannot_read)?;
    if metadata.is_dir() {
        return Err(ToolError::new(format!(
            "`{shown}` is a directory; use list_dir"
        )));
    }
    let size = metadata.len();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(dir: &std::path::Path, path: &str) -> Result<Value, ToolError> {
        let tool = ReadFile::new(Workspace::new(dir).unwrap());
        let mut args = Map::new();
        args.insert("path".into(), Value::from(path));
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(tool.call(args))
    }

    #[test]
    fn small_and_large_files_read_whole_and_huge_ones_cut() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small.txt"), "hello").unwrap();
        let large = "x".repeat(INLINE_READ_BYTES as usize + 10);
        std::fs::write(dir.path().join("large.txt"), &large).unwrap();
        let huge = "y".repeat(MAX_READ_BYTES as usize + 5);
        std::fs::write(dir.path().join("huge.txt"), &huge).unwrap();
        assert_eq!(call(dir.path(), "small.txt").unwrap(), "hello");
        assert_eq!(call(dir.path(), "large.txt").unwrap(), large.as_str());
        let cut = call(dir.path(), "huge.txt").unwrap();
        let cut = cut.as_str().unwrap();
        assert!(cut.starts_with(&huge[..MAX_READ_BYTES as usize]));
        assert!(cut.ends_with(&format!(
            "[file is {} bytes; read the first {MAX_READ_BYTES}]",
            huge.len()
        )));
    }

    #[test]
    fn a_directory_or_a_missing_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = call(dir.path(), "sub").unwrap_err();
        assert_eq!(e.message, "`sub` is a directory; use list_dir");
        let e = call(dir.path(), "nope.txt").unwrap_err();
        assert!(
            e.message.starts_with("cannot read `nope.txt`:"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("of that name"), "{}", e.message);
    }

    #[test]
    fn a_missing_file_names_where_files_of_its_name_are() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("vault/deep")).unwrap();
        std::fs::write(dir.path().join("vault/where.txt"), "vault/deep/a.txt").unwrap();
        std::fs::write(dir.path().join("vault/deep/a.txt"), "A").unwrap();
        std::fs::write(dir.path().join("a.txt"), "root").unwrap();
        let e = call(dir.path(), "where.txt").unwrap_err();
        assert_eq!(
            e.message,
            "cannot read `where.txt`: No such file or directory (os error 2); a file of that name is at `vault/where.txt`"
        );
        let e = call(dir.path(), "deep/a.txt").unwrap_err();
        assert!(
            e.message
                .ends_with("; files of that name are at `a.txt`, `vault/deep/a.txt`"),
            "{}",
            e.message
        );
    }
}

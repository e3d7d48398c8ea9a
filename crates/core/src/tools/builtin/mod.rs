//! Built-in tools, one file each with its spec beside its code.

mod content_format;
mod http_fetch;
mod list_dir;
mod read_file;
mod run_code;
mod search_files;
mod web_search;
mod write_file;

pub use http_fetch::{is_private, HttpFetch, HttpFetchConfig};
pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use run_code::escape_newlines_in_strings;
pub use run_code::repairs::{BRACE_NOTE, COMPOUND_NOTE, REPAIR_NOTE};
pub use run_code::{CodeOptions, RunCode, FAILED_UNSAVED_NOTE, UNSAVED_NOTE};
pub use search_files::SearchFiles;
pub use web_search::{SearchConfigError, SearchProvider, WebSearch};
pub use write_file::WriteFile;

use serde_json::{Map, Value};

use super::sandbox::{probe, SandboxConfig, SandboxError};
use super::{ToolError, Toolbox, Workspace};

/// Every built-in tool's name, whether or not it is available on this
/// machine (roles may name them; unavailable ones are dropped with a warning).
pub const NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "list_dir",
    "search_files",
    "run_code",
    "http_fetch",
    "web_search",
];

/// Why `run_code` was not registered: bubblewrap cannot sandbox code here.
#[derive(Debug, Clone, thiserror::Error)]
#[error("run_code is not available: {0}")]
pub struct SandboxUnavailable(#[from] pub SandboxError);

/// Registers `run_code` when bubblewrap can sandbox it here; otherwise
/// returns why not (the caller reports it once) and registers nothing.
/// Code is never run unsandboxed.
pub async fn register_run_code(
    toolbox: &mut Toolbox,
    workspace: &Workspace,
    allow_writes: bool,
    options: CodeOptions,
) -> Result<(), SandboxUnavailable> {
    probe().await?;
    let mut config = SandboxConfig::new(workspace.root());
    config.allow_writes = allow_writes;
    toolbox.register(RunCode::with_options(config, options));
    Ok(())
}

/// Registers `read_file`, `write_file`, `list_dir` and `search_files`,
/// confined to `workspace`, and names it as the toolbox's workspace.
pub fn register_file_tools(toolbox: &mut Toolbox, workspace: &Workspace) {
    toolbox.register(ReadFile::new(workspace.clone()));
    toolbox.register(WriteFile::new(workspace.clone()));
    toolbox.register(ListDir::new(workspace.clone()));
    toolbox.register(SearchFiles::new(workspace.clone()));
    toolbox.set_workspace(workspace.clone());
}

/// Runs a file tool's whole filesystem work (resolving the path, opening,
/// reading or writing) on tokio's blocking pool in one hop. `tokio::fs`
/// would hop once per operation (open, metadata, each read, each directory
/// entry's metadata), and each hop wakes a thread: that was most of a
/// `read_file` call's CPU (BENCHMARKS.md).
async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::new(format!("the file operation did not complete: {e}")))?
}

/// The string argument `name`, or an error the model can act on when it is
/// missing or not a string. The toolbox validates args before calling a
/// tool, but [`crate::tools::Tool::call`] is public and may get anything.
fn required_str<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ToolError> {
    match args.get(name) {
        Some(Value::String(text)) => Ok(text),
        Some(other) => Err(ToolError::new(format!(
            "parameter `{name}` must be a string, got {other}"
        ))),
        None => Err(ToolError::new(format!(
            "missing required parameter `{name}`"
        ))),
    }
}

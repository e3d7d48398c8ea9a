//! Built-in tools, one file each with its spec beside its code.

mod http_fetch;
mod list_dir;
mod read_file;
mod run_code;
mod web_search;
mod write_file;

pub use http_fetch::{is_private, HttpFetch, HttpFetchConfig};
pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use run_code::RunCode;
pub use web_search::{SearchProvider, WebSearch};
pub use write_file::WriteFile;

use super::sandbox::{probe, SandboxConfig};
use super::{Toolbox, Workspace};

/// Every built-in tool's name, whether or not it is available on this
/// machine (roles may name them; unavailable ones are dropped with a warning).
pub const NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "list_dir",
    "run_code",
    "http_fetch",
    "web_search",
];

/// Registers `run_code` when bubblewrap can sandbox it here; otherwise
/// returns why not (the caller logs it once) and registers nothing. Code
/// is never run unsandboxed.
pub async fn register_run_code(
    toolbox: &mut Toolbox,
    workspace: &Workspace,
    allow_writes: bool,
) -> Result<(), String> {
    probe()
        .await
        .map_err(|e| format!("run_code is not available: {e}"))?;
    let mut config = SandboxConfig::new(workspace.root());
    config.allow_writes = allow_writes;
    toolbox.register(RunCode::new(config));
    Ok(())
}

/// Registers `read_file`, `write_file` and `list_dir`, confined to `workspace`.
pub fn register_file_tools(toolbox: &mut Toolbox, workspace: &Workspace) {
    toolbox.register(ReadFile::new(workspace.clone()));
    toolbox.register(WriteFile::new(workspace.clone()));
    toolbox.register(ListDir::new(workspace.clone()));
}

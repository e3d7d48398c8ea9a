//! Built-in tools, one file each with its spec beside its code.

mod list_dir;
mod read_file;
mod write_file;

pub use list_dir::ListDir;
pub use read_file::ReadFile;
pub use write_file::WriteFile;

use super::{Toolbox, Workspace};

/// Registers `read_file`, `write_file` and `list_dir`, confined to `workspace`.
pub fn register_file_tools(toolbox: &mut Toolbox, workspace: &Workspace) {
    toolbox.register(ReadFile::new(workspace.clone()));
    toolbox.register(WriteFile::new(workspace.clone()));
    toolbox.register(ListDir::new(workspace.clone()));
}

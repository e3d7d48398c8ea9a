//! The temporary workspace every benchmark's `read_file` calls read:
//! `f0.txt` … `f7.txt` ([`FILES`]), 20 short lines each.

use tempfile::TempDir;

use super::model::FILES;
use hermes_core::tools::Workspace;

/// A temporary folder holding the benchmark's files, and the workspace over
/// it. The folder is removed when this is dropped.
pub struct BenchWorkspace {
    /// Keeps the folder alive.
    _dir: TempDir,
    /// The workspace tools read from.
    pub workspace: Workspace,
}

impl BenchWorkspace {
    /// Creates the folder and its files; fails only when the temporary
    /// folder cannot be written.
    pub fn create() -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        for k in 0..FILES {
            std::fs::write(
                dir.path().join(format!("f{k}.txt")),
                format!("file {k}\n").repeat(20),
            )?;
        }
        let workspace = Workspace::new(dir.path())?;
        Ok(Self {
            _dir: dir,
            workspace,
        })
    }
}

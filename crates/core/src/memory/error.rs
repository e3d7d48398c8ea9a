//! [`MemoryError`]: every way the store can fail, each naming the file.

use std::path::PathBuf;

/// Why a memory store operation failed. Every variant about the file names
/// its path, so the message says which file to look at.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The file (or its folder) could not be created, opened or read.
    #[error("cannot open the memory store {}: {source}", path.display())]
    Io {
        /// The store's file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// [`crate::memory::RedbStore::open_existing`] found no file.
    #[error("no memory store at {} (a run with memory on creates it)", path.display())]
    Missing {
        /// The path looked at.
        path: PathBuf,
    },
    /// Another process has the file open (redb locks it while open).
    #[error("the memory store {} is in use by another process; wait for it to end", path.display())]
    Locked {
        /// The store's file.
        path: PathBuf,
    },
    /// The file is not a redb database, or an entry in it is unreadable.
    #[error("the memory store {} is corrupt or not a memory file: {reason}", path.display())]
    Corrupt {
        /// The store's file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The file was written by a newer Hermes with another layout.
    #[error("the memory store {} has format version {found}; this Hermes reads version {supported}", path.display())]
    Version {
        /// The store's file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads and writes.
        supported: u64,
    },
    /// A database operation failed.
    #[error("memory store {}: {source}", path.display())]
    Db {
        /// The store's file.
        path: PathBuf,
        /// redb's error (boxed: it is large, and rare).
        #[source]
        source: Box<redb::Error>,
    },
    /// `forget` was given an id the store does not hold.
    #[error("no memory with id `{id}` in {}", path.display())]
    UnknownId {
        /// The id asked for.
        id: String,
        /// The store's file.
        path: PathBuf,
    },
    /// A write had blank text.
    #[error("a memory needs some text; the write was blank")]
    EmptyText,
    /// A write's embedding held a number JSON cannot store.
    #[error("a memory's embedding must hold finite numbers: {reason}")]
    BadEmbedding {
        /// Which number was wrong.
        reason: String,
    },
    /// The blocking task running the operation panicked or was cancelled.
    #[error("memory store {}: the operation did not complete: {reason}", path.display())]
    Interrupted {
        /// The store's file.
        path: PathBuf,
        /// Why it did not complete.
        reason: String,
    },
}

impl MemoryError {
    /// Wraps a redb error for the store at `path`: a held lock, a corrupt
    /// file and an I/O failure get their own variants.
    pub(crate) fn from_redb(path: &std::path::Path, error: impl Into<redb::Error>) -> Self {
        let path = path.to_path_buf();
        match error.into() {
            redb::Error::DatabaseAlreadyOpen => Self::Locked { path },
            redb::Error::Corrupted(reason) => Self::Corrupt { path, reason },
            redb::Error::UpgradeRequired(version) => Self::Corrupt {
                path,
                reason: format!("redb file format {version} needs an upgrade"),
            },
            // redb reads a file that is not a database as invalid data.
            redb::Error::Io(source) if source.kind() == std::io::ErrorKind::InvalidData => {
                Self::Corrupt {
                    path,
                    reason: format!("not a redb database ({source})"),
                }
            }
            redb::Error::Io(source) => Self::Io { path, source },
            source => Self::Db {
                path,
                source: Box::new(source),
            },
        }
    }
}

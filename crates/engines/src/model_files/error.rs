//! Why a model file could not be fetched or used.

use std::path::PathBuf;

/// Why a model file could not be fetched or used.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No known model has that name.
    #[error("unknown model `{name}`; known models: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A file on disk is not the model it should be.
    #[error("{} is not the expected model file: its SHA-256 is {actual}, expected {expected} (the file is damaged or incomplete; `hermes model pull {name}` fetches it again)", path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
        /// The model's short name.
        name: String,
        /// The SHA-256 it should have.
        expected: String,
        /// The SHA-256 it has.
        actual: String,
    },
    /// No connection to a source.
    #[error("could not reach {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// The innermost transport error.
        reason: String,
    },
    /// The connection broke while the file was coming.
    #[error("the download from {url} broke off: {reason}")]
    Interrupted {
        /// The URL asked.
        url: String,
        /// The innermost transport error.
        reason: String,
    },
    /// A source answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
    },
    /// A source's index or package was not what it should be.
    #[error("{url}: {reason}")]
    BadSource {
        /// The index or package URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A local file could not be read or written.
    #[error("cannot use {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Every source was tried and none gave the file.
    #[error("could not fetch {file} from any source:\n{}", tried.join("\n"))]
    NoSource {
        /// The model file.
        file: String,
        /// One line per source: what went wrong there.
        tried: Vec<String>,
    },
}

impl FetchError {
    /// Whether trying the same download again may help: a connection that
    /// broke mid-way (the retry resumes), 408, 429 and 5xx. A source that
    /// cannot be reached at all is left for the next source.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Interrupted { .. } => true,
            Self::Status { status, .. } => matches!(status, 408 | 429) || *status >= 500,
            _ => false,
        }
    }

    /// No connection to `url` (the innermost cause of `e` as the reason).
    pub(crate) fn unreachable(url: &str, e: &reqwest::Error) -> Self {
        Self::Unreachable {
            url: url.to_string(),
            reason: hermes_core::text::innermost_cause(e),
        }
    }

    /// The download from `url` broke off (the innermost cause of `e`).
    pub(crate) fn interrupted(url: &str, e: &reqwest::Error) -> Self {
        Self::Interrupted {
            url: url.to_string(),
            reason: hermes_core::text::innermost_cause(e),
        }
    }

    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

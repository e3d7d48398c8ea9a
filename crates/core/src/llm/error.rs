//! Errors at the model boundary, written for the person who must fix them.

use std::time::Duration;

/// Why a model request failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Nothing answered at the configured address.
    #[error("could not reach the model server at {url}: {reason}. {hint}")]
    Unreachable {
        /// The full URL that was tried.
        url: String,
        /// The transport error, in words.
        reason: String,
        /// Which flags and variables set the URL.
        hint: String,
        /// Whether no connection was made at all (nothing listening, no
        /// such host), as opposed to one that broke.
        connect: bool,
    },
    /// The server answered with a non-success status.
    #[error("model server at {url} answered HTTP {status}: {body}")]
    Status {
        /// The full URL that was tried.
        url: String,
        /// HTTP status code.
        status: u16,
        /// Start of the response body.
        body: String,
    },
    /// The request took longer than the client's request timeout.
    #[error("model server at {url} did not answer within {timeout:?}")]
    Timeout {
        /// The full URL that was tried.
        url: String,
        /// The timeout that elapsed.
        timeout: Duration,
    },
    /// The server answered 200 but the body is not a chat completion.
    #[error("model server at {url} sent an unreadable answer: {reason}")]
    BadResponse {
        /// The full URL that was tried.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A scripted model ran out of answers, or another local model failure.
    #[error("{0}")]
    Other(String),
    /// The task's token or call budget is spent; the call was not made.
    #[error("{0}")]
    Budget(String),
}

impl LlmError {
    /// The error without the configuration hint, for repeated log lines.
    pub fn brief(&self) -> String {
        match self {
            LlmError::Unreachable { url, reason, .. } => format!("{url}: {reason}"),
            other => other.to_string(),
        }
    }

    /// Whether retrying the same request may succeed: 429, 5xx, connection
    /// failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Unreachable { .. } | LlmError::Timeout { .. } => true,
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::BadResponse { .. } | LlmError::Other(_) | LlmError::Budget(_) => false,
        }
    }
}

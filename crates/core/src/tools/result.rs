//! The one envelope every tool result travels in: `{status, data, error}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether a tool call worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The call worked; `data` holds its output.
    Ok,
    /// The call failed; `error` says why.
    Error,
}

impl ToolStatus {
    /// `"ok"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
        }
    }
}

impl std::fmt::Display for ToolStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result envelope the model sees after every action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// `ok` or `error`.
    pub status: ToolStatus,
    /// Output of a successful call (`null` on error, unless partial output exists).
    pub data: Value,
    /// What went wrong, for an error.
    pub error: Option<String>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(data: impl Into<Value>) -> Self {
        Self {
            status: ToolStatus::Ok,
            data: data.into(),
            error: None,
        }
    }
    /// A failed result.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Error,
            data: Value::Null,
            error: Some(message.into()),
        }
    }
    /// The line a failed call is summed up by: the last non-empty line of
    /// its `stderr` (a program's exception), else its error message.
    pub fn failure_line(&self) -> Option<&str> {
        failure_line(&self.data, self.error.as_deref())
    }
    /// Whether the call worked.
    pub fn is_ok(&self) -> bool {
        self.status == ToolStatus::Ok
    }
}

/// [`ToolResult::failure_line`] for a result read back as its envelope's
/// `data` and `error` (a journal's observation).
pub fn failure_line<'a>(data: &'a Value, error: Option<&'a str>) -> Option<&'a str> {
    data.get("stderr")
        .and_then(Value::as_str)
        .and_then(|stderr| stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()))
        .or(error)
}

/// A tool's own failure, returned from [`crate::tools::Tool::call`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What went wrong, written for the model.
    pub message: String,
    /// Whether trying again may work (only used for idempotent tools).
    pub retryable: bool,
    /// Partial output worth showing with the error (e.g. a failed run's stderr).
    pub data: Value,
}

impl ToolError {
    /// A failure that will not go away by retrying.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            data: Value::Null,
        }
    }
    /// A failure that comes with output the model should see.
    pub fn with_data(message: impl Into<String>, data: Value) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            data,
        }
    }
    /// A failure that may go away by retrying.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: true,
            data: Value::Null,
        }
    }
}

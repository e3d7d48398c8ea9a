//! **Act**: carry out the decided action through the tool registry.
//!
//! The toolbox does the work that makes acting safe: it checks the tool
//! exists, validates and coerces the args against the tool's spec, applies
//! the timeout and retries, and turns any failure — including a panic — into
//! an error envelope. Acting never fails the loop; a failed action is an
//! observation the model must deal with.

use std::time::{Duration, Instant};

use crate::decision::Action;
use crate::tools::{ToolResult, Toolbox};

/// Runs `action` and returns its result envelope and how long it took.
pub async fn act(toolbox: &Toolbox, action: &Action) -> (ToolResult, Duration) {
    let started = Instant::now();
    let result = toolbox.call(&action.name, &action.args).await;
    (result, started.elapsed())
}

/// Runs `action` as a trial, so that nothing it does lasts (see
/// [`crate::tools::session::trial`]: `run_code` works on a copy and saves
/// nothing); returns its result envelope and how long it took.
pub async fn trial(toolbox: &Toolbox, action: &Action) -> (ToolResult, Duration) {
    crate::tools::session::trial(act(toolbox, action)).await
}

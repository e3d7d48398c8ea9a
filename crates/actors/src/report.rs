//! What a task's submitter gets back: the task's status, its answer, and
//! every subtask's fate. The serialized strings are the `hermes plan --json`
//! contract.

use std::fmt;

use serde::{Deserialize, Serialize};

use hermes_core::llm::Usage;

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Every subtask finished (or was replaced by ones that did).
    Finished,
    /// Some subtask failed for good; the report holds partial results.
    Failed,
    /// The task deadline passed; running subtasks were cancelled.
    Timeout,
    /// No plan could be made, or the planner stopped.
    Error,
    /// The task's token or call budget was spent; running subtasks were
    /// cancelled.
    Budget,
}

impl TaskStatus {
    /// The name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Finished => "finished",
            TaskStatus::Failed => "failed",
            TaskStatus::Timeout => "timeout",
            TaskStatus::Error => "error",
            TaskStatus::Budget => "budget",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where one subtask stands. A settled task's report holds only the last
/// five; `pending` and `running` are the states of a task in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubtaskStatus {
    /// Waiting for its dependencies or a free executor.
    Pending,
    /// An executor is running it.
    Running,
    /// Done; its result is available to dependents.
    Finished,
    /// Stopped without finishing; a replan may replace it.
    Failed,
    /// Replaced by a replan (itself failed, or depended on a failure).
    Replaced,
    /// Never run: a dependency failed for good, or the deadline passed first.
    Skipped,
    /// Stopped by the task deadline (or shutdown) while running.
    Cancelled,
}

impl SubtaskStatus {
    /// The name used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SubtaskStatus::Pending => "pending",
            SubtaskStatus::Running => "running",
            SubtaskStatus::Finished => "finished",
            SubtaskStatus::Failed => "failed",
            SubtaskStatus::Replaced => "replaced",
            SubtaskStatus::Skipped => "skipped",
            SubtaskStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for SubtaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What became of one subtask, as reported to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubtaskReport {
    /// Subtask id.
    pub id: String,
    /// Executor role.
    pub role: String,
    /// The goal it was given.
    pub goal: String,
    /// The workspace files it had to write (absent when none: it returned
    /// a value).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// `finished`, `failed`, `replaced`, `skipped` or `cancelled`.
    pub status: SubtaskStatus,
    /// Rounds its loop ran (over all attempts).
    pub rounds: u32,
    /// Its result, when finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Its progress report, when it did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Where its last attempt ran: `"local"`, or the name of the worker
    /// node; `null` when it never started.
    #[serde(default)]
    pub node: Option<String>,
    /// Tokens of its loop's model calls.
    #[serde(default)]
    pub usage: Usage,
}

/// The final report of a task, in the shape `hermes plan --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    /// `finished`, `failed`, `timeout` or `error`.
    pub status: TaskStatus,
    /// The final answer (when finished; a partial summary otherwise).
    pub result: Option<String>,
    /// Every subtask's fate, in the order they were planned.
    pub subtasks: Vec<SubtaskReport>,
    /// How many replans were made.
    pub replans: u32,
    /// Tokens of every model call of the task (planner and executors).
    pub usage: Usage,
    /// Where those tokens went: the planner's own calls and each role's
    /// executors (each subtask's are in its report).
    #[serde(default)]
    pub usage_by: UsageBy,
    /// Why the task ended in error, for status `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The task's trace id (32 hex characters), to search for in Jaeger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// A task's tokens by who spent them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageBy {
    /// The planner's calls: the plan, replans, the final answer.
    pub planner: Usage,
    /// Each role's executors, by role name.
    pub roles: std::collections::BTreeMap<String, Usage>,
}

impl UsageBy {
    /// The planner's usage and each subtask's (role, usage), added up by role.
    pub fn of<'a>(planner: Usage, subtasks: impl Iterator<Item = (&'a str, Usage)>) -> Self {
        let mut roles = std::collections::BTreeMap::<String, Usage>::new();
        for (role, usage) in subtasks {
            *roles.entry(role.to_string()).or_default() += usage;
        }
        Self { planner, roles }
    }
}

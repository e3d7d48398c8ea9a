//! The typed mailboxes of the actor system.
//!
//! `PlannerMsg` is everything a planner hears: tasks from users, roles to
//! register, each executor's outcome, and the answers of the model calls it
//! makes off its mailbox (so the mailbox stays responsive while a model
//! thinks). `ExecutorMsg` is everything an executor hears: one subtask run,
//! the end of its loop, and cancellation. Every message derives
//! `RactorMessage`, as the cluster feature requires.

use std::collections::HashMap;
use std::time::Duration;

use ractor::RpcReplyPort;
use ractor_cluster::RactorMessage;
use serde::Serialize;

use super::plan::PlannedSubtask;
use super::roles::Role;
use crate::agent::Outcome;
use crate::journal::JournalEntry;
use crate::limits::Limits;
use crate::llm::Usage;

/// Identifies one submitted task inside a planner.
pub type TaskId = u64;

/// A task as a user submits it.
#[derive(Debug, Clone)]
pub struct TaskRequest {
    /// The task in plain words.
    pub task: String,
    /// Task-wide deadline; `None` uses the planner's default.
    pub timeout: Option<Duration>,
}

impl TaskRequest {
    /// A task with the planner's default deadline.
    pub fn new(task: impl Into<String>) -> Self {
        Self {
            task: task.into(),
            timeout: None,
        }
    }
    /// Sets the task-wide deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl From<&str> for TaskRequest {
    fn from(task: &str) -> Self {
        Self::new(task)
    }
}

/// How a subtask ended, sent by its executor exactly once per run.
#[derive(Debug, Clone)]
pub struct SubtaskOutcome {
    /// The task it belongs to.
    pub task: TaskId,
    /// The subtask id.
    pub subtask: String,
    /// The loop's outcome (result, or progress report on a stop).
    pub outcome: Outcome,
}

/// Messages to the planner.
#[derive(RactorMessage)]
pub enum PlannerMsg {
    /// Plan and run a task; the report goes to `reply` when it ends.
    Submit {
        /// The task.
        request: TaskRequest,
        /// Where the final report goes.
        reply: RpcReplyPort<TaskReport>,
    },
    /// Adds an executor role at runtime.
    RegisterRole {
        /// The role.
        role: Role,
        /// `Err` with the reason when the role is refused.
        reply: RpcReplyPort<Result<(), String>>,
    },
    /// Lists the registered roles.
    ListRoles(RpcReplyPort<Vec<Role>>),
    /// An executor's loop finished its subtask.
    SubtaskFinished(SubtaskOutcome),
    /// An executor's loop stopped without finishing (guard or error); the
    /// outcome carries the progress report.
    SubtaskFailed(SubtaskOutcome),
    /// The model answered the planning request (internal).
    Planned {
        /// The task.
        task: TaskId,
        /// The validated subtasks, or why no valid plan came back.
        plan: Result<Vec<PlannedSubtask>, String>,
        /// Tokens of the planning calls.
        usage: Usage,
    },
    /// The model answered a replanning request (internal).
    Replanned {
        /// The task.
        task: TaskId,
        /// The subtask whose failure asked for the replan.
        failed: String,
        /// The validated replacement subtasks, or why none came back.
        plan: Result<Vec<PlannedSubtask>, String>,
        /// Tokens of the replanning calls.
        usage: Usage,
    },
    /// The model wrote the final answer (internal).
    Answered {
        /// The task.
        task: TaskId,
        /// The answer, or why it could not be written.
        answer: Result<String, String>,
        /// Tokens of the call.
        usage: Usage,
    },
    /// The task-wide deadline passed (internal).
    Deadline {
        /// The task.
        task: TaskId,
    },
}

/// One subtask for an executor to run.
#[derive(Debug, Clone)]
pub struct SubtaskRun {
    /// The task it belongs to.
    pub task: TaskId,
    /// The subtask as planned.
    pub subtask: PlannedSubtask,
    /// The goal given to the loop: the subtask's goal plus the results of
    /// the subtasks it depends on.
    pub goal: String,
    /// Limits for the loop (run defaults, then role, then task deadline).
    pub limits: Limits,
    /// Rounds already done, when an executor restarts after a crash.
    pub history: Vec<JournalEntry>,
    /// W3C trace context of the sender (`traceparent`, `tracestate`).
    pub trace_context: HashMap<String, String>,
}

/// Messages to an executor.
#[derive(RactorMessage)]
pub enum ExecutorMsg {
    /// Run this subtask.
    Run(Box<SubtaskRun>),
    /// The loop task ended: its outcome, or the panic that ended it (internal).
    LoopEnded(Result<Box<Outcome>, String>),
    /// Stop the loop now.
    Cancel,
}

/// What became of one subtask, as reported to the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubtaskReport {
    /// Subtask id.
    pub id: String,
    /// Executor role.
    pub role: String,
    /// The goal it was given.
    pub goal: String,
    /// `finished`, `failed`, `replaced`, `skipped` or `cancelled`.
    pub status: String,
    /// Rounds its loop ran (over all attempts).
    pub rounds: u32,
    /// Its result, when finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Its progress report, when it did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// The final report of a task, in the shape `hermes plan --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskReport {
    /// `finished`, `failed`, `timeout` or `error`.
    pub status: String,
    /// The final answer (when finished; a partial summary otherwise).
    pub result: Option<String>,
    /// Every subtask's fate, in the order they were planned.
    pub subtasks: Vec<SubtaskReport>,
    /// How many replans were made.
    pub replans: u32,
    /// Tokens of every model call of the task (planner and executors).
    pub usage: Usage,
    /// Why the task ended in error, for status `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The task's trace id (32 hex characters), to search for in Jaeger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl TaskReport {
    /// The CLI exit code: 0 finished, 3 failed or timed out (partial
    /// results), 1 error.
    pub fn exit_code(&self) -> i32 {
        match self.status.as_str() {
            "finished" => 0,
            "failed" | "timeout" => 3,
            _ => 1,
        }
    }
}

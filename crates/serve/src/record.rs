//! What the service keeps about a task: its record (the row `GET
//! /v1/tasks/{id}` shows) and its events (what `GET /v1/tasks/{id}/events`
//! streams), as they are stored and served.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a task is in its life. `queued` and `running` are live; the rest
/// are ends, with the plan statuses of `hermes plan` plus `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Accepted, waiting for a free slot.
    Queued,
    /// A planner is working on it.
    Running,
    /// Every subtask finished and the answer was made.
    Finished,
    /// Some subtask failed and could not be replanned.
    Failed,
    /// The task's deadline passed.
    Timeout,
    /// The planner or the model failed.
    Error,
    /// Cancelled by `DELETE /v1/tasks/{id}` or the server's shutdown.
    Cancelled,
    /// The task's token or call budget was spent.
    Budget,
}

impl TaskState {
    /// The name used in JSON and in `?status=`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Finished => "finished",
            TaskState::Failed => "failed",
            TaskState::Timeout => "timeout",
            TaskState::Error => "error",
            TaskState::Cancelled => "cancelled",
            TaskState::Budget => "budget",
        }
    }

    /// Reads a name given in `?status=`.
    pub fn parse(name: &str) -> Option<Self> {
        serde_json::from_value(Value::String(name.to_string())).ok()
    }

    /// Whether the task has ended (no more events will come).
    pub fn is_ended(self) -> bool {
        !matches!(self, TaskState::Queued | TaskState::Running)
    }

    /// Every state, in the order `/metrics` lists them.
    pub const ALL: [TaskState; 8] = [
        TaskState::Queued,
        TaskState::Running,
        TaskState::Finished,
        TaskState::Failed,
        TaskState::Timeout,
        TaskState::Error,
        TaskState::Cancelled,
        TaskState::Budget,
    ];
}

/// What a submitter asked for (the body of `POST /v1/tasks`, checked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The task in plain words.
    pub goal: String,
    /// Task-wide deadline in seconds; `None`: the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Most replans; `None`: the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replans: Option<u32>,
    /// A folder under the server's workspace the task's tools are confined
    /// to; `None`: the workspace itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Most tokens for the whole task; `None`: the server's cap, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Most model calls for the whole task; `None`: the server's cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_budget: Option<u64>,
}

/// One task as the store keeps it and `GET /v1/tasks/{id}` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's id (`task-N`).
    pub id: String,
    /// What was asked.
    #[serde(flatten)]
    pub spec: TaskSpec,
    /// Where it is.
    pub status: TaskState,
    /// When it was accepted (RFC 3339, UTC).
    pub created: String,
    /// When it ended (RFC 3339, UTC); `None` while live.
    pub ended: Option<String>,
    /// Its trace id, when traced.
    pub trace_id: Option<String>,
    /// The planner's report (`hermes plan --json`) once it ended, or an
    /// error's text in `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Value>,
    /// How many times the server restarted it after a crash.
    #[serde(default)]
    pub restarts: u32,
}

impl TaskRecord {
    /// The JSON `GET /v1/tasks/{id}` answers: the plan report's fields
    /// (`status`, `result`, `subtasks`, `replans`, `usage`, `trace_id`)
    /// plus `id`, `goal`, `created` and `ended`.
    pub fn detail(&self) -> Value {
        let mut out = match &self.report {
            Some(Value::Object(report)) => report.clone(),
            _ => serde_json::Map::new(),
        };
        out.insert("id".into(), Value::String(self.id.clone()));
        out.insert("goal".into(), Value::String(self.spec.goal.clone()));
        out.insert("status".into(), Value::String(self.status.as_str().into()));
        out.insert("created".into(), Value::String(self.created.clone()));
        out.insert("ended".into(), self.ended.clone().into());
        out.entry("trace_id")
            .or_insert_with(|| self.trace_id.clone().into());
        for (key, empty) in [
            ("result", Value::Null),
            ("subtasks", Value::Array(Vec::new())),
            ("replans", Value::from(0)),
        ] {
            out.entry(key).or_insert(empty);
        }
        Value::Object(out)
    }

    /// What accepting it answers (`POST /v1/tasks`'s 202 body): its id,
    /// `queued` or `running`, and its trace id.
    pub fn accepted(&self) -> Value {
        let status = match self.status {
            TaskState::Queued => "queued",
            _ => "running",
        };
        serde_json::json!({"id": self.id, "status": status, "trace_id": self.trace_id})
    }

    /// The row `GET /v1/tasks` lists.
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "goal": self.spec.goal,
            "status": self.status.as_str(),
            "created": self.created,
            "ended": self.ended,
        })
    }
}

/// One event of a task, numbered from 1 within it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEventRecord {
    /// Its number within the task (the SSE `id:`).
    pub id: u64,
    /// Its kind (the SSE `event:`): `queued`, `planned`, `subtask_started`,
    /// `round`, `subtask_finished`, `subtask_failed`, `replanned`,
    /// `task_ended`.
    pub kind: String,
    /// Its fields (the SSE `data:`).
    pub data: Value,
}

/// Now, as RFC 3339 in UTC to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// A role as `GET /v1/roles` lists it.
pub fn role_summary(role: &hermes_actors::Role) -> Value {
    serde_json::json!({
        "name": role.name,
        "description": role.description,
        "tools": role.tools,
        "model": role.model,
    })
}

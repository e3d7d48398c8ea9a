//! The typed mailboxes of the actor system.
//!
//! `PlannerMsg` is everything a planner hears: tasks from users, roles to
//! register, and [`TaskEvent`]s for one live task (an executor's outcome,
//! the answer of a model call the task made off the mailbox, its deadline).
//! `ExecutorMsg` is everything an executor hears: one subtask to run, and
//! the end of its loop. Cancellation is not a message: it travels through a
//! `CancellationToken` each executor holds. Every message derives
//! `RactorMessage`, as the cluster feature requires.

use std::collections::HashMap;
use std::time::Duration;

use ractor::RpcReplyPort;
use ractor_cluster::RactorMessage;

use super::plan::{AnswerError, Asked, PlanError, PlannedSubtask};
use super::report::TaskReport;
use super::roles::{Role, RoleError};
use hermes_core::agent::{Goal, Outcome};
use hermes_core::journal::JournalEntry;
use hermes_core::limits::Limits;
use hermes_core::llm::budget::Caps;

/// Identifies one submitted task inside a planner.
pub type TaskId = u64;

/// A task as a user submits it.
#[derive(Debug, Clone)]
pub struct TaskRequest {
    /// The task in plain words.
    pub task: String,
    /// Task-wide deadline; `None` uses the planner's default.
    pub timeout: Option<Duration>,
    /// A plan already made, and what of it already finished: the task
    /// starts from it instead of asking for a plan (a resumed task).
    pub resume: Option<Resume>,
    /// Caps on the task's tokens and model calls (planner and executors
    /// together); none by default.
    pub budget: Caps,
}

/// Where an interrupted task stood: its plan (after any replans) and the
/// results of the subtasks that had finished, which are not run again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// The plan's live subtasks, in plan order.
    pub subtasks: Vec<PlannedSubtask>,
    /// Finished subtasks: (id, result, rounds).
    pub finished: Vec<(String, String, u32)>,
    /// Subtasks that were running: (id, the rounds their journal had).
    /// They restart from those rounds, as a crashed executor does.
    pub running: Vec<(String, Vec<JournalEntry>)>,
}

impl TaskRequest {
    /// A task with the planner's default deadline.
    pub fn new(task: impl Into<String>) -> Self {
        Self {
            task: task.into(),
            timeout: None,
            resume: None,
            budget: Caps::default(),
        }
    }
    /// Caps the task's tokens and model calls; at a cap the task ends with
    /// status `budget`.
    pub fn with_budget(mut self, budget: Caps) -> Self {
        self.budget = budget;
        self
    }
    /// Sets the task-wide deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
    /// Starts from `resume` instead of a new plan.
    pub fn resuming(mut self, resume: Resume) -> Self {
        self.resume = Some(resume);
        self
    }
}

impl From<&str> for TaskRequest {
    fn from(task: &str) -> Self {
        Self::new(task)
    }
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
        /// Why the role was refused, if it was.
        reply: RpcReplyPort<Result<(), RoleError>>,
    },
    /// Lists the registered roles.
    ListRoles(RpcReplyPort<Vec<Role>>),
    /// Something happened to one live task.
    Task(TaskId, TaskEvent),
}

/// What can happen to a live task; each has one method on `LiveTask`.
pub enum TaskEvent {
    /// The model answered the planning request.
    Planned(Asked<Vec<PlannedSubtask>, PlanError>),
    /// A resumed task's plan and finished subtasks, in place of a plan.
    Resumed(Resume),
    /// An executor's loop ended (finished, stopped by a guard, cancelled).
    SubtaskEnded {
        /// The subtask id.
        subtask: String,
        /// The loop's outcome (result, or progress report on a stop).
        outcome: Box<Outcome>,
    },
    /// The model answered a replanning request.
    Replanned {
        /// The subtask whose failure asked for the replan.
        failed: String,
        /// The replacement subtasks, or why none came back.
        plan: Asked<Vec<PlannedSubtask>, PlanError>,
    },
    /// The model wrote the final answer.
    Answered(Asked<String, AnswerError>),
    /// The task-wide deadline passed.
    Deadline,
    /// Executors cancelled at the deadline had their grace period to report.
    DeadlineGraceOver,
    /// The task's token or call budget is spent.
    BudgetSpent,
}

/// The events of model calls that ended without an answer, for `why`
/// (what `ask_then_tell` delivers when a call panics).
impl TaskEvent {
    /// A planning request that ended without a plan.
    pub fn plan_failed(why: String) -> Self {
        TaskEvent::Planned(Asked {
            answer: Err(PlanError::Model(why)),
            usage: Default::default(),
        })
    }

    /// A replanning request for subtask `failed` that ended without a plan.
    pub fn replan_failed(failed: String, why: String) -> Self {
        TaskEvent::Replanned {
            failed,
            plan: Asked {
                answer: Err(PlanError::Model(why)),
                usage: Default::default(),
            },
        }
    }

    /// A final-answer request that ended without an answer.
    pub fn answer_failed(why: String) -> Self {
        TaskEvent::Answered(Asked {
            answer: Err(AnswerError::Model(why)),
            usage: Default::default(),
        })
    }
}

/// One subtask for an executor to run.
#[derive(Debug, Clone)]
pub struct SubtaskRun {
    /// The subtask as planned.
    pub subtask: PlannedSubtask,
    /// The goal given to the loop: the subtask's own work, the task it is
    /// part of, and the results of the subtasks it depends on.
    pub goal: Goal,
    /// Limits for the loop (run defaults, then role, then task deadline).
    pub limits: Limits,
    /// Rounds already done, when an executor restarts after a crash.
    pub history: Vec<JournalEntry>,
    /// 0 for the first executor of this subtask, 1 after a restart.
    pub attempt: u32,
    /// W3C trace context of the sender (`traceparent`, `tracestate`).
    pub trace_context: HashMap<String, String>,
}

/// What an executor sends when its loop ends: the outcome of one subtask.
/// An executor only knows this type, through a `DerivedActorRef`, so that
/// the planner and a worker node's run host can both receive it.
#[derive(Debug)]
pub struct ExecutorReport {
    /// The task the subtask belongs to.
    pub task: TaskId,
    /// The subtask id.
    pub subtask: String,
    /// The loop's outcome (result, or progress report on a stop).
    pub outcome: Box<Outcome>,
}

/// The mailbox of an actor that only hears executors' reports: a worker
/// node's run host (`hermes_cluster`), or a test standing in for the
/// planner.
#[derive(RactorMessage)]
pub enum ReportMsg {
    /// The executor's loop ended.
    Report(ExecutorReport),
}

impl From<ExecutorReport> for ReportMsg {
    fn from(report: ExecutorReport) -> Self {
        ReportMsg::Report(report)
    }
}

impl TryFrom<ReportMsg> for ExecutorReport {
    type Error = ReportMsg;

    fn try_from(message: ReportMsg) -> Result<Self, ReportMsg> {
        match message {
            ReportMsg::Report(report) => Ok(report),
        }
    }
}

impl From<ExecutorReport> for PlannerMsg {
    fn from(report: ExecutorReport) -> Self {
        PlannerMsg::Task(
            report.task,
            TaskEvent::SubtaskEnded {
                subtask: report.subtask,
                outcome: report.outcome,
            },
        )
    }
}

impl TryFrom<PlannerMsg> for ExecutorReport {
    type Error = PlannerMsg;

    fn try_from(message: PlannerMsg) -> Result<Self, PlannerMsg> {
        match message {
            PlannerMsg::Task(task, TaskEvent::SubtaskEnded { subtask, outcome }) => Ok(Self {
                task,
                subtask,
                outcome,
            }),
            other => Err(other),
        }
    }
}

/// A panic that ended an executor's loop.
#[derive(Debug, Clone, thiserror::Error)]
#[error("executor loop crashed: {0}")]
pub struct LoopPanic(pub String);

/// Messages to an executor.
#[derive(RactorMessage)]
pub enum ExecutorMsg {
    /// Run this subtask.
    Run(Box<SubtaskRun>),
    /// The loop task ended: its outcome, or the panic that ended it (internal).
    LoopEnded(Result<Box<Outcome>, LoopPanic>),
}

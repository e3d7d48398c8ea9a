//! Progress events a planner emits while a task runs (the CLI prints them
//! on stderr: started, finished, failed, restarted, replanned).

use std::fmt;
use std::sync::Arc;

use crate::plan::PlannedSubtask;
use hermes_core::journal::JournalEntry;

/// Receives every event; must be quick (it runs inside the planner).
pub type EventSink = Arc<dyn Fn(&PlanEvent) + Send + Sync>;

/// Something that happened to a task or one of its subtasks.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanEvent {
    /// A task was accepted; its trace id identifies it in Jaeger.
    Submitted {
        /// The task's trace id, when traced.
        trace_id: Option<String>,
    },
    /// The task was planned into these subtasks.
    Planned {
        /// The plan's subtasks, in order.
        subtasks: Vec<PlannedSubtask>,
    },
    /// An executor started a subtask.
    Started {
        /// Subtask id.
        id: String,
        /// Its role.
        role: String,
        /// Its goal.
        goal: String,
        /// Where it runs: `local`, or a worker node's name.
        node: String,
    },
    /// A subtask finished.
    Finished {
        /// Subtask id.
        id: String,
        /// Rounds its loop ran.
        rounds: u32,
        /// What its loop returned.
        result: String,
    },
    /// A subtask's loop ended a round (executors on this node only).
    Round {
        /// Subtask id.
        id: String,
        /// The round's number (from 1).
        round: u32,
        /// The action it took (`finish` included).
        action: String,
        /// The tool's status: `ok` or `error`.
        status: String,
        /// Milliseconds the round waited on the model.
        llm_ms: u64,
        /// The whole round as the journal keeps it: what a task resumed
        /// after a crash restarts the subtask from.
        entry: Box<JournalEntry>,
    },
    /// A subtask stopped without finishing.
    Failed {
        /// Subtask id.
        id: String,
        /// Why (the loop's stop status or the crash).
        reason: String,
    },
    /// A crashed executor was restarted from its journal.
    Restarted {
        /// Subtask id.
        id: String,
        /// Rounds it resumes after.
        after_round: usize,
    },
    /// A failed subtask was replaced by a revised plan.
    Replanned {
        /// The failed subtask.
        failed: String,
        /// Ids of the replacement subtasks.
        new: Vec<String>,
        /// The subtasks taken out of the plan: the failed one and its
        /// pending dependents.
        replaced: Vec<String>,
        /// The replacement subtasks.
        subtasks: Vec<PlannedSubtask>,
    },
    /// No revised plan could be made; the failure stands.
    ReplanFailed {
        /// The failed subtask.
        failed: String,
        /// Why.
        reason: String,
    },
    /// The task deadline cancelled a running subtask.
    Cancelled {
        /// Subtask id.
        id: String,
    },
}

impl fmt::Display for PlanEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanEvent::Submitted { trace_id } => match trace_id {
                Some(id) => write!(f, "task submitted; trace id {id}"),
                None => write!(f, "task submitted"),
            },
            PlanEvent::Planned { subtasks } => write!(f, "planned {} subtask(s)", subtasks.len()),
            PlanEvent::Started {
                id,
                role,
                goal,
                node,
            } => {
                let on = match node.as_str() {
                    "local" => String::new(),
                    node => format!(" on {node}"),
                };
                write!(
                    f,
                    "started   {id} ({role}){on}: {}",
                    hermes_core::text::clip(&hermes_core::text::one_line(goal), 80)
                )
            }
            PlanEvent::Finished { id, rounds, .. } => {
                write!(f, "finished  {id} in {rounds} round(s)")
            }
            PlanEvent::Round {
                id,
                round,
                action,
                status,
                ..
            } => write!(f, "round {round} of {id}: {action} ({status})"),
            PlanEvent::Failed { id, reason } => write!(f, "failed    {id}: {reason}"),
            PlanEvent::Restarted { id, after_round } => write!(
                f,
                "restarted {id} from its journal after round {after_round}"
            ),
            PlanEvent::Replanned { failed, new, .. } => {
                write!(f, "replanned {failed} → {}", new.join(", "))
            }
            PlanEvent::ReplanFailed { failed, reason } => {
                write!(f, "replan of {failed} failed: {reason}")
            }
            PlanEvent::Cancelled { id } => write!(f, "cancelled {id}: task deadline"),
        }
    }
}

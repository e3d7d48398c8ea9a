//! "Ask the model off the mailbox, then hear the answer as a message",
//! written once.
//!
//! A planner must never wait on a model inside `handle`: its mailbox would
//! stop for every task. So a task's model calls (plan, replan, final
//! answer) run in a spawned tokio task, inside the span given, and their
//! answer comes back to the planner as a [`TaskEvent`] for that task.

use std::future::Future;

use ractor::ActorRef;
use tracing::{Instrument, Span};

use super::messages::{PlannerMsg, TaskEvent, TaskId};

/// Runs `call` off the planner's mailbox and delivers the event it yields
/// to task `task`. A planner that stopped meanwhile drops the answer.
pub fn ask_then_tell<F>(planner: &ActorRef<PlannerMsg>, task: TaskId, span: Span, call: F)
where
    F: Future<Output = TaskEvent> + Send + 'static,
{
    let planner = planner.clone();
    tokio::spawn(
        async move {
            let event = call.await;
            let _ = planner.send_message(PlannerMsg::Task(task, event));
        }
        .instrument(span),
    );
}

//! "Ask the model off the mailbox, then hear the answer as a message",
//! written once.
//!
//! A planner must never wait on a model inside `handle`: its mailbox would
//! stop for every task. So a task's model calls (plan, replan, final
//! answer) run in a spawned tokio task, inside the span given, and their
//! answer comes back to the planner as a [`TaskEvent`] for that task.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use ractor::ActorRef;
use tracing::{Instrument, Span};

use super::messages::{PlannerMsg, TaskEvent, TaskId};

/// Runs `call` off the planner's mailbox and delivers the event it yields
/// to task `task`. A planner that stopped meanwhile drops the answer.
/// Should `call` panic (a bug: nothing a model says may do that), the
/// event `on_panic` makes of the panic's message is delivered instead, so
/// the task fails with that reason rather than waiting for its deadline.
pub fn ask_then_tell<F, P>(
    planner: &ActorRef<PlannerMsg>,
    task: TaskId,
    span: Span,
    call: F,
    on_panic: P,
) where
    F: Future<Output = TaskEvent> + Send + 'static,
    P: FnOnce(String) -> TaskEvent + Send + 'static,
{
    let planner = planner.clone();
    tokio::spawn(
        async move {
            let event = match AssertUnwindSafe(call).catch_unwind().await {
                Ok(event) => event,
                Err(payload) => {
                    let why = hermes_core::text::panic_message(payload.as_ref());
                    tracing::error!("a model call of task {task} panicked: {why}");
                    on_panic(format!("internal error (a bug; please report it): {why}"))
                }
            };
            let _ = planner.send_message(PlannerMsg::Task(task, event));
        }
        .instrument(span),
    );
}

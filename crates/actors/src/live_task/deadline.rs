//! The task's deadline: nothing new starts, running loops are cancelled
//! and given [`DEADLINE_GRACE`] to report, then the task ends with what
//! it has.

use super::{Cx, LiveTask, DEADLINE_GRACE};
use crate::messages::{PlannerMsg, TaskEvent};
use hermes_core::agent::StopStatus;
use hermes_core::telemetry;

impl LiveTask {
    /// The deadline passed: the task winds down (see [`Self::wind_down`]).
    pub(super) async fn on_deadline(&mut self, cx: &mut Cx<'_>) {
        if self.dag.timed_out || self.is_done() {
            return;
        }
        telemetry::set_error(&self.span, "the task deadline passed");
        self.wind_down(cx).await;
    }

    /// Nothing new starts, pending subtasks are skipped, running loops are
    /// cancelled through the task's token and report their progress (or
    /// are cut off after [`DEADLINE_GRACE`]).
    pub(super) async fn wind_down(&mut self, cx: &mut Cx<'_>) {
        self.dag.time_out();
        self.cancel.cancel();
        let id = self.id;
        cx.myself.send_after(DEADLINE_GRACE, move || {
            PlannerMsg::Task(id, TaskEvent::DeadlineGraceOver)
        });
        self.advance(cx).await;
    }

    pub(super) async fn on_deadline_grace_over(&mut self, cx: &mut Cx<'_>) {
        for id in self.dag.running() {
            self.stop_executor(cx, &id);
            let Some(spec) = self.dag.slot(&id).map(|s| s.spec.clone()) else {
                continue;
            };
            let outcome = self.journal_outcome(&spec, StopStatus::Cancelled, None);
            self.on_subtask_cancelled(cx, &id, outcome);
        }
        self.advance(cx).await;
        // A replan or the final answer may still be waiting on the model:
        // the deadline does not wait for it.
        if !self.is_done() {
            let partial = self.joined_results();
            self.finish(Some(partial).filter(|p| !p.is_empty()));
        }
    }
}

//! A task's token and call budget: the planner's calls counted against
//! it (`budgeted`), the planner told when it is spent (`watch_budget`),
//! and the task wound down then, as at its deadline, with status
//! `budget`.

use std::sync::Arc;

use ractor::ActorRef;
use tokio_util::sync::CancellationToken;

use super::{Cx, LiveTask};
use crate::messages::{PlannerMsg, TaskEvent, TaskId};
use hermes_core::llm::budget::{Budget, BudgetedLlm};
use hermes_core::llm::Llm;
use hermes_core::telemetry;

impl LiveTask {
    /// Counts the task's model calls against `budget`, when capped.
    pub(super) fn with_budget(mut self, budget: Option<Arc<Budget>>) -> Self {
        self.budget = budget;
        self
    }

    /// The budget is spent: the task winds down as at the deadline, and
    /// its status is `budget`.
    pub(super) async fn on_budget_spent(&mut self, cx: &mut Cx<'_>) {
        if self.dag.over_budget || self.is_done() {
            return;
        }
        let why = self
            .budget
            .as_ref()
            .map_or_else(|| "budget spent".to_string(), |b| b.describe());
        telemetry::set_error(&self.span, why);
        self.dag.over_budget = true;
        if !self.dag.timed_out {
            self.wind_down(cx).await;
        }
    }
}

/// `llm`, counted against `budget` when the task has one.
pub(crate) fn budgeted(llm: Arc<dyn Llm>, budget: Option<&Arc<Budget>>) -> Arc<dyn Llm> {
    match budget {
        Some(budget) => BudgetedLlm::wrap(llm, budget),
        None => llm,
    }
}

/// Tells the planner when task `id`'s budget is spent; gives up when the
/// task ends first (its token is cancelled when it replies).
pub(super) fn watch_budget(
    planner: ActorRef<PlannerMsg>,
    id: TaskId,
    spent: CancellationToken,
    ended: CancellationToken,
) {
    tokio::spawn(async move {
        tokio::select! {
            biased;
            _ = spent.cancelled() => {
                let _ = planner.send_message(PlannerMsg::Task(id, TaskEvent::BudgetSpent));
            }
            _ = ended.cancelled() => {}
        }
    });
}

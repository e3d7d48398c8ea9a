//! When a subtask fails: the reason it is given, a crashed executor
//! restarted once from its journal, and the replan asked of the model
//! (whose answer comes back as [`TaskEvent::Replanned`]).

use std::collections::HashSet;

use ractor::ActorId;
use tracing::Span;

use super::budget::budgeted;
use super::{Cx, LiveTask};
use crate::dag::AfterFailure;
use crate::events::PlanEvent;
use crate::messages::TaskEvent;
use crate::model_call::ask_then_tell;
use crate::plan::{self, Asked, IdRules, PlanError, PlannedSubtask, ReplanContext};
use hermes_core::agent::{Outcome, StopStatus};
use hermes_core::llm::Usage;
use hermes_core::telemetry;

impl LiveTask {
    pub(super) fn on_subtask_failed(&mut self, cx: &mut Cx<'_>, id: &str, outcome: Outcome) {
        let reason = match outcome.status {
            StopStatus::Error => format!("error: {}", outcome.error.unwrap_or_default()),
            StopStatus::Incomplete => format!(
                "finished without writing {} after {} round(s)",
                outcome.missing.join(", "),
                outcome.rounds
            ),
            other => format!(
                "stopped by the {} guard after {} round(s)",
                other.as_str(),
                outcome.rounds
            ),
        };
        let progress = format!("{reason}\n{}", outcome.progress);
        self.fail_subtask(cx, id, outcome.rounds, progress, outcome.usage);
    }

    /// An executor crashed: restart it once from its journal; a second
    /// crash is a failed subtask.
    pub async fn on_crashed(&mut self, cx: &mut Cx<'_>, actor: ActorId, error: String) {
        let Some(id) = self
            .executors
            .iter()
            .find(|(_, r)| r.actor.get_id() == actor)
            .map(|(id, _)| id.clone())
        else {
            return;
        };
        if let Some(lost) = self.executors.remove(&id) {
            // Whatever is left of its loop must stop with it.
            lost.cancel.cancel();
        }
        let history = self.history(&id);
        let Some(spec) = self.dag.slot(&id).map(|s| s.spec.clone()) else {
            return;
        };
        if let Some(span) = self.subtask_spans.get(&id) {
            let crash = tracing::info_span!(parent: span, "executor.crash", hermes.subtask_id = %id, hermes.after_round = history.len() as i64);
            telemetry::set_error(&crash, error.clone());
        }
        if self.dag.timed_out {
            let outcome = self.journal_outcome(&spec, StopStatus::Cancelled, Some(error));
            self.on_subtask_cancelled(cx, &id, outcome);
        } else if self.dag.restart(&id) {
            cx.emit(PlanEvent::Restarted {
                id: id.clone(),
                after_round: history.len(),
            });
            self.spawn_executor(cx, spec, history).await;
        } else {
            let outcome = self.journal_outcome(&spec, StopStatus::Error, Some(error.clone()));
            let progress = format!(
                "crashed again after a restart: {error}\n{}",
                outcome.progress
            );
            self.fail_subtask(cx, &id, outcome.rounds, progress, outcome.usage);
        }
        self.advance(cx).await;
    }

    pub(super) async fn on_replanned(
        &mut self,
        cx: &mut Cx<'_>,
        failed: &str,
        plan: Asked<Vec<PlannedSubtask>, PlanError>,
    ) {
        self.dag.usage += plan.usage;
        self.dag.planner_usage += plan.usage;
        cx.emit(match &plan.answer {
            Ok(subtasks) => PlanEvent::Replanned {
                failed: failed.to_string(),
                new: subtasks.iter().map(|s| s.id.clone()).collect(),
                replaced: std::iter::once(failed.to_string())
                    .chain(self.dag.dependents(failed).iter().map(|s| s.id.clone()))
                    .collect(),
                subtasks: subtasks.clone(),
            },
            Err(e) => PlanEvent::ReplanFailed {
                failed: failed.to_string(),
                reason: e.to_string(),
            },
        });
        self.dag.apply_replan(failed, plan.answer);
        self.advance(cx).await;
    }

    /// Records a failure and starts a replan or gives up on the subtask.
    pub(super) fn fail_subtask(
        &mut self,
        cx: &mut Cx<'_>,
        id: &str,
        rounds: u32,
        progress: String,
        usage: Usage,
    ) {
        let first_line = progress.lines().next().unwrap_or_default().to_string();
        self.close_subtask_span(id, Some(&first_line));
        let Some(after) = self.dag.fail(id, rounds, progress, usage) else {
            return;
        };
        cx.emit(PlanEvent::Failed {
            id: id.to_string(),
            reason: first_line.clone(),
        });
        if after == AfterFailure::GiveUp {
            return;
        }
        let Some(failed) = self.dag.slot(id) else {
            return;
        };
        let dependents = self.dag.dependents(id);
        let replaced: HashSet<String> = dependents
            .iter()
            .map(|s| s.id.clone())
            .chain([id.to_string()])
            .collect();
        let why = first_line;
        let ids = IdRules {
            settled: self.dag.settled_ids(&replaced),
            taken: self.dag.all_ids(),
            failed: Some((failed.spec.clone(), why)),
            completed: self.dag.finished_specs(),
        };
        let context = ReplanContext {
            task: &self.dag.task,
            completed: self.dag.results(),
            failed: &failed.spec,
            progress: failed.progress.as_deref().unwrap_or_default(),
            dependents,
        };
        let roles = cx.config.roles.all();
        let messages = plan::replan_messages(&context, &roles);
        let llm = budgeted(cx.config.models.default_model(), self.budget.as_ref());
        let temperature = cx.config.limits.temperature;
        let steers = cx.config.limits.steer.clone();
        let failed = id.to_string();
        let span =
            tracing::info_span!(parent: &self.span, "replan", hermes.failed_subtask = %failed);
        let failed_too = failed.clone();
        let replanning = async move {
            let mut plan =
                plan::request_plan(llm.as_ref(), messages, &roles, &ids, temperature).await;
            plan::merge_chains_if_on(&steers, &mut plan, &roles);
            if let Err(e) = &plan.answer {
                telemetry::set_error(&Span::current(), e.to_string());
            }
            TaskEvent::Replanned { failed, plan }
        };
        ask_then_tell(cx.myself, self.id, span, replanning, move |why| {
            TaskEvent::replan_failed(failed_too, why)
        });
    }
}

//! A live task's executors: spawning one for a subtask (role, limits,
//! tools, model, token, trace context), stopping one, and reading what a
//! subtask's journal says when its executor cannot.

use std::sync::Arc;
use std::time::Duration;

use ractor::Actor;
use tokio::time::Instant;

use super::{Cx, LiveTask, Running, DEADLINE_GRACE};
use crate::events::PlanEvent;
use crate::executor::{Executor, ExecutorArgs};
use crate::messages::{ExecutorMsg, SubtaskRun};
use crate::placement::RemoteRun;
use crate::plan::PlannedSubtask;
use hermes_core::agent::{Outcome, StopStatus};
use hermes_core::journal::JournalEntry;
use hermes_core::llm::Usage;
use hermes_core::telemetry;
use hermes_core::text::clip;

impl LiveTask {
    pub(super) async fn spawn_executor(
        &mut self,
        cx: &mut Cx<'_>,
        spec: PlannedSubtask,
        history: Vec<JournalEntry>,
    ) {
        let config = cx.config;
        let Some(role) = config.roles.get(&spec.role) else {
            let reason = format!("role `{}` is no longer registered", spec.role);
            self.fail_subtask(cx, &spec.id, 0, reason, Usage::default());
            return;
        };
        let span = self.subtask_spans.entry(spec.id.clone()).or_insert_with(|| {
            tracing::info_span!(target: telemetry::EXPORTED_ONLY, parent: &self.span, "subtask", hermes.subtask_id = %spec.id, hermes.role = %spec.role, hermes.goal = %clip(&spec.goal, 200))
        });
        // Unexported, a subtask's span is not built (`telemetry::EXPORTED_ONLY`):
        // its executor's trace context is the task's.
        let trace_context = telemetry::inject(if telemetry::exporting() {
            span
        } else {
            &self.span
        });
        let mut limits = role.limits_over(&config.limits);
        // An executor's loop runs until the task's deadline (the task's
        // token stops it there; the loop's own clock is a safety net just
        // behind it), unless its role sets a shorter clock of its own. The
        // base limits' clock is not used: with it (300 s by default) a slow
        // executor was cut mid-work and its subtask replanned from scratch
        // on the same clock, and the task timed out (EVALS.md, section 28).
        let until_deadline =
            self.deadline.saturating_duration_since(Instant::now()) + DEADLINE_GRACE;
        limits.timeout = match role.overlay().timeout_secs {
            Some(secs) => Duration::from_secs(secs).min(until_deadline),
            None => until_deadline,
        };
        let cancel = self.cancel.child_token();
        let args = ExecutorArgs {
            report_to: cx.myself.get_derived(),
            task: self.id,
            llm: config.models.for_role(role.model.as_deref()),
            role,
            toolbox: Arc::clone(&config.toolbox),
            journals: Arc::clone(&self.journals),
            cancel: cancel.clone(),
            faults: config.faults.clone(),
            memory: config.memory.clone(),
            events: config.events.clone(),
            approvals: config.approvals.clone(),
            budget: self.budget.clone(),
            // This planner reads the outcome, never its rounds.
            report_journal: false,
        };
        // A retry avoids the node where the last attempt failed.
        let avoid = self
            .dag
            .slot(&spec.id)
            .filter(|s| s.restarts > 0)
            .and_then(|s| s.node.clone());
        let slot = config
            .placement
            .as_ref()
            .and_then(|p| p.pick(&spec.role, avoid.as_deref()));
        let node = slot
            .as_ref()
            .map_or_else(|| "local".to_string(), |s| s.node().to_string());
        self.dag.place(&spec.id, node.clone());
        if history.is_empty() {
            cx.emit(PlanEvent::Started {
                id: spec.id.clone(),
                role: spec.role.clone(),
                goal: spec.goal.clone(),
                node,
            });
        }
        let run = SubtaskRun {
            goal: self.dag.executor_goal(&spec),
            attempt: self.dag.slot(&spec.id).map_or(0, |s| s.restarts),
            subtask: spec.clone(),
            limits,
            history,
            trace_context,
        };
        let spawned = match slot {
            Some(slot) => {
                let remote = RemoteRun {
                    report_to: args.report_to,
                    task: args.task,
                    journals: args.journals,
                    cancel: args.cancel,
                    approvals: args.approvals,
                    budget: args.budget,
                };
                slot.spawn(remote, cx.myself.get_cell()).await
            }
            None => Actor::spawn_linked(None, Executor, args, cx.myself.get_cell())
                .await
                .map(|(actor, _)| actor),
        };
        match spawned {
            Ok(actor) => {
                cx.owners.insert(actor.get_id(), self.id);
                if let Err(e) = actor.send_message(ExecutorMsg::Run(Box::new(run))) {
                    tracing::warn!("executor for {} did not take its run: {e}", spec.id);
                }
                self.executors.insert(spec.id, Running { actor, cancel });
            }
            Err(e) => {
                let reason = format!("executor could not start: {e}");
                self.fail_subtask(cx, &spec.id, 0, reason, Usage::default());
            }
        }
    }

    /// Ends an executor whose loop has reported (or that is given up on).
    pub(super) fn stop_executor(&mut self, cx: &mut Cx<'_>, id: &str) {
        if let Some(running) = self.executors.remove(id) {
            cx.owners.remove(&running.actor.get_id());
            running.cancel.cancel();
            running.actor.stop(Some("subtask ended".into()));
        }
    }

    /// The outputs subtask `id`'s plan names that the workspace lacks (none
    /// for a subtask run on another node: its files are in that node's
    /// workspace).
    pub(super) fn missing_outputs(&self, cx: &Cx<'_>, id: &str) -> Vec<String> {
        let Some(slot) = self.dag.slot(id) else {
            return Vec::new();
        };
        if slot.node.as_deref().is_some_and(|n| n != "local") {
            return Vec::new();
        }
        let Some(workspace) = cx.config.toolbox.workspace() else {
            return Vec::new();
        };
        slot.spec
            .outputs
            .iter()
            .filter(|name| workspace.lacks(name))
            .cloned()
            .collect()
    }

    pub(super) fn history(&self, id: &str) -> Vec<JournalEntry> {
        self.journals.get(id).map(|h| h.clone()).unwrap_or_default()
    }

    /// What a subtask's journal says about it, as an outcome with `status`.
    pub(super) fn journal_outcome(
        &self,
        spec: &PlannedSubtask,
        status: StopStatus,
        error: Option<String>,
    ) -> Outcome {
        let goal = self.dag.executor_goal(spec).text();
        let elapsed = self.dag.started.elapsed();
        Outcome::from_journal(&goal, status, self.history(&spec.id), elapsed, error)
    }
}

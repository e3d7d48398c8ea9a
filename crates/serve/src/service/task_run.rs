//! One task's run inside the service, from its queue slot to its recorded
//! end: waiting for a free slot, launching its own planner on the task's
//! workspace, resuming where a crash left it, streaming its plan events,
//! cancelling it on request, and recording how it ended.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hermes_actors::{PlanEvent, Resume, TaskReport, TaskRequest, TaskStatus};
use hermes_core::llm::budget::Caps;
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{Launch, Live, Service, CANCEL_GRACE};
use crate::events;
use crate::record::{now, TaskRecord, TaskSpec, TaskState};

impl Service {
    /// Queues `record`'s run; `announce`: record its `queued` event first
    /// (a new task, not a resumed one).
    pub(super) fn spawn(&self, record: TaskRecord, announce: bool) {
        let (events, _) = broadcast::channel(1024);
        let cancel = self.inner.closing.child_token();
        self.inner.live.insert(
            record.id.clone(),
            Live {
                cancel: cancel.clone(),
                events,
            },
        );
        if announce {
            self.emit(&record.id, "queued", json!({"goal": record.spec.goal}));
        }
        let service = self.clone();
        self.inner.tracker.spawn(async move {
            let id = record.id.clone();
            let (status, report) = service.run(record, &cancel).await;
            service.end(&id, status, report);
        });
    }

    /// Waits for a slot, then runs the task on its own planner.
    async fn run(
        &self,
        mut record: TaskRecord,
        cancel: &CancellationToken,
    ) -> (TaskState, Option<Value>) {
        let slots = Arc::clone(&self.inner.slots);
        let _permit = tokio::select! {
            permit = slots.acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return (TaskState::Cancelled, None),
            },
            _ = cancel.cancelled() => return (TaskState::Cancelled, None),
        };
        record.status = TaskState::Running;
        if let Err(e) = self.inner.store.save_task(&record) {
            return (TaskState::Error, Some(error_report(&e.to_string())));
        }
        self.inner.running.fetch_add(1, Ordering::Relaxed);
        let ended = self.plan_and_run(&record, cancel).await;
        self.inner.running.fetch_sub(1, Ordering::Relaxed);
        ended
    }

    async fn plan_and_run(
        &self,
        record: &TaskRecord,
        cancel: &CancellationToken,
    ) -> (TaskState, Option<Value>) {
        let workspace = match self.task_workspace(&record.spec) {
            Ok(dir) => dir,
            Err(e) => return (TaskState::Error, Some(error_report(&e))),
        };
        let sink_service = self.clone();
        let sink_id = record.id.clone();
        let launch = Launch {
            workspace,
            max_replans: record.spec.max_replans,
            roles: self.inner.config.roles.clone(),
            events: Arc::new(move |event: &PlanEvent| sink_service.on_plan_event(&sink_id, event)),
            approvals: self.approvals_for(&record.id),
        };
        let hermes = match (self.inner.config.launcher)(launch).await {
            Ok(hermes) => hermes,
            Err(e) => return (TaskState::Error, Some(error_report(&e))),
        };
        let timeout = record
            .spec
            .timeout_secs
            .map_or(self.inner.config.default_timeout, Duration::from_secs);
        let default = self.inner.config.budget;
        let mut request = TaskRequest::new(&record.spec.goal)
            .with_timeout(timeout)
            .with_budget(Caps {
                tokens: record.spec.token_budget.or(default.tokens),
                calls: record.spec.call_budget.or(default.calls),
            });
        if record.restarts > 0 {
            if let Some(resume) = self.resume_state(&record.id) {
                request = request.resuming(resume);
            }
        }
        let ended = {
            let submit = hermes.submit(request);
            tokio::pin!(submit);
            tokio::select! {
            report = &mut submit => match report {
                Ok(report) => (state_of(&report), serde_json::to_value(&report).ok()),
                Err(e) => (TaskState::Error, Some(error_report(&e.to_string()))),
            },
            _ = cancel.cancelled() => {
                // Stopping the planner cancels the executors; the task then
                // answers with what was done so far, kept as its report.
                hermes.planner().stop(Some("cancelled".into()));
                let partial = tokio::time::timeout(CANCEL_GRACE, &mut submit).await;
                let report = match partial {
                    Ok(Ok(report)) => serde_json::to_value(&report).ok(),
                    _ => None,
                };
                (TaskState::Cancelled, report)
            }
            }
        };
        hermes.shutdown().await;
        ended
    }

    /// Where an interrupted task stood (see [`events::resume_from`]).
    fn resume_state(&self, id: &str) -> Option<Resume> {
        events::resume_from(&self.inner.store.events_after(id, 0).ok()?)
    }

    /// The task's workspace folder, created when missing.
    fn task_workspace(&self, spec: &TaskSpec) -> Result<PathBuf, String> {
        let root = &self.inner.config.workspace;
        let Some(dir) = &spec.workspace else {
            return Ok(root.clone());
        };
        let path = root.join(dir);
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create the workspace {}: {e}", path.display()))?;
        Ok(path)
    }

    fn on_plan_event(&self, id: &str, event: &PlanEvent) {
        if let PlanEvent::Submitted { trace_id } = event {
            if let Ok(Some(mut record)) = self.inner.store.task(id) {
                record.trace_id = trace_id.clone();
                let _ = self.inner.store.save_task(&record);
            }
            return;
        }
        if let Some((kind, data)) = events::stream_event(event) {
            self.emit(id, kind, data);
        }
    }

    /// Records the task's end and its one `task_ended` event.
    fn end(&self, id: &str, status: TaskState, report: Option<Value>) {
        match self.inner.store.task(id) {
            Ok(Some(mut record)) => {
                record.status = status;
                record.ended = Some(now());
                if report.is_some() {
                    record.report = report;
                }
                if let Err(e) = self.inner.store.save_task(&record) {
                    tracing::error!("the end of {id} not recorded: {e}");
                }
                let result = record
                    .report
                    .as_ref()
                    .and_then(|r| r.get("result").cloned())
                    .unwrap_or(Value::Null);
                self.inner.metrics.on_task_ended(record.report.as_ref());
                self.emit(
                    id,
                    "task_ended",
                    json!({"status": status.as_str(), "result": result}),
                );
            }
            Ok(None) => tracing::error!("task {id} vanished from the store"),
            Err(e) => tracing::error!("the end of {id} not recorded: {e}"),
        }
        self.inner.live.remove(id);
    }
}

/// The service's status for a plan report's.
fn state_of(report: &TaskReport) -> TaskState {
    match report.status {
        TaskStatus::Finished => TaskState::Finished,
        TaskStatus::Failed => TaskState::Failed,
        TaskStatus::Timeout => TaskState::Timeout,
        TaskStatus::Error => TaskState::Error,
        TaskStatus::Budget => TaskState::Budget,
    }
}

fn error_report(error: &str) -> Value {
    json!({"status": "error", "error": error})
}

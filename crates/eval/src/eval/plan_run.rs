//! A plan-mode run of `hermes eval`: the task goes to a planner with the
//! suite's roles, its executors' rounds are kept in the run's
//! [`PLAN_ROUNDS_FILE`], and the planner's report becomes the run's
//! observation (one journal line per subtask).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::check::{RunObservation, RunStatus};
use super::runner::{EvalConfig, Ran, PLAN_ROUNDS_FILE};
use super::suite::Task;
use hermes_actors::{Hermes, PlanEvent, TaskRequest, TaskStatus, DEFAULT_TASK_TIMEOUT};
use hermes_core::agent::LongTermMemory;
use hermes_core::faults::Faults;
use hermes_core::limits::Limits;
use hermes_core::llm::Llm;
use hermes_core::tools::Toolbox;

/// Runs `task` through a planner and its executors, bounded by the task's
/// timeout, and writes the plan's journal and rounds beside `journal`.
pub(super) async fn run_plan(
    task: &Task,
    config: &EvalConfig,
    faults: &Faults,
    llm: Arc<dyn Llm>,
    toolbox: Toolbox,
    journal: &Path,
    memory: Option<LongTermMemory>,
) -> Ran {
    let timeout = task
        .limits
        .timeout_secs
        .map_or(DEFAULT_TASK_TIMEOUT, Duration::from_secs);
    // The task's timeout bounds the whole plan; an executor's loop runs
    // until that deadline unless its role sets a clock of its own.
    let limits = Limits {
        max_rounds: task.limits.max_rounds.unwrap_or(config.limits.max_rounds),
        steer: config.limits.steer.overlaid(&task.limits.steer),
        ..config.limits.clone()
    };
    let mut builder = Hermes::builder();
    if let Some(approvals) = &config.approvals {
        builder = builder.approvals(approvals.clone());
    }
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    let rounds: Arc<Mutex<String>> = Arc::default();
    let sink = Arc::clone(&rounds);
    builder = builder.on_event(Arc::new(move |event: &PlanEvent| {
        if let PlanEvent::Round { id, entry, .. } = event {
            if let Ok(Value::Object(mut line)) = serde_json::to_value(entry.as_ref()) {
                line.insert("subtask".into(), Value::from(id.as_str()));
                if let Ok(mut text) = sink.lock() {
                    text.push_str(&Value::Object(line).to_string());
                    text.push('\n');
                }
            }
        }
    }));
    let hermes = builder
        .llm(llm)
        .toolbox(toolbox)
        .roles(config.roles.clone())
        .limits(limits)
        .concurrency(config.subtask_concurrency)
        .faults(faults.clone())
        .spawn()
        .await;
    let hermes = match hermes {
        Ok(hermes) => hermes,
        Err(e) => return Ran::error(e.to_string()),
    };
    let report = hermes
        .submit(TaskRequest::new(&task.goal).with_timeout(timeout))
        .await;
    hermes.shutdown().await;
    let report = match report {
        Ok(report) => report,
        Err(e) => return Ran::error(e.to_string()),
    };
    // The plan's journal: one line per subtask, as the report has them.
    let lines: String = report
        .subtasks
        .iter()
        .filter_map(|s| serde_json::to_string(s).ok())
        .map(|line| line + "\n")
        .collect();
    if let Err(e) = tokio::fs::write(journal, lines).await {
        tracing::warn!("plan journal {} not written: {e}", journal.display());
    }
    let rounds = rounds.lock().map(|text| text.clone()).unwrap_or_default();
    let rounds_file = journal.with_file_name(PLAN_ROUNDS_FILE);
    if let Err(e) = tokio::fs::write(&rounds_file, rounds).await {
        tracing::warn!("plan rounds {} not written: {e}", rounds_file.display());
    }
    let status = match report.status {
        TaskStatus::Finished => RunStatus::Finished,
        TaskStatus::Failed => RunStatus::Failed,
        TaskStatus::Timeout => RunStatus::Timeout,
        TaskStatus::Error => RunStatus::Error,
        TaskStatus::Budget => RunStatus::Budget,
    };
    Ran {
        observation: RunObservation {
            status,
            result: report
                .result
                .clone()
                .filter(|_| status == RunStatus::Finished),
            rounds: report.subtasks.iter().map(|s| s.rounds).sum(),
        },
        usage: report.usage,
        error: report.error,
    }
}

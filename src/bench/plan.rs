//! `hermes bench plan`: one task planned into N subtasks over R roles and
//! run through the public [`Hermes`] API (builder, `submit`), every
//! subtask at once, against the in-process [`PlanModel`]. It measures what
//! the planner and executor actors add around the model: the time each
//! subtask waits between the plan and its first model call, the wall time
//! beyond the model's critical path (per subtask), rounds per second, CPU
//! per round and memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::loops::percentile;
use super::plan_model::{CallKind, PlanModel};
use super::process::{self, RssSampler};
use super::workspace::BenchWorkspace;
use crate::actors::roles::{Role, RoleLimits};
use crate::actors::{Hermes, RoleRegistry, SubtaskStatus, TaskRequest};
use crate::tools::builtin::ReadFile;
use crate::tools::Toolbox;

/// The roles subtasks are spread over, in turn (up to this many).
const ROLES: &[(&str, &str)] = &[
    ("reader", "Reads files and reports what they hold."),
    ("checker", "Checks files against what they should hold."),
    ("summariser", "Summarises files in a few lines."),
    ("archivist", "Lists and catalogues files."),
    ("auditor", "Looks for problems in files."),
    ("indexer", "Indexes the words in files."),
    ("reviewer", "Reviews files and says what to change."),
    ("translator", "Reads files and restates them."),
];

/// The most roles `hermes bench plan` can build.
pub const MAX_ROLES: usize = ROLES.len();

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanBench {
    /// Subtasks in the plan (all independent, all run at once).
    pub subtasks: usize,
    /// Roles they are spread over (1 to [`MAX_ROLES`]).
    pub roles: usize,
    /// How long each model call takes.
    pub model_latency: Duration,
}

/// What a plan benchmark measured (`hermes bench plan --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// Subtasks planned.
    pub subtasks: usize,
    /// Roles they were spread over.
    pub roles: usize,
    /// The model's latency per call, in milliseconds.
    pub model_latency_ms: f64,
    /// How the task ended (`finished`, ...).
    pub status: String,
    /// Subtasks that finished.
    pub finished_subtasks: usize,
    /// Executor rounds, all subtasks together.
    pub rounds: u64,
    /// Model calls: the plan, every executor round and the answer.
    pub model_calls: usize,
    /// Wall time from `submit` to the report, in seconds.
    pub seconds: f64,
    /// Executor rounds per second.
    pub rounds_per_sec: f64,
    /// Process CPU time (user + system) per executor round, in microseconds
    /// (the planner's work included).
    pub cpu_per_round_us: f64,
    /// The model's critical path, in milliseconds: the plan call, the
    /// longest subtask's model calls, and the answer call.
    pub model_path_ms: f64,
    /// (Wall time minus the model's critical path) divided by the number of
    /// subtasks, in microseconds: what planning, dispatching, running the
    /// executors' loops and tools, and collecting results add per subtask.
    pub overhead_per_subtask_us: f64,
    /// Median time from the plan's answer to a subtask's first model call
    /// (executor spawned, prompt built), in milliseconds.
    pub dispatch_p50_ms: f64,
    /// 99th percentile of the same.
    pub dispatch_p99_ms: f64,
    /// Time from the last executor's last model call to the answer call, in
    /// milliseconds (results collected, answer prompt built).
    pub collect_ms: f64,
    /// The most resident memory seen while the task ran (sampled every
    /// 20 ms), in MiB.
    pub peak_rss_mib: f64,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum PlanBenchError {
    /// The temporary workspace could not be made.
    #[error("cannot set up the benchmark's workspace: {0}")]
    Workspace(std::io::Error),
    /// The planner did not start or answer.
    #[error("the planner failed: {0}")]
    Planner(String),
}

impl PlanBench {
    /// Starts a planner, submits the task, and measures it.
    pub async fn run(&self) -> Result<PlanReport, PlanBenchError> {
        let files = BenchWorkspace::create().map_err(PlanBenchError::Workspace)?;
        let mut toolbox = Toolbox::new();
        toolbox.register(ReadFile::new(files.workspace.clone()));
        let roles = roles(self.roles.clamp(1, MAX_ROLES), &toolbox.names())?;
        let names = roles.all().into_iter().map(|r| r.name).collect();
        let model = Arc::new(PlanModel::new(self.model_latency, self.subtasks, names));
        let hermes = Hermes::builder()
            .llm(model.clone())
            .toolbox(toolbox)
            .roles(roles)
            .concurrency(self.subtasks)
            .task_timeout(Duration::from_secs(3600))
            .spawn()
            .await
            .map_err(|e| PlanBenchError::Planner(e.to_string()))?;

        let sampler = RssSampler::start();
        let cpu_before = process::cpu_time();
        let started = Instant::now();
        let report = hermes
            .submit(TaskRequest::new("Read every file, job by job."))
            .await;
        let wall = started.elapsed();
        let cpu = process::cpu_time().saturating_sub(cpu_before);
        let peak = sampler.stop().await;
        hermes.shutdown().await;
        let report = report.map_err(|e| PlanBenchError::Planner(e.to_string()))?;

        let rounds: u64 = report.subtasks.iter().map(|s| u64::from(s.rounds)).sum();
        let finished_subtasks = report
            .subtasks
            .iter()
            .filter(|s| s.status == SubtaskStatus::Finished)
            .count();
        let timing = Timing::of(&model, self.subtasks);
        let per_round = if rounds == 0 {
            0.0
        } else {
            cpu.as_secs_f64() * 1e6 / rounds as f64
        };
        Ok(PlanReport {
            subtasks: self.subtasks,
            roles: self.roles.clamp(1, MAX_ROLES),
            model_latency_ms: self.model_latency.as_secs_f64() * 1e3,
            status: report.status.to_string(),
            finished_subtasks,
            rounds,
            model_calls: timing.calls,
            seconds: wall.as_secs_f64(),
            rounds_per_sec: rounds as f64 / wall.as_secs_f64().max(1e-9),
            cpu_per_round_us: per_round,
            model_path_ms: timing.model_path.as_secs_f64() * 1e3,
            overhead_per_subtask_us: wall.saturating_sub(timing.model_path).as_secs_f64() * 1e6
                / self.subtasks.max(1) as f64,
            dispatch_p50_ms: percentile(&timing.dispatch_ms, 0.50),
            dispatch_p99_ms: percentile(&timing.dispatch_ms, 0.99),
            collect_ms: timing.collect.as_secs_f64() * 1e3,
            peak_rss_mib: peak as f64 / f64::from(1 << 20),
        })
    }
}

/// The benchmark's roles: the first `count` of [`ROLES`], each with
/// `read_file` only.
fn roles(count: usize, tools: &[&str]) -> Result<RoleRegistry, PlanBenchError> {
    let registry = RoleRegistry::new();
    for (name, description) in &ROLES[..count] {
        let role = Role {
            name: (*name).into(),
            description: (*description).into(),
            system_prompt: format!("You are the {name} of a team. {description}"),
            tools: Some(vec!["read_file".into()]),
            model: None,
            limits: RoleLimits::default(),
        };
        registry
            .register(role, tools)
            .map_err(|e| PlanBenchError::Planner(e.to_string()))?;
    }
    Ok(registry)
}

/// What the model's call log says about the task's timing.
struct Timing {
    calls: usize,
    model_path: Duration,
    dispatch_ms: Vec<f64>,
    collect: Duration,
}

impl Timing {
    fn of(model: &PlanModel, subtasks: usize) -> Self {
        let calls = model.calls();
        let duration_of = |kind: CallKind| {
            calls
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| c.end.duration_since(c.start))
                .sum::<Duration>()
        };
        let plan_end = calls
            .iter()
            .filter(|c| c.kind == CallKind::Plan)
            .map(|c| c.end)
            .max();
        let mut first_step = vec![None; subtasks];
        let mut step_time = vec![Duration::ZERO; subtasks];
        let mut last_step_end = None;
        for call in &calls {
            if let CallKind::Step(k) = call.kind {
                if k < subtasks {
                    let first: &mut Option<Instant> = &mut first_step[k];
                    *first = Some(first.map_or(call.start, |t| t.min(call.start)));
                    step_time[k] += call.end.duration_since(call.start);
                }
                last_step_end = Some(last_step_end.map_or(call.end, |t: Instant| t.max(call.end)));
            }
        }
        let answer_start = calls
            .iter()
            .filter(|c| c.kind == CallKind::Answer)
            .map(|c| c.start)
            .min();
        let mut dispatch_ms: Vec<f64> = match plan_end {
            Some(plan_end) => first_step
                .iter()
                .flatten()
                .map(|t| t.saturating_duration_since(plan_end).as_secs_f64() * 1e3)
                .collect(),
            None => Vec::new(),
        };
        dispatch_ms.sort_by(f64::total_cmp);
        let collect = match (last_step_end, answer_start) {
            (Some(end), Some(start)) => start.saturating_duration_since(end),
            _ => Duration::ZERO,
        };
        Self {
            calls: calls.len(),
            model_path: duration_of(CallKind::Plan)
                + step_time.iter().max().copied().unwrap_or_default()
                + duration_of(CallKind::Answer),
            dispatch_ms,
            collect,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn every_subtask_is_planned_run_and_timed() {
        let report = PlanBench {
            subtasks: 12,
            roles: 4,
            model_latency: Duration::from_millis(2),
        }
        .run()
        .await
        .unwrap();
        assert_eq!(report.status, "finished", "{report:?}");
        assert_eq!(report.finished_subtasks, 12);
        // 6 subtasks of 2 rounds and 6 of 3.
        assert_eq!(report.rounds, 30);
        assert_eq!(report.model_calls, 32, "the plan, 30 rounds, the answer");
        assert!(report.model_path_ms > 0.0 && report.dispatch_p99_ms >= report.dispatch_p50_ms);
    }
}

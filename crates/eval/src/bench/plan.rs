//! `hermes bench plan`: one task planned into N subtasks over R roles and
//! run through the public [`Hermes`] API (builder, `submit`), every
//! subtask at once, against the in-process [`PlanModel`]. It measures what
//! the planner and executor actors add around the model: the time each
//! subtask waits between the plan and its first model call, the wall time
//! beyond the model's critical path (per subtask), rounds per second, CPU
//! per round and memory.
//!
//! With a base URL ([`PlanBench::base_url`]) the model is behind HTTP: the
//! scripted server of `hermes bench serve --latency-ms MS`, which plans from
//! the `[bench-plan N ROLES]` marker in the task's text. That is the run
//! `bench/compare.sh` (`WORKLOAD=plan`) sets beside the peers' own
//! planner-and-executors programs against the same server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use futures::future::join_all;

use super::loops::{per_second, percentile};
use super::plan_model::{CallKind, PlanModel, RecordedLlm};
use super::process::{self, RssSampler};
use super::workspace::BenchWorkspace;
use hermes_actors::roles::{Role, RoleLimits};
use hermes_actors::{Hermes, RoleRegistry, SubtaskStatus, TaskRequest};
use hermes_core::llm::{Llm, OpenAiClient, OpenAiConfig};
use hermes_core::tools::builtin::ReadFile;
use hermes_core::tools::Toolbox;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanBench {
    /// Tasks submitted at once to the one planner.
    pub tasks: usize,
    /// Subtasks in each task's plan (all independent, all run at once).
    pub subtasks: usize,
    /// Roles they are spread over (1 to [`MAX_ROLES`]).
    pub roles: usize,
    /// How long each model call takes (in-process model only: over HTTP
    /// the server waits).
    pub model_latency: Duration,
    /// The scripted server to talk to (`hermes bench serve`, with `/v1`);
    /// `None`: the in-process model.
    pub base_url: Option<String>,
}

/// What a plan benchmark measured (`hermes bench plan --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// Tasks submitted at once.
    pub tasks: usize,
    /// Subtasks planned per task.
    pub subtasks: usize,
    /// Executors run, all tasks together (tasks × subtasks).
    pub executors: usize,
    /// Roles they were spread over.
    pub roles: usize,
    /// The model's latency per call, in milliseconds (over HTTP: the
    /// median call as this client timed it).
    pub model_latency_ms: f64,
    /// How the tasks ended (`finished`, or the first other status seen).
    pub status: String,
    /// Subtasks that finished, all tasks together.
    pub finished_subtasks: usize,
    /// Executor rounds, all subtasks together.
    pub rounds: u64,
    /// Model calls: the plans, every executor round and the answers.
    pub model_calls: usize,
    /// Wall time from the first `submit` to the last report, in seconds.
    pub seconds: f64,
    /// Executor rounds per second.
    pub rounds_per_sec: f64,
    /// Process CPU time (user + system) per executor round, in microseconds
    /// (the planner's work included).
    pub cpu_per_round_us: f64,
    /// The model's critical path, in milliseconds: the plan call, the
    /// longest subtask's model calls, and the answer call (the longest of
    /// the tasks).
    pub model_path_ms: f64,
    /// (Wall time minus the model's critical path) divided by the number of
    /// executors, in microseconds: what planning, dispatching, running the
    /// executors' loops and tools, and collecting results add per subtask.
    pub overhead_per_subtask_us: f64,
    /// Median time from its task's plan answer to a subtask's first model
    /// call (executor spawned, prompt built), in milliseconds.
    pub dispatch_p50_ms: f64,
    /// 99th percentile of the same.
    pub dispatch_p99_ms: f64,
    /// Median time from its task's plan answer to the end of a subtask's
    /// last model call (its whole run), in milliseconds.
    pub subtask_p50_ms: f64,
    /// 99th percentile of the same: within 2× of the median means no
    /// executor was starved while others ran.
    pub subtask_p99_ms: f64,
    /// Time from a task's last executor call to its answer call, in
    /// milliseconds (results collected, answer prompt built); the longest
    /// of the tasks.
    pub collect_ms: f64,
    /// The most resident memory seen while the tasks ran (sampled every
    /// 20 ms), in MiB.
    pub peak_rss_mib: f64,
    /// (That peak minus resident memory before the first submit) per
    /// executor, in KiB.
    pub rss_per_executor_kib: f64,
    /// The most executor actors alive at once (sampled every 20 ms with
    /// the memory): `executors` when every subtask ran at the same time.
    pub peak_live_executors: usize,
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
    /// Starts a planner, submits the tasks at once, and measures them.
    pub async fn run(&self) -> Result<PlanReport, PlanBenchError> {
        let files = BenchWorkspace::create().map_err(PlanBenchError::Workspace)?;
        let mut toolbox = Toolbox::new();
        toolbox.register(ReadFile::new(files.workspace.clone()));
        let roles = roles(self.roles.clamp(1, MAX_ROLES), &toolbox.names())?;
        let names: Vec<String> = roles.all().into_iter().map(|r| r.name).collect();
        let role_names = names.join(",");
        let tasks = self.tasks.max(1);
        let executors = tasks * self.subtasks;
        let (llm, calls) = self.model(names)?;
        let hermes = Hermes::builder()
            .llm(llm)
            .toolbox(toolbox)
            .roles(roles)
            .concurrency(self.subtasks)
            .task_timeout(Duration::from_secs(3600))
            .spawn()
            .await
            .map_err(|e| PlanBenchError::Planner(e.to_string()))?;

        let rss_before = process::rss_bytes().unwrap_or(0);
        let sampler = RssSampler::start();
        let cpu_before = process::cpu_time();
        let started = Instant::now();
        let reports = join_all(
            (0..tasks).map(|t| hermes.submit(TaskRequest::new(self.task(t, &role_names)))),
        )
        .await;
        let wall = started.elapsed();
        let cpu = process::cpu_time().saturating_sub(cpu_before);
        let peaks = sampler.stop().await;
        let peak = peaks.rss;
        hermes.shutdown().await;
        let reports = reports
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PlanBenchError::Planner(e.to_string()))?;

        let subtasks = || reports.iter().flat_map(|r| &r.subtasks);
        let rounds: u64 = subtasks().map(|s| u64::from(s.rounds)).sum();
        let finished_subtasks = subtasks()
            .filter(|s| s.status == SubtaskStatus::Finished)
            .count();
        let status = reports
            .iter()
            .map(|r| r.status.to_string())
            .find(|s| s != "finished")
            .unwrap_or_else(|| "finished".into());
        let timing = Timing::of(calls(), tasks, self.subtasks);
        let per_round = if rounds == 0 {
            0.0
        } else {
            cpu.as_secs_f64() * 1e6 / rounds as f64
        };
        Ok(PlanReport {
            tasks,
            subtasks: self.subtasks,
            executors,
            roles: self.roles.clamp(1, MAX_ROLES),
            // Over HTTP: the calls' median as the client saw it.
            model_latency_ms: match self.base_url {
                None => self.model_latency,
                Some(_) => timing.latency,
            }
            .as_secs_f64()
                * 1e3,
            status,
            finished_subtasks,
            rounds,
            model_calls: timing.calls,
            seconds: wall.as_secs_f64(),
            rounds_per_sec: per_second(rounds, wall.as_secs_f64()),
            cpu_per_round_us: per_round,
            model_path_ms: timing.model_path.as_secs_f64() * 1e3,
            overhead_per_subtask_us: wall.saturating_sub(timing.model_path).as_secs_f64() * 1e6
                / executors.max(1) as f64,
            dispatch_p50_ms: percentile(&timing.dispatch_ms, 0.50),
            dispatch_p99_ms: percentile(&timing.dispatch_ms, 0.99),
            subtask_p50_ms: percentile(&timing.subtask_ms, 0.50),
            subtask_p99_ms: percentile(&timing.subtask_ms, 0.99),
            collect_ms: timing.collect.as_secs_f64() * 1e3,
            peak_rss_mib: peak as f64 / f64::from(1 << 20),
            rss_per_executor_kib: peak.saturating_sub(rss_before) as f64
                / 1024.0
                / executors.max(1) as f64,
            peak_live_executors: peaks.executors,
        })
    }
}

/// The calls a plan benchmark's model made, read after the run.
type CallLog = Box<dyn Fn() -> Vec<super::plan_model::Call>>;

impl PlanBench {
    /// The model the planner and executors call, and how to read its call
    /// log afterwards.
    fn model(&self, roles: Vec<String>) -> Result<(Arc<dyn Llm>, CallLog), PlanBenchError> {
        match &self.base_url {
            None => {
                let model = Arc::new(PlanModel::new(self.model_latency, self.subtasks, roles));
                let log = Arc::clone(&model);
                Ok((model, Box::new(move || log.calls())))
            }
            Some(url) => {
                let client = OpenAiClient::new(OpenAiConfig::new(url.clone(), "bench"))
                    .map_err(|e| PlanBenchError::Planner(format!("cannot reach {url}: {e}")))?;
                let model = Arc::new(RecordedLlm::new(Arc::new(client)));
                let log = Arc::clone(&model);
                Ok((model, Box::new(move || log.calls())))
            }
        }
    }

    /// The text of task `t`; over HTTP with the marker the server plans
    /// from.
    fn task(&self, t: usize, roles: &str) -> String {
        match self.base_url {
            None => PlanModel::task(t),
            Some(_) => format!(
                "[bench-plan {} {roles}] {}",
                self.subtasks,
                PlanModel::task(t)
            ),
        }
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
            steer: Default::default(),
            approve: Vec::new(),
            approve_after_untrusted: false,
            token_budget: None,
            call_budget: None,
        };
        registry
            .register(role, tools)
            .map_err(|e| PlanBenchError::Planner(e.to_string()))?;
    }
    Ok(registry)
}

/// What the model's call log says about the tasks' timing.
struct Timing {
    calls: usize,
    /// The median model call's duration.
    latency: Duration,
    /// The longest task's model critical path.
    model_path: Duration,
    /// Per subtask: its task's plan answer to its first model call, sorted.
    dispatch_ms: Vec<f64>,
    /// Per subtask: its task's plan answer to its last call's end, sorted.
    subtask_ms: Vec<f64>,
    /// The longest of the tasks' collect times.
    collect: Duration,
}

/// One subtask's model calls: first start, last end, time inside the model.
#[derive(Clone, Copy, Default)]
struct Steps {
    first: Option<Instant>,
    last: Option<Instant>,
    inside: Duration,
}

/// One task's calls: its plan and answer, and its subtasks' steps.
#[derive(Clone, Default)]
struct TaskCalls {
    plan: Option<(Instant, Instant)>,
    answer: Option<(Instant, Instant)>,
    steps: Vec<Steps>,
}

impl Timing {
    fn of(calls: Vec<super::plan_model::Call>, tasks: usize, subtasks: usize) -> Self {
        let mut spans: Vec<Duration> = calls
            .iter()
            .map(|c| c.end.duration_since(c.start))
            .collect();
        spans.sort();
        let latency = spans.get(spans.len() / 2).copied().unwrap_or_default();
        let mut per_task = vec![
            TaskCalls {
                steps: vec![Steps::default(); subtasks],
                ..TaskCalls::default()
            };
            tasks
        ];
        for call in &calls {
            match call.kind {
                CallKind::Plan(t) if t < tasks => {
                    per_task[t].plan.get_or_insert((call.start, call.end));
                }
                CallKind::Answer(t) if t < tasks => {
                    per_task[t].answer.get_or_insert((call.start, call.end));
                }
                CallKind::Step(t, k) if t < tasks && k < subtasks => {
                    let steps = &mut per_task[t].steps[k];
                    steps.first = Some(steps.first.map_or(call.start, |s| s.min(call.start)));
                    steps.last = Some(steps.last.map_or(call.end, |e| e.max(call.end)));
                    steps.inside += call.end.duration_since(call.start);
                }
                _ => {}
            }
        }
        let mut timing = Self {
            calls: calls.len(),
            latency,
            model_path: Duration::ZERO,
            dispatch_ms: Vec::new(),
            subtask_ms: Vec::new(),
            collect: Duration::ZERO,
        };
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        for task in &per_task {
            let span = |(start, end): (Instant, Instant)| end.duration_since(start);
            let longest = task
                .steps
                .iter()
                .map(|s| s.inside)
                .max()
                .unwrap_or_default();
            let path = task.plan.map_or(Duration::ZERO, span)
                + longest
                + task.answer.map_or(Duration::ZERO, span);
            timing.model_path = timing.model_path.max(path);
            let last_step = task.steps.iter().filter_map(|s| s.last).max();
            if let (Some(end), Some((answer, _))) = (last_step, task.answer) {
                timing.collect = timing.collect.max(answer.saturating_duration_since(end));
            }
            let Some((_, planned)) = task.plan else {
                continue;
            };
            for steps in &task.steps {
                if let (Some(first), Some(last)) = (steps.first, steps.last) {
                    timing
                        .dispatch_ms
                        .push(ms(first.saturating_duration_since(planned)));
                    timing
                        .subtask_ms
                        .push(ms(last.saturating_duration_since(planned)));
                }
            }
        }
        timing.dispatch_ms.sort_by(f64::total_cmp);
        timing.subtask_ms.sort_by(f64::total_cmp);
        timing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn every_subtask_is_planned_run_and_timed() {
        let report = PlanBench {
            tasks: 1,
            subtasks: 12,
            roles: 4,
            model_latency: Duration::from_millis(2),
            base_url: None,
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

    #[tokio::test(flavor = "multi_thread")]
    async fn tasks_at_once_each_get_their_own_plan_and_executors() {
        let report = PlanBench {
            tasks: 3,
            subtasks: 4,
            roles: 2,
            model_latency: Duration::from_millis(2),
            base_url: None,
        }
        .run()
        .await
        .unwrap();
        assert_eq!(report.status, "finished", "{report:?}");
        assert_eq!((report.executors, report.finished_subtasks), (12, 12));
        // Per task: 2 subtasks of 2 rounds and 2 of 3.
        assert_eq!(report.rounds, 30);
        assert_eq!(report.model_calls, 36, "3 plans, 30 rounds, 3 answers");
        assert!(
            report.subtask_p50_ms >= 2.0 * 2.0,
            "two 2 ms calls at least: {report:?}"
        );
        assert!(report.subtask_p99_ms >= report.subtask_p50_ms);
        assert!(report.dispatch_p50_ms <= report.subtask_p50_ms);
    }
    #[tokio::test(flavor = "multi_thread")]
    async fn over_http_the_server_plans_from_the_marker_and_the_calls_are_timed() {
        use super::super::server::{Script, ServerThread};
        let server = ServerThread::start(Script {
            rounds: 3,
            latency: Duration::from_millis(2),
        })
        .unwrap();
        let report = PlanBench {
            tasks: 2,
            subtasks: 6,
            roles: 3,
            model_latency: Duration::ZERO,
            base_url: Some(server.base_url.clone()),
        }
        .run()
        .await
        .unwrap();
        assert_eq!(report.status, "finished", "{report:?}");
        assert_eq!((report.executors, report.finished_subtasks), (12, 12));
        // The server's script: 3 rounds a subtask.
        assert_eq!(report.rounds, 36);
        assert_eq!(report.model_calls, 40, "2 plans, 36 rounds, 2 answers");
        assert!(report.model_latency_ms >= 2.0, "{report:?}");
        assert!(report.subtask_p50_ms >= 3.0 * 2.0, "{report:?}");
        assert!(report.dispatch_p99_ms >= report.dispatch_p50_ms);
    }
}

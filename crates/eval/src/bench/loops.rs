//! `hermes bench loop`: N agent loops at once in one process, against an
//! in-process model with a fixed latency, through the real `read_file`
//! tool on a temporary workspace. It measures what the runtime itself
//! costs around the model: rounds per second, CPU per round, the overhead
//! of each round (its wall time minus the model's and the tool's), and
//! memory per agent; and, as the baseline run in the same process, the CPU
//! the same model and tool calls cost with no loop around them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};

use super::model::{LatencyModel, FILES};
use super::process::{self, RssSampler};
use super::workspace::BenchWorkspace;
use hermes_core::agent::{Agent, CancellationToken, StopStatus};
use hermes_core::limits::Limits;
use hermes_core::llm::{ChatMessage, ChatRequest, Llm};
use hermes_core::tools::builtin::ReadFile;
use hermes_core::tools::{Tool, ToolError, ToolSpec, Toolbox, Workspace};

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopBench {
    /// Loops running at once.
    pub agents: usize,
    /// How long each model call takes.
    pub model_latency: Duration,
    /// Rounds per loop (the last one finishes).
    pub rounds: u32,
}

/// What a loop benchmark measured (`hermes bench loop --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopReport {
    /// Loops run.
    pub agents: usize,
    /// The model's latency per call, in milliseconds.
    pub model_latency_ms: f64,
    /// Loops that ended with `finish`.
    pub finished: usize,
    /// Rounds run, all loops together.
    pub rounds: u64,
    /// Wall time of the whole run, in seconds.
    pub seconds: f64,
    /// Rounds per second, all loops together.
    pub rounds_per_sec: f64,
    /// Process CPU time (user + system) per round, in microseconds.
    pub cpu_per_round_us: f64,
    /// Median overhead of a round: its wall time minus the model's and the
    /// tool's time, in microseconds.
    pub overhead_p50_us: f64,
    /// 99th percentile of the same.
    pub overhead_p99_us: f64,
    /// The most resident memory seen while the loops ran (sampled every
    /// 20 ms), in MiB.
    pub peak_rss_mib: f64,
    /// (That peak minus resident memory before the loops started) per
    /// agent, in KiB.
    pub rss_per_agent_kib: f64,
    /// The baseline, run in the same process just before: the same model
    /// calls and tool calls from plain tasks, with no loop around them (no
    /// prompt, parser, validation, journal or spans). Process CPU per
    /// round, in microseconds.
    pub bare_cpu_per_round_us: f64,
    /// `cpu_per_round_us / bare_cpu_per_round_us`: what the loop costs on
    /// top of the calls it makes.
    pub cpu_ratio: f64,
}

/// `read_file`, timing each call (the benchmark takes tool time out of the overhead).
struct TimedTool {
    inner: ReadFile,
    spent: Arc<Mutex<Vec<Duration>>>,
}

#[async_trait]
impl Tool for TimedTool {
    fn spec(&self) -> ToolSpec {
        self.inner.spec()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let started = Instant::now();
        let result = self.inner.call(args).await;
        if let Ok(mut spent) = self.spent.lock() {
            spent.push(started.elapsed());
        }
        result
    }
}

/// One loop's timings.
struct Timings {
    model: Arc<LatencyModel>,
    tool: Arc<Mutex<Vec<Duration>>>,
    /// When the loop started, then when each round was recorded, in order.
    ends: Arc<Mutex<Vec<Instant>>>,
}

impl LoopBench {
    /// Runs the baseline, then the loops, and measures both. Fails only
    /// when the temporary workspace cannot be made.
    pub async fn run(&self) -> std::io::Result<LoopReport> {
        let files = BenchWorkspace::create()?;
        let workspace = files.workspace.clone();
        let bare_cpu_per_round_us = self.bare(&workspace).await;
        let limits = Limits {
            max_rounds: self.rounds + 1,
            timeout: Duration::from_secs(3600),
            ..Limits::default()
        };
        let rss_before = process::rss_bytes().unwrap_or(0);
        let sampler = RssSampler::start();
        let cpu_before = process::cpu_time();
        let started = Instant::now();
        let mut loops = Vec::with_capacity(self.agents);
        let mut timings = Vec::with_capacity(self.agents);
        for _ in 0..self.agents {
            let model = Arc::new(LatencyModel::new(self.model_latency, self.rounds));
            let tool = Arc::new(Mutex::new(Vec::new()));
            let mut toolbox = Toolbox::new();
            toolbox.register(TimedTool {
                inner: ReadFile::new(workspace.clone()),
                spent: Arc::clone(&tool),
            });
            let ends = Arc::new(Mutex::new(Vec::new()));
            let recorder = Arc::clone(&ends);
            let start = Arc::clone(&ends);
            let agent = Agent::new(model.clone(), Arc::new(toolbox))
                .with_limits(limits.clone())
                .on_round(Arc::new(move |_| {
                    if let Ok(mut ends) = recorder.lock() {
                        ends.push(Instant::now());
                    }
                }));
            timings.push(Timings { model, tool, ends });
            loops.push(tokio::spawn(async move {
                if let Ok(mut ends) = start.lock() {
                    ends.push(Instant::now());
                }
                agent
                    .run("Read the files in turn.", &CancellationToken::new())
                    .await
            }));
        }
        let mut finished = 0;
        let mut rounds = 0u64;
        for handle in loops {
            if let Ok(outcome) = handle.await {
                finished += usize::from(outcome.status == StopStatus::Finished);
                rounds += u64::from(outcome.rounds);
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let cpu = process::cpu_time().saturating_sub(cpu_before);
        let peak = sampler.stop().await.rss;
        let mut overheads: Vec<f64> = timings.iter().flat_map(overheads_us).collect();
        overheads.sort_by(f64::total_cmp);
        let per_round = |total: f64| {
            if rounds == 0 {
                0.0
            } else {
                total / rounds as f64
            }
        };
        Ok(LoopReport {
            agents: self.agents,
            model_latency_ms: self.model_latency.as_secs_f64() * 1e3,
            finished,
            rounds,
            seconds,
            rounds_per_sec: per_second(rounds, seconds),
            cpu_per_round_us: per_round(cpu.as_secs_f64() * 1e6),
            overhead_p50_us: percentile(&overheads, 0.50),
            overhead_p99_us: percentile(&overheads, 0.99),
            peak_rss_mib: peak as f64 / f64::from(1 << 20),
            rss_per_agent_kib: peak.saturating_sub(rss_before) as f64
                / 1024.0
                / self.agents.max(1) as f64,
            bare_cpu_per_round_us,
            cpu_ratio: if bare_cpu_per_round_us > 0.0 {
                per_round(cpu.as_secs_f64() * 1e6) / bare_cpu_per_round_us
            } else {
                0.0
            },
        })
    }

    /// The baseline: per agent, a plain task making the same model calls
    /// (a one-message request) and `read_file` calls, timed as the loops'
    /// are, with nothing else around them. Process CPU per round, in
    /// microseconds.
    async fn bare(&self, workspace: &Workspace) -> f64 {
        let cpu_before = process::cpu_time();
        let mut tasks = Vec::with_capacity(self.agents);
        for _ in 0..self.agents {
            let model = LatencyModel::new(self.model_latency, self.rounds);
            let tool = TimedTool {
                inner: ReadFile::new(workspace.clone()),
                spent: Arc::new(Mutex::new(Vec::new())),
            };
            let rounds = self.rounds;
            tasks.push(tokio::spawn(async move {
                // The same instruments as a loop's: the timed tool above and
                // a clock reading kept at each round's end (`on_round`).
                let ends = Mutex::new(vec![Instant::now()]);
                for round in 1..=rounds {
                    let request = ChatRequest {
                        messages: vec![ChatMessage::user(format!("Round {round} of {rounds}."))],
                        temperature: 0.0,
                        max_tokens: 64,
                        json: true,
                        schema: None,
                        seed: None,
                    };
                    let _ = model.chat(&request).await;
                    if round < rounds {
                        let mut args = Map::new();
                        args.insert(
                            "path".into(),
                            Value::from(format!("f{}.txt", round % FILES)),
                        );
                        let _ = tool.call(args).await;
                    }
                    if let Ok(mut ends) = ends.lock() {
                        ends.push(Instant::now());
                    }
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
        let cpu = process::cpu_time().saturating_sub(cpu_before);
        let rounds = self.agents as f64 * f64::from(self.rounds);
        if rounds == 0.0 {
            0.0
        } else {
            cpu.as_secs_f64() * 1e6 / rounds
        }
    }
}

/// Each round's wall time minus its model call and its tool call, in µs.
/// Round k's model call is call k; its tool call is the k-th tool call
/// (the finishing round calls no tool).
fn overheads_us(timings: &Timings) -> Vec<f64> {
    let ends = timings.ends.lock().map(|e| e.clone()).unwrap_or_default();
    let model = timings.model.spent();
    let tool = timings.tool.lock().map(|t| t.clone()).unwrap_or_default();
    ends.windows(2)
        .enumerate()
        .map(|(k, pair)| {
            let wall = pair[1].duration_since(pair[0]);
            let inside = model.get(k).copied().unwrap_or_default()
                + tool.get(k).copied().unwrap_or_default();
            wall.saturating_sub(inside).as_secs_f64() * 1e6
        })
        .collect()
}

/// `count` per second over `seconds`; 0 when no time passed.
pub fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

/// The `q` quantile of sorted `values` (nearest rank); 0 for none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_loop_runs_its_rounds_through_the_real_tool() {
        let report = LoopBench {
            agents: 8,
            model_latency: Duration::from_millis(2),
            rounds: 12,
        }
        .run()
        .await
        .unwrap();
        // 12 rounds: more than the repetition window, so a script whose
        // reads came back within it would be stopped early.
        assert!(FILES as usize > Limits::default().repetition_window);
        assert_eq!(report.finished, 8);
        assert_eq!(report.rounds, 96);
        assert!(report.rounds_per_sec > 0.0 && report.cpu_per_round_us > 0.0);
        assert!(report.overhead_p99_us >= report.overhead_p50_us);
        assert!(report.peak_rss_mib > 0.0);
        assert!(report.bare_cpu_per_round_us > 0.0 && report.cpu_ratio > 0.0);
    }
}

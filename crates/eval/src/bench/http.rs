//! `hermes bench http`: N tasks, C at a time, each a real agent loop
//! talking to a scripted OpenAI-compatible server through the real HTTP
//! client ([`OpenAiClient`]) and reading files with the real `read_file`.
//! Without a base URL the bench starts the server itself, on a thread of its
//! own in this process, and takes that thread's CPU out of the client's.
//! The same server (`hermes bench serve`) is what a peer framework is
//! pointed at, so both are measured against the same answers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::task::JoinSet;

use super::loops::{per_second, percentile};
use super::process::{self, RssSampler};
use super::server::{Script, ServerThread};
use super::workspace::BenchWorkspace;
use hermes_core::agent::{Agent, CancellationToken, StopStatus};
use hermes_core::limits::Limits;
use hermes_core::llm::{ChatMessage, ChatRequest, Llm, OpenAiClient, OpenAiConfig};
use hermes_core::tools::builtin::ReadFile;
use hermes_core::tools::Toolbox;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpBench {
    /// Tasks in all.
    pub tasks: usize,
    /// Tasks running at once.
    pub concurrency: usize,
    /// Rounds per task (the last one finishes). A server started with
    /// `hermes bench serve` must script the same number.
    pub rounds: u32,
    /// The scripted server to use; `None` starts one in this process.
    pub base_url: Option<String>,
}

/// What an HTTP benchmark measured (`hermes bench http --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpReport {
    /// Tasks run.
    pub tasks: usize,
    /// Tasks running at once.
    pub concurrency: usize,
    /// The script's rounds per task.
    pub rounds_per_task: u32,
    /// The server's base URL.
    pub base_url: String,
    /// Whether the server ran in this process (its CPU is then measured
    /// apart, and its memory is part of `peak_rss_mib`).
    pub server_in_process: bool,
    /// Tasks that ended with `finish`.
    pub finished: usize,
    /// Rounds run, all tasks together.
    pub rounds: u64,
    /// Wall time of the whole run, in seconds.
    pub seconds: f64,
    /// Rounds per second, all tasks together.
    pub rounds_per_sec: f64,
    /// The client's CPU time (user + system) per round, in microseconds:
    /// the process's, less the in-process server thread's.
    pub cpu_per_round_us: f64,
    /// The in-process server thread's CPU time per round, in microseconds
    /// (`None` for a server elsewhere).
    pub server_cpu_per_round_us: Option<f64>,
    /// Median wall time of a round (model request over HTTP, tool call and
    /// the loop around them), in milliseconds.
    pub latency_p50_ms: f64,
    /// 99th percentile of the same.
    pub latency_p99_ms: f64,
    /// The most resident memory seen while the tasks ran (sampled every
    /// 20 ms), in MiB.
    pub peak_rss_mib: f64,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum HttpBenchError {
    /// The temporary workspace could not be made.
    #[error("cannot set up the benchmark's workspace: {0}")]
    Workspace(std::io::Error),
    /// The in-process server could not start.
    #[error("cannot start the scripted server: {0}")]
    Server(std::io::Error),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The server did not answer the first request.
    #[error("the scripted server does not answer: {0}")]
    Unreachable(String),
}

impl HttpBench {
    /// Starts the server if needed, checks that it answers, runs the tasks
    /// and measures them.
    pub async fn run(&self) -> Result<HttpReport, HttpBenchError> {
        let files = BenchWorkspace::create().map_err(HttpBenchError::Workspace)?;
        let server = match &self.base_url {
            Some(_) => None,
            None => Some(
                ServerThread::start(Script {
                    rounds: self.rounds,
                    latency: Duration::ZERO,
                })
                .map_err(HttpBenchError::Server)?,
            ),
        };
        let base_url = server.as_ref().map_or_else(
            || self.base_url.clone().unwrap_or_default(),
            |server| server.base_url.clone(),
        );
        let mut config = OpenAiConfig::new(base_url.clone(), "bench");
        config.origin_hint = "The URL is set by --base-url.".into();
        let llm: Arc<dyn Llm> =
            Arc::new(OpenAiClient::new(config).map_err(|e| HttpBenchError::Client(e.to_string()))?);
        let limits = Limits {
            max_rounds: self.rounds + 1,
            timeout: Duration::from_secs(3600),
            ..Limits::default()
        };
        probe(llm.as_ref(), &limits).await?;
        let mut toolbox = Toolbox::new();
        toolbox.register(ReadFile::new(files.workspace.clone()));
        let agent = Agent::new(llm, Arc::new(toolbox)).with_limits(limits);

        let sampler = RssSampler::start();
        let server_cpu_before = cpu_of(&server).await;
        let cpu_before = process::cpu_time();
        let started = Instant::now();
        // At most `concurrency` tasks exist at once: the next one starts
        // when one ends, so the memory measured is the loops', not that of
        // tasks waiting their turn (the peers' harness does the same).
        let mut running = JoinSet::new();
        let mut finished = 0;
        let mut rounds = 0u64;
        let mut latencies = Vec::with_capacity(self.tasks * self.rounds as usize);
        let mut count = |task: Result<TaskRun, tokio::task::JoinError>| {
            if let Ok(task) = task {
                finished += usize::from(task.status == StopStatus::Finished);
                rounds += u64::from(task.rounds);
                latencies.extend(task.latencies_ms);
            }
        };
        for _ in 0..self.tasks {
            if running.len() >= self.concurrency.max(1) {
                if let Some(task) = running.join_next().await {
                    count(task);
                }
            }
            running.spawn(run_task(agent.clone()));
        }
        while let Some(task) = running.join_next().await {
            count(task);
        }
        let seconds = started.elapsed().as_secs_f64();
        let cpu = process::cpu_time().saturating_sub(cpu_before);
        let server_cpu = cpu_of(&server).await.saturating_sub(server_cpu_before);
        let peak = sampler.stop().await.rss;
        drop(server);
        latencies.sort_by(f64::total_cmp);
        let per_round = |cpu: Duration| {
            if rounds == 0 {
                0.0
            } else {
                cpu.as_secs_f64() * 1e6 / rounds as f64
            }
        };
        Ok(HttpReport {
            tasks: self.tasks,
            concurrency: self.concurrency,
            rounds_per_task: self.rounds,
            base_url,
            server_in_process: self.base_url.is_none(),
            finished,
            rounds,
            seconds,
            rounds_per_sec: per_second(rounds, seconds),
            cpu_per_round_us: per_round(cpu.saturating_sub(server_cpu)),
            server_cpu_per_round_us: self.base_url.is_none().then(|| per_round(server_cpu)),
            latency_p50_ms: percentile(&latencies, 0.50),
            latency_p99_ms: percentile(&latencies, 0.99),
            peak_rss_mib: peak as f64 / f64::from(1 << 20),
        })
    }
}

/// CPU time of the in-process server's thread (zero for none).
async fn cpu_of(server: &Option<ServerThread>) -> Duration {
    match server {
        Some(server) => server.cpu_time().await,
        None => Duration::ZERO,
    }
}

/// One request before the run, so that a server that is not there is one
/// clear error rather than one per task.
async fn probe(llm: &dyn Llm, limits: &Limits) -> Result<(), HttpBenchError> {
    let request = ChatRequest {
        messages: vec![ChatMessage::user(format!(
            "Round 1 of {}. Reply with one JSON object.",
            limits.max_rounds
        ))],
        temperature: 0.0,
        max_tokens: 64,
        json: true,
        schema: None,
        seed: None,
    };
    llm.chat(&request)
        .await
        .map(|_| ())
        .map_err(|e| HttpBenchError::Unreachable(e.to_string()))
}

/// How one task went.
struct TaskRun {
    status: StopStatus,
    rounds: u32,
    /// The wall time of each of its rounds, in milliseconds.
    latencies_ms: Vec<f64>,
}

/// Runs one task, timing each round from the end of the one before.
async fn run_task(agent: Agent) -> TaskRun {
    let ends = Arc::new(Mutex::new(vec![Instant::now()]));
    let recorder = Arc::clone(&ends);
    let agent = agent.on_round(Arc::new(move |_| {
        if let Ok(mut ends) = recorder.lock() {
            ends.push(Instant::now());
        }
    }));
    let outcome = agent
        .run("Read the files in turn.", &CancellationToken::new())
        .await;
    let ends = ends.lock().map(|e| e.clone()).unwrap_or_default();
    TaskRun {
        status: outcome.status,
        rounds: outcome.rounds,
        latencies_ms: ends
            .windows(2)
            .map(|pair| pair[1].duration_since(pair[0]).as_secs_f64() * 1e3)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn every_task_runs_its_rounds_over_http() {
        let report = HttpBench {
            tasks: 6,
            concurrency: 3,
            rounds: 4,
            base_url: None,
        }
        .run()
        .await
        .unwrap();
        assert_eq!(report.finished, 6, "{report:?}");
        assert_eq!(report.rounds, 24);
        assert!(report.server_in_process && report.server_cpu_per_round_us.is_some());
        assert!(report.latency_p99_ms >= report.latency_p50_ms);
    }

    #[tokio::test]
    async fn a_server_that_is_not_there_is_one_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let error = HttpBench {
            tasks: 3,
            concurrency: 3,
            rounds: 4,
            base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        }
        .run()
        .await
        .unwrap_err();
        assert!(matches!(error, HttpBenchError::Unreachable(_)), "{error}");
        assert!(error.to_string().contains("--base-url"), "{error}");
    }
}

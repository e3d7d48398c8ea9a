//! What every Rust peer of `hermes bench http` shares, so that each peer's
//! own file holds only its framework's agent: the CLI (`--base-url URL
//! --tasks N --concurrency C --rounds R`, as the LangGraph peer's), the
//! workspace (`f0.txt` .. `f3.txt`, as Hermes' bench), a round clock, N
//! tasks C at a time, and the one-line JSON report with the LangGraph
//! peer's fields (rounds/s, client CPU per round from `getrusage`, round
//! latency p50/p99 by nearest rank, peak RSS from `ru_maxrss`).

pub mod plan;

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use tokio::task::JoinSet;

/// Files in the workspace.
pub const FILES: usize = 4;

/// The command line.
pub struct Args {
    /// The scripted server, with `/v1`.
    pub base_url: String,
    /// Tasks run in all.
    pub tasks: usize,
    /// Tasks running at once.
    pub concurrency: usize,
    /// Rounds per task (the server's `--rounds`).
    pub rounds: usize,
}

/// A flag's value as a whole number.
pub(crate) fn number(flag: &str, text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
}

/// A flag's value, taken when the flag is known.
pub(crate) type Value<'a> = &'a mut dyn FnMut() -> Result<String, String>;

/// Walks the command line's `--flag value` and `--flag=value` pairs,
/// handing each flag and its value's getter to `set` (false: a flag it
/// does not know); prints `usage` and exits 0 after `--help`.
pub(crate) fn walk_flags(
    usage: &str,
    mut set: impl FnMut(&str, Value<'_>) -> Result<bool, String>,
) -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            println!("{usage}");
            std::process::exit(0);
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs a value"))
        };
        if !set(&flag, &mut value)? {
            return Err(format!("unknown argument {arg:?}"));
        }
    }
    Ok(())
}

/// Reads the command line of `program`; exits 0 after `--help`.
pub fn parse_args(program: &str) -> Result<Args, String> {
    let mut base_url = None;
    let (mut tasks, mut concurrency, mut rounds) = (100usize, 50usize, 10usize);
    let usage =
        format!("usage: {program} --base-url URL [--tasks N] [--concurrency C] [--rounds R]");
    walk_flags(&usage, |flag, value| {
        match flag {
            "--base-url" => base_url = Some(value()?),
            "--tasks" => tasks = number(flag, &value()?)?,
            "--concurrency" => concurrency = number(flag, &value()?)?,
            "--rounds" => rounds = number(flag, &value()?)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let base_url = base_url.ok_or("--base-url is required (the scripted server, with /v1)")?;
    if tasks.min(concurrency).min(rounds) < 1 {
        return Err("--tasks, --concurrency and --rounds must be at least 1".into());
    }
    Ok(Args {
        base_url,
        tasks,
        concurrency,
        rounds,
    })
}

/// f0.txt .. f3.txt, the same files Hermes' bench reads, in a fresh
/// temporary folder named after `program`.
pub fn make_workspace(program: &str) -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let folder = std::env::temp_dir().join(format!("{program}-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&folder)?;
    for k in 0..FILES {
        std::fs::write(
            folder.join(format!("f{k}.txt")),
            format!("file {k}\n").repeat(20),
        )?;
    }
    folder.canonicalize()
}

/// The command line and a fresh workspace for `program`; exits 1 with
/// the reason when either cannot be had.
pub fn setup(program: &str) -> (Args, PathBuf) {
    let args = parse_args(program).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    });
    let root = make_workspace(program).unwrap_or_else(|e| {
        eprintln!("error: cannot make the workspace: {e}");
        std::process::exit(1);
    });
    (args, root)
}

/// Removes the workspace `root` and exits with `code`.
pub fn exit(root: &std::path::Path, code: i32) -> ! {
    let _ = std::fs::remove_dir_all(root);
    std::process::exit(code)
}

/// Nearest-rank quantile of sorted values, as Hermes' bench computes it.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// This process's user + system CPU time in seconds, and its peak RSS in KiB.
pub fn rusage() -> (f64, i64) {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        seconds(usage.ru_utime) + seconds(usage.ru_stime),
        usage.ru_maxrss as i64,
    )
}

struct Clock {
    last: Instant,
    turns: usize,
    latencies_ms: Vec<f64>,
}

/// A task's round clock: rounds are timed back to back, the first from the
/// task's start, each later one from where the previous one ended.
#[derive(Clone)]
pub struct RoundClock(Arc<Mutex<Clock>>);

impl RoundClock {
    /// A clock started now.
    pub fn start() -> Self {
        Self(Arc::new(Mutex::new(Clock {
            last: Instant::now(),
            turns: 0,
            latencies_ms: Vec::with_capacity(16),
        })))
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends a round now.
    pub fn lap(&self) {
        let mut clock = self.clock();
        let now = Instant::now();
        let lap = now.duration_since(clock.last).as_secs_f64() * 1e3;
        clock.latencies_ms.push(lap);
        clock.last = now;
    }

    /// Counts a model turn (for peers that count rounds apart from laps).
    pub fn turn(&self) {
        self.clock().turns += 1;
    }

    /// The turns counted and the round times, taken out of the clock.
    pub fn take(&self) -> (usize, Vec<f64>) {
        let mut clock = self.clock();
        (clock.turns, std::mem::take(&mut clock.latencies_ms))
    }
}

/// What one task did: its rounds, whether it ended with the answer, its
/// round times, and why it failed, if it did.
pub struct TaskResult {
    /// Rounds run.
    pub rounds: usize,
    /// Whether the run ended with the answer.
    pub finished: bool,
    /// Each round's time, in milliseconds.
    pub latencies_ms: Vec<f64>,
    /// Why the task failed, if it did.
    pub error: Option<String>,
}

/// The one-line JSON report (the LangGraph peer's fields, and a few more).
#[derive(Serialize)]
struct Report<'a> {
    framework: &'a str,
    tasks: usize,
    concurrency: usize,
    rounds_per_task: usize,
    base_url: &'a str,
    finished: usize,
    rounds: usize,
    seconds: f64,
    rounds_per_sec: f64,
    cpu_per_round_us: f64,
    latency_p50_ms: f64,
    latency_p99_ms: f64,
    /// Rounds timed (each task's, summed): equal to `rounds` when every
    /// round was seen.
    latency_samples: usize,
    peak_rss_mib: f64,
    failed: usize,
    version: &'a str,
    latency_note: &'a str,
}

/// Which peer is measured, for its report.
pub struct Peer<'a> {
    /// `framework` in the report (`rig`, `autoagents`).
    pub framework: &'a str,
    /// The framework's crates and versions.
    pub version: &'a str,
    /// How the peer times a round.
    pub latency_note: &'a str,
}

/// Runs `args.tasks` tasks made by `task`, `args.concurrency` at a time
/// (each made when a slot frees, as Hermes' bench does), and prints the
/// report; returns the exit code.
pub async fn measure<F, Fut>(args: &Args, peer: &Peer<'_>, task: F) -> i32
where
    F: Fn() -> Fut,
    Fut: Future<Output = TaskResult> + Send + 'static,
{
    let (cpu_before, _) = rusage();
    let started = Instant::now();
    // At most `concurrency` tasks exist at once: a task is made when one
    // ends, so no framework's memory holds the tasks still waiting.
    let joined = |outcome: Result<TaskResult, tokio::task::JoinError>| {
        outcome.unwrap_or_else(|e| TaskResult {
            rounds: 0,
            finished: false,
            latencies_ms: Vec::new(),
            error: Some(format!("task panicked: {e}")),
        })
    };
    let mut running = JoinSet::new();
    let mut results = Vec::with_capacity(args.tasks);
    for _ in 0..args.tasks {
        if running.len() >= args.concurrency.max(1) {
            if let Some(outcome) = running.join_next().await {
                results.push(joined(outcome));
            }
        }
        running.spawn(task());
    }
    while let Some(outcome) = running.join_next().await {
        results.push(joined(outcome));
    }
    let seconds = started.elapsed().as_secs_f64();
    let (cpu_after, maxrss_kib) = rusage();

    let rounds: usize = results.iter().map(|r| r.rounds).sum();
    let finished = results.iter().filter(|r| r.finished).count();
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    if let Some(first) = results.iter().find_map(|r| r.error.as_ref()) {
        eprintln!("warning: {failed} tasks failed, first: {first}");
    }
    let mut latencies: Vec<f64> = results.into_iter().flat_map(|r| r.latencies_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let cpu_us = (cpu_after - cpu_before) * 1e6;
    let per_round = |total: f64| {
        if rounds > 0 {
            total / rounds as f64
        } else {
            0.0
        }
    };
    let report = Report {
        framework: peer.framework,
        tasks: args.tasks,
        concurrency: args.concurrency,
        rounds_per_task: args.rounds,
        base_url: &args.base_url,
        finished,
        rounds,
        seconds,
        rounds_per_sec: if seconds > 0.0 {
            rounds as f64 / seconds
        } else {
            0.0
        },
        cpu_per_round_us: per_round(cpu_us),
        latency_p50_ms: percentile(&latencies, 0.50),
        latency_p99_ms: percentile(&latencies, 0.99),
        latency_samples: latencies.len(),
        peak_rss_mib: maxrss_kib as f64 / 1024.0,
        failed,
        version: peer.version,
        latency_note: peer.latency_note,
    };
    match serde_json::to_string(&report) {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(e) => {
            eprintln!("error: cannot write the report: {e}");
            1
        }
    }
}

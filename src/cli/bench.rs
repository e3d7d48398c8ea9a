//! `hermes bench`: what the runtime itself costs. `loop` measures many
//! loops at once against an in-process model with a fixed latency; `http`
//! the same loop through the real HTTP client against a scripted server,
//! which `serve` runs alone for peer frameworks (see `bench/compare.sh`);
//! `plan` one task split into many subtasks through the `Hermes` API; and
//! `context` how the prompt grows over a long task.

mod context;
mod http;
mod plan;

use std::time::Duration;

use clap::{Args, Subcommand};
use hermes::bench::{LoopBench, LoopReport};

use super::exit;
use super::output::print_result;

/// Options of `hermes bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// N agent loops at once through the real read_file tool: rounds/s, CPU
    /// per round, per-round overhead (wall minus model and tool time), RSS.
    Loop(LoopArgs),
    /// N tasks, C at a time, through the real HTTP client against a scripted
    /// OpenAI-compatible server: rounds/s, client CPU per round, round
    /// latency, RSS.
    Http(http::HttpArgs),
    /// Run the scripted OpenAI-compatible server alone and print its base
    /// URL, for `bench http --base-url` and peer frameworks.
    Serve(http::ServeArgs),
    /// One task planned into N subtasks over R roles through the Hermes API:
    /// dispatch overhead per subtask, rounds/s, CPU per round, RSS.
    Plan(plan::PlanArgs),
    /// Prompt characters per round over one long task, with the loop's
    /// window and with the full history replayed.
    Context(context::ContextArgs),
}

/// Options of `hermes bench loop`.
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// Loops running at once.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub agents: usize,
    /// Latency of each model call, in milliseconds (0 measures the runtime alone).
    #[arg(long, default_value_t = 100, value_name = "MS")]
    pub model_latency_ms: u64,
    /// Rounds per loop (the last one finishes).
    #[arg(long, default_value_t = 10, value_name = "R")]
    pub rounds: u32,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark; returns the exit code.
pub async fn execute(args: BenchArgs) -> i32 {
    match args.command {
        BenchCommand::Loop(args) => run_loops(args).await,
        BenchCommand::Http(args) => http::run_http(args).await,
        BenchCommand::Serve(args) => http::run_serve(args).await,
        BenchCommand::Plan(args) => plan::run_plan(args).await,
        BenchCommand::Context(args) => context::run_context(args).await,
    }
}

async fn run_loops(args: LoopArgs) -> i32 {
    if args.agents == 0 || args.rounds == 0 {
        eprintln!("error: --agents and --rounds must be at least 1");
        return exit::ERROR;
    }
    let bench = LoopBench {
        agents: args.agents,
        model_latency: Duration::from_millis(args.model_latency_ms),
        rounds: args.rounds,
    };
    print_report(bench.run().await, args.json, render)
}

/// Prints a bench's report (as JSON on the last stdout line with `json`),
/// or the workspace error; returns the exit code.
pub(crate) fn print_report<R: serde::Serialize>(
    report: std::io::Result<R>,
    json: bool,
    render: fn(&R) -> String,
) -> i32 {
    match report {
        Ok(report) => {
            print_result(json.then_some(&report), &render(&report));
            exit::OK
        }
        Err(e) => {
            eprintln!("error: cannot set up the benchmark's workspace: {e}");
            exit::ERROR
        }
    }
}

fn render(r: &LoopReport) -> String {
    format!(
        "{} loops x {} rounds against a {} ms model: {} finished in {:.2}s\n\
         rounds/s          {:.0}\n\
         CPU per round     {:.1} µs ({:.1} µs for the same calls with no loop: {:.2}x)\n\
         overhead p50/p99  {:.1} / {:.1} µs per round (wall minus model and tool time)\n\
         peak RSS          {:.1} MiB ({:.1} KiB per agent)",
        r.agents,
        if r.agents == 0 {
            0
        } else {
            r.rounds / r.agents as u64
        },
        r.model_latency_ms,
        r.finished,
        r.seconds,
        r.rounds_per_sec,
        r.cpu_per_round_us,
        r.bare_cpu_per_round_us,
        r.cpu_ratio,
        r.overhead_p50_us,
        r.overhead_p99_us,
        r.peak_rss_mib,
        r.rss_per_agent_kib,
    )
}

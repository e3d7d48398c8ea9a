//! `hermes run TASK`: one agent, one task.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use hermes::agent::{Agent, Outcome, StopStatus};
use hermes::journal::JournalEntry;
use hermes::limits::Limits;
use hermes::tools::Workspace;
use tracing::Instrument;

use super::model::ModelArgs;
use super::tools::ToolArgs;
use super::trace::TraceArgs;

/// Options of `hermes run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, in plain words.
    pub task: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Directory the file tools are confined to.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    /// Most rounds before the run is stopped.
    #[arg(long, default_value_t = Limits::default().max_rounds, value_name = "N")]
    pub max_rounds: u32,
    /// Wall-clock limit for the whole run, in seconds.
    #[arg(long, default_value_t = Limits::default().timeout.as_secs(), value_name = "SECS")]
    pub timeout: u64,
    /// Sampling temperature.
    #[arg(long, default_value_t = Limits::default().temperature)]
    pub temperature: f32,
    /// Append one JSON line per round to this file.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Print the outcome as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Runs the task and returns the process exit code.
pub async fn execute(args: RunArgs, matches: Option<&ArgMatches>) -> i32 {
    let outcome = match prepare(&args, matches).await {
        Ok(agent) => {
            // The root of this run's trace; its id is what to search for in Jaeger.
            let root = tracing::info_span!(parent: None, "task", hermes.task = %hermes::text::clip(&args.task, 200));
            if let Some(id) = hermes::telemetry::trace_id(&root) {
                eprintln!("trace id: {id}");
            }
            tokio::select! {
                outcome = agent.run(&args.task).instrument(root) => outcome,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("interrupted");
                    return 130;
                }
            }
        }
        Err(error) => Outcome::failed(&args.task, error),
    };
    report(&outcome, args.json);
    outcome.status.exit_code()
}

async fn prepare(args: &RunArgs, matches: Option<&ArgMatches>) -> Result<Agent, String> {
    let workspace =
        Workspace::new(&args.workspace).map_err(|e| format!("cannot use the workspace: {e}"))?;
    let llm = args.model.llm(matches).map_err(|e| e.to_string())?;
    let toolbox = args
        .tools
        .toolbox(&workspace)
        .await
        .map_err(|e| e.to_string())?;
    let limits = Limits {
        max_rounds: args.max_rounds.max(1),
        timeout: Duration::from_secs(args.timeout.max(1)),
        temperature: args.temperature,
        ..Limits::default()
    };
    let mut agent = Agent::new(llm, Arc::new(toolbox))
        .with_limits(limits)
        .on_round(Arc::new(print_round));
    if let Some(path) = &args.journal {
        agent = agent.with_journal_file(path);
    }
    Ok(agent)
}

/// One progress line per round on stderr: round, action, status, time.
fn print_round(entry: &JournalEntry) {
    let secs = (entry.llm_ms + entry.tool_ms) as f64 / 1000.0;
    eprintln!(
        "[round {:>2}] {:<14} {:<5} {secs:.1}s",
        entry.round, entry.action, entry.status
    );
}

fn report(outcome: &Outcome, json: bool) {
    let mut out = std::io::stdout().lock();
    if let Some(error) = &outcome.error {
        eprintln!("error: {error}");
    } else if outcome.status != StopStatus::Finished {
        eprintln!(
            "stopped: {} guard after {} rounds",
            outcome.status.as_str(),
            outcome.rounds
        );
    }
    let written = if json {
        serde_json::to_string(outcome)
            .map_err(std::io::Error::from)
            .and_then(|line| writeln!(out, "{line}"))
    } else {
        match &outcome.result {
            Some(result) => writeln!(out, "{result}"),
            None => writeln!(out, "{}", outcome.progress),
        }
    };
    // A closed stdout (e.g. piped into `head`) is not worth a panic.
    let _ = written.and_then(|_| out.flush());
}

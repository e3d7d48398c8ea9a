//! `hermes run TASK`: one agent, one task.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{ArgMatches, Args};
use hermes::agent::{Agent, Outcome, StopStatus};
use hermes::journal::JournalEntry;
use hermes::tools::Workspace;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::approve_flags::ApproveArgs;
use super::budget_flags::BudgetArgs;
use super::exit;
use super::faults::FaultArgs;
use super::limits::LimitArgs;
use super::memory_flags::MemoryFlags;
use super::model::ModelArgs;
use super::output::print_result;
use super::tools::ToolArgs;
use super::trace::TraceArgs;
use hermes::llm::budget::Budget;

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
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub memory: MemoryFlags,
    /// Append one JSON line per round to this file.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Print the outcome as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub faults: FaultArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub approvals: ApproveArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Runs the task and returns the process exit code. Ctrl-C cancels the
/// loop, which still reports its progress (exit 130).
pub async fn execute(args: RunArgs, matches: Option<&ArgMatches>, exporting: bool) -> i32 {
    let outcome = match prepare(&args, matches).await {
        Ok(agent) => {
            // The root of this run's trace; its id is what to search for in Jaeger.
            let root = tracing::info_span!(parent: None, "task", hermes.task = %hermes::text::clip(&args.task, 200));
            if exporting {
                if let Some(id) = hermes::telemetry::trace_id(&root) {
                    eprintln!("trace id: {id}");
                }
            }
            let cancel = CancellationToken::new();
            let on_interrupt = cancel.clone();
            let interrupt = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("interrupted");
                    on_interrupt.cancel();
                }
            });
            let outcome = agent.run(&args.task, &cancel).instrument(root).await;
            interrupt.abort();
            outcome
        }
        Err(error) => Outcome::failed(&args.task, error),
    };
    report(&outcome, args.json);
    exit::for_run(outcome.status)
}

async fn prepare(args: &RunArgs, matches: Option<&ArgMatches>) -> Result<Agent, String> {
    let workspace =
        Workspace::new(&args.workspace).map_err(|e| format!("cannot use the workspace: {e}"))?;
    let llm = args.model.llm(matches).await.map_err(|e| e.to_string())?;
    let toolbox = args
        .tools
        .toolbox(&workspace)
        .await
        .map_err(|e| e.to_string())?;
    let limits = args.limits.limits();
    let faults = args.faults.faults();
    let llm = faults.wrap_llm(llm, args.model.request_timeout);
    let toolbox = faults.wrap_toolbox(&toolbox);
    let mut agent = Agent::new(llm, Arc::new(toolbox))
        .with_limits(limits)
        .with_fault_log(faults)
        .with_approvals(args.approvals.on_terminal()?)
        .on_round(Arc::new(print_round));
    if let Some(path) = &args.journal {
        agent = agent.with_journal_file(path);
    }
    let caps = args.budget.caps();
    if caps.is_set() {
        agent = agent.with_budget(Budget::new(caps));
    }
    let memory = args
        .memory
        .open(workspace.root(), &args.model)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(memory) = memory {
        agent = agent.with_memory(memory);
    }
    Ok(agent)
}

/// One progress line per round on stderr: round, action, status, time.
fn print_round(entry: &JournalEntry) {
    let secs = (entry.llm_ms + entry.tool_ms) as f64 / 1000.0;
    eprintln!(
        "[round {:>2}] {:<14} {:<5} {secs:.1}s",
        entry.round,
        entry.action,
        entry.status.as_str()
    );
}

fn report(outcome: &Outcome, json: bool) {
    if let Some(memory) = &outcome.memory {
        if !memory.recalled.is_empty() {
            eprintln!(
                "[memory] recalled {} note(s) of earlier tasks: {}",
                memory.recalled.len(),
                memory.recalled.join(", ")
            );
        }
        if let Some(id) = &memory.stored {
            eprintln!("[memory] stored this run as {id}");
        }
    }
    if let Some(error) = &outcome.error {
        eprintln!("error: {error}");
        // Nothing ran: the report would only say the same thing again.
        if outcome.rounds == 0 && !json {
            return;
        }
    } else if outcome.status == StopStatus::Incomplete {
        eprintln!(
            "incomplete: the model finished after {} rounds, but the goal's {} missing: {}",
            outcome.rounds,
            if outcome.missing.len() == 1 {
                "file is"
            } else {
                "files are"
            },
            outcome.missing.join(", ")
        );
    } else if !matches!(outcome.status, StopStatus::Finished | StopStatus::Cancelled) {
        eprintln!(
            "stopped: {} guard after {} rounds",
            outcome.status.as_str(),
            outcome.rounds
        );
    }
    let text = outcome.result.as_deref().unwrap_or(&outcome.progress);
    print_result(json.then_some(outcome), text);
}

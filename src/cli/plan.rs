//! `hermes plan TASK`: a planner splits the task, executors run the pieces.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use hermes::actors::{
    Hermes, PlanEvent, SubtaskStatus, TaskReport, TaskRequest, TaskStatus, DEFAULT_CONCURRENCY,
    DEFAULT_MAX_REPLANS,
};
use hermes::cluster::Cluster;
use hermes::limits::Limits;

use super::approve_flags::ApproveArgs;
use super::budget_flags::BudgetArgs;
use super::cluster_flags::ConnectArgs;
use super::exit;
use super::faults::FaultArgs;
use super::limits::SteerArgs;
use super::memory_flags::MemoryFlags;
use super::model::ModelArgs;
use super::output::{parse_seconds, print_result};
use super::team;
use super::tools::ToolArgs;
use super::trace::TraceArgs;

/// Options of `hermes plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The task, in plain words.
    pub task: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Directory the file tools are confined to.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    /// Directory of executor role files (*.toml).
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    /// Most subtasks running at once.
    #[arg(long, default_value_t = DEFAULT_CONCURRENCY, value_name = "N")]
    pub concurrency: usize,
    /// Most replans after failed subtasks.
    #[arg(long, default_value_t = DEFAULT_MAX_REPLANS, value_name = "N")]
    pub max_replans: u32,
    /// Task-wide deadline in seconds (fractions allowed); running executors
    /// are cancelled then.
    #[arg(long, default_value = "900", value_parser = parse_seconds, value_name = "SECS")]
    pub timeout: Duration,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub faults: FaultArgs,
    #[command(flatten)]
    pub memory: MemoryFlags,
    #[command(flatten)]
    pub cluster: ConnectArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub steers: SteerArgs,
    #[command(flatten)]
    pub approvals: ApproveArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Runs the task and returns the process exit code.
pub async fn execute(args: PlanArgs, matches: Option<&ArgMatches>, exporting: bool) -> i32 {
    let hermes = match start(&args, matches, exporting).await {
        Ok(hermes) => hermes,
        Err(error) => {
            eprintln!("error: {error}");
            return exit::ERROR;
        }
    };
    let request = TaskRequest::new(&args.task)
        .with_timeout(args.timeout)
        .with_budget(args.budget.caps());
    let report = tokio::select! {
        report = hermes.submit(request) => report,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            hermes.shutdown().await;
            return exit::INTERRUPTED;
        }
    };
    hermes.shutdown().await;
    match report {
        Ok(report) => {
            print_report(&report, args.json);
            exit::for_task(report.status)
        }
        Err(error) => {
            eprintln!("error: {error}");
            exit::ERROR
        }
    }
}

async fn start(
    args: &PlanArgs,
    matches: Option<&ArgMatches>,
    exporting: bool,
) -> Result<Hermes, String> {
    let faults = args.faults.faults();
    let team = team::assemble(
        &args.model,
        matches,
        &args.workspace,
        &args.tools,
        &args.roles,
        &faults,
    )
    .await?;
    let memory = args
        .memory
        .open(team.workspace.root(), &args.model)
        .await
        .map_err(|e| e.to_string())?;
    let mut builder = Hermes::builder().approvals(args.approvals.on_terminal()?);
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    if let Some(config) = args.cluster.config()? {
        let cluster = Cluster::connect(config)
            .await
            .map_err(|e| format!("the planner did not start: {e}"))?;
        builder = builder.placement(Arc::new(cluster));
    }
    builder
        .llm(Arc::clone(&team.llm))
        .model_factory(Arc::clone(&team.factory))
        .toolbox(team.toolbox)
        .roles(team.roles)
        .limits(Limits {
            steer: args.steers.steers(),
            ..Limits::default()
        })
        .concurrency(args.concurrency)
        .max_replans(args.max_replans)
        .faults(faults)
        .on_event(Arc::new(move |event: &PlanEvent| match event {
            // Without an exporter the trace id leads nowhere.
            PlanEvent::Submitted { .. } if !exporting => {}
            // Rounds are for the service's event stream; the terminal
            // shows subtasks.
            PlanEvent::Round { .. } => {}
            event => eprintln!("[plan] {event}"),
        }))
        .spawn()
        .await
        .map_err(|e| e.to_string())
}

/// Prints a task's report as `hermes plan` does (`hermes submit` too).
pub fn print_report(report: &TaskReport, json: bool) {
    if let Some(error) = &report.error {
        eprintln!("error: {error}");
    }
    let mut text = report.result.clone().unwrap_or_default();
    if report.status != TaskStatus::Finished {
        eprintln!("task {}: {} replan(s)", report.status, report.replans);
        for s in report
            .subtasks
            .iter()
            .filter(|s| s.status != SubtaskStatus::Finished)
        {
            text.push_str(&format!(
                "\n[{} {}] {}",
                s.id,
                s.status,
                s.progress.as_deref().unwrap_or("")
            ));
        }
    }
    print_result(json.then_some(report), text.trim());
}

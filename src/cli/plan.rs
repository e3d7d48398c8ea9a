//! `hermes plan TASK`: a planner splits the task, executors run the pieces.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use hermes::actors::{Hermes, ModelFactory, PlanEvent, RoleRegistry, TaskReport, TaskRequest};
use hermes::llm::Llm;
use hermes::tools::Workspace;

use super::model::ModelArgs;
use super::tools::{known_tools, ToolArgs};
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
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub concurrency: usize,
    /// Most replans after failed subtasks.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub max_replans: u32,
    /// Task-wide deadline in seconds; running executors are cancelled then.
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// Runs the task and returns the process exit code.
pub async fn execute(args: PlanArgs, matches: Option<&ArgMatches>) -> i32 {
    let hermes = match start(&args, matches).await {
        Ok(hermes) => hermes,
        Err(error) => {
            eprintln!("error: {error}");
            return 1;
        }
    };
    let request =
        TaskRequest::new(&args.task).with_timeout(Duration::from_secs(args.timeout.max(1)));
    let report = tokio::select! {
        report = hermes.submit(request) => report,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            return 130;
        }
    };
    hermes.shutdown().await;
    match report {
        Ok(report) => {
            print_report(&report, args.json);
            report.exit_code()
        }
        Err(error) => {
            eprintln!("error: {error}");
            1
        }
    }
}

async fn start(args: &PlanArgs, matches: Option<&ArgMatches>) -> Result<Hermes, String> {
    let workspace =
        Workspace::new(&args.workspace).map_err(|e| format!("cannot use the workspace: {e}"))?;
    let toolbox = args
        .tools
        .toolbox(&workspace)
        .await
        .map_err(|e| e.to_string())?;
    let roles =
        RoleRegistry::load_dir(&args.roles, &known_tools(&toolbox)).map_err(|e| e.to_string())?;
    for role in roles.all() {
        for tool in role
            .tools
            .iter()
            .flatten()
            .filter(|t| !toolbox.names().contains(&t.as_str()))
        {
            eprintln!("warning: role `{}` lists `{tool}`, which is not available here; it runs without it", role.name);
        }
    }
    let llm: Arc<dyn Llm> = args.model.llm(matches).map_err(|e| e.to_string())?;
    let model_args = args.model.clone();
    let default_llm = Arc::clone(&llm);
    // Roles that name a model get a client for it on the same server; the
    // in-process model serves every role.
    let local = args.model.is_local(matches);
    let factory: ModelFactory = Arc::new(move |name: &str| {
        if local {
            return Ok(Arc::clone(&default_llm));
        }
        let mut per_role = model_args.clone();
        per_role.model = name.to_string();
        per_role
            .client(None)
            .map(|c| Arc::new(c) as Arc<dyn Llm>)
            .map_err(|e| e.to_string())
    });
    Hermes::builder()
        .llm(llm)
        .model_factory(factory)
        .toolbox(toolbox)
        .roles(roles)
        .concurrency(args.concurrency)
        .max_replans(args.max_replans)
        .on_event(Arc::new(|event: &PlanEvent| eprintln!("[plan] {event}")))
        .spawn()
        .await
}

fn print_report(report: &TaskReport, json: bool) {
    if let Some(error) = &report.error {
        eprintln!("error: {error}");
    }
    let mut out = std::io::stdout().lock();
    let written = if json {
        serde_json::to_string(report)
            .map_err(std::io::Error::from)
            .and_then(|line| writeln!(out, "{line}"))
    } else {
        let mut text = report.result.clone().unwrap_or_default();
        if report.status != "finished" {
            eprintln!("task {}: {} replan(s)", report.status, report.replans);
            for s in report.subtasks.iter().filter(|s| s.status != "finished") {
                text.push_str(&format!(
                    "\n[{} {}] {}",
                    s.id,
                    s.status,
                    s.progress.as_deref().unwrap_or("")
                ));
            }
        }
        writeln!(out, "{}", text.trim())
    };
    let _ = written.and_then(|_| out.flush());
}

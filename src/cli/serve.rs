//! `hermes serve`: the planner as a long-running service. Tasks come in
//! over HTTP (`/v1/tasks`), each runs on its own planner with the model,
//! tools and roles these flags give, and every task and event is kept in
//! a durable store, so a restarted server resumes what a crash cut short.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use hermes::actors::{Hermes, ModelFactory, DEFAULT_CONCURRENCY, DEFAULT_MAX_REPLANS};
use hermes::cluster::Cluster;
use hermes::limits::Limits;
use hermes::llm::Llm;
use hermes::serve::{Answerer, ApprovalSettings, Launch, Launcher, Service, ServiceConfig, Store};
use hermes::tools::Workspace;

use super::approve_flags::ApproveArgs;
use super::budget_flags::BudgetArgs;
use super::cluster_flags::ConnectArgs;
use super::daemon::{listen_addr, wait_for_stop};
use super::exit;
use super::faults::FaultArgs;
use super::limits::SteerArgs;
use super::memory_flags::MemoryFlags;
use super::model::ModelArgs;
use super::output::parse_seconds;
use super::team;
use super::tools::{known_tools, ToolArgs};
use super::trace::TraceArgs;

/// Options of `hermes serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port, printed when ready).
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "HOST:PORT")]
    pub listen: String,
    /// Every /v1 request and /metrics must carry `Authorization: Bearer
    /// SECRET`.
    #[arg(
        long,
        env = "HERMES_TOKEN",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub token: Option<String>,
    /// Listen on a non-loopback address without --token.
    #[arg(long)]
    pub insecure: bool,
    /// A trace viewer (Jaeger, Phoenix) the web page links trace ids to.
    #[arg(long, value_name = "URL")]
    pub trace_ui: Option<String>,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// What runs the tasks, shared by `hermes serve` and `hermes mcp serve`:
/// the store, roles, workspace, queue, model, tools and limits.
#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// The durable record of tasks, events and roles (default:
    /// .hermes/serve.redb under --workspace).
    #[arg(long, value_name = "FILE")]
    pub store: Option<PathBuf>,
    /// Directory of executor role files (*.toml); roles registered through
    /// the API are added to these and stored.
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    /// Directory the file tools are confined to; a task's `workspace` is a
    /// folder under it.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    /// Tasks running at once; more wait as `queued`.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub concurrency: usize,
    /// Subtasks running at once inside one task (as `hermes plan
    /// --concurrency`).
    #[arg(long, default_value_t = DEFAULT_CONCURRENCY, value_name = "N")]
    pub subtask_concurrency: usize,
    /// Most replans after failed subtasks, for tasks that name none.
    #[arg(long, default_value_t = DEFAULT_MAX_REPLANS, value_name = "N")]
    pub max_replans: u32,
    /// Task-wide deadline in seconds, for tasks that name none.
    #[arg(long, default_value = "900", value_parser = parse_seconds, value_name = "SECS")]
    pub timeout: Duration,
    /// On SIGTERM or Ctrl-C, how long running tasks get to end before they
    /// are cancelled (and recorded as cancelled).
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub drain_secs: u64,
    /// Ended tasks older than this many days are removed from the store
    /// at start.
    #[arg(long, default_value_t = 30, value_name = "DAYS")]
    pub keep_days: u64,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub faults: FaultArgs,
    #[command(flatten)]
    pub memory: MemoryFlags,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub steers: SteerArgs,
    #[command(flatten)]
    pub cluster: ConnectArgs,
    #[command(flatten)]
    pub approvals: ApproveArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Serves until SIGTERM or Ctrl-C, then drains; 0 after a clean stop, 1
/// when it could not start.
pub async fn execute(args: ServeArgs, matches: Option<&ArgMatches>) -> i32 {
    match serve(args, matches).await {
        Ok(()) => exit::OK,
        Err(error) => {
            eprintln!("error: {error}");
            exit::ERROR
        }
    }
}

async fn serve(args: ServeArgs, matches: Option<&ArgMatches>) -> Result<(), String> {
    let listen = listen_addr(&args.listen, "127.0.0.1:7700").await?;
    if !listen.ip().is_loopback() && args.token.is_none() && !args.insecure {
        return Err(format!(
            "--listen {listen} is reachable from other machines and no --token (or HERMES_TOKEN) is set; give a token, or --insecure to serve without one"
        ));
    }
    let started = start_service(&args.service, matches, Answerer::Http).await?;
    let (service, store_path) = (started.service.clone(), started.store_path.clone());
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let router = hermes::serve::router(service.clone(), args.token.clone(), args.trace_ui.clone());
    eprintln!(
        "hermes serve: listening on http://{bound} (store {})",
        store_path.display()
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let server = tokio::spawn(hermes::serve::http::serve(
        listener,
        router,
        stop.clone().cancelled_owned(),
    ));
    wait_for_stop("hermes serve:", "; draining").await;
    started
        .stop(Duration::from_secs(args.service.drain_secs))
        .await;
    stop.cancel();
    match server.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("the HTTP server stopped: {e}")),
        Err(e) => Err(format!("the HTTP server stopped: {e}")),
    }
}

/// A started service, with what it holds open.
pub struct Started {
    /// The service.
    pub service: Service,
    /// Where its store is.
    pub store_path: PathBuf,
    /// The worker nodes its tasks share (`--connect`).
    cluster: Option<Cluster>,
}

impl Started {
    /// Drains the service (`drain` for running tasks, then cancels them)
    /// and closes the node sessions.
    pub async fn stop(self, drain: Duration) {
        self.service.shutdown(drain).await;
        if let Some(cluster) = self.cluster {
            cluster.shutdown().await;
        }
    }
}

/// Opens the store, assembles the model, tools and roles, connects to the
/// worker nodes, and starts the service (resuming what a crash cut short).
pub async fn start_service(
    args: &ServiceArgs,
    matches: Option<&ArgMatches>,
    answerer: Answerer,
) -> Result<Started, String> {
    let store_path = args.store.clone().unwrap_or_else(|| {
        let path = args.workspace.join(".hermes/serve.redb");
        path.strip_prefix(".")
            .map(Path::to_path_buf)
            .unwrap_or(path)
    });
    let store = Store::open(&store_path).map_err(|e| e.to_string())?;
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
    let known = known_tools(&team.toolbox)
        .into_iter()
        .map(str::to_string)
        .collect();
    let root = team.workspace.root().to_path_buf();
    let cluster = match args.cluster.config()? {
        Some(config) => Some(
            Cluster::connect(config)
                .await
                .map_err(|e| format!("the cluster did not start: {e}"))?,
        ),
        None => None,
    };
    let launcher = launcher(
        args,
        Arc::clone(&team.llm),
        Arc::clone(&team.factory),
        memory,
        faults,
        cluster.clone(),
    );
    let service = Service::start(
        store,
        ServiceConfig {
            launcher,
            roles: team.roles,
            known_tools: known,
            workspace: root,
            concurrency: args.concurrency,
            default_timeout: args.timeout,
            keep: Duration::from_secs(args.keep_days.saturating_mul(86_400)),
            budget: args.budget.caps(),
            approvals: ApprovalSettings {
                policy: args.approvals.policy()?,
                timeout: args.approvals.approval_timeout,
                answerer: if args.approvals.approve_all {
                    Answerer::ApproveAll
                } else {
                    answerer
                },
            },
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(Started {
        service,
        store_path,
        cluster,
    })
}

/// Builds a planner per task: the loaded model and the roles are shared;
/// the tools are opened on the task's workspace.
fn launcher(
    args: &ServiceArgs,
    llm: Arc<dyn Llm>,
    factory: ModelFactory,
    memory: Option<hermes::agent::LongTermMemory>,
    faults: hermes::faults::Faults,
    cluster: Option<Cluster>,
) -> Launcher {
    let tools = args.tools.clone();
    let steers = args.steers.steers();
    let subtask_concurrency = args.subtask_concurrency;
    let max_replans = args.max_replans;
    Arc::new(move |launch: Launch| {
        let tools = tools.clone();
        let (llm, factory) = (Arc::clone(&llm), Arc::clone(&factory));
        let memory = memory.clone();
        let faults = faults.clone();
        let steers = steers.clone();
        let cluster = cluster.clone();
        Box::pin(async move {
            let workspace = Workspace::new(&launch.workspace)
                .map_err(|e| format!("cannot use the workspace: {e}"))?;
            let toolbox = tools.toolbox(&workspace).await.map_err(|e| e.to_string())?;
            let mut builder = Hermes::builder()
                .llm(llm)
                .model_factory(factory)
                .toolbox(faults.wrap_toolbox(&toolbox))
                .roles(launch.roles)
                .limits(Limits {
                    steer: steers,
                    ..Limits::default()
                })
                .concurrency(subtask_concurrency)
                .max_replans(launch.max_replans.unwrap_or(max_replans))
                .faults(faults)
                .on_event(launch.events)
                .approvals(launch.approvals);
            if let Some(memory) = memory {
                builder = builder.memory(memory);
            }
            if let Some(cluster) = cluster {
                builder = builder.shared_placement(Arc::new(cluster));
            }
            builder.spawn().await.map_err(|e| e.to_string())
        })
    })
}

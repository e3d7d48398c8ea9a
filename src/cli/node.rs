//! `hermes node`: a worker node that runs subtasks for planners on other
//! machines, with its own model, tools and roles.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use hermes::cluster::{Node, NodeEvent, DEFAULT_CAPACITY};
use hermes::faults::Faults;

use super::cluster_flags::TlsArgs;
use super::daemon::{listen_addr, wait_for_stop};
use super::exit;
use super::limits::SteerArgs;
use super::model::ModelArgs;
use super::team;
use super::tools::ToolArgs;
use super::trace::TraceArgs;

/// Options of `hermes node`.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// Address to listen on for planners (e.g. 0.0.0.0:7401).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: String,
    /// The cluster's shared secret (the same on every node and planner).
    #[arg(
        long,
        env = "HERMES_COOKIE",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub cookie: String,
    /// The node's name in reports (default node-PORT).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Directory of role files (*.toml); the node serves each role.
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    /// Most subtasks running at once on this node; more wait for a slot.
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "N")]
    pub capacity: u32,
    /// On SIGTERM or Ctrl-C, how long running subtasks get to finish
    /// before they are cancelled.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub drain_secs: u64,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Directory the file tools are confined to.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Steer switches set on every run this node takes, over the planner's.
    #[command(flatten)]
    pub steers: SteerArgs,
}

/// Runs the node until SIGTERM or Ctrl-C, then drains it; exit code 0
/// after a clean drain, 1 when it could not start.
pub async fn execute(args: NodeArgs, matches: Option<&ArgMatches>) -> i32 {
    let node = match start(&args, matches).await {
        Ok(node) => node,
        Err(error) => {
            eprintln!("error: {error}");
            return exit::ERROR;
        }
    };
    wait_for_stop("[node]", "").await;
    node.drain(Duration::from_secs(args.drain_secs)).await;
    node.shutdown().await;
    exit::OK
}

async fn start(args: &NodeArgs, matches: Option<&ArgMatches>) -> Result<Node, String> {
    let listen = listen_addr(&args.listen, "127.0.0.1:7401").await?;
    let team = team::assemble(
        &args.model,
        matches,
        &args.workspace,
        &args.tools,
        &args.roles,
        &Faults::none(),
    )
    .await?;
    let mut builder = Node::builder()
        .listen(listen)
        .cookie(args.cookie.clone())
        .models(team.models())
        .toolbox(team.toolbox)
        .roles(team.roles)
        .capacity(args.capacity)
        .steers(args.steers.steers())
        .tls(args.tls.files())
        .on_event(Arc::new(|event: &NodeEvent| eprintln!("[node] {event}")));
    if let Some(name) = &args.name {
        builder = builder.name(name.clone());
    }
    builder.start().await.map_err(|e| e.to_string())
}

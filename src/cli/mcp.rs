//! `hermes mcp serve`: Hermes as an MCP server on stdio, with the tools
//! `submit_task`, `task_status` and `list_roles`. With `--server URL` it
//! hands tasks to a running `hermes serve`; otherwise it runs the service
//! itself, with the flags of `hermes serve` (store, roles, workspace,
//! model, tools), and drains it when the client goes away.

use std::time::Duration;

use clap::{ArgMatches, Args, Subcommand};
use hermes::serve::client::Client;
use hermes::serve::mcp::{serve_stdio, Desk};
use hermes::serve::Answerer;

use super::exit;
use super::serve::{start_service, ServiceArgs};

/// Options of `hermes mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// Subcommands of `hermes mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve MCP on stdin/stdout: tools submit_task, task_status,
    /// list_roles.
    Serve(Box<McpServeArgs>),
}

/// Options of `hermes mcp serve`.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// A running `hermes serve` to hand tasks to (as it printed its
    /// address); without it the service runs in this process, with the
    /// flags below.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The bearer token of --server (its --token).
    #[arg(
        long,
        env = "HERMES_TOKEN",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub token: Option<String>,
    #[command(flatten)]
    pub service: ServiceArgs,
}

/// Runs the MCP server until the client closes stdin; 0 then, 1 when it
/// could not start or the session failed.
pub async fn execute(args: McpArgs, matches: Option<&ArgMatches>) -> i32 {
    let McpCommand::Serve(args) = args.command;
    let matches = matches.and_then(|m| m.subcommand_matches("serve"));
    match serve(*args, matches).await {
        Ok(()) => exit::OK,
        Err(error) => {
            eprintln!("error: {error}");
            exit::ERROR
        }
    }
}

async fn serve(args: McpServeArgs, matches: Option<&ArgMatches>) -> Result<(), String> {
    if let Some(server) = &args.server {
        let client = Client::new(server, args.token.clone());
        // Fail at start, not at the first call, when the server is not
        // there or refuses the token (/healthz would not check it).
        client
            .get("/v1/roles")
            .await
            .map_err(|e| format!("--server {server}: {e}"))?;
        eprintln!("hermes mcp serve: on stdio, tasks go to {server}");
        return serve_stdio(Desk::Remote(client)).await;
    }
    // No HTTP server here: nobody can answer an approval question (calls
    // that need one are refused unless --approve-all).
    let started = start_service(&args.service, matches, Answerer::Nobody).await?;
    eprintln!(
        "hermes mcp serve: on stdio (store {})",
        started.store_path.display()
    );
    let served = serve_stdio(Desk::Local(started.service.clone())).await;
    started
        .stop(Duration::from_secs(args.service.drain_secs))
        .await;
    served
}

//! The `hermes` binary: parses the command line and runs a subcommand.
#![forbid(unsafe_code)]

mod cli;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => {
            let _ = e.print();
            // Usage errors are errors (exit 1); --help and --version are not.
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            std::process::exit(1);
        }
    };
    let code = match cli.command {
        Command::Run(args) => cli::run::execute(args, matches.subcommand_matches("run")).await,
        Command::Plan(args) => cli::plan::execute(args, matches.subcommand_matches("plan")).await,
        Command::Roles(args) => cli::roles::execute(args),
    };
    std::process::exit(code);
}

//! The `hermes` binary: parses the command line, sets up tracing, runs a
//! subcommand, and flushes spans on every exit path.
#![forbid(unsafe_code)]

mod cli;

/// mimalloc instead of the system allocator: see BENCHMARKS.md for what it
/// saves per round. The `system-alloc` feature keeps the system allocator,
/// for heap profilers that hook it (heaptrack).
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command};
use hermes::telemetry::{self, TelemetryConfig};

fn main() {
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => {
            let _ = e.print();
            // Usage errors are errors (exit 1); --help and --version are not.
            std::process::exit(if e.use_stderr() {
                cli::exit::ERROR
            } else {
                cli::exit::OK
            });
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            std::process::exit(cli::exit::ERROR);
        }
    };
    let trace = match &cli.command {
        Command::Run(args) => args.trace.clone(),
        Command::Plan(args) => args.trace.clone(),
        Command::Node(args) => args.trace.clone(),
        Command::Serve(args) => args.service.trace.clone(),
        Command::Mcp(args) => {
            let cli::mcp::McpCommand::Serve(serve) = &args.command;
            serve.service.trace.clone()
        }
        Command::Roles(_)
        | Command::Steers(_)
        | Command::Eval(_)
        | Command::Memory(_)
        | Command::Model(_)
        | Command::Bench(_)
        | Command::Submit(_)
        | Command::Tasks(_)
        | Command::Cancel(_) => Default::default(),
    };
    // Telemetry starts before the async runtime and stops after it, so the
    // blocking OTLP client is never created or dropped on a runtime thread.
    let config = TelemetryConfig::from_env(trace.otlp.as_deref(), trace.trace_content);
    let exporting = config.otlp_endpoint.is_some();
    let telemetry = match telemetry::init(&config) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => {
                cli::run::execute(args, matches.subcommand_matches("run"), exporting).await
            }
            Command::Plan(args) => {
                cli::plan::execute(args, matches.subcommand_matches("plan"), exporting).await
            }
            Command::Node(args) => {
                cli::node::execute(args, matches.subcommand_matches("node")).await
            }
            Command::Serve(args) => {
                cli::serve::execute(*args, matches.subcommand_matches("serve")).await
            }
            Command::Mcp(args) => cli::mcp::execute(args, matches.subcommand_matches("mcp")).await,
            Command::Submit(args) => cli::submit::submit(args).await,
            Command::Tasks(args) => cli::submit::tasks(args).await,
            Command::Cancel(args) => cli::submit::cancel(args).await,
            Command::Roles(args) => cli::roles::execute(args).await,
            Command::Steers(args) => cli::steers::execute(&args),
            Command::Memory(args) => cli::memory::execute(args).await,
            Command::Model(args) => cli::model_files::execute(args).await,
            Command::Bench(args) => cli::bench::execute(args).await,
            Command::Eval(args) => {
                cli::eval::execute(*args, matches.subcommand_matches("eval")).await
            }
        }
    });
    // A model request dropped by a timeout may still be decoding on a
    // blocking thread; exiting under it can crash the process after its
    // outcome was printed (see `wait_for_generations`).
    #[cfg(feature = "local-llm")]
    if !hermes::llm::local::wait_for_generations(std::time::Duration::from_secs(30)) {
        eprintln!("warning: an in-process model request was still running at exit");
    }
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    telemetry.shutdown();
    std::process::exit(code);
}

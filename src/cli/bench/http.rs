//! `hermes bench http` and `hermes bench serve`: the agent loop through the
//! real HTTP client against the scripted server, and that server alone.

use std::io::Write;

use clap::Args;
use hermes::bench::server::{base_url, serve, Script};
use hermes::bench::{HttpBench, HttpReport};

use crate::cli::exit;
use crate::cli::output::print_result;

/// Options of `hermes bench http`.
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// The scripted server (`hermes bench serve`), including `/v1`; without
    /// it the bench starts one in this process, on a thread of its own.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Tasks in all.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub tasks: usize,
    /// Tasks running at once.
    #[arg(long, default_value_t = 50, value_name = "C")]
    pub concurrency: usize,
    /// Rounds per task (the last one finishes); a server started apart must
    /// have been given the same --rounds.
    #[arg(long, default_value_t = 10, value_name = "R")]
    pub rounds: u32,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Options of `hermes bench serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0, value_name = "P")]
    pub port: u16,
    /// Rounds per task in the script (the last one answers).
    #[arg(long, default_value_t = 10, value_name = "R")]
    pub rounds: u32,
    /// Milliseconds each answer waits, as a model's latency would (0: none).
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub latency_ms: u64,
}

/// Runs `hermes bench http`; returns the exit code.
pub async fn run_http(args: HttpArgs) -> i32 {
    if args.tasks == 0 || args.concurrency == 0 || args.rounds == 0 {
        eprintln!("error: --tasks, --concurrency and --rounds must be at least 1");
        return exit::ERROR;
    }
    if let Some(url) = &args.base_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            eprintln!(
                "error: --base-url must be an http:// or https:// URL ending in /v1, got `{url}`"
            );
            return exit::ERROR;
        }
    }
    let bench = HttpBench {
        tasks: args.tasks,
        concurrency: args.concurrency,
        rounds: args.rounds,
        base_url: args.base_url,
    };
    match bench.run().await {
        Ok(report) => {
            if report.finished < report.tasks {
                eprintln!(
                    "warning: {} of {} tasks did not finish in {} rounds; a server started \
                     with `hermes bench serve` must have the same --rounds",
                    report.tasks - report.finished,
                    report.tasks,
                    report.rounds_per_task
                );
            }
            print_result(args.json.then_some(&report), &render(&report));
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

/// Runs `hermes bench serve` until it is stopped: prints the base URL on
/// stdout, then serves.
pub async fn run_serve(args: ServeArgs) -> i32 {
    if args.rounds == 0 {
        eprintln!("error: --rounds must be at least 1");
        return exit::ERROR;
    }
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("error: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return exit::ERROR;
        }
    };
    let url = match listener.local_addr() {
        Ok(addr) => base_url(addr),
        Err(e) => {
            eprintln!("error: cannot read the bound address: {e}");
            return exit::ERROR;
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{url}").and_then(|_| out.flush());
    drop(out);
    eprintln!(
        "serving a {}-round script on {url}; Ctrl-C stops it",
        args.rounds
    );
    let script = Script {
        rounds: args.rounds,
        latency: std::time::Duration::from_millis(args.latency_ms),
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match serve(listener, script, stop).await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: the server stopped: {e}");
            exit::ERROR
        }
    }
}

fn render(r: &HttpReport) -> String {
    let server = match r.server_cpu_per_round_us {
        Some(server) => format!(
            "\nserver CPU        {server:.1} µs per round (in this process, on its own thread; \
             not counted above, but its memory is in the RSS below)"
        ),
        None => String::new(),
    };
    format!(
        "{} tasks ({} at once) x {} rounds against {}: {} finished, {} rounds in {:.2}s\n\
         rounds/s          {:.0}\n\
         client CPU        {:.1} µs per round{server}\n\
         round p50/p99     {:.2} / {:.2} ms (model request over HTTP, tool and loop)\n\
         peak RSS          {:.1} MiB",
        r.tasks,
        r.concurrency,
        r.rounds_per_task,
        r.base_url,
        r.finished,
        r.rounds,
        r.seconds,
        r.rounds_per_sec,
        r.cpu_per_round_us,
        r.latency_p50_ms,
        r.latency_p99_ms,
        r.peak_rss_mib,
    )
}

//! `hermes bench plan`: one task planned into N subtasks over R roles, run
//! through the public `Hermes` API against an in-process scripted model.

use std::time::Duration;

use clap::Args;
use hermes::actors::plan::MAX_SUBTASKS;
use hermes::bench::plan::MAX_ROLES;
use hermes::bench::{PlanBench, PlanReport};

use crate::cli::exit;
use crate::cli::output::print_result;

/// Options of `hermes bench plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Tasks submitted at once to the one planner, each planned into
    /// --subtasks subtasks (tasks × subtasks executors in all).
    #[arg(long, default_value_t = 1, value_name = "T")]
    pub tasks: usize,
    /// Subtasks in the plan (all independent; all run at once).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub subtasks: usize,
    /// Executor roles the subtasks are spread over, in turn.
    #[arg(long, default_value_t = 4, value_name = "R")]
    pub roles: usize,
    /// Latency of each model call, in milliseconds (the in-process model;
    /// with --base-url the server's --latency-ms sets it).
    #[arg(long, default_value_t = 100, value_name = "MS")]
    pub model_latency_ms: u64,
    /// Talk to this scripted server (`hermes bench serve`, including /v1)
    /// over HTTP instead of the in-process model: it plans from the task's
    /// `[bench-plan N ROLES]` marker (the multi-agent row of
    /// bench/compare.sh, WORKLOAD=plan).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `hermes bench plan`; returns the exit code.
pub async fn run_plan(args: PlanArgs) -> i32 {
    if args.subtasks == 0 || args.subtasks > MAX_SUBTASKS {
        eprintln!("error: --subtasks must be between 1 and {MAX_SUBTASKS} (the planner's limit)");
        return exit::ERROR;
    }
    if args.tasks == 0 {
        eprintln!("error: --tasks must be at least 1");
        return exit::ERROR;
    }
    if args.roles == 0 || args.roles > MAX_ROLES {
        eprintln!("error: --roles must be between 1 and {MAX_ROLES}");
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
    let bench = PlanBench {
        tasks: args.tasks,
        subtasks: args.subtasks,
        roles: args.roles,
        model_latency: Duration::from_millis(args.model_latency_ms),
        base_url: args.base_url,
    };
    match bench.run().await {
        Ok(report) => {
            print_result(args.json.then_some(&report), &render(&report));
            if report.finished_subtasks == report.executors {
                exit::OK
            } else {
                eprintln!(
                    "error: only {} of {} subtasks finished (tasks {})",
                    report.finished_subtasks, report.executors, report.status
                );
                exit::ERROR
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

fn render(r: &PlanReport) -> String {
    let tasks = if r.tasks == 1 {
        "1 task".to_string()
    } else {
        format!("{} tasks at once, each", r.tasks)
    };
    format!(
        "{tasks} planned into {} subtasks over {} roles, {} ms model: {}, {} of {} subtasks finished, \
         {} rounds ({} model calls) in {:.2}s\n\
         rounds/s              {:.0}\n\
         CPU per round         {:.1} µs (planner and executors together)\n\
         model critical path   {:.1} ms (plan, longest subtask, answer)\n\
         overhead per subtask  {:.1} µs ((wall - model critical path) / subtasks)\n\
         dispatch p50/p99      {:.2} / {:.2} ms (plan answered -> subtask's first model call)\n\
         subtask p50/p99       {:.2} / {:.2} ms (plan answered -> subtask's last model call; p99/p50 {:.2})\n\
         collect               {:.2} ms (last executor call -> answer call)\n\
         peak RSS              {:.1} MiB ({:.1} KiB per executor)\n\
         live executors        {} at most at once",
        r.subtasks,
        r.roles,
        r.model_latency_ms,
        r.status,
        r.finished_subtasks,
        r.executors,
        r.rounds,
        r.model_calls,
        r.seconds,
        r.rounds_per_sec,
        r.cpu_per_round_us,
        r.model_path_ms,
        r.overhead_per_subtask_us,
        r.dispatch_p50_ms,
        r.dispatch_p99_ms,
        r.subtask_p50_ms,
        r.subtask_p99_ms,
        if r.subtask_p50_ms > 0.0 { r.subtask_p99_ms / r.subtask_p50_ms } else { 0.0 },
        r.collect_ms,
        r.peak_rss_mib,
        r.rss_per_executor_kib,
        r.peak_live_executors,
    )
}

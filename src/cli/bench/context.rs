//! `hermes bench context`: prompt size per round over one long task, with
//! the loop's window and with the full history replayed.

use clap::Args;
use hermes::bench::context::{EARLY_ROUND, LATE_ROUND};
use hermes::bench::{ContextBench, ContextReport};

use crate::cli::exit;

/// Options of `hermes bench context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Rounds of the task (at least 30: the ratio compares round 30 with round 8).
    #[arg(long, default_value_t = 40, value_name = "R")]
    pub rounds: u32,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `hermes bench context`; returns the exit code.
pub async fn run_context(args: ContextArgs) -> i32 {
    if args.rounds < LATE_ROUND {
        eprintln!(
            "error: --rounds must be at least {LATE_ROUND} (the ratio compares round {LATE_ROUND} with round {EARLY_ROUND})"
        );
        return exit::ERROR;
    }
    let report = ContextBench {
        rounds: args.rounds,
    }
    .run()
    .await;
    super::print_report(report, args.json, render)
}

fn render(r: &ContextReport) -> String {
    let mut points: Vec<u32> = vec![1, EARLY_ROUND, 10, 20, LATE_ROUND, r.rounds];
    points.dedup();
    let at = |chars: &[usize], round: u32| {
        chars
            .get(round as usize - 1)
            .map_or("-".to_string(), usize::to_string)
    };
    let mut out = format!(
        "prompt characters per round, one {}-round task (read_file, then finish)\n\
         {:<8} {:>12} {:>14}\n",
        r.rounds, "round", "windowed", "full history"
    );
    for round in points {
        out.push_str(&format!(
            "{round:<8} {:>12} {:>14}\n",
            at(&r.windowed.chars, round),
            at(&r.full_history.chars, round)
        ));
    }
    out.push_str(&format!(
        "round {LATE_ROUND} / round {EARLY_ROUND}: windowed {:.2}, full history {:.2}\n\
         growth per round between them: windowed {:.0} chars, full history {:.0} chars\n\
         window: the last {} rounds whole, older ones as one-line summaries",
        r.windowed.ratio_30_to_8,
        r.full_history.ratio_30_to_8,
        r.windowed.growth_per_round,
        r.full_history.growth_per_round,
        r.full_rounds,
    ));
    out
}

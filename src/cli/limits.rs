//! `--max-rounds`, `--timeout`, `--temperature` and the switches of the
//! loop's mechanisms: the limits `run` and `eval` share, and the one
//! `Limits` value they make.

use std::time::Duration;

use clap::Args;
use hermes::limits::{HistoryLayout, Limits};

use super::output::parse_seconds;

/// The loop's limits on the command line.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Most rounds before a run is stopped (a suite's task may set its own).
    #[arg(long, default_value_t = Limits::default().max_rounds, value_name = "N")]
    pub max_rounds: u32,
    /// Wall-clock limit for a run, in seconds (fractions allowed).
    #[arg(long, default_value = "300", value_parser = parse_seconds, value_name = "SECS")]
    pub timeout: Duration,
    /// Sampling temperature.
    #[arg(long, default_value_t = Limits::default().temperature)]
    pub temperature: f32,
    /// Answer a decision that repeats a recent call exactly: ask the model
    /// once more with a note on what that call returned, and refuse a
    /// second repeat without running it (off by default; see EVALS.md).
    #[arg(long)]
    pub repeat_guidance: bool,
    /// Ask the model to cite the round of any result it relies on, and warn
    /// it when the evidence check flags a thought (flags are journalled and
    /// counted either way; off by default, see EVALS.md).
    #[arg(long)]
    pub evidence_warnings: bool,
    /// Review the progress with one extra model call every K rounds and
    /// after the same tool failed twice in a row; 0 (the default, see
    /// EVALS.md) turns reflection off.
    #[arg(long, value_name = "K", default_value_t = Limits::default().reflect_every)]
    pub reflect_every: u32,
    /// How the prompt shows past rounds: `log` (one turn with a log of the
    /// calls made and their observations; the default) or `turns` (each
    /// decision replayed as an assistant turn; see EVALS.md, section 9).
    #[arg(long, value_name = "LAYOUT", default_value = "log")]
    pub history: HistoryLayout,
    /// Do not show the workspace's files in the first prompt (by default
    /// the loop lists them before round 1; see EVALS.md, section 12).
    #[arg(long)]
    pub no_workspace_listing: bool,
    /// End the run at the model's first `finish` even while a file the
    /// goal names is missing from the workspace (by default that `finish`
    /// is answered with a note, once; see EVALS.md, section 12).
    #[arg(long)]
    pub no_finish_check: bool,
    /// Carry out a run's first `write_file` even while the goal names input
    /// files and no call has read anything yet (by default that write is
    /// answered with a note, once; see EVALS.md, section 14).
    #[arg(long)]
    pub no_read_check: bool,
    /// Do not spell out the `write_file` reply that saves a value in the
    /// goal's missing file (by default, after `run_code` printed a value or
    /// a refused `finish` gave one, the next request offers it; see
    /// EVALS.md, section 14).
    #[arg(long)]
    pub no_write_offer: bool,
    /// Carry out a write of a labelled value (`code: X`) into the goal's
    /// file even where the goal asks for just the value (by default the
    /// first such write is answered with the write of the value alone,
    /// spelled out; see EVALS.md, section 15).
    #[arg(long)]
    pub no_label_check: bool,
    /// The read check is on by default now; kept so that earlier command
    /// lines still run.
    #[arg(long, hide = true)]
    pub read_check: bool,
    /// The write offer is on by default now; kept so that earlier command
    /// lines still run.
    #[arg(long, hide = true)]
    pub write_offer: bool,
}

impl LimitArgs {
    /// The default limits with these flags applied.
    pub fn limits(&self) -> Limits {
        Limits {
            max_rounds: self.max_rounds.max(1),
            timeout: self.timeout,
            temperature: self.temperature,
            repeat_guidance: self.repeat_guidance,
            evidence_warnings: self.evidence_warnings,
            reflect_every: self.reflect_every,
            history: self.history,
            workspace_listing: !self.no_workspace_listing,
            finish_check: !self.no_finish_check,
            read_check: !self.no_read_check,
            write_offer: !self.no_write_offer,
            label_check: !self.no_label_check,
            ..Limits::default()
        }
    }
}

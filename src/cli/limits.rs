//! `--max-rounds`, `--timeout`, `--temperature` and the switches of the
//! loop's mechanisms: the limits `run` and `eval` share, and the one
//! `Limits` value they make.

use std::time::Duration;

use clap::Args;
use hermes::agent::steer::Steers;
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
    #[command(flatten)]
    pub steers: SteerArgs,
}

/// The steers' switches on the command line (`run`, `eval`, `plan`,
/// `node`): `--steer NAME=on|off`, `--no-steer NAME`, and the older
/// one-steer flags as aliases.
#[derive(Debug, Clone, Default, Args)]
pub struct SteerArgs {
    /// Switch a steer of the loop on or off: `NAME=on|off` (repeatable;
    /// `hermes steers` lists them with their defaults).
    #[arg(long = "steer", value_name = "NAME=on|off", value_parser = parse_switch)]
    pub steer: Vec<(String, bool)>,
    /// Switch a steer off (repeatable; the same as `--steer NAME=off`).
    #[arg(long = "no-steer", value_name = "NAME", value_parser = parse_off)]
    pub no_steer: Vec<(String, bool)>,
    /// Repeat guidance is on by default now; kept so that earlier command
    /// lines still run.
    #[arg(long, hide = true)]
    pub repeat_guidance: bool,
    /// Alias of `--no-steer repeat_guidance`.
    #[arg(long)]
    pub no_repeat_guidance: bool,
    /// Alias of `--no-steer workspace_listing`.
    #[arg(long)]
    pub no_workspace_listing: bool,
    /// Alias of `--no-steer finish_check`.
    #[arg(long)]
    pub no_finish_check: bool,
    /// Alias of `--no-steer read_check`.
    #[arg(long)]
    pub no_read_check: bool,
    /// Alias of `--no-steer write_offer`.
    #[arg(long)]
    pub no_write_offer: bool,
    /// Alias of `--no-steer label_check`.
    #[arg(long)]
    pub no_label_check: bool,
    /// Alias of `--steer read_check=on` (off by default since session 34;
    /// kept so that earlier command lines still run).
    #[arg(long, hide = true)]
    pub read_check: bool,
    /// The write offer is on by default now; kept so that earlier command
    /// lines still run.
    #[arg(long, hide = true)]
    pub write_offer: bool,
}

/// `NAME=on|off` for `--steer`.
fn parse_switch(text: &str) -> Result<(String, bool), String> {
    Steers::parse_switch(text).map_err(|e| e.to_string())
}

/// `NAME` for `--no-steer`.
fn parse_off(text: &str) -> Result<(String, bool), String> {
    parse_switch(&format!("{text}=off"))
}

impl LimitArgs {
    /// The default limits with these flags applied.
    pub fn limits(&self) -> Limits {
        Limits {
            max_rounds: self.max_rounds.max(1),
            timeout: self.timeout,
            temperature: self.temperature,
            evidence_warnings: self.evidence_warnings,
            reflect_every: self.reflect_every,
            history: self.history,
            steer: self.steers.steers(),
            ..Limits::default()
        }
    }
}

impl SteerArgs {
    /// The steers' switches these flags set: the aliases first, then
    /// each `--steer`, then each `--no-steer`.
    pub fn steers(&self) -> Steers {
        let aliases = [
            ("repeat_guidance", self.repeat_guidance, true),
            ("repeat_guidance", self.no_repeat_guidance, false),
            ("workspace_listing", self.no_workspace_listing, false),
            ("finish_check", self.no_finish_check, false),
            ("read_check", self.read_check, true),
            ("read_check", self.no_read_check, false),
            ("write_offer", self.no_write_offer, false),
            ("label_check", self.no_label_check, false),
        ];
        let mut steers = Steers::defaults();
        for (name, given, on) in aliases {
            if given {
                steers.set(name, on);
            }
        }
        for (name, on) in self.steer.iter().chain(&self.no_steer) {
            steers.set(name, *on);
        }
        steers
    }
}

//! `--max-rounds`, `--timeout`, `--temperature` and the switches of the
//! loop's mechanisms: the limits `run` and `eval` share, and the one
//! `Limits` value they make.

use std::time::Duration;

use clap::Args;
use hermes::limits::Limits;

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
    /// Run a decision that repeats a recent call exactly as it is, instead
    /// of asking the model once more and refusing a second repeat.
    #[arg(long)]
    pub no_repeat_guidance: bool,
    /// Do not ask the model to cite rounds, nor warn it when the evidence
    /// check flags a thought (flags are still journalled and counted).
    #[arg(long)]
    pub no_evidence_warnings: bool,
}

impl LimitArgs {
    /// The default limits with these flags applied.
    pub fn limits(&self) -> Limits {
        Limits {
            max_rounds: self.max_rounds.max(1),
            timeout: self.timeout,
            temperature: self.temperature,
            repeat_guidance: !self.no_repeat_guidance,
            evidence_warnings: !self.no_evidence_warnings,
            ..Limits::default()
        }
    }
}

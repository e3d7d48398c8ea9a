//! `--faults SPEC --seed N`: fault injection on `run`, `plan` and `eval`.

use clap::Args;
use hermes::faults::{FaultSpec, Faults};

/// Which faults to inject, and the seed that makes them reproducible.
#[derive(Debug, Clone, Default, Args)]
pub struct FaultArgs {
    /// Inject faults: comma-separated kind=rate pairs, e.g.
    /// tool_error=0.2,llm_non_json=0.1. Kinds: llm_non_json, llm_truncated,
    /// llm_timeout, llm_http_500, tool_error, tool_timeout, tool_garbage,
    /// executor_panic.
    #[arg(long, value_name = "SPEC", value_parser = FaultSpec::parse)]
    pub faults: Option<FaultSpec>,
    /// Seed of the fault injection's random choices (same seed, same faults).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
}

impl FaultArgs {
    /// The spec (empty when no faults were asked for).
    pub fn spec(&self) -> FaultSpec {
        self.faults.clone().unwrap_or_default()
    }

    /// The injector for one run or task.
    pub fn faults(&self) -> Faults {
        Faults::new(self.spec(), self.seed)
    }
}

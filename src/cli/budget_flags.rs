//! Budget flags of `run`, `plan` and `serve`: caps on a whole task's
//! tokens and model calls.

use clap::Args;
use hermes::llm::budget::Caps;

/// Caps on a task's tokens and model calls.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct BudgetArgs {
    /// Most prompt + completion tokens for the whole task (planner,
    /// every executor, reflections, the final answer); at the cap the task
    /// stops with status `budget` (exit 3) and its progress report.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub token_budget: Option<u64>,
    /// Most model calls for the whole task, counted the same way.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub call_budget: Option<u64>,
}

impl BudgetArgs {
    /// The caps.
    pub fn caps(&self) -> Caps {
        Caps {
            tokens: self.token_budget,
            calls: self.call_budget,
        }
    }
}

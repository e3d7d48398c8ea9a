//! The repairs `run_code` makes to a model's program, as one ordered list.
//!
//! A small model's Python often fails for reasons that are not its logic:
//! a `\n` that JSON turned into a line break, the `}` of the JSON around
//! it, statements written on one line, a missing import, CSV text compared
//! with a number. Each [`Repair`] sees the program (and, after a run, what
//! it printed) and proposes the program to run instead; `run_code` runs
//! the list in [`ORDER`], and the observation's `repaired` field names
//! what was changed. Each repair is one file here and one line in
//! [`ORDER`].

mod braces;
mod compound;
mod imports;
mod newlines;
mod numbers;

use async_trait::async_trait;

pub use braces::BRACE_NOTE;
pub use compound::{has_inline_body, COMPOUND_NOTE};
pub use imports::{missing_import, undefined_name};
pub use newlines::{escape_newlines_in_strings, REPAIR_NOTE};
pub use numbers::{numbers_fix, numbers_said};

use crate::tools::sandbox::{SandboxConfig, SandboxOutput};

/// When a repair looks at the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before the first run: the program is changed, not run again.
    Before,
    /// After a run: the proposed program is run, and kept if [`Repair::keep`] says so.
    After,
}

/// What a repair sees.
pub struct RepairContext<'a> {
    /// The program as it stands (after earlier repairs).
    pub code: &'a str,
    /// `python` or `bash`.
    pub language: &'a str,
    /// The last run's output (`None` before the first run).
    pub output: Option<&'a SandboxOutput>,
    /// The sandbox the program runs in.
    pub sandbox: &'a SandboxConfig,
}

/// A program to run instead, and what was changed (for the note).
pub struct Proposal {
    /// The repaired program.
    pub code: String,
    /// What this application changed (joined into the note).
    pub detail: String,
}

/// One repair of a model's program.
#[async_trait]
pub trait Repair: Send + Sync {
    /// When it looks at the program.
    fn stage(&self) -> Stage {
        Stage::After
    }
    /// How many times it may apply to one call.
    fn times(&self) -> usize {
        1
    }
    /// Whether it reruns code only where the run cannot have changed the
    /// workspace (a read-only workspace), since the lines before the error
    /// did run.
    fn read_only_workspace(&self) -> bool {
        false
    }
    /// The program to run instead, when this repair applies.
    async fn propose(&self, cx: &RepairContext<'_>) -> Option<Proposal>;
    /// Whether the rerun's output is kept (otherwise the model sees its
    /// own program's error).
    fn keep(&self, _rerun: &SandboxOutput) -> bool {
        true
    }
    /// The `repaired` note for the details of each application.
    fn note(&self, details: &[String]) -> String;
}

/// Every repair, in the order they run.
pub static ORDER: &[&dyn Repair] = &[
    &newlines::Newlines,
    &braces::Braces,
    &compound::Compound,
    &imports::Imports,
    &numbers::Numbers,
];

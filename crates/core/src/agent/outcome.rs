//! What a run returns: how it ended, its answer or progress report, its
//! usage and its rounds.

use serde::{Deserialize, Serialize};

use super::guard::StopStatus;
use super::memory::MemoryUse;
use super::progress::progress_report;
use crate::journal::JournalEntry;
use crate::llm::Usage;

/// How a run ended, in the shape `hermes run --json` prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// `finished`, `max_rounds`, `repetition`, `timeout`, `cancelled` or `error`.
    pub status: StopStatus,
    /// The final answer, for a finished run.
    pub result: Option<String>,
    /// Rounds run.
    pub rounds: u32,
    /// What was done and where it stands (always present).
    pub progress: String,
    /// Tokens used by every model call of the run.
    pub usage: Usage,
    /// Rounds whose thought or answer the evidence check flagged (see
    /// `agent::evidence`).
    pub evidence_flags: u32,
    /// Reflection calls made during the run (see `agent::reflect`).
    pub reflections: u32,
    /// What the run recalled from long-term memory and stored in it;
    /// `null` when the run had no memory (see `agent::memory`).
    pub memory: Option<MemoryUse>,
    /// The error that ended the run, for status `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For status `incomplete`: the goal's files the run was to write and
    /// did not (workspace paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// For a finished subtask (a goal that is `part_of` a task): what its
    /// last program printed and its result left out, handed to the
    /// subtasks that build on it (see `agent::printed`). Never set for a
    /// plain run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printed: Option<String>,
    /// The OpenTelemetry trace id (32 hex characters), when traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Every round, for callers that want the details.
    #[serde(skip)]
    pub journal: Vec<JournalEntry>,
}

impl Outcome {
    /// The outcome of a run that could not start (bad workspace, bad config).
    pub fn failed(goal: &str, error: impl Into<String>) -> Self {
        let ending = Ending::error(error.into());
        ending.into_outcome(goal, Vec::new(), Usage::default(), Default::default())
    }

    /// The outcome of a run known only from its journal (its executor
    /// crashed, or never reported before its task ended): the rounds, the
    /// tokens they used and a progress report, with `status`.
    pub fn from_journal(
        goal: &str,
        status: StopStatus,
        journal: Vec<JournalEntry>,
        elapsed: std::time::Duration,
        error: Option<String>,
    ) -> Self {
        let usage = journal.iter().map(|e| e.tokens).sum();
        let ending = Ending {
            status,
            result: None,
            error,
            missing: Vec::new(),
        };
        ending.into_outcome(goal, journal, usage, elapsed)
    }

    /// Whether the model called `finish`.
    pub fn is_finished(&self) -> bool {
        self.status == StopStatus::Finished
    }
}

/// How the rounds ended, before the outcome is assembled.
#[derive(Debug)]
pub(crate) struct Ending {
    pub(crate) status: StopStatus,
    pub(crate) result: Option<String>,
    pub(crate) error: Option<String>,
    /// For status `incomplete`: the goal's files still missing.
    pub(crate) missing: Vec<String>,
}

impl Ending {
    /// Stopped by a guard, the clock or cancellation.
    pub(crate) fn stop(status: StopStatus) -> Self {
        Self {
            status,
            result: None,
            error: None,
            missing: Vec::new(),
        }
    }

    /// Stopped by an error the loop cannot go on from.
    pub(crate) fn error(message: String) -> Self {
        Self {
            status: StopStatus::Error,
            result: None,
            error: Some(message),
            missing: Vec::new(),
        }
    }

    /// The model called `finish` with `result`.
    pub(crate) fn finished(result: String) -> Self {
        Self {
            status: StopStatus::Finished,
            result: Some(result),
            error: None,
            missing: Vec::new(),
        }
    }

    /// A `finish` with `result` while the goal's files `missing` are not
    /// in the workspace.
    pub(crate) fn incomplete(result: String, missing: Vec<String>) -> Self {
        Self {
            status: StopStatus::Incomplete,
            result: Some(result),
            error: None,
            missing,
        }
    }

    /// The outcome, with the progress report built from the journal.
    pub(crate) fn into_outcome(
        self,
        goal: &str,
        journal: Vec<JournalEntry>,
        usage: Usage,
        elapsed: std::time::Duration,
    ) -> Outcome {
        let progress = progress_report(
            goal,
            self.status,
            &journal,
            elapsed,
            self.error.as_deref(),
            &self.missing,
        );
        Outcome {
            status: self.status,
            result: self.result,
            rounds: journal.len() as u32,
            progress,
            usage,
            evidence_flags: journal.iter().filter(|e| e.evidence.is_some()).count() as u32,
            reflections: 0,
            memory: None,
            error: self.error,
            missing: self.missing,
            printed: None,
            trace_id: None,
            journal,
        }
    }
}

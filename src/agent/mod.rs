//! The Hermes loop: perceive → decide → act → observe, until a guard stops it.
//!
//! Each phase is one file. [`Agent::run`] strings them together, records a
//! journal line per round, enforces the wall clock around every model and
//! tool call, and always returns an [`Outcome`] with a progress report,
//! however the run ended. The loop knows nothing of actors: a planner's
//! executor is a thin shell around this.

pub mod act;
pub mod decide;
pub mod guard;
pub mod observe;
pub mod perceive;
pub mod progress;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tokio::time::timeout_at;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use guard::StopStatus;

use crate::decision::Decision;
use crate::journal::{Journal, JournalEntry, UNPARSED};
use crate::limits::Limits;
use crate::llm::{Llm, Usage};
use crate::telemetry;
use crate::tools::{ToolResult, Toolbox};

/// Called after each round with its journal entry (e.g. to print progress).
pub type RoundCallback = Arc<dyn Fn(&JournalEntry) + Send + Sync>;

/// How a run ended, in the shape `hermes run --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// `finished`, `max_rounds`, `repetition`, `timeout` or `error`.
    pub status: StopStatus,
    /// The final answer, for a finished run.
    pub result: Option<String>,
    /// Rounds run.
    pub rounds: u32,
    /// What was done and where it stands (always present).
    pub progress: String,
    /// Tokens used by every model call of the run.
    pub usage: Usage,
    /// The error that ended the run, for status `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
        let error = error.into();
        let progress = progress::progress_report(
            goal,
            StopStatus::Error,
            &[],
            Default::default(),
            Some(&error),
        );
        Outcome {
            status: StopStatus::Error,
            result: None,
            rounds: 0,
            progress,
            usage: Usage::default(),
            error: Some(error),
            trace_id: None,
            journal: Vec::new(),
        }
    }
}

/// One agent: a model, a toolbox, limits and an identity.
#[derive(Clone)]
pub struct Agent {
    llm: Arc<dyn Llm>,
    toolbox: Arc<Toolbox>,
    limits: Limits,
    identity: String,
    journal_path: Option<PathBuf>,
    on_round: Option<RoundCallback>,
    role: String,
    subtask: Option<String>,
    trace_parent: HashMap<String, String>,
    /// The decision schema of this toolbox, built once.
    schema: Arc<serde_json::Value>,
}

impl Agent {
    /// An agent with default limits and identity.
    pub fn new(llm: Arc<dyn Llm>, toolbox: Arc<Toolbox>) -> Self {
        let schema = Arc::new(decide::decision_schema(&toolbox));
        Self {
            schema,
            llm,
            toolbox,
            limits: Limits::default(),
            identity: perceive::DEFAULT_IDENTITY.to_string(),
            journal_path: None,
            on_round: None,
            role: "agent".into(),
            subtask: None,
            trace_parent: HashMap::new(),
        }
    }

    /// Names the role and subtask this loop runs for (span attributes).
    pub fn for_subtask(mut self, role: impl Into<String>, subtask: impl Into<String>) -> Self {
        self.role = role.into();
        self.subtask = Some(subtask.into());
        self
    }

    /// Makes the loop's `executor.run` span a child of this W3C trace
    /// context (carried in a message from another actor or node).
    pub fn with_trace_parent(mut self, carrier: HashMap<String, String>) -> Self {
        self.trace_parent = carrier;
        self
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Replaces the opening of the system prompt (a role's `system_prompt`).
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// Appends every round to this JSONL file as it happens.
    pub fn with_journal_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.journal_path = Some(path.into());
        self
    }

    /// Calls `callback` after every round.
    pub fn on_round(mut self, callback: RoundCallback) -> Self {
        self.on_round = Some(callback);
        self
    }

    /// The limits this agent runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Runs the loop on `goal` until a guard stops it. Never panics on
    /// anything the model or a tool returns.
    pub async fn run(&self, goal: &str) -> Outcome {
        self.resume(goal, Vec::new()).await
    }

    /// Continues a run whose first rounds are `history` (read back from a
    /// journal after a crash): the next round is numbered after them, the
    /// prompt shows them, and the guards count them.
    pub async fn resume(&self, goal: &str, history: Vec<JournalEntry>) -> Outcome {
        let span = tracing::info_span!(
            "executor.run",
            hermes.role = %self.role,
            hermes.subtask_id = self.subtask.as_deref().unwrap_or(""),
            gen_ai.request.model = %self.llm.model(),
            hermes.resumed_rounds = history.len() as i64,
        );
        telemetry::set_parent(&span, &self.trace_parent);
        let mut outcome = self
            .resume_inner(goal, history)
            .instrument(span.clone())
            .await;
        span.set_attribute("hermes.guard", outcome.status.as_str());
        span.set_attribute("hermes.rounds", i64::from(outcome.rounds));
        if outcome.status != StopStatus::Finished {
            let why = outcome
                .error
                .clone()
                .unwrap_or_else(|| format!("stopped by the {} guard", outcome.status.as_str()));
            telemetry::set_error(&span, why);
        }
        outcome.trace_id = telemetry::trace_id(&span);
        outcome
    }

    async fn resume_inner(&self, goal: &str, history: Vec<JournalEntry>) -> Outcome {
        let started = Instant::now();
        let mut usage = Usage::default();
        let (mut journal, ending) = match &self.journal_path {
            None => (Journal::from_entries(history), None),
            Some(path) => match Journal::to_file(path) {
                Ok(journal) => (journal.with_entries(history), None),
                Err(e) => {
                    let error = format!("cannot open journal file {}: {e}", path.display());
                    (Journal::from_entries(history), Some(Ending::error(error)))
                }
            },
        };
        let ending = match ending {
            Some(ending) => ending,
            None => self.rounds(goal, &mut journal, &mut usage).await,
        };
        let entries = journal.entries();
        let progress = progress::progress_report(
            goal,
            ending.status,
            entries,
            started.elapsed(),
            ending.error.as_deref(),
        );
        Outcome {
            status: ending.status,
            result: ending.result,
            rounds: entries.len() as u32,
            progress,
            usage,
            error: ending.error,
            trace_id: None,
            journal: entries.to_vec(),
        }
    }

    /// The rounds themselves; returns how they ended.
    async fn rounds(&self, goal: &str, journal: &mut Journal, usage: &mut Usage) -> Ending {
        let deadline = tokio::time::Instant::now() + self.limits.timeout;
        let system = perceive::system_prompt(&self.identity, &self.toolbox, &self.limits);
        loop {
            let round = journal.entries().len() as u32 + 1;
            let step = self.round(goal, round, &system, deadline, journal, usage);
            let span = tracing::info_span!("round", hermes.round = i64::from(round), hermes.role = %self.role);
            if let Some(ending) = step.instrument(span).await {
                return ending;
            }
        }
    }

    /// One perceive → decide → act → observe pass; `Some` when the run ends.
    async fn round(
        &self,
        goal: &str,
        round: u32,
        system: &str,
        deadline: tokio::time::Instant,
        journal: &mut Journal,
        usage: &mut Usage,
    ) -> Option<Ending> {
        let time_left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let messages = perceive::messages(system, goal, journal.entries(), &self.limits, time_left);
        let decided = match timeout_at(
            deadline,
            decide::decide(self.llm.as_ref(), messages, &self.limits, &self.schema),
        )
        .await
        {
            Err(_) => return Some(Ending::stop(StopStatus::Timeout)),
            Ok(Err(e)) => return Some(Ending::error(e.to_string())),
            Ok(Ok(decided)) => decided,
        };
        *usage += decided.usage;
        let (entry, finished) = match decided.decision {
            Ok(decision) if decision.is_finish() => {
                let result = decision.result.clone().unwrap_or_default();
                (
                    entry_for(
                        round,
                        &decision,
                        &ToolResult::ok(result.clone()),
                        &self.limits,
                    ),
                    Some(result),
                )
            }
            Ok(decision) => {
                let Ok((result, took)) =
                    timeout_at(deadline, act::act(&self.toolbox, &decision.action)).await
                else {
                    return Some(Ending::stop(StopStatus::Timeout));
                };
                let entry = entry_for(round, &decision, &result, &self.limits);
                (
                    JournalEntry {
                        tool_ms: took.as_millis() as u64,
                        ..entry
                    },
                    None,
                )
            }
            Err(failure) => {
                let result = ToolResult::error(failure.observation());
                let entry = JournalEntry::new(round, "", UNPARSED, serde_json::json!({}));
                let observation = observe::observation_text(&result, &self.limits);
                (
                    JournalEntry {
                        status: "error".into(),
                        observation,
                        raw: Some(failure.raw),
                        ..entry
                    },
                    None,
                )
            }
        };
        let llm_ms = decided.llm_time.as_millis() as u64;
        self.record(
            journal,
            JournalEntry {
                tokens: decided.usage,
                llm_ms,
                regenerated: decided.regenerated,
                ..entry
            },
        );
        if let Some(result) = finished {
            return Some(Ending {
                status: StopStatus::Finished,
                result: Some(result),
                error: None,
            });
        }
        guard::check(journal.entries(), &self.limits).map(Ending::stop)
    }

    fn record(&self, journal: &mut Journal, entry: JournalEntry) {
        let span = tracing::Span::current();
        span.set_attribute("hermes.action", entry.action.clone());
        span.set_attribute("hermes.args_hash", entry.args_hash.clone());
        span.set_attribute("hermes.status", entry.status.clone());
        span.set_attribute("hermes.parse.repaired", entry.repaired);
        span.set_attribute("hermes.parse.regenerated", entry.regenerated);
        if entry.is_error() {
            telemetry::set_error(&span, crate::text::clip(&entry.observation, 300));
        }
        tracing::info!(round = entry.round, action = %entry.action, status = %entry.status, "round done");
        if let Some(callback) = &self.on_round {
            callback(&entry);
        }
        journal.record(entry);
    }
}

/// How the rounds ended, before the outcome is assembled.
struct Ending {
    status: StopStatus,
    result: Option<String>,
    error: Option<String>,
}

impl Ending {
    fn stop(status: StopStatus) -> Self {
        Self {
            status,
            result: None,
            error: None,
        }
    }
    fn error(message: String) -> Self {
        Self {
            status: StopStatus::Error,
            result: None,
            error: Some(message),
        }
    }
}

/// A journal entry for a decision and the result its action produced.
fn entry_for(
    round: u32,
    decision: &Decision,
    result: &ToolResult,
    limits: &Limits,
) -> JournalEntry {
    let mut entry = JournalEntry::new(
        round,
        &decision.thought,
        &decision.action.name,
        decision.action.args.clone(),
    );
    entry.status = result.status.as_str().into();
    entry.observation = observe::observation_text(result, limits);
    entry.repaired = decision.repaired;
    entry
}

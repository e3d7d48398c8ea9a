//! The agent loop (`Agent`): perceive → decide → act → observe, until a guard stops it.
//!
//! Each phase is one file (`perceive.rs`, `decide.rs`, `act.rs`,
//! `observe.rs`), and so is each concern around them: `guard.rs` says when
//! to stop, `run.rs` holds one run's state and strings the phases together,
//! `progress.rs` writes the report every stop returns, `outcome.rs` is what
//! a run returns. [`Agent`] is the configuration; [`Agent::run`] runs it.
//!
//! The loop enforces the wall clock and a [`CancellationToken`] around every
//! model and tool call, records a journal line per round, and always returns
//! an [`Outcome`] with a progress report, however the run ended. It knows
//! nothing of actors: a planner's executor is a thin shell around this.

pub mod act;
pub mod decide;
pub mod evidence;
pub mod goal;
pub mod guard;
pub mod memory;
pub mod observe;
mod outcome;
pub mod perceive;
pub mod printed;
pub mod progress;
pub mod reflect;
mod run;
pub mod steer;
pub mod survey;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use goal::{Goal, GoalInput, OwnedFile};
pub use guard::StopStatus;
pub use memory::{LongTermMemory, MemoryUse};
pub use outcome::Outcome;
/// Re-exported: the token [`Agent::run`] takes, so callers need no extra crate.
pub use tokio_util::sync::CancellationToken;

use crate::approval::Approvals;
use crate::faults::Faults;
use crate::journal::{Journal, JournalEntry};
use crate::limits::Limits;
use crate::llm::budget::{Budget, BudgetedLlm};
use crate::llm::Llm;
use crate::telemetry;
use crate::tools::Toolbox;
use outcome::Ending;
use run::Run;

/// Called after each round with its journal entry (e.g. to print progress).
pub type RoundCallback = Arc<dyn Fn(&JournalEntry) + Send + Sync>;

/// One agent: a model, a toolbox, limits and an identity. Cheap to clone;
/// one `Agent` may run many goals, one after another or at once.
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
    /// Where injected faults are logged, to be journalled per round.
    faults: Option<Faults>,
    /// The decision schema of this toolbox, built once.
    schema: Arc<serde_json::Value>,
    /// Notes of earlier tasks to recall, and where a finished run goes.
    memory: Option<LongTermMemory>,
    /// Calls that wait for a person's approval, and who answers.
    approvals: Option<Approvals>,
    /// Token and call budgets this agent's calls count against (the task's,
    /// shared with whoever else spends it; a role's, its own).
    budgets: Vec<Arc<Budget>>,
}

impl Agent {
    /// An agent with default limits and identity.
    pub fn new(llm: Arc<dyn Llm>, toolbox: Arc<Toolbox>) -> Self {
        let schema = toolbox.memo().schema(|| decide::decision_schema(&toolbox));
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
            faults: None,
            memory: None,
            approvals: None,
            budgets: Vec::new(),
        }
    }

    /// Counts every model call of this agent against `budget` (a task's,
    /// shared with its other agents, or one of its own); the run stops
    /// with status `budget` once any of its budgets is spent.
    pub fn with_budget(mut self, budget: Arc<Budget>) -> Self {
        self.llm = BudgetedLlm::wrap(Arc::clone(&self.llm), &budget);
        self.budgets.push(budget);
        self
    }

    /// Calls the policy names wait for `approvals`' approver before they
    /// run (see [`crate::approval`]); a refused call is an observation.
    pub fn with_approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = (!approvals.policy().is_empty()).then_some(approvals);
        self
    }

    /// Gives each run the notes of earlier tasks nearest its goal, and
    /// remembers each run that finishes (see [`memory`]).
    pub fn with_memory(mut self, memory: LongTermMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Journals the faults `faults` injected on each round (`"injected"`).
    /// The model and tools must already be wrapped by the same `faults`
    /// (see [`Faults::wrap_llm`] and [`Faults::wrap_toolbox`]).
    pub fn with_fault_log(mut self, faults: Faults) -> Self {
        self.faults = Some(faults);
        self
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

    /// Runs the loop on `goal` (a `&str`, or a [`Goal`] that frames its
    /// work) until a guard stops it or `cancel` is cancelled (status
    /// `cancelled`, with a progress report like any other stop). Never
    /// panics on anything the model or a tool returns.
    pub async fn run(&self, goal: impl Into<Goal>, cancel: &CancellationToken) -> Outcome {
        self.resume(goal, Vec::new(), cancel).await
    }

    /// Continues a run whose first rounds are `history` (read back from a
    /// journal after a crash): the next round is numbered after them, the
    /// prompt shows them, and the guards count them.
    pub async fn resume(
        &self,
        goal: impl Into<Goal>,
        history: Vec<JournalEntry>,
        cancel: &CancellationToken,
    ) -> Outcome {
        // A subtask's loop (it has a parent) is traced only when exported
        // (`telemetry::EXPORTED_ONLY`); a run of its own always is: its
        // trace id is what `hermes run` reports.
        macro_rules! run_span {
            ($($target:tt)*) => {
                tracing::info_span!(
                    $($target)*
                    "executor.run",
                    hermes.role = %self.role,
                    hermes.subtask_id = self.subtask.as_deref().unwrap_or(""),
                    gen_ai.request.model = %self.llm.model(),
                    hermes.resumed_rounds = history.len() as i64,
                )
            };
        }
        let span = if self.trace_parent.is_empty() {
            run_span!()
        } else {
            run_span!(target: telemetry::EXPORTED_ONLY,)
        };
        telemetry::set_parent(&span, &self.trace_parent);
        // One session per run: what run_code keeps between its calls.
        // Boxed: a waiting loop holds this future (see `run::future_size`).
        let goal = goal.into();
        let mut outcome = crate::tools::session::scope(Box::pin(
            self.run_to_end(&goal, history, cancel)
                .instrument(span.clone()),
        ))
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
        outcome.trace_id =
            telemetry::trace_id(&span).or_else(|| telemetry::trace_id_in(&self.trace_parent));
        outcome
    }

    async fn run_to_end(
        &self,
        goal: &Goal,
        history: Vec<JournalEntry>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let started = Instant::now();
        let work = goal.work.as_str();
        let others = goal.others.as_slice();
        let subtask = goal.part_of.is_some();
        let text = goal.text();
        let goal = text.as_str();
        let journal = match &self.journal_path {
            None => Journal::from_entries(history),
            Some(path) => match Journal::to_file(path).await {
                Ok(journal) => journal.with_entries(history),
                Err(e) => {
                    let error = format!("cannot open journal file {}: {e}", path.display());
                    return Ending::error(error).into_outcome(
                        goal,
                        history,
                        Default::default(),
                        started.elapsed(),
                    );
                }
            },
        };
        let mut run = Run::new(self, goal, work, journal, cancel).with_others(others);
        let recalled = Box::pin(run.recall()).await;
        Box::pin(run.survey()).await;
        let ending = run.rounds().await;
        run.journal.close().await;
        let journal = std::mem::take(&mut run.journal).into_entries();
        let reflections = run.reflections.len() as u32;
        let memory = match (&self.memory, recalled) {
            (Some(memory), Some(recalled)) => {
                let stored = match &ending.result {
                    Some(result) if ending.status == StopStatus::Finished => {
                        Box::pin(memory.remember_finished(goal, result, &journal)).await
                    }
                    _ => None,
                };
                Some(MemoryUse { recalled, stored })
            }
            _ => None,
        };
        // A subtask hands over what its last program printed when its
        // result leaves it out (the planner never sees the rounds).
        let printed = match (&ending.result, ending.status) {
            (Some(result), StopStatus::Finished) if subtask => {
                printed::left_out(&journal, &self.toolbox, result)
            }
            _ => None,
        };
        Outcome {
            reflections,
            memory,
            printed,
            ..ending.into_outcome(goal, journal, run.usage, started.elapsed())
        }
    }
}

//! Runs a suite: every task K times, each run in a fresh workspace with the
//! task's fixtures, behind the faults the spec asks for, and turns what each
//! run left behind into a [`RunRecord`] (checks on the workspace and the
//! outcome, never on what the model claims).

use hermes_core::approval::Approvals;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::check::{evaluate, RunObservation, RunStatus};
use super::plan_run::run_plan;
use super::report::{Report, RunRecord};
use super::script::Script;
use super::suite::{Mode, Suite, Task};
use hermes_actors::RoleRegistry;
use hermes_core::agent::{Agent, CancellationToken, LongTermMemory};
use hermes_core::faults::{FaultSpec, Faults};
use hermes_core::journal::Journal;
use hermes_core::limits::Limits;
use hermes_core::llm::{Llm, Reseeded, Usage};
use hermes_core::memory::{Embedder, RedbStore};
use hermes_core::tools::defaults::{default_toolbox, ToolOptions};
use hermes_core::tools::{Toolbox, Workspace};

/// Where a suite's runs get their model from.
#[derive(Clone)]
pub enum ModelSource {
    /// One model for every run (a server or the in-process engine).
    Model(Arc<dyn Llm>),
    /// Scripted replies per task (CI, tests): no server needed.
    Script(Arc<Script>),
}

/// How a suite is run.
#[derive(Clone)]
pub struct EvalConfig {
    /// The model.
    pub model: ModelSource,
    /// The tools each run's workspace gets.
    pub tools: ToolOptions,
    /// Roles for plan-mode tasks and for run-mode tasks that name one.
    pub roles: RoleRegistry,
    /// Limits before the role's and the task's own.
    pub limits: Limits,
    /// Faults to inject, and the seed that makes them reproducible.
    pub faults: FaultSpec,
    /// The fault seed.
    pub seed: u64,
    /// The model's request timeout (an injected `llm_timeout` waits this long).
    pub request_timeout: Duration,
    /// Runs per task (K).
    pub repeat: u32,
    /// Runs at once.
    pub concurrency: usize,
    /// Subtasks of one plan-mode run running at once (`hermes plan
    /// --concurrency`; 1: one after another).
    pub subtask_concurrency: usize,
    /// Keep every run's workspace and journal under `DIR/runs/<task>.<rep>/`.
    pub report_dir: Option<PathBuf>,
    /// Long-term memory in the runs.
    pub memory: EvalMemory,
    /// Approval rules and who answers (`--approve…`; nobody asks a person
    /// in an eval: calls that need approval are refused unless
    /// `--approve-all`).
    pub approvals: Option<Approvals>,
}

/// Long-term memory in a suite's runs.
#[derive(Clone, Default)]
pub enum EvalMemory {
    /// No memory (`--no-memory`).
    #[default]
    Off,
    /// Each run gets a fresh, empty store of its own (beside its journal,
    /// outside its workspace), so no run learns from another: the default.
    Fresh {
        /// How long written entries live.
        ttl: Duration,
        /// Semantic recall, when an embedder is set.
        embedder: Option<Arc<dyn Embedder>>,
    },
    /// Every run of the suite recalls from and writes to one memory
    /// (`memory = "shared"` in the suite, or `--memory FILE`).
    Shared(LongTermMemory),
}

impl EvalMemory {
    /// The memory for the run kept in `run_dir`; an error names the file.
    async fn for_run(&self, run_dir: &Path) -> Result<Option<LongTermMemory>, String> {
        match self {
            Self::Off => Ok(None),
            Self::Shared(memory) => Ok(Some(memory.clone())),
            Self::Fresh { ttl, embedder } => {
                let store = RedbStore::open_async(run_dir.join(RUN_MEMORY_FILE))
                    .await
                    .map_err(|e| e.to_string())?;
                let mut memory = LongTermMemory::new(Arc::new(store)).with_ttl(*ttl);
                if let Some(embedder) = embedder {
                    memory = memory.with_embedder(Arc::clone(embedder));
                }
                Ok(Some(memory))
            }
        }
    }
}

/// A run's own memory file under its folder (fresh memory).
const RUN_MEMORY_FILE: &str = "memory.redb";

impl EvalConfig {
    /// The model name the report names.
    pub fn model_name(&self) -> String {
        match &self.model {
            ModelSource::Model(llm) => llm.model().to_string(),
            ModelSource::Script(_) => "scripted".into(),
        }
    }
}

/// Runs every task of `suite` `config.repeat` times and reports. `on_run`
/// hears each run as it ends (for progress output). Cancelling `cancel`
/// stops the runs in flight (status `cancelled`) and starts no more; the
/// report covers the runs that ended.
pub async fn run_suite(
    suite: &Suite,
    config: &EvalConfig,
    cancel: &CancellationToken,
    on_run: &(dyn Fn(&RunRecord) + Sync),
) -> Report {
    let warned = AtomicBool::new(false);
    let jobs = suite
        .tasks
        .iter()
        .enumerate()
        .flat_map(|(i, task)| (1..=config.repeat.max(1)).map(move |rep| (i, task, rep)));
    let mut runs: Vec<(usize, RunRecord)> = futures::stream::iter(jobs)
        .take_while(|_| std::future::ready(!cancel.is_cancelled()))
        .map(|(i, task, rep)| {
            let warned = &warned;
            async move {
                let record = run_one(task, rep, config, warned, cancel).await;
                on_run(&record);
                (i, record)
            }
        })
        .buffer_unordered(config.concurrency.max(1))
        .collect()
        .await;
    // Suite order, then repetition: the same report for the same runs.
    runs.sort_by_key(|(i, r)| (*i, r.rep));
    let faults = serde_json::to_value(&config.faults)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    Report::new(
        &suite.name,
        config.model_name(),
        config.repeat.max(1),
        faults,
        config.seed,
        runs.into_iter().map(|(_, r)| r).collect(),
    )
}

/// What one run produced, before the checks.
pub(super) struct Ran {
    pub(super) observation: RunObservation,
    pub(super) usage: Usage,
    pub(super) error: Option<String>,
}

/// One run of one task, from fixtures to record.
async fn run_one(
    task: &Task,
    rep: u32,
    config: &EvalConfig,
    warned: &AtomicBool,
    cancel: &CancellationToken,
) -> RunRecord {
    let started = Instant::now();
    let key = format!("{}.{rep}", task.id);
    let faults = Faults::new(config.faults.clone(), config.seed).for_run(&key);
    // Without a report folder the run lives in a temporary one.
    let temp = match &config.report_dir {
        Some(_) => None,
        None => tempfile::tempdir().ok(),
    };
    let run_dir = match (&config.report_dir, &temp) {
        (Some(dir), _) => dir.join("runs").join(&key),
        (None, Some(temp)) => temp.path().to_path_buf(),
        (None, None) => std::env::temp_dir().join(format!("hermes-eval-{key}")),
    };
    let workspace = run_dir.join("workspace");
    let journal = run_dir.join("journal.jsonl");
    let ran = match prepare(task, &workspace, &run_dir) {
        Err(e) => Ran::error(format!(
            "cannot prepare the workspace {}: {e}",
            workspace.display()
        )),
        Ok(()) => match config.memory.for_run(&run_dir).await {
            Err(e) => Ran::error(format!("cannot open the run's memory: {e}")),
            Ok(memory) => {
                let run = RunSetup {
                    rep,
                    faults: &faults,
                    workspace: &workspace,
                    journal: &journal,
                    memory,
                };
                run_mode(task, config, run, warned, cancel).await
            }
        },
    };
    let failed_checks = evaluate(&task.checks, &workspace, &ran.observation);
    RunRecord {
        task: task.id.clone(),
        category: task.category.clone(),
        rep,
        passed: failed_checks.is_empty(),
        status: ran.observation.status,
        rounds: ran.observation.rounds,
        seconds: started.elapsed().as_secs_f64(),
        usage: ran.usage,
        failed_checks,
        faults: faults
            .injected_counts()
            .into_iter()
            .map(|(kind, n)| (kind.as_str().to_string(), u64::from(n)))
            .collect(),
        error: ran.error,
        steered: steered(&[journal, run_dir.join(PLAN_ROUNDS_FILE)]),
    }
}

/// The file beside a plan-mode run's journal that holds every executor
/// round: one journal entry per line, in the order the rounds ended
/// (subtasks interleaved), each with its subtask's id under `subtask`. The
/// journal itself has one line per subtask; this is where a plan's
/// failures are read from (which executor did what, and what it saw).
pub const PLAN_ROUNDS_FILE: &str = "rounds.jsonl";

/// Rounds each steer acted in, by name, read from a run's journals (a
/// run's own, or a plan's [`PLAN_ROUNDS_FILE`]; a missing file counts
/// none): the ones it held back (`steered_by`), the ones it asked again
/// (`reasked_by`), the ones whose prompt its closing sentence ended
/// (`prompted_by`) and the ones it had answers drawn again for (`redraw`),
/// each round once per steer.
fn steered(journals: &[PathBuf]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let entries = journals
        .iter()
        .flat_map(|journal| Journal::read(journal).unwrap_or_default());
    for entry in entries {
        let redrawn = entry.redraw.map(|r| r.by);
        let mut acted: Vec<String> = [
            entry.steered_by,
            entry.reasked_by,
            entry.prompted_by,
            redrawn,
        ]
        .into_iter()
        .flatten()
        .collect();
        acted.sort_unstable();
        acted.dedup();
        for steer in acted {
            *counts.entry(steer).or_default() += 1;
        }
    }
    counts
}

fn prepare(task: &Task, workspace: &Path, run_dir: &Path) -> std::io::Result<()> {
    if workspace.exists() {
        std::fs::remove_dir_all(workspace)?;
    }
    std::fs::create_dir_all(workspace)?;
    for leftover in ["journal.jsonl", PLAN_ROUNDS_FILE, RUN_MEMORY_FILE] {
        let path = run_dir.join(leftover);
        if path.exists() {
            std::fs::remove_file(path)?;
        }
    }
    task.write_fixtures(workspace)
}

impl Ran {
    fn cancelled() -> Ran {
        Ran {
            observation: RunObservation {
                status: RunStatus::Cancelled,
                result: None,
                rounds: 0,
            },
            usage: Usage::default(),
            error: None,
        }
    }

    pub(super) fn error(error: String) -> Ran {
        Ran {
            observation: RunObservation {
                status: RunStatus::Error,
                result: None,
                rounds: 0,
            },
            usage: Usage::default(),
            error: Some(error),
        }
    }
}

/// Where one run happens and what it is given.
struct RunSetup<'a> {
    /// The repetition (1-based): its model samples with seeds of its own.
    rep: u32,
    faults: &'a Faults,
    workspace: &'a Path,
    journal: &'a Path,
    memory: Option<LongTermMemory>,
}

async fn run_mode(
    task: &Task,
    config: &EvalConfig,
    run: RunSetup<'_>,
    warned: &AtomicBool,
    cancel: &CancellationToken,
) -> Ran {
    let RunSetup {
        rep,
        faults,
        workspace,
        journal,
        memory,
    } = run;
    let toolbox = match toolbox_for(workspace, &config.tools, warned).await {
        Ok(toolbox) => faults.wrap_toolbox(&toolbox),
        Err(e) => return Ran::error(e),
    };
    let llm: Arc<dyn Llm> = match &config.model {
        ModelSource::Model(llm) => Arc::clone(llm),
        ModelSource::Script(script) => Arc::new(script.model_for(&task.id)),
    };
    let llm = Reseeded::for_repetition(llm, rep);
    let llm = faults.wrap_llm(llm, config.request_timeout);
    match task.mode {
        Mode::Run => {
            let agent = agent_for(task, config, faults, llm, toolbox, journal, memory);
            match agent {
                Ok(agent) => run_agent(task, agent, cancel).await,
                Err(ran) => ran,
            }
        }
        Mode::Plan => {
            tokio::select! {
                ran = run_plan(task, config, faults, llm, toolbox, journal, memory) => ran,
                _ = cancel.cancelled() => Ran::cancelled(),
            }
        }
    }
}

async fn toolbox_for(
    workspace: &Path,
    options: &ToolOptions,
    warned: &AtomicBool,
) -> Result<Toolbox, String> {
    let workspace = Workspace::new(workspace).map_err(|e| e.to_string())?;
    let built = default_toolbox(&workspace, options)
        .await
        .map_err(|e| e.to_string())?;
    if !warned.swap(true, Ordering::Relaxed) {
        for warning in &built.warnings {
            tracing::warn!("{warning}");
        }
    }
    Ok(built.toolbox)
}

/// The agent for a run-mode task: its role's prompt, tools and limits, the
/// task's limits, the run's journal, faults and memory.
fn agent_for(
    task: &Task,
    config: &EvalConfig,
    faults: &Faults,
    llm: Arc<dyn Llm>,
    toolbox: Toolbox,
    journal: &Path,
    memory: Option<LongTermMemory>,
) -> Result<Agent, Ran> {
    let role = match &task.role {
        None => None,
        Some(name) => match config.roles.get(name) {
            Some(role) => Some(role),
            None => {
                return Err(Ran::error(format!(
                    "task `{}`: unknown role `{name}`",
                    task.id
                )))
            }
        },
    };
    let toolbox = Arc::new(toolbox);
    let agent = match role {
        Some(role) => {
            let limits = task.limits.apply(&role.limits_over(&config.limits));
            role.agent(llm, &toolbox, limits, memory.as_ref())
        }
        None => {
            let agent = Agent::new(llm, toolbox).with_limits(task.limits.apply(&config.limits));
            match memory {
                Some(memory) => agent.with_memory(memory),
                None => agent,
            }
        }
    };
    let agent = match &config.approvals {
        Some(approvals) => agent.with_approvals(approvals.clone()),
        None => agent,
    };
    Ok(agent
        .with_journal_file(journal)
        .with_fault_log(faults.clone()))
}

async fn run_agent(task: &Task, agent: Agent, cancel: &CancellationToken) -> Ran {
    let outcome = agent.run(&task.goal, cancel).await;
    Ran {
        observation: RunObservation {
            status: outcome.status.into(),
            result: outcome.result.clone().filter(|_| outcome.is_finished()),
            rounds: outcome.rounds,
        },
        usage: outcome.usage,
        error: outcome.error,
    }
}

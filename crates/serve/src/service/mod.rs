//! The service behind `hermes serve`: accepts tasks, runs each on its own
//! planner when a slot is free, records every event in the store before
//! anyone sees it, streams events to subscribers, cancels on request, and
//! resumes the tasks a crash interrupted.
//!
//! Each task gets its own planner ([`hermes_actors::Hermes`], spawned by the
//! [`Launcher`] the caller gives), so a task's events, deadline and
//! cancellation are its own; every planner shares the loaded model and one
//! [`RoleRegistry`], so a role registered through the API is seen by the
//! next plan.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use futures::future::BoxFuture;
use hermes_actors::{Hermes, Role, RoleRegistry};
use hermes_core::approval::Verdict;
use hermes_core::llm::budget::Caps;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::approvals::ApprovalSettings;
use crate::metrics::Metrics;
use crate::record::{TaskEventRecord, TaskRecord, TaskSpec, TaskState};
use crate::store::{Store, StoreError};

mod task_run;

/// What a [`Launcher`] gets for one task.
pub struct Launch {
    /// The folder the task's tools are confined to (exists).
    pub workspace: PathBuf,
    /// The task's replan bound, when it asked for one.
    pub max_replans: Option<u32>,
    /// The service's roles (shared: API registrations included).
    pub roles: RoleRegistry,
    /// Where the planner's events go.
    pub events: hermes_actors::EventSink,
    /// Who answers the task's approval questions (HTTP clients), with the
    /// command line's rules: give it to the planner
    /// (`HermesBuilder::approvals`).
    pub approvals: hermes_core::approval::Approvals,
}

/// Starts a planner for one task (the CLI builds it from the model, tool
/// and limit flags; tests give a scripted model).
pub type Launcher = Arc<dyn Fn(Launch) -> BoxFuture<'static, Result<Hermes, String>> + Send + Sync>;

/// How a service runs its tasks.
pub struct ServiceConfig {
    /// Starts each task's planner.
    pub launcher: Launcher,
    /// The roles every planner uses; stored roles are added at start.
    pub roles: RoleRegistry,
    /// The tools a role may name (checked at registration).
    pub known_tools: Vec<String>,
    /// The folder task workspaces are relative to.
    pub workspace: PathBuf,
    /// Tasks running at once; the rest wait `queued`.
    pub concurrency: usize,
    /// A task's deadline when it names none.
    pub default_timeout: Duration,
    /// Ended tasks older than this are pruned at start.
    pub keep: Duration,
    /// Which calls wait for approval, how long, or `--approve-all`.
    pub approvals: ApprovalSettings,
    /// Caps on each task's tokens and calls, for tasks that name none.
    pub budget: Caps,
}

/// Why a request was refused; the HTTP layer maps each to a status code.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed (400).
    #[error("{0}")]
    Invalid(String),
    /// No such task or role (404).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state (409).
    #[error("{0}")]
    Conflict(String),
    /// The service is shutting down (503).
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The store failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A live task's handles: its cancel token and its live event feed.
struct Live {
    cancel: CancellationToken,
    events: broadcast::Sender<TaskEventRecord>,
}

struct Inner {
    store: Store,
    config: ServiceConfig,
    slots: Arc<Semaphore>,
    live: DashMap<String, Live>,
    tracker: TaskTracker,
    closing: CancellationToken,
    running: AtomicU64,
    metrics: Metrics,
    /// Approval questions waiting for an answer: (task, call id) → where
    /// the answer goes.
    pending: DashMap<(String, String), oneshot::Sender<Verdict>>,
}

/// A running service (cheap to clone; every clone is the same service).
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

/// A subscription to a task's events: what happened so far, then what
/// comes.
pub struct Subscription {
    /// Stored events after the asked-for number, in order.
    pub past: Vec<TaskEventRecord>,
    /// Live events (may repeat some of `past`: skip ids already seen);
    /// `None` when the task has ended.
    pub live: Option<broadcast::Receiver<TaskEventRecord>>,
}

/// How long a cancelled task's planner gets to answer with its partial
/// report.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Longest goal accepted, in characters.
pub const MAX_GOAL_CHARS: usize = 100_000;

impl Service {
    /// Starts the service on `store`: prunes old tasks, adds the stored
    /// roles to the registry, and resumes every task that had not ended
    /// (queued ones start; running ones start again, their restart
    /// counted).
    pub fn start(store: Store, config: ServiceConfig) -> Result<Self, ServiceError> {
        let pruned = store.prune(config.keep)?;
        if pruned > 0 {
            tracing::info!("pruned {pruned} ended task(s) from the store");
        }
        let known: Vec<&str> = config.known_tools.iter().map(String::as_str).collect();
        for (name, toml) in store.roles()? {
            match hermes_actors::roles::parse_role(&toml) {
                Ok(role) => {
                    if let Err(e) = config.roles.register(role, &known) {
                        tracing::warn!("stored role `{name}` not added: {e}");
                    }
                }
                Err(e) => tracing::warn!("stored role `{name}` cannot be read: {e}"),
            }
        }
        let service = Self {
            inner: Arc::new(Inner {
                slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
                store,
                config,
                live: DashMap::new(),
                tracker: TaskTracker::new(),
                closing: CancellationToken::new(),
                running: AtomicU64::new(0),
                metrics: Metrics::default(),
                pending: DashMap::new(),
            }),
        };
        let mut unfinished = service.inner.store.tasks(None)?;
        unfinished.retain(|t| !t.status.is_ended());
        // Oldest first, so they queue in the order they were submitted.
        for mut record in unfinished.into_iter().rev() {
            if record.status == TaskState::Running {
                record.restarts += 1;
                record.status = TaskState::Queued;
                service.inner.store.save_task(&record)?;
            }
            // Its `queued` event was recorded before the crash.
            service.spawn(record, false);
        }
        Ok(service)
    }

    /// The store (for tests and figures).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The counters `/metrics` shows.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Tasks running now.
    pub fn running(&self) -> u64 {
        self.inner.running.load(Ordering::Relaxed)
    }

    /// Checks and records a task, then queues it.
    pub fn submit(&self, spec: TaskSpec) -> Result<TaskRecord, ServiceError> {
        if self.inner.closing.is_cancelled() {
            return Err(ServiceError::ShuttingDown);
        }
        check_goal(&spec.goal)?;
        if spec.token_budget == Some(0) || spec.call_budget == Some(0) {
            return Err(ServiceError::Invalid(
                "fields `token_budget` and `call_budget`: must be at least 1".into(),
            ));
        }
        if spec.timeout_secs == Some(0) {
            return Err(ServiceError::Invalid(
                "field `timeout_secs`: must be at least 1".into(),
            ));
        }
        if let Some(dir) = &spec.workspace {
            check_workspace(dir)?;
        }
        let record = self.inner.store.create_task(spec)?;
        self.spawn(record.clone(), true);
        Ok(record)
    }

    /// Submits a task and answers as `POST /v1/tasks` does: its id,
    /// `queued` or `running` as it is now (a free slot may already have
    /// started it), and its trace id.
    pub fn accept(&self, spec: TaskSpec) -> Result<Value, ServiceError> {
        let record = self.submit(spec)?;
        let now = self.task(&record.id).unwrap_or(record);
        Ok(now.accepted())
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Result<TaskRecord, ServiceError> {
        self.inner
            .store
            .task(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no task with id `{id}`")))
    }

    /// Every task, newest first, optionally only those in `status`.
    pub fn tasks(&self, status: Option<TaskState>) -> Result<Vec<TaskRecord>, ServiceError> {
        Ok(self.inner.store.tasks(status)?)
    }

    /// Cancels a queued or running task; its executors stop and what they
    /// finished is kept. An ended task is a conflict.
    pub fn cancel(&self, id: &str) -> Result<(), ServiceError> {
        let record = self.task(id)?;
        if record.status.is_ended() {
            return Err(ServiceError::Conflict(format!(
                "task `{id}` has already ended ({})",
                record.status.as_str()
            )));
        }
        match self.inner.live.get(id) {
            Some(live) => {
                live.cancel.cancel();
                Ok(())
            }
            None => Err(ServiceError::Conflict(format!(
                "task `{id}` is ending; try again"
            ))),
        }
    }

    /// The events of task `id` numbered above `after`, and the live feed
    /// while it runs.
    pub fn subscribe(&self, id: &str, after: u64) -> Result<Subscription, ServiceError> {
        self.task(id)?;
        // Subscribe before reading the store, so nothing falls between.
        let live = self.inner.live.get(id).map(|l| l.events.subscribe());
        let past = self.inner.store.events_after(id, after)?;
        let ended = past.iter().any(|e| e.kind == "task_ended");
        Ok(Subscription {
            past,
            live: if ended { None } else { live },
        })
    }

    /// Registers a role for every plan from now on, and stores it.
    pub fn register_role(&self, role: Role) -> Result<(), ServiceError> {
        let known: Vec<&str> = self
            .inner
            .config
            .known_tools
            .iter()
            .map(String::as_str)
            .collect();
        role.check(&known)
            .map_err(|e| ServiceError::Invalid(e.to_string()))?;
        if self.inner.config.roles.get(&role.name).is_some() {
            return Err(ServiceError::Conflict(format!(
                "a role named `{}` already exists",
                role.name
            )));
        }
        let toml = toml::to_string(&role).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        if !self.inner.store.add_role(&role.name, &toml)? {
            return Err(ServiceError::Conflict(format!(
                "a role named `{}` already exists",
                role.name
            )));
        }
        self.inner
            .config
            .roles
            .register(role, &known)
            .map_err(|e| ServiceError::Conflict(e.to_string()))
    }

    /// Every role, by name.
    pub fn roles(&self) -> Vec<Role> {
        self.inner.config.roles.all()
    }

    /// Stops taking tasks, gives running ones `drain` to end, then cancels
    /// the rest (recorded `cancelled`) and waits for them to be recorded.
    pub async fn shutdown(&self, drain: Duration) {
        self.inner.closing.cancel();
        self.inner.tracker.close();
        if tokio::time::timeout(drain, self.inner.tracker.wait())
            .await
            .is_err()
        {
            for live in self.inner.live.iter() {
                live.cancel.cancel();
            }
            self.inner.tracker.wait().await;
        }
    }

    /// The service's settings.
    pub(crate) fn config(&self) -> &ServiceConfig {
        &self.inner.config
    }

    /// Approval questions waiting for an answer.
    pub(crate) fn pending(&self) -> &DashMap<(String, String), oneshot::Sender<Verdict>> {
        &self.inner.pending
    }

    /// Records an event of task `id`, then streams it.
    pub(crate) fn emit(&self, id: &str, kind: &str, data: Value) {
        self.inner.metrics.on_event(kind, &data);
        match self.inner.store.append_event(id, kind, data) {
            Ok(event) => {
                if let Some(live) = self.inner.live.get(id) {
                    let _ = live.events.send(event);
                }
            }
            Err(e) => tracing::error!("event `{kind}` of {id} not recorded: {e}"),
        }
    }
}

fn check_goal(goal: &str) -> Result<(), ServiceError> {
    if goal.trim().is_empty() {
        return Err(ServiceError::Invalid(
            "field `goal`: must not be empty".into(),
        ));
    }
    let chars = goal.chars().count();
    if chars > MAX_GOAL_CHARS {
        return Err(ServiceError::Invalid(format!(
            "field `goal`: {chars} characters; at most {MAX_GOAL_CHARS}"
        )));
    }
    Ok(())
}

/// A task workspace must be a relative path that stays under the root.
fn check_workspace(dir: &str) -> Result<(), ServiceError> {
    let path = Path::new(dir);
    let escapes = path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    if dir.is_empty() || escapes {
        return Err(ServiceError::Invalid(format!(
            "field `workspace`: `{dir}` must be a relative folder under the server's workspace (no `..`, not absolute)"
        )));
    }
    Ok(())
}

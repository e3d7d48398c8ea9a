//! `Hermes`: the library handle to a running planner, and the defaults
//! every way of starting one (library, CLI, examples) shares.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};

use super::config::PlannerConfig;
use super::events::EventSink;
use super::messages::{PlannerMsg, TaskRequest};
use super::models::{ModelFactory, Models};
use super::placement::Placement;
use super::planner::Planner;
use super::report::TaskReport;
use super::roles::{Role, RoleError, RoleRegistry};
use hermes_core::agent::LongTermMemory;
use hermes_core::approval::Approvals;
use hermes_core::faults::Faults;
use hermes_core::limits::Limits;
use hermes_core::llm::Llm;
use hermes_core::tools::Toolbox;

/// Default task-wide deadline.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(900);
/// Default bound on subtasks running at once, per task.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Default bound on replans per task.
pub const DEFAULT_MAX_REPLANS: u32 = 2;

/// Why the planner could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum HermesError {
    /// `HermesBuilder::spawn` was called without a model.
    #[error("no model given: call HermesBuilder::llm before spawn")]
    NoModel,
    /// The planner actor did not start.
    #[error("the planner did not start: {0}")]
    Start(String),
    /// The planner stopped (or crashed) before it answered.
    #[error("the planner is not running ({0}); start a new one with Hermes::builder()")]
    Unavailable(String),
    /// A role was refused at registration.
    #[error(transparent)]
    Role(#[from] RoleError),
}

/// Sets up a planner: model, tools, roles and limits.
pub struct HermesBuilder {
    llm: Option<Arc<dyn Llm>>,
    factory: Option<ModelFactory>,
    toolbox: Toolbox,
    roles: RoleRegistry,
    limits: Limits,
    concurrency: usize,
    max_replans: u32,
    task_timeout: Duration,
    events: Option<EventSink>,
    faults: Faults,
    memory: Option<LongTermMemory>,
    placement: Option<Arc<dyn Placement>>,
    owns_placement: bool,
    approvals: Option<Approvals>,
}

impl HermesBuilder {
    /// The model the planner and every role without its own model use (required).
    pub fn llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = Some(llm);
        self
    }
    /// Builds clients for roles that name another model.
    pub fn model_factory(mut self, factory: ModelFactory) -> Self {
        self.factory = Some(factory);
        self
    }
    /// Every tool executors may use (each role gets its subset).
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = toolbox;
        self
    }
    /// The executor roles.
    pub fn roles(mut self, roles: RoleRegistry) -> Self {
        self.roles = roles;
        self
    }
    /// Loop limits before role overrides. Their `timeout` is not an
    /// executor's: an executor's loop runs until its task's deadline
    /// ([`TaskRequest::with_timeout`], else [`Self::task_timeout`]) unless
    /// its role sets `timeout_secs`.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Most subtasks running at once per task (default [`DEFAULT_CONCURRENCY`]).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }
    /// Most replans per task (default [`DEFAULT_MAX_REPLANS`]).
    pub fn max_replans(mut self, max_replans: u32) -> Self {
        self.max_replans = max_replans;
        self
    }
    /// Default task-wide deadline (default [`DEFAULT_TASK_TIMEOUT`]).
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = timeout;
        self
    }
    /// Receives progress events.
    pub fn on_event(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }
    /// Injects faults into executors (tests, `hermes eval`, chaos runs).
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }
    /// Long-term memory for every executor: each subtask's loop recalls the
    /// notes nearest its goal and remembers its result when it finishes,
    /// written under its role (default: none).
    pub fn memory(mut self, memory: LongTermMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Runs subtasks elsewhere when `placement` picks a node for them: a
    /// connected `hermes::cluster::Cluster` runs each subtask on a worker
    /// node (`hermes node`) that serves its role, and the rest here.
    /// Shut down with the planner ([`Hermes::shutdown`]).
    pub fn placement(mut self, placement: Arc<dyn Placement>) -> Self {
        self.placement = Some(placement);
        self.owns_placement = true;
        self
    }

    /// As [`HermesBuilder::placement`], for a placement several planners
    /// share (`hermes serve` runs one planner per task on one cluster):
    /// [`Hermes::shutdown`] leaves it running; its owner shuts it down.
    pub fn shared_placement(mut self, placement: Arc<dyn Placement>) -> Self {
        self.placement = Some(placement);
        self.owns_placement = false;
        self
    }

    /// Who answers approval questions (a terminal, an HTTP client, a
    /// policy) and the rules every executor follows besides its role's.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// Starts the planner actor.
    pub async fn spawn(self) -> Result<Hermes, HermesError> {
        let llm = self.llm.ok_or(HermesError::NoModel)?;
        let placement = self.placement;
        let owns_placement = self.owns_placement;
        let mut models = Models::new(llm);
        if let Some(factory) = self.factory {
            models = models.with_factory(factory);
        }
        let config = PlannerConfig {
            models,
            toolbox: Arc::new(self.toolbox),
            roles: self.roles,
            limits: self.limits,
            concurrency: self.concurrency,
            max_replans: self.max_replans,
            task_timeout: self.task_timeout,
            events: self.events,
            faults: self.faults,
            memory: self.memory,
            placement: placement.clone(),
            approvals: self.approvals,
        };
        let (planner, _) = Actor::spawn(None, Planner, config)
            .await
            .map_err(|e| HermesError::Start(e.to_string()))?;
        Ok(Hermes {
            planner,
            placement,
            owns_placement,
        })
    }
}

/// A running planner. Submit tasks, register roles; drop or `shutdown` to stop.
pub struct Hermes {
    planner: ActorRef<PlannerMsg>,
    placement: Option<Arc<dyn Placement>>,
    /// Whether `shutdown` shuts the placement down too (not when shared).
    owns_placement: bool,
}

impl Hermes {
    /// A builder with the defaults above.
    pub fn builder() -> HermesBuilder {
        HermesBuilder {
            llm: None,
            factory: None,
            toolbox: Toolbox::new(),
            roles: RoleRegistry::new(),
            limits: Limits::default(),
            concurrency: DEFAULT_CONCURRENCY,
            max_replans: DEFAULT_MAX_REPLANS,
            task_timeout: DEFAULT_TASK_TIMEOUT,
            events: None,
            faults: Faults::none(),
            memory: None,
            placement: None,
            owns_placement: false,
            approvals: None,
        }
    }

    /// Plans and runs a task; returns its report when it ends (the task
    /// deadline bounds the wait).
    pub async fn submit(&self, request: impl Into<TaskRequest>) -> Result<TaskReport, HermesError> {
        let request = request.into();
        ractor::call!(self.planner, |reply| PlannerMsg::Submit { request, reply })
            .map_err(|e| HermesError::Unavailable(e.to_string()))
    }

    /// Adds an executor role at runtime.
    pub async fn register_role(&self, role: Role) -> Result<(), HermesError> {
        ractor::call!(self.planner, |reply| PlannerMsg::RegisterRole {
            role,
            reply
        })
        .map_err(|e| HermesError::Unavailable(e.to_string()))?
        .map_err(HermesError::from)
    }

    /// The registered roles, sorted by name.
    pub async fn roles(&self) -> Result<Vec<Role>, HermesError> {
        ractor::call!(self.planner, PlannerMsg::ListRoles)
            .map_err(|e| HermesError::Unavailable(e.to_string()))
    }

    /// The worker nodes with a live session, by name (empty without
    /// [`HermesBuilder::placement`]).
    pub fn nodes(&self) -> Vec<String> {
        self.placement
            .as_ref()
            .map(|p| p.nodes())
            .unwrap_or_default()
    }

    /// The planner's address, for sending messages directly.
    pub fn planner(&self) -> &ActorRef<PlannerMsg> {
        &self.planner
    }

    /// Stops the planner: every task's token is cancelled, its executors
    /// stop, and tasks still running end in error.
    pub async fn shutdown(self) {
        let _ = self
            .planner
            .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
            .await;
        if let Some(placement) = self.placement.filter(|_| self.owns_placement) {
            placement.shutdown().await;
        }
    }
}

//! `Hermes`: the library handle to a running planner.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};

use super::events::EventSink;
use super::faults::Faults;
use super::messages::{PlannerMsg, TaskReport, TaskRequest};
use super::models::{ModelFactory, Models};
use super::planner::{Planner, PlannerConfig};
use super::roles::{Role, RoleRegistry};
use crate::limits::Limits;
use crate::llm::Llm;
use crate::tools::Toolbox;

/// Default task-wide deadline.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(900);

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
    /// Loop limits before role overrides.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Most subtasks running at once per task (default 4).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }
    /// Most replans per task (default 2).
    pub fn max_replans(mut self, max_replans: u32) -> Self {
        self.max_replans = max_replans;
        self
    }
    /// Default task-wide deadline (default 900 s).
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = timeout;
        self
    }
    /// Receives progress events.
    pub fn on_event(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }
    /// Injects executor crashes (tests, chaos runs).
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Starts the planner actor.
    pub async fn spawn(self) -> Result<Hermes, String> {
        let llm = self.llm.ok_or("no model given: call HermesBuilder::llm")?;
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
        };
        let (planner, _) = Actor::spawn(None, Planner, config)
            .await
            .map_err(|e| format!("planner did not start: {e}"))?;
        Ok(Hermes { planner })
    }
}

/// A running planner. Submit tasks, register roles; drop or `shutdown` to stop.
pub struct Hermes {
    planner: ActorRef<PlannerMsg>,
}

impl Hermes {
    /// A builder with defaults: concurrency 4, 2 replans, 900 s deadline.
    pub fn builder() -> HermesBuilder {
        HermesBuilder {
            llm: None,
            factory: None,
            toolbox: Toolbox::new(),
            roles: RoleRegistry::new(),
            limits: Limits::default(),
            concurrency: 4,
            max_replans: 2,
            task_timeout: DEFAULT_TASK_TIMEOUT,
            events: None,
            faults: Faults::none(),
        }
    }

    /// Plans and runs a task; returns its report when it ends (the task
    /// deadline bounds the wait).
    pub async fn submit(&self, request: impl Into<TaskRequest>) -> Result<TaskReport, String> {
        let request = request.into();
        ractor::call!(self.planner, |reply| PlannerMsg::Submit { request, reply })
            .map_err(|e| format!("planner unavailable: {e}"))
    }

    /// Adds an executor role at runtime.
    pub async fn register_role(&self, role: Role) -> Result<(), String> {
        ractor::call!(self.planner, |reply| PlannerMsg::RegisterRole {
            role,
            reply
        })
        .map_err(|e| format!("planner unavailable: {e}"))?
    }

    /// The registered roles, sorted by name.
    pub async fn roles(&self) -> Result<Vec<Role>, String> {
        ractor::call!(self.planner, PlannerMsg::ListRoles)
            .map_err(|e| format!("planner unavailable: {e}"))
    }

    /// The planner's address, for sending messages directly.
    pub fn planner(&self) -> &ActorRef<PlannerMsg> {
        &self.planner
    }

    /// Stops the planner and, through supervision, its executors.
    pub async fn shutdown(self) {
        let _ = self
            .planner
            .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
            .await;
    }
}

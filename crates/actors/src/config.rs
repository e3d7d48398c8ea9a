//! [`PlannerConfig`]: how a planner is set up (models, tools, roles,
//! limits, bounds, events, faults, memory, placement on other nodes).

use std::sync::Arc;
use std::time::Duration;

use super::events::EventSink;
use super::models::Models;
use super::placement::Placement;
use super::roles::RoleRegistry;
use hermes_core::agent::LongTermMemory;
use hermes_core::approval::Approvals;
use hermes_core::faults::Faults;
use hermes_core::limits::Limits;
use hermes_core::tools::Toolbox;

/// How a planner is set up (see `HermesBuilder` for the defaults).
#[derive(Clone)]
pub struct PlannerConfig {
    /// Models for the planner and the roles.
    pub models: Models,
    /// Every tool; each role gets its subset.
    pub toolbox: Arc<Toolbox>,
    /// Executor roles.
    pub roles: RoleRegistry,
    /// Loop limits before role overrides.
    pub limits: Limits,
    /// Most subtasks running at once, per task.
    pub concurrency: usize,
    /// Most replans per task.
    pub max_replans: u32,
    /// Task-wide deadline when a request sets none.
    pub task_timeout: Duration,
    /// Progress events.
    pub events: Option<EventSink>,
    /// Faults to inject into executors (none in production).
    pub faults: Faults,
    /// Long-term memory the executors' loops share, if any.
    pub memory: Option<LongTermMemory>,
    /// Where subtasks may run besides this process: worker nodes that run
    /// subtasks of the roles they serve (`hermes_cluster::Cluster`); none:
    /// every subtask runs here.
    pub placement: Option<Arc<dyn Placement>>,
    /// Who answers approval questions, with the command line's rules;
    /// none: only roles' rules ask, and nobody answers (refused).
    pub approvals: Option<Approvals>,
}

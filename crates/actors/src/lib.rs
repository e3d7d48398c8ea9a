//! hermes-actors: many agents. A Planner actor splits a task into
//! subtasks and runs them on supervised Executor actors, each running its
//! own agent loop (`hermes_core::agent`).
//!
//! Must not depend on: `hermes-cluster` (it defines [`Placement`], what it
//! needs of a cluster, and the cluster implements it), `hermes-engines`,
//! `hermes-eval`.
//!
//! Read it top-down:
//! 1. `handle.rs`: [`Hermes`], the public API (`builder`, `submit`,
//!    `register_role`, `shutdown`) and the defaults.
//! 2. `planner.rs`: the Planner actor, a router: each message is one line
//!    that hands an event to the task it belongs to.
//! 3. `live_task/`: one object per live task, one method per event
//!    (planned, subtask finished, failed, cancelled, crashed, replanned,
//!    answered, deadline).
//! 4. `dag/`: the DAG rules as plain code (what may start, what a failure
//!    or replan changes, the report), tested without actors.
//! 5. `executor.rs`: the Executor actor, a thin shell over `agent::Agent`.
//!
//! Beside them: `messages.rs` (the typed mailboxes), `report.rs` (what a
//! task returns, with typed statuses), `plan/` (plan shape, checks, prompts
//! and model calls), `model_call.rs` (ask the model off the mailbox),
//! `roles.rs` (executor roles as data, and [`Role::agent`], the one place a
//! role is applied to an agent), `models.rs` (a model per role),
//! `placement.rs` (subtasks on other nodes), `config.rs` ([`PlannerConfig`]),
//! `events.rs` (progress events). Cancellation is one mechanism: a
//! `CancellationToken` per task, a child token per executor.

mod config;
mod dag;
pub mod events;
pub mod executor;
mod handle;
mod live_task;
pub mod messages;
mod model_call;
pub mod models;
pub mod placement;
pub mod plan;
mod planner;
pub mod report;
pub mod roles;

pub use config::PlannerConfig;
pub use dag::{AfterFailure, Dag, Slot};
pub use events::{EventSink, PlanEvent};
pub use handle::{
    Hermes, HermesBuilder, HermesError, DEFAULT_CONCURRENCY, DEFAULT_MAX_REPLANS,
    DEFAULT_TASK_TIMEOUT,
};
/// Re-exported: fault injection lives in [`hermes_core::faults`].
pub use hermes_core::faults::Faults;
pub use live_task::DEADLINE_GRACE;
pub use messages::{PlannerMsg, Resume, TaskRequest};
pub use models::{ModelBuildError, ModelFactory, Models};
pub use placement::{Placement, RemoteRun, RemoteSlot};
pub use planner::Planner;
pub use report::{SubtaskReport, SubtaskStatus, TaskReport, TaskStatus};
pub use roles::{Role, RoleError, RoleRegistry};

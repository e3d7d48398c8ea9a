//! Many agents: a Planner actor that splits a task into subtasks and runs
//! them on supervised Executor actors, each running its own Hermes loop.
//!
//! Built on `ractor`. Results, failures and replans travel as typed
//! messages (`messages.rs`); the rules of the task DAG are plain code
//! (`task.rs`, `plan.rs`) that the actors only drive. [`Hermes`] is the
//! handle library users submit tasks through.

pub mod events;
pub mod executor;
pub mod faults;
mod handle;
pub mod messages;
pub mod models;
pub mod plan;
pub mod planner;
pub mod planning;
pub mod roles;
pub mod task;

pub use events::{EventSink, PlanEvent};
pub use faults::Faults;
pub use handle::{Hermes, HermesBuilder};
pub use messages::{SubtaskReport, TaskReport, TaskRequest};
pub use models::{ModelFactory, Models};
pub use roles::{Role, RoleError, RoleRegistry};

//! Hermes as a service (`hermes serve`): tasks submitted over HTTP run on
//! planners, their events are committed to a durable store before they
//! are streamed, and tasks a crash interrupted are resumed at the next
//! start.
//!
//! - [`store`]: the redb file of tasks, events and roles;
//! - [`service`]: the queue, one planner per task, cancellation, resume;
//! - [`http`]: the `/v1` API, `/healthz`, `/metrics` and the web page;
//! - [`approvals`]: approval questions as events, answered over HTTP;
//! - [`feed`]: a task's events in order, from the store and then live;
//! - [`mcp`]: the service as an MCP server (`hermes mcp serve`);
//! - [`client`]: a client of a running server, over HTTP;
//! - [`events`]: planner events as stream events, and resuming from them;
//! - [`record`]: what a task and an event look like;
//! - [`metrics`]: the Prometheus counters.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod approvals;
pub mod client;
pub mod events;
pub mod feed;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod record;
pub mod service;
pub mod store;

pub use approvals::{Answerer, ApprovalSettings};
pub use http::router;
pub use record::{TaskEventRecord, TaskRecord, TaskSpec, TaskState};
pub use service::{Launch, Launcher, Service, ServiceConfig, ServiceError};
pub use store::{Store, StoreError};

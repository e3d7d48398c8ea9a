//! hermes-cluster: executors on other machines, on `ractor_cluster`.
//! Must not depend on: `hermes-engines`, `hermes-eval`.
//!
//! A **worker node** ([`Node`], `hermes node`) listens for planners and
//! runs one [`Pool`](pool::Pool) per role it serves; each pool joins the
//! process group `hermes.role.<role>` and runs subtasks on local,
//! supervised executors. A **planner** joins with [`Cluster::connect`]
//! (`hermes plan --connect`; `HermesBuilder::placement` with the connected
//! `Cluster`, which implements `hermes_actors::Placement`): for each subtask it
//! picks the least-loaded pool of the subtask's role on another node, or
//! runs it locally when no node serves the role.
//!
//! Supervision does not cross nodes and an `ActorRef` cannot travel, so
//! the planner holds a local stand-in per remote run
//! ([`RemoteExecutor`](remote::RemoteExecutor)) and learns of remote
//! failures from the answer, the session's end, missed health checks and
//! the deadline; each becomes an ordinary executor failure (one retry
//! elsewhere, then a replan). Only pools are exposed to other nodes; their
//! messages ([`wire`]) are JSON-encoded serde types that carry the W3C
//! trace context, so remote spans join the task's trace.
//!
//! The one way back from a node to a planner besides a run's answer is the
//! planner's [`Desk`](desk::Desk) (process group `hermes.desk.<identity>`):
//! a remote executor asks its approval questions there and reports its
//! model calls' tokens there, so the planner's approver and the task's
//! budget cover every node.
//!
//! Read: `wire.rs` (what crosses nodes), `node.rs` + `pool.rs` +
//! `run_host.rs` + `desk_link.rs` (the worker side), `client.rs` +
//! `remote.rs` + `desk.rs` (the planner side), `peers.rs` (session
//! events), `tls.rs`, `events.rs`.

pub mod client;
pub mod desk;
pub mod desk_link;
pub mod events;
pub mod node;
pub mod peers;
pub mod pool;
pub mod remote;
pub mod run_host;
pub mod shared;
pub mod tls;
pub mod wire;

pub use client::{Cluster, ClusterConfig, Notice, NoticeSink, PickedPool};
pub use events::{NodeEvent, NodeEventSink};
pub use node::{Node, NodeBuilder, DEFAULT_CAPACITY};
pub use tls::TlsFiles;

/// Why a node or a planner's cluster connection could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A setting is missing or wrong.
    #[error("{0}")]
    Config(String),
    /// The node could not listen on its address.
    #[error("cannot listen on {0}: {1}")]
    Listen(String, String),
    /// An actor of the node did not start.
    #[error("the cluster node did not start: {0}")]
    Start(String),
}

/// A cookie must be given and not blank.
fn check_cookie(cookie: &str) -> Result<(), ClusterError> {
    if cookie.trim().is_empty() {
        return Err(ClusterError::Config(
            "a cluster needs a shared secret: give --cookie SECRET (or HERMES_COOKIE) on every node and planner".into(),
        ));
    }
    Ok(())
}

/// A node name is what reports show: no `@`, no spaces, not empty.
fn check_name(name: &str) -> Result<(), ClusterError> {
    if name.is_empty() || name.contains(['@', ' ', '/']) {
        return Err(ClusterError::Config(format!(
            "node name `{name}`: use letters, digits, `-` or `_` (no `@`, `/` or spaces)"
        )));
    }
    Ok(())
}

//! What every pool and run host of one worker node shares: its name,
//! capacity and slots, the runs it accepted, its roles, models and tools.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::events::{NodeEvent, NodeEventSink};
use super::wire::{PoolInfo, PROTOCOL};
use hermes_actors::{Models, RoleRegistry};
use hermes_core::agent::steer::Steers;
use hermes_core::tools::Toolbox;

/// A run the node accepted (waiting for a slot or running).
pub struct RunEntry {
    /// The planner node that sent it (`name@host`).
    pub origin: String,
    /// Stops the run (its loop ends `cancelled`).
    pub cancel: CancellationToken,
}

/// What every pool and run host of one node shares.
pub struct NodeShared {
    /// The node's name (`--name`).
    pub name: String,
    /// Most subtasks running at once on the node.
    pub capacity: u32,
    /// One permit per running subtask.
    pub slots: Arc<Semaphore>,
    /// Accepted runs by run id.
    pub runs: DashMap<String, RunEntry>,
    /// Runs answered whose planner has not yet confirmed the answer
    /// (`PoolMsg::Received`): run id to the planner's name.
    pub unconfirmed: DashMap<String, String>,
    /// Accepted runs waiting for a slot.
    pub queued: AtomicU32,
    /// Set by a drain: new runs are refused.
    pub draining: AtomicBool,
    /// The node's roles.
    pub roles: RoleRegistry,
    /// The node's models.
    pub models: Models,
    /// Every tool of the node; each role gets its subset.
    pub toolbox: Arc<Toolbox>,
    /// Steer switches set on every run, over the planner's (`--steer`).
    pub steer: Steers,
    /// Where events go.
    pub events: Option<NodeEventSink>,
}

impl NodeShared {
    /// Reports an event (also as a tracing line).
    pub fn emit(&self, event: NodeEvent) {
        tracing::info!("{event}");
        if let Some(sink) = &self.events {
            sink(&event);
        }
    }

    /// Subtasks running now.
    pub fn running(&self) -> u32 {
        self.capacity
            .saturating_sub(self.slots.available_permits() as u32)
    }

    /// Cancels every run sent by `origin` and forgets the answers it did
    /// not confirm (it left); returns how many runs were cancelled.
    pub fn cancel_origin(&self, origin: &str) -> usize {
        self.unconfirmed.retain(|_, from| from != origin);
        self.runs
            .iter()
            .filter(|r| r.origin == origin)
            .map(|r| r.cancel.cancel())
            .count()
    }

    pub(super) fn info(&self, role: &str) -> PoolInfo {
        PoolInfo {
            protocol: PROTOCOL,
            node: self.name.clone(),
            role: role.to_string(),
            capacity: self.capacity,
            running: self.running(),
            queued: self.queued.load(Ordering::Relaxed),
        }
    }
}

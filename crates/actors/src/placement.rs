//! [`Placement`]: what the actor layer needs of a cluster, defined here so
//! that the cluster depends on the actors and never the other way round.
//!
//! A planner asks its placement, for each subtask, whether another node
//! should run it ([`Placement::pick`]). A picked [`RemoteSlot`] starts a
//! local stand-in with the executor's mailbox ([`ExecutorMsg`]), linked to
//! the planner like any executor, so a remote failure reaches the planner
//! as an ordinary executor failure. `hermes_cluster::Cluster` is the
//! implementation (`ractor_cluster` nodes); without one, every subtask runs
//! in this process.

use async_trait::async_trait;
use ractor::{ActorCell, ActorRef, DerivedActorRef, SpawnErr};
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use super::executor::TaskJournals;
use super::messages::{ExecutorMsg, ExecutorReport, TaskId};
use hermes_core::approval::Approvals;
use hermes_core::llm::budget::Budget;

/// Where subtasks may run besides this process.
#[async_trait]
pub trait Placement: Send + Sync + 'static {
    /// The place for the next subtask of `role`, never on the node named
    /// `avoid`; `None` runs it here.
    fn pick(&self, role: &str, avoid: Option<&str>) -> Option<Box<dyn RemoteSlot>>;
    /// The names of the nodes that can take subtasks now, sorted.
    fn nodes(&self) -> Vec<String>;
    /// Ends every session with other nodes (at the planner's shutdown).
    async fn shutdown(&self);
}

/// One subtask's place on another node: picked, not yet started. Counted
/// as load on its node until dropped.
#[async_trait]
pub trait RemoteSlot: Send {
    /// The node's name, as reports and events show it.
    fn node(&self) -> &str;
    /// Starts the run's local stand-in, linked to `supervisor` (the planner).
    async fn spawn(
        self: Box<Self>,
        run: RemoteRun,
        supervisor: ActorCell,
    ) -> Result<ActorRef<ExecutorMsg>, SpawnErr>;
}

/// What a remote run shares with its task on the planner's side.
pub struct RemoteRun {
    /// Where the outcome goes.
    pub report_to: DerivedActorRef<ExecutorReport>,
    /// The task the subtask belongs to.
    pub task: TaskId,
    /// The task's journals (the remote rounds land here at the end).
    pub journals: TaskJournals,
    /// Cancelled at the task deadline or when the planner stops the run.
    pub cancel: CancellationToken,
    /// Who answers the run's approval questions, with the command line's
    /// rules (`None`: nobody; the role's rules then refuse).
    pub approvals: Option<Approvals>,
    /// The task's budget, when capped: the remote calls count against it.
    pub budget: Option<Arc<Budget>>,
}

//! The planner side of one remote run: a local actor with the executor's
//! mailbox (`ExecutorMsg`), supervised by the planner like any executor,
//! that sends the subtask to a worker node's pool and waits for the end.
//!
//! Supervision does not cross nodes, so every way a remote run can go
//! wrong (the node crashes the executor, refuses the run, drops the
//! session, or misses the deadline) ends this actor with an error: the
//! planner sees an executor failure and restarts the subtask once, on
//! another node or locally, exactly as for a local crash.

use std::time::Duration;

use async_trait::async_trait;
use ractor::rpc::CallResult;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SpawnErr};

use super::client::{Cluster, PickedPool};
use super::desk::{DeskBook, DeskEntry};
use super::wire::{PoolMsg, RemoteApprovals, RunEnded, RunRequest, Wire, PROTOCOL};
use hermes_actors::messages::{ExecutorMsg, ExecutorReport, LoopPanic, SubtaskRun};
use hermes_actors::placement::{Placement, RemoteRun, RemoteSlot};

/// How long after the loop's own timeout the planner waits for a remote
/// answer before it calls the run lost.
pub const REMOTE_GRACE: Duration = Duration::from_secs(10);

/// What a remote executor is started with.
pub struct RemoteArgs {
    /// Where the run goes.
    pub placement: PickedPool,
    /// This planner's node identity (`name@host`).
    pub origin: String,
    /// The planner's desk, where the run's questions and spends arrive.
    pub desk: DeskBook,
    /// What the run shares with its task (where the outcome goes, the
    /// task's journals, the token that stops it, approvals, budget).
    pub run: RemoteRun,
}

/// A remote run's state.
pub struct RemoteState {
    args: RemoteArgs,
    /// Subtask id and run id of the run in flight.
    current: Option<(String, String)>,
}

/// Stands in, inside the planner's process, for an executor on another node.
pub struct RemoteExecutor;

impl Actor for RemoteExecutor {
    type Msg = ExecutorMsg;
    type State = RemoteState;
    type Arguments = RemoteArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        args: RemoteArgs,
    ) -> Result<RemoteState, ActorProcessingErr> {
        Ok(RemoteState {
            args,
            current: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<ExecutorMsg>,
        message: ExecutorMsg,
        state: &mut RemoteState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ExecutorMsg::Run(run) => {
                let run_id = format!(
                    "{}/{}/{}/{}",
                    state.args.origin, state.args.run.task, run.subtask.id, run.attempt
                );
                state.current = Some((run.subtask.id.clone(), run_id.clone()));
                send(myself, &state.args, *run, run_id);
            }
            ExecutorMsg::LoopEnded(Ok(outcome)) => {
                let Some((subtask, _)) = state.current.take() else {
                    return Ok(());
                };
                let report = ExecutorReport {
                    task: state.args.run.task,
                    subtask,
                    outcome,
                };
                if state.args.run.report_to.send_message(report).is_err() {
                    return Err("the receiver of the outcome is gone".into());
                }
            }
            ExecutorMsg::LoopEnded(Err(lost)) => {
                state.current = None;
                return Err(lost.into());
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        state: &mut RemoteState,
    ) -> Result<(), ActorProcessingErr> {
        state.args.run.cancel.cancel();
        if let Some((_, run_id)) = state.current.take() {
            // Best effort: the node ignores ids it does not know.
            let _ = state.args.placement.pool.cast(PoolMsg::Cancel(run_id));
        }
        Ok(())
    }
}

/// Sends the run and turns the answer into `LoopEnded` (in its own task:
/// the mailbox stays free).
fn send(myself: ActorRef<ExecutorMsg>, args: &RemoteArgs, run: SubtaskRun, run_id: String) {
    let pool = args.placement.pool.clone();
    let node = args.placement.node.clone();
    let cancel = args.run.cancel.clone();
    let journals = args.run.journals.clone();
    let subtask = run.subtask.id.clone();
    journals.insert(subtask.clone(), run.history.clone());
    let wait = run.limits.timeout + REMOTE_GRACE;
    let approvals = args.run.approvals.as_ref().map(|a| RemoteApprovals {
        policy: a.policy().clone(),
        timeout_ms: a.timeout().as_millis() as u64,
    });
    let ticket = args.desk.open(
        &run_id,
        DeskEntry {
            approvals: args.run.approvals.clone(),
            budget: args.run.budget.clone(),
        },
    );
    let request = RunRequest {
        protocol: PROTOCOL,
        run_id: run_id.clone(),
        origin: args.origin.clone(),
        subtask: run.subtask,
        goal: run.goal,
        limits: run.limits,
        attempt: run.attempt,
        history: run.history,
        trace_context: run.trace_context,
        approvals,
        budgeted: args.run.budget.is_some(),
    };
    tokio::spawn(async move {
        // Questions and spends are answered while the run is awaited.
        let _ticket = ticket;
        let call = pool.call(|port| PoolMsg::Run(Wire::new(request), port), Some(wait));
        tokio::pin!(call);
        let answer = tokio::select! {
            answer = &mut call => answer,
            _ = cancel.cancelled() => {
                // The remote loop ends `cancelled` and still answers.
                let _ = pool.cast(PoolMsg::Cancel(run_id.clone()));
                call.await
            }
        };
        if let Ok(CallResult::Success(_)) = &answer {
            // A draining node waits for this before it exits.
            let _ = pool.cast(PoolMsg::Received(run_id));
        }
        let ended = match answer {
            Ok(CallResult::Success(Wire(Ok(RunEnded::Finished { outcome, journal })))) => {
                journals.insert(subtask, journal);
                Ok(outcome)
            }
            Ok(CallResult::Success(Wire(Ok(RunEnded::Crashed(why))))) => {
                Err(format!("the executor on node {node} crashed: {why}"))
            }
            Ok(CallResult::Success(Wire(Ok(RunEnded::Rejected(why))))) => {
                Err(format!("node {node} refused the subtask: {why}"))
            }
            Ok(CallResult::Success(Wire(Err(why)))) => Err(format!(
                "node {node} sent an answer this planner cannot read: {why}"
            )),
            Ok(CallResult::Timeout) => Err(format!(
                "node {node} missed the subtask deadline (no answer in {} s)",
                wait.as_secs()
            )),
            Ok(CallResult::SenderError) => Err(format!("node {node} disconnected")),
            Err(e) => Err(format!("node {node} is unreachable: {e}")),
        };
        let _ = myself.send_message(ExecutorMsg::LoopEnded(ended.map_err(LoopPanic)));
    });
}

/// A subtask's place on a worker node, as the planner sees it: the picked
/// pool and this planner's identity.
pub struct ClusterSlot {
    /// The pool that will run the subtask.
    pub picked: PickedPool,
    /// This planner's node identity (`name@host`).
    pub origin: String,
    /// The planner's desk.
    pub desk: DeskBook,
}

#[async_trait]
impl RemoteSlot for ClusterSlot {
    fn node(&self) -> &str {
        &self.picked.node
    }

    async fn spawn(
        self: Box<Self>,
        run: RemoteRun,
        supervisor: ActorCell,
    ) -> Result<ActorRef<ExecutorMsg>, SpawnErr> {
        let args = RemoteArgs {
            placement: self.picked,
            origin: self.origin,
            desk: self.desk,
            run,
        };
        Actor::spawn_linked(None, RemoteExecutor, args, supervisor)
            .await
            .map(|(actor, _)| actor)
    }
}

/// The actor layer's view of a cluster: a subtask runs on the least-loaded
/// node serving its role ([`Cluster::pick`]), or here when none does.
#[async_trait]
impl Placement for Cluster {
    fn pick(&self, role: &str, avoid: Option<&str>) -> Option<Box<dyn RemoteSlot>> {
        let picked = Cluster::pick(self, role, avoid)?;
        Some(Box::new(ClusterSlot {
            picked,
            origin: self.identity().to_string(),
            desk: self.desk_book().clone(),
        }))
    }

    fn nodes(&self) -> Vec<String> {
        Cluster::nodes(self)
    }

    async fn shutdown(&self) {
        Cluster::shutdown(self).await;
    }
}

//! One remote run on a worker node: a local actor that holds the caller's
//! reply port, supervises the [`Executor`] running the subtask, and answers
//! exactly once: with the loop's outcome and rounds, or with the crash.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::desk_link::{DeskApprover, DeskLink, SpendingLlm};
use super::events::NodeEvent;
use super::shared::NodeShared;
use super::wire::{RunEnded, RunRequest, Wire};
use hermes_actors::executor::{Executor, ExecutorArgs, TaskJournals};
use hermes_actors::messages::{ExecutorMsg, SubtaskRun};
use hermes_core::approval::Approvals;
use hermes_core::faults::Faults;
use hermes_core::limits::Limits;

/// What a run host hears: its executor's report.
pub use hermes_actors::messages::ReportMsg as RunHostMsg;

/// What a run host starts with.
pub struct RunHostArgs {
    /// The node's shared state.
    pub shared: Arc<NodeShared>,
    /// The run.
    pub request: RunRequest,
    /// Where the answer goes (back over the session to the planner).
    pub reply: RpcReplyPort<Wire<RunEnded>>,
    /// Stops the loop (`PoolMsg::Cancel`, the planner leaving, a drain).
    pub cancel: CancellationToken,
    /// The node slot the run holds until it ends.
    pub permit: OwnedSemaphorePermit,
}

/// Runs one subtask for another node.
pub struct RunHost;

/// A run host's state.
pub struct RunHostState {
    shared: Arc<NodeShared>,
    run_id: String,
    origin: String,
    subtask: String,
    reply: Option<RpcReplyPort<Wire<RunEnded>>>,
    journals: TaskJournals,
    cancel: CancellationToken,
    _permit: OwnedSemaphorePermit,
}

impl RunHostState {
    fn answer(&mut self, ended: RunEnded) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        let (status, rounds) = match &ended {
            RunEnded::Finished { outcome, .. } => {
                (outcome.status.as_str().to_string(), outcome.rounds)
            }
            RunEnded::Crashed(why) => (format!("crashed: {why}"), self.rounds()),
            RunEnded::Rejected(why) => (format!("rejected: {why}"), 0),
        };
        self.shared.emit(NodeEvent::Ended {
            subtask: self.subtask.clone(),
            status,
            rounds,
        });
        // Recorded before the send, so that the confirmation cannot
        // arrive first.
        self.shared
            .unconfirmed
            .insert(self.run_id.clone(), self.origin.clone());
        if reply.send(Wire::new(ended)).is_err() {
            self.shared.unconfirmed.remove(&self.run_id);
            tracing::debug!("the planner of run {} no longer waits", self.run_id);
        }
    }

    fn rounds(&self) -> u32 {
        self.journals
            .get(&self.subtask)
            .map_or(0, |r| r.len() as u32)
    }
}

impl Actor for RunHost {
    type Msg = RunHostMsg;
    type State = RunHostState;
    type Arguments = RunHostArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RunHostMsg>,
        args: RunHostArgs,
    ) -> Result<RunHostState, ActorProcessingErr> {
        let RunHostArgs {
            shared,
            request,
            reply,
            cancel,
            permit,
        } = args;
        let mut state = RunHostState {
            shared: Arc::clone(&shared),
            run_id: request.run_id.clone(),
            origin: request.origin.clone(),
            subtask: request.subtask.id.clone(),
            reply: Some(reply),
            journals: TaskJournals::default(),
            cancel: cancel.clone(),
            _permit: permit,
        };
        // The pool checked that the role exists; it can only have been
        // removed since by a library user.
        let Some(role) = shared.roles.get(&request.subtask.role) else {
            state.answer(RunEnded::Rejected(format!(
                "role `{}` is gone",
                request.subtask.role
            )));
            return Err("role gone".into());
        };
        // Questions go to the planner's approver and calls count against
        // the task's budget, through the planner's desk.
        let link = DeskLink::new(&request.origin, &request.run_id);
        let approvals = request.approvals.as_ref().map(|a| {
            Approvals::new(
                a.policy.clone(),
                Arc::new(DeskApprover(link.clone())),
                std::time::Duration::from_millis(a.timeout_ms),
            )
        });
        let mut llm = shared.models.for_role(role.model.as_deref());
        if request.budgeted {
            llm = SpendingLlm::wrap(llm, link);
        }
        let args = ExecutorArgs {
            report_to: myself.get_derived(),
            task: 0,
            llm,
            role,
            toolbox: Arc::clone(&shared.toolbox),
            journals: Arc::clone(&state.journals),
            cancel,
            faults: Faults::none(),
            memory: None,
            events: None,
            approvals,
            // Counted at the planner (the spends above); it stops the run.
            budget: None,
            // The rounds go back to the planner's node with the outcome.
            report_journal: true,
        };
        shared.emit(NodeEvent::Started {
            subtask: request.subtask.id.clone(),
            role: request.subtask.role.clone(),
            origin: request.origin.clone(),
            attempt: request.attempt,
        });
        let run = SubtaskRun {
            subtask: request.subtask,
            goal: request.goal,
            limits: Limits {
                steer: request.limits.steer.overlaid(&shared.steer),
                ..request.limits
            },
            history: request.history,
            attempt: request.attempt,
            trace_context: request.trace_context,
        };
        match Actor::spawn_linked(None, Executor, args, myself.get_cell()).await {
            Ok((executor, _)) => {
                if let Err(e) = executor.send_message(ExecutorMsg::Run(Box::new(run))) {
                    state.answer(RunEnded::Crashed(format!(
                        "executor did not take the run: {e}"
                    )));
                }
                Ok(state)
            }
            Err(e) => {
                state.answer(RunEnded::Crashed(format!("executor could not start: {e}")));
                Err(e.into())
            }
        }
    }

    async fn handle(
        &self,
        myself: ActorRef<RunHostMsg>,
        message: RunHostMsg,
        state: &mut RunHostState,
    ) -> Result<(), ActorProcessingErr> {
        let RunHostMsg::Report(mut report) = message;
        // The executor drops its journal mirror once it has reported: the
        // rounds travel beside the outcome (which does not serialize them).
        let journal = std::mem::take(&mut report.outcome.journal);
        state.answer(RunEnded::Finished {
            outcome: report.outcome,
            journal,
        });
        myself.stop(Some("run ended".into()));
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RunHostMsg>,
        event: SupervisionEvent,
        state: &mut RunHostState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(_, error) => {
                state.answer(RunEnded::Crashed(error.to_string()));
                myself.stop(Some("executor crashed".into()));
            }
            SupervisionEvent::ActorTerminated(_, _, reason) => {
                if state.reply.is_some() {
                    let why = reason.unwrap_or_else(|| "no reason".into());
                    state.answer(RunEnded::Crashed(format!(
                        "executor stopped without reporting ({why})"
                    )));
                }
                myself.stop(Some("executor ended".into()));
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<RunHostMsg>,
        state: &mut RunHostState,
    ) -> Result<(), ActorProcessingErr> {
        // Children are not stopped with their supervisor in ractor.
        myself.stop_children(Some("run ended".into()));
        state.cancel.cancel();
        state.shared.runs.remove(&state.run_id);
        Ok(())
    }
}

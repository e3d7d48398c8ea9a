//! The Executor actor: a thin, supervised shell around one Hermes loop.
//!
//! It receives one `SubtaskRun`, runs the loop in a task it owns (so its
//! mailbox stays free for `Cancel`), mirrors every round into the shared
//! journal the planner restarts from, and reports exactly one outcome to the
//! planner. A panic inside the loop is turned into a failure of this actor,
//! so the planner's supervision sees it as `ActorFailed`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use dashmap::DashMap;
use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;

use super::faults::Faults;
use super::messages::{ExecutorMsg, PlannerMsg, SubtaskOutcome, SubtaskRun, TaskId};
use super::roles::Role;
use crate::agent::{Agent, StopStatus};
use crate::journal::JournalEntry;
use crate::llm::Llm;
use crate::text::panic_message;
use crate::tools::Toolbox;

/// Rounds of every running subtask, keyed by (task, subtask): the journal a
/// restarted executor resumes from.
pub type SharedJournals = Arc<DashMap<(TaskId, String), Vec<JournalEntry>>>;

/// What an executor needs to run, given when it is spawned.
pub struct ExecutorArgs {
    /// Where outcomes go.
    pub planner: ActorRef<PlannerMsg>,
    /// The role it plays.
    pub role: Role,
    /// The model for that role.
    pub llm: Arc<dyn Llm>,
    /// The role's tools.
    pub toolbox: Arc<Toolbox>,
    /// Journal mirror shared with the planner.
    pub journals: SharedJournals,
    /// Injected faults (tests).
    pub faults: Faults,
}

/// The executor's state: its arguments and the loop task, once running.
pub struct ExecutorState {
    args: ExecutorArgs,
    current: Option<(TaskId, String)>,
    loop_task: Option<JoinHandle<()>>,
}

/// Runs one subtask's loop under the planner's supervision.
pub struct Executor;

impl Actor for Executor {
    type Msg = ExecutorMsg;
    type State = ExecutorState;
    type Arguments = ExecutorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        args: ExecutorArgs,
    ) -> Result<ExecutorState, ActorProcessingErr> {
        Ok(ExecutorState {
            args,
            current: None,
            loop_task: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<ExecutorMsg>,
        message: ExecutorMsg,
        state: &mut ExecutorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ExecutorMsg::Run(run) => {
                state.current = Some((run.task, run.subtask.id.clone()));
                state.loop_task = Some(spawn_loop(myself, &state.args, *run));
            }
            ExecutorMsg::LoopEnded(Ok(outcome)) => {
                let Some((task, subtask)) = state.current.take() else {
                    return Ok(());
                };
                let outcome = SubtaskOutcome {
                    task,
                    subtask,
                    outcome: *outcome,
                };
                let message = if outcome.outcome.status == StopStatus::Finished {
                    PlannerMsg::SubtaskFinished(outcome)
                } else {
                    PlannerMsg::SubtaskFailed(outcome)
                };
                // The planner stops this actor once it has the outcome, so the
                // outcome always arrives before the termination event.
                state.args.planner.send_message(message)?;
            }
            ExecutorMsg::LoopEnded(Err(panic)) => {
                return Err(format!("executor loop crashed: {panic}").into());
            }
            ExecutorMsg::Cancel => myself.stop(Some("cancelled".into())),
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        state: &mut ExecutorState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(task) = state.loop_task.take() {
            task.abort();
        }
        Ok(())
    }
}

/// Starts the loop in its own task; its end comes back as `LoopEnded`.
fn spawn_loop(
    myself: ActorRef<ExecutorMsg>,
    args: &ExecutorArgs,
    run: SubtaskRun,
) -> JoinHandle<()> {
    let key = (run.task, run.subtask.id.clone());
    let journals = Arc::clone(&args.journals);
    journals.insert(key.clone(), run.history.clone());
    let faults = args.faults.clone();
    let on_round = Arc::new(move |entry: &JournalEntry| {
        if let Some(mut rounds) = journals.get_mut(&key) {
            rounds.push(entry.clone());
        }
        if faults.should_crash(&key.1, entry.round) {
            panic!(
                "injected crash in subtask {} after round {}",
                key.1, entry.round
            );
        }
    });
    let agent = Agent::new(Arc::clone(&args.llm), Arc::clone(&args.toolbox))
        .with_limits(run.limits.clone())
        .with_identity(args.role.system_prompt.clone())
        .for_subtask(args.role.name.clone(), run.subtask.id.clone())
        .with_trace_parent(run.trace_context.clone())
        .on_round(on_round);
    tokio::spawn(async move {
        let ended = AssertUnwindSafe(agent.resume(&run.goal, run.history))
            .catch_unwind()
            .await;
        let message = match ended {
            Ok(outcome) => ExecutorMsg::LoopEnded(Ok(Box::new(outcome))),
            Err(panic) => ExecutorMsg::LoopEnded(Err(panic_message(panic.as_ref()))),
        };
        // The actor may already be gone (cancelled); nothing to report then.
        let _ = myself.send_message(message);
    })
}

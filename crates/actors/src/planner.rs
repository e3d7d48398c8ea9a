//! The Planner actor: a router. It accepts tasks and roles, and hands every
//! event of a task (a plan, an executor's outcome or crash, a replan, the
//! final answer, the deadline) to that task's [`LiveTask`], which owns the
//! task's whole life cycle. Its `handle` is one line per message.
//!
//! Executors are its supervised children (`spawn_linked`); a crash arrives
//! here as a supervision event and is routed like any other event.
//! Shutdown cancels every task's token and ends each task in error.

use std::collections::HashMap;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio_util::sync::CancellationToken;

use super::config::PlannerConfig;
use super::live_task::{Cx, LiveTask};
use super::messages::{PlannerMsg, TaskEvent, TaskId, TaskRequest};
use super::report::TaskReport;
use super::roles::{Role, RoleError};

/// The planner's state: its tasks and which task each executor works for.
pub struct PlannerState {
    config: PlannerConfig,
    tasks: HashMap<TaskId, LiveTask>,
    owners: HashMap<ActorId, TaskId>,
    next_task: TaskId,
    /// Parent of every task's token: cancelled at shutdown.
    cancel: CancellationToken,
}

/// Plans tasks and supervises their executors.
pub struct Planner;

impl Actor for Planner {
    type Msg = PlannerMsg;
    type State = PlannerState;
    type Arguments = PlannerConfig;

    async fn pre_start(
        &self,
        _myself: ActorRef<PlannerMsg>,
        config: PlannerConfig,
    ) -> Result<PlannerState, ActorProcessingErr> {
        Ok(PlannerState {
            config,
            tasks: HashMap::new(),
            owners: HashMap::new(),
            next_task: 1,
            cancel: CancellationToken::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<PlannerMsg>,
        message: PlannerMsg,
        state: &mut PlannerState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            PlannerMsg::Submit { request, reply } => state.submit(&myself, request, reply),
            PlannerMsg::RegisterRole { role, reply } => drop(reply.send(state.register(role))),
            PlannerMsg::ListRoles(reply) => drop(reply.send(state.config.roles.all())),
            PlannerMsg::Task(task, event) => state.route(&myself, task, event).await,
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<PlannerMsg>,
        event: SupervisionEvent,
        state: &mut PlannerState,
    ) -> Result<(), ActorProcessingErr> {
        // Never stop the planner because a child ended (ractor's default).
        // Executors that reported were already forgotten; one still known
        // ended without reporting.
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                state
                    .executor_lost(&myself, cell.get_id(), error.to_string())
                    .await
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                let reason = format!(
                    "executor stopped without reporting ({})",
                    reason.unwrap_or_default()
                );
                state.executor_lost(&myself, cell.get_id(), reason).await
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<PlannerMsg>,
        state: &mut PlannerState,
    ) -> Result<(), ActorProcessingErr> {
        state.cancel.cancel();
        for task in state.tasks.values_mut() {
            task.abort("the planner stopped before the task ended");
        }
        Ok(())
    }
}

impl PlannerState {
    fn submit(
        &mut self,
        myself: &ActorRef<PlannerMsg>,
        request: TaskRequest,
        reply: RpcReplyPort<TaskReport>,
    ) {
        let id = self.next_task;
        self.next_task += 1;
        let mut cx = Cx {
            myself,
            config: &self.config,
            owners: &mut self.owners,
        };
        let task = LiveTask::start(&mut cx, id, request, reply, self.cancel.child_token());
        self.tasks.insert(id, task);
    }

    fn register(&self, role: Role) -> Result<(), RoleError> {
        self.config
            .roles
            .register(role, &self.config.toolbox.names())
    }

    /// Hands `event` to its task; forgets the task once it has replied.
    async fn route(&mut self, myself: &ActorRef<PlannerMsg>, id: TaskId, event: TaskEvent) {
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let mut cx = Cx {
            myself,
            config: &self.config,
            owners: &mut self.owners,
        };
        task.on_event(&mut cx, event).await;
        self.forget_if_done(id);
    }

    /// An executor failed or stopped before its outcome arrived.
    async fn executor_lost(&mut self, myself: &ActorRef<PlannerMsg>, actor: ActorId, why: String) {
        let Some(id) = self.owners.remove(&actor) else {
            return;
        };
        let Some(task) = self.tasks.get_mut(&id) else {
            return;
        };
        let mut cx = Cx {
            myself,
            config: &self.config,
            owners: &mut self.owners,
        };
        task.on_crashed(&mut cx, actor, why).await;
        self.forget_if_done(id);
    }

    fn forget_if_done(&mut self, id: TaskId) {
        if self.tasks.get(&id).is_some_and(LiveTask::is_done) {
            self.tasks.remove(&id);
            self.owners.retain(|_, task| *task != id);
        }
    }
}

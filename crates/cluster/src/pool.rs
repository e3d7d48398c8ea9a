//! The worker side: one `Pool` actor per role a node serves. A pool is the
//! only actor a node exposes to other nodes; it joins `hermes.role.<role>`,
//! answers `Describe`, and turns each `Run` into a local, supervised
//! [`RunHost`](super::run_host::RunHost) once the node has a free slot.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio_util::sync::CancellationToken;

use super::events::NodeEvent;
use super::run_host::{RunHost, RunHostArgs};
use super::shared::{NodeShared, RunEntry};
use super::wire::{role_group, PoolMsg, RunEnded, RunRequest, Wire, PROTOCOL};
use hermes_core::agent::{Outcome, StopStatus};

/// What a pool is started with.
pub struct PoolArgs {
    /// The node's shared state.
    pub shared: Arc<NodeShared>,
    /// The role it serves.
    pub role: String,
}

/// Accepts runs of one role for its node.
pub struct Pool;

impl Actor for Pool {
    type Msg = PoolMsg;
    type State = PoolArgs;
    type Arguments = PoolArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<PoolMsg>,
        args: PoolArgs,
    ) -> Result<PoolArgs, ActorProcessingErr> {
        ractor::pg::join(role_group(&args.role), vec![myself.get_cell()]);
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<PoolMsg>,
        message: PoolMsg,
        state: &mut PoolArgs,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            PoolMsg::Describe(reply) => drop(reply.send(Wire::new(state.shared.info(&state.role)))),
            PoolMsg::Run(Wire(Ok(request)), reply) => accept(&myself, state, request, reply),
            PoolMsg::Run(Wire(Err(why)), reply) => refuse(&state.shared, "?", why, reply),
            PoolMsg::Cancel(run_id) => {
                if let Some(run) = state.shared.runs.get(&run_id) {
                    run.cancel.cancel();
                }
            }
            PoolMsg::Received(run_id) => drop(state.shared.unconfirmed.remove(&run_id)),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<PoolMsg>,
        _event: SupervisionEvent,
        _state: &mut PoolArgs,
    ) -> Result<(), ActorProcessingErr> {
        // A run host answers for its own run, crash included; never stop
        // the pool because one ended (ractor's default).
        Ok(())
    }
}

fn refuse(shared: &NodeShared, subtask: &str, reason: String, reply: RpcReplyPort<Wire<RunEnded>>) {
    shared.emit(NodeEvent::Rejected {
        subtask: subtask.to_string(),
        reason: reason.clone(),
    });
    let _ = reply.send(Wire::new(RunEnded::Rejected(reason)));
}

/// Why this pool will not run `request`, if it will not.
fn refusal(state: &PoolArgs, request: &RunRequest) -> Option<String> {
    let shared = &state.shared;
    if request.protocol != PROTOCOL {
        return Some(format!(
            "protocol {} (node {} speaks {PROTOCOL})",
            request.protocol, shared.name
        ));
    }
    if shared.draining.load(Ordering::Relaxed) {
        return Some(format!("node {} is draining", shared.name));
    }
    if request.subtask.role != state.role || shared.roles.get(&state.role).is_none() {
        return Some(format!(
            "node {} has no role `{}` here",
            shared.name, request.subtask.role
        ));
    }
    if shared.runs.contains_key(&request.run_id) {
        return Some(format!("run {} is already here", request.run_id));
    }
    None
}

fn accept(
    myself: &ActorRef<PoolMsg>,
    state: &PoolArgs,
    request: RunRequest,
    reply: RpcReplyPort<Wire<RunEnded>>,
) {
    if let Some(reason) = refusal(state, &request) {
        return refuse(&state.shared, &request.subtask.id, reason, reply);
    }
    let shared = Arc::clone(&state.shared);
    let cancel = CancellationToken::new();
    shared.runs.insert(
        request.run_id.clone(),
        RunEntry {
            origin: request.origin.clone(),
            cancel: cancel.clone(),
        },
    );
    shared.queued.fetch_add(1, Ordering::Relaxed);
    let pool = myself.get_cell();
    tokio::spawn(async move {
        let permit = tokio::select! {
            permit = Arc::clone(&shared.slots).acquire_owned() => permit.ok(),
            _ = cancel.cancelled() => None,
        };
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        let Some(permit) = permit else {
            // Cancelled (or the node closed) before a slot was free.
            shared.runs.remove(&request.run_id);
            let outcome = Outcome::from_journal(
                &request.goal.text(),
                StopStatus::Cancelled,
                request.history,
                Default::default(),
                None,
            );
            let _ = reply.send(Wire::new(RunEnded::Finished {
                outcome: Box::new(outcome),
                journal: Vec::new(),
            }));
            return;
        };
        let run_id = request.run_id.clone();
        let args = RunHostArgs {
            shared: Arc::clone(&shared),
            request,
            reply,
            cancel,
            permit,
        };
        if let Err(e) = Actor::spawn_linked(None, RunHost, args, pool).await {
            // The reply port went down with the arguments; the caller sees
            // the dropped port as a lost node and retries elsewhere.
            tracing::warn!("run {run_id} could not start: {e}");
            shared.runs.remove(&run_id);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use std::sync::atomic::{AtomicBool, AtomicU32};

    use dashmap::DashMap;
    use tokio::sync::Semaphore;

    use super::*;
    use hermes_actors::plan::PlannedSubtask;
    use hermes_actors::roles::parse_role;
    use hermes_actors::{Models, RoleRegistry};
    use hermes_core::agent::steer::Steers;
    use hermes_core::limits::Limits;
    use hermes_core::llm::ScriptedLlm;
    use hermes_core::tools::Toolbox;

    fn shared() -> Arc<NodeShared> {
        let roles = RoleRegistry::new();
        let role = parse_role(
            "name = \"pool_test_role\"\ndescription = \"Reads.\"\nsystem_prompt = \"You read.\"\ntools = []\n",
        )
        .unwrap();
        roles.register(role, &[]).unwrap();
        Arc::new(NodeShared {
            name: "n1".into(),
            capacity: 2,
            slots: Arc::new(Semaphore::new(2)),
            runs: DashMap::new(),
            unconfirmed: DashMap::new(),
            queued: AtomicU32::new(0),
            draining: AtomicBool::new(false),
            roles,
            models: Models::new(Arc::new(ScriptedLlm::new(Vec::<String>::new()))),
            toolbox: Arc::new(Toolbox::new()),
            steer: Steers::default(),
            events: None,
        })
    }

    fn request(protocol: u32, role: &str) -> RunRequest {
        RunRequest {
            protocol,
            run_id: "r1".into(),
            origin: "p@127.0.0.1".into(),
            subtask: PlannedSubtask {
                id: "s1".into(),
                role: role.into(),
                goal: "g".into(),
                outputs: vec![],
                depends_on: vec![],
            },
            goal: "g".into(),
            limits: Limits::default(),
            attempt: 0,
            history: vec![],
            trace_context: HashMap::new(),
            approvals: None,
            budgeted: false,
        }
    }

    async fn run(pool: &ActorRef<PoolMsg>, payload: Wire<RunRequest>) -> RunEnded {
        match ractor::call_t!(pool, |port| PoolMsg::Run(payload, port), 2_000) {
            Ok(Wire(Ok(ended))) => ended,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn runs_it_cannot_take_are_rejected_with_the_reason() {
        let shared = shared();
        let args = PoolArgs {
            shared: Arc::clone(&shared),
            role: "pool_test_role".into(),
        };
        let (pool, _) = Actor::spawn(None, Pool, args).await.unwrap();
        let info = ractor::call_t!(pool, PoolMsg::Describe, 1_000)
            .unwrap()
            .0
            .unwrap();
        assert_eq!(
            (info.node.as_str(), info.capacity, info.running),
            ("n1", 2, 0)
        );

        let rejected = |ended: RunEnded| match ended {
            RunEnded::Rejected(why) => why,
            other => panic!("{other:?}"),
        };
        let why = rejected(run(&pool, Wire::new(request(999, "pool_test_role"))).await);
        assert!(why.contains("protocol 999"), "{why}");
        let why = rejected(run(&pool, Wire::new(request(PROTOCOL, "other"))).await);
        assert!(why.contains("no role `other`"), "{why}");
        let why = rejected(run(&pool, Wire(Err("undecodable RunRequest".into()))).await);
        assert!(why.contains("undecodable"), "{why}");
        shared.draining.store(true, Ordering::Relaxed);
        let why = rejected(run(&pool, Wire::new(request(PROTOCOL, "pool_test_role"))).await);
        assert!(why.contains("draining"), "{why}");
        // Unknown ids are ignored; the pool keeps answering.
        pool.cast(PoolMsg::Cancel("nope".into())).unwrap();
        assert!(ractor::call_t!(pool, PoolMsg::Describe, 1_000).is_ok());
        pool.stop(None);
    }
}

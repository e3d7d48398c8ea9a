//! What crosses nodes: the pool gateway's messages and their payloads.
//!
//! Every payload is a plain serde type wrapped in [`Wire`], whose
//! `BytesConvertable` is JSON. A payload that does not decode (another
//! protocol version, a damaged frame) becomes `Wire(Err(reason))` on the
//! receiving side instead of a panic, so the pool can answer `Rejected`
//! and the planner can fail the subtask with the reason.

use std::collections::HashMap;

use ractor::{BytesConvertable, RpcReplyPort};
use ractor_cluster::RactorClusterMessage;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use hermes_actors::plan::PlannedSubtask;
use hermes_core::agent::{Goal, Outcome};
use hermes_core::approval::{ApprovalPolicy, ApprovalRequest, Verdict};
use hermes_core::journal::JournalEntry;
use hermes_core::limits::Limits;

/// Version of the messages below; a pool refuses a run of another version.
/// (3: runs carry the planner's approval rules and budget, and nodes ask
/// the planner's desk; 4: planners confirm each answer with
/// `PoolMsg::Received`, which a draining node waits for.)
pub const PROTOCOL: u32 = 4;

/// The process group every pool serving `role` joins.
pub fn role_group(role: &str) -> String {
    format!("hermes.role.{role}")
}

/// The process group of the desk of the planner whose identity is
/// `origin` (`name@host`): where its remote runs ask for approvals and
/// count their model calls.
pub fn desk_group(origin: &str) -> String {
    format!("hermes.desk.{origin}")
}

/// A serde payload as it travels between nodes (JSON), or why it did not
/// decode.
#[derive(Debug, Clone)]
pub struct Wire<T>(pub Result<T, String>);

impl<T> Wire<T> {
    /// A payload to send.
    pub fn new(value: T) -> Self {
        Self(Ok(value))
    }
}

impl<T: Serialize + DeserializeOwned + Send + 'static> BytesConvertable for Wire<T> {
    fn into_bytes(self) -> Vec<u8> {
        match self.0 {
            // Encoding these types cannot fail (string keys only); an empty
            // frame would decode to an error on the other side anyway.
            Ok(value) => serde_json::to_vec(&value).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "undecodable {} ({e})",
                std::any::type_name::<T>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("payload")
            )
        }))
    }
}

/// One subtask for a remote pool to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    /// [`PROTOCOL`] of the sender.
    pub protocol: u32,
    /// Unique per attempt; `PoolMsg::Cancel` names it.
    pub run_id: String,
    /// The sending node (`name@host`): its runs are cancelled when it leaves.
    pub origin: String,
    /// The subtask as planned (its role picks the pool).
    pub subtask: PlannedSubtask,
    /// The goal given to the loop: the subtask's work and what frames it.
    pub goal: Goal,
    /// Limits for the loop.
    pub limits: Limits,
    /// 0 for the first attempt, 1 for the retry.
    pub attempt: u32,
    /// Rounds already done, when a run resumes.
    pub history: Vec<JournalEntry>,
    /// W3C trace context of the subtask span (`traceparent`, `tracestate`),
    /// so the remote `executor.run` span joins the task's trace.
    pub trace_context: HashMap<String, String>,
    /// The planner's approval rules, when it has someone to ask: the
    /// node adds its role's rules and asks the planner's desk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<RemoteApprovals>,
    /// Whether the task has a token or call budget: the node then reports
    /// each model call's tokens to the planner's desk.
    #[serde(default)]
    pub budgeted: bool,
}

/// The approval settings a planner sends with a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteApprovals {
    /// The command line's rules.
    pub policy: ApprovalPolicy,
    /// How long a call waits for its answer, in milliseconds.
    pub timeout_ms: u64,
}

/// A remote run's approval question, sent to its planner's desk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeskQuestion {
    /// The run asking ([`RunRequest::run_id`]).
    pub run_id: String,
    /// The call.
    pub request: ApprovalRequest,
}

/// Tokens one model call of a remote run spent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeskSpend {
    /// The run ([`RunRequest::run_id`]).
    pub run_id: String,
    /// Prompt + completion tokens (0 for a failed call: it still counts
    /// as a call).
    pub tokens: u64,
}

/// How a remote run ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RunEnded {
    /// The loop ended (finished, stopped by a guard, or cancelled).
    Finished {
        /// Its outcome.
        outcome: Box<Outcome>,
        /// Its rounds (the outcome's journal does not serialize).
        journal: Vec<JournalEntry>,
    },
    /// The executor crashed (the worker does not restart it: the planner
    /// decides where the retry runs).
    Crashed(String),
    /// The pool did not run it (unknown role, other protocol, draining).
    Rejected(String),
}

/// What a pool says about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolInfo {
    /// [`PROTOCOL`] of the pool.
    pub protocol: u32,
    /// The node's name (as given by `--name`).
    pub node: String,
    /// The role this pool serves.
    pub role: String,
    /// Most subtasks the node runs at once (over all its pools).
    pub capacity: u32,
    /// Subtasks running on the node now.
    pub running: u32,
    /// Subtasks waiting for a free slot on the node.
    pub queued: u32,
}

/// The messages a pool takes from other nodes. Pools are the only actors a
/// node exposes; everything else stays local.
// One `Run` per subtask, moved once: boxing it would only add an allocation
// (and `Box<Wire<_>>` would need its own BytesConvertable).
#[allow(clippy::large_enum_variant)]
#[derive(RactorClusterMessage)]
pub enum PoolMsg {
    /// Who the pool is and how busy its node is.
    #[rpc]
    Describe(RpcReplyPort<Wire<PoolInfo>>),
    /// Run a subtask; the reply comes when its loop ends.
    #[rpc]
    Run(Wire<RunRequest>, RpcReplyPort<Wire<RunEnded>>),
    /// Stop the run with this id (its loop ends `cancelled`); unknown ids
    /// are ignored.
    Cancel(String),
    /// The planner got the answer of the run with this id. A draining node
    /// waits for these before it exits: stopping the node aborts its
    /// sessions' writers, and an answer still queued there would be lost
    /// (the planner would then run the subtask again elsewhere).
    Received(String),
}

/// The messages a planner's desk takes from the nodes running its
/// subtasks: the one way back from a node to a planner besides a run's
/// answer.
// A question is sent once and moved: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(RactorClusterMessage)]
pub enum DeskMsg {
    /// Ask whoever answers the planner's approval questions (a terminal,
    /// `hermes serve`'s HTTP API, a policy); the reply is the verdict.
    #[rpc]
    Ask(Wire<DeskQuestion>, RpcReplyPort<Wire<Verdict>>),
    /// Count a model call against the task's budget.
    Spend(Wire<DeskSpend>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::agent::StopStatus;

    #[test]
    fn payloads_round_trip_and_garbage_becomes_an_error() {
        let request = RunRequest {
            protocol: PROTOCOL,
            run_id: "r1".into(),
            origin: "planner@127.0.0.1".into(),
            subtask: PlannedSubtask {
                id: "s1".into(),
                role: "analyst".into(),
                goal: "count rows".into(),
                outputs: vec![],
                depends_on: vec![],
            },
            goal: "count rows".into(),
            limits: Limits::default(),
            attempt: 1,
            history: vec![],
            trace_context: HashMap::from([("traceparent".into(), "00-ab-cd-01".into())]),
            approvals: Some(RemoteApprovals {
                policy: ApprovalPolicy::new(vec![hermes_core::approval::ApprovalRule::parse_flag(
                    "write_file:unless_path=out/**",
                )
                .unwrap()])
                .after_untrusted(true),
                timeout_ms: 1_500,
            }),
            budgeted: true,
        };
        let back = Wire::<RunRequest>::from_bytes(Wire::new(request).into_bytes())
            .0
            .unwrap();
        assert_eq!(back.run_id, "r1");
        assert_eq!(back.limits, Limits::default());
        assert_eq!(back.trace_context["traceparent"], "00-ab-cd-01");
        let approvals = back.approvals.unwrap();
        assert_eq!(approvals.timeout_ms, 1_500);
        assert!(approvals
            .policy
            .needs("write_file", &serde_json::json!({"path": "a.txt"})));
        assert!(!approvals
            .policy
            .needs("write_file", &serde_json::json!({"path": "out/a.txt"})));
        assert!(back.budgeted);

        let outcome = Outcome::failed("g", "boom");
        let ended = RunEnded::Finished {
            outcome: Box::new(outcome),
            journal: vec![],
        };
        match Wire::<RunEnded>::from_bytes(Wire::new(ended).into_bytes()).0 {
            Ok(RunEnded::Finished { outcome, .. }) => {
                assert_eq!(outcome.status, StopStatus::Error);
                assert_eq!(outcome.error.as_deref(), Some("boom"));
            }
            other => panic!("{other:?}"),
        }

        let garbage = Wire::<RunRequest>::from_bytes(b"{not json".to_vec()).0;
        assert!(garbage.unwrap_err().contains("undecodable RunRequest"));
    }

    #[test]
    fn pool_messages_serialize_through_ractor() {
        use ractor::Message;
        let cancel = PoolMsg::Cancel("r9".into());
        let bytes = cancel.serialize().expect("serializable");
        match PoolMsg::deserialize(bytes).expect("decodes") {
            PoolMsg::Cancel(id) => assert_eq!(id, "r9"),
            _ => panic!("wrong variant"),
        }
    }
}

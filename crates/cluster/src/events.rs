//! What a worker node reports: one line per peer change and one per
//! subtask it starts and ends.

use std::fmt;
use std::sync::Arc;

/// Receives a node's events (the CLI prints them on stderr).
pub type NodeEventSink = Arc<dyn Fn(&NodeEvent) + Send + Sync>;

/// Something a worker node did or saw.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeEvent {
    /// The node listens and its pools joined their groups.
    Listening {
        /// `--name`.
        name: String,
        /// The address it listens on.
        addr: String,
        /// The roles it serves.
        roles: Vec<String>,
        /// Most subtasks at once.
        capacity: u32,
        /// Whether sessions use TLS.
        tls: bool,
    },
    /// A peer proved the cookie.
    PeerJoined {
        /// Its `name@host`.
        peer: String,
        /// Its address.
        addr: String,
    },
    /// An authenticated peer left; its runs here were cancelled.
    PeerLeft {
        /// Its `name@host`.
        peer: String,
        /// Runs of that peer that were cancelled.
        cancelled: usize,
    },
    /// A peer was refused before it proved the cookie.
    PeerRefused {
        /// Its address.
        addr: String,
        /// The name it claimed, if any (unverified).
        claimed: Option<String>,
    },
    /// A subtask started on an executor here.
    Started {
        /// The subtask id.
        subtask: String,
        /// Its role.
        role: String,
        /// The planner node that sent it.
        origin: String,
        /// 0 for a first attempt.
        attempt: u32,
    },
    /// A subtask's loop ended here.
    Ended {
        /// The subtask id.
        subtask: String,
        /// `finished`, `max_rounds`, … or `crashed: …`.
        status: String,
        /// Rounds it ran.
        rounds: u32,
    },
    /// A run was refused.
    Rejected {
        /// The subtask id (or `?` when the request did not decode).
        subtask: String,
        /// Why.
        reason: String,
    },
    /// SIGTERM (or `Node::drain`): no new runs; waiting for running ones.
    Draining {
        /// Runs still going.
        running: usize,
        /// How long they get.
        secs: u64,
    },
    /// Draining ended; `cut` runs were still going and were cancelled.
    Drained {
        /// Runs cancelled at the end of the drain.
        cut: usize,
    },
}

impl fmt::Display for NodeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeEvent::Listening {
                name,
                addr,
                roles,
                capacity,
                tls,
            } => write!(
                f,
                "node {name} listening on {addr}{} for roles {} (capacity {capacity})",
                if *tls { " (TLS)" } else { "" },
                roles.join(", ")
            ),
            NodeEvent::PeerJoined { peer, addr } => write!(f, "peer {peer} joined from {addr}"),
            NodeEvent::PeerLeft { peer, cancelled } => {
                write!(f, "peer {peer} left; cancelled {cancelled} of its run(s)")
            }
            NodeEvent::PeerRefused { addr, claimed } => write!(
                f,
                "refused a peer at {addr}{}: it did not prove the cookie (wrong --cookie?)",
                claimed
                    .as_deref()
                    .map(|c| format!(" claiming to be {c}"))
                    .unwrap_or_default()
            ),
            NodeEvent::Started {
                subtask,
                role,
                origin,
                attempt,
            } => write!(
                f,
                "started  {subtask} ({role}) for {origin}{}",
                if *attempt > 0 { ", retry" } else { "" }
            ),
            NodeEvent::Ended {
                subtask,
                status,
                rounds,
            } => write!(f, "ended    {subtask}: {status} after {rounds} round(s)"),
            NodeEvent::Rejected { subtask, reason } => write!(f, "rejected {subtask}: {reason}"),
            NodeEvent::Draining { running, secs } => write!(
                f,
                "draining: no new subtasks; waiting up to {secs} s for {running} running"
            ),
            NodeEvent::Drained { cut } => match cut {
                0 => write!(f, "drained: every subtask ended"),
                n => write!(f, "drained: cancelled {n} subtask(s) still running"),
            },
        }
    }
}

//! Node events as a stream: who connected, who proved the cookie, who left,
//! and who was refused before proving it.
//!
//! ractor_cluster calls a `NodeEventSubscription` synchronously inside its
//! `NodeServer` actor; [`subscribe`] forwards each call into a channel so
//! that plain async code (the node's and the planner's bookkeeping) reads
//! them in order.

use std::collections::HashSet;

use ractor::ActorRef;
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServerMessage, NodeSessionMessage};
use tokio::sync::mpsc;

/// One session with a peer node, as its events describe it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Per-`NodeServer` session number (not a stable identity).
    pub node_id: u64,
    /// The peer's `name@host`, once it said it (verified only after
    /// authentication).
    pub name: Option<String>,
    /// The peer's socket address (`ip:port`).
    pub addr: String,
    /// Whether this side dialed it.
    pub dialed: bool,
    /// The session actor; stopping it drops the connection.
    pub session: ActorRef<NodeSessionMessage>,
}

impl Peer {
    /// The peer's node name without `@host`, or its address if unnamed.
    pub fn short_name(&self) -> String {
        match &self.name {
            Some(name) => node_name(name).to_string(),
            None => self.addr.clone(),
        }
    }
}

/// `name` of a `name@host` identity.
pub fn node_name(identity: &str) -> &str {
    identity.split('@').next().unwrap_or(identity)
}

impl From<&NodeServerSessionInformation> for Peer {
    fn from(s: &NodeServerSessionInformation) -> Self {
        Self {
            node_id: s.node_id,
            name: s.peer_name.as_ref().map(|n| n.name.clone()),
            addr: s.peer_addr.clone(),
            dialed: !s.is_server,
            session: s.actor.clone(),
        }
    }
}

/// What happened to a session.
#[derive(Debug, Clone)]
pub enum PeerEvent {
    /// The peer proved the cookie and both sides exchanged their actors and
    /// groups: its pools are visible now.
    Ready(Peer),
    /// The session ended after authentication.
    Left(Peer),
    /// The session ended before the peer proved the cookie (wrong cookie,
    /// or not a Hermes node).
    Refused(Peer),
}

enum Raw {
    Authenticated(Peer),
    Ready(Peer),
    Disconnected(Peer),
}

struct Forward(mpsc::UnboundedSender<Raw>);

impl NodeEventSubscription for Forward {
    fn node_session_opened(&self, _: NodeServerSessionInformation) {}
    fn node_session_authenticated(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(Raw::Authenticated((&s).into()));
    }
    fn node_session_ready(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(Raw::Ready((&s).into()));
    }
    fn node_session_disconnected(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(Raw::Disconnected((&s).into()));
    }
}

/// Subscribes to `node`'s session events under `id`; the receiver yields
/// [`PeerEvent`]s until the node stops.
pub fn subscribe(
    node: &ActorRef<NodeServerMessage>,
    id: &str,
) -> Result<mpsc::UnboundedReceiver<PeerEvent>, String> {
    let (raw_tx, mut raw_rx) = mpsc::unbounded_channel();
    node.cast(NodeServerMessage::SubscribeToEvents {
        id: id.to_string(),
        subscription: Box::new(Forward(raw_tx)),
    })
    .map_err(|e| format!("cannot watch the node's sessions: {e}"))?;
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut authenticated = HashSet::new();
        while let Some(raw) = raw_rx.recv().await {
            let event = match raw {
                Raw::Authenticated(peer) => {
                    authenticated.insert(peer.session.get_id());
                    continue;
                }
                Raw::Ready(peer) => PeerEvent::Ready(peer),
                Raw::Disconnected(peer) if authenticated.remove(&peer.session.get_id()) => {
                    PeerEvent::Left(peer)
                }
                Raw::Disconnected(peer) => PeerEvent::Refused(peer),
            };
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

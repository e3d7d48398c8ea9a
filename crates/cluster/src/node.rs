//! A worker node: a `NodeServer` that other Hermes processes dial, and one
//! [`Pool`] per role it serves. Embed one with [`Node::builder`]; the CLI's
//! `hermes node` is a thin shell over it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use ractor::{Actor, ActorRef};
use ractor_cluster::node::NodeConnectionMode;
use ractor_cluster::{IncomingEncryptionMode, NodeServer, NodeServerMessage};
use tokio::sync::Semaphore;

use super::events::{NodeEvent, NodeEventSink};
use super::peers::{self, PeerEvent};
use super::pool::{Pool, PoolArgs};
use super::shared::NodeShared;
use super::tls::{self, TlsFiles};
use super::wire::{role_group, PoolMsg};
use super::ClusterError;
use hermes_actors::{Models, RoleRegistry};
use hermes_core::agent::steer::Steers;
use hermes_core::llm::Llm;
use hermes_core::tools::Toolbox;

/// Default for `--capacity`: subtasks a node runs at once.
pub const DEFAULT_CAPACITY: u32 = 4;
/// Longest a drain waits for the planners to confirm the answers sent
/// (`PoolMsg::Received`) before the node stops.
pub const CONFIRM_WAIT: Duration = Duration::from_secs(5);
/// Largest frame a node accepts (a run carries its goal and history).
pub const MAX_FRAME_BYTES: u64 = 64 << 20;

/// Sets up a worker node.
pub struct NodeBuilder {
    listen: Option<SocketAddr>,
    cookie: String,
    name: Option<String>,
    roles: RoleRegistry,
    llm: Option<Arc<dyn Llm>>,
    models: Option<Models>,
    toolbox: Toolbox,
    capacity: u32,
    steer: Steers,
    tls: TlsFiles,
    events: Option<NodeEventSink>,
}

impl NodeBuilder {
    /// Where to listen (`HOST:PORT`, required; the port must not be 0).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = Some(addr);
        self
    }
    /// The shared secret every node and planner of the cluster uses (required).
    pub fn cookie(mut self, cookie: impl Into<String>) -> Self {
        self.cookie = cookie.into();
        self
    }
    /// The node's name in reports (default `node-<port>`); no `@`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// The roles this node serves (one pool each; at least one).
    pub fn roles(mut self, roles: RoleRegistry) -> Self {
        self.roles = roles;
        self
    }
    /// The model every role without its own model uses.
    pub fn llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = Some(llm);
        self
    }
    /// Models per role (instead of [`NodeBuilder::llm`]).
    pub fn models(mut self, models: Models) -> Self {
        self.models = Some(models);
        self
    }
    /// The node's tools (each role gets its subset).
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = toolbox;
        self
    }
    /// Most subtasks at once over all roles (default [`DEFAULT_CAPACITY`]);
    /// more wait for a slot.
    pub fn capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity;
        self
    }
    /// Steer switches the node sets on every run it takes, over what the
    /// planner sent (`hermes node --steer`).
    pub fn steers(mut self, steers: Steers) -> Self {
        self.steer = steers;
        self
    }
    /// TLS: certificate and key, and a CA to require client certificates.
    pub fn tls(mut self, files: TlsFiles) -> Self {
        self.tls = files;
        self
    }
    /// Receives the node's events.
    pub fn on_event(mut self, sink: NodeEventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Listens, starts the pools, and returns the running node.
    pub async fn start(self) -> Result<Node, ClusterError> {
        let listen = self
            .listen
            .ok_or_else(|| ClusterError::Config("a node needs an address to listen on".into()))?;
        if listen.port() == 0 {
            return Err(ClusterError::Config(format!(
                "--listen {listen}: give a port other than 0 (planners dial it)"
            )));
        }
        super::check_cookie(&self.cookie)?;
        let name = self
            .name
            .unwrap_or_else(|| format!("node-{}", listen.port()));
        super::check_name(&name)?;
        if self.capacity == 0 {
            return Err(ClusterError::Config("--capacity must be at least 1".into()));
        }
        let roles = self.roles.all();
        if roles.is_empty() {
            return Err(ClusterError::Config(
                "the node serves no role: give --roles DIR with role files (*.toml)".into(),
            ));
        }
        let models = match (self.models, self.llm) {
            (Some(models), _) => models,
            (None, Some(llm)) => Models::new(llm),
            (None, None) => return Err(ClusterError::Config("a node needs a model".into())),
        };
        let acceptor = tls::acceptor(&self.tls).map_err(ClusterError::Config)?;
        let tls_on = acceptor.is_some();
        let server = NodeServer::new(
            listen.port(),
            self.cookie,
            name.clone(),
            listen.ip().to_string(),
            acceptor.map(IncomingEncryptionMode::Tls),
            Some(NodeConnectionMode::Isolated),
        )
        .with_listen_addr(listen.ip())
        .with_max_inbound_frame_size(MAX_FRAME_BYTES);
        let (server, _) = Actor::spawn(Some(format!("hermes.node.{name}")), server, ())
            .await
            .map_err(|e| ClusterError::Listen(listen.to_string(), e.to_string()))?;
        // A mailbox barrier: the listener is bound and its port recorded.
        let _ = ractor::call_t!(server, NodeServerMessage::GetSessions, 1_000);
        let shared = Arc::new(NodeShared {
            name: name.clone(),
            capacity: self.capacity,
            slots: Arc::new(Semaphore::new(self.capacity as usize)),
            runs: DashMap::new(),
            unconfirmed: DashMap::new(),
            queued: AtomicU32::new(0),
            draining: AtomicBool::new(false),
            roles: self.roles,
            models,
            toolbox: Arc::new(self.toolbox),
            steer: self.steer,
            events: self.events,
        });
        watch_peers(&server, &shared)?;
        let mut pools = Vec::new();
        for role in &roles {
            let args = PoolArgs {
                shared: Arc::clone(&shared),
                role: role.name.clone(),
            };
            let (pool, _) = Actor::spawn(
                Some(format!("hermes.pool.{name}.{}", role.name)),
                Pool,
                args,
            )
            .await
            .map_err(|e| ClusterError::Start(e.to_string()))?;
            pools.push((role.name.clone(), pool));
        }
        shared.emit(NodeEvent::Listening {
            name: name.clone(),
            addr: listen.to_string(),
            roles: roles.iter().map(|r| r.name.clone()).collect(),
            capacity: shared.capacity,
            tls: tls_on,
        });
        Ok(Node {
            server,
            shared,
            pools,
            addr: listen,
        })
    }
}

/// Logs peers, and cancels the runs of a planner that leaves.
fn watch_peers(
    server: &ActorRef<NodeServerMessage>,
    shared: &Arc<NodeShared>,
) -> Result<(), ClusterError> {
    let mut events = peers::subscribe(server, "hermes.node").map_err(ClusterError::Start)?;
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                PeerEvent::Ready(peer) => shared.emit(NodeEvent::PeerJoined {
                    peer: peer.name.unwrap_or_default(),
                    addr: peer.addr,
                }),
                PeerEvent::Left(peer) => {
                    let name = peer.name.unwrap_or_default();
                    let cancelled = shared.cancel_origin(&name);
                    shared.emit(NodeEvent::PeerLeft {
                        peer: name,
                        cancelled,
                    });
                }
                PeerEvent::Refused(peer) => shared.emit(NodeEvent::PeerRefused {
                    addr: peer.addr,
                    claimed: peer.name,
                }),
            }
        }
    });
    Ok(())
}

/// A running worker node.
pub struct Node {
    server: ActorRef<NodeServerMessage>,
    shared: Arc<NodeShared>,
    pools: Vec<(String, ActorRef<PoolMsg>)>,
    addr: SocketAddr,
}

impl Node {
    /// A builder: capacity [`DEFAULT_CAPACITY`], no TLS, no roles yet.
    pub fn builder() -> NodeBuilder {
        NodeBuilder {
            listen: None,
            cookie: String::new(),
            name: None,
            roles: RoleRegistry::new(),
            llm: None,
            models: None,
            toolbox: Toolbox::new(),
            capacity: DEFAULT_CAPACITY,
            steer: Steers::default(),
            tls: TlsFiles::default(),
            events: None,
        }
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Subtasks running now.
    pub fn running(&self) -> u32 {
        self.shared.running()
    }

    /// Stops taking runs (pools leave their groups and refuse new ones),
    /// waits up to `within` for running and queued subtasks to end, then
    /// cancels the rest, waits briefly for their reports, and waits up to
    /// [`CONFIRM_WAIT`] for the planners to confirm every answer.
    /// Returns how many were cancelled.
    pub async fn drain(&self, within: Duration) -> usize {
        self.shared.draining.store(true, Ordering::Relaxed);
        for (role, pool) in &self.pools {
            ractor::pg::leave(role_group(role), vec![pool.get_cell()]);
        }
        let busy = || self.shared.runs.len();
        self.shared.emit(NodeEvent::Draining {
            running: busy(),
            secs: within.as_secs(),
        });
        wait_until(|| busy() == 0, within, Duration::from_millis(50)).await;
        let cut = busy();
        for run in self.shared.runs.iter() {
            run.cancel.cancel();
        }
        // Cancelled loops report within a round; give them a moment.
        wait_until(
            || busy() == 0,
            Duration::from_secs(2),
            Duration::from_millis(20),
        )
        .await;
        // An answer is only safe once its planner confirmed it: stopping
        // the node aborts the sessions' writers with what they still hold.
        let confirmed = || self.shared.unconfirmed.is_empty();
        wait_until(confirmed, CONFIRM_WAIT, Duration::from_millis(20)).await;
        self.shared.emit(NodeEvent::Drained { cut });
        cut
    }

    /// Stops the pools and the node server (running subtasks are
    /// cancelled; call [`Node::drain`] first to let them end).
    pub async fn shutdown(self) {
        for run in self.shared.runs.iter() {
            run.cancel.cancel();
        }
        for (_, pool) in self.pools {
            let _ = pool
                .stop_and_wait(Some("node shutdown".into()), Some(Duration::from_secs(2)))
                .await;
        }
        let _ = self
            .server
            .stop_and_wait(Some("node shutdown".into()), Some(Duration::from_secs(2)))
            .await;
    }
}

/// Polls `done` every `step` until it holds or `within` has passed.
async fn wait_until(done: impl Fn() -> bool, within: Duration, step: Duration) {
    let until = tokio::time::Instant::now() + within;
    while !done() && tokio::time::Instant::now() < until {
        tokio::time::sleep(step).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_actors::roles::parse_role;
    use hermes_core::llm::ScriptedLlm;

    fn roles() -> RoleRegistry {
        let roles = RoleRegistry::new();
        let role = parse_role(
            "name = \"reader\"\ndescription = \"Reads.\"\nsystem_prompt = \"You read.\"\ntools = []\n",
        )
        .unwrap();
        roles.register(role, &[]).unwrap();
        roles
    }

    fn builder(port: u16) -> NodeBuilder {
        Node::builder()
            .listen(([127, 0, 0, 1], port).into())
            .cookie("c")
            .roles(roles())
            .llm(Arc::new(ScriptedLlm::new(Vec::<String>::new())))
    }

    async fn refusal(builder: NodeBuilder) -> String {
        match builder.start().await {
            Ok(_) => panic!("the node started"),
            Err(e) => e.to_string(),
        }
    }

    #[tokio::test]
    async fn bad_settings_are_refused_with_what_to_change() {
        assert!(refusal(builder(0))
            .await
            .contains("give a port other than 0"));
        assert!(refusal(builder(7).cookie("  ")).await.contains("--cookie"));
        assert!(refusal(builder(7).name("a@b")).await.contains("no `@`"));
        assert!(refusal(builder(7).capacity(0))
            .await
            .contains("--capacity must be at least 1"));
        assert!(refusal(builder(7).roles(RoleRegistry::new()))
            .await
            .contains("give --roles DIR"));
        let no_model = Node::builder()
            .listen(([127, 0, 0, 1], 7).into())
            .cookie("c")
            .roles(roles());
        assert!(refusal(no_model).await.contains("needs a model"));
        let half_tls = builder(7).tls(TlsFiles {
            key: Some("k.pem".into()),
            ..TlsFiles::default()
        });
        assert!(refusal(half_tls).await.contains("go together"));
    }

    #[tokio::test]
    async fn a_taken_port_is_an_error_naming_the_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let error = refusal(builder(port).name("taken")).await;
        assert!(
            error.starts_with(&format!("cannot listen on 127.0.0.1:{port}")),
            "{error}"
        );
    }
}

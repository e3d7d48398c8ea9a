//! The planner side of a cluster: a dial-only node that connects to worker
//! nodes, keeps them connected, watches their health, and picks the
//! least-loaded pool for a role.
//!
//! A worker's pools arrive through ractor's process groups once its
//! session is ready; they vanish from the groups when the session ends.
//! Dialing is retried with backoff forever, so a node that comes back is
//! used again. A node that stops answering `Describe` three times in a
//! row (frozen, partitioned) has its session dropped, which fails its runs
//! in flight at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use ractor::{Actor, ActorRef};
use ractor_cluster::node::NodeConnectionMode;
use ractor_cluster::{NodeServer, NodeServerMessage};
use tokio::sync::{broadcast, oneshot};
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

use super::desk::{Desk, DeskArgs, DeskBook};
use super::peers::{self, Peer, PeerEvent};
use super::tls::{self, TlsFiles};
use super::wire::{role_group, DeskMsg, PoolInfo, PoolMsg, Wire, PROTOCOL};
use super::ClusterError;

/// How long `Cluster::connect` waits for the first session with each node.
pub const FIRST_CONNECT_WAIT: Duration = Duration::from_secs(5);
/// Time between health checks of each node.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Missed health checks in a row after which a node's session is dropped.
pub const HEARTBEAT_MISSES: u32 = 3;
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// One thing the planner's cluster connection reports: a node connected,
/// lost, refused the cookie, or cannot be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Whether it is a problem (subtasks run locally meanwhile).
    pub warning: bool,
    /// One line.
    pub text: String,
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.warning {
            write!(f, "warning: {}", self.text)
        } else {
            f.write_str(&self.text)
        }
    }
}

/// Receives the cluster's notices.
pub type NoticeSink = Arc<dyn Fn(&Notice) + Send + Sync>;

/// How a planner joins a cluster.
#[derive(Clone, Default)]
pub struct ClusterConfig {
    /// Worker nodes to dial (`HOST:PORT`).
    pub connect: Vec<String>,
    /// The cluster's shared secret.
    pub cookie: String,
    /// TLS files (`ca` to dial nodes that use TLS).
    pub tls: TlsFiles,
    /// Where notices go (default: tracing at info/warn).
    pub notices: Option<NoticeSink>,
}

/// A remote pool picked for one subtask, counted as load on its node
/// until dropped.
pub struct PickedPool {
    /// The pool.
    pub pool: ActorRef<PoolMsg>,
    /// The node's name.
    pub node: String,
    load: Arc<AtomicUsize>,
}

impl Drop for PickedPool {
    fn drop(&mut self) {
        self.load.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Inner {
    server: ActorRef<NodeServerMessage>,
    identity: String,
    /// Where remote runs ask and spend ([`Desk`]).
    desk: ActorRef<DeskMsg>,
    /// The runs the desk answers for.
    book: DeskBook,
    /// Ready sessions by session number.
    ready: DashMap<u64, Peer>,
    /// Subtasks this planner has in flight, by node name.
    load: DashMap<String, Arc<AtomicUsize>>,
    /// Capacity each node reported, by node name.
    capacity: DashMap<String, u32>,
    turn: AtomicUsize,
    stop: CancellationToken,
    notices: Option<NoticeSink>,
}

impl Inner {
    fn notice(&self, warning: bool, text: String) {
        match &self.notices {
            Some(sink) => sink(&Notice { warning, text }),
            None if warning => tracing::warn!("{text}"),
            None => tracing::info!("{text}"),
        }
    }
}

/// A planner's connection to worker nodes. Cheap to clone.
///
/// Use one connected planner per process: ractor's process groups are per
/// process, so two planners' sessions with the same node would see each
/// other's stand-ins for its pools.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl Cluster {
    /// Starts a dial-only node, dials every address in `config.connect`
    /// and waits up to [`FIRST_CONNECT_WAIT`] for each first session. A
    /// node that cannot be reached or refuses the cookie is reported as a
    /// notice and dialed again in the background; subtasks run locally
    /// meanwhile.
    pub async fn connect(config: ClusterConfig) -> Result<Cluster, ClusterError> {
        super::check_cookie(&config.cookie)?;
        let connector = tls::connector(&config.tls).map_err(ClusterError::Config)?;
        let mut targets = Vec::new();
        for address in &config.connect {
            let name = match &connector {
                Some(_) => Some(tls::server_name(address).map_err(ClusterError::Config)?),
                None => None,
            };
            targets.push((address.clone(), name));
        }
        let name = format!("planner-{}-{}", std::process::id(), nonce());
        let host = "127.0.0.1".to_string();
        let server = NodeServer::new(
            0,
            config.cookie.clone(),
            name.clone(),
            host.clone(),
            None,
            Some(NodeConnectionMode::Isolated),
        )
        .with_listen_addr(std::net::IpAddr::from([127, 0, 0, 1]))
        .with_max_inbound_frame_size(super::node::MAX_FRAME_BYTES);
        let (server, _) = Actor::spawn(Some(format!("hermes.node.{name}")), server, ())
            .await
            .map_err(|e| ClusterError::Start(e.to_string()))?;
        let _ = ractor::call_t!(server, NodeServerMessage::GetSessions, 1_000);
        let identity = format!("{name}@{host}");
        // Joined before the first dial, so every session carries it.
        let book = DeskBook::default();
        let desk_args = DeskArgs {
            identity: identity.clone(),
            book: book.clone(),
        };
        let (desk, _) = Actor::spawn(None, Desk, desk_args)
            .await
            .map_err(|e| ClusterError::Start(e.to_string()))?;
        let inner = Arc::new(Inner {
            server,
            identity,
            desk,
            book,
            ready: DashMap::new(),
            load: DashMap::new(),
            capacity: DashMap::new(),
            turn: AtomicUsize::new(0),
            stop: CancellationToken::new(),
            notices: config.notices.clone(),
        });
        let events = track_sessions(&inner)?;
        let mut first = Vec::new();
        for (address, server_name) in targets {
            let (tx, rx) = oneshot::channel();
            let dial = Dialer {
                inner: Arc::clone(&inner),
                address,
                tls: connector.clone().zip(server_name),
                events: events.subscribe(),
            };
            tokio::spawn(dial.run(tx));
            first.push(rx);
        }
        for rx in first {
            let _ = tokio::time::timeout(FIRST_CONNECT_WAIT, rx).await;
        }
        tokio::spawn(heartbeat(Arc::clone(&inner)));
        Ok(Cluster { inner })
    }

    /// This planner's node identity (`name@host`); remote runs carry it.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The remote runs this planner's desk answers for.
    pub fn desk_book(&self) -> &DeskBook {
        &self.inner.book
    }

    /// Names of the nodes with a ready session.
    pub fn nodes(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.ready.iter().map(|p| p.short_name()).collect();
        names.sort();
        names
    }

    /// The least-loaded remote pool serving `role` (load = this planner's
    /// subtasks in flight there ÷ the node's capacity), never on `avoid`;
    /// `None` when no other node serves the role.
    pub fn pick(&self, role: &str, avoid: Option<&str>) -> Option<PickedPool> {
        let inner = &self.inner;
        let candidates: Vec<(ActorRef<PoolMsg>, String)> =
            ractor::pg::get_members(&role_group(role))
                .into_iter()
                .filter(|cell| !cell.get_id().is_local())
                .filter_map(|cell| {
                    let peer = inner.ready.get(&cell.get_id().node())?;
                    Some((ActorRef::<PoolMsg>::from(cell), peer.short_name()))
                })
                .filter(|(_, node)| Some(node.as_str()) != avoid)
                .collect();
        if candidates.is_empty() {
            return None;
        }
        let turn = inner.turn.fetch_add(1, Ordering::Relaxed);
        let n = candidates.len();
        let (pool, node) = (0..n)
            .map(|i| &candidates[(turn + i) % n])
            .min_by(|(_, a), (_, b)| {
                let score = |node: &String| {
                    let load = inner
                        .load
                        .get(node)
                        .map_or(0, |l| l.load(Ordering::Relaxed));
                    let capacity = inner.capacity.get(node).map_or(1, |c| *c).max(1);
                    load as f64 / capacity as f64
                };
                score(a).total_cmp(&score(b))
            })?
            .clone();
        let load = Arc::clone(&inner.load.entry(node.clone()).or_default());
        load.fetch_add(1, Ordering::Relaxed);
        Some(PickedPool { pool, node, load })
    }

    /// Stops dialing and closes every session.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        self.inner.desk.stop(Some("planner shutdown".into()));
        let _ = self
            .inner
            .server
            .stop_and_wait(
                Some("planner shutdown".into()),
                Some(Duration::from_secs(2)),
            )
            .await;
    }
}

/// Distinguishes planners started by one process (and, through the
/// clock, by processes that reuse a pid).
fn nonce() -> u32 {
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (nanos % 100_000) * 100 + (STARTED.fetch_add(1, Ordering::Relaxed) % 100) as u32
}

/// Keeps `inner.ready` in step with the sessions; every event is also
/// broadcast to the dialers.
fn track_sessions(inner: &Arc<Inner>) -> Result<broadcast::Sender<PeerEvent>, ClusterError> {
    let mut events =
        peers::subscribe(&inner.server, "hermes.cluster").map_err(ClusterError::Start)?;
    let (tx, _) = broadcast::channel(256);
    let out = tx.clone();
    let inner = Arc::clone(inner);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match &event {
                PeerEvent::Ready(peer) => {
                    inner.ready.insert(peer.node_id, peer.clone());
                }
                PeerEvent::Left(peer) | PeerEvent::Refused(peer) => {
                    inner.ready.remove(&peer.node_id);
                }
            }
            let _ = out.send(event);
        }
    });
    Ok(tx)
}

/// Dials one address until the planner stops.
struct Dialer {
    inner: Arc<Inner>,
    address: String,
    tls: Option<(
        TlsConnector,
        tokio_rustls::rustls::pki_types::ServerName<'static>,
    )>,
    events: broadcast::Receiver<PeerEvent>,
}

/// How one dial ended.
enum Dialed {
    Ready(Peer),
    Refused,
    Unreachable(String),
}

impl Dialer {
    async fn run(mut self, first: oneshot::Sender<()>) {
        let mut first = Some(first);
        let mut backoff = Duration::from_millis(250);
        let mut last_problem = String::new();
        while !self.inner.stop.is_cancelled() {
            match self.dial().await {
                Dialed::Ready(peer) => {
                    let name = peer.short_name();
                    self.inner.notice(
                        false,
                        format!("connected to node {name} at {}", self.address),
                    );
                    describe_now(&self.inner, &peer).await;
                    first.take().map(|tx| tx.send(()));
                    last_problem.clear();
                    backoff = Duration::from_millis(250);
                    if !self.wait_until_left(&peer).await {
                        return;
                    }
                    self.inner.notice(true, format!("lost node {name} at {}; its running subtasks are retried elsewhere; reconnecting", self.address));
                }
                Dialed::Refused => {
                    let problem = format!("node at {} refused this planner: it did not accept the cookie (wrong --cookie?) or the TLS settings; subtasks for its roles run locally", self.address);
                    if problem != last_problem {
                        self.inner.notice(true, problem.clone());
                        last_problem = problem;
                    }
                    first.take().map(|tx| tx.send(()));
                    backoff = MAX_BACKOFF;
                }
                Dialed::Unreachable(why) => {
                    let problem = format!("cannot reach node at {}: {why}; subtasks for its roles run locally until it answers", self.address);
                    if problem != last_problem {
                        self.inner.notice(true, problem.clone());
                        last_problem = problem;
                    }
                    first.take().map(|tx| tx.send(()));
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.inner.stop.cancelled() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    async fn dial(&mut self) -> Dialed {
        let addr = match tokio::net::lookup_host(&self.address)
            .await
            .map(|mut a| a.next())
        {
            Ok(Some(addr)) => addr,
            Ok(None) => return Dialed::Unreachable("the name resolves to no address".into()),
            Err(e) => return Dialed::Unreachable(e.to_string()),
        };
        // Events of earlier sessions are of no interest now.
        self.events = self.events.resubscribe();
        let connected = match &self.tls {
            Some((connector, name)) => {
                ractor_cluster::client_connect_enc(
                    &self.inner.server,
                    addr,
                    connector.clone(),
                    name.clone(),
                )
                .await
            }
            None => ractor_cluster::client_connect(&self.inner.server, addr).await,
        };
        if let Err(e) = connected {
            return Dialed::Unreachable(e.to_string());
        }
        match tokio::time::timeout(Duration::from_secs(10), self.session_with(addr)).await {
            Ok(dialed) => dialed,
            Err(_) => Dialed::Unreachable("no answer to the handshake within 10 s".into()),
        }
    }

    /// The first ready or refused event of a session this side dialed to `addr`.
    async fn session_with(&mut self, addr: SocketAddr) -> Dialed {
        let target = addr.to_string();
        loop {
            match self.events.recv().await {
                Ok(PeerEvent::Ready(peer)) if peer.dialed && peer.addr == target => {
                    return Dialed::Ready(peer)
                }
                Ok(PeerEvent::Refused(peer)) if peer.dialed && peer.addr == target => {
                    return Dialed::Refused
                }
                Ok(PeerEvent::Left(peer)) if peer.dialed && peer.addr == target => {
                    return Dialed::Refused
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => {
                    return Dialed::Unreachable("the planner's node stopped".into())
                }
            }
        }
    }

    /// Waits until `peer`'s session ends; false when the planner stops first.
    async fn wait_until_left(&mut self, peer: &Peer) -> bool {
        loop {
            tokio::select! {
                event = self.events.recv() => match event {
                    Ok(PeerEvent::Left(left)) | Ok(PeerEvent::Refused(left)) if left.node_id == peer.node_id => return true,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if !self.inner.ready.contains_key(&peer.node_id) {
                            return true;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return false,
                },
                _ = self.inner.stop.cancelled() => return false,
            }
        }
    }
}

/// One pool of each ready node, to ask how it is doing.
fn one_pool_per_node(inner: &Inner) -> HashMap<u64, ActorRef<PoolMsg>> {
    let mut pools = HashMap::new();
    for group in ractor::pg::which_groups() {
        if !group.starts_with("hermes.role.") {
            continue;
        }
        for cell in ractor::pg::get_members(&group) {
            let id = cell.get_id();
            if !id.is_local() && inner.ready.contains_key(&id.node()) {
                pools
                    .entry(id.node())
                    .or_insert_with(|| ActorRef::<PoolMsg>::from(cell));
            }
        }
    }
    pools
}

async fn describe(pool: &ActorRef<PoolMsg>) -> Option<PoolInfo> {
    match pool.call(PoolMsg::Describe, Some(HEARTBEAT * 2)).await {
        Ok(ractor::rpc::CallResult::Success(Wire(Ok(info)))) if info.protocol == PROTOCOL => {
            Some(info)
        }
        _ => None,
    }
}

async fn describe_now(inner: &Inner, peer: &Peer) {
    if let Some(pool) = one_pool_per_node(inner).remove(&peer.node_id) {
        if let Some(info) = describe(&pool).await {
            inner.capacity.insert(peer.short_name(), info.capacity);
        }
    }
}

/// Asks one pool of each node how it is doing every [`HEARTBEAT`]; drops
/// the session of a node that misses [`HEARTBEAT_MISSES`] in a row.
async fn heartbeat(inner: Arc<Inner>) {
    let mut misses: HashMap<u64, u32> = HashMap::new();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(HEARTBEAT) => {}
            _ = inner.stop.cancelled() => return,
        }
        let pools = one_pool_per_node(&inner);
        misses.retain(|id, _| pools.contains_key(id));
        let checks = pools
            .into_iter()
            .map(|(id, pool)| async move { (id, describe(&pool).await) });
        for (id, info) in futures::future::join_all(checks).await {
            let Some(peer) = inner.ready.get(&id).map(|p| p.clone()) else {
                continue;
            };
            match info {
                Some(info) => {
                    misses.remove(&id);
                    inner.capacity.insert(peer.short_name(), info.capacity);
                }
                None => {
                    let missed = misses.entry(id).or_default();
                    *missed += 1;
                    if *missed >= HEARTBEAT_MISSES {
                        inner.notice(true, format!("node {} did not answer {HEARTBEAT_MISSES} health checks; dropping its session", peer.short_name()));
                        peer.session.stop(Some("heartbeat".into()));
                        misses.remove(&id);
                    }
                }
            }
        }
    }
}

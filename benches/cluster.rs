//! What running executors on other nodes costs and buys, on loopback:
//! one task of N one-round subtasks, planned in this process, run by local
//! executors (the baseline, in the same run) or by 1, 2 or 3 `hermes node`
//! processes, all against one scripted OpenAI-compatible server.
//!
//! ```sh
//! cargo bench --bench cluster
//! ```
//!
//! Two measures:
//! - dispatch overhead: 100 subtasks one at a time with a model that
//!   answers at once; wall time per subtask remote minus local is what a
//!   remote run adds (serialization, two TCP hops, the node's run host);
//! - throughput: 240 subtasks with a 50 ms model, 8 at once per node
//!   (`--capacity 8`, planner concurrency 8 × nodes), beside local
//!   executors at the same concurrency.
//!
//! Every process shares this machine's cores, so more nodes add slots, not
//! CPU. No test asserts on these figures.

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{finish, text, Reply, ScriptedServer};
use hermes::actors::{roles::parse_role, Hermes, RoleRegistry, TaskRequest, TaskStatus};
use hermes::cluster::{Cluster, ClusterConfig};
use hermes::llm::{OpenAiClient, OpenAiConfig};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

const COOKIE: &str = "bench-cookie";
const ROLE: &str = "name = \"worker\"\ndescription = \"Does one job.\"\nsystem_prompt = \"You are a worker.\"\ntools = []\n";

fn responder(subtasks: usize, latency: Duration) -> impl Fn(&Value) -> Reply {
    move |req| {
        let system = req["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("You are the planner") {
            let list: Vec<Value> = (1..=subtasks)
                .map(|i| json!({"id": format!("s{i}"), "role": "worker", "goal": format!("job {i}"), "depends_on": []}))
                .collect();
            Reply::Content(json!({ "subtasks": list }).to_string())
        } else if system.contains("final answer of a team") {
            text("done")
        } else if latency.is_zero() {
            finish("ok")
        } else {
            Reply::Delay(latency, Box::new(finish("ok")))
        }
    }
}

struct NodeProc {
    _child: tokio::process::Child,
    addr: String,
}

async fn start_node(name: &str, base_url: &str, roles: &std::path::Path) -> NodeProc {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_hermes"))
        .args([
            "node",
            "--listen",
            &addr,
            "--cookie",
            COOKIE,
            "--name",
            name,
            "--capacity",
            "8",
        ])
        .arg("--roles")
        .arg(roles)
        .env("HERMES_BASE_URL", base_url)
        .env("HERMES_MODEL", "scripted")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn hermes node");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("listening on") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    NodeProc {
        _child: child,
        addr,
    }
}

/// Runs one task; returns its wall time and how many subtasks ran where.
async fn run_task(base_url: &str, nodes: &[NodeProc], concurrency: usize) -> (Duration, String) {
    let roles = RoleRegistry::new();
    roles.register(parse_role(ROLE).unwrap(), &[]).unwrap();
    let llm = Arc::new(OpenAiClient::new(OpenAiConfig::new(base_url, "scripted")).unwrap());
    let mut builder = Hermes::builder()
        .llm(llm)
        .roles(roles)
        .concurrency(concurrency);
    if !nodes.is_empty() {
        let config = ClusterConfig {
            connect: nodes.iter().map(|n| n.addr.clone()).collect(),
            cookie: COOKIE.into(),
            ..ClusterConfig::default()
        };
        builder = builder.placement(Arc::new(Cluster::connect(config).await.unwrap()));
    }
    let hermes = builder.spawn().await.unwrap();
    let started = Instant::now();
    let report = hermes.submit(TaskRequest::new("many jobs")).await.unwrap();
    let wall = started.elapsed();
    hermes.shutdown().await;
    assert_eq!(report.status, TaskStatus::Finished, "{report:?}");
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for s in &report.subtasks {
        *counts
            .entry(s.node.clone().unwrap_or_default())
            .or_default() += 1;
    }
    let spread = counts
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    (wall, spread)
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("worker.toml"), ROLE).unwrap();

    println!("# dispatch overhead: 100 subtasks one at a time, model answers at once");
    let server = ScriptedServer::with_responder(responder(100, Duration::ZERO)).await;
    let node = [start_node("n1", &server.base_url, dir.path()).await];
    // One warm-up each, then the measured runs.
    run_task(&server.base_url, &[], 1).await;
    run_task(&server.base_url, &node, 1).await;
    let (local, _) = run_task(&server.base_url, &[], 1).await;
    let (remote, spread) = run_task(&server.base_url, &node, 1).await;
    let per = |d: Duration| d.as_secs_f64() * 1e3 / 100.0;
    println!("| where | wall | per subtask | ran on |");
    println!("|---|---|---|---|");
    println!(
        "| local executors | {:.0} ms | {:.2} ms | local 100 |",
        local.as_secs_f64() * 1e3,
        per(local)
    );
    println!(
        "| 1 node | {:.0} ms | {:.2} ms | {spread} |",
        remote.as_secs_f64() * 1e3,
        per(remote)
    );
    println!(
        "remote dispatch overhead: {:.2} ms per subtask ({:.2}x local)\n",
        per(remote) - per(local),
        per(remote) / per(local)
    );

    println!("# throughput: 240 subtasks, 50 ms model, 8 per node");
    let server = ScriptedServer::with_responder(responder(240, Duration::from_millis(50))).await;
    let mut nodes = Vec::new();
    for i in 1..=3 {
        nodes.push(start_node(&format!("n{i}"), &server.base_url, dir.path()).await);
    }
    println!("| setup | concurrency | wall | subtasks/s | ran on |");
    println!("|---|---|---|---|---|");
    let mut baseline = Vec::new();
    for concurrency in [8, 16, 24] {
        let (wall, _) = run_task(&server.base_url, &[], concurrency).await;
        baseline.push(240.0 / wall.as_secs_f64());
        println!(
            "| local executors | {concurrency} | {:.0} ms | {:.0} | local 240 |",
            wall.as_secs_f64() * 1e3,
            240.0 / wall.as_secs_f64()
        );
    }
    for count in 1..=3 {
        let (wall, spread) = run_task(&server.base_url, &nodes[..count], 8 * count).await;
        let rate = 240.0 / wall.as_secs_f64();
        println!(
            "| {count} node(s) | {} | {:.0} ms | {rate:.0} ({:.2}x local at {}) | {spread} |",
            8 * count,
            wall.as_secs_f64() * 1e3,
            rate / baseline[count - 1],
            8 * count
        );
    }
}

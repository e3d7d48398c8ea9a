//! Executors on other machines, in one process tree: this example starts
//! two worker nodes as child processes of itself, then a planner that
//! connects to both and runs a task whose subtasks spread over them.
//!
//! ```sh
//! cargo run --release --example cluster
//! ```
//!
//! Runs offline: every process uses a small rule-based model (the planner
//! gets a plan, each executor finishes at once with what its role did). To
//! run the same setup with real models and tools, start `hermes node` in
//! three terminals as the README's cluster section shows.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes::actors::{roles::parse_role, Hermes, RoleRegistry, TaskRequest};
use hermes::cluster::{Cluster, ClusterConfig, Node, NodeEvent};
use hermes::llm::scripted::scripted_response;
use hermes::llm::{ChatRequest, ChatResponse, Llm, LlmError};
use hermes::tools::Toolbox;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const COOKIE: &str = "example-cookie";

const ROLES: [(&str, &str); 2] = [
    ("researcher", "Finds facts."),
    ("writer", "Writes text from facts."),
];

fn role(name: &str) -> RoleRegistry {
    let registry = RoleRegistry::new();
    for (role, description) in ROLES.iter().filter(|(r, _)| name == "all" || *r == name) {
        let toml = format!("name = \"{role}\"\ndescription = \"{description}\"\nsystem_prompt = \"You are the {role}.\"\ntools = []\n");
        let parsed = parse_role(&toml).expect("valid role");
        registry.register(parsed, &[]).expect("new role");
    }
    registry
}

/// A stand-in model: plans four subtasks, lets executors finish at once,
/// and joins the results as the final answer.
struct DemoModel;

#[async_trait]
impl Llm for DemoModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let system = &request.messages[0].content;
        let user = request.messages.get(1).map_or("", |m| m.content.as_str());
        let content = if system.contains("You are the planner") {
            json!({"subtasks": [
                {"id": "facts-a", "role": "researcher", "goal": "Find the first fact", "depends_on": []},
                {"id": "facts-b", "role": "researcher", "goal": "Find the second fact", "depends_on": []},
                {"id": "draft", "role": "writer", "goal": "Write a draft from both facts", "depends_on": ["facts-a", "facts-b"]},
                {"id": "polish", "role": "writer", "goal": "Polish the draft", "depends_on": ["draft"]}
            ]})
            .to_string()
        } else if system.contains("final answer of a team") {
            "The team found two facts, drafted and polished the text.".to_string()
        } else {
            let goal = user
                .lines()
                .find_map(|l| l.strip_prefix("Goal: "))
                .unwrap_or("the goal");
            json!({"thought": "done", "action": {"name": "finish", "args": {"result": format!("did: {goal}")}}}).to_string()
        };
        Ok(scripted_response(request, content))
    }

    fn model(&self) -> &str {
        "demo"
    }
}

/// Child process: one worker node serving one role, until it is killed.
async fn run_node(
    name: &str,
    port: u16,
    role_name: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let _node = Node::builder()
        .listen(addr)
        .cookie(COOKIE)
        .name(name)
        .roles(role(role_name))
        .llm(Arc::new(DemoModel))
        .toolbox(Toolbox::new())
        .on_event(Arc::new(|event: &NodeEvent| eprintln!("  [node] {event}")))
        .start()
        .await?;
    println!("ready");
    tokio::signal::ctrl_c().await?;
    Ok(())
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts this binary again as a node and waits for its `ready` line.
async fn spawn_node(
    name: &str,
    role: &str,
) -> Result<(tokio::process::Child, String), Box<dyn std::error::Error>> {
    let port = free_port()?;
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["node", name, &port.to_string(), role])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    match tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await {
        Ok(Ok(Some(line))) if line == "ready" => Ok((child, format!("127.0.0.1:{port}"))),
        _ => Err(format!("node {name} did not start").into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("node") {
        let port = args[3].parse()?;
        return run_node(&args[2], port, &args[4]).await;
    }

    let (_research_node, research_addr) = spawn_node("north", "researcher").await?;
    let (_writing_node, writing_addr) = spawn_node("south", "writer").await?;
    println!("nodes: north (researcher) at {research_addr}, south (writer) at {writing_addr}");

    let hermes = Hermes::builder()
        .llm(Arc::new(DemoModel))
        .roles(role("all"))
        .concurrency(4)
        .placement(Arc::new(
            Cluster::connect(ClusterConfig {
                connect: vec![research_addr, writing_addr],
                cookie: COOKIE.into(),
                ..ClusterConfig::default()
            })
            .await?,
        ))
        .on_event(Arc::new(|event| eprintln!("[plan] {event}")))
        .spawn()
        .await?;
    println!("connected to: {}", hermes.nodes().join(", "));

    let report = hermes
        .submit(
            TaskRequest::new("Write a short text from two facts")
                .with_timeout(Duration::from_secs(60)),
        )
        .await?;
    println!(
        "\ntask {}: {}",
        report.status,
        report.result.as_deref().unwrap_or("")
    );
    for subtask in &report.subtasks {
        println!(
            "  {:<8} {:<10} on {:<6} {}",
            subtask.id,
            subtask.role,
            subtask.node.as_deref().unwrap_or("-"),
            subtask.result.as_deref().unwrap_or("")
        );
    }
    hermes.shutdown().await;
    Ok(())
}

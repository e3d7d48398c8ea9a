//! `hermes node` and `hermes plan --connect` as real processes on loopback:
//! two worker nodes, a planner, a scripted OpenAI-compatible server they
//! all use, and an OTLP receiver. Each test starts its own processes.

mod common;

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::otlp::OtlpReceiver;
use common::serve::{Server, Site};
use common::{finish, hermes, hermes_bin, text, Reply, ScriptedServer};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

const COOKIE: &str = "s3cret-cookie";

const ROLE: &str = "name = \"NAME\"\ndescription = \"Does NAME work.\"\nsystem_prompt = \"You are NAME.\"\ntools = [\"read_file\"]\n";

/// A role that writes and lists files (for approvals and budgets).
const HANDS_ROLE: &str = "name = \"NAME\"\ndescription = \"Does NAME work.\"\nsystem_prompt = \"You are NAME.\"\ntools = [\"write_file\", \"list_dir\"]\n";

fn roles_dir(names: &[&str]) -> tempfile::TempDir {
    common::roles_dir(ROLE, names)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `hermes node` child process and the lines of its stderr.
struct NodeProc {
    child: tokio::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    /// Reads stderr into `lines` until the pipe closes.
    reader: Option<tokio::task::JoinHandle<()>>,
    addr: String,
    _roles: tempfile::TempDir,
    _workspace: tempfile::TempDir,
}

impl NodeProc {
    async fn start(name: &str, roles: &[&str], base_url: &str, extra: &[&str]) -> NodeProc {
        Self::start_with_cookie(name, roles, base_url, COOKIE, extra).await
    }

    async fn start_with_cookie(
        name: &str,
        roles: &[&str],
        base_url: &str,
        cookie: &str,
        extra: &[&str],
    ) -> NodeProc {
        let addr = format!("127.0.0.1:{}", free_port());
        Self::start_at(&addr, name, roles, base_url, cookie, extra).await
    }

    async fn start_at(
        addr: &str,
        name: &str,
        roles: &[&str],
        base_url: &str,
        cookie: &str,
        extra: &[&str],
    ) -> NodeProc {
        Self::launch(addr, name, roles_dir(roles), base_url, cookie, extra).await
    }

    /// A node serving `worker` with [`HANDS_ROLE`].
    async fn start_hands(name: &str, base_url: &str) -> NodeProc {
        let addr = format!("127.0.0.1:{}", free_port());
        let roles = common::roles_dir(HANDS_ROLE, &["worker"]);
        Self::launch(&addr, name, roles, base_url, COOKIE, &[]).await
    }

    async fn launch(
        addr: &str,
        name: &str,
        roles: tempfile::TempDir,
        base_url: &str,
        cookie: &str,
        extra: &[&str],
    ) -> NodeProc {
        let addr = addr.to_string();
        let workspace = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(hermes_bin())
            .args([
                "node", "--listen", &addr, "--cookie", cookie, "--name", name,
            ])
            .arg("--roles")
            .arg(roles.path())
            .arg("--workspace")
            .arg(workspace.path())
            .args(extra)
            .env("HERMES_BASE_URL", base_url)
            .env("HERMES_MODEL", "scripted")
            .env("NO_COLOR", "1")
            .env_remove("HERMES_COOKIE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn hermes node");
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let stderr = child.stderr.take().unwrap();
        let sink = Arc::clone(&lines);
        let reader = tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        let node = NodeProc {
            child,
            lines,
            reader: Some(reader),
            addr,
            _roles: roles,
            _workspace: workspace,
        };
        node.wait_for("listening on", Duration::from_secs(20)).await;
        node
    }

    fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    fn workspace(&self) -> &std::path::Path {
        self._workspace.path()
    }

    async fn wait_for(&self, needle: &str, within: Duration) {
        let until = tokio::time::Instant::now() + within;
        while !self.stderr().contains(needle) {
            assert!(
                tokio::time::Instant::now() < until,
                "no `{needle}` on the node's stderr within {within:?}:\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// SIGTERM, then waits for the exit (spans are flushed at exit).
    async fn terminate(&mut self) -> i32 {
        let pid = self.child.id().expect("running") as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("node exits after SIGTERM")
            .unwrap();
        // The last lines may still be in the pipe: read to its end.
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
        }
        status.code().unwrap_or(-1)
    }
}

/// The planner's plan: `subtasks` as (id, role, goal), no dependencies.
fn plan_reply(subtasks: &[(String, String, String)]) -> Reply {
    let subtasks: Vec<Value> = subtasks
        .iter()
        .map(|(id, role, goal)| json!({"id": id, "role": role, "goal": goal, "depends_on": []}))
        .collect();
    Reply::Content(json!({ "subtasks": subtasks }).to_string())
}

fn is_planner(req: &Value) -> bool {
    req["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("You are the planner")
}

fn is_answer(req: &Value) -> bool {
    req["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("final answer of a team")
}

/// The executor's goal line (`Goal: ...`) of a decision request.
fn goal_of(req: &Value) -> String {
    req["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Goal: "))
        .unwrap_or_default()
        .to_string()
}

/// Every executor finishes at once with `done: <goal>`.
fn one_round(subtasks: Vec<(String, String, String)>) -> impl Fn(&Value) -> Reply {
    move |req| {
        if is_planner(req) {
            plan_reply(&subtasks)
        } else if is_answer(req) {
            text("all done")
        } else {
            finish(&format!("done: {}", goal_of(req)))
        }
    }
}

fn subtask(id: &str, role: &str, goal: &str) -> (String, String, String) {
    (id.into(), role.into(), goal.into())
}

async fn plan(server: &ScriptedServer, roles: &[&str], extra: &[&str]) -> common::Run {
    let roles = roles_dir(roles);
    let workspace = tempfile::tempdir().unwrap();
    let mut args = vec![
        "plan",
        "Do the team's work",
        "--roles",
        roles.path().to_str().unwrap(),
        "--workspace",
        workspace.path().to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    hermes(&args, &server.base_url).await
}

/// `hermes plan TASK --connect ADDR…` with `roles`, started now and
/// awaited later (while the test does things to the nodes).
fn plan_in_background(
    server: &ScriptedServer,
    task: &str,
    roles: &[&str],
    nodes: &[&str],
) -> tokio::task::JoinHandle<common::Run> {
    let base_url = server.base_url.clone();
    let task = task.to_string();
    let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    tokio::spawn(async move {
        let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
        let roles = roles_dir(&roles);
        let workspace = tempfile::tempdir().unwrap();
        let mut args = vec![
            "plan".to_string(),
            task,
            "--roles".into(),
            roles.path().to_str().unwrap().into(),
            "--workspace".into(),
            workspace.path().to_str().unwrap().into(),
            "--cookie".into(),
            COOKIE.into(),
            "--json".into(),
        ];
        for node in nodes {
            args.extend(["--connect".to_string(), node]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        hermes(&args, &base_url).await
    })
}

/// A server for one `reader` subtask whose first model call hangs for a
/// minute (until the test does something to its node) and whose later
/// calls finish with `later`; the counter says how many calls came.
async fn first_attempt_hangs(goal: &str, later: &str) -> (ScriptedServer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let (goal, later) = (goal.to_string(), later.to_string());
    let server = ScriptedServer::with_responder(move |req| {
        if is_planner(req) {
            plan_reply(&[subtask("s1", "reader", &goal)])
        } else if is_answer(req) {
            text("all done")
        } else if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::Delay(Duration::from_secs(60), Box::new(finish("too late")))
        } else {
            finish(&later)
        }
    })
    .await;
    (server, calls)
}

fn nodes_by_id(report: &Value) -> HashMap<String, String> {
    report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["node"].as_str().unwrap_or("null").to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn subtasks_run_on_the_nodes_that_serve_their_roles() {
    let server = ScriptedServer::with_responder(one_round(vec![
        subtask("s1", "reader", "read the notes"),
        subtask("s2", "scribe", "write the summary"),
        subtask("s3", "critic", "judge the summary"),
    ]))
    .await;
    let w1 = NodeProc::start("w1", &["reader"], &server.base_url, &[]).await;
    let w2 = NodeProc::start("w2", &["scribe"], &server.base_url, &[]).await;
    let run = plan(
        &server,
        &["reader", "scribe", "critic"],
        &[
            "--connect",
            &w1.addr,
            "--connect",
            &w2.addr,
            "--cookie",
            COOKIE,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    let nodes = nodes_by_id(&report);
    assert_eq!(nodes["s1"], "w1", "{report}");
    assert_eq!(nodes["s2"], "w2", "{report}");
    // No node serves `critic`: it runs in the planner's process.
    assert_eq!(nodes["s3"], "local", "{report}");
    assert_eq!(report["subtasks"][0]["result"], "done: read the notes");
    assert!(
        run.stderr.contains("connected to node w1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("started   s1 (reader) on w1"),
        "{}",
        run.stderr
    );
    w1.wait_for(
        "ended    s1: finished after 1 round(s)",
        Duration::from_secs(5),
    )
    .await;
    assert!(w1.stderr().contains("started  s1 (reader) for planner-"));
    assert!(!w1.stderr().contains("s2"), "{}", w1.stderr());
    // `--local-only` keeps everything here.
    let run = plan(
        &server,
        &["reader", "scribe", "critic"],
        &["--connect", &w1.addr, "--cookie", COOKIE, "--local-only"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(nodes_by_id(&run.outcome()).values().all(|n| n == "local"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subtask_on_a_killed_node_finishes_on_the_other_once() {
    let (server, slow_calls) = first_attempt_hangs("the slow job", "done on the survivor").await;
    let mut w1 = NodeProc::start("w1", &["reader"], &server.base_url, &[]).await;
    let mut w2 = NodeProc::start("w2", &["reader"], &server.base_url, &[]).await;
    let (a1, a2) = (w1.addr.clone(), w2.addr.clone());
    let planner = plan_in_background(&server, "Do the slow job", &["reader"], &[&a1, &a2]);
    // Whichever node got the subtask is killed in the middle of it.
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    let (victim, survivor) = loop {
        if w1.stderr().contains("started  s1") {
            break (&mut w1, "w2");
        }
        if w2.stderr().contains("started  s1") {
            break (&mut w2, "w1");
        }
        assert!(
            tokio::time::Instant::now() < until,
            "s1 never started on a node"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    while slow_calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    victim.child.start_kill().unwrap();
    let run = tokio::time::timeout(Duration::from_secs(30), planner)
        .await
        .expect("the planner ends")
        .unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished", "{report}");
    let subtasks = report["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 1, "reported once: {report}");
    assert_eq!(subtasks[0]["status"], "finished");
    assert_eq!(subtasks[0]["result"], "done on the survivor");
    assert_eq!(subtasks[0]["node"], survivor, "{report}");
    assert!(run.stderr.contains("restarted"), "{}", run.stderr);
    assert!(
        run.stderr.contains("disconnected") || run.stderr.contains("lost node"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_cookie_is_refused_and_the_planner_runs_locally() {
    let server =
        ScriptedServer::with_responder(one_round(vec![subtask("s1", "reader", "read it")])).await;
    let w1 =
        NodeProc::start_with_cookie("w1", &["reader"], &server.base_url, "right-cookie", &[]).await;
    let run = plan(
        &server,
        &["reader"],
        &["--connect", &w1.addr, "--cookie", "wrong-cookie"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    assert_eq!(nodes_by_id(&report)["s1"], "local");
    assert!(
        run.stderr.contains("warning: node at") && run.stderr.contains("did not accept the cookie"),
        "{}",
        run.stderr
    );
    w1.wait_for("refused a peer at 127.0.0.1:", Duration::from_secs(5))
        .await;
    assert!(w1.stderr().contains("wrong --cookie?"), "{}", w1.stderr());
    assert!(!w1.stderr().contains("started"), "{}", w1.stderr());

    // Nothing listening: a warning, and the work runs here.
    let nobody = format!("127.0.0.1:{}", free_port());
    let run = plan(
        &server,
        &["reader"],
        &["--connect", &nobody, "--cookie", COOKIE],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(nodes_by_id(&run.outcome())["s1"], "local");
    assert!(
        run.stderr
            .contains(&format!("warning: cannot reach node at {nobody}")),
        "{}",
        run.stderr
    );

    // No cookie at all is a usage error.
    let run = plan(&server, &["reader"], &["--connect", &w1.addr]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("--connect needs --cookie"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_spans_join_the_tasks_trace() {
    let receiver = OtlpReceiver::start().await;
    let server = ScriptedServer::with_responder(one_round(vec![
        subtask("s1", "reader", "read the notes"),
        subtask("s2", "scribe", "write the summary"),
    ]))
    .await;
    let otlp = ["--otlp", receiver.url.as_str()];
    let mut w1 = NodeProc::start("w1", &["reader"], &server.base_url, &otlp).await;
    let mut w2 = NodeProc::start("w2", &["scribe"], &server.base_url, &otlp).await;
    let run = plan(
        &server,
        &["reader", "scribe"],
        &[
            "--connect",
            &w1.addr,
            "--connect",
            &w2.addr,
            "--cookie",
            COOKIE,
            "--otlp",
            &receiver.url,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(nodes_by_id(&report)["s1"], "w1");
    // Nodes flush their spans when they exit.
    assert_eq!(w1.terminate().await, 0, "{}", w1.stderr());
    assert_eq!(w2.terminate().await, 0, "{}", w2.stderr());
    let trace_id = report["trace_id"].as_str().expect("trace id").to_string();
    let spans = receiver.spans();
    let in_trace: Vec<_> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let runs: Vec<_> = in_trace
        .iter()
        .filter(|s| s.name == "executor.run")
        .collect();
    assert_eq!(runs.len(), 2, "one executor.run per subtask: {in_trace:#?}");
    for run in runs {
        let parent = in_trace
            .iter()
            .find(|s| s.span_id == run.parent_id)
            .unwrap_or_else(|| panic!("parent of {run:?} not in the trace"));
        assert_eq!(parent.name, "subtask");
        let subtask = &parent.attributes["hermes.subtask_id"];
        assert!(subtask == "s1" || subtask == "s2", "{parent:?}");
    }
    // The remote loops' model calls are in the same trace too.
    assert!(in_trace.iter().filter(|s| s.name == "llm.call").count() >= 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_subtasks_spread_over_two_nodes() {
    let subtasks: Vec<_> = (1..=200)
        .map(|i| subtask(&format!("s{i}"), "worker", &format!("job {i}")))
        .collect();
    let server = ScriptedServer::with_responder(one_round(subtasks)).await;
    let capacity = ["--capacity", "8"];
    let w1 = NodeProc::start("w1", &["worker"], &server.base_url, &capacity).await;
    let w2 = NodeProc::start("w2", &["worker"], &server.base_url, &capacity).await;
    let run = plan(
        &server,
        &["worker"],
        &[
            "--connect",
            &w1.addr,
            "--connect",
            &w2.addr,
            "--cookie",
            COOKIE,
            "--concurrency",
            "16",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    let subtasks = report["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 200, "none lost");
    let mut per_node: HashMap<String, usize> = HashMap::new();
    for s in subtasks {
        assert_eq!(s["status"], "finished", "{s}");
        assert_eq!(
            s["result"],
            format!("done: {}", s["goal"].as_str().unwrap())
        );
        *per_node
            .entry(s["node"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(
        per_node.get("w1").copied().unwrap_or(0) + per_node.get("w2").copied().unwrap_or(0),
        200,
        "{per_node:?}"
    );
    assert!(per_node["w1"] >= 50 && per_node["w2"] >= 50, "{per_node:?}");
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_sessions_work_and_plain_planners_are_refused() {
    let server =
        ScriptedServer::with_responder(one_round(vec![subtask("s1", "reader", "read it")])).await;
    let (cert, key, ca) = (fixture("node.pem"), fixture("node.key"), fixture("ca.pem"));
    let w1 = NodeProc::start(
        "w1",
        &["reader"],
        &server.base_url,
        &["--tls-cert", &cert, "--tls-key", &key],
    )
    .await;
    assert!(w1.stderr().contains("(TLS)"), "{}", w1.stderr());
    let run = plan(
        &server,
        &["reader"],
        &["--connect", &w1.addr, "--cookie", COOKIE, "--tls-ca", &ca],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(nodes_by_id(&run.outcome())["s1"], "w1", "{}", run.stderr);

    // Without TLS the node does not let the planner in: it runs locally.
    let run = plan(
        &server,
        &["reader"],
        &["--connect", &w1.addr, "--cookie", COOKIE],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(nodes_by_id(&run.outcome())["s1"], "local");
    assert!(run.stderr.contains("warning: node at"), "{}", run.stderr);

    // A node given a CA requires client certificates it signed.
    let w2 = NodeProc::start(
        "w2",
        &["reader"],
        &server.base_url,
        &["--tls-cert", &cert, "--tls-key", &key, "--tls-ca", &ca],
    )
    .await;
    let run = plan(
        &server,
        &["reader"],
        &["--connect", &w2.addr, "--cookie", COOKIE, "--tls-ca", &ca],
    )
    .await;
    assert_eq!(nodes_by_id(&run.outcome())["s1"], "local", "{}", run.stderr);
    let run = plan(
        &server,
        &["reader"],
        &[
            "--connect",
            &w2.addr,
            "--cookie",
            COOKIE,
            "--tls-ca",
            &ca,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    )
    .await;
    assert_eq!(nodes_by_id(&run.outcome())["s1"], "w2", "{}", run.stderr);

    // A key without its certificate is a usage error.
    let bad = tokio::process::Command::new(hermes_bin())
        .args([
            "node",
            "--listen",
            "127.0.0.1:1",
            "--cookie",
            "c",
            "--tls-key",
            &key,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_running_subtasks_finish_before_the_node_exits() {
    let server = ScriptedServer::with_responder(|req| {
        if is_planner(req) {
            plan_reply(&[subtask("s1", "reader", "a job that takes a while")])
        } else if is_answer(req) {
            text("all done")
        } else {
            Reply::Delay(
                Duration::from_millis(1500),
                Box::new(finish("finished while draining")),
            )
        }
    })
    .await;
    let mut w1 =
        NodeProc::start("w1", &["reader"], &server.base_url, &["--drain-secs", "20"]).await;
    let addr = w1.addr.clone();
    let planner = plan_in_background(&server, "Do the job", &["reader"], &[&addr]);
    w1.wait_for("started  s1", Duration::from_secs(20)).await;
    assert_eq!(w1.terminate().await, 0, "{}", w1.stderr());
    let stderr = w1.stderr();
    assert!(
        stderr.contains("draining: no new subtasks; waiting up to 20 s for 1 running"),
        "{stderr}"
    );
    assert!(stderr.contains("ended    s1: finished"), "{stderr}");
    assert!(stderr.contains("drained: every subtask ended"), "{stderr}");
    let run = planner.await.unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["subtasks"][0]["node"], "w1");
    assert_eq!(report["subtasks"][0]["result"], "finished while draining");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_that_comes_back_is_used_again() {
    let first_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&first_calls);
    let server = ScriptedServer::with_responder(move |req| {
        if is_planner(req) {
            return Reply::Content(
                json!({"subtasks": [
                    {"id": "s1", "role": "reader", "goal": "first job", "depends_on": []},
                    {"id": "s2", "role": "reader", "goal": "second job", "depends_on": ["s1"]}
                ]})
                .to_string(),
            );
        }
        if is_answer(req) {
            return text("all done");
        }
        let goal = goal_of(req);
        if goal.starts_with("first job") {
            match calls.fetch_add(1, Ordering::SeqCst) {
                // On the node: hangs until the node is killed.
                0 => Reply::Delay(Duration::from_secs(60), Box::new(finish("too late"))),
                // The retry, here: slow enough for the node to come back.
                _ => Reply::Delay(Duration::from_secs(3), Box::new(finish("first done"))),
            }
        } else {
            finish("second done")
        }
    })
    .await;
    let mut w1 = NodeProc::start("w1", &["reader"], &server.base_url, &[]).await;
    let addr = w1.addr.clone();
    let planner = plan_in_background(&server, "Do both jobs", &["reader"], &[&addr]);
    w1.wait_for("started  s1", Duration::from_secs(20)).await;
    while first_calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    w1.child.start_kill().unwrap();
    let _ = w1.child.wait().await;
    let w1 = NodeProc::start_at(&addr, "w1", &["reader"], &server.base_url, COOKIE, &[]).await;
    let run = tokio::time::timeout(Duration::from_secs(30), planner)
        .await
        .expect("the planner ends")
        .unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    let nodes = nodes_by_id(&report);
    assert_eq!(
        nodes["s1"], "local",
        "retried here while w1 was down: {report}"
    );
    assert_eq!(nodes["s2"], "w1", "w1 is used again: {}", run.stderr);
    assert!(w1.stderr().contains("started  s2"), "{}", w1.stderr());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_node_is_dropped_by_its_missed_health_checks() {
    let (server, calls) = first_attempt_hangs("a job", "done here").await;
    let w1 = NodeProc::start("w1", &["reader"], &server.base_url, &[]).await;
    let addr = w1.addr.clone();
    let planner = plan_in_background(&server, "Do the job", &["reader"], &[&addr]);
    w1.wait_for("started  s1", Duration::from_secs(20)).await;
    // Frozen only once its model call hangs: frozen before it, the local
    // rerun would make the first (hanging) call itself.
    for _ in 0..400 {
        if calls.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "{}", w1.stderr());
    let pid = nix::unistd::Pid::from_raw(w1.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let run = tokio::time::timeout(Duration::from_secs(40), planner).await;
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let run = run.expect("the planner ends").unwrap();
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("did not answer 3 health checks"),
        "{}",
        run.stderr
    );
    let report = run.outcome();
    assert_eq!(report["subtasks"][0]["node"], "local", "{report}");
    assert_eq!(report["subtasks"][0]["result"], "done here");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_task_runs_its_subtasks_on_the_nodes_given_to_hermes_serve() {
    let server =
        ScriptedServer::with_responder(one_round(vec![subtask("s1", "worker", "read the notes")]))
            .await;
    let w1 = NodeProc::start("w1", &["worker"], &server.base_url, &[]).await;
    let site = Site::new();
    let served = Server::start(
        &site,
        &server.base_url,
        &["--connect", &w1.addr, "--cookie", COOKIE],
    )
    .await;
    // The node sessions open in the background once the server is up.
    for _ in 0..200 {
        if served.log().contains("connected to node w1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Two tasks, one after the other, share the server's one cluster.
    for _ in 0..2 {
        let id = served.submit(json!({"goal": "Read the notes"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let events = served.events(&id, None).await;
        let started = events
            .iter()
            .find(|e| e.1 == "subtask_started")
            .expect("a started subtask");
        assert_eq!(started.2["node"], "w1", "{}\n{}", served.log(), w1.stderr());
        let task = served.task(&id).await;
        assert_eq!(task["status"], "finished", "{task}");
        assert_eq!(task["subtasks"][0]["node"], "w1", "{task}");
        assert_eq!(task["subtasks"][0]["result"], "done: read the notes");
    }
    assert!(
        served.log().contains("connected to node w1"),
        "{}",
        served.log()
    );
}

/// Waits until `served` has a session with node `name`.
async fn wait_connected(served: &Server, name: &str) {
    for _ in 0..200 {
        if served.log().contains(&format!("connected to node {name}")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The pools' process groups arrive just after the session.
    tokio::time::sleep(Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_executor_asks_the_planner_s_approver_and_runs_the_call_on_a_yes() {
    // One `worker` subtask whose first round writes out.txt; it then says
    // whether the write ran.
    let server = ScriptedServer::with_responder(|req| {
        if is_planner(req) {
            plan_reply(&[subtask("s1", "worker", "write the greeting")])
        } else if is_answer(req) {
            text("FINAL")
        } else if common::rounds_shown(req) == 0 {
            common::decision("write_file", json!({"path": "out.txt", "content": "hello"}))
        } else if common::messages_text(req).contains("not run:") {
            finish("refused")
        } else {
            finish("written")
        }
    })
    .await;
    let w1 = NodeProc::start_hands("w1", &server.base_url).await;
    let site = Site::new();
    let served = Server::start(
        &site,
        &server.base_url,
        &[
            "--connect",
            &w1.addr,
            "--cookie",
            COOKIE,
            "--approve",
            "write_file",
        ],
    )
    .await;
    wait_connected(&served, "w1").await;
    for (approve, result) in [(true, "written"), (false, "refused")] {
        let _ = std::fs::remove_file(w1.workspace().join("out.txt"));
        let id = served.submit(json!({"goal": "Write a greeting"})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let asked = served
            .first_event(&id, "approval_needed")
            .await
            .unwrap_or_else(|| panic!("no question:\n{}\n{}", served.log(), w1.stderr()));
        assert_eq!(asked["tool"], "write_file", "{asked}");
        assert_eq!(asked["subtask"], "s1");
        assert_eq!(asked["role"], "worker");
        assert!(
            !w1.workspace().join("out.txt").exists(),
            "ran before the answer"
        );
        let call_id = asked["call_id"].as_str().unwrap();
        let response = served
            .post(&format!("/v1/tasks/{id}/approvals/{call_id}"))
            .json(&json!({"approve": approve, "note": "checked"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let events = served.events(&id, None).await;
        let task = served.task(&id).await;
        assert_eq!(task["subtasks"][0]["node"], "w1", "{task}");
        assert_eq!(task["subtasks"][0]["result"], result, "{task}");
        let decided = events.iter().find(|e| e.1 == "approval_decided").unwrap();
        assert_eq!(decided.2["by"], "http");
        assert_eq!(
            w1.workspace().join("out.txt").exists(),
            approve,
            "the remote call ran only on a yes"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_executor_s_model_calls_count_against_the_task_s_budget() {
    // The executor lists a new folder every round and never finishes.
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let server = ScriptedServer::with_responder(move |req| {
        if is_planner(req) {
            plan_reply(&[subtask("s1", "worker", "look around")])
        } else if is_answer(req) {
            text("FINAL")
        } else {
            let call = seen.fetch_add(1, Ordering::SeqCst);
            let look = common::decision("list_dir", json!({"path": format!("./d{call}")}));
            Reply::Delay(Duration::from_millis(100), Box::new(look))
        }
    })
    .await;
    let w1 = NodeProc::start_hands("w1", &server.base_url).await;
    let roles = common::roles_dir(HANDS_ROLE, &["worker"]);
    let workspace = tempfile::tempdir().unwrap();
    let run = hermes(
        &[
            "plan",
            "Look around",
            "--roles",
            roles.path().to_str().unwrap(),
            "--workspace",
            workspace.path().to_str().unwrap(),
            "--connect",
            &w1.addr,
            "--cookie",
            COOKIE,
            "--call-budget",
            "6",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 3, "{}\n{}", run.stderr, w1.stderr());
    let report = run.outcome();
    assert_eq!(report["status"], "budget", "{report}");
    assert_eq!(report["subtasks"][0]["node"], "w1", "{report}");
    // One planning call, then the remote executor's: the sixth spends the
    // budget and the planner stops the run (a call in flight may finish).
    let executor_calls = calls.load(Ordering::SeqCst);
    assert!(
        (5..=6).contains(&executor_calls),
        "{executor_calls} remote calls\n{}",
        w1.stderr()
    );
}

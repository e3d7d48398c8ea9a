//! Traces in a real backend: `scripts/trace-backend.sh` starts Arize Phoenix
//! (from PyPI, in a venv, on loopback), `hermes plan --otlp` sends a
//! two-role task's spans to it over OTLP/HTTP, and Phoenix's own REST API
//! (`GET /v1/projects/default/traces`, `GET /v1/projects/default/spans`)
//! must give back one trace holding the planner's and every executor's
//! spans with their parent links and GenAI token attributes.
//!
//! When Phoenix cannot be installed here (no Python >= 3.11 with venv, no
//! access to PyPI: the script exits 2), the test prints why and passes,
//! unless `CI` is set: then it fails. The first run installs Phoenix
//! (several minutes); later runs reuse the venv.
//!
//! `HERMES_TRACE_SCREENSHOT=docs/trace.png` also has headless Chromium take
//! a picture of the trace in Phoenix's UI (`scripts/trace-screenshot.sh`).

mod common;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{finish, hermes, text, Reply, ScriptedServer};
use serde_json::{json, Value};

const ROLE: &str = "name = \"NAME\"\ndescription = \"Does NAME work.\"\nsystem_prompt = \"You are NAME.\"\ntools = [\"read_file\", \"write_file\"]\n";

/// How long spans may take to show up in Phoenix's API after hermes exits.
const ARRIVAL: Duration = Duration::from_secs(60);

/// The planner splits the task into a reader and a scribe; each uses one
/// tool, then finishes.
fn responder(req: &Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    let user = req["messages"][1]["content"].as_str().unwrap_or_default();
    let later_round = common::rounds_shown(req) > 0;
    if system.contains("You are the planner") {
        Reply::Content(
            json!({"subtasks": [
                {"id": "s1", "role": "reader", "goal": "read notes.txt", "depends_on": []},
                {"id": "s2", "role": "scribe", "goal": "write summary.txt", "depends_on": []}
            ]})
            .to_string(),
        )
    } else if system.contains("final answer of a team") {
        text("Summary written to summary.txt")
    } else if user.starts_with("Goal: read notes.txt") {
        if later_round {
            finish("notes say: ship it")
        } else {
            common::decision("read_file", json!({"path": "notes.txt"}))
        }
    } else if user.contains("write summary.txt") {
        if later_round {
            finish("wrote summary.txt")
        } else {
            common::decision(
                "write_file",
                json!({"path": "summary.txt", "content": "ship it"}),
            )
        }
    } else {
        Reply::Status(400, "unexpected request".into())
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/trace-backend.sh")
}

/// Printed past the test harness's capture, so a skip is seen.
fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// A Phoenix started by the script; stopped (through the script) on drop.
struct Backend {
    dir: tempfile::TempDir,
    /// Base URL: UI, REST API and OTLP/HTTP (`/v1/traces`).
    url: String,
}

impl Backend {
    /// `None` when Phoenix cannot be installed here and `CI` is unset.
    fn start() -> Option<Backend> {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let out = Command::new(script())
            .args(["start", "--port", &port.to_string(), "--dir"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/trace-backend.sh");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        match out.status.code() {
            Some(0) => {
                note(&format!(
                    "trace_backend: Phoenix up in {:.0?}",
                    started.elapsed()
                ));
                Some(Backend {
                    dir,
                    url: format!("http://127.0.0.1:{port}"),
                })
            }
            Some(2) if std::env::var_os("CI").is_none() => {
                note(&format!(
                    "SKIPPED trace_backend: Phoenix (the trace backend) cannot be installed here, so the test passes without checking anything. Set CI=1 to make this a failure. The script said:\n{said}"
                ));
                None
            }
            Some(2) => panic!(
                "Phoenix cannot be installed, and CI is set, so this fails rather than skips:\n{said}"
            ),
            code => panic!("scripts/trace-backend.sh start exited {code:?}:\n{said}"),
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .status();
    }
}

/// One span as Phoenix's REST API returns it.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent_id: Option<String>,
    attributes: serde_json::Map<String, Value>,
}

impl Span {
    fn from_json(v: &Value) -> Span {
        Span {
            name: v["name"].as_str().unwrap_or_default().to_string(),
            trace_id: v["context"]["trace_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            span_id: v["context"]["span_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            parent_id: v["parent_id"].as_str().map(str::to_string),
            attributes: v["attributes"].as_object().cloned().unwrap_or_default(),
        }
    }
}

async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    let response = client
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    assert!(status.is_success(), "GET {url}: {status}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {url}: not JSON ({e}): {body}"))
}

/// Every span of project `default`, following the pagination cursor.
async fn all_spans(client: &reqwest::Client, base: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{base}/v1/projects/default/spans?limit=1000");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page = get_json(client, &url).await;
        spans.extend(
            page["data"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Span::from_json),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return spans,
        }
    }
}

/// The spans below `root` (not itself).
fn descendants<'a>(spans: &'a [Span], root: &Span) -> Vec<&'a Span> {
    let mut found = Vec::new();
    let mut frontier = vec![root.span_id.clone()];
    while let Some(id) = frontier.pop() {
        for s in spans
            .iter()
            .filter(|s| s.parent_id.as_deref() == Some(id.as_str()))
        {
            frontier.push(s.span_id.clone());
            found.push(s);
        }
    }
    found
}

/// Whether everything the task exports has arrived: the root, the
/// answer, and for both executors a round with its model and tool call.
fn complete(spans: &[Span]) -> bool {
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let runs: Vec<&Span> = spans.iter().filter(|s| s.name == "executor.run").collect();
    spans.iter().any(|s| s.name == "task")
        && spans.iter().any(|s| s.name == "answer")
        && spans
            .iter()
            .all(|s| s.parent_id.as_deref().is_none_or(|p| ids.contains(p)))
        && runs.len() == 2
        && runs.iter().all(|run| {
            let below = descendants(spans, run);
            ["round", "llm.call", "tool.call"]
                .iter()
                .all(|name| below.iter().any(|s| s.name == *name))
        })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_is_one_trace_in_phoenix() {
    let Some(backend) = Backend::start() else {
        return;
    };
    let started = Instant::now();

    let roles = tempfile::tempdir().unwrap();
    for name in ["reader", "scribe"] {
        std::fs::write(
            roles.path().join(format!("{name}.toml")),
            ROLE.replace("NAME", name),
        )
        .unwrap();
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "ship it").unwrap();
    let server = ScriptedServer::with_responder(responder).await;
    let run = hermes(
        &[
            "plan",
            "Summarise notes.txt into summary.txt",
            "--roles",
            roles.path().to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
            "--otlp",
            &backend.url,
            // A one-file task, planned so that the planner's spans are there.
            "--no-steer",
            "one_executor",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert!(
        !run.stderr.contains("cannot send traces"),
        "the exporter could not reach Phoenix: {}",
        run.stderr
    );
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    let trace_id = report["trace_id"].as_str().unwrap().to_string();

    // Phoenix stores spans in batches: poll its API until the tree is whole.
    let client = reqwest::Client::new();
    let deadline = Instant::now() + ARRIVAL;
    let spans = loop {
        let spans = all_spans(&client, &backend.url).await;
        if complete(&spans) || Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert!(
        complete(&spans),
        "spans missing after {ARRIVAL:?}: got {names:?}"
    );

    // One trace, the task's, in Phoenix's own trace list and in every span.
    let traces = get_json(
        &client,
        &format!("{}/v1/projects/default/traces?limit=100", backend.url),
    )
    .await;
    let listed: Vec<&str> = traces["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [trace_id.as_str()], "Phoenix's traces");
    assert!(
        spans.iter().all(|s| s.trace_id == trace_id),
        "a span outside trace {trace_id}: {spans:?}"
    );

    // Parent links: every span's parent is in the trace, except the root task.
    let by_id: HashMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    assert_eq!(by_id.len(), spans.len(), "span ids are unique");
    let parent = |s: &Span| -> &str {
        s.parent_id
            .as_deref()
            .and_then(|p| by_id.get(p))
            .map(|p| p.name.as_str())
            .unwrap_or_default()
    };
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent_id.is_none()).collect();
    assert_eq!(roots.len(), 1, "one root: {roots:?}");
    assert_eq!(roots[0].name, "task");
    for s in &spans {
        if let Some(p) = &s.parent_id {
            assert!(
                by_id.contains_key(p.as_str()),
                "{s:?}: parent {p} not in the trace"
            );
        }
    }
    let named = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();

    // The planner's spans.
    for name in ["plan", "answer"] {
        assert_eq!(named(name).len(), 1, "{name}");
        assert_eq!(parent(named(name)[0]), "task", "{name}");
    }
    for name in ["plan", "answer"] {
        let below = descendants(&spans, named(name)[0]);
        assert!(
            below.iter().any(|s| s.name == "llm.call"),
            "{name} has its llm.call"
        );
    }

    // Every executor's spans, under its subtask.
    let runs = named("executor.run");
    let mut roles_seen: Vec<&str> = Vec::new();
    for run in &runs {
        assert_eq!(parent(run), "subtask");
        roles_seen.push(run.attributes["hermes.role"].as_str().unwrap());
        let below = descendants(&spans, run);
        for name in ["round", "llm.call", "tool.call"] {
            assert!(
                below.iter().any(|s| s.name == name),
                "executor.run ({}) has no {name}",
                run.attributes["hermes.role"]
            );
        }
    }
    roles_seen.sort();
    assert_eq!(roles_seen, ["reader", "scribe"]);
    for round in named("round") {
        assert_eq!(parent(round), "executor.run");
    }
    for call in named("tool.call") {
        assert_eq!(parent(call), "round");
        assert!(
            ["read_file", "write_file"]
                .contains(&call.attributes["gen_ai.tool.name"].as_str().unwrap()),
            "{call:?}"
        );
    }

    // GenAI attributes on every model call (the scripted server's usage).
    let calls = named("llm.call");
    assert_eq!(
        calls.len(),
        named("round").len() + 2,
        "one per round, plan and answer"
    );
    for call in calls {
        assert!(
            ["round", "plan", "answer"].contains(&parent(call)),
            "{call:?}"
        );
        let attr = |key: &str| {
            call.attributes
                .get(key)
                .unwrap_or_else(|| panic!("llm.call without {key}: {call:?}"))
        };
        assert_eq!(attr("gen_ai.operation.name"), "chat");
        assert_eq!(attr("gen_ai.request.model"), "scripted");
        assert_eq!(
            attr("gen_ai.usage.input_tokens").as_i64(),
            Some(10),
            "{call:?}"
        );
        assert_eq!(
            attr("gen_ai.usage.output_tokens").as_i64(),
            Some(5),
            "{call:?}"
        );
        attr("gen_ai.request.max_tokens");
        attr("gen_ai.request.temperature");
    }
    note(&format!(
        "trace_backend: {} spans of trace {trace_id} checked in Phoenix, {:.1?} after start-up",
        spans.len(),
        started.elapsed()
    ));

    if let Some(path) = std::env::var_os("HERMES_TRACE_SCREENSHOT") {
        // The UI's own link for a trace id (it redirects to
        // /projects/<project id>/traces/<trace id>), as the README gives it.
        let url = format!("{}/redirects/traces/{trace_id}", backend.url);
        screenshot(&url, Path::new(&path));
    }
}

/// Headless Chromium's picture of `url` (Phoenix's trace view), as PNG.
fn screenshot(url: &str, path: &Path) {
    let size = std::env::var("HERMES_TRACE_SCREENSHOT_SIZE").unwrap_or_else(|_| "1600,1250".into());
    let profile = tempfile::tempdir().unwrap();
    let path = std::path::absolute(path).unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            // The UI is a single-page app: let it fetch and render, and
            // run its animations (the trace panel slides in) to the end.
            "--virtual-time-budget=30000",
            "--disable-threaded-animation",
            "--run-all-compositor-stages-before-draw",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={size}"))
        .arg(format!("--screenshot={}", path.display()))
        .arg(url)
        .output()
        .expect("start chromium (apt-get install chromium)");
    assert!(
        out.status.success() && path.is_file(),
        "chromium --screenshot {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    note(&format!(
        "trace_backend: screenshot of {url} in {}",
        path.display()
    ));
}

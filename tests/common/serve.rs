//! `hermes serve` for the tests that drive it: a served folder (workspace,
//! roles, store), the server started on a free port and read for its
//! address, a scripted model that plans and finishes, and the event
//! stream parsed.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{decision, finish, hermes_bin, messages_text, rounds_shown, text, Reply};

/// What the scripted model is asked: a plan, a final answer, or an
/// executor's next step (with the subtask's goal).
pub fn kind(request: &Value) -> (&'static str, String) {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .first()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    if system.contains("revising a plan") {
        ("replan", String::new())
    } else if system.contains("You are the planner") {
        let task = messages_text(request);
        ("plan", task)
    } else if system.contains("final answer of a team") {
        ("answer", String::new())
    } else {
        ("step", messages_text(request))
    }
}

/// A model that plans one `worker` subtask per task (two when the task
/// says "two steps"), finishes each subtask at once, and waits `slow`
/// per step when the subtask's goal says "slowly" (after a quick first
/// round when it says "slowly write").
pub fn model(slow: Duration) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |request| {
        let (what, text_of) = kind(request);
        match what {
            "plan" if text_of.contains("two steps") => Reply::Content(
                json!({"subtasks": [
                    {"id": "s1", "role": "worker", "goal": "count the files", "depends_on": []},
                    {"id": "s2", "role": "worker", "goal": "slowly write the report", "depends_on": ["s1"]}
                ]})
                .to_string(),
            ),
            "plan" => {
                let goal = if text_of.contains("slowly") {
                    "slowly do the task"
                } else {
                    "do the task"
                };
                Reply::Content(
                    json!({"subtasks": [{"id": "s1", "role": "worker", "goal": goal, "depends_on": []}]})
                        .to_string(),
                )
            }
            "answer" => text("FINAL: all done"),
            // The report is written after a look at the folder: one
            // round done at once, then the slow finish.
            "step" if text_of.contains("Goal: slowly write") && rounds_shown(request) == 0 => {
                decision("list_dir", json!({"path": "."}))
            }
            "step" if text_of.contains("slowly") => {
                Reply::Delay(slow, Box::new(finish("done slowly")))
            }
            "step" => finish("done"),
            _ => Reply::Status(500, "unexpected request".into()),
        }
    }
}

pub const ROLE: &str = "name = \"worker\"\ndescription = \"Does small jobs.\"\nsystem_prompt = \"You are the worker.\"\n[limits]\nmax_rounds = 4\n";

/// A served folder: workspace, roles and store, kept across restarts.
pub struct Site {
    pub dir: tempfile::TempDir,
}

impl Site {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("roles")).unwrap();
        std::fs::write(dir.path().join("roles/worker.toml"), ROLE).unwrap();
        std::fs::write(dir.path().join("ws/notes.txt"), "one\ntwo\n").unwrap();
        Self { dir }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A running `hermes serve`.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub stderr: Arc<std::sync::Mutex<String>>,
    /// The `--token` it was started with, sent by `get` and `post`.
    pub token: Option<String>,
}

impl Server {
    pub async fn start(site: &Site, model_url: &str, extra: &[&str]) -> Server {
        let mut child = serve_command(site, model_url, extra)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hermes serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                stderr.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(rest) = line.strip_prefix("hermes serve: listening on ") {
                    return rest.split_whitespace().next().unwrap().to_string();
                }
            }
            panic!(
                "hermes serve ended before it was ready: {}",
                stderr.lock().unwrap()
            );
        })
        .await
        .expect("hermes serve ready within 60 s");
        let log = Arc::clone(&stderr);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                log.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let token = extra
            .iter()
            .position(|a| *a == "--token")
            .map(|i| extra[i + 1].to_string());
        Server {
            child,
            url,
            stderr,
            token,
        }
    }

    /// Kills the server (as `kill -9` would) and waits until it is gone,
    /// so its store is free for the next server. Dropping a `Server`
    /// kills it without waiting: a restart on the same store right after
    /// could find the file still locked.
    pub async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorized(reqwest::Client::new().get(format!("{}{path}", self.url)))
    }

    /// `GET path`, read as JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        self.get(path).send().await.unwrap().json().await.unwrap()
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.authorized(reqwest::Client::new().post(format!("{}{path}", self.url)))
    }

    pub fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    pub async fn submit(&self, body: Value) -> Value {
        let response = self.post("/v1/tasks").json(&body).send().await.unwrap();
        assert_eq!(response.status(), 202, "{:?}", response.text().await);
        response.json().await.unwrap()
    }

    /// The task's whole event stream (it closes after `task_ended`).
    pub async fn events(&self, id: &str, after: Option<u64>) -> Vec<(u64, String, Value)> {
        let mut request = self.get(&format!("/v1/tasks/{id}/events"));
        if let Some(after) = after {
            request = request.header("Last-Event-ID", after.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body = tokio::time::timeout(Duration::from_secs(60), response.text())
            .await
            .expect("the stream closes after task_ended")
            .unwrap();
        parse_sse(&body)
    }

    /// The task's events so far: the stream read for a moment, not to its
    /// end (for a task still running).
    pub async fn events_so_far(&self, id: &str) -> Vec<(u64, String, Value)> {
        let mut response = self
            .get(&format!("/v1/tasks/{id}/events"))
            .send()
            .await
            .unwrap();
        let mut body = String::new();
        while let Ok(Some(chunk)) =
            tokio::time::timeout(Duration::from_millis(200), response.chunk())
                .await
                .unwrap_or(Ok(None))
        {
            body.push_str(&String::from_utf8_lossy(&chunk));
        }
        parse_sse(&body)
    }

    /// Waits up to 15 s for task `id`'s first event of `kind`; its data.
    pub async fn first_event(&self, id: &str, kind: &str) -> Option<Value> {
        for _ in 0..300 {
            let events = self.events_so_far(id).await;
            if let Some(event) = events.into_iter().find(|e| e.1 == kind) {
                return Some(event.2);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    pub async fn task(&self, id: &str) -> Value {
        self.get_json(&format!("/v1/tasks/{id}")).await
    }

    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

pub fn serve_command(site: &Site, model_url: &str, extra: &[&str]) -> Command {
    serve_on(
        site,
        "127.0.0.1:0",
        &site.path("serve.redb"),
        model_url,
        extra,
    )
}

/// `hermes serve` on `listen` with `store`, for `site`'s workspace and roles.
pub fn serve_on(
    site: &Site,
    listen: &str,
    store: &std::path::Path,
    model_url: &str,
    extra: &[&str],
) -> Command {
    let mut command = Command::new(hermes_bin());
    command
        .args(["serve", "--listen", listen, "--workspace"])
        .arg(site.path("ws"))
        .arg("--roles")
        .arg(site.path("roles"))
        .arg("--store")
        .arg(store)
        .args(["--tools", "read_file,write_file,list_dir"])
        .args(extra)
        .env("HERMES_BASE_URL", model_url)
        .env("HERMES_MODEL", "scripted")
        .env_remove("HERMES_TOKEN")
        .env_remove("HERMES_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true);
    command
}

pub fn parse_sse(body: &str) -> Vec<(u64, String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let (mut id, mut kind, mut data) = (None, None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event:") {
                    kind = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            Some((
                id?,
                kind?,
                serde_json::from_str(&data).unwrap_or(Value::Null),
            ))
        })
        .collect()
}

pub fn kinds(events: &[(u64, String, Value)]) -> Vec<&str> {
    events.iter().map(|e| e.1.as_str()).collect()
}

/// The page's rendered task view in a dumped DOM (from the detail section
/// to the page's script, which holds the templates).
pub fn detail_section(dom: &str) -> &str {
    let start = dom
        .find("<section id=\"detail\"")
        .expect("the detail section");
    let end = dom.find("<script").unwrap_or(dom.len());
    &dom[start..end.max(start)]
}

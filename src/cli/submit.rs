//! The clients of `hermes serve`: `hermes submit` (a task, then its
//! progress lines and report as `hermes plan` prints them, from the event
//! stream), `hermes tasks` (the list) and `hermes cancel`.

use std::time::Duration;

use clap::Args;
use hermes::actors::plan::PlannedSubtask;
use hermes::actors::{PlanEvent, TaskReport};
use serde_json::{json, Value};

use super::exit;
use super::output::print_result;
use super::plan::print_report;

/// Where the server is and how to get in.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The server's address, as `hermes serve` printed it.
    #[arg(
        long,
        env = "HERMES_SERVER",
        default_value = "http://127.0.0.1:7700",
        value_name = "URL"
    )]
    pub server: String,
    /// The server's bearer token (its --token).
    #[arg(
        long,
        env = "HERMES_TOKEN",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub token: Option<String>,
}

impl ServerArgs {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.trim_end_matches('/'))
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .unwrap_or_default();
        let request = client.request(method, self.url(path));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request` and reads a JSON answer; a refusal is the server's
    /// own `error` text.
    async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.server))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("{}: the answer is not JSON: {e}", self.server))?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!(
                "{} ({status})",
                body["error"]
                    .as_str()
                    .unwrap_or("the server refused the request")
            ))
        }
    }
}

/// Options of `hermes submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The task, in plain words.
    pub goal: String,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Task-wide deadline in seconds (else the server's).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// A folder under the server's workspace for this task's files.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// Print the id and return at once; the task runs on.
    #[arg(long)]
    pub detach: bool,
    /// Print the report as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Submits, follows the events, prints the report; exit codes as `hermes plan`.
pub async fn submit(args: SubmitArgs) -> i32 {
    let mut body = json!({ "goal": args.goal });
    if let Some(timeout) = args.timeout {
        body["timeout_secs"] = timeout.into();
    }
    if let Some(dir) = &args.workspace {
        body["workspace"] = dir.as_str().into();
    }
    let accepted = match args
        .server
        .json(
            args.server
                .request(reqwest::Method::POST, "/v1/tasks")
                .json(&body),
        )
        .await
    {
        Ok(accepted) => accepted,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::ERROR;
        }
    };
    let id = accepted["id"].as_str().unwrap_or_default().to_string();
    if args.detach {
        println!("{id}");
        return exit::OK;
    }
    eprintln!("[plan] submitted {id} to {}", args.server.server);
    let followed = tokio::select! {
        followed = follow(&args.server, &id) => followed,
        _ = tokio::signal::ctrl_c() => {
            eprintln!(
                "detached: {id} keeps running; cancel it with `hermes cancel {id} --server {}`",
                args.server.server
            );
            return exit::INTERRUPTED;
        }
    };
    if let Err(e) = followed {
        eprintln!("error: {e}");
        return exit::ERROR;
    }
    let task = match args
        .server
        .json(
            args.server
                .request(reqwest::Method::GET, &format!("/v1/tasks/{id}")),
        )
        .await
    {
        Ok(task) => task,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::ERROR;
        }
    };
    match serde_json::from_value::<TaskReport>(task.clone()) {
        Ok(report) if !args.json => {
            print_report(&report, false);
            exit::for_task(report.status)
        }
        Ok(report) => {
            print_result(Some(&task), "");
            exit::for_task(report.status)
        }
        // `cancelled` is the service's own end: partial results, stopped.
        Err(_) => {
            eprintln!("task {id}: {}", task["status"].as_str().unwrap_or("?"));
            let text = task["result"].as_str().unwrap_or_default();
            print_result(args.json.then_some(&task), text);
            exit::STOPPED
        }
    }
}

/// Prints the task's events as `hermes plan` prints its own, until
/// `task_ended`.
async fn follow(server: &ServerArgs, id: &str) -> Result<(), String> {
    let mut response = server
        .request(reqwest::Method::GET, &format!("/v1/tasks/{id}/events"))
        .send()
        .await
        .map_err(|e| format!("cannot reach {}: {e}", server.server))?;
    if !response.status().is_success() {
        return Err(format!("the event stream of {id}: {}", response.status()));
    }
    let mut buffer = String::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|e| format!("the event stream of {id} broke: {e}"))?;
        let Some(chunk) = chunk else {
            return Ok(());
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let (kind, data) = parse_block(&block);
            if let Some(event) = plan_event(&kind, &data) {
                eprintln!("[plan] {event}");
            }
            if kind == "task_ended" {
                return Ok(());
            }
        }
    }
}

fn parse_block(block: &str) -> (String, Value) {
    let mut kind = String::new();
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            kind = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.trim_start());
        }
    }
    (kind, serde_json::from_str(&data).unwrap_or(Value::Null))
}

/// The planner event a stream event stands for (rounds are not printed).
fn plan_event(kind: &str, data: &Value) -> Option<PlanEvent> {
    let text = |key: &str| data[key].as_str().unwrap_or_default().to_string();
    let list = |key: &str| -> Vec<String> {
        data[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    Some(match kind {
        "planned" => PlanEvent::Planned {
            subtasks: serde_json::from_value::<Vec<PlannedSubtask>>(data["subtasks"].clone())
                .unwrap_or_default(),
        },
        "subtask_started" => PlanEvent::Started {
            id: text("subtask"),
            role: text("role"),
            goal: text("goal"),
            node: text("node"),
        },
        "subtask_finished" => PlanEvent::Finished {
            id: text("subtask"),
            rounds: data["rounds"].as_u64().unwrap_or(0) as u32,
            result: text("result"),
        },
        "subtask_failed" if data["status"] == "cancelled" => PlanEvent::Cancelled {
            id: text("subtask"),
        },
        "subtask_failed" => PlanEvent::Failed {
            id: text("subtask"),
            reason: text("progress"),
        },
        "replanned" => PlanEvent::Replanned {
            failed: list("replaced").first().cloned().unwrap_or_default(),
            new: list("added"),
            replaced: list("replaced"),
            subtasks: serde_json::from_value(data["subtasks"].clone()).unwrap_or_default(),
        },
        "replan_failed" => PlanEvent::ReplanFailed {
            failed: text("subtask"),
            reason: text("reason"),
        },
        "subtask_restarted" => PlanEvent::Restarted {
            id: text("subtask"),
            after_round: data["after_round"].as_u64().unwrap_or(0) as usize,
        },
        _ => return None,
    })
}

/// Options of `hermes tasks`.
#[derive(Debug, Args)]
pub struct TasksArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Only tasks in this status (queued, running, finished, failed,
    /// timeout, error, cancelled).
    #[arg(long, value_name = "STATUS")]
    pub status: Option<String>,
    /// Print the list as one JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Lists the server's tasks, newest first.
pub async fn tasks(args: TasksArgs) -> i32 {
    let path = match &args.status {
        Some(status) => format!("/v1/tasks?status={status}"),
        None => "/v1/tasks".to_string(),
    };
    match args
        .server
        .json(args.server.request(reqwest::Method::GET, &path))
        .await
    {
        Ok(list) if args.json => {
            print_result(Some(&list), "");
            exit::OK
        }
        Ok(list) => {
            let rows: Vec<String> = list
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    format!(
                        "{:<10} {:<9} {}  {}",
                        t["id"].as_str().unwrap_or_default(),
                        t["status"].as_str().unwrap_or_default(),
                        t["created"].as_str().unwrap_or_default(),
                        hermes::text::clip(
                            &hermes::text::one_line(t["goal"].as_str().unwrap_or_default()),
                            70
                        )
                    )
                })
                .collect();
            print_result(None::<&Value>, &rows.join("\n"));
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

/// Options of `hermes cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The task's id (`task-N`).
    pub id: String,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// Cancels a queued or running task.
pub async fn cancel(args: CancelArgs) -> i32 {
    let path = format!("/v1/tasks/{}", args.id);
    match args
        .server
        .json(args.server.request(reqwest::Method::DELETE, &path))
        .await
    {
        Ok(_) => {
            println!("{} cancelled", args.id);
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

/// How long a client waits to connect to a server that does not answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

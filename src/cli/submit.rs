//! The clients of `hermes serve`: `hermes submit` (a task, then its
//! progress lines and report as `hermes plan` prints them, from the event
//! stream), `hermes tasks` (the list) and `hermes cancel`.

use clap::Args;
use hermes::actors::plan::PlannedSubtask;
use hermes::actors::{PlanEvent, TaskReport};
use hermes::approval::{ApprovalRequest, Approver, TerminalApprover};
use hermes::serve::client::Client;
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
    /// A client of this server.
    pub fn client(&self) -> Client {
        Client::new(&self.server, self.token.clone())
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
    let client = args.server.client();
    let accepted = match client.post("/v1/tasks", &body).await {
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
        followed = follow(&client, &id) => followed,
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
    let task = match client.get(&format!("/v1/tasks/{id}")).await {
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
/// `task_ended`; approval questions are asked on this terminal (or said
/// where to answer them when there is none).
async fn follow(client: &Client, id: &str) -> Result<(), String> {
    let (questions, mut asked) = tokio::sync::mpsc::unbounded_channel::<ApprovalRequest>();
    let terminal = TerminalApprover::stdin();
    let answering = {
        let (client, id) = (client.clone(), id.to_string());
        tokio::spawn(async move {
            while let Some(request) = asked.recv().await {
                let path = format!("/v1/tasks/{id}/approvals/{}", request.call_id);
                let Some(terminal) = &terminal else {
                    eprintln!(
                        "[approve] {} waits for approval: answer on the web page or POST {}{path} {{\"approve\": true}}",
                        request.summary(),
                        client.server()
                    );
                    continue;
                };
                let verdict = terminal.decide(&request).await;
                let body = json!({"approve": verdict.approved, "note": verdict.note});
                if let Err(e) = client.post(&path, &body).await {
                    // Someone else (the page) may have answered first.
                    eprintln!("[approve] {}: {e}", request.call_id);
                }
            }
        })
    };
    let followed = client
        .follow(id, |kind, data| {
            if kind == "approval_needed" {
                if let Ok(request) = serde_json::from_value(data.clone()) {
                    let _ = questions.send(request);
                }
            } else if let Some(event) = plan_event(kind, data) {
                eprintln!("[plan] {event}");
            }
        })
        .await;
    answering.abort();
    followed
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
    match args.server.client().get(&path).await {
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
    match args.server.client().delete(&path).await {
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

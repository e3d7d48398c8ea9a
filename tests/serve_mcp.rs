//! `hermes mcp serve` end to end: the real binary on stdio, driven by a
//! real MCP client (rmcp's), with the service in the same process or a
//! running `hermes serve` behind it, and a scripted model server.

mod common;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::serve::*;
use common::{hermes_bin, ScriptedServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, NumberOrString, ProgressNotificationParam,
    ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::process::Command;

/// An MCP client that keeps the progress messages it is sent, with their
/// progress values: rmcp may hand notifications to the handler out of
/// order, and the value is what orders them.
#[derive(Clone, Default)]
struct Client {
    progress: Arc<Mutex<Vec<(f64, String)>>>,
}

impl Client {
    /// The progress messages so far, in the order the server numbered them.
    fn messages(&self) -> Vec<String> {
        let mut notes = self.progress.lock().unwrap().clone();
        notes.sort_by(|a, b| a.0.total_cmp(&b.0));
        notes.into_iter().map(|(_, message)| message).collect()
    }

    /// Whether `last` has come and every message numbered before it too.
    fn all_up_to(&self, last: &str) -> bool {
        let notes = self.progress.lock().unwrap();
        notes
            .iter()
            .find(|(_, message)| message == last)
            .is_some_and(|(step, _)| {
                notes.iter().filter(|(s, _)| s <= step).count() as f64 == *step
            })
    }
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.message.unwrap_or_default()));
    }
}

type Session = RunningService<RoleClient, Client>;

/// `hermes mcp serve` with `args`, the scripted model at `model_url`.
fn mcp_command(args: &[&str], model_url: &str) -> Command {
    let mut command = Command::new(hermes_bin());
    command
        .args(["mcp", "serve"])
        .args(args)
        .env("HERMES_BASE_URL", model_url)
        .env("HERMES_MODEL", "scripted")
        .env_remove("HERMES_TOKEN")
        .env_remove("HERMES_API_KEY")
        .env_remove("OPENAI_API_KEY");
    command
}

async fn connect(command: Command, client: Client) -> Session {
    let transport = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn hermes mcp serve")
        .0;
    tokio::time::timeout(Duration::from_secs(60), client.serve(transport))
        .await
        .expect("hermes mcp serve answers the handshake within 60 s")
        .expect("an MCP session")
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(arguments.as_object().cloned().unwrap())
}

/// The structured answer of a successful call.
fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {result:?}"))
}

fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Polls `task_status` until the task has ended.
async fn ended(session: &Session, id: &str) -> Value {
    for _ in 0..300 {
        let status = structured(
            &session
                .call_tool(call("task_status", json!({ "id": id })))
                .await
                .unwrap(),
        );
        if !["queued", "running"].contains(&status["status"].as_str().unwrap()) {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{id} did not end within 30 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_hands_tasks_to_the_service_in_the_same_process() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let mut command = mcp_command(
        &["--tools", "read_file,write_file,list_dir"],
        &model.base_url,
    );
    command
        .arg("--workspace")
        .arg(site.path("ws"))
        .arg("--roles")
        .arg(site.path("roles"))
        .arg("--store")
        .arg(site.path("serve.redb"));
    let client = Client::default();
    let session = connect(command, client.clone()).await;

    let tools = session.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["submit_task", "task_status", "list_roles"]);
    assert_eq!(tools[0].input_schema["required"], json!(["goal"]));

    let roles = structured(
        &session
            .call_tool(call("list_roles", json!({})))
            .await
            .unwrap(),
    );
    assert_eq!(roles["roles"][0]["name"], "worker", "{roles}");
    assert_eq!(roles["roles"][0]["description"], "Does small jobs.");

    // Waiting (the default), with progress asked for: the report, and the
    // task's events as progress messages on the way.
    let mut params = call("submit_task", json!({"goal": "Count the notes"}));
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    params.meta = Some(meta);
    let report = structured(&session.call_tool(params).await.unwrap());
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["result"], "done");
    assert_eq!(report["goal"], "Count the notes");
    assert_eq!(report["subtasks"][0]["status"], "finished");
    // The notifications were sent before the answer, but the client may
    // still be handling the last of them.
    let mut progress = client.messages();
    for _ in 0..100 {
        if client.all_up_to("task ended: finished") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        progress = client.messages();
    }
    assert!(
        progress.contains(&"planned 1 subtask(s)".to_string())
            && progress.contains(&"s1 round 1: finish ok".to_string())
            && progress.last().map(String::as_str) == Some("task ended: finished"),
        "{progress:?}"
    );

    // Not waiting: the id at once, then task_status follows it.
    let accepted = structured(
        &session
            .call_tool(call(
                "submit_task",
                json!({"goal": "Do it in two steps", "wait": false}),
            ))
            .await
            .unwrap(),
    );
    let id = accepted["id"].as_str().unwrap().to_string();
    assert!(["queued", "running"].contains(&accepted["status"].as_str().unwrap()));
    let status = ended(&session, &id).await;
    assert_eq!(status["status"], "finished", "{status}");
    assert_eq!(status["subtasks"].as_array().unwrap().len(), 2);

    // Bad calls: clear errors, and the session goes on.
    let unknown_field = session
        .call_tool(call("submit_task", json!({"goal": "x", "priority": 1})))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown_field.contains("priority"), "{unknown_field}");
    let empty_goal = session
        .call_tool(call("submit_task", json!({"goal": "  "})))
        .await
        .unwrap();
    assert!(
        error_text(&empty_goal).contains("field `goal`"),
        "{empty_goal:?}"
    );
    let no_task = session
        .call_tool(call("task_status", json!({"id": "task-999"})))
        .await
        .unwrap();
    assert!(error_text(&no_task).contains("task-999"), "{no_task:?}");
    let bad_id = session
        .call_tool(call("task_status", json!({"id": "../roles"})))
        .await
        .unwrap_err()
        .to_string();
    assert!(bad_id.contains("not a task id"), "{bad_id}");
    let no_tool = session
        .call_tool(call("delete_everything", json!({})))
        .await
        .unwrap_err()
        .to_string();
    assert!(no_tool.contains("submit_task"), "{no_tool}");

    // The tasks are in the store like any served task's.
    let status = structured(
        &session
            .call_tool(call("task_status", json!({ "id": id })))
            .await
            .unwrap(),
    );
    assert_eq!(status["id"], id.as_str());
    session.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_reaches_a_running_server_with_its_token() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--token", "s3cret"]).await;

    let session = connect(
        mcp_command(
            &["--server", &server.url, "--token", "s3cret"],
            &model.base_url,
        ),
        Client::default(),
    )
    .await;
    let report = structured(
        &session
            .call_tool(call("submit_task", json!({"goal": "Count the notes"})))
            .await
            .unwrap(),
    );
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["result"], "done");
    let id = report["id"].as_str().unwrap();
    // The same task, as the server shows it over HTTP.
    let task = server.task(id).await;
    assert_eq!(task["status"], "finished");
    assert_eq!(task["goal"], "Count the notes");
    let roles = structured(
        &session
            .call_tool(call("list_roles", json!({})))
            .await
            .unwrap(),
    );
    assert_eq!(roles["roles"][0]["name"], "worker");
    let missing = session
        .call_tool(call("task_status", json!({"id": "task-404"})))
        .await
        .unwrap();
    assert!(error_text(&missing).contains("404"), "{missing:?}");
    session.cancel().await.unwrap();

    // A wrong token, or no server at the address: refused at start, named.
    for (args, expected) in [
        (
            vec!["--server", server.url.as_str(), "--token", "wrong"],
            "401",
        ),
        (
            vec!["--server", "http://127.0.0.1:9"],
            "cannot reach http://127.0.0.1:9",
        ),
    ] {
        let out = mcp_command(&args, &model.base_url)
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

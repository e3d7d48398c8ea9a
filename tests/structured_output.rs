//! Structured output over HTTP: decisions ask the server for the decision's
//! JSON schema (`response_format` `json_schema`), step down to
//! `json_object` and then to nothing when the server refuses, and
//! `--no-grammar` asks for `json_object` only. Against the scripted
//! loopback server, through the `hermes` binary.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{decision, finish, hermes, text, Reply, ScriptedServer};
use serde_json::{json, Value};

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "Hermes runs agents.\n").unwrap();
    dir
}

async fn run(ws: &tempfile::TempDir, server: &ScriptedServer, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "run",
        "read notes.txt, then finish",
        "--workspace",
        ws.path().to_str().unwrap(),
        "--no-memory",
        "--json",
    ];
    args.extend_from_slice(extra);
    hermes(&args, &server.base_url).await
}

fn format_type(request: &Value) -> Option<&str> {
    request["response_format"]["type"].as_str()
}

#[tokio::test(flavor = "multi_thread")]
async fn decisions_ask_for_the_decision_schema() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "notes.txt"})),
        finish("read it"),
    ])
    .await;
    let done = run(&ws, &server, &[]).await;
    assert_eq!(done.code, 0, "{}", done.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(format_type(request), Some("json_schema"), "{request}");
        let format = &request["response_format"]["json_schema"];
        assert_eq!(format["name"], "decision");
        // The schema is the registry's: every tool and finish, with args.
        let actions = format["schema"]["properties"]["action"]["anyOf"]
            .as_array()
            .expect("one schema per action");
        let names: Vec<&str> = actions
            .iter()
            .filter_map(|a| a["properties"]["name"]["const"].as_str())
            .collect();
        for name in ["read_file", "write_file", "list_dir", "finish"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        assert_eq!(format["schema"]["required"], json!(["thought", "action"]));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_refuses_the_schema_is_asked_with_json_object_then_with_nothing() {
    let ws = workspace();
    // Refuses json_schema always, json_object once; answers otherwise.
    let object_refusals = Arc::new(AtomicUsize::new(0));
    let refused = Arc::clone(&object_refusals);
    let answers = Arc::new(AtomicUsize::new(0));
    let server = ScriptedServer::with_responder(move |request| {
        match format_type(request) {
            Some("json_schema") => {
                return Reply::Status(
                    400,
                    r#"{"error":{"message":"Unrecognized schema: json_schema is not supported"}}"#
                        .into(),
                )
            }
            Some("json_object") if refused.fetch_add(1, Ordering::SeqCst) == 1 => {
                return Reply::Status(
                    400,
                    r#"{"error":{"message":"'response_format' of type 'json_object' is not supported with this model"}}"#
                        .into(),
                )
            }
            _ => {}
        }
        match answers.fetch_add(1, Ordering::SeqCst) {
            0 => decision("read_file", json!({"path": "notes.txt"})),
            1 => finish("read it"),
            _ => text("no more"),
        }
    })
    .await;
    let done = run(&ws, &server, &[]).await;
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(done.outcome()["status"], "finished");
    let sent: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| format_type(r).map(String::from))
        .collect();
    let named = |s: &str| Some(s.to_string());
    assert_eq!(
        sent,
        [
            named("json_schema"), // round 1: refused
            named("json_object"), // taken
            named("json_object"), // round 2: the schema is not tried again; refused
            None,                 // taken, and nothing from now on
        ]
    );
    assert!(
        done.stderr.contains("refused response_format json_schema"),
        "{}",
        done.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_grammar_asks_for_json_object_only() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![finish("nothing to do")]).await;
    let done = run(&ws, &server, &["--no-grammar"]).await;
    assert_eq!(done.code, 0, "{}", done.stderr);
    let requests = server.requests();
    assert_eq!(format_type(&requests[0]), Some("json_object"));
    assert!(requests[0]["response_format"].get("json_schema").is_none());
}

//! Approvals end to end: `hermes run` with `--approve` and no terminal
//! (refused, fail closed) or `--approve-all`; role files' `approve` rules
//! checked; and `hermes serve`, where a call waits for `POST
//! /v1/tasks/{id}/approvals/{call_id}`: granted, denied, timed out,
//! answered twice, and pending across a `kill -9`.

mod common;

use std::time::Duration;

use common::serve::{detail_section, Server, Site};
use common::{decision, finish, hermes, journal_lines, messages_text, rounds_shown, text};
use common::{Reply, ScriptedServer};
use serde_json::{json, Value};

/// Writes `out.txt` in its first round, then finishes saying whether the
/// write ran. Plans one `worker` subtask when asked for a plan.
fn writer(request: &Value) -> Reply {
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    if system.contains("You are the planner") && messages_text(request).contains("twice") {
        return Reply::Content(
            json!({"subtasks": [
                {"id": "s1", "role": "worker", "goal": "write the greeting", "depends_on": []},
                {"id": "s2", "role": "worker", "goal": "write the greeting again", "depends_on": []}
            ]})
            .to_string(),
        );
    }
    if system.contains("You are the planner") {
        return Reply::Content(
            json!({"subtasks": [{"id": "s1", "role": "worker", "goal": "write the greeting", "depends_on": []}]})
                .to_string(),
        );
    }
    if system.contains("final answer of a team") {
        return text("FINAL");
    }
    if rounds_shown(request) == 0 {
        return decision("write_file", json!({"path": "out.txt", "content": "hello"}));
    }
    if messages_text(request).contains("not run:") {
        finish("refused")
    } else {
        finish("written")
    }
}

/// `hermes run "Write a greeting"` in `workspace` with `flags`; the run
/// and its journal lines.
async fn run_writer(
    model: &ScriptedServer,
    workspace: &std::path::Path,
    journal: &std::path::Path,
    flags: &[&str],
) -> (common::Run, Vec<Value>) {
    let mut args = vec![
        "run",
        "Write a greeting",
        "--workspace",
        workspace.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(flags);
    let run = hermes(&args, &model.base_url).await;
    let lines = journal_lines(journal);
    (run, lines)
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_a_call_that_needs_approval_is_refused_and_the_run_goes_on() {
    let model = ScriptedServer::with_responder(writer).await;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let journal = dir.path().join("journal.jsonl");
    let (run, lines) = run_writer(&model, &workspace, &journal, &["--approve", "write_file"]).await;
    assert!(!workspace.join("out.txt").exists(), "{}", run.stderr);
    let first = &lines[0];
    assert_eq!(first["action"], "write_file");
    assert_eq!(first["status"], "error");
    assert_eq!(first["approval"]["approved"], false, "{first}");
    assert_eq!(first["approval"]["by"], "no terminal");
    assert!(first["observation"]
        .as_str()
        .unwrap()
        .contains("no terminal"));
    assert_eq!(run.outcome()["result"], "refused", "{}", run.stderr);

    // --approve-all: the call runs, and the journal says a policy decided.
    let journal = dir.path().join("all.jsonl");
    let flags = [
        "--approve",
        "write_file:unless_path=notes/**",
        "--approve-all",
    ];
    let (run, lines) = run_writer(&model, &workspace, &journal, &flags).await;
    assert_eq!(run.outcome()["result"], "written", "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(workspace.join("out.txt")).unwrap(),
        "hello"
    );
    assert_eq!(lines[0]["approval"]["by"], "policy");
    assert_eq!(lines[0]["approval"]["approved"], true);

    // A condition that lets the call through asks nobody.
    let journal = dir.path().join("through.jsonl");
    let flags = ["--approve", "write_file:unless_path=*.txt"];
    let (run, lines) = run_writer(&model, &workspace, &journal, &flags).await;
    assert_eq!(run.outcome()["result"], "written", "{}", run.stderr);
    assert!(lines[0].get("approval").is_none());

    // A bad flag is refused before anything runs.
    let bad = hermes(
        &["run", "x", "--approve", "write_file:unless_size=3"],
        &model.base_url,
    )
    .await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("unless_size"), "{}", bad.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_s_approve_rules_are_checked_and_fail_closed_in_a_plan() {
    let model = ScriptedServer::with_responder(writer).await;
    let dir = tempfile::tempdir().unwrap();
    let roles = dir.path().join("roles");
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&roles).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        roles.join("worker.toml"),
        "name = \"worker\"\ndescription = \"Writes.\"\nsystem_prompt = \"You write.\"\napprove = [{ tool = \"write_file\", unless_path = [\"out/**\"] }]\n",
    )
    .unwrap();
    let run = hermes(
        &[
            "plan",
            "Write a greeting",
            "--roles",
            roles.to_str().unwrap(),
            "--workspace",
            workspace.to_str().unwrap(),
            "--json",
        ],
        &model.base_url,
    )
    .await;
    let report = run.outcome();
    assert_eq!(report["subtasks"][0]["result"], "refused", "{report}");
    assert!(!workspace.join("out.txt").exists());
    let asked = model
        .requests()
        .iter()
        .any(|r| messages_text(r).contains("there is no terminal to ask"));
    assert!(asked, "the model hears why the call did not run");

    // A rule naming a tool that does not exist is the role file's error.
    std::fs::write(
        roles.join("worker.toml"),
        "name = \"worker\"\ndescription = \"Writes.\"\nsystem_prompt = \"You write.\"\napprove = [\"launch_rockets\"]\n",
    )
    .unwrap();
    let run = hermes(
        &["roles", "--roles", roles.to_str().unwrap()],
        &model.base_url,
    )
    .await;
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("field `approve`") && run.stderr.contains("launch_rockets"),
        "{}",
        run.stderr
    );
}

/// The events of task `id` so far (the stream read for a moment).
/// Waits for task `id`'s `approval_needed` event and returns its data.
async fn question(server: &Server, id: &str) -> Value {
    server
        .first_event(id, "approval_needed")
        .await
        .unwrap_or_else(|| panic!("no approval_needed for {id}"))
}

async fn answer(server: &Server, id: &str, call_id: &str, body: Value) -> (u16, Value) {
    let response = server
        .post(&format!("/v1/tasks/{id}/approvals/{call_id}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

async fn submit(server: &Server) -> String {
    server.submit(json!({"goal": "Write a greeting"})).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_call_waits_for_its_answer_over_http() {
    let model = ScriptedServer::with_responder(writer).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;

    // Granted: the event names the exact call; only then does it run.
    let id = submit(&server).await;
    let asked = question(&server, &id).await;
    assert_eq!(asked["tool"], "write_file");
    assert_eq!(asked["subtask"], "s1");
    assert_eq!(
        asked["args"],
        json!({"path": "out.txt", "content": "hello"})
    );
    assert_eq!(asked["round"], 1);
    assert!(asked["args_hash"].as_str().unwrap().len() >= 16);
    assert!(!site.path("ws/out.txt").exists(), "ran before the answer");
    let call_id = asked["call_id"].as_str().unwrap().to_string();
    let (status, record) = answer(
        &server,
        &id,
        &call_id,
        json!({"approve": true, "note": "ok"}),
    )
    .await;
    assert_eq!(
        (status, record["state"].as_str()),
        (200, Some("approved")),
        "{record}"
    );
    let events = server.events(&id, None).await;
    let task = server.task(&id).await;
    assert_eq!(task["subtasks"][0]["result"], "written", "{task}");
    assert_eq!(
        std::fs::read_to_string(site.path("ws/out.txt")).unwrap(),
        "hello"
    );
    let decided: Vec<_> = events
        .iter()
        .filter(|e| e.1 == "approval_decided")
        .collect();
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0].2["by"], "http");
    let round = events.iter().find(|e| e.1 == "round").unwrap();
    assert_eq!(round.2["journal"]["approval"]["approved"], true);
    // Answered twice: 409; an unknown question or task: 404; a bad body: 400.
    let (status, body) = answer(&server, &id, &call_id, json!({"approve": false})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("already approved"));
    assert_eq!(
        answer(&server, &id, "s1-r9-0000", json!({"approve": true}))
            .await
            .0,
        404
    );
    assert_eq!(
        answer(&server, "task-999", &call_id, json!({"approve": true}))
            .await
            .0,
        404
    );
    assert_eq!(
        answer(&server, &id, &call_id, json!({"approve": "yes"}))
            .await
            .0,
        400
    );

    // Denied: the call does not run; the model hears why and goes on.
    std::fs::remove_file(site.path("ws/out.txt")).unwrap();
    let id = submit(&server).await;
    let asked = question(&server, &id).await;
    let call_id = asked["call_id"].as_str().unwrap();
    let (status, _) = answer(
        &server,
        &id,
        call_id,
        json!({"approve": false, "note": "not now"}),
    )
    .await;
    assert_eq!(status, 200);
    server.events(&id, None).await;
    let task = server.task(&id).await;
    assert_eq!(task["subtasks"][0]["result"], "refused", "{task}");
    assert!(!site.path("ws/out.txt").exists());
    let asked_again = model
        .requests()
        .iter()
        .any(|r| messages_text(r).contains("refused by a person (http): not now"));
    assert!(asked_again, "the refusal and its note reach the model");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_call_times_out_refused_and_a_pending_one_survives_kill_9() {
    let model = ScriptedServer::with_responder(writer).await;
    let site = Site::new();
    let server = Server::start(
        &site,
        &model.base_url,
        &["--approve", "write_file", "--approval-timeout", "1"],
    )
    .await;
    let id = submit(&server).await;
    let asked = question(&server, &id).await;
    let call_id = asked["call_id"].as_str().unwrap().to_string();
    let events = server.events(&id, None).await;
    let decided = events.iter().find(|e| e.1 == "approval_decided").unwrap();
    assert_eq!(decided.2["state"], "expired");
    assert_eq!(server.task(&id).await["subtasks"][0]["result"], "refused");
    let (status, _) = answer(&server, &id, &call_id, json!({"approve": true})).await;
    assert_eq!(status, 409, "too late");
    server.kill().await;

    // Pending at a kill -9: after the restart the same call waits again
    // (no second question), and the answer runs it.
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;
    let id = submit(&server).await;
    let asked = question(&server, &id).await;
    let call_id = asked["call_id"].as_str().unwrap().to_string();
    server.kill().await;
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;
    let (status, record) = answer(&server, &id, &call_id, json!({"approve": true})).await;
    assert_eq!(status, 200, "{record}");
    let events = server.events(&id, None).await;
    let questions = events.iter().filter(|e| e.1 == "approval_needed").count();
    assert_eq!(questions, 1, "{events:?}");
    let task = server.task(&id).await;
    assert_eq!(task["status"], "finished", "{task}");
    assert_eq!(task["subtasks"][0]["result"], "written", "{task}");
    assert_eq!(
        std::fs::read_to_string(site.path("ws/out.txt")).unwrap(),
        "hello"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_page_shows_a_pending_approval_with_its_buttons_in_chromium() {
    let Some(chromium) = common::browser::chromium_or_skip("the approval box's browser check")
    else {
        return;
    };
    let model = ScriptedServer::with_responder(writer).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;
    let id = submit(&server).await;
    let asked = question(&server, &id).await;
    let url = format!("{}/#{id}", server.url);
    let profile = tempfile::tempdir().unwrap();
    let dom = tokio::task::spawn_blocking(move || {
        common::browser::dump_dom(
            &chromium,
            &url,
            profile.path(),
            &["--virtual-time-budget=5000"],
        )
    })
    .await
    .unwrap();
    let dom = detail_section(&dom);
    assert!(
        dom.contains("Approval needed: s1 (worker), round 1"),
        "{dom}"
    );
    assert!(dom.contains("write_file({"), "{dom}");
    assert!(
        dom.contains("class=\"approve\"") && dom.contains("class=\"deny\""),
        "{dom}"
    );
    let call_id = asked["call_id"].as_str().unwrap();
    assert!(dom.contains(&format!("data-call=\"{call_id}\"")), "{dom}");
    answer(&server, &id, call_id, json!({"approve": false})).await;
    server.events(&id, None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hermes_submit_says_where_to_answer_when_it_has_no_terminal() {
    let model = ScriptedServer::with_responder(writer).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;
    let submit = tokio::process::Command::new(common::hermes_bin())
        .args(["submit", "Write a greeting", "--server", &server.url])
        .env_remove("HERMES_TOKEN")
        .stdin(std::process::Stdio::null())
        .output();
    let submit = tokio::spawn(submit);
    // The question comes from the one task there is.
    let id = loop {
        let list: Value = server.get_json("/v1/tasks").await;
        if let Some(id) = list[0]["id"].as_str() {
            break id.to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let asked = question(&server, &id).await;
    let (status, _) = answer(
        &server,
        &id,
        asked["call_id"].as_str().unwrap(),
        json!({"approve": true}),
    )
    .await;
    assert_eq!(status, 200);
    let out = submit.await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[approve] s1 (worker), round 1: write_file(")
            && stderr.contains("waits for approval")
            && stderr.contains(&format!("/v1/tasks/{id}/approvals/")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_executors_wait_at_once_and_each_gets_its_own_answer() {
    let model = ScriptedServer::with_responder(writer).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--approve", "write_file"]).await;
    let id = server
        .submit(json!({"goal": "Write a greeting twice"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut asked = Vec::new();
    for _ in 0..300 {
        asked = server
            .events_so_far(&id)
            .await
            .into_iter()
            .filter(|e| e.1 == "approval_needed")
            .map(|e| e.2)
            .collect();
        if asked.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(asked.len(), 2, "both wait: {asked:?}");
    let call = |subtask: &str| {
        asked
            .iter()
            .find(|a| a["subtask"] == subtask)
            .map(|a| a["call_id"].as_str().unwrap().to_string())
            .unwrap()
    };
    let (s1, s2) = (call("s1"), call("s2"));
    assert_ne!(s1, s2, "the same call in two subtasks is two questions");
    // The second first: each answer reaches its own call only.
    assert_eq!(
        answer(&server, &id, &s2, json!({"approve": true})).await.0,
        200
    );
    assert_eq!(
        answer(&server, &id, &s1, json!({"approve": false})).await.0,
        200
    );
    server.events(&id, None).await;
    let task = server.task(&id).await;
    let result = |i: usize| task["subtasks"][i]["result"].clone();
    assert_eq!(
        (result(0), result(1)),
        (json!("refused"), json!("written")),
        "{task}"
    );
}

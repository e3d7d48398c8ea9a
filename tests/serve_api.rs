//! `hermes serve` end to end: the real binary on loopback, a scripted
//! OpenAI-compatible model server, and plain HTTP requests (reqwest, as
//! curl would send them). Tasks, events, cancellation, roles, tokens, bad
//! input, a model server that goes down, and a `kill -9` in the middle of
//! a task followed by a restart on the same store.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::serve::*;
use common::{hermes_bin, messages_text, rounds_shown, ScriptedServer};
use serde_json::{json, Value};
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread")]
async fn a_task_submitted_over_http_streams_its_events_and_reports_like_plan() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let health: Value = server.get_json("/healthz").await;
    assert_eq!(health, json!({"status": "ok", "tasks_running": 0}));

    let accepted = server.submit(json!({"goal": "Count the notes"})).await;
    let id = accepted["id"].as_str().unwrap().to_string();
    assert!(["queued", "running"].contains(&accepted["status"].as_str().unwrap()));
    assert!(accepted.as_object().unwrap().contains_key("trace_id"));

    let events = server.events(&id, None).await;
    assert_eq!(
        kinds(&events),
        [
            "queued",
            "planned",
            "subtask_started",
            "round",
            "subtask_finished",
            "task_ended"
        ],
        "{events:?}"
    );
    let ids: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[1].2["subtasks"][0]["role"], "worker");
    assert_eq!(events[3].2["action"], "finish");
    assert_eq!(events[4].2["result"], "done");
    assert_eq!(events[5].2, json!({"status": "finished", "result": "done"}));

    let task = server.task(&id).await;
    assert_eq!(task["status"], "finished", "{task}");
    assert_eq!(task["result"], "done");
    assert_eq!(task["goal"], "Count the notes");
    assert_eq!(task["subtasks"][0]["status"], "finished");
    assert!(task["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(
        task["created"].is_string() && task["ended"].is_string(),
        "{task}"
    );

    // A late client resumes after event 4: only what came after.
    let resumed = server.events(&id, Some(4)).await;
    assert_eq!(kinds(&resumed), ["subtask_finished", "task_ended"]);

    let listed: Value = server.get_json("/v1/tasks?status=finished").await;
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["status"], "finished");
    let metrics = server
        .get("/metrics")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("hermes_tasks{status=\"finished\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("hermes_rounds_total 1"), "{metrics}");
    let page = server.get("/").send().await.unwrap().text().await.unwrap();
    assert!(
        page.contains("<svg") || page.contains("graph"),
        "the page is served"
    );
    for external in ["<script src", "<link", "@import", "url(http", "src=\"http"] {
        assert!(
            !page.contains(external),
            "no external resources: {external}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_clear_errors_and_lose_nothing() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let post = |body: String| async {
        let response = server
            .post("/v1/tasks")
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        (
            status,
            body["error"].as_str().unwrap_or_default().to_string(),
        )
    };
    let cases = [
        ("{not json", "invalid task"),
        (
            r#"{"goal": "x", "colour": "red"}"#,
            "unknown field `colour`",
        ),
        (r#"{"goal": 5}"#, "invalid type"),
        (r#"{}"#, "missing field `goal`"),
        (r#"{"goal": "   "}"#, "field `goal`: must not be empty"),
        (
            r#"{"goal": "x", "workspace": "../elsewhere"}"#,
            "field `workspace`",
        ),
        (r#"{"goal": "x", "workspace": "/etc"}"#, "field `workspace`"),
    ];
    for (body, expected) in cases {
        let (status, error) = post(body.to_string()).await;
        assert_eq!(status, 400, "{body}: {error}");
        assert!(error.contains(expected), "{body}: {error}");
    }
    let (status, error) = post(json!({"goal": "x".repeat(1_000_000)}).to_string()).await;
    assert_eq!(status, 400, "{error}");
    assert!(error.contains("at most 100000"), "{error}");
    let (status, error) = post(format!("{{\"goal\": \"{}\"}}", "x".repeat(2 << 20))).await;
    assert_eq!(status, 413, "{error}");

    let missing = server.get("/v1/tasks/task-999").send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let events = server.get("/v1/tasks/nope/events").send().await.unwrap();
    assert_eq!(events.status(), 404);
    let status = server
        .get("/v1/tasks?status=sleeping")
        .send()
        .await
        .unwrap();
    assert_eq!(status.status(), 400);

    // Nothing was recorded for the refused requests; a good one still works.
    let listed: Value = server.get_json("/v1/tasks").await;
    assert_eq!(listed, json!([]));
    let accepted = server
        .submit(json!({"goal": "Count", "workspace": "team/a"}))
        .await;
    let id = accepted["id"].as_str().unwrap();
    let events = server.events(id, None).await;
    assert_eq!(events.last().unwrap().2["status"], "finished");
    assert!(
        site.path("ws/team/a").is_dir(),
        "the task's workspace was made"
    );
    let again = reqwest::Client::new()
        .delete(format!("{}/v1/tasks/{id}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409, "an ended task cannot be cancelled");

    // Roles: a bad one names its field; a duplicate is a conflict.
    let role = |body: &str, content_type: &str| {
        server
            .post("/v1/roles")
            .header("Content-Type", content_type)
            .body(body.to_string())
            .send()
    };
    let bad = role("name = \"x\"\ndescription = \"d\"\n", "application/toml")
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("system_prompt"));
    let unknown_tool = role(
        r#"{"name": "x", "description": "d", "system_prompt": "s", "tools": ["rm_rf"]}"#,
        "application/json",
    )
    .await
    .unwrap();
    assert_eq!(unknown_tool.status(), 400);
    assert!(unknown_tool.text().await.unwrap().contains("rm_rf"));
    let dup = role(ROLE, "text/plain").await.unwrap();
    assert_eq!(dup.status(), 409);
    assert!(
        server.log().lines().all(|l| !l.contains("panicked")),
        "{}",
        server.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_guards_the_api_and_an_open_address_needs_one() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--token", "s3cret"]).await;
    let anonymous = reqwest::get(format!("{}/v1/tasks", server.url))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let body: Value = anonymous.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("Bearer"));
    let wrong = reqwest::Client::new()
        .get(format!("{}/metrics", server.url))
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = server.get("/v1/tasks").send().await.unwrap();
    assert_eq!(right.status(), 200);
    assert_eq!(server.get("/healthz").send().await.unwrap().status(), 200);
    drop(server);

    let open = serve_on(
        &site,
        "0.0.0.0:0",
        &site.path("other.redb"),
        &model.base_url,
        &[],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(open.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&open.stderr).contains("--token"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_in_use_or_corrupt_is_refused_by_name() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let _first = Server::start(&site, &model.base_url, &[]).await;
    let second = serve_command(&site, &model.base_url, &[])
        .output()
        .await
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("serve.redb") && stderr.contains("in use"),
        "{stderr}"
    );

    std::fs::write(site.path("junk.redb"), "not a store ".repeat(500)).unwrap();
    let corrupt = serve_on(
        &site,
        "127.0.0.1:0",
        &site.path("junk.redb"),
        &model.base_url,
        &[],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(corrupt.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&corrupt.stderr).contains("junk.redb"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_task_is_cancelled_and_partial_results_are_kept() {
    let model = ScriptedServer::with_responder(model(Duration::from_secs(30))).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let id = server.submit(json!({"goal": "Do this slowly"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for_event(&server, &id, "subtask_started").await;
    let cancelled = reqwest::Client::new()
        .delete(format!("{}/v1/tasks/{id}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    assert_eq!(
        cancelled.json::<Value>().await.unwrap(),
        json!({"id": id, "status": "cancelled"})
    );
    let events = server.events(&id, None).await;
    let ended: Vec<_> = events.iter().filter(|e| e.1 == "task_ended").collect();
    assert_eq!(ended.len(), 1, "{events:?}");
    assert_eq!(ended[0].2["status"], "cancelled");
    let task = server.task(&id).await;
    assert_eq!(task["status"], "cancelled");
    // What was planned and started stays in the report.
    assert_eq!(task["subtasks"][0]["id"], "s1", "{task}");
    assert_eq!(task["goal"], "Do this slowly");
}

async fn wait_for_event(server: &Server, id: &str, kind: &str) {
    wait_for_events(server, id, kind, 1).await;
}

/// Waits until task `id` has had `count` events of `kind`.
async fn wait_for_events(server: &Server, id: &str, kind: &str, count: usize) {
    for _ in 0..300 {
        // The stream from the start, cut short: read what came so far.
        let response = server
            .get(&format!("/v1/tasks/{id}/events"))
            .send()
            .await
            .unwrap();
        let mut body = String::new();
        let mut stream = response;
        while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_millis(200), stream.chunk())
            .await
            .unwrap_or(Ok(None))
        {
            body.push_str(&String::from_utf8_lossy(&chunk));
        }
        if parse_sse(&body).iter().filter(|e| e.1 == kind).count() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no {kind} event for {id}");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_kill_9_a_restarted_server_resumes_the_task_without_running_finished_work_again() {
    let respond = model(Duration::from_secs(4));
    let model = ScriptedServer::with_responder(respond).await;
    let site = Site::new();
    let mut server = Server::start(&site, &model.base_url, &["--concurrency", "1"]).await;
    let id = server.submit(json!({"goal": "Do it in two steps"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A second task waits for the one slot: still queued at the crash.
    let waiting = server.submit(json!({"goal": "Count the notes"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for_event(&server, &id, "subtask_finished").await;
    // s2 has done one round (a quick list_dir) and waits on its slow second.
    wait_for_events(&server, &id, "round", 2).await;
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    let before = server.url.clone();

    let server = Server::start(&site, &model.base_url, &["--concurrency", "1"]).await;
    assert_ne!(server.url, before, "a new process");
    let events = server.events(&id, None).await;
    let ids: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(
        ids,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "numbered on"
    );
    let ended: Vec<_> = events.iter().filter(|e| e.1 == "task_ended").collect();
    assert_eq!(ended.len(), 1, "{events:?}");
    assert_eq!(ended[0].2["status"], "finished", "{events:?}");
    assert_eq!(kinds(&events).iter().filter(|k| **k == "queued").count(), 1);
    let task = server.task(&id).await;
    assert_eq!(task["status"], "finished");
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["subtasks"][0]["result"], "done", "s1's result is kept");
    // s2 restarted from its journal: after its one round, not from round 1.
    let restarted: Vec<_> = events
        .iter()
        .filter(|e| e.1 == "subtask_restarted")
        .collect();
    assert_eq!(restarted.len(), 1, "{events:?}");
    assert_eq!(
        restarted[0].2,
        json!({"subtask": "s2", "after_round": 1}),
        "{events:?}"
    );
    // The task that was queued at the crash ran once after it, with one
    // `queued` and one `task_ended`.
    let queued = server.events(&waiting, None).await;
    assert_eq!(
        kinds(&queued),
        [
            "queued",
            "planned",
            "subtask_started",
            "round",
            "subtask_finished",
            "task_ended"
        ],
        "{queued:?}"
    );
    // Counted once both tasks have ended (the queued one plans after).
    // The planner was asked once for this task (the second plan is the
    // queued task's), and s1 ran once: the restart reused the plan and
    // s1's result. s2 was asked its first round once, and its second
    // twice (cut short by the kill, then again with round 1 in view).
    let requests = model.requests();
    let asked: Vec<(&str, String)> = requests.iter().map(kind).collect();
    let plans = asked.iter().filter(|(what, _)| *what == "plan").count();
    let s1_runs = asked
        .iter()
        .filter(|(what, text)| *what == "step" && text.contains("Goal: count the files"))
        .count();
    let s2_rounds: Vec<usize> = requests
        .iter()
        .zip(&asked)
        .filter(|(_, (what, text))| {
            *what == "step" && text.contains("Goal: slowly write the report")
        })
        .map(|(request, _)| rounds_shown(request))
        .collect();
    assert_eq!((plans, s1_runs), (2, 1), "{asked:?}");
    assert_eq!(s2_rounds, [0, 1, 1], "{asked:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_registered_over_http_are_stored_and_planned_with_after_a_restart() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let created = server
        .post("/v1/roles")
        .header("Content-Type", "application/json")
        .body(r#"{"name": "poet", "description": "Writes verse.", "system_prompt": "You write verse.", "tools": ["write_file"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    assert_eq!(
        created.json::<Value>().await.unwrap(),
        json!({"name": "poet"})
    );
    server.kill().await;
    let server = Server::start(&site, &model.base_url, &[]).await;
    let roles: Value = server.get_json("/v1/roles").await;
    let names: Vec<&str> = roles
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["poet", "worker"]);
    assert_eq!(roles[0]["tools"], json!(["write_file"]));
    // The planner is shown the stored role.
    let id = server.submit(json!({"goal": "Write a verse"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    server.events(&id, None).await;
    let plan_prompt = model
        .requests()
        .into_iter()
        .map(|r| messages_text(&r))
        .find(|t| t.contains("Write a verse") && t.contains("poet"));
    assert!(plan_prompt.is_some(), "the plan prompt lists the poet");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_tasks_at_once_all_end_and_a_dead_model_server_ends_them_in_error() {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let respond = model(Duration::ZERO);
    let model = ScriptedServer::with_responder(move |request| {
        counter.fetch_add(1, Ordering::Relaxed);
        respond(request)
    })
    .await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--concurrency", "8"]).await;
    let submits = (0..200).map(|i| server.submit(json!({"goal": format!("Task number {i}")})));
    let accepted = futures::future::join_all(submits).await;
    let ids: Vec<String> = accepted
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        let events = server.events(id, None).await;
        assert_eq!(
            events.iter().filter(|e| e.1 == "task_ended").count(),
            1,
            "{id}: {events:?}"
        );
    }
    let finished: Value = server.get_json("/v1/tasks?status=finished").await;
    assert_eq!(finished.as_array().unwrap().len(), 200);
    drop(server);

    // No model server at all: the task ends `error` with the reason, and
    // the server stays up.
    let other = Site::new();
    let server = Server::start(&other, "http://127.0.0.1:9/v1", &[]).await;
    let id = server.submit(json!({"goal": "Anything"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let events = server.events(&id, None).await;
    assert_eq!(events.last().unwrap().2["status"], "error", "{events:?}");
    let task = server.task(&id).await;
    assert!(
        task["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{task}"
    );
    let health = server.get("/healthz").send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert!(
        asked.load(Ordering::Relaxed) >= 400,
        "plans and steps were asked"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hermes_submit_follows_a_task_like_plan_and_tasks_and_cancel_reach_the_server() {
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &["--token", "t0k"]).await;
    let client = |args: &[&str]| {
        let mut command = Command::new(hermes_bin());
        command
            .args(args)
            .args(["--server", &server.url])
            .env("HERMES_TOKEN", "t0k")
            .kill_on_drop(true);
        command.output()
    };
    let followed = client(&["submit", "Count the notes", "--json"])
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&followed.stderr);
    assert_eq!(followed.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("[plan] planned 1 subtask(s)"), "{stderr}");
    assert!(
        stderr.contains("[plan] finished  s1 in 1 round(s)"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&followed.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["status"], "finished");
    assert_eq!(report["result"], "done");

    let detached = client(&["submit", "Count again", "--detach"])
        .await
        .unwrap();
    assert_eq!(detached.status.code(), Some(0));
    let id = String::from_utf8_lossy(&detached.stdout).trim().to_string();
    assert_eq!(id, "task-2");
    server.events(&id, None).await;

    let listed = client(&["tasks", "--json"]).await.unwrap();
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let missing = client(&["cancel", "task-99"]).await.unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no task with id `task-99`"));
    let ended = client(&["cancel", "task-1"]).await.unwrap();
    assert_eq!(ended.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&ended.stderr).contains("already ended"));
    let no_token = Command::new(hermes_bin())
        .args(["tasks", "--server", &server.url])
        .env_remove("HERMES_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(no_token.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&no_token.stderr).contains("401"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_page_renders_a_task_s_subtask_graph_and_result_in_chromium() {
    let Some(chromium) = common::browser::chromium_or_skip("the web page's browser check") else {
        return;
    };
    let model = ScriptedServer::with_responder(model(Duration::ZERO)).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let id = server.submit(json!({"goal": "Do it in two steps"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    server.events(&id, None).await;
    let url = format!("{}/#{id}", server.url);
    let profile = tempfile::tempdir().unwrap();
    let screenshot = std::env::var("HERMES_SERVE_SCREENSHOT").ok();
    let dom = tokio::task::spawn_blocking(move || {
        let mut extra = vec!["--virtual-time-budget=10000".to_string()];
        if let Some(path) = screenshot {
            extra.push(format!("--screenshot={path}"));
            extra.push("--window-size=1400,820".into());
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        common::browser::dump_dom(&chromium, &url, profile.path(), &extra)
    })
    .await
    .unwrap();
    let dom = detail_section(&dom);
    let nodes = dom.matches("class=\"node\"").count();
    assert_eq!(nodes, 2, "two subtask nodes: {dom}");
    assert_eq!(dom.matches("data-status=\"finished\"").count(), 2, "{dom}");
    assert!(
        dom.contains("marker-end"),
        "the dependency is drawn as an arrow"
    );
    // s2 built on s1: its result is the task's, with no answer call.
    assert!(dom.contains("id=\"result\">done slowly<"), "{dom}");
    assert!(dom.contains("id=\"task-status\">finished<"), "{dom}");
}

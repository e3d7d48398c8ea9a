//! Traces end to end: `hermes plan --otlp` against a real OTLP/HTTP
//! receiver on loopback that decodes the protobuf payload with the official
//! definitions (the format Jaeger ingests).

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::otlp::{OtlpReceiver, ReceivedSpan};
use common::{decision, finish, hermes, text, Reply, ScriptedServer};
use serde_json::json;

const ROLE: &str =
    "name = \"worker\"\ndescription = \"Does jobs.\"\nsystem_prompt = \"You are a worker.\"\n";

fn responder(req: &serde_json::Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    let user = req["messages"][1]["content"].as_str().unwrap_or_default();
    if system.contains("revising a plan") {
        Reply::Content(json!({"subtasks": [{"id": "s3", "role": "worker", "goal": "job three", "depends_on": []}]}).to_string())
    } else if system.contains("You are the planner") {
        Reply::Content(
            json!({"subtasks": [
                {"id": "s1", "role": "worker", "goal": "job one", "depends_on": []},
                {"id": "s2", "role": "worker", "goal": "job two", "depends_on": []}
            ]})
            .to_string(),
        )
    } else if system.contains("final answer of a team") {
        text("all jobs done")
    // `contains`, not `starts_with`: a note recalled from a sibling that
    // finished first may open the first user turn.
    } else if user.contains("Goal: job two") {
        // Always the same call: the repetition guard fails this executor.
        decision("list_dir", json!({"path": "."}))
    } else if common::rounds_shown(req) > 0 {
        finish("job done")
    } else {
        decision("list_dir", json!({"path": "."}))
    }
}

fn by_id(spans: &[ReceivedSpan]) -> HashMap<&str, &ReceivedSpan> {
    spans.iter().map(|s| (s.span_id.as_str(), s)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_traced_plan_is_one_coherent_tree_with_failures_marked() {
    let receiver = OtlpReceiver::start().await;
    let server = ScriptedServer::with_responder(responder).await;
    let roles = tempfile::tempdir().unwrap();
    std::fs::write(roles.path().join("worker.toml"), ROLE).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let run = hermes(
        &[
            "plan",
            "Do three jobs",
            "--roles",
            roles.path().to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
            "--otlp",
            &receiver.url,
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["replans"], 1);
    let trace_id = report["trace_id"].as_str().unwrap().to_string();
    assert_eq!(trace_id.len(), 32);
    assert!(trace_id.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(
        run.stderr.contains(&format!("trace id {trace_id}")),
        "printed at the start: {}",
        run.stderr
    );

    let spans = receiver.spans();
    assert!(
        !spans.is_empty(),
        "no spans received; stderr: {}",
        run.stderr
    );
    // Exactly one trace for the task.
    let traces: std::collections::HashSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
    assert!(traces.contains(trace_id.as_str()));
    assert!(spans.iter().all(|s| s.service_name == "hermes"));

    let index = by_id(&spans);
    let parent_name = |s: &ReceivedSpan| {
        index
            .get(s.parent_id.as_str())
            .map(|p| p.name.clone())
            .unwrap_or_default()
    };
    let named = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();

    let roots: Vec<_> = spans.iter().filter(|s| s.parent_id.is_empty()).collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].name, "task");
    assert_eq!(named("plan").len(), 1);
    assert_eq!(parent_name(named("plan")[0]), "task");
    assert_eq!(named("replan").len(), 1);
    assert_eq!(parent_name(named("replan")[0]), "task");
    // Every executor's spans hang under their subtask.
    let subtasks = named("subtask");
    assert_eq!(subtasks.len(), 3);
    for run in named("executor.run") {
        let parent = index[run.parent_id.as_str()];
        assert_eq!(parent.name, "subtask");
        assert_eq!(
            parent.attributes["hermes.subtask_id"],
            run.attributes["hermes.subtask_id"]
        );
    }
    for round in named("round") {
        assert_eq!(parent_name(round), "executor.run");
    }
    for call in named("llm.call") {
        assert!(
            ["round", "plan", "replan", "answer"].contains(&parent_name(call).as_str()),
            "{}",
            parent_name(call)
        );
        assert_eq!(call.attributes["gen_ai.operation.name"], "chat");
        assert_eq!(call.attributes["gen_ai.request.model"], "scripted");
        assert_eq!(call.attributes["gen_ai.usage.input_tokens"], "10");
        assert_eq!(call.attributes["gen_ai.usage.output_tokens"], "5");
        assert!(call.attributes.contains_key("gen_ai.request.temperature"));
        assert!(call.attributes.contains_key("gen_ai.request.max_tokens"));
        assert!(
            !call.attributes.contains_key("gen_ai.prompt"),
            "content is off by default"
        );
    }
    for call in named("tool.call") {
        assert_eq!(parent_name(call), "round");
        assert_eq!(call.attributes["gen_ai.tool.name"], "list_dir");
    }
    // The failed executor and its subtask are error spans; the others are not.
    let failed_subtask = subtasks
        .iter()
        .find(|s| s.attributes["hermes.subtask_id"] == "s2")
        .unwrap();
    assert_eq!(failed_subtask.status_code, 2, "{failed_subtask:?}");
    assert!(failed_subtask.status_message.contains("repetition"));
    let failed_run = named("executor.run")
        .into_iter()
        .find(|s| s.attributes["hermes.subtask_id"] == "s2")
        .unwrap();
    assert_eq!(failed_run.status_code, 2);
    assert_eq!(failed_run.attributes["hermes.guard"], "repetition");
    let ok_subtask = subtasks
        .iter()
        .find(|s| s.attributes["hermes.subtask_id"] == "s1")
        .unwrap();
    assert_ne!(ok_subtask.status_code, 2);
    assert_eq!(roots[0].attributes["hermes.status"], "finished");
    assert!(named("round").iter().any(|r| r
        .attributes
        .get("hermes.args_hash")
        .is_some_and(|h| h.len() == 16)));
}

#[tokio::test(flavor = "multi_thread")]
async fn run_json_carries_the_trace_id_and_content_is_opt_in() {
    let receiver = OtlpReceiver::start().await;
    let server = ScriptedServer::start(vec![finish("ok")]).await;
    let ws = tempfile::tempdir().unwrap();
    let run = hermes(
        &[
            "run",
            "hello",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--otlp",
            &receiver.url,
            "--trace-content",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trace_id = run.outcome()["trace_id"].as_str().unwrap().to_string();
    assert!(run.stderr.contains(&format!("trace id: {trace_id}")));
    let spans = receiver.spans();
    let call = spans
        .iter()
        .find(|s| s.name == "llm.call")
        .expect("llm.call span");
    assert_eq!(call.trace_id, trace_id);
    assert!(call.attributes["gen_ai.prompt"].contains("hello"));
    assert!(call.attributes["gen_ai.completion"].contains("finish"));
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for name in ["task", "executor.run", "round", "llm.call"] {
        assert!(names.contains(&name), "{names:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_collector_costs_the_run_at_most_a_second_and_warns_once() {
    let ws = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}");
    let script = || {
        vec![
            decision("list_dir", json!({})),
            decision("list_dir", json!({"path": "."})),
            finish("ok"),
        ]
    };

    let server = ScriptedServer::start(script()).await;
    let started = Instant::now();
    let baseline = hermes(
        &["run", "task", "--workspace", ws.path().to_str().unwrap()],
        &server.base_url,
    )
    .await;
    let baseline_time = started.elapsed();
    assert_eq!(baseline.code, 0);

    let server = ScriptedServer::start(script()).await;
    let started = Instant::now();
    let traced = hermes(
        &[
            "run",
            "task",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--otlp",
            &dead,
        ],
        &server.base_url,
    )
    .await;
    let traced_time = started.elapsed();
    assert_eq!(traced.code, 0, "{}", traced.stderr);
    assert_eq!(traced.stdout, baseline.stdout);
    assert!(
        traced_time < baseline_time + Duration::from_secs(1),
        "dead collector cost {:?} (baseline {baseline_time:?})",
        traced_time.saturating_sub(baseline_time)
    );
    assert_eq!(
        traced.stderr.matches("cannot send traces").count(),
        1,
        "{}",
        traced.stderr
    );
}

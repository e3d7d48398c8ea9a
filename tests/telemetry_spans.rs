//! The span tree and attributes, captured in-process with the SDK's
//! in-memory exporter while a planner survives an injected executor crash.

mod common;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::{decision, finish, text, Reply, ScriptedServer};
use hermes::actors::{Faults, Hermes, RoleRegistry};
use hermes::llm::{OpenAiClient, OpenAiConfig};
use hermes::tools::{builtin, Toolbox, Workspace};
use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// One global subscriber per test binary: actor tasks run on many threads.
fn exporter() -> &'static (InMemorySpanExporter, SdkTracerProvider) {
    static CELL: OnceLock<(InMemorySpanExporter, SdkTracerProvider)> = OnceLock::new();
    CELL.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .unwrap();
        (exporter, provider)
    })
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn span_tree_and_attributes_cover_crash_restart_and_usage() {
    let (exporter, _) = exporter();
    let server = ScriptedServer::with_responder(|req| {
        let system = req["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("You are the planner") {
            Reply::Content(
                json!({"subtasks": [{"id": "s1", "role": "worker", "goal": "two steps"}]})
                    .to_string(),
            )
        } else if system.contains("final answer of a team") {
            text("unused")
        } else if common::rounds_shown(req) > 0 {
            finish("steps done")
        } else {
            decision("list_dir", json!({"path": "."}))
        }
    })
    .await;
    let ws = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(ws.path()).unwrap();
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &workspace);
    let roles = RoleRegistry::new();
    roles
        .register(
            hermes::actors::roles::parse_role(
                "name = \"worker\"\ndescription = \"d\"\nsystem_prompt = \"p\"\n",
            )
            .unwrap(),
            &toolbox.names(),
        )
        .unwrap();
    let faults = Faults::none();
    faults.crash_after_round("s1", 1, 1);
    let llm = OpenAiClient::new(OpenAiConfig::new(server.base_url.clone(), "scripted")).unwrap();
    let hermes = Hermes::builder()
        .llm(Arc::new(llm))
        .toolbox(toolbox)
        .roles(roles)
        .faults(faults)
        .spawn()
        .await
        .unwrap();
    let report = hermes.submit("Two steps").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:?}");
    let trace_id = report.trace_id.clone().unwrap();
    hermes.shutdown().await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    let spans: Vec<SpanData> = exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id().to_string() == trace_id)
        .collect();
    let find = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();
    let parent_of = |s: &SpanData| {
        spans
            .iter()
            .find(|p| p.span_context.span_id() == s.parent_span_id)
            .map(|p| p.name.to_string())
    };

    let task = find("task");
    assert_eq!(task.len(), 1);
    assert_eq!(task[0].parent_span_id, SpanId::INVALID, "task is a root");
    assert_eq!(parent_of(find("plan")[0]).as_deref(), Some("task"));
    let subtask = find("subtask");
    assert_eq!(subtask.len(), 1);
    assert_eq!(attr(subtask[0], "hermes.subtask_id").as_deref(), Some("s1"));
    assert_eq!(attr(subtask[0], "hermes.role").as_deref(), Some("worker"));
    // The crash is an error span under the subtask; the restart is a second executor.run there.
    let crash = find("executor.crash");
    assert_eq!(crash.len(), 1);
    assert_eq!(parent_of(crash[0]).as_deref(), Some("subtask"));
    assert!(matches!(crash[0].status, Status::Error { .. }));
    let runs = find("executor.run");
    assert_eq!(runs.len(), 2, "the first attempt and the restart");
    assert!(runs
        .iter()
        .all(|r| parent_of(r).as_deref() == Some("subtask")));
    assert!(runs
        .iter()
        .any(|r| attr(r, "hermes.resumed_rounds").as_deref() == Some("1")));
    assert!(runs
        .iter()
        .any(|r| attr(r, "hermes.guard").as_deref() == Some("finished")));
    // Rounds carry their number, action and args hash; calls carry GenAI attributes.
    let rounds = find("round");
    assert!(rounds
        .iter()
        .all(|r| parent_of(r).as_deref() == Some("executor.run")));
    assert!(rounds
        .iter()
        .any(|r| attr(r, "hermes.action").as_deref() == Some("list_dir")));
    let calls = find("llm.call");
    // The injected crash happens at the model boundary: the one call it cuts
    // short has no answer; every other call carries its usage.
    let answered: Vec<_> = calls
        .iter()
        .filter(|c| attr(c, "gen_ai.response.finish_reasons").is_some())
        .collect();
    assert_eq!(answered.len() + 1, calls.len());
    assert!(answered
        .iter()
        .all(|c| attr(c, "gen_ai.usage.input_tokens").as_deref() == Some("10")));
    let tools = find("tool.call");
    assert!(!tools.is_empty());
    assert!(tools
        .iter()
        .all(|t| attr(t, "gen_ai.tool.name").as_deref() == Some("list_dir")));
    assert!(tools
        .iter()
        .all(|t| parent_of(t).as_deref() == Some("round")));
}

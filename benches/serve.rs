//! What `hermes serve` costs around the planner, with a model that
//! answers at once (a plan of one subtask, then `finish`), in one process:
//!
//! - submit → `task_ended` per task with 1, 50 and 500 tasks queued, over
//!   HTTP, against the same tasks through `Hermes::submit` directly (the
//!   baseline: the planner without the service);
//! - events per second streamed to 100 SSE clients at once, against
//!   reading the same events from the store (the baseline);
//! - the store's size per task and per event;
//! - start time on a store of 10,000 ended and 100 unfinished tasks,
//!   against opening that store alone.
//!
//! ```sh
//! cargo bench --bench serve
//! ```
//! Figures are printed, never checked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hermes::actors::{Hermes, RoleRegistry, TaskRequest};
use hermes::llm::scripted::scripted_response;
use hermes::llm::{ChatRequest, ChatResponse, Llm, LlmError};
use hermes::serve::{Launch, Launcher, Service, ServiceConfig, Store, TaskSpec};
use serde_json::{json, Value};

/// Plans one `worker` subtask, then finishes it.
struct AtOnce;

#[async_trait]
impl Llm for AtOnce {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let system = &request.messages[0].content;
        let content = if system.contains("You are the planner") {
            json!({"subtasks": [{"id": "s1", "role": "worker", "goal": "do it", "depends_on": []}]})
                .to_string()
        } else {
            json!({"thought": "done", "action": {"name": "finish", "args": {"result": "ok"}}})
                .to_string()
        };
        Ok(scripted_response(request, content))
    }
    fn model(&self) -> &str {
        "instant"
    }
}

fn roles() -> RoleRegistry {
    let roles = RoleRegistry::new();
    let role = hermes::actors::roles::parse_role(
        "name = \"worker\"\ndescription = \"Does it.\"\nsystem_prompt = \"You do it.\"\n",
    )
    .unwrap();
    roles.register(role, &[]).unwrap();
    roles
}

fn launcher(llm: Arc<dyn Llm>) -> Launcher {
    Arc::new(move |launch: Launch| {
        let llm = Arc::clone(&llm);
        Box::pin(async move {
            Hermes::builder()
                .llm(llm)
                .roles(launch.roles)
                .on_event(launch.events)
                .approvals(launch.approvals)
                .spawn()
                .await
                .map_err(|e| e.to_string())
        })
    })
}

fn config(llm: Arc<dyn Llm>, workspace: &std::path::Path, concurrency: usize) -> ServiceConfig {
    ServiceConfig {
        launcher: launcher(llm),
        roles: roles(),
        known_tools: Vec::new(),
        workspace: workspace.to_path_buf(),
        concurrency,
        default_timeout: Duration::from_secs(60),
        keep: Duration::from_secs(30 * 86_400),
        approvals: Default::default(),
        budget: Default::default(),
    }
}

/// Serves `service` on loopback; returns its base URL.
async fn serve(service: Service) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = hermes::serve::router(service, None, None);
    tokio::spawn(hermes::serve::http::serve(
        listener,
        router,
        std::future::pending(),
    ));
    url
}

/// The whole event stream of task `id` (it closes after `task_ended`).
async fn stream(client: &reqwest::Client, url: &str, id: &str) -> usize {
    let body = client
        .get(format!("{url}/v1/tasks/{id}/events"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    body.matches("\nevent: ").count() + usize::from(body.starts_with("event: "))
}

async fn submit_all(n: usize, concurrency: usize) -> (Duration, Duration) {
    let llm: Arc<dyn Llm> = Arc::new(AtOnce);
    // The baseline: the same tasks straight to planners, `concurrency` at once.
    let started = Instant::now();
    let permits = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let direct = (0..n).map(|i| {
        let (llm, permits) = (Arc::clone(&llm), Arc::clone(&permits));
        async move {
            let _slot = permits.acquire().await.unwrap();
            let hermes = Hermes::builder()
                .llm(llm)
                .roles(roles())
                .spawn()
                .await
                .unwrap();
            hermes
                .submit(TaskRequest::new(format!("task {i}")))
                .await
                .unwrap();
            hermes.shutdown().await;
        }
    });
    futures::future::join_all(direct).await;
    let baseline = started.elapsed();

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("serve.redb")).unwrap();
    let service = Service::start(store, config(llm, dir.path(), concurrency)).unwrap();
    let url = serve(service).await;
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut ids = Vec::new();
    for i in 0..n {
        let accepted: Value = client
            .post(format!("{url}/v1/tasks"))
            .json(&json!({"goal": format!("task {i}")}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(accepted["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        stream(&client, &url, id).await;
    }
    (started.elapsed(), baseline)
}

#[tokio::main]
async fn main() {
    println!(
        "submit → task_ended, per task (service over HTTP vs the planner alone; 2 tasks at once):"
    );
    for n in [1, 50, 500] {
        let (served, direct) = submit_all(n, 2).await;
        let per = |d: Duration| d.as_secs_f64() * 1000.0 / n as f64;
        println!(
            "  {n:>3} queued: {:>7.2} ms served, {:>7.2} ms direct ({:.2}x)",
            per(served),
            per(direct),
            per(served) / per(direct)
        );
    }

    // One finished task with its events, streamed to 100 clients at once.
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("serve.redb");
    let service = Service::start(
        Store::open(&store_path).unwrap(),
        config(Arc::new(AtOnce), dir.path(), 2),
    )
    .unwrap();
    let url = serve(service.clone()).await;
    let client = reqwest::Client::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let record = service
            .submit(TaskSpec {
                goal: format!("task {i}"),
                timeout_secs: None,
                max_replans: None,
                workspace: None,
                token_budget: None,
                call_budget: None,
            })
            .unwrap();
        ids.push(record.id);
    }
    for id in &ids {
        stream(&client, &url, id).await;
    }
    let started = Instant::now();
    let clients = (0..100).map(|i| {
        let (client, url, id) = (client.clone(), url.clone(), ids[i % ids.len()].clone());
        async move { stream(&client, &url, &id).await }
    });
    let delivered: usize = futures::future::join_all(clients).await.into_iter().sum();
    let streamed = started.elapsed();
    let started = Instant::now();
    let mut read = 0;
    for i in 0..100 {
        read += service
            .store()
            .events_after(&ids[i % ids.len()], 0)
            .unwrap()
            .len();
    }
    let from_store = started.elapsed();
    println!(
        "100 SSE clients: {delivered} events in {:.1} ms = {:.0} events/s (the store alone: {:.0} events/s; {:.2}x)",
        streamed.as_secs_f64() * 1000.0,
        delivered as f64 / streamed.as_secs_f64(),
        read as f64 / from_store.as_secs_f64(),
        (read as f64 / from_store.as_secs_f64()) / (delivered as f64 / streamed.as_secs_f64()),
    );
    let events = service.store().event_count().unwrap();
    let size = std::fs::metadata(&store_path).unwrap().len();
    println!(
        "store: {size} bytes for {} tasks and {events} events ({:.0} bytes per task with its events, {:.0} per event)",
        ids.len(),
        size as f64 / ids.len() as f64,
        size as f64 / events as f64
    );
    drop(service);

    // Restart on 10,000 ended and 100 unfinished tasks.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..10_100 {
            let mut record = store
                .create_task(TaskSpec {
                    goal: format!("task {i}"),
                    timeout_secs: None,
                    max_replans: None,
                    workspace: None,
                    token_budget: None,
                    call_budget: None,
                })
                .unwrap();
            store
                .append_event(&record.id, "queued", Value::Null)
                .unwrap();
            if i < 10_000 {
                record.status = hermes::serve::TaskState::Finished;
                record.ended = Some(hermes::serve::record::now());
                store.save_task(&record).unwrap();
                store
                    .append_event(&record.id, "task_ended", json!({"status": "finished"}))
                    .unwrap();
            }
        }
    }
    let started = Instant::now();
    drop(Store::open(&path).unwrap());
    let open = started.elapsed();
    let started = Instant::now();
    let service = Service::start(
        Store::open(&path).unwrap(),
        config(Arc::new(AtOnce), dir.path(), 2),
    )
    .unwrap();
    let ready = started.elapsed();
    println!(
        "start on 10,000 ended + 100 unfinished tasks: {:.1} ms (opening the store alone: {:.1} ms; {:.1}x)",
        ready.as_secs_f64() * 1000.0,
        open.as_secs_f64() * 1000.0,
        ready.as_secs_f64() / open.as_secs_f64()
    );
    service.shutdown(Duration::from_secs(30)).await;
}

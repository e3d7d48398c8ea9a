//! Planner and executor actors end to end, through the library handle,
//! against a scripted OpenAI-compatible server on loopback that answers
//! planner, replanner, executor and final-answer prompts differently.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{decision, finish, messages_text as all_text, text, Reply, ScriptedServer};
use hermes::actors::{Faults, Hermes, RoleRegistry, TaskReport, TaskRequest};
use hermes::limits::Limits;
use hermes::llm::{OpenAiClient, OpenAiConfig};
use hermes::tools::{builtin, Toolbox, Workspace};
use serde_json::{json, Value};

/// What a request to the scripted server is for.
#[derive(Debug, PartialEq)]
enum Kind {
    Plan,
    Replan,
    Answer,
    /// An executor's decision; carries the subtask goal's first line.
    Step(String),
}

fn kind(request: &Value) -> Kind {
    let messages = request["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap_or_default();
    if system.contains("revising a plan") {
        Kind::Replan
    } else if system.contains("You are the planner") {
        Kind::Plan
    } else if system.contains("final answer of a team") {
        Kind::Answer
    } else {
        let user = messages[1]["content"].as_str().unwrap_or_default();
        let goal = user
            .strip_prefix("Goal: ")
            .unwrap_or(user)
            .lines()
            .next()
            .unwrap_or_default();
        Kind::Step(goal.to_string())
    }
}

fn plan(subtasks: Value) -> Reply {
    Reply::Content(json!({ "subtasks": subtasks }).to_string())
}

const ROLES: &[(&str, &str)] = &[
    ("researcher", "Finds facts."),
    ("writer", "Writes documents."),
    ("worker", "Does small jobs."),
];

fn roles(tools: &[&str]) -> RoleRegistry {
    let registry = RoleRegistry::new();
    for (name, description) in ROLES {
        let role = hermes::actors::roles::parse_role(&format!(
            "name = \"{name}\"\ndescription = \"{description}\"\nsystem_prompt = \"You are the {name}.\"\n[limits]\nmax_rounds = 6\n"
        ))
        .unwrap();
        registry.register(role, tools).unwrap();
    }
    registry
}

struct Setup {
    hermes: Hermes,
    _workspace: tempfile::TempDir,
}

async fn setup(
    server: &ScriptedServer,
    faults: Faults,
    max_replans: u32,
    concurrency: usize,
) -> Setup {
    setup_with(server, faults, max_replans, concurrency, Limits::default()).await
}

/// [`setup`] with the executors' base limits (steer switches included).
async fn setup_with(
    server: &ScriptedServer,
    faults: Faults,
    max_replans: u32,
    concurrency: usize,
    limits: Limits,
) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("data.txt"), "alpha=1\nbeta=2\n").unwrap();
    let ws = Workspace::new(workspace.path()).unwrap();
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &ws);
    let mut config = OpenAiConfig::new(server.base_url.clone(), "scripted");
    config.min_backoff = Duration::from_millis(10);
    let hermes = Hermes::builder()
        .llm(Arc::new(OpenAiClient::new(config).unwrap()))
        .roles(roles(&toolbox.names()))
        .toolbox(toolbox)
        .limits(limits)
        .concurrency(concurrency)
        .max_replans(max_replans)
        .faults(faults)
        .spawn()
        .await
        .unwrap();
    Setup {
        hermes,
        _workspace: workspace,
    }
}

fn statuses(report: &TaskReport) -> HashMap<String, String> {
    report
        .subtasks
        .iter()
        .map(|s| (s.id.clone(), s.status.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_dag_passes_dependency_results_to_dependents() {
    let seen: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let log = seen.clone();
    let server = ScriptedServer::with_responder(move |req| {
        let k = kind(req);
        log.lock().unwrap().push((Instant::now(), format!("{k:?}")));
        match k {
            Kind::Plan => plan(json!([
                {"id": "s1", "role": "researcher", "goal": "find alpha", "depends_on": []},
                {"id": "s2", "role": "researcher", "goal": "find beta", "depends_on": []},
                {"id": "s3", "role": "writer", "goal": "combine both", "depends_on": ["s1", "s2"]}
            ])),
            Kind::Step(goal) if goal == "find alpha" => {
                Reply::Delay(Duration::from_millis(400), Box::new(finish("ALPHA=1")))
            }
            Kind::Step(goal) if goal == "find beta" => {
                Reply::Delay(Duration::from_millis(400), Box::new(finish("BETA=2")))
            }
            Kind::Step(goal) if goal == "combine both" => {
                let prompt = all_text(req);
                if prompt.contains("ALPHA=1") && prompt.contains("BETA=2") {
                    finish("alpha and beta combined")
                } else {
                    finish("MISSING CONTEXT")
                }
            }
            Kind::Answer => text("FINAL: alpha=1, beta=2"),
            other => panic!("unexpected request {other:?}"),
        }
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let report = s.hermes.submit("Report alpha and beta").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    // The writer built on both reads: its result is the answer, and no
    // model call restates it.
    assert_eq!(report.result.as_deref(), Some("alpha and beta combined"));
    assert_eq!(report.subtasks.len(), 3);
    assert_eq!(
        report.subtasks[2].result.as_deref(),
        Some("alpha and beta combined")
    );
    assert_eq!(report.replans, 0);
    // The planner's one call (the plan) and the 3 executors are counted.
    let subtasks: u64 = report.subtasks.iter().map(|s| s.usage.prompt_tokens).sum();
    assert!(subtasks > 0 && report.usage_by.planner.prompt_tokens > 0);
    assert_eq!(
        report.usage.prompt_tokens,
        report.usage_by.planner.prompt_tokens + subtasks
    );
    assert!(
        !seen.lock().unwrap().iter().any(|(_, k)| k == "Answer"),
        "no answer call"
    );
    // s1 and s2 ran in parallel: both were asked before either answered (each answer takes 400 ms).
    let log = seen.lock().unwrap();
    let asked = |what: &str| {
        log.iter()
            .find(|(_, k)| k.contains(what))
            .map(|(t, _)| *t)
            .unwrap()
    };
    let gap =
        asked("find beta").max(asked("find alpha")) - asked("find beta").min(asked("find alpha"));
    assert!(
        gap < Duration::from_millis(400),
        "independent subtasks were not started together: {gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn guard_stop_then_replan_then_success() {
    let replan_prompt: Arc<Mutex<String>> = Arc::default();
    let captured = replan_prompt.clone();
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => plan(json!([
            {"id": "s1", "role": "researcher", "goal": "read the missing file", "depends_on": []},
            {"id": "s2", "role": "writer", "goal": "write it up", "depends_on": ["s1"]}
        ])),
        // Always the same call: the repetition guard stops this executor.
        Kind::Step(goal) if goal == "read the missing file" => decision("read_file", json!({"path": "missing.txt"})),
        Kind::Replan => {
            *captured.lock().unwrap() = all_text(req);
            plan(json!([
                {"id": "s1", "role": "researcher", "goal": "read data.txt instead", "depends_on": []},
                {"id": "s3", "role": "writer", "goal": "write it up from data", "depends_on": ["s1"]}
            ]))
        }
        Kind::Step(goal) if goal == "read data.txt instead" => finish("alpha=1"),
        Kind::Step(goal) if goal == "write it up from data" => finish("written"),
        Kind::Answer => text("done"),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let report = s.hermes.submit("Write up the data").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    assert_eq!(report.replans, 1);
    let st = statuses(&report);
    assert_eq!(st["s1"], "replaced");
    assert_eq!(st["s2"], "replaced");
    assert_eq!(st["s1.r1"], "finished", "a reused id is renamed: {st:?}");
    assert_eq!(st["s3"], "finished");
    let prompt = replan_prompt.lock().unwrap();
    assert!(
        prompt.contains("repetition"),
        "the replan sees the progress report: {prompt}"
    );
    assert!(
        prompt.contains("s2 (writer)"),
        "and the dependents it replaces: {prompt}"
    );
    assert!(report.subtasks[0]
        .progress
        .as_deref()
        .unwrap()
        .contains("read_file"));
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_panic_restarts_from_the_journal_and_completes() {
    let steps: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = steps.clone();
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => plan(
            json!([{"id": "s1", "role": "worker", "goal": "list then read", "depends_on": []}]),
        ),
        Kind::Step(_) => {
            let prompt = all_text(req);
            let mut log = log.lock().unwrap();
            let reply = if !common::shows_round(&prompt, 1) {
                decision("list_dir", json!({"path": "."}))
            } else if !common::shows_round(&prompt, 2) {
                decision("read_file", json!({"path": "data.txt"}))
            } else {
                finish("beta=2")
            };
            log.push(prompt);
            reply
        }
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let faults = Faults::none();
    faults.crash_after_round("s1", 1, 1);
    let s = setup(&server, faults, 2, 4).await;
    let report = s.hermes.submit("Read the data").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    assert_eq!(
        report.result.as_deref(),
        Some("beta=2"),
        "a single subtask's result passes through"
    );
    assert_eq!(report.replans, 0);
    assert_eq!(
        report.subtasks[0].rounds, 3,
        "rounds continue after the restart"
    );
    let steps = steps.lock().unwrap();
    assert_eq!(steps.len(), 3, "round 1 is not redone after the crash");
    assert!(
        common::shows_round(&steps[1], 1),
        "the restarted executor sees round 1 from the journal"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_crash_is_a_failure_that_is_replanned() {
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => {
            plan(json!([{"id": "s1", "role": "worker", "goal": "fragile job", "depends_on": []}]))
        }
        Kind::Step(goal) if goal == "fragile job" => decision(
            "list_dir",
            json!({"path": format!("{}", all_text(req).len())}),
        ),
        Kind::Replan => {
            plan(json!([{"id": "s2", "role": "worker", "goal": "sturdy job", "depends_on": []}]))
        }
        Kind::Step(goal) if goal == "sturdy job" => finish("sturdy done"),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let faults = Faults::none();
    faults.crash_after_round("s1", 1, 2);
    let s = setup(&server, faults, 2, 4).await;
    let report = s.hermes.submit("Do the job").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    assert_eq!(report.replans, 1);
    let st = statuses(&report);
    assert_eq!(st["s1"], "replaced");
    assert_eq!(st["s2"], "finished");
    assert!(report.subtasks[0]
        .progress
        .as_deref()
        .unwrap()
        .contains("crashed again after a restart"));
    assert_eq!(report.result.as_deref(), Some("sturdy done"));
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_plan_is_sent_back_once_with_the_errors() {
    let asks: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = asks.clone();
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => {
            let mut asks = log.lock().unwrap();
            asks.push(all_text(req));
            if asks.len() == 1 {
                plan(json!([{"id": "s1", "role": "poet", "goal": "rhyme", "depends_on": ["s9"]}]))
            } else {
                plan(json!([{"id": "s1", "role": "writer", "goal": "rhyme", "depends_on": []}]))
            }
        }
        Kind::Step(_) => finish("roses are red"),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let report = s.hermes.submit("Write a rhyme").await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    let asks = asks.lock().unwrap();
    assert_eq!(asks.len(), 2);
    assert!(
        asks[1].contains("unknown role `poet`") && asks[1].contains("`s9`, which does not exist"),
        "{}",
        asks[1]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_invalid_twice_is_a_clear_error() {
    let server = ScriptedServer::with_responder(|req| match kind(req) {
        Kind::Plan => text("I would rather not plan."),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let report = s.hermes.submit("Anything").await.unwrap();
    assert_eq!(report.status.as_str(), "error");
    assert!(
        report.error.as_deref().unwrap().contains("no valid plan"),
        "{report:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

/// A model whose every call panics: a stand-in for a bug on the planning
/// path (session 59 found one in a real-model replan).
struct PanickingLlm;

#[async_trait::async_trait]
impl hermes::llm::Llm for PanickingLlm {
    async fn chat(
        &self,
        _: &hermes::llm::ChatRequest,
    ) -> Result<hermes::llm::ChatResponse, hermes::llm::LlmError> {
        panic!("a bug in the model call")
    }

    fn model(&self) -> &str {
        "panics"
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_planning_call_that_panics_ends_the_task_with_an_error_at_once() {
    let workspace = tempfile::tempdir().unwrap();
    let ws = Workspace::new(workspace.path()).unwrap();
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &ws);
    let hermes = Hermes::builder()
        .llm(Arc::new(PanickingLlm))
        .roles(roles(&toolbox.names()))
        .toolbox(toolbox)
        .spawn()
        .await
        .unwrap();
    let started = Instant::now();
    // Two files to write: planned, not routed to one executor.
    let report = hermes
        .submit(TaskRequest::new("Write a.txt and b.txt").with_timeout(Duration::from_secs(120)))
        .await
        .unwrap();
    assert_eq!(report.status.as_str(), "error", "{report:?}");
    let error = report.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("internal error") && error.contains("a bug in the model call"),
        "{error}"
    );
    // Told at once, not at the task's deadline.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // The planner still takes tasks.
    let again = hermes
        .submit(TaskRequest::new("Write c.txt and d.txt").with_timeout(Duration::from_secs(120)))
        .await
        .unwrap();
    assert_eq!(again.status.as_str(), "error");
    hermes.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_cancels_every_running_executor() {
    let server = ScriptedServer::with_responder(|req| match kind(req) {
        Kind::Plan => plan(json!([
            {"id": "s1", "role": "worker", "goal": "slow one", "depends_on": []},
            {"id": "s2", "role": "worker", "goal": "slow two", "depends_on": []},
            {"id": "s3", "role": "worker", "goal": "after both", "depends_on": ["s1", "s2"]}
        ])),
        Kind::Step(_) => Reply::Delay(Duration::from_secs(30), Box::new(finish("late"))),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let started = Instant::now();
    let report = s
        .hermes
        .submit(TaskRequest::new("Slow work").with_timeout(Duration::from_secs(1)))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "generous bound: {:?}",
        started.elapsed()
    );
    assert_eq!(report.status.as_str(), "timeout");
    let st = statuses(&report);
    assert_eq!(st["s1"], "cancelled");
    assert_eq!(st["s2"], "cancelled");
    assert_eq!(st["s3"], "skipped");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_does_not_wait_for_a_replan_that_hangs() {
    let server = ScriptedServer::with_responder(|req| match kind(req) {
        Kind::Plan => {
            plan(json!([{"id": "s1", "role": "worker", "goal": "loop", "depends_on": []}]))
        }
        // The same call every round: the repetition guard fails the subtask fast.
        Kind::Step(_) => decision("list_dir", json!({"path": "."})),
        Kind::Replan => Reply::Delay(Duration::from_secs(30), Box::new(plan(json!([])))),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let started = Instant::now();
    let report = s
        .hermes
        .submit(TaskRequest::new("Loop").with_timeout(Duration::from_secs(1)))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "generous bound: {:?}",
        started.elapsed()
    );
    assert_eq!(report.status.as_str(), "timeout", "{report:#?}");
    assert_eq!(statuses(&report)["s1"], "failed");
}

/// Deterministic pseudo-random numbers (xorshift), so failures are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_subtasks_with_random_failures_lose_nothing_and_report_each_once() {
    const N: usize = 200;
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let faults = Faults::none();
    let mut guard_failures = Vec::new();
    let mut crash_once = Vec::new();
    let mut crash_twice = Vec::new();
    for i in 0..N {
        let id = format!("t{i}");
        match rng.next() % 20 {
            0 => guard_failures.push(id),
            1 => {
                faults.crash_after_round(&id, 1, 1);
                crash_once.push(id);
            }
            2 => {
                faults.crash_after_round(&id, 1, 2);
                crash_twice.push(id);
            }
            _ => {}
        }
    }
    let failing: Arc<Vec<String>> = Arc::new(
        guard_failures
            .iter()
            .chain(&crash_twice)
            .map(|id| format!("job {id}"))
            .collect(),
    );
    let plan_json: Vec<Value> = (0..N)
        .map(|i| json!({"id": format!("t{i}"), "role": "worker", "goal": format!("job t{i}")}))
        .collect();
    let finals: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let finals_log = finals.clone();
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => plan(Value::Array(plan_json.clone())),
        Kind::Replan => {
            let prompt = all_text(req);
            let failed = prompt.split("Failed subtask ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("x").to_string();
            plan(json!([{"id": format!("{failed}-redo"), "role": "worker", "goal": format!("redo {failed}")}]))
        }
        Kind::Step(goal) if failing.contains(&goal) => decision("list_dir", json!({"path": "."})),
        Kind::Step(goal) => {
            let prompt = all_text(req);
            if common::shows_round(&prompt, 1) || goal.starts_with("redo") {
                *finals_log.lock().unwrap().entry(goal.clone()).or_default() += 1;
                finish(&format!("done: {goal}"))
            } else {
                decision("list_dir", json!({"path": "."}))
            }
        }
        Kind::Answer => text("all done"),
    })
    .await;
    let s = setup(&server, faults, 2, 8).await;
    let report = s
        .hermes
        .submit(TaskRequest::new("Two hundred jobs").with_timeout(Duration::from_secs(300)))
        .await
        .unwrap();

    // Every planned subtask, and every replacement, is reported exactly once.
    let mut ids: Vec<&str> = report.subtasks.iter().map(|s| s.id.as_str()).collect();
    let total = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), total, "a subtask was reported twice");
    for i in 0..N {
        assert!(ids.contains(&format!("t{i}").as_str()), "t{i} was lost");
    }
    assert_eq!(
        total,
        N + report.replans as usize,
        "one replacement per replan"
    );
    // Every subtask reached a final state; none is left pending or running.
    for s in &report.subtasks {
        assert!(
            ["finished", "failed", "replaced"].contains(&s.status.as_str()),
            "{} ended as {}",
            s.id,
            s.status
        );
    }
    assert_eq!(report.replans, 2);
    let failed = report
        .subtasks
        .iter()
        .filter(|s| s.status.as_str() == "failed")
        .count();
    assert_eq!(
        failed,
        guard_failures.len() + crash_twice.len() - 2,
        "failures beyond the replan budget stay failed"
    );
    assert_eq!(report.status.as_str(), "failed");
    // Subtasks that crashed once were restarted and finished without a replan.
    for id in &crash_once {
        assert_eq!(statuses(&report)[id], "finished", "{id}");
    }
    // No finished subtask ran its finishing round twice.
    assert!(finals.lock().unwrap().values().all(|&n| n == 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_registered_at_runtime_are_planned_with() {
    let server = ScriptedServer::with_responder(|req| match kind(req) {
        Kind::Plan => {
            assert!(all_text(req).contains("- translator: Translates text."), "new role offered to the planner");
            plan(json!([{"id": "s1", "role": "translator", "goal": "translate hello", "depends_on": []}]))
        }
        Kind::Step(_) => {
            assert!(req["messages"][0]["content"].as_str().unwrap().starts_with("You translate."));
            finish("bonjour")
        }
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let role = hermes::actors::roles::parse_role(
        "name = \"translator\"\ndescription = \"Translates text.\"\nsystem_prompt = \"You translate.\"\ntools = []\n",
    )
    .unwrap();
    s.hermes.register_role(role.clone()).await.unwrap();
    let duplicate = s.hermes.register_role(role).await.unwrap_err();
    assert!(
        duplicate.to_string().contains("already exists"),
        "{duplicate}"
    );
    let names: Vec<String> = s
        .hermes
        .roles()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert!(names.contains(&"translator".to_string()));
    let report = s.hermes.submit("Say hello in French").await.unwrap();
    assert_eq!(report.result.as_deref(), Some("bonjour"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subtask_that_finishes_without_its_outputs_is_failed_and_replanned() {
    let replan_prompt: Arc<Mutex<String>> = Arc::default();
    let captured = replan_prompt.clone();
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        // `REPORT` has no extension: only the plan's outputs name it.
        Kind::Plan => plan(json!([
            {"id": "s1", "role": "writer", "goal": "sum the data", "outputs": ["REPORT"], "depends_on": []},
            {"id": "s2", "role": "writer", "goal": "announce it", "outputs": [], "depends_on": ["s1"]}
        ])),
        Kind::Step(goal) if goal == "sum the data" => finish("the sum is 3"),
        Kind::Replan => {
            *captured.lock().unwrap() = all_text(req);
            plan(json!([
                {"id": "s3", "role": "writer", "goal": "save the sum to REPORT", "outputs": ["REPORT"], "depends_on": []},
                {"id": "s4", "role": "writer", "goal": "announce it", "outputs": [], "depends_on": ["s3"]}
            ]))
        }
        Kind::Step(goal) if goal == "save the sum to REPORT" => {
            if common::rounds_shown(req) == 0 {
                decision("write_file", json!({"path": "REPORT", "content": "3"}))
            } else {
                finish("saved")
            }
        }
        Kind::Step(goal) if goal == "announce it" => {
            if all_text(req).contains("(its files: REPORT)") {
                finish("announced, reading REPORT")
            } else {
                finish("NO FILE NAMES")
            }
        }
        Kind::Answer => text("done"),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let s = setup(&server, Faults::none(), 2, 4).await;
    let report = s
        .hermes
        .submit("Sum the data and announce it")
        .await
        .unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    assert_eq!(report.replans, 1);
    let st = statuses(&report);
    assert_eq!(st["s1"], "replaced", "{st:?}");
    assert_eq!(st["s3"], "finished");
    let s1 = report.subtasks.iter().find(|s| s.id == "s1").unwrap();
    assert!(
        s1.progress
            .as_deref()
            .unwrap()
            .starts_with("finished without writing REPORT"),
        "{s1:?}"
    );
    let s4 = report.subtasks.iter().find(|s| s.id == "s4").unwrap();
    assert_eq!(s4.result.as_deref(), Some("announced, reading REPORT"));
    let prompt = replan_prompt.lock().unwrap();
    assert!(
        prompt.contains("Why it failed: finished without writing REPORT"),
        "{prompt}"
    );
}

/// Executors share one workspace: with the `owned_files` steer on, a
/// write to a file the plan gives to another subtask is refused with whose
/// it is, and the owner's content stays.
#[tokio::test(flavor = "multi_thread")]
async fn an_executor_cannot_write_the_file_another_subtask_owns() {
    let server = ScriptedServer::with_responder(move |req| match kind(req) {
        Kind::Plan => plan(json!([
            {"id": "s1", "role": "writer", "goal": "summarize the data", "outputs": ["summary.md"], "depends_on": []},
            {"id": "s2", "role": "writer", "goal": "name the top entry", "outputs": ["top.txt"], "depends_on": []}
        ])),
        Kind::Step(goal) if goal == "summarize the data" => match common::rounds_shown(req) {
            0 => decision("write_file", json!({"path": "./top.txt", "content": "alpha"})),
            1 if all_text(req).contains(
                "not written: `./top.txt` is the output of subtask s2 (writer), another part of this task, which writes it; this subtask's own file is: `summary.md`.",
            ) =>
            {
                decision("write_file", json!({"path": "summary.md", "content": "alpha=1, beta=2"}))
            }
            1 => finish("NOT TOLD WHOSE"),
            _ => finish("summarized"),
        },
        Kind::Step(goal) if goal == "name the top entry" => match common::rounds_shown(req) {
            0 => decision("write_file", json!({"path": "top.txt", "content": "beta"})),
            _ => finish("beta"),
        },
        Kind::Answer => text("done"),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    // Off by default (EVALS.md §41); switched on here.
    let limits = Limits {
        steer: hermes::agent::steer::Steers::defaults().with("owned_files", true),
        ..Limits::default()
    };
    let s = setup_with(&server, Faults::none(), 0, 4, limits).await;
    let report = s
        .hermes
        .submit("Summarize data.txt into summary.md and name the top entry in top.txt")
        .await
        .unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    let s1 = report.subtasks.iter().find(|s| s.id == "s1").unwrap();
    assert_eq!(s1.result.as_deref(), Some("summarized"), "{s1:?}");
    let read = |name: &str| std::fs::read_to_string(s._workspace.path().join(name)).unwrap();
    assert_eq!(read("top.txt"), "beta");
    assert_eq!(read("summary.md"), "alpha=1, beta=2");
}

/// An executor's loop runs until its task's deadline, whatever the base
/// limits' clock says; a role's own `timeout_secs` still bounds it.
#[tokio::test(flavor = "multi_thread")]
async fn an_executor_runs_until_the_task_deadline_unless_its_role_sets_a_clock() {
    let server = ScriptedServer::with_responder(|req| match kind(req) {
        Kind::Plan => {
            let role = if all_text(req).contains("QUICK") {
                "quick"
            } else {
                "worker"
            };
            plan(json!([{"id": "s1", "role": role, "goal": "slow work", "depends_on": []}]))
        }
        // Each decision takes 1.5 s: past the base clock of 1 s.
        Kind::Step(_) => Reply::Delay(Duration::from_millis(1500), Box::new(finish("done"))),
        other => panic!("unexpected request {other:?}"),
    })
    .await;
    let workspace = tempfile::tempdir().unwrap();
    let ws = Workspace::new(workspace.path()).unwrap();
    let mut toolbox = Toolbox::new();
    builtin::register_file_tools(&mut toolbox, &ws);
    let registry = roles(&toolbox.names());
    let quick = hermes::actors::roles::parse_role(
        "name = \"quick\"\ndescription = \"Quick jobs.\"\nsystem_prompt = \"You are quick.\"\n[limits]\ntimeout_secs = 1\n",
    )
    .unwrap();
    registry.register(quick, &toolbox.names()).unwrap();
    let config = OpenAiConfig::new(server.base_url.clone(), "scripted");
    let hermes = Hermes::builder()
        .llm(Arc::new(OpenAiClient::new(config).unwrap()))
        .roles(registry)
        .toolbox(toolbox)
        .limits(hermes::limits::Limits {
            timeout: Duration::from_secs(1),
            ..hermes::limits::Limits::default()
        })
        .max_replans(0)
        .spawn()
        .await
        .unwrap();
    let request = |task: &str| TaskRequest::new(task).with_timeout(Duration::from_secs(30));
    let report = hermes.submit(request("Slow work")).await.unwrap();
    assert_eq!(report.status.as_str(), "finished", "{report:#?}");
    assert_eq!(report.result.as_deref(), Some("done"));
    let report = hermes.submit(request("Slow work, QUICK")).await.unwrap();
    assert_eq!(report.status.as_str(), "failed", "{report:#?}");
    let progress = report.subtasks[0].progress.as_deref().unwrap_or_default();
    assert!(progress.contains("timeout"), "{report:#?}");
    hermes.shutdown().await;
}

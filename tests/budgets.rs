//! Token and call budgets for a whole task: `hermes run` and `hermes plan`
//! with `--token-budget`/`--call-budget` against a scripted model that
//! never finishes (every call is 10 + 5 tokens), and a served task with
//! `token_budget` in its body. At the cap the task stops with status
//! `budget` (exit 3) and its usage says where the tokens went.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::serve::{Server, Site};
use common::{decision, hermes, journal_lines, text, Reply, ScriptedServer};
use serde_json::{json, Value};

/// Plans four independent `worker` subtasks; executors list a new folder
/// every round forever (a little slowly, so all four run at once).
fn busy() -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    let calls = AtomicUsize::new(0);
    move |request| answer(request, calls.fetch_add(1, Ordering::Relaxed))
}

fn answer(request: &Value, call: usize) -> Reply {
    let system = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    if system.contains("You are the planner") {
        let subtasks: Vec<Value> = (1..=4)
            .map(|i| json!({"id": format!("s{i}"), "role": "worker", "goal": format!("look around, part {i}"), "depends_on": []}))
            .collect();
        return Reply::Content(json!({ "subtasks": subtasks }).to_string());
    }
    if system.contains("final answer of a team") {
        return text("FINAL");
    }
    Reply::Delay(
        Duration::from_millis(20),
        Box::new(decision(
            "list_dir",
            json!({ "path": format!("./d{call}") }),
        )),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_stops_at_its_token_budget_with_its_report() {
    let model = ScriptedServer::with_responder(busy()).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let run = hermes(
        &[
            "run",
            "Look around",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--token-budget",
            "40",
            "--journal",
            journal.to_str().unwrap(),
            "--json",
        ],
        &model.base_url,
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "budget", "{outcome}");
    // 15 tokens a call: the third call reaches 45 ≥ 40, and the run stops
    // before a fourth.
    let lines = journal_lines(&journal);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let journalled: u64 = lines
        .iter()
        .map(|l| {
            l["tokens"]["prompt_tokens"].as_u64().unwrap()
                + l["tokens"]["completion_tokens"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(journalled, 45);
    assert!(
        outcome["progress"]
            .as_str()
            .unwrap_or_default()
            .contains("budget was spent"),
        "{outcome}"
    );

    let run = hermes(
        &[
            "run",
            "Look around",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--call-budget",
            "2",
            "--json",
        ],
        &model.base_url,
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(run.outcome()["status"], "budget");
    assert_eq!(model.requests().len(), 5, "3 + 2 calls, none after a cap");

    let bad = hermes(&["run", "x", "--token-budget", "0"], &model.base_url).await;
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("--token-budget"), "{}", bad.stderr);
}

/// `hermes plan` of four looking subtasks by a `worker` whose role file
/// ends with `role_extra`, with `flags`; the role folder is returned too.
async fn plan_four(
    model: &ScriptedServer,
    role_extra: &str,
    flags: &[&str],
) -> (common::Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let roles = common::roles_dir(
        &format!("name = \"NAME\"\ndescription = \"Looks.\"\nsystem_prompt = \"You look.\"\n{role_extra}"),
        &["worker"],
    );
    let mut args = vec![
        "plan",
        "Look around in four parts",
        "--roles",
        roles.path().to_str().unwrap(),
        "--workspace",
        dir.path().to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(flags);
    let run = hermes(&args, &model.base_url).await;
    (run, roles)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_stops_every_executor_at_its_budget_and_the_usage_adds_up() {
    let model = ScriptedServer::with_responder(busy()).await;
    let (run, _roles) =
        plan_four(&model, "", &["--concurrency", "4", "--token-budget", "300"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "budget", "{report}");
    let subtasks = report["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 4);
    assert!(
        subtasks.iter().all(|s| s["status"] != "finished"),
        "{report}"
    );
    let tokens =
        |u: &Value| u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap();
    let by_subtask: u64 = subtasks.iter().map(|s| tokens(&s["usage"])).sum();
    let planner = tokens(&report["usage_by"]["planner"]);
    assert_eq!(planner, 15, "one planning call");
    assert_eq!(tokens(&report["usage"]), planner + by_subtask, "{report}");
    assert_eq!(tokens(&report["usage_by"]["roles"]["worker"]), by_subtask);
    // The caps stop new calls; a call in flight when its executor was
    // cancelled is not in the report (its round never ended), so the
    // report holds at most four calls fewer than the model served.
    let served = 15 * model.requests().len() as u64;
    let reported = tokens(&report["usage"]);
    assert!(
        reported <= served && served - reported <= 4 * 15,
        "{reported} of {served}"
    );
    assert!(served >= 300, "the cap was reached: {served}");
    assert!(
        served < 300 + 5 * 15,
        "at most the calls in flight over: {served}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_task_names_its_own_budget() {
    let model = ScriptedServer::with_responder(busy()).await;
    let site = Site::new();
    let server = Server::start(&site, &model.base_url, &[]).await;
    let id = server
        .submit(json!({"goal": "Look around", "token_budget": 100}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let events = server.events(&id, None).await;
    let ended = events.iter().find(|e| e.1 == "task_ended").unwrap();
    assert_eq!(ended.2["status"], "budget", "{events:?}");
    let task = server.task(&id).await;
    assert_eq!(task["status"], "budget");
    let response = server
        .post("/v1/tasks")
        .json(&json!({"goal": "x", "call_budget": 0}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_s_own_budget_stops_each_of_its_runs() {
    let model = ScriptedServer::with_responder(busy()).await;
    let (run, roles) = plan_four(&model, "token_budget = 45\n", &["--max-replans", "0"]).await;
    let report = run.outcome();
    assert_eq!(report["status"], "failed", "{report}");
    // Each run of the role stops at its own 45 tokens: three calls.
    for subtask in report["subtasks"].as_array().unwrap() {
        assert_eq!(subtask["rounds"], 3, "{subtask}");
        assert!(
            subtask["progress"]
                .as_str()
                .unwrap_or_default()
                .contains("budget was spent"),
            "{subtask}"
        );
    }
    // A cap of 0 is the role file's error, naming the field.
    std::fs::write(
        roles.path().join("worker.toml"),
        "name = \"worker\"\ndescription = \"Looks.\"\nsystem_prompt = \"You look.\"\ncall_budget = 0\n",
    )
    .unwrap();
    let listed = hermes(
        &["roles", "--roles", roles.path().to_str().unwrap()],
        &model.base_url,
    )
    .await;
    assert_ne!(listed.code, 0);
    assert!(
        listed.stderr.contains("field `call_budget`"),
        "{}",
        listed.stderr
    );
}

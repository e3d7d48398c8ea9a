//! `hermes plan` and `hermes roles` end to end: the real binary, real role
//! files, and a scripted OpenAI-compatible server on loopback.

mod common;

use common::{finish, hermes, text, Reply, ScriptedServer};
use serde_json::json;

const ROLE: &str = "name = \"NAME\"\ndescription = \"Does NAME work.\"\nsystem_prompt = \"You are NAME.\"\ntools = [\"read_file\", \"write_file\"]\n";

fn roles_dir(names: &[&str]) -> tempfile::TempDir {
    common::roles_dir(ROLE, names)
}

fn responder(req: &serde_json::Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    let user = req["messages"][1]["content"].as_str().unwrap_or_default();
    if system.contains("You are the planner") {
        Reply::Content(
            json!({"subtasks": [
                {"id": "s1", "role": "reader", "goal": "read notes.txt", "depends_on": []},
                {"id": "s2", "role": "scribe", "goal": "write summary.txt", "depends_on": ["s1"]}
            ]})
            .to_string(),
        )
    } else if system.contains("final answer of a team") {
        text("Summary written to summary.txt")
    } else if user.contains("Goal: read notes.txt") {
        if common::rounds_shown(req) > 0 {
            finish("notes say: ship it")
        } else {
            common::decision("read_file", json!({"path": "notes.txt"}))
        }
    } else if user.contains("write summary.txt") {
        if common::rounds_shown(req) > 0 {
            finish("wrote summary.txt")
        } else {
            common::decision(
                "write_file",
                json!({"path": "summary.txt", "content": "ship it"}),
            )
        }
    } else {
        Reply::Status(400, "unexpected request".into())
    }
}

/// `hermes plan --json` on "Summarise notes.txt into summary.txt" with a
/// reader and a scribe, a workspace holding notes.txt, `responder` as the
/// model, the `one_executor` route off, and `extra` flags; the run and its
/// workspace.
async fn plan_summary(
    responder: fn(&serde_json::Value) -> Reply,
    extra: &[&str],
) -> (common::Run, tempfile::TempDir) {
    let roles = roles_dir(&["reader", "scribe"]);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "ship it").unwrap();
    let server = ScriptedServer::with_responder(responder).await;
    let (roles_path, ws_path) = (roles.path().to_str().unwrap(), ws.path().to_str().unwrap());
    let mut args = vec![
        "plan",
        "Summarise notes.txt into summary.txt",
        "--roles",
        roles_path,
        "--workspace",
        ws_path,
        "--json",
        // A one-file task: planned here, so that the planner is what runs
        // (`extra` may switch the route back on).
        "--steer",
        "one_executor=off",
    ];
    args.extend_from_slice(extra);
    let run = hermes(&args, &server.base_url).await;
    (run, ws)
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_runs_subtasks_and_prints_the_report() {
    let (run, ws) = plan_summary(responder, &[]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    // The scribe built on the reader: its result is the answer, and the
    // model is not asked to restate it.
    assert_eq!(report["result"], "wrote summary.txt");
    assert_eq!(report["replans"], 0);
    assert_eq!(report["subtasks"][0]["id"], "s1");
    assert_eq!(report["subtasks"][0]["role"], "reader");
    assert_eq!(report["subtasks"][0]["status"], "finished");
    assert_eq!(report["subtasks"][0]["rounds"], 2);
    assert_eq!(report["subtasks"][0]["result"], "notes say: ship it");
    assert_eq!(report["subtasks"][1]["goal"], "write summary.txt");
    assert!(report["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("summary.txt")).unwrap(),
        "ship it"
    );
    assert!(
        run.stderr.contains("[plan] started   s1 (reader)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("[plan] finished  s2"), "{}", run.stderr);
}

/// The merged chain's one executor: reads, writes, then finishes, and is
/// asked for nothing else.
fn merged_responder(req: &serde_json::Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    if system.contains("You are the planner") {
        return responder(req);
    }
    read_write_finish(req, "Goal: read notes.txt\nThen: write summary.txt")
}

/// One executor that does the whole summary: reads notes.txt, writes
/// summary.txt, then finishes; any request whose prompt lacks `goal` is an
/// error.
fn read_write_finish(req: &serde_json::Value, goal: &str) -> Reply {
    if !common::messages_text(req).contains(goal) {
        return Reply::Status(400, "unexpected request".into());
    }
    match common::rounds_shown(req) {
        0 => common::decision("read_file", json!({"path": "notes.txt"})),
        1 => common::decision(
            "write_file",
            json!({"path": "summary.txt", "content": "ship it"}),
        ),
        _ => finish("wrote summary.txt"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_chain_merge_on_a_chain_one_role_can_do_runs_as_one_subtask() {
    let (run, ws) = plan_summary(merged_responder, &["--steer", "chain_merge=on"]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    let subtasks = report["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 1, "{report}");
    assert_eq!(subtasks[0]["id"], "s1");
    assert_eq!(subtasks[0]["role"], "reader");
    assert_eq!(
        subtasks[0]["goal"],
        "read notes.txt\nThen: write summary.txt"
    );
    assert_eq!(subtasks[0]["rounds"], 3);
    assert_eq!(report["result"], "wrote summary.txt");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("summary.txt")).unwrap(),
        "ship it"
    );
    assert!(
        run.stderr.contains("[plan] planned 1 subtask(s)"),
        "{}",
        run.stderr
    );
}

/// The routed task's one executor: the whole task is its goal; the planner
/// is never asked (a planning request is answered with an error).
fn routed_responder(req: &serde_json::Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    if system.contains("You are the planner") || system.contains("final answer of a team") {
        return Reply::Status(400, "the planner was asked".into());
    }
    read_write_finish(req, "Goal: Summarise notes.txt into summary.txt")
}

#[tokio::test(flavor = "multi_thread")]
async fn with_one_executor_on_a_task_with_one_deliverable_runs_without_a_planning_call() {
    let (run, ws) = plan_summary(routed_responder, &["--steer", "one_executor=on"]).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "finished");
    let subtasks = report["subtasks"].as_array().unwrap();
    assert_eq!(subtasks.len(), 1, "{report}");
    // Both roles can read and write: the first by name does the task.
    assert_eq!(subtasks[0]["role"], "reader");
    assert_eq!(subtasks[0]["goal"], "Summarise notes.txt into summary.txt");
    assert_eq!(subtasks[0]["outputs"], json!(["summary.txt"]));
    assert_eq!(subtasks[0]["rounds"], 3);
    assert_eq!(report["result"], "wrote summary.txt");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("summary.txt")).unwrap(),
        "ship it"
    );
}

/// The analyst computes in `run_code` and finishes with the one word asked
/// for; the scribe writes what the analyst's program printed only when its
/// prompt shows it (the hand-over: `agent::printed`).
fn hand_over_responder(req: &serde_json::Value) -> Reply {
    let system = req["messages"][0]["content"].as_str().unwrap_or_default();
    let prompt = common::messages_text(req);
    if system.contains("You are the planner") {
        Reply::Content(
            json!({"subtasks": [
                {"id": "s1", "role": "analyst", "goal": "find the top region in sales.csv", "depends_on": []},
                {"id": "s2", "role": "scribe", "goal": "write report.md with each region's total", "depends_on": ["s1"]}
            ]})
            .to_string(),
        )
    } else if common::rounds_shown(req) > 0 {
        finish("done")
    } else if prompt.contains("Goal: find the top region") {
        common::decision(
            "run_code",
            json!({"language": "python", "code": "print('north 1200')\nprint('south 800')", "timeout_secs": 10}),
        )
    } else if prompt.contains("write report.md") {
        let shown = prompt.contains("(its last program printed:\nnorth 1200\nsouth 800)");
        let content = if shown {
            "north 1200\nsouth 800\n"
        } else {
            "not shown\n"
        };
        common::decision(
            "write_file",
            json!({"path": "report.md", "content": content}),
        )
    } else {
        Reply::Status(400, "unexpected request".into())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_subtask_s_program_printed_reaches_the_subtask_after_it() {
    let roles = tempfile::tempdir().unwrap();
    for (name, tools) in [("analyst", "\"run_code\""), ("scribe", "\"write_file\"")] {
        let role = format!(
            "name = \"{name}\"\ndescription = \"Does {name} work.\"\nsystem_prompt = \"You are {name}.\"\ntools = [{tools}]\n"
        );
        std::fs::write(roles.path().join(format!("{name}.toml")), role).unwrap();
    }
    let ws = tempfile::tempdir().unwrap();
    let server = ScriptedServer::with_responder(hand_over_responder).await;
    let run = hermes(
        &[
            "plan",
            "Total sales.csv by region and write report.md",
            "--roles",
            roles.path().to_str().unwrap(),
            "--workspace",
            ws.path().to_str().unwrap(),
            "--no-steer",
            "code_redraw",
            "--no-steer",
            "code_vote",
            "--no-steer",
            "one_executor",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.outcome()["subtasks"][0]["result"], "done");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("report.md")).unwrap(),
        "north 1200\nsouth 800\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_with_an_unplannable_task_exits_1() {
    let roles = roles_dir(&["reader"]);
    let server = ScriptedServer::with_responder(|_| text("no plan from me")).await;
    let run = hermes(
        &[
            "plan",
            "x",
            "--roles",
            roles.path().to_str().unwrap(),
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(run.outcome()["status"], "error");
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_deadline_exits_3_with_a_partial_report() {
    let roles = roles_dir(&["reader"]);
    let server = ScriptedServer::with_responder(|req| {
        if req["messages"][0]["content"].as_str().unwrap_or_default().contains("You are the planner") {
            Reply::Content(json!({"subtasks": [{"id": "s1", "role": "reader", "goal": "slow", "depends_on": []}]}).to_string())
        } else {
            Reply::Delay(std::time::Duration::from_secs(30), Box::new(finish("late")))
        }
    })
    .await;
    let run = hermes(
        &[
            "plan",
            "x",
            "--roles",
            roles.path().to_str().unwrap(),
            "--timeout",
            "1",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let report = run.outcome();
    assert_eq!(report["status"], "timeout");
    assert_eq!(report["subtasks"][0]["status"], "cancelled");
    assert!(report["subtasks"][0]["progress"]
        .as_str()
        .unwrap()
        .contains("timeout"));
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_lists_shipped_roles_and_bad_files_name_file_and_field() {
    let run = hermes(
        &[
            "roles",
            "--roles",
            concat!(env!("CARGO_MANIFEST_DIR"), "/agents"),
            "--json",
        ],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let roles: Vec<serde_json::Value> = serde_json::from_str(run.stdout.trim()).unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["analyst", "coder", "researcher", "writer"]);

    let dir = roles_dir(&["reader"]);
    std::fs::write(
        dir.path().join("broken.toml"),
        ROLE.replace("NAME", "broken") + "max_round = 3\n",
    )
    .unwrap();
    let run = hermes(
        &["roles", "--roles", dir.path().to_str().unwrap()],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("broken.toml") && run.stderr.contains("max_round"),
        "{}",
        run.stderr
    );

    let missing = hermes(
        &["roles", "--roles", "/no/such/dir"],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("/no/such/dir"));
}

//! Long-term memory in the loop, end to end: the real binary against a
//! scripted OpenAI-compatible server on loopback (chat and embeddings).
//! A finished run is stored; a later run with a related goal is given it
//! in its first prompt; guard stops store nothing; `--no-memory` touches
//! nothing; `--embed-model` recalls by meaning; `hermes eval` keeps runs
//! apart unless the suite shares its memory.

mod common;

use std::path::Path;

use common::{decision, finish, hermes, messages_text, Reply, ScriptedServer};
use serde_json::{json, Value};

const NOTES_LINE: &str = "Notes from earlier tasks";

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "name,role\nana,admin\nbo,user\ncy,admin\ndee,admin\n",
    )
    .unwrap();
    dir
}

/// A model that reads users.csv, then finishes with `answer`, for any goal.
fn reads_then_answers(answer: &'static str) -> impl Fn(&Value) -> Reply + Send + Sync {
    move |request: &Value| {
        if common::rounds_shown(request) == 0 {
            decision("read_file", json!({"path": "users.csv"}))
        } else {
            finish(answer)
        }
    }
}

async fn run(task: &str, ws: &Path, server: &ScriptedServer, extra: &[&str]) -> common::Run {
    let mut args = vec!["run", task, "--workspace", ws.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    hermes(&args, &server.base_url).await
}

/// How many entries `hermes memory list` shows for workspace `ws`.
async fn memory_entries(ws: &Path, server: &ScriptedServer) -> usize {
    let args = [
        "memory",
        "list",
        "--workspace",
        ws.to_str().unwrap(),
        "--json",
    ];
    let listed = hermes(&args, &server.base_url).await;
    let entries = listed.outcome();
    entries.as_array().map_or(0, Vec::len)
}

/// The first user turn of chat request `i`.
fn first_user_turn(server: &ScriptedServer, i: usize) -> String {
    server.requests()[i]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finished_run_is_recalled_into_the_next_related_run() {
    let ws = workspace();
    let server = ScriptedServer::with_responder(reads_then_answers("3 admins: ana, cy, dee")).await;
    let first = run("Count the admins in users.csv", ws.path(), &server, &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let outcome = first.outcome();
    let stored = outcome["memory"]["stored"].as_str().unwrap().to_string();
    assert_eq!(outcome["memory"]["recalled"], json!([]));
    assert!(ws.path().join(".hermes/memory.redb").is_file());
    assert!(first
        .stderr
        .contains(&format!("[memory] stored this run as {stored}")));
    assert!(!first_user_turn(&server, 0).contains(NOTES_LINE));

    let second = run(
        "Which users in users.csv are admins?",
        ws.path(),
        &server,
        &[],
    )
    .await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let outcome = second.outcome();
    assert_eq!(outcome["memory"]["recalled"], json!([stored]));
    // The note opens the first prompt of the second run, before its goal,
    // with the first run's goal, result and the observation it rests on.
    let opening = first_user_turn(&server, 2);
    assert!(opening.starts_with(NOTES_LINE), "{opening}");
    assert!(
        opening.contains("- Task: Count the admins in users.csv"),
        "{opening}"
    );
    assert!(
        opening.contains("  Result: 3 admins: ana, cy, dee"),
        "{opening}"
    );
    assert!(
        opening.contains("  - read_file {\"path\":\"users.csv\"}: "),
        "{opening}"
    );
    // The goal follows the notes, then the workspace listing (which leaves
    // the memory's own folder out).
    assert!(opening.contains("\n\nGoal: Which users in users.csv are admins?\n\nFiles in the workspace before round 1 (listed for you; read a file to see what it holds):\n- users.csv ("), "{opening}");
    assert!(!opening.contains(".hermes"), "{opening}");
    assert!(
        opening.ends_with("\n\nRound 1 of 20. Reply with one JSON object."),
        "{opening}"
    );
    // Later turns do not repeat it.
    assert_eq!(
        messages_text(&server.requests()[3])
            .matches(NOTES_LINE)
            .count(),
        1
    );

    // Each finished run left one entry.
    assert_eq!(memory_entries(ws.path(), &server).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn unrelated_goals_recall_nothing_and_stopped_runs_store_nothing() {
    let ws = workspace();
    let server = ScriptedServer::with_responder(reads_then_answers("3 admins")).await;
    let first = run("Count the admins in users.csv", ws.path(), &server, &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);

    // A goal that shares no content word with the note gets none.
    let loops =
        ScriptedServer::with_responder(|_: &Value| decision("list_dir", json!({"path": "."})))
            .await;
    let stopped = run(
        "Write a haiku about the sea",
        ws.path(),
        &loops,
        &["--max-rounds", "2"],
    )
    .await;
    assert_eq!(stopped.code, 3, "{}", stopped.stderr);
    let outcome = stopped.outcome();
    assert_eq!(outcome["status"], "max_rounds");
    assert_eq!(outcome["memory"], json!({"recalled": [], "stored": null}));
    assert!(!first_user_turn(&loops, 0).contains(NOTES_LINE));
    // The agent never sees Hermes's own folder.
    let listing = messages_text(&loops.requests()[1]);
    assert!(listing.contains("users.csv"), "{listing}");
    assert!(!listing.contains(".hermes"), "{listing}");

    assert_eq!(memory_entries(ws.path(), &server).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_memory_touches_nothing_and_a_bad_memory_file_is_a_clear_error() {
    let ws = workspace();
    let server = ScriptedServer::with_responder(reads_then_answers("3 admins")).await;
    let off = run(
        "Count the admins in users.csv",
        ws.path(),
        &server,
        &["--no-memory"],
    )
    .await;
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(off.outcome()["memory"], Value::Null);
    assert!(!ws.path().join(".hermes").exists());

    // A file named by --memory that is not a store: exit 1, file untouched.
    let bogus = ws.path().join("not-a-store.redb");
    std::fs::write(&bogus, "this is not a redb file").unwrap();
    let bad = run(
        "Count the admins in users.csv",
        ws.path(),
        &server,
        &["--memory", bogus.to_str().unwrap()],
    )
    .await;
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("--memory"), "{}", bad.stderr);
    assert!(bad.stderr.contains("not-a-store.redb"), "{}", bad.stderr);
    assert_eq!(
        std::fs::read_to_string(&bogus).unwrap(),
        "this is not a redb file"
    );

    // --memory and --no-memory together are refused by the parser.
    let both = run(
        "x",
        ws.path(),
        &server,
        &["--memory", "m.redb", "--no-memory"],
    )
    .await;
    // Bad flags exit 1, as every argument error does.
    assert_eq!(both.code, 1, "{}", both.stderr);
    let ttl = run("x", ws.path(), &server, &["--memory-ttl", "0"]).await;
    assert_eq!(ttl.code, 1, "{}", ttl.stderr);
    assert!(
        ttl.stderr.contains("not a number of days"),
        "{}",
        ttl.stderr
    );
}

/// `--embed-model minilm` names the in-process embedder; a build without
/// its feature says how to get it (exit 1, like any bad flag) instead of
/// asking the server for a model called "minilm".
#[cfg(not(feature = "local-embed"))]
#[tokio::test(flavor = "multi_thread")]
async fn the_local_embedder_without_its_feature_is_a_clear_error() {
    let ws = workspace();
    let server = ScriptedServer::with_embeddings(reads_then_answers("3 admins"), admin_axis).await;
    for name in ["minilm", "all-MiniLM-L6-v2"] {
        let local = run("x", ws.path(), &server, &["--embed-model", name]).await;
        assert_eq!(local.code, 1, "{}", local.stderr);
        assert!(
            local.stderr.contains("--features local-embed"),
            "{}",
            local.stderr
        );
    }
    assert!(server.embedded().is_empty());
    assert!(server.requests().is_empty());
}

/// Texts about administrators point one way, everything else the other:
/// an embedder that knows "管理员" means "admin" when the words share nothing.
fn admin_axis(text: &str) -> Vec<f32> {
    if text.contains("admin") || text.contains("管理员") {
        vec![1.0, 0.0]
    } else {
        vec![0.0, 1.0]
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embedding_model_recalls_by_meaning_across_languages() {
    let ws = workspace();
    let store = ws.path().join("shared.redb");
    let store = store.to_str().unwrap();
    let server = ScriptedServer::with_embeddings(reads_then_answers("3 admins"), admin_axis).await;
    let first = run(
        "Count the admins in users.csv",
        ws.path(),
        &server,
        &["--memory", store, "--embed-model", "scripted-embed"],
    )
    .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let stored = first.outcome()["memory"]["stored"].clone();
    assert!(stored.is_string());
    // The goal was embedded for recall, then the note for the store.
    let embedded = server.embedded();
    assert_eq!(embedded.len(), 2, "{embedded:?}");
    assert!(embedded[1].starts_with("Task: Count the admins"));

    // No word in common: keywords alone find nothing (this run stops
    // without finishing, so it stores nothing) ...
    let goal = "有多少个管理员？";
    let loops =
        ScriptedServer::with_responder(|_: &Value| decision("list_dir", json!({"path": "."})))
            .await;
    let extra = ["--memory", store, "--max-rounds", "1"];
    let keywords = run(goal, ws.path(), &loops, &extra).await;
    assert_eq!(keywords.code, 3, "{}", keywords.stderr);
    assert_eq!(
        keywords.outcome()["memory"],
        json!({"recalled": [], "stored": null})
    );
    // ... the embedding finds the note.
    let meaning = run(
        goal,
        ws.path(),
        &server,
        &["--memory", store, "--embed-model", "scripted-embed"],
    )
    .await;
    assert_eq!(meaning.outcome()["memory"]["recalled"], json!([stored]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_embedder_falls_back_to_keywords() {
    let ws = workspace();
    // This server has no /v1/embeddings (404): recall and store go on without vectors.
    let server = ScriptedServer::with_responder(reads_then_answers("3 admins")).await;
    let extra = ["--embed-model", "missing"];
    let first = run("Count the admins in users.csv", ws.path(), &server, &extra).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let stored = first.outcome()["memory"]["stored"].clone();
    assert!(stored.is_string(), "{}", first.stderr);
    let second = run(
        "How many admins does users.csv list?",
        ws.path(),
        &server,
        &extra,
    )
    .await;
    assert_eq!(second.outcome()["memory"]["recalled"], json!([stored]));
}

const SUITE: &str = r#"
name = "memory"
MEMORY
[[task]]
id = "first"
goal = "Count the admins in users.csv."
[task.files]
"users.csv" = "name,role\nana,admin\nbo,user\n"
[[task.check]]
status = "finished"

[[task]]
id = "second"
goal = "How many admins are in users.csv?"
[task.files]
"users.csv" = "name,role\nana,admin\nbo,user\n"
[[task.check]]
status = "finished"
"#;

/// Runs the two-task suite (memory line `memory`) and returns the server.
async fn eval_suite(memory: &str, dir: &Path) -> ScriptedServer {
    let suite = dir.join("suite.toml");
    std::fs::write(&suite, SUITE.replace("MEMORY", memory)).unwrap();
    let server = ScriptedServer::with_responder(reads_then_answers("1")).await;
    let run = hermes(
        &["eval", suite.to_str().unwrap(), "--json"],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["summary"]["passed"], 2, "{}", run.stdout);
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_runs_start_fresh_unless_the_suite_shares_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = eval_suite("", dir.path()).await;
    let openings: Vec<String> = (0..4).map(|i| first_user_turn(&fresh, i)).collect();
    assert!(
        openings.iter().all(|o| !o.contains(NOTES_LINE)),
        "{openings:?}"
    );

    let shared = eval_suite("memory = \"shared\"", dir.path()).await;
    assert!(!first_user_turn(&shared, 0).contains(NOTES_LINE));
    let second = first_user_turn(&shared, 2);
    assert!(second.starts_with(NOTES_LINE), "{second}");
    assert!(
        second.contains("- Task: Count the admins in users.csv"),
        "{second}"
    );
}

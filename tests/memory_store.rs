//! The long-term memory store end to end: persistence across processes,
//! time-to-live, duplicate merging, hybrid recall, a writer killed with
//! SIGKILL mid-write, the embeddings client against a loopback server, and
//! the `hermes memory` CLI.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use hermes::memory::{
    self, finished_run_note, EmbedConfig, EmbedError, Embedder, ManualClock, MemoryError,
    MemoryStore, MemoryWrite, OpenAiEmbedder, RedbStore, SystemClock,
};
use serde_json::{json, Value};

use common::{hermes, Run};

/// The clock's start in tests: any fixed unix time.
const T0: u64 = 1_700_000_000;

fn store_at(path: &Path, clock: &Arc<ManualClock>) -> RedbStore {
    RedbStore::open_with_clock(path, clock.clone()).expect("open the store")
}

fn ids(entries: &[hermes::memory::MemoryEntry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}

/// `hermes memory ARGS --memory PATH`.
async fn memory_cli(args: &[&str], path: &Path) -> Run {
    let mut all = vec!["memory"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--memory", path.to_str().unwrap()]);
    hermes(&all, "http://127.0.0.1:9/v1").await
}

// --- persistence -----------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn entries_persist_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = memory::default_path(dir.path());
    let (parser, deploy) = {
        let store = RedbStore::open(&path).unwrap();
        let parser = store
            .remember(
                MemoryWrite::new(
                    finished_run_note(
                        "Fix the JSON parser",
                        "Trailing commas are now accepted.",
                        &["tests pass: 12 passed".into()],
                    ),
                    "Fix the JSON parser",
                )
                .with_role("coder")
                .with_embedding(vec![0.5, 0.5]),
            )
            .await
            .unwrap();
        let deploy = store
            .remember(MemoryWrite::new(
                "Deploy with rsync to the web host",
                "Deploy",
            ))
            .await
            .unwrap();
        assert!(!parser.merged && !deploy.merged);
        // Recorded without an fsync; dropping the store makes it durable.
        let recalled = store.recall("parser", None, 3).await.unwrap();
        assert_eq!(recalled.len(), 1);
        (parser.id, deploy.id)
    };
    assert!(path.exists(), "the store is created under .hermes/");

    // A second process: the CLI, finding the file from --workspace.
    let run = hermes(
        &[
            "memory",
            "list",
            "--json",
            "--workspace",
            dir.path().to_str().unwrap(),
        ],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let listed = run.outcome();
    let listed = listed.as_array().expect("a JSON array");
    let listed_ids: Vec<&str> = listed.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(listed_ids.len(), 2);
    assert!(listed_ids.contains(&parser.as_str()) && listed_ids.contains(&deploy.as_str()));
    let parser_entry = listed.iter().find(|e| e["id"] == parser.as_str()).unwrap();
    assert_eq!(parser_entry["role"], "coder");
    assert_eq!(parser_entry["task"], "Fix the JSON parser");
    assert_eq!(
        parser_entry["hits"], 1,
        "the recall's hit survived the drop"
    );
    assert!(parser_entry["text"]
        .as_str()
        .unwrap()
        .contains("Trailing commas are now accepted."));
    assert!(
        parser_entry.get("embedding").is_none(),
        "listings leave embeddings out"
    );

    // And back in this process, embeddings included.
    let store = RedbStore::open(&path).unwrap();
    let entries = store.list().await.unwrap();
    let entry = entries.iter().find(|e| e.id == parser).unwrap();
    assert_eq!(entry.embedding.as_deref(), Some(&[0.5, 0.5][..]));
    assert_eq!(entry.ttl_secs, memory::DEFAULT_TTL.as_secs());
}

// --- time-to-live ------------------------------------------------------------

#[tokio::test]
async fn an_expired_entry_is_never_returned_and_is_purged_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    let clock = Arc::new(ManualClock::new(T0));
    let short = {
        let store = store_at(&path, &clock);
        let short = store
            .remember(
                MemoryWrite::new("the cache key expires quickly", "t")
                    .with_ttl(Duration::from_secs(1)),
            )
            .await
            .unwrap();
        let long = store
            .remember(MemoryWrite::new("the cache lives long", "t"))
            .await
            .unwrap();
        assert_eq!(store.search("cache", None, 5).await.unwrap().len(), 2);

        // One second later the short one is gone from every read.
        clock.advance(1);
        let recalled = store.recall("cache", None, 5).await.unwrap();
        let recalled: Vec<&str> = recalled.iter().map(|r| r.entry.id.as_str()).collect();
        assert_eq!(recalled, [long.id.as_str()]);
        assert_eq!(ids(&store.list().await.unwrap()), [long.id.as_str()]);
        assert_eq!(store.len(), 1);
        // A write of the same text does not merge into the expired entry.
        let again = store
            .remember(
                MemoryWrite::new("The cache key expires quickly!", "t")
                    .with_ttl(Duration::from_secs(1)),
            )
            .await
            .unwrap();
        assert!(!again.merged);
        assert_eq!(
            again.id, short.id,
            "same text, same id: it replaces the expired one"
        );
        short.id
    };

    // Reopened after it expired again: deleted from the file on open.
    clock.advance(5);
    let store = store_at(&path, &clock);
    assert_eq!(store.purged_on_open(), 1);
    drop(store);
    // Turning the clock back shows it was deleted, not just hidden.
    clock.set(T0);
    let store = store_at(&path, &clock);
    assert_eq!(store.purged_on_open(), 0);
    let listed = ids(&store.list().await.unwrap());
    assert_eq!(listed.len(), 1);
    assert!(!listed.contains(&short));
}

#[tokio::test]
async fn recall_restarts_an_entrys_time_to_live() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = store_at(&dir.path().join("m.redb"), &clock);
    store
        .remember(
            MemoryWrite::new("rotate the api token monthly", "t").with_ttl(Duration::from_secs(10)),
        )
        .await
        .unwrap();
    clock.advance(8);
    let hit = store.recall("api token", None, 1).await.unwrap();
    assert_eq!(hit[0].entry.hits, 1);
    assert_eq!(hit[0].entry.last_used, T0 + 8);
    assert_eq!(hit[0].entry.created, T0);
    clock.advance(9); // 17 s after the write, 9 after the recall
    assert_eq!(store.list().await.unwrap().len(), 1);
    clock.advance(1); // 10 s after the recall
    assert!(store.list().await.unwrap().is_empty());
    assert!(store.recall("api token", None, 1).await.unwrap().is_empty());
    assert_eq!(store.purge_expired().await.unwrap(), 1);
}

// --- duplicates -------------------------------------------------------------

#[tokio::test]
async fn a_write_identical_after_normalisation_refreshes_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = store_at(&dir.path().join("m.redb"), &clock);
    let first = store
        .remember(
            MemoryWrite::new("Fix the parser: trailing commas!", "first task")
                .with_ttl(Duration::from_secs(100)),
        )
        .await
        .unwrap();
    clock.advance(60);
    let second = store
        .remember(
            MemoryWrite::new("  fix THE parser   trailing commas", "second task")
                .with_ttl(Duration::from_secs(100)),
        )
        .await
        .unwrap();
    assert_eq!(
        second,
        hermes::memory::Written {
            id: first.id.clone(),
            merged: true
        }
    );
    let entries = store.list().await.unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(
        entry.text, "Fix the parser: trailing commas!",
        "the longer text stays"
    );
    assert_eq!(entry.task, "first task");
    assert_eq!(entry.hits, 1);
    assert_eq!(entry.created, T0);
    assert_eq!(entry.last_used, T0 + 60);
    // The time-to-live starts again from the merge.
    clock.advance(99);
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_near_duplicate_merges_and_keeps_the_longer_text() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = store_at(&dir.path().join("m.redb"), &clock);
    let base = "the build needs cmake clang and libclang dev installed before cargo runs";
    let first = store.remember(MemoryWrite::new(base, "a")).await.unwrap();
    // 13 of 14 distinct tokens shared: token-set Jaccard 0.93.
    let longer = format!("{base} first");
    let second = store
        .remember(MemoryWrite::new(longer.clone(), "b").with_role("builder"))
        .await
        .unwrap();
    assert!(second.merged);
    assert_eq!(second.id, first.id);
    let entries = store.list().await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].text, longer);
    assert_eq!(entries[0].task, "b", "the longer text brings its source");
    assert_eq!(entries[0].role.as_deref(), Some("builder"));

    // Too different: a new entry.
    let other = store
        .remember(MemoryWrite::new("the build needs cmake", "c"))
        .await
        .unwrap();
    assert!(!other.merged);

    // Different words, nearly the same embedding: merged by cosine.
    let a = store
        .remember(MemoryWrite::new("ship it on friday", "d").with_embedding(vec![1.0, 0.0, 0.1]))
        .await
        .unwrap();
    let b = store
        .remember(
            MemoryWrite::new("release at week end", "e").with_embedding(vec![0.98, 0.0, 0.12]),
        )
        .await
        .unwrap();
    assert!(b.merged && b.id == a.id);
    let c = store
        .remember(
            MemoryWrite::new("pasta needs salted water", "f").with_embedding(vec![0.0, 1.0, 0.0]),
        )
        .await
        .unwrap();
    assert!(!c.merged);
    assert_eq!(store.list().await.unwrap().len(), 4);

    // A batch may merge into its own earlier writes.
    let batch = store
        .remember_all(vec![
            MemoryWrite::new("lint with clippy", "g"),
            MemoryWrite::new("Lint with Clippy.", "g"),
        ])
        .await
        .unwrap();
    assert!(!batch[0].merged && batch[1].merged && batch[0].id == batch[1].id);
}

#[tokio::test]
async fn bad_writes_are_refused_with_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("m.redb")).unwrap();
    assert!(matches!(
        store.remember(MemoryWrite::new("  \n", "t")).await,
        Err(MemoryError::EmptyText)
    ));
    assert!(matches!(
        store
            .remember(MemoryWrite::new("x", "t").with_embedding(vec![1.0, f32::NAN]))
            .await,
        Err(MemoryError::BadEmbedding { .. })
    ));
    assert!(store.is_empty());
    let err = store.forget("000000000000").await.unwrap_err();
    assert!(matches!(err, MemoryError::UnknownId { .. }));
    assert!(err.to_string().contains("m.redb"), "{err}");
}

// --- recall -----------------------------------------------------------------

#[tokio::test]
async fn recall_ranks_by_keywords_fuses_embeddings_and_counts_hits() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = store_at(&dir.path().join("m.redb"), &clock);
    let write = |text: &str, v: [f32; 3]| MemoryWrite::new(text, "t").with_embedding(v.to_vec());
    let written = store
        .remember_all(vec![
            write(
                "the deploy script copies files with rsync over ssh",
                [0.0, 1.0, 0.0],
            ),
            write(
                "shipping the site to production needs the vpn",
                [1.0, 0.1, 0.0],
            ),
            write(
                "gardening: water the tomatoes every morning",
                [0.0, 0.0, 1.0],
            ),
            write("部署脚本使用rsync复制文件", [0.0, 0.6, 0.8]),
        ])
        .await
        .unwrap();
    let id = |i: usize| written[i].id.clone();

    // Two query words: an entry must hold both (the Chinese one has only rsync).
    let keyword = store.recall("deploy rsync", None, 5).await.unwrap();
    let found: Vec<String> = keyword.iter().map(|r| r.entry.id.clone()).collect();
    assert_eq!(found, [id(0)], "only entries sharing enough keywords");
    assert!(keyword
        .iter()
        .all(|r| r.entry.hits == 1 && r.entry.last_used == T0));
    // One query word: every entry holding it.
    let one_word = store.search("rsync", None, 5).await.unwrap();
    let mut found: Vec<String> = one_word.iter().map(|r| r.entry.id.clone()).collect();
    found.sort();
    let mut expected = vec![id(0), id(3)];
    expected.sort();
    assert_eq!(found, expected);

    let chinese = store.search("部署", None, 5).await.unwrap();
    assert_eq!(chinese.len(), 1);
    assert_eq!(chinese[0].entry.id, id(3));
    assert_eq!(chinese[0].entry.hits, 0, "search records no use");

    // The query embedding points at "shipping…", which shares no keyword.
    clock.advance(5);
    let fused = store
        .recall("deploy rsync", Some(&[1.0, 0.0, 0.0]), 5)
        .await
        .unwrap();
    let found: Vec<String> = fused.iter().map(|r| r.entry.id.clone()).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.contains(&id(1)),
        "cosine adds the entry keywords missed"
    );
    assert!(!found.contains(&id(2)), "unrelated on both rankings");
    // Reciprocal-rank scores: at most 1/61 per ranking.
    assert!(fused.iter().all(|r| r.score > 0.0 && r.score <= 2.0 / 61.0));
    let first = fused.iter().find(|r| r.entry.id == id(0)).unwrap();
    assert_eq!((first.entry.hits, first.entry.last_used), (2, T0 + 5));

    assert_eq!(
        store.recall("deploy rsync", None, 1).await.unwrap().len(),
        1
    );
    assert!(store.recall("deploy", None, 0).await.unwrap().is_empty());
    assert!(store.recall("quantum", None, 5).await.unwrap().is_empty());
}

// --- crash safety -----------------------------------------------------------

/// Set in the child this test binary spawns: the store it writes to.
const CRASH_DB: &str = "HERMES_MEMORY_CRASH_DB";

/// The child side of the kill -9 test: with `CRASH_DB` set, writes entries
/// one commit at a time until killed, printing each id once its commit has
/// returned. Without it (a normal test run) it does nothing.
#[test]
fn crash_writer_child() {
    let Ok(path) = std::env::var(CRASH_DB) else {
        return;
    };
    let store = RedbStore::open(&path).expect("child opens the store");
    let round = std::process::id();
    for i in 0.. {
        let text = format!(
            "crash round {round} entry {i}: {}",
            "payload ".repeat(1 + i % 50)
        );
        let written = store
            .remember_blocking(MemoryWrite::new(text, "crash test"))
            .expect("write");
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "committed {}", written.id).unwrap();
        out.flush().unwrap();
    }
}

/// The id in a child's `committed <id>` line; a line cut short by the kill
/// is not one.
fn committed_id(line: &str) -> Option<String> {
    let id = line.strip_prefix("committed ")?;
    (id.len() == 12 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_string())
}

#[test]
fn a_writer_killed_with_sigkill_loses_no_committed_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    let mut committed: Vec<String> = Vec::new();
    // Three writers in turn, each killed at a different point; each next
    // one opens (and repairs) what the last left.
    for kill_after in [3, 17, 40] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_DB, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the writer");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let started = Instant::now();
        let mut seen = 0;
        while seen < kill_after {
            let line = lines
                .next()
                .expect("the writer ended before it was killed")
                .unwrap();
            if let Some(id) = committed_id(&line) {
                committed.push(id);
                seen += 1;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "writer too slow"
            );
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        // Ids printed between the last read and the kill were committed too.
        for line in lines {
            if let Some(id) = committed_id(&line.unwrap()) {
                committed.push(id);
            }
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "the writer was killed");
    }
    let store = RedbStore::open(&path).expect("the store opens after three kills");
    let held: std::collections::HashSet<String> =
        store.list_blocking().into_iter().map(|e| e.id).collect();
    let missing: Vec<&String> = committed.iter().filter(|id| !held.contains(*id)).collect();
    assert!(missing.is_empty(), "lost committed entries: {missing:?}");
    assert!(committed.len() >= 60);
}

// --- embeddings client ------------------------------------------------------

#[derive(Default)]
struct Seen {
    bodies: Vec<Value>,
    auth: Vec<Option<String>>,
}

/// An `/v1/embeddings` server on loopback: answers each input with
/// `[len, 1]`, items in reverse order (clients must sort by `index`), or
/// with `status` when it is not 200.
async fn embeddings_server(status: u16) -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = seen.clone();
    let app = Router::new().route(
        "/v1/embeddings",
        post(move |headers: HeaderMap, body: String| {
            let state = state.clone();
            async move {
                let body: Value = serde_json::from_str(&body).unwrap();
                let auth = headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_string());
                let inputs: Vec<String> = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                {
                    let mut seen = state.lock().unwrap();
                    seen.bodies.push(body);
                    seen.auth.push(auth);
                }
                if status != 200 {
                    return (StatusCode::from_u16(status).unwrap(), "model not loaded".to_string());
                }
                let data: Vec<Value> = inputs
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": [text.len() as f32, 1.0]}))
                    .collect();
                (StatusCode::OK, json!({"object": "list", "data": data, "model": "m"}).to_string())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_embedder_posts_texts_and_returns_vectors_in_order() {
    let (base_url, seen) = embeddings_server(200).await;
    let embedder = OpenAiEmbedder::new(
        EmbedConfig::new(&base_url, "nomic-embed-text").with_api_key("sk-test"),
    )
    .unwrap();
    assert_eq!(embedder.url(), format!("{base_url}/embeddings"));
    assert_eq!(embedder.model(), "nomic-embed-text");
    let texts = vec!["a".to_string(), "abc".to_string()];
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors, vec![vec![1.0, 1.0], vec![3.0, 1.0]]);
    assert!(
        embedder.embed(&[]).await.unwrap().is_empty(),
        "no request for no texts"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.bodies.len(), 1);
    assert_eq!(seen.bodies[0]["model"], "nomic-embed-text");
    assert_eq!(seen.bodies[0]["input"], json!(["a", "abc"]));
    assert_eq!(seen.auth[0].as_deref(), Some("Bearer sk-test"));
}

#[tokio::test(flavor = "multi_thread")]
async fn embedder_errors_name_the_url() {
    let (base_url, seen) = embeddings_server(503).await;
    let mut config = EmbedConfig::new(&base_url, "m");
    config.max_attempts = 2;
    config.min_backoff = Duration::from_millis(10);
    let embedder = OpenAiEmbedder::new(config).unwrap();
    let err = embedder.embed(&["x".to_string()]).await.unwrap_err();
    assert!(
        matches!(err, EmbedError::Status { status: 503, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&base_url), "{err}");
    assert_eq!(seen.lock().unwrap().bodies.len(), 2, "a 503 is retried");

    let mut config = EmbedConfig::new("http://127.0.0.1:9/v1", "m");
    config.max_attempts = 1;
    let err = OpenAiEmbedder::new(config)
        .unwrap()
        .embed(&["x".to_string()])
        .await
        .unwrap_err();
    assert!(matches!(err, EmbedError::Unreachable { .. }), "{err}");
    assert!(
        err.to_string().contains("127.0.0.1:9/v1/embeddings"),
        "{err}"
    );
}

// --- the CLI ----------------------------------------------------------------

/// A store with two live entries and one that expired, all written 1,000 s
/// ago (the expired one with a 10 s TTL); returns their ids. The store is
/// closed, so the CLI's open is the one that finds the expired entry.
fn seeded(path: &Path) -> (String, String, String) {
    let past = Arc::new(ManualClock::new(
        hermes::memory::Clock::now(&SystemClock) - 1000,
    ));
    let store = store_at(path, &past);
    let write = |write: MemoryWrite| store.remember_blocking(write).unwrap().id;
    let expired = write(
        MemoryWrite::new("an old note about the staging server", "old")
            .with_ttl(Duration::from_secs(10)),
    );
    let parser = write(MemoryWrite::new(
        "the JSON parser accepts trailing commas",
        "parser",
    ));
    let deploy = write(MemoryWrite::new("deploy with rsync over ssh", "deploy").with_role("ops"));
    (parser, deploy, expired)
}

fn listed_ids(run: &Run) -> Vec<String> {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    run.outcome()
        .as_array()
        .expect("an array")
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_lists_and_searches_as_json_and_as_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.redb");
    let (parser, deploy, expired) = seeded(&path);

    let ids = listed_ids(&memory_cli(&["list", "--json"], &path).await);
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&parser) && ids.contains(&deploy) && !ids.contains(&expired));

    let run = memory_cli(&["search", "rsync deploy", "--json"], &path).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let found = run.outcome();
    let found = found.as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["entry"]["id"], deploy.as_str());
    assert_eq!(found[0]["entry"]["role"], "ops");
    assert!(found[0]["score"].as_f64().unwrap() > 0.0);
    assert!(found[0]["entry"].get("embedding").is_none());

    let run = memory_cli(&["list"], &path).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let mut lines = run.stdout.lines();
    assert!(lines.next().unwrap().starts_with("ID"));
    assert!(run.stdout.contains(&parser) && run.stdout.contains("deploy with rsync over ssh"));

    let run = memory_cli(&["search", "trailing commas"], &path).await;
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("SCORE") && run.stdout.contains(&parser));
    let run = memory_cli(&["search", "nothing like this", "--json"], &path).await;
    assert_eq!(run.outcome(), json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_forget_deletes_one_entry_and_refuses_an_unknown_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.redb");
    let (parser, deploy, _) = seeded(&path);

    let run = memory_cli(&["forget", &parser, "--json"], &path).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.outcome(), json!({ "forgotten": parser }));
    assert_eq!(
        listed_ids(&memory_cli(&["list", "--json"], &path).await),
        [deploy]
    );

    let run = memory_cli(&["forget", &parser], &path).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains(&format!("no memory with id `{parser}`")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(path.to_str().unwrap()),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_purge_deletes_expired_entries_and_clear_deletes_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.redb");
    seeded(&path);

    let run = memory_cli(&["purge", "--json"], &path).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.outcome(), json!({ "purged": 1 }));
    let run = memory_cli(&["purge"], &path).await;
    assert_eq!(run.stdout.trim(), "purged 0 expired entries");
    assert_eq!(
        listed_ids(&memory_cli(&["list", "--json"], &path).await).len(),
        2
    );

    let run = memory_cli(&["clear", "--json"], &path).await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.outcome(), json!({ "cleared": 2 }));
    assert!(listed_ids(&memory_cli(&["list", "--json"], &path).await).is_empty());
    let run = memory_cli(&["list"], &path).await;
    assert!(run.stdout.starts_with("no memories in"), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_errors_name_the_path_and_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let check = |run: &Run, path: &Path, says: &str| {
        assert_eq!(run.code, 1, "stdout: {} stderr: {}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(path.to_str().unwrap()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    };

    let missing = dir.path().join("nowhere").join("memory.redb");
    check(
        &memory_cli(&["list"], &missing).await,
        &missing,
        "no memory store at",
    );
    assert!(
        !missing.exists(),
        "a missing store is not created by looking"
    );

    let garbage = dir.path().join("garbage.redb");
    std::fs::write(
        &garbage,
        "this is not a database, just some text ".repeat(200),
    )
    .unwrap();
    check(
        &memory_cli(&["list", "--json"], &garbage).await,
        &garbage,
        "is corrupt or not a memory file",
    );
    assert!(
        std::fs::read_to_string(&garbage)
            .unwrap()
            .starts_with("this is not"),
        "the file is left as it was"
    );

    let folder = dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    check(
        &memory_cli(&["search", "x"], &folder).await,
        &folder,
        "memory store",
    );

    // A store held open by another process is locked.
    let held = dir.path().join("held.redb");
    let store = RedbStore::open(&held).unwrap();
    check(
        &memory_cli(&["clear"], &held).await,
        &held,
        "in use by another process",
    );
    drop(store);
    assert_eq!(memory_cli(&["clear"], &held).await.code, 0);
}

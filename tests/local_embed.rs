//! all-MiniLM-L6-v2 in-process (`--features local-embed`) on its real
//! files from `scripts/fetch-embedder.sh`: the vectors sentence-transformers
//! gives, and recall by meaning through the real binary. Skipped (with a
//! message) when the files are absent, unless HERMES_REQUIRE_LOCAL_EMBED=1
//! (CI sets it), which makes absence a failure. HERMES_TEST_EMBED_DIR names
//! the folder; else the model cache's `all-minilm-l6-v2`.

mod common;

use std::path::{Path, PathBuf};

use common::{decision, finish, hermes, Reply, ScriptedServer};
use hermes::memory::dedupe::{cosine, norm};
use hermes::memory::minilm::{MiniLmEmbedder, DIMS, MODEL_NAME};
use hermes::memory::Embedder;
use hermes::model_files::ModelCache;
use serde_json::{json, Value};

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HERMES_TEST_EMBED_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| ModelCache::from_env().embedder_dir());
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        return Some(dir);
    }
    let required = std::env::var("HERMES_REQUIRE_LOCAL_EMBED").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "the all-MiniLM-L6-v2 files are missing in {}: run scripts/fetch-embedder.sh",
        dir.display()
    );
    eprintln!(
        "skipped: no all-MiniLM-L6-v2 files in {} (run scripts/fetch-embedder.sh)",
        dir.display()
    );
    None
}

fn load() -> Option<MiniLmEmbedder> {
    let dir = model_dir()?;
    Some(MiniLmEmbedder::load(&dir).unwrap())
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[tokio::test(flavor = "multi_thread")]
async fn vectors_are_384_long_and_of_unit_length() {
    let Some(embedder) = load() else { return };
    assert_eq!(embedder.model(), MODEL_NAME);
    // The empty text and one far past 256 tokens (cut) embed like any other.
    let long = "the quick brown fox jumps over the lazy dog ".repeat(200);
    let texts = strings(&["", "  ", "How many rows does the CSV file have?", &long]);
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), texts.len());
    for vector in &vectors {
        assert_eq!(vector.len(), DIMS);
        assert!(vector.iter().all(|x| x.is_finite()));
        let length = norm(vector);
        assert!((length - 1.0).abs() < 1e-4, "norm {length}");
    }
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
}

/// sentence-transformers' `SentenceTransformer("all-MiniLM-L6-v2")
/// .encode("This is an example sentence")`, first 8 of 384 values (also
/// what a float64 NumPy re-implementation of BERT + mean pooling gives on
/// the wheel's files).
const EXAMPLE_START: [f32; 8] = [
    0.067657, 0.063496, 0.048713, 0.079305, 0.037448, 0.002653, 0.039375, -0.007098,
];

#[tokio::test(flavor = "multi_thread")]
async fn the_vectors_are_sentence_transformers_ones() {
    let Some(embedder) = load() else { return };
    let vector = embedder
        .embed(&strings(&["This is an example sentence"]))
        .await
        .unwrap()
        .remove(0);
    let difference = max_difference(&vector[..8], &EXAMPLE_START);
    assert!(
        difference < 1e-4,
        "{:?} differs by {difference}",
        &vector[..8]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paraphrase_is_nearer_than_an_unrelated_sentence() {
    let Some(embedder) = load() else { return };
    let texts = strings(&[
        "How many rows does the CSV file have?",
        "Count the lines in data.csv",
        "The weather in Paris is sunny",
    ]);
    let v = embedder.embed(&texts).await.unwrap();
    let related = cosine(&v[0], &v[1]).unwrap();
    let unrelated = cosine(&v[0], &v[2]).unwrap();
    assert!(
        related > unrelated + 0.3,
        "related {related}, unrelated {unrelated}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_texts_give_the_same_vectors() {
    let Some(embedder) = load() else { return };
    let texts = strings(&[
        "Count the lines in data.csv",
        "The weather in Paris is sunny",
    ]);
    let first = embedder.embed(&texts).await.unwrap();
    let second = embedder.embed(&texts).await.unwrap();
    assert_eq!(first, second);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_gives_what_each_text_gives_alone() {
    let Some(embedder) = load() else { return };
    // 40 texts of many lengths: two batches, each padded to its longest.
    let texts: Vec<String> = (0..40)
        .map(|i| {
            let words = ["rows", "lines", "weather", "Paris", "CSV", "file", "count"];
            let n = 1 + (i * 7) % 23;
            (0..n)
                .map(|k| words[(i + k) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let together = embedder.embed(&texts).await.unwrap();
    for (text, vector) in texts.iter().zip(&together) {
        let alone = embedder.embed(std::slice::from_ref(text)).await.unwrap();
        let difference = max_difference(vector, &alone[0]);
        assert!(difference < 1e-5, "{text:?} differs by {difference}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_folder_is_a_clear_error_naming_the_fetch_script() {
    let server = ScriptedServer::with_responder(|_: &Value| finish("done")).await;
    let ws = tempfile::tempdir().unwrap();
    let missing = ws.path().join("no-such-folder");
    let run = hermes(
        &[
            "run",
            "anything",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--embed-model",
            "minilm",
            "--embed-dir",
            missing.to_str().unwrap(),
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let weights = missing.join("model.safetensors");
    assert!(
        run.stderr.contains(&weights.display().to_string()),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("scripts/fetch-embedder.sh"),
        "{}",
        run.stderr
    );
}

/// A run of `task` in `ws` with memory file `store` and `extra` flags.
async fn run(
    task: &str,
    ws: &Path,
    store: &Path,
    server: &ScriptedServer,
    extra: &[&str],
) -> Value {
    let mut args = vec![
        "run",
        task,
        "--workspace",
        ws.to_str().unwrap(),
        "--memory",
        store.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let run = hermes(&args, &server.base_url).await;
    assert!(run.code == 0 || run.code == 3, "{}", run.stderr);
    run.outcome()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_note_is_recalled_by_meaning_when_no_word_is_shared() {
    let Some(dir) = model_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let store = ws.path().join("memory.redb");
    let minilm = [
        "--embed-model",
        "minilm",
        "--embed-dir",
        dir.to_str().unwrap(),
    ];
    let answers = ScriptedServer::with_responder(|_: &Value| finish("Tokyo")).await;
    let first = run(
        "What is the capital of Japan?",
        ws.path(),
        &store,
        &answers,
        &minilm,
    )
    .await;
    let stored = first["memory"]["stored"].clone();
    assert!(stored.is_string(), "{first}");

    // No word in common with the note ("Task: What is the capital of
    // Japan? Result: Tokyo"). These runs stop after one round without
    // finishing, so they store nothing.
    let goal = "Which city is the seat of the Japanese government?";
    let loops = ScriptedServer::with_responder(|_: &Value| -> Reply {
        decision("list_dir", json!({"path": "."}))
    })
    .await;
    let one_round = ["--max-rounds", "1"];
    let keywords = run(goal, ws.path(), &store, &loops, &one_round).await;
    assert_eq!(keywords["memory"]["recalled"], json!([]));

    let with_minilm = [&minilm[..], &one_round[..]].concat();
    let meaning = run(goal, ws.path(), &store, &loops, &with_minilm).await;
    assert_eq!(meaning["memory"]["recalled"], json!([stored]));

    let unrelated = run(
        "Count the lines in data.csv",
        ws.path(),
        &store,
        &loops,
        &with_minilm,
    )
    .await;
    assert_eq!(unrelated["memory"]["recalled"], json!([]));
}

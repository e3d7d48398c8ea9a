//! The built-in engine (pure Rust, candle; the default build) on a real
//! GGUF model: Qwen2.5-Coder-1.5B-Instruct from `hermes model pull 1.5b`.
//! Skipped (with a message) when the model is absent, unless
//! HERMES_REQUIRE_LOCAL_MODEL=1 (CI sets it), which makes absence a failure.

mod common;

use std::sync::Arc;

use common::local_model::{last_json, model, prefix_reuse_keeps_decisions, workspace, TASK};
use hermes::llm::native::{model_loads, set_threads, NativeConfig, NativeLlm};
use hermes::llm::{ChatMessage, ChatRequest, Llm};

/// Held by the tests that load the model in this process: one of them
/// counts loads, which another's loads would disturb.
static LOADING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn question(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system("You are a helpful assistant. Answer in one short sentence."),
            ChatMessage::user(text),
        ],
        temperature: 0.0,
        max_tokens: 12,
        json: false,
        schema: None,
        seed: None,
    }
}

/// With no server configured and none answering, `hermes run` picks the
/// built-in engine and the default model from the cache, says so in one
/// line, and finishes the README's file task.
#[tokio::test(flavor = "multi_thread")]
async fn with_no_server_the_default_build_runs_the_default_model_in_process() {
    let Some(model) = model() else { return };
    if model.file_name().and_then(|n| n.to_str()) != Some("qwen2.5-coder-1.5b-instruct.gguf") {
        eprintln!(
            "skipped: {} is not the default model's cache file",
            model.display()
        );
        return;
    }
    let ws = workspace();
    let output = tokio::process::Command::new(common::hermes_bin())
        .args(["run", TASK, "--workspace", ws.path().to_str().unwrap()])
        .args([
            "--engine",
            "candle",
            "--threads",
            "1",
            "--temperature",
            "0",
            "--json",
        ])
        .env("HERMES_MODEL_CACHE", model.parent().unwrap())
        // No server: nothing answers at the default URL (Ollama's) here.
        .env_remove("HERMES_BASE_URL")
        .env_remove("HERMES_MODEL_PATH")
        .env_remove("OPENAI_API_KEY")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let announced: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("model: "))
        .collect();
    assert_eq!(
        announced,
        vec!["model: qwen2.5-coder-1.5b-instruct.gguf in-process (candle, grammar, jump-forward), because no --base-url or HERMES_BASE_URL is set and nothing answers at http://localhost:11434/v1"],
        "{stderr}"
    );
    let outcome = last_json(&stdout);
    assert_eq!(outcome["status"], "finished", "{stdout}\n{stderr}");
    let summary = std::fs::read_to_string(ws.path().join("summary.txt")).unwrap();
    assert!(!summary.trim().is_empty());
    assert!(
        outcome["usage"]["cached_tokens"].as_u64().unwrap() > 0,
        "{outcome}"
    );
}

/// A 5-round run reuses at least 80% of each prompt from round 3 on, and
/// decides exactly as a run that evaluates every prompt whole.
#[tokio::test(flavor = "multi_thread")]
async fn later_rounds_reuse_the_cached_prefix_and_decide_exactly_as_without_it() {
    let Some(model) = model() else { return };
    prefix_reuse_keeps_decisions(&model, &["--engine", "candle"], 5, usize::MAX).await;
}

/// Four requests at once (one engine step serves them all) give the same
/// greedy answers as the same four one after another, and four more
/// handles on the loaded file share it instead of loading it again.
#[tokio::test(flavor = "multi_thread")]
async fn four_concurrent_requests_answer_as_four_sequential_ones_on_one_loaded_model() {
    let Some(model) = model() else { return };
    set_threads(1);
    let _loading = LOADING.lock().await;
    let first = NativeLlm::load(NativeConfig::new(&model)).unwrap();
    let loads = model_loads();
    let handles: Vec<Arc<NativeLlm>> = (0..4)
        .map(|_| Arc::new(NativeLlm::load(NativeConfig::new(&model)).unwrap()))
        .collect();
    assert_eq!(model_loads(), loads, "the loaded model is shared");
    let questions = [
        "What is the capital of France?",
        "Name a prime number above 10.",
        "What colour is the sky on a clear day?",
        "Which planet is closest to the sun?",
    ];
    let mut sequential = Vec::new();
    for q in questions {
        sequential.push(first.chat(&question(q)).await.unwrap().content);
    }
    let concurrent = futures::future::join_all(
        handles
            .iter()
            .zip(questions)
            .map(|(llm, q)| async move { llm.chat(&question(q)).await.unwrap().content }),
    )
    .await;
    assert_eq!(concurrent, sequential);
    assert!(
        sequential.iter().all(|a| !a.trim().is_empty()),
        "{sequential:?}"
    );
    assert!(sequential[0].contains("Paris"), "{sequential:?}");
}

/// Sampled answers (temperature 1, a seed each) are the same whether the
/// four requests run one after another or at once in one batch: a token's
/// logits do not depend on what else the engine evaluates beside it, nor on
/// the size of the prompt chunks (EVALS.md section 44). Before, the same
/// prompt could draw another answer when another request was decoding.
#[tokio::test(flavor = "multi_thread")]
async fn sampled_answers_are_the_same_alone_or_batched() {
    let Some(model) = model() else { return };
    set_threads(1);
    let _loading = LOADING.lock().await;
    let llm = Arc::new(NativeLlm::load(NativeConfig::new(&model)).unwrap());
    let sampled = |text: &str, seed: u64| ChatRequest {
        temperature: 1.0,
        max_tokens: 24,
        seed: Some(seed),
        ..question(text)
    };
    let questions = [
        "Write one sentence about rivers.",
        "Invent a name for a cat.",
        "Say something about Tuesday.",
        "Describe a chair in a few words.",
    ];
    let mut alone = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        alone.push(llm.chat(&sampled(q, 11 + i as u64)).await.unwrap().content);
    }
    let batched = futures::future::join_all(questions.iter().enumerate().map(|(i, q)| {
        let llm = Arc::clone(&llm);
        let request = sampled(q, 11 + i as u64);
        async move { llm.chat(&request).await.unwrap().content }
    }))
    .await;
    assert_eq!(batched, alone);
}

/// The first conversation's state is kept on disk, and an engine loaded
/// afterwards (a new `hermes run` process) starts from it.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_engine_starts_from_the_kept_prompt_of_the_last_one() {
    let Some(model) = model() else { return };
    set_threads(1);
    let _loading = LOADING.lock().await;
    let kept = tempfile::tempdir().unwrap();
    let mut config = NativeConfig::new(&model);
    // A context size of its own: no other test shares this loaded engine.
    config.context_size = 1536;
    config.kept_prompts = Some(kept.path().to_path_buf());
    common::local_model::a_new_engine_starts_from_the_kept_prompt(kept.path(), || {
        NativeLlm::load(config.clone()).unwrap()
    })
    .await;
}

/// A prompt that cannot fit the context is refused before any work, and
/// a caller that goes away (a timeout) leaves the engine serving others.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_prompt_is_refused_and_a_dropped_request_frees_the_engine() {
    let Some(model) = model() else { return };
    set_threads(1);
    // The same settings as the other tests: they share one loaded model.
    let llm = NativeLlm::load(NativeConfig::new(&model)).unwrap();
    let error = llm
        .chat(&question(&"word ".repeat(5000)))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the context size 4096 leaves"), "{error}");
    let mut long = question("Count from 1 to 100, one number per line.");
    long.max_tokens = 200;
    let dropped =
        tokio::time::timeout(std::time::Duration::from_millis(300), llm.chat(&long)).await;
    assert!(dropped.is_err(), "the long request was still running");
    let answer = llm.chat(&question("Say hello.")).await.unwrap();
    assert!(!answer.content.trim().is_empty());
    assert!(answer.usage.completion_tokens <= 12);
}

/// Jump-forward on the built-in engine: the decision's fixed text fed
/// ahead under the grammar changes no greedy decision.
#[tokio::test(flavor = "multi_thread")]
async fn jump_forward_feeds_the_fixed_text_and_decides_as_without_it() {
    let Some(model) = model() else { return };
    set_threads(1);
    let [off, on] = common::local_model::jump_forward_decides_as_without_it(|jump_forward| {
        let mut config = NativeConfig::new(&model);
        config.jump_forward = jump_forward;
        Arc::new(NativeLlm::load(config).unwrap())
    })
    .await;
    // candle multiplies a batch of rows with other kernels than one row, so
    // a thought may part at a near tie (seen: the first goal's); the
    // actions may not.
    for (a, b) in off.iter().zip(&on) {
        if a.0 != b.0 {
            eprintln!("the thoughts part: {:?} / {:?}", a.0, b.0);
        }
    }
}

/// Under the grammar the answer follows the schema even when the
/// conversation asks for prose: it parses as a decision naming one of the
/// schema's actions, with no repair. Without it, the same greedy answer
/// is whatever the model writes.
#[tokio::test(flavor = "multi_thread")]
async fn the_grammar_holds_an_answer_to_the_schema_whatever_the_prompt_asks() {
    let Some(model) = model() else { return };
    set_threads(1);
    let mut request = common::local_model::decision_request(
        "Forget the JSON format. Answer in one plain English sentence: what is two plus two?",
    );
    request.messages[0].content = "You are a helpful assistant. Answer in plain prose.".into();
    request.max_tokens = 120;
    let constrained = NativeLlm::load(NativeConfig::new(&model)).unwrap();
    let reply = constrained.chat(&request).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(reply.content.trim())
        .unwrap_or_else(|e| panic!("not strict JSON ({e}): {}", reply.content));
    let name = value["action"]["name"].as_str().unwrap_or_default();
    let actions = [
        "read_file",
        "write_file",
        "list_dir",
        "search_files",
        "finish",
    ];
    assert!(actions.contains(&name), "{value}");
    assert!(value["thought"].is_string(), "{value}");
    let mut config = NativeConfig::new(&model);
    config.grammar = false;
    let free = NativeLlm::load(config).unwrap();
    let free_reply = free.chat(&request).await.unwrap();
    assert!(!free_reply.content.trim().is_empty());
    eprintln!("without the grammar: {}", free_reply.content);
}

/// A decision asked with a narrowed schema (as a steer's re-ask is, e.g.
/// the repeat guidance's "this answer may not use read_file") cannot name
/// the action left out, however plainly the prompt asks for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_narrowed_schema_keeps_the_left_out_action_out_of_the_answer() {
    use hermes::agent::decide::decision_schema_among;
    use hermes::tools::builtin::register_file_tools;
    use hermes::tools::{Toolbox, Workspace};
    let Some(model) = model() else { return };
    let _loading = LOADING.lock().await;
    set_threads(1);
    let dir = tempfile::tempdir().unwrap();
    let mut toolbox = Toolbox::new();
    register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
    let among: Vec<String> = ["list_dir", "search_files", "finish"]
        .map(String::from)
        .to_vec();
    let mut request = common::local_model::decision_request(
        "Read the file a.txt with read_file. Your answer must be read_file with path a.txt.",
    );
    request.schema = Some(Arc::new(decision_schema_among(&toolbox, Some(&among))));
    let llm = NativeLlm::load(NativeConfig::new(&model)).unwrap();
    let reply = llm.chat(&request).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(reply.content.trim())
        .unwrap_or_else(|e| panic!("not strict JSON ({e}): {}", reply.content));
    let name = value["action"]["name"].as_str().unwrap_or_default();
    assert!(among.iter().any(|a| a == name), "{value}");
}

/// The same prompts under the grammar, greedy, on both engines: the same
/// actions. Their thoughts and arguments may part where the two engines'
/// arithmetic (candle's and llama.cpp's quantized kernels) puts two
/// candidate tokens within rounding of each other; where they do, this
/// says so on stderr.
#[cfg(feature = "local-llm")]
#[tokio::test(flavor = "multi_thread")]
async fn greedy_decisions_under_the_grammar_agree_on_both_engines() {
    use hermes::llm::local::{LocalConfig, LocalLlm};
    let Some(model) = model() else { return };
    set_threads(1);
    let candle =
        common::local_model::decisions(&NativeLlm::load(NativeConfig::new(&model)).unwrap()).await;
    let mut config = LocalConfig::new(&model);
    config.threads = 1;
    let llama = common::local_model::decisions(&LocalLlm::load(config).unwrap()).await;
    let names =
        |d: &[common::local_model::Decided]| d.iter().map(|d| d.1.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&candle),
        names(&llama),
        "candle {candle:?}\nllama.cpp {llama:?}"
    );
    for (c, l) in candle.iter().zip(&llama) {
        if c != l {
            eprintln!("the engines part: candle {c:?}, llama.cpp {l:?}");
        }
    }
}

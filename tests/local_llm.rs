//! The in-process model (`--features local-llm`) on a real GGUF model:
//! Qwen2.5-Coder-1.5B-Instruct from `scripts/fetch-model.sh 1.5b`, one
//! thread. Skipped (with a message) when the model is absent, unless
//! HERMES_REQUIRE_LOCAL_MODEL=1 (CI sets it), which makes absence a failure.

mod common;

use std::time::Duration;

use common::local_model::{
    hermes, journal, last_json, model, prefix_reuse_keeps_decisions, workspace, TASK,
};

#[tokio::test(flavor = "multi_thread")]
async fn grammar_constrained_run_finishes_a_file_task_with_no_server() {
    let Some(model) = model() else { return };
    let ws = workspace();
    let journal_path = ws.path().join("run.jsonl");
    let ws_arg = ws.path().to_str().unwrap();
    let run = hermes(
        &[
            "run",
            TASK,
            "--workspace",
            ws_arg,
            "--tools",
            "read_file,write_file,list_dir",
            "--temperature",
            "0",
            "--journal",
            journal_path.to_str().unwrap(),
            "--json",
        ],
        &model,
    )
    .await;
    let outcome = last_json(&run.stdout);
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    assert_eq!(outcome["status"], "finished");
    assert!(
        ws.path().join("summary.txt").is_file(),
        "summary.txt was written"
    );
    // Grammar-constrained: every round's reply was a valid decision, read without repair.
    for round in journal(&journal_path) {
        assert_ne!(round["action"], "(unparsed)", "{round}");
        assert_eq!(round["regenerated"], false, "{round}");
    }
    assert!(outcome["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    eprintln!(
        "local file task: {} rounds in {:?}",
        outcome["rounds"], run.took
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn free_output_without_grammar_finishes_or_stops_cleanly() {
    let Some(model) = model() else { return };
    let ws = workspace();
    let run = hermes(
        &[
            "run",
            TASK,
            "--workspace",
            ws.path().to_str().unwrap(),
            "--tools",
            "read_file,write_file,list_dir",
            "--no-grammar",
            "--max-rounds",
            "4",
            "--json",
        ],
        &model,
    )
    .await;
    let outcome = last_json(&run.stdout);
    assert!(
        [0, 3].contains(&run.code),
        "finished or stopped by a guard, never a crash: {}",
        run.stderr
    );
    assert!(["finished", "max_rounds", "repetition", "timeout"]
        .contains(&outcome["status"].as_str().unwrap()));
    assert!(!outcome["progress"].as_str().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wall_clock_stops_generation_mid_way() {
    let Some(model) = model() else { return };
    let ws = workspace();
    let run = hermes(
        &[
            "run",
            "Write a 3000-word essay on the history of computing, in the thought field, before choosing any action.",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--no-grammar",
            "--timeout",
            "5",
            "--json",
        ],
        &model,
    )
    .await;
    let outcome = last_json(&run.stdout);
    assert_eq!(outcome["status"], "timeout", "{}", run.stderr);
    assert_eq!(run.code, 3, "exit code (minus: a signal): {}", run.stderr);
    // Model loading comes before the clock starts; the run itself ends
    // within about a second of its 5 s deadline (the report says how long it ran).
    let progress = outcome["progress"].as_str().unwrap();
    let status = progress
        .lines()
        .find(|l| l.starts_with("Status:"))
        .unwrap_or_default();
    let seconds: f64 = status
        .rsplit(" in ")
        .next()
        .and_then(|s| s.trim_end_matches(['s', '.']).parse().ok())
        .unwrap_or(f64::MAX);
    assert!(seconds < 6.5, "the run took {seconds}s: {progress}");
    assert!(run.took < Duration::from_secs(30), "took {:?}", run.took);
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_smoke_test_with_two_roles() {
    let Some(model) = model() else { return };
    let ws = workspace();
    let roles = tempfile::tempdir().unwrap();
    std::fs::write(
        roles.path().join("reader.toml"),
        "name = \"reader\"\ndescription = \"Reads files and reports what they say.\"\nsystem_prompt = \"You read files.\"\ntools = [\"read_file\", \"list_dir\"]\n[limits]\nmax_rounds = 4\n",
    )
    .unwrap();
    std::fs::write(
        roles.path().join("writer.toml"),
        "name = \"writer\"\ndescription = \"Writes files from given facts.\"\nsystem_prompt = \"You write files.\"\ntools = [\"write_file\"]\n[limits]\nmax_rounds = 4\n",
    )
    .unwrap();
    let run = hermes(
        &[
            "plan",
            TASK,
            "--workspace",
            ws.path().to_str().unwrap(),
            "--roles",
            roles.path().to_str().unwrap(),
            "--concurrency",
            "1",
            "--max-replans",
            "1",
            "--timeout",
            "600",
            // The planner's grammar is what this tests: no one-executor route.
            "--no-steer",
            "one_executor",
            "--json",
        ],
        &model,
    )
    .await;
    let report = last_json(&run.stdout);
    assert!([0, 3].contains(&run.code), "{}", run.stderr);
    let subtasks = report["subtasks"].as_array().unwrap();
    assert!(!subtasks.is_empty());
    // The plan was grammar-constrained: every role is a registered one.
    for s in subtasks {
        assert!(
            ["reader", "writer"].contains(&s["role"].as_str().unwrap()),
            "{s}"
        );
    }
    eprintln!(
        "local plan: {} with {} subtasks in {:?}",
        report["status"],
        subtasks.len(),
        run.took
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn later_rounds_reuse_the_cached_prefix_and_decide_exactly_as_without_it() {
    let Some(model) = model() else { return };
    prefix_reuse_keeps_decisions(&model, &[], 3, 3).await;
}

/// Two conversations in turn keep their own sequences: after B, A's next
/// request still continues A's cached prompt instead of re-reading it (one
/// context holds several conversations; nothing is copied in or out).
#[tokio::test(flavor = "multi_thread")]
async fn interleaved_conversations_each_keep_their_cache() {
    use hermes::llm::local::{LocalConfig, LocalLlm};
    use hermes::llm::{ChatMessage, ChatRequest, Llm};
    let Some(model) = model() else { return };
    let mut config = LocalConfig::new(model);
    config.threads = 1;
    let llm = LocalLlm::load(config).expect("load the model");
    let ask = |system: &str, user: &str| ChatRequest {
        messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
        temperature: 0.0,
        max_tokens: 2,
        json: false,
        schema: None,
        seed: None,
    };
    let a_system = "You answer questions about the solar system. Mercury is closest to the Sun, then Venus, Earth, Mars, Jupiter, Saturn, Uranus and Neptune.";
    let b_system = "You translate English into French. Keep proper names, numbers and punctuation exactly as they are, and answer with the translation only.";
    let a = llm
        .chat(&ask(a_system, "Which planet is the fourth from the Sun?"))
        .await
        .expect("A");
    let b = llm
        .chat(&ask(b_system, "Good morning, my friend."))
        .await
        .expect("B");
    assert!(
        b.usage.cached_tokens < 32,
        "B shares only the template's header with A: {:?}",
        b.usage
    );
    let a_again = llm
        .chat(&ask(
            a_system,
            "Which planet is the fourth from the Sun? Answer in one word.",
        ))
        .await
        .expect("A again");
    let a_system_tokens = a.usage.prompt_tokens / 2;
    assert!(
        a_again.usage.cached_tokens >= a_system_tokens,
        "A's second request reuses its first prompt's cache although B came between: {:?} after {:?}",
        a_again.usage,
        a.usage
    );
}

/// Four requests at once are evaluated together (one batch per step) and
/// answer what they answer one at a time (greedy decoding).
#[tokio::test(flavor = "multi_thread")]
async fn four_requests_at_once_answer_as_four_in_turn() {
    use hermes::llm::local::{LocalConfig, LocalLlm};
    use hermes::llm::{ChatMessage, ChatRequest, Llm};
    let Some(model) = model() else { return };
    let mut config = LocalConfig::new(model);
    config.threads = 1;
    let llm = std::sync::Arc::new(LocalLlm::load(config).expect("load the model"));
    let questions = [
        "Name the largest planet of the solar system.",
        "What is the capital city of France?",
        "How many legs does a spider have?",
        "Which gas do plants take in from the air?",
    ];
    let ask = |q: &str| ChatRequest {
        messages: vec![ChatMessage::user(q)],
        temperature: 0.0,
        max_tokens: 12,
        json: false,
        schema: None,
        seed: None,
    };
    let mut in_turn = Vec::new();
    for q in questions {
        in_turn.push(llm.chat(&ask(q)).await.expect("answer").content);
    }
    let at_once: Vec<String> = futures::future::join_all(questions.iter().map(|q| {
        let llm = std::sync::Arc::clone(&llm);
        let request = ask(q);
        async move { llm.chat(&request).await.expect("answer").content }
    }))
    .await;
    assert!(in_turn.iter().all(|a| !a.trim().is_empty()), "{in_turn:?}");
    assert_eq!(at_once, in_turn);
}

/// The first conversation's KV cache is kept on disk, and an engine loaded
/// afterwards (a new `hermes run` process) starts from it.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_engine_starts_from_the_kept_prompt_of_the_last_one() {
    use hermes::llm::local::{LocalConfig, LocalLlm};
    let Some(model) = model() else { return };
    let kept = tempfile::tempdir().unwrap();
    let mut config = LocalConfig::new(model);
    config.threads = 1;
    config.kept_prompts = Some(kept.path().to_path_buf());
    common::local_model::a_new_engine_starts_from_the_kept_prompt(kept.path(), || {
        LocalLlm::load(config.clone()).expect("load the model")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn jump_forward_feeds_the_fixed_text_and_decides_as_without_it() {
    use hermes::llm::local::{LocalConfig, LocalLlm};
    let Some(model) = model() else { return };
    let [off, on] = common::local_model::jump_forward_decides_as_without_it(|jump_forward| {
        let mut config = LocalConfig::new(&model);
        config.threads = 1;
        config.jump_forward = jump_forward;
        std::sync::Arc::new(LocalLlm::load(config).expect("load the model"))
    })
    .await;
    // llama.cpp reads a batch with the arithmetic of single tokens: even
    // the thoughts are the same.
    assert_eq!(on, off);
}

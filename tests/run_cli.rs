//! `hermes run` end to end: the real binary against a scripted
//! OpenAI-compatible server on loopback.

mod common;

use std::time::{Duration, Instant};

use common::{decision, finish, hermes, text, Reply, ScriptedServer};
use serde_json::json;

/// `hermes run TASK --workspace WS EXTRA…` against the scripted `server`.
async fn run_in(
    task: &str,
    ws: &std::path::Path,
    server: &ScriptedServer,
    extra: &[&str],
) -> common::Run {
    let mut args = vec!["run", task, "--workspace", ws.to_str().unwrap()];
    args.extend_from_slice(extra);
    hermes(&args, &server.base_url).await
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "Hermes is a runtime for agents.\nIt finishes work.\n",
    )
    .unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn finishes_a_file_task_and_reports_json_outcome() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("list_dir", json!({"path": "."})),
        decision("read_file", json!({"path": "notes.txt"})),
        decision(
            "write_file",
            json!({"path": "out/summary.txt", "content": "Hermes runs agents."}),
        ),
        finish("Wrote out/summary.txt"),
    ])
    .await;
    let run = run_in(
        "Summarise notes.txt into out/summary.txt",
        ws.path(),
        &server,
        &["--json"],
    )
    .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "finished");
    assert_eq!(outcome["result"], "Wrote out/summary.txt");
    assert_eq!(outcome["rounds"], 4);
    assert_eq!(
        outcome["usage"],
        json!({"prompt_tokens": 40, "completion_tokens": 20, "cached_tokens": 0})
    );
    assert!(outcome["progress"].as_str().unwrap().contains("read_file"));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out/summary.txt")).unwrap(),
        "Hermes runs agents."
    );
    // One progress line per round on stderr.
    assert!(run.stderr.contains("[round  1] list_dir"), "{}", run.stderr);
    assert!(
        run.stderr.contains("[round  3] write_file"),
        "{}",
        run.stderr
    );
    // The file content reached the model in round 3's prompt.
    assert!(server.prompt_text(2).contains("It finishes work."));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_prompt_lists_the_workspace_unless_turned_off() {
    let ws = workspace();
    std::fs::create_dir(ws.path().join("data")).unwrap();
    std::fs::write(ws.path().join("data/users.csv"), "a,b\n").unwrap();
    let server = ScriptedServer::start(vec![finish("seen")]).await;
    let run = run_in("look", ws.path(), &server, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let prompt = server.prompt_text(0);
    assert!(
        prompt.contains("Goal: look\n\nFiles in the workspace before round 1 (listed for you; read a file to see what it holds):\n- data/\n- data/users.csv (4 bytes)\n- notes.txt (50 bytes)\n\nRound 1 of"),
        "{prompt}"
    );
    let server = ScriptedServer::start(vec![finish("seen")]).await;
    let run = run_in("look", ws.path(), &server, &["--no-workspace-listing"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!server.prompt_text(0).contains("Files in the workspace"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finish_while_the_file_to_fix_is_unchanged_is_answered_once_and_the_next_answer_writes() {
    let ws = workspace();
    std::fs::write(ws.path().join("calc.py"), "print(4)\n").unwrap();
    let goal = "Running calc.py prints 4. Fix it so that it prints 5.";
    let server = ScriptedServer::start(vec![
        finish("5"),
        decision(
            "write_file",
            json!({"path": "calc.py", "content": "print(5)\n"}),
        ),
        finish("calc.py prints 5 now"),
    ])
    .await;
    let logs = tempfile::tempdir().unwrap();
    let journal = logs.path().join("journal.jsonl");
    let run = run_in(
        goal,
        ws.path(),
        &server,
        &["--json", "--journal", journal.to_str().unwrap()],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["status"], "finished");
    assert_eq!(run.outcome()["rounds"], 3);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("calc.py")).unwrap(),
        "print(5)\n"
    );
    let lines = common::journal_lines(&journal);
    assert_eq!(lines[0]["steered_by"], "edit_check");
    assert_eq!(lines[2]["prompted_by"], "edit_check");
    let told = common::observation_of(&server.prompt_text(1), 1)
        .unwrap()
        .to_string();
    assert!(
        told.contains("not finished yet: the goal asks you to change `calc.py`, and it is still exactly as it was before your work"),
        "{told}"
    );
    // The answer after the note may only write a file or finish.
    let schema = server.requests()[1]["response_format"]["json_schema"]["schema"].to_string();
    assert!(
        schema.contains("write_file") && schema.contains("\"finish\""),
        "{schema}"
    );
    assert!(!schema.contains("read_file"), "{schema}");
    // Once the file changed, the request says so and spells out the finish.
    assert!(
        server
            .prompt_text(2)
            .contains("The goal's file to change (`calc.py`) is changed now."),
        "{}",
        server.prompt_text(2)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finish_before_the_goal_s_file_exists_is_answered_once_with_a_note() {
    let ws = workspace();
    let goal = "Write the word hello to answer.txt";
    // Told once, the model writes the file, then finishes.
    let server = ScriptedServer::start(vec![
        finish("hello"),
        decision(
            "write_file",
            json!({"path": "answer.txt", "content": "hello"}),
        ),
        finish("hello"),
    ])
    .await;
    let logs = tempfile::tempdir().unwrap();
    let journal = logs.path().join("journal.jsonl");
    let journal_arg = journal.to_str().unwrap();
    let run = run_in(
        goal,
        ws.path(),
        &server,
        &["--json", "--journal", journal_arg],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "finished");
    assert_eq!(outcome["rounds"], 3);
    // The journal names the steer behind each round: the first finish
    // held back by the finish check, the write asked for by the write
    // offer's closing sentence, the last finish by the finish check's.
    let lines = common::journal_lines(&journal);
    assert_eq!(lines[0]["steered_by"], "finish_check");
    assert!(lines[0].get("prompted_by").is_none(), "{}", lines[0]);
    assert_eq!(lines[1]["prompted_by"], "write_offer");
    assert_eq!(lines[2]["prompted_by"], "finish_check");
    let told = common::observation_of(&server.prompt_text(1), 1)
        .unwrap()
        .to_string();
    assert!(
        told.contains(
            "not finished yet: the goal names `answer.txt`, which is not in the workspace."
        ),
        "{told}"
    );
    // The request after it spells out the write of the refused answer.
    assert!(
        server.prompt_text(1).ends_with("Round 2 of 20. Round 1 (finish) was not accepted, and `answer.txt` is not written yet. If your result is what `answer.txt` should hold, reply {\"thought\":\"answer.txt must hold the answer\",\"action\":{\"name\":\"write_file\",\"args\":{\"path\":\"answer.txt\",\"content\":\"hello\"}}} Reply with one JSON object."),
        "{}",
        server.prompt_text(1)
    );
    // Once the file is written, the request says so.
    assert!(
        server.prompt_text(2).contains("Round 2 (write_file) succeeded. The goal's file (`answer.txt`) is written now. If it holds what the goal asks for, the goal is reached: reply {\"thought\": \"answer.txt written\", \"action\": {\"name\": \"finish\""),
        "{}",
        server.prompt_text(2)
    );
    // A second finish ends the run, but not as `finished`: the goal's file
    // is missing, so it is `incomplete` (exit 3), the model's result kept.
    // A refused answer that is a sentence, not a value, is not offered.
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        finish("I could not find out what to write there."),
        finish("cannot, really"),
    ])
    .await;
    let run = run_in(goal, ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("incomplete"), "{}", run.stderr);
    let outcome = run.outcome();
    assert!(server
        .prompt_text(1)
        .ends_with("Round 2 of 20. Reply with one JSON object."));
    assert_eq!(outcome["status"], "incomplete");
    assert_eq!(outcome["missing"], json!(["answer.txt"]));
    assert_eq!(outcome["result"], "cannot, really");
    assert_eq!(outcome["rounds"], 2);
    assert!(
        outcome["progress"]
            .as_str()
            .unwrap()
            .contains("Status: incomplete after 2 rounds"),
        "{outcome}"
    );
    // `--no-write-offer`: a value is not offered either.
    let server = ScriptedServer::start(vec![finish("hello"), finish("hello")]).await;
    run_in(goal, ws.path(), &server, &["--json", "--no-write-offer"]).await;
    assert!(server
        .prompt_text(1)
        .ends_with("Round 2 of 20. Reply with one JSON object."));
    // Turned off (the old flag or `--no-steer`), the first finish ends it,
    // still `incomplete`: the status does not depend on the steers.
    for off in [&["--no-finish-check"][..], &["--no-steer", "finish_check"]] {
        let server = ScriptedServer::start(vec![finish("hello")]).await;
        let mut args = vec!["--json"];
        args.extend_from_slice(off);
        let outcome = run_in(goal, ws.path(), &server, &args).await.outcome();
        assert_eq!(outcome["rounds"], 1);
        assert_eq!(outcome["status"], "incomplete");
    }
    // An unknown steer is a usage error that names the known ones.
    let server = ScriptedServer::start(vec![finish("hello")]).await;
    let run = run_in(goal, ws.path(), &server, &["--steer", "finsh_check=off"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("finish_check"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_before_the_goal_s_input_was_read_is_answered_once() {
    let goal = "Count the lines of notes.txt and write the number to answer.txt";
    let guess = || decision("write_file", json!({"path": "answer.txt", "content": "7"}));
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        guess(),
        decision("read_file", json!({"path": "notes.txt"})),
        decision("write_file", json!({"path": "answer.txt", "content": "1"})),
        finish("1"),
    ])
    .await;
    // The input preview shows notes.txt before round 1, and a preview is a
    // read: the check (off by default) is measured without it.
    let run = run_in(
        goal,
        ws.path(),
        &server,
        &[
            "--json",
            "--steer",
            "input_preview=off",
            "--steer",
            "read_check=on",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "finished");
    assert_eq!(outcome["rounds"], 4);
    let told = common::observation_of(&server.prompt_text(1), 1)
        .unwrap()
        .to_string();
    assert!(
        told.contains("not written yet: the goal's answer comes from `notes.txt`, which no call of this run has read"),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "1"
    );
    // Off (the default), the guess is written.
    let ws = workspace();
    let server = ScriptedServer::start(vec![guess(), finish("7")]).await;
    let outcome = run_in(
        goal,
        ws.path(),
        &server,
        &["--json", "--steer", "input_preview=off"],
    )
    .await
    .outcome();
    assert_eq!(outcome["rounds"], 2);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "7"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_goal_s_small_files_are_shown_before_round_1_and_count_as_read() {
    let goal = "Count the lines of notes.txt and write the number to answer.txt";
    let ws = workspace();
    let lines = std::fs::read_to_string(ws.path().join("notes.txt"))
        .unwrap()
        .lines()
        .count();
    let server = ScriptedServer::start(vec![
        decision(
            "write_file",
            json!({"path": "answer.txt", "content": lines.to_string()}),
        ),
        finish(&lines.to_string()),
    ])
    .await;
    let run = run_in(goal, ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The file's whole text, after the listing, in the first prompt.
    let notes = std::fs::read_to_string(ws.path().join("notes.txt")).unwrap();
    let first = server.prompt_text(0);
    let noun = if lines == 1 { "line" } else { "lines" };
    assert!(
        first.contains(&format!(
            "What these files held before round 1 (read for you; no need to read them again unless they change):\n--- notes.txt ({lines} {noun}) ---\n{}\n--- end of notes.txt ---",
            notes.trim_end_matches('\n')
        )),
        "{first}"
    );
    // Shown is read: the write in round 1 is carried out, not refused.
    let outcome = run.outcome();
    assert_eq!(outcome["rounds"], 2, "{outcome}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        lines.to_string()
    );
    // Switched off, the first prompt shows only the listing.
    let server = ScriptedServer::start(vec![finish("x")]).await;
    run_in(goal, ws.path(), &server, &["--no-steer", "input_preview"]).await;
    assert!(!server.prompt_text(0).contains("--- notes.txt"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_labelled_value_where_the_goal_asks_for_just_the_value_is_answered_once() {
    let goal = "notes.txt holds the code. Write just the code to answer.txt";
    let labelled = || {
        decision(
            "write_file",
            json!({"path": "answer.txt", "content": "code: HX-7"}),
        )
    };
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "notes.txt"})),
        labelled(),
        decision(
            "write_file",
            json!({"path": "answer.txt", "content": "HX-7"}),
        ),
        finish("HX-7"),
    ])
    .await;
    let run = run_in(
        goal,
        ws.path(),
        &server,
        &["--json", "--steer", "label_check=on"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["rounds"], 4);
    let told = common::observation_of(&server.prompt_text(2), 2)
        .unwrap()
        .to_string();
    assert!(
        told.contains(r#"`code: HX-7` carries the label `code`. If `HX-7` is the value, reply {\"thought\":\"answer.txt must hold the value alone\",\"action\":{\"name\":\"write_file\",\"args\":{\"path\":\"answer.txt\",\"content\":\"HX-7\"}}}"#),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "HX-7"
    );
    // Off (the default, or `--no-label-check`), the labelled value is written.
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "notes.txt"})),
        labelled(),
        finish("HX-7"),
    ])
    .await;
    let outcome = run_in(goal, ws.path(), &server, &["--json", "--no-label-check"])
        .await
        .outcome();
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("answer.txt")).unwrap(),
        "code: HX-7"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_output_prints_the_result_on_stdout() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![finish("forty-two")]).await;
    let run = run_in("answer", ws.path(), &server, &[]).await;
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout.trim(), "forty-two");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_rounds_guard_stops_with_exit_3_and_a_progress_report() {
    let ws = workspace();
    let replies = (0..5)
        .map(|i| decision("list_dir", json!({"path": format!("d{i}")})))
        .collect();
    let server = ScriptedServer::start(replies).await;
    let run = run_in(
        "explore",
        ws.path(),
        &server,
        &["--max-rounds", "3", "--json"],
    )
    .await;
    assert_eq!(run.code, 3);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "max_rounds");
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(outcome["result"], serde_json::Value::Null);
    let progress = outcome["progress"].as_str().unwrap();
    assert!(
        progress.contains("max_rounds guard after 3 rounds"),
        "{progress}"
    );
    assert!(
        progress.contains("Last observation (round 3)"),
        "{progress}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn repetition_guard_stops_three_identical_calls() {
    let ws = workspace();
    let same = || decision("read_file", json!({"path": "notes.txt"}));
    let server = ScriptedServer::start(vec![
        same(),
        decision("list_dir", json!({})),
        same(),
        same(),
        finish("never"),
    ])
    .await;
    // The guard alone: repeat guidance (on by default) would re-ask.
    let run = run_in(
        "loop",
        ws.path(),
        &server,
        &["--json", "--no-repeat-guidance"],
    )
    .await;
    assert_eq!(run.code, 3);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "repetition");
    assert_eq!(outcome["rounds"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repeated_call_is_asked_again_then_refused_and_still_counted_by_the_guard() {
    let ws = workspace();
    let same = || decision("read_file", json!({"path": "notes.txt"}));
    let server = ScriptedServer::start(vec![
        same(),
        // Round 2: a repeat; asked again, the model moves on.
        same(),
        decision("list_dir", json!({})),
        // Round 3: a repeat, asked again, repeated again: refused.
        same(),
        same(),
        // Round 4: a repeat, asked again, repeated: refused, and the third
        // read_file in five rounds ends the run.
        same(),
        same(),
        finish("never"),
    ])
    .await;
    let journal = ws.path().join("journal.jsonl");
    let run = run_in(
        "loop",
        ws.path(),
        &server,
        &[
            "--json",
            "--repeat-guidance",
            "--journal",
            journal.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "repetition");
    assert_eq!(outcome["rounds"], 4);
    assert_eq!(server.requests().len(), 7);
    // The re-ask names the earlier round and says it succeeded.
    let reask = server.prompt_text(2);
    assert!(
        reask.contains("exactly the call of round 1") && reask.contains("already succeeded"),
        "{reask}"
    );
    let lines = common::journal_lines(&journal);
    assert_eq!(lines[1]["action"], "list_dir");
    assert_eq!(lines[1]["reasked"], true);
    assert!(lines[1].get("repeat_of").is_none());
    assert_eq!(lines[2]["repeat_of"], 1);
    assert_eq!(lines[2]["status"], "error");
    assert!(lines[2]["observation"]
        .as_str()
        .unwrap()
        .contains("not run: this is exactly the call of round 1"));
    assert_eq!(lines[3]["repeat_of"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn unreadable_reply_is_regenerated_once_then_becomes_a_parse_error_observation() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        text("I think I should look around first."),
        text("Still no JSON, sorry."),
        finish("done after the parse error"),
    ])
    .await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["rounds"], 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The regeneration tells the model what was wrong.
    assert!(server
        .prompt_text(1)
        .contains("could not be read as a decision"));
    // The next round sees the parse error quoting the bad output and the shape.
    let round2 = server.prompt_text(2);
    assert!(
        round2.contains("could not read your reply as a decision"),
        "{round2}"
    );
    assert!(round2.contains("Still no JSON, sorry."));
    assert!(round2.contains(r#""action": {"name": "<tool name or finish>""#));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_never_writes_json_is_stopped_by_repetition_early() {
    let ws = workspace();
    let server = ScriptedServer::with_responder(|_| text("Sure, I can help with that!")).await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 3);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "repetition");
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(server.requests().len(), 6, "one regeneration per round");
}

#[tokio::test(flavor = "multi_thread")]
async fn regeneration_that_works_costs_no_round() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![text("hmm"), finish("ok")]).await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0);
    let outcome = run.outcome();
    assert_eq!(outcome["rounds"], 1);
    assert_eq!(
        outcome["usage"]["completion_tokens"], 10,
        "both calls are counted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wall_clock_timeout_stops_a_slow_model() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("list_dir", json!({})),
        Reply::Delay(Duration::from_secs(30), Box::new(finish("too late"))),
    ])
    .await;
    let started = Instant::now();
    let run = run_in("task", ws.path(), &server, &["--timeout", "2", "--json"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "timeout");
    assert_eq!(outcome["rounds"], 1);
    assert!(outcome["progress"].as_str().unwrap().contains("list_dir"));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "generous bound: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn transient_503s_are_retried() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        Reply::Status(503, "overloaded".into()),
        Reply::Status(503, "overloaded".into()),
        finish("made it"),
    ])
    .await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["result"], "made it");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn persistent_503s_end_in_an_error_after_three_attempts() {
    let ws = workspace();
    let server = ScriptedServer::with_responder(|_| Reply::Status(503, "down".into())).await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 1);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "error");
    assert!(outcome["error"].as_str().unwrap().contains("HTTP 503"));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_server_names_the_url_and_the_variables() {
    let ws = workspace();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let run = hermes(
        &["run", "task", "--workspace", ws.path().to_str().unwrap()],
        &url,
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(&format!("{url}/chat/completions")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("HERMES_BASE_URL"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_and_bad_args_reach_the_model_as_observations() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("fly", json!({})),
        decision("read_file", json!({})),
        decision("read_file", json!({"pth": "notes.txt"})),
        finish("gave up"),
    ])
    .await;
    let run = run_in("task", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0);
    let unknown = server.prompt_text(1);
    assert!(
        unknown.contains("unknown tool `fly`; available tools: http_fetch, list_dir, read_file, "),
        "{unknown}"
    );
    assert!(unknown.contains("write_file, finish"), "{unknown}");
    assert!(server
        .prompt_text(2)
        .contains("missing required parameter `path`"));
    assert!(server
        .prompt_text(3)
        .contains("unknown parameter `pth`; did you mean `path`?"));
}

#[tokio::test(flavor = "multi_thread")]
async fn path_escapes_are_refused_and_nothing_outside_is_touched() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(parent.path().join("secret.txt"), "top secret").unwrap();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "../secret.txt"})),
        decision(
            "write_file",
            json!({"path": "../escaped.txt", "content": "x"}),
        ),
        decision("read_file", json!({"path": "/etc/passwd"})),
        finish("refused"),
    ])
    .await;
    let run = run_in("task", &ws, &server, &["--json"]).await;
    assert_eq!(run.code, 0);
    for i in 1..=3 {
        let prompt = server.prompt_text(i);
        assert!(
            prompt.contains("is outside the workspace"),
            "round {i}: {prompt}"
        );
    }
    assert!(!server.prompt_text(1).contains("top secret"));
    assert!(!parent.path().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn long_observations_are_truncated_with_a_note() {
    let ws = workspace();
    let big: String = (0..60000).map(|i| format!("row {i}\n")).collect();
    std::fs::write(ws.path().join("big.txt"), big).unwrap();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "big.txt"})),
        finish("ok"),
    ])
    .await;
    let run = run_in("task", ws.path(), &server, &[]).await;
    assert_eq!(run.code, 0);
    let prompt = server.prompt_text(1);
    assert!(
        prompt.contains("[truncated: showing first 50 of"),
        "{}",
        &prompt[prompt.len().saturating_sub(500)..]
    );
    assert!(!prompt.contains("row 51\\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn thirty_round_task_keeps_the_prompt_bounded() {
    let ws = workspace();
    for i in 0..29 {
        std::fs::write(
            ws.path().join(format!("f{i}.txt")),
            format!("{i} ").repeat(400),
        )
        .unwrap();
    }
    let mut replies: Vec<Reply> = (0..29)
        .map(|i| decision("read_file", json!({"path": format!("f{i}.txt")})))
        .collect();
    replies.push(finish("read them all"));
    let server = ScriptedServer::start(replies).await;
    let run = run_in(
        "read every file",
        ws.path(),
        &server,
        &["--max-rounds", "30", "--json"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["rounds"], 30);
    let requests = server.requests();
    let sizes: Vec<usize> = server.bodies().iter().map(String::len).collect();
    // From round 8 on, the conversation stays bounded: goal + summaries,
    // then 4 to 6 whole rounds (call and observation), older rounds moving
    // into the summary three at a time.
    for request in &requests[7..] {
        let whole = common::rounds_shown(request);
        assert!((4..=6).contains(&whole), "{whole} rounds shown whole");
    }
    // Older rounds cost one short line each, so growth from round 10 to 30 stays small.
    assert!(
        sizes[29] < sizes[9] + 20 * 200,
        "round 10: {} bytes, round 30: {} bytes",
        sizes[9],
        sizes[29]
    );
    assert!(sizes[29] < 32_000, "{} bytes", sizes[29]);
    // At most six summary lines: the oldest rounds are counted in one line.
    let last = server.prompt_text(29);
    assert!(last.contains("- rounds 1–18: read_file ×18\n"), "{last}");
    assert!(last.contains("- round 19: read_file {\"path\":\"f18.txt\"} → ok"));
    assert!(!last.contains("- round 1: "));
}

#[tokio::test(flavor = "multi_thread")]
async fn non_ascii_goal_and_files_reach_the_model_unescaped() {
    let ws = workspace();
    std::fs::write(ws.path().join("笔记.txt"), "你好，世界").unwrap();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "笔记.txt"})),
        finish("完成"),
    ])
    .await;
    let run = run_in("总结笔记", ws.path(), &server, &["--json"]).await;
    assert_eq!(run.code, 0);
    assert_eq!(run.outcome()["result"], "完成");
    let bodies = server.bodies();
    assert!(bodies[0].contains("Goal: 总结笔记"));
    assert!(bodies[1].contains("你好，世界"));
    assert!(!bodies[1].contains("\\u4f60"));
}

#[tokio::test(flavor = "multi_thread")]
async fn journal_file_gets_one_line_per_round() {
    let ws = workspace();
    let journal = ws.path().join("run.jsonl");
    let server = ScriptedServer::start(vec![decision("list_dir", json!({})), finish("ok")]).await;
    let run = run_in(
        "task",
        ws.path(),
        &server,
        &["--journal", journal.to_str().unwrap()],
    )
    .await;
    assert_eq!(run.code, 0);
    let lines = common::journal_lines(&journal);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["action"], "list_dir");
    assert_eq!(lines[0]["status"], "ok");
    assert_eq!(lines[0]["tokens"]["prompt_tokens"], 10);
    assert!(lines[0]["args_hash"].as_str().unwrap().len() == 16);
    assert_eq!(lines[1]["action"], "finish");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_workspace_is_a_clear_error() {
    let server = ScriptedServer::start(vec![]).await;
    let run = hermes(
        &[
            "run",
            "task",
            "--workspace",
            "/definitely/not/here",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 1);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "error");
    assert!(outcome["error"]
        .as_str()
        .unwrap()
        .contains("/definitely/not/here"));
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_errors_exit_1() {
    let run = hermes(&["run"], "http://127.0.0.1:9/v1").await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("TASK"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fabricated_citation_is_flagged_journalled_and_warned_about_without_blocking() {
    let ws = workspace();
    let said = |thought: &str, name: &str, args: serde_json::Value| {
        text(&json!({"thought": thought, "action": {"name": name, "args": args}}).to_string())
    };
    let server = ScriptedServer::start(vec![
        // Round 1 cites a round that has not happened: flagged, still run.
        said(
            "According to the result of round 4, notes.txt is the file.",
            "read_file",
            json!({"path": "notes.txt"}),
        ),
        // Round 2 cites round 1, which succeeded: not flagged.
        said(
            "As shown above in round 1, it finishes work.",
            "finish",
            json!({"result": "It finishes work."}),
        ),
    ])
    .await;
    let journal = ws.path().join("journal.jsonl");
    let run = run_in(
        "what does Hermes do?",
        ws.path(),
        &server,
        &[
            "--json",
            "--evidence-warnings",
            "--journal",
            journal.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["status"], "finished");
    assert_eq!(outcome["evidence_flags"], 1);
    let lines = common::journal_lines(&journal);
    let flag = lines[0]["evidence"].as_str().unwrap();
    assert!(flag.starts_with("flagged: cites round 4"), "{flag}");
    assert_eq!(lines[0]["status"], "ok", "a flag never blocks the action");
    assert!(lines[1].get("evidence").is_none());
    // The next prompt warns and asks for a citation; the system prompt
    // asks for citations from the start.
    let second = server.prompt_text(1);
    assert!(
        second.contains("Evidence check: your thought in round 1 cites round 4"),
        "{second}"
    );
    assert!(server.prompt_text(0).contains("cite its round"));

    // With warnings off (the default) the flag is still journalled, but
    // not shown.
    let server = ScriptedServer::start(vec![
        said(
            "如上所示，答案是 42。",
            "read_file",
            json!({"path": "notes.txt"}),
        ),
        finish("done"),
    ])
    .await;
    // (Without the input preview: files shown before round 1 are what an
    // uncited claim may rest on, so it would not be flagged.)
    let run = run_in(
        "task",
        ws.path(),
        &server,
        &["--json", "--no-steer", "input_preview"],
    )
    .await;
    assert_eq!(run.outcome()["evidence_flags"], 1);
    assert!(!server.prompt_text(1).contains("Evidence check"));
    assert!(!server.prompt_text(0).contains("cite its round"));
}

#[tokio::test(flavor = "multi_thread")]
async fn reflection_runs_on_its_cadence_and_after_two_failures_without_using_a_round() {
    let ws = workspace();
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "notes.txt"})),
        decision("list_dir", json!({})),
        // After round 2 (every 2 rounds): the review, plain text.
        text("Done: read notes.txt and listed the folder. Missing: nothing."),
        finish("It finishes work."),
    ])
    .await;
    let journal = ws.path().join("journal.jsonl");
    let run = run_in(
        "what does Hermes do?",
        ws.path(),
        &server,
        &[
            "--json",
            "--reflect-every",
            "2",
            "--journal",
            journal.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["rounds"], 3, "a reflection is not a round");
    assert_eq!(outcome["reflections"], 1);
    // Its tokens count: 4 requests of 10 + 5.
    assert_eq!(outcome["usage"]["prompt_tokens"], 40);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[2].get("response_format").is_none(),
        "plain text, not JSON"
    );
    assert!(server.prompt_text(2).contains("review your progress"));
    let next = server.prompt_text(3);
    assert!(
        next.contains("Your reflection after round 2 (a note to yourself, not a tool result): Done: read notes.txt"),
        "{next}"
    );
    let lines = common::journal_lines(&journal);
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[2],
        json!({"kind": "reflection", "round": 2, "text": "Done: read notes.txt and listed the folder. Missing: nothing."})
    );

    // The same tool failing twice in a row triggers one off the cadence; a
    // reflection the server fails is skipped and the run goes on.
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "missing-1.txt"})),
        decision("read_file", json!({"path": "missing-2.txt"})),
        Reply::Status(400, "bad request".into()),
        finish("gave up"),
    ])
    .await;
    let run = run_in(
        "task",
        ws.path(),
        &server,
        &["--json", "--reflect-every", "10"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outcome = run.outcome();
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(outcome["reflections"], 0);
    assert!(server.prompt_text(2).contains("review your progress"));
    assert!(
        run.stderr.contains("reflection after round 2 skipped"),
        "{}",
        run.stderr
    );

    // --reflect-every 0: no reflection at all.
    let server = ScriptedServer::start(vec![
        decision("read_file", json!({"path": "missing-1.txt"})),
        decision("read_file", json!({"path": "missing-2.txt"})),
        finish("gave up"),
    ])
    .await;
    let run = run_in(
        "task",
        ws.path(),
        &server,
        &["--json", "--reflect-every", "0"],
    )
    .await;
    assert_eq!(run.outcome()["reflections"], 0);
    assert_eq!(server.requests().len(), 3);
}

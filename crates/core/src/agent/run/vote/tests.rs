use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::test_programs::Programs;
use super::*;
use crate::agent::steer::{code_judge, code_redraw, code_vote};
use crate::agent::Agent;
use crate::journal::JournalEntry;
use crate::limits::Limits;
use crate::llm::scripted::ScriptedLlm;
use crate::tools::Toolbox;

fn program(code: &str) -> String {
    json!({"thought": code, "action": {"name": "run_code", "args": {"language": "python", "code": code}}}).to_string()
}

const FINISH: &str =
    r#"{"thought": "done", "action": {"name": "finish", "args": {"result": "done"}}}"#;

/// A run of `replies` (the model's program, its draws, then a finish)
/// with the vote on or off: its rounds and the calls made.
async fn run(replies: &[&str], vote_on: bool) -> (Vec<JournalEntry>, Vec<(String, bool)>) {
    run_judged(replies, vote_on, None).await
}

/// [`run`] with the code judge on when `judge` is its reply (given
/// after the draws).
async fn run_judged(
    replies: &[&str],
    vote_on: bool,
    judge: Option<&str>,
) -> (Vec<JournalEntry>, Vec<(String, bool)>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut toolbox = Toolbox::new();
    toolbox.register(Programs { ran: ran.clone() });
    let mut replies: Vec<String> = replies.iter().map(|code| program(code)).collect();
    replies.extend(judge.map(str::to_string));
    replies.push(FINISH.to_string());
    let llm = Arc::new(ScriptedLlm::new(replies));
    let mut limits = Limits::default();
    limits.steer.set(code_vote::NAME, vote_on);
    limits.steer.set(code_redraw::NAME, false);
    limits.steer.set(code_judge::NAME, judge.is_some());
    let rounds = Arc::new(Mutex::new(Vec::new()));
    let kept = rounds.clone();
    let agent = Agent::new(llm, Arc::new(toolbox))
        .with_limits(limits)
        .on_round(Arc::new(move |entry: &JournalEntry| {
            kept.lock().unwrap().push(entry.clone())
        }));
    agent
        .run("Count the admins.", &CancellationToken::new())
        .await;
    let rounds = rounds.lock().unwrap().clone();
    let ran = ran.lock().unwrap().clone();
    (rounds, ran)
}

#[tokio::test]
async fn two_draws_that_agree_against_the_model_act_in_its_place() {
    let (rounds, ran) = run(
        &[
            "all print 7",
            "admins print 3",
            "no output",
            "filter print 3",
        ],
        true,
    )
    .await;
    // Every program is tried first; only the winner runs for real.
    let trials: Vec<bool> = ran.iter().map(|(_, trial)| *trial).collect();
    assert_eq!(trials, [true, true, true, true, false], "{ran:?}");
    assert_eq!(ran[4].0, "admins print 3");
    let first = &rounds[0];
    assert_eq!(first.args["code"], "admins print 3");
    assert_eq!(first.thought, "admins print 3");
    let record = first.redraw.as_deref().expect("a vote record");
    assert_eq!(record.by, code_vote::NAME);
    assert_eq!((record.drawn, record.ran, record.kept), (3, 3, Some(1)));
    assert_eq!(record.tally, [1, 2]);
    assert!(
        record.replaced.as_deref().unwrap().contains("→ 7"),
        "{record:?}"
    );
}

#[tokio::test]
async fn the_models_program_stands_unless_outvoted_and_a_failed_one_is_not_put_to_a_vote() {
    let (rounds, ran) = run(
        &["all print 7", "print 3", "again print 7", "print 5"],
        true,
    )
    .await;
    assert_eq!(rounds[0].args["code"], "all print 7");
    let record = rounds[0].redraw.as_deref().unwrap();
    assert_eq!((record.kept, record.tally.clone()), (None, vec![2, 1, 1]));
    assert!(record.replaced.is_none());
    assert_eq!(ran.last().unwrap(), &("all print 7".to_string(), false));
    // A program that fails when tried acts as it is: nothing is drawn.
    let (rounds, ran) = run(&["broken"], true).await;
    assert_eq!(
        ran,
        [("broken".to_string(), true), ("broken".to_string(), false)]
    );
    assert!(rounds[0].redraw.is_none());
    assert_eq!(rounds[1].action, "finish");
}

/// The judge record of `round`'s vote.
fn judge_of(round: &JournalEntry) -> &JudgeRecord {
    let record = round.redraw.as_deref().expect("a vote record");
    record.judge.as_ref().expect("a judge record")
}

#[tokio::test]
async fn a_contested_vote_goes_to_the_judge_whose_choice_acts() {
    // The model's 7 and one draw's against a 3 and a 5: the count
    // keeps the 7, the judge is shown 7 (A), 3 (B), 5 (C) and picks B.
    let replies = ["all print 7", "print 3", "again print 7", "print 5"];
    let judge = r#"{"reason": "B filters the admins", "choice": "B"}"#;
    let (rounds, ran) = run_judged(&replies, true, Some(judge)).await;
    assert_eq!(rounds[0].args["code"], "print 3");
    assert_eq!(ran.last().unwrap(), &("print 3".to_string(), false));
    let record = rounds[0].redraw.as_deref().unwrap();
    assert_eq!(
        (record.kept, record.tally.clone()),
        (Some(1), vec![2, 1, 1])
    );
    let judged = record.judge.as_ref().expect("a judge record");
    assert_eq!(
        (judged.by.as_str(), judged.chose),
        (code_judge::NAME, Some(1))
    );
    assert_eq!(judged.reason, "B filters the admins");
    // The count's choice is shown first: here the two draws' 3 (A),
    // then the model's 7 (B), whose choice keeps the model's program.
    let replies = ["all print 7", "print 3", "again print 3", "print 5"];
    let judge = r#"{"reason": "B counts them all", "choice": "B"}"#;
    let (rounds, _) = run_judged(&replies, true, Some(judge)).await;
    assert_eq!(rounds[0].args["code"], "all print 7");
    assert_eq!(judge_of(&rounds[0]).chose, Some(0));
    // A tie of two against two goes to the draws, so they come first.
    let replies = ["all print 7", "print 3", "again print 3", "x print 7"];
    let judge = r#"{"reason": "A filters", "choice": "A"}"#;
    let (rounds, _) = run_judged(&replies, true, Some(judge)).await;
    assert_eq!(rounds[0].args["code"], "print 3");
    assert_eq!(judge_of(&rounds[0]).chose, Some(1));
}

#[tokio::test]
async fn an_unreadable_judgement_leaves_the_count_and_agreement_asks_no_judge() {
    let replies = ["all print 7", "print 3", "again print 3", "print 5"];
    let (rounds, _) = run_judged(&replies, true, Some(r#"{"choice": "Z"}"#)).await;
    assert_eq!(rounds[0].args["code"], "print 3");
    let judged = rounds[0].redraw.as_deref().unwrap().judge.clone().unwrap();
    assert_eq!(judged.chose, None);
    assert!(judged.reason.starts_with("unreadable reply"), "{judged:?}");
    // All agree: no judge is asked (its reply would be the finish).
    let replies = ["all print 7", "x print 7", "y print 7", "z print 7"];
    let (rounds, _) = run_judged(&replies, true, Some(FINISH)).await;
    assert!(rounds[0].redraw.as_deref().unwrap().judge.is_none());
    assert_eq!(rounds[1].action, "finish");
}

#[tokio::test]
async fn a_program_out_of_time_when_tried_is_not_run_again() {
    let (rounds, ran) = run(&["slow"], true).await;
    assert_eq!(ran, [("slow".to_string(), true)]);
    assert!(rounds[0].is_error());
    assert!(rounds[0].redraw.is_none());
    assert_eq!(rounds[1].action, "finish");
}

#[tokio::test]
async fn switched_off_the_program_runs_once() {
    let (rounds, ran) = run(&["all print 7"], false).await;
    assert_eq!(ran, [("all print 7".to_string(), false)]);
    assert!(rounds[0].redraw.is_none());
}

fn drawn(outcomes: &[&str]) -> Vec<(u32, (), String)> {
    (1..)
        .zip(outcomes)
        .map(|(n, o)| (n, (), o.to_string()))
        .collect()
}

#[test]
fn an_outcome_wins_only_with_more_answers_than_the_models() {
    // Two draws agree against the model: they win, even when a third
    // agrees with the model.
    let count = Count::of("7", &drawn(&["3", "5", "3"]));
    assert_eq!(count.tally, [1, 2, 1]);
    assert_eq!(count.winner, Some(0));
    let count = Count::of("7", &drawn(&["3", "3", "7"]));
    assert_eq!(count.tally, [2, 2]);
    assert_eq!(count.winner, Some(0));
    // One draw against the model alone does not.
    assert_eq!(Count::of("7", &drawn(&["3"])).winner, None);
    assert_eq!(Count::of("7", &drawn(&["3", "7", "7"])).winner, None);
    // All differ, or all agree with the model: it stands.
    assert_eq!(Count::of("7", &drawn(&["1", "2", "3"])).winner, None);
    let count = Count::of("7", &drawn(&["7", "7"]));
    assert_eq!((count.tally, count.winner), (vec![3], None));
    // Nothing drawn: the model's alone.
    assert_eq!(Count::of("7", &drawn(&[])).tally, [1]);
    // The larger of two drawn outcomes wins, the first on a tie.
    let count = Count::of("7", &drawn(&["1", "2", "2", "1", "2"]));
    assert_eq!((count.tally, count.winner), (vec![1, 2, 3], Some(1)));
}

#[test]
fn draws_that_show_the_models_one_value_vote_with_it() {
    let file = |text: &str| format!("\n\u{0}total_km.txt\u{0}{text}");
    let own = format!("44.1{}", file("44.1"));
    // Two draws word the same number otherwise: they vote with the
    // model, whose program keeps its words.
    let worded = file("Total distance in km: 44.1 km");
    let count = Count::of(&own, &drawn(&["40.0", &worded, &worded]));
    assert_eq!((count.tally, count.winner), (vec![3, 1], None));
    // Another number, another file, or several numbers: compared as text.
    let count = Count::of(&own, &drawn(&[&file("Total: 45.0"), &file("Total: 45.0")]));
    assert_eq!((count.tally, count.winner), (vec![1, 2], Some(0)));
    let elsewhere = "\n\u{0}km.txt\u{0}44.1".to_string();
    assert_eq!(
        Count::of(&own, &drawn(&[&elsewhere, &elsewhere])).tally,
        [1, 2]
    );
    let two = Count::of("a 3\nb 2", &drawn(&["c 3\nd 2", "c 3\nd 2"]));
    assert_eq!(two.tally, [1, 2]);
    // Draws that word one value two ways do not count together: only
    // the model's value gathers other words.
    let count = Count::of("7", &drawn(&["Total: 5", "5 items"]));
    assert_eq!((count.tally, count.winner), (vec![1, 1, 1], None));
    let file = |text: &str| format!("\n\u{0}answer.txt\u{0}{text}");
    let count = Count::of("600", &drawn(&["600", &file("600.0"), &file("600")]));
    assert_eq!((count.tally, count.winner), (vec![2, 1, 1], None));
}

#[test]
fn numbers_are_read_with_their_sign_and_decimals() {
    let found: Vec<f64> = numbers("-7 and 44.10 km, x-3, 2024-03-04, v1.").collect();
    assert_eq!(found, [-7.0, 44.1, 3.0, 2024.0, 3.0, 4.0, 1.0]);
    assert_eq!(
        OneValue::of("Total: 649.79").map(|v| v.number),
        Some(649.79)
    );
    assert_eq!(OneValue::of("3 of 4"), None);
    assert_eq!(OneValue::of("no number"), None);
    // A file's path is not its text.
    let one = OneValue::of("\n\u{0}q1.txt\u{0}8").unwrap();
    assert_eq!((one.files, one.number), (vec!["q1.txt".to_string()], 8.0));
}

#[test]
fn a_judge_sees_the_counts_choice_first_then_the_most_answered() {
    // Two draws agree on 5 against the model's 7: 5 is the count's choice.
    let count = Count::of("7", &drawn(&["3", "5", "5"]));
    assert_eq!(count.tally, [1, 1, 2]);
    assert_eq!(count.by_answers(), [2, 0, 1]);
    // The model's outcome stands: it comes first, then by answers.
    let count = Count::of("7", &drawn(&["3", "5", "5", "7", "7"]));
    assert_eq!(count.tally, [3, 1, 2]);
    assert_eq!(count.by_answers(), [0, 2, 1]);
    // All differ: the model's first, then in the order drawn.
    let count = Count::of("7", &drawn(&["3", "5"]));
    assert_eq!(count.by_answers(), [0, 1, 2]);
}

#[test]
fn an_outcome_is_what_was_printed_and_written() {
    let ok = |data| ToolResult::ok(data);
    let printed = outcome(&ok(json!({"exit_code": 0, "stdout": "3\n", "stderr": ""})));
    assert_eq!(printed.as_deref(), Some("3"));
    let wrote = outcome(&ok(
        json!({"stdout": "", "unsaved_writes": {"a.txt": "3\n"}}),
    ));
    assert_eq!(wrote.as_deref(), Some("\n\u{0}a.txt\u{0}3"));
    // What another file holds, or the same text printed, differs.
    let other = outcome(&ok(
        json!({"stdout": "", "unsaved_writes": {"b.txt": "3\n"}}),
    ));
    assert_ne!(wrote, other);
    assert_ne!(wrote, printed);
    // A failed call, or one that showed nothing, has no outcome.
    assert_eq!(outcome(&ok(json!({"stdout": "  \n"}))), None);
    assert_eq!(
        outcome(&ToolResult::error("the code exited with code 1")),
        None
    );
}

//! Tests of the prompt the loop builds each round.
use serde_json::json;

use super::rendered::{clip_strings, log_block, HISTORY_ARG_CHARS};
use super::*;
use crate::tools::ToolStatus;

fn history(rounds: u32) -> Vec<JournalEntry> {
    (1..=rounds)
        .map(|round| JournalEntry {
            status: if round % 3 == 0 {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            },
            observation: format!(r#"{{"status":"ok","data":"line {round}","error":null}}"#),
            ..JournalEntry::new(
                round,
                "reading",
                "read_file",
                json!({"path": format!("f{round}")}),
            )
        })
        .collect()
}

/// Every turn's text in order, without the closing request of the last
/// one (the part of the prompt the next round's prompt must start with).
fn kept_text(turns: &[ChatMessage], next_round: usize) -> String {
    let all: String = turns
        .iter()
        .map(|t| format!("<{:?}>{}", t.role, t.content))
        .collect();
    let ask = all
        .rfind(&format!("Round {next_round} of"))
        .expect("the prompt ends with the round's request");
    all[..ask].to_string()
}

/// The rounds (2..) whose prompt does not start with the previous
/// round's kept text.
fn rebuilt_rounds(all: &[JournalEntry], from: usize, limits: &Limits) -> Vec<usize> {
    let mut rebuilt_at = Vec::new();
    for rounds in from..all.len() {
        let before = messages("sys", "", "the goal", &all[..rounds], &[], limits);
        let after = messages("sys", "", "the goal", &all[..rounds + 1], &[], limits);
        let after_all = kept_text(&after, rounds + 2);
        if !after_all.starts_with(&kept_text(&before, rounds + 1)) {
            rebuilt_at.push(rounds + 1);
        }
    }
    rebuilt_at
}

fn turns_layout() -> Limits {
    Limits {
        history: HistoryLayout::Turns,
        ..Limits::default()
    }
}

#[test]
fn the_conversation_only_grows_at_its_end_between_summary_blocks() {
    for limits in [Limits::default(), turns_layout()] {
        // Whole while the window holds every round, then once per block
        // of half the window (3 rounds) instead of every round.
        assert_eq!(
            rebuilt_rounds(&history(12), 1, &limits),
            vec![7, 10],
            "{:?}",
            limits.history
        );
    }
    // The turns layout only adds turns.
    let limits = turns_layout();
    let before = messages("sys", "", "g", &history(3), &[], &limits);
    let after = messages("sys", "", "g", &history(4), &[], &limits);
    assert_eq!(after[..before.len()], before[..]);
}

#[test]
fn a_long_run_keeps_at_most_a_window_of_summary_lines() {
    let limits = Limits::default();
    let summary_lines = |rounds: u32| {
        let turns = messages("sys", "", "g", &history(rounds), &[], &limits);
        let opening = &turns[1].content;
        opening.lines().filter(|l| l.starts_with("- round")).count()
    };
    // Up to 12 rounds (the eval suite's bound) nothing is counted.
    assert_eq!(summary_lines(11), 6);
    let turns = messages("sys", "", "g", &history(11), &[], &limits);
    assert!(!turns[1].content.contains("- rounds "));
    // Later the oldest rounds collapse into one counted line.
    for rounds in 12..60 {
        assert!(summary_lines(rounds) <= 7, "{rounds} rounds");
    }
    let turns = messages("sys", "", "g", &history(29), &[], &limits);
    assert!(
        turns[1]
            .content
            .contains("- rounds 1–18: read_file ×18 (6 failed)\n- round 19: read_file"),
        "{}",
        turns[1].content
    );
    // The opening still changes once per block only.
    let rebuilt = rebuilt_rounds(&history(41), 20, &limits).len();
    assert_eq!(rebuilt, 7, "once per block of 3 over 20 rounds");
}

#[test]
fn rounds_rendered_once_make_the_same_prompt_as_rendering_them_all() {
    let all = history(14);
    for limits in [Limits::default(), turns_layout()] {
        let layout = limits.history;
        let mut rendered = RenderedRounds::default();
        for n in 0..=all.len() {
            let seen = &all[..n];
            let opening = Opening {
                goal: "goal",
                ..Opening::default()
            };
            let once = messages_rendered(PromptParts {
                system: "sys",
                opening,
                history: seen,
                rendered: rendered.sync(seen, &limits),
                reflections: &[],
                limits: &limits,
                written: "",
            });
            assert_eq!(
                once,
                messages("sys", "", "goal", seen, &[], &limits),
                "after {n} rounds, {layout:?}"
            );
        }
        // A shorter journal (a new run) starts the rendering over.
        let short = &all[..2];
        assert_eq!(rendered.sync(short, &limits).rounds().len(), 2);
        assert_eq!(
            rendered.sync(short, &limits).rounds()[1],
            RenderedRound::of(&all[1], layout, false)
        );
    }
}

#[test]
fn recalled_notes_open_the_first_turn_only_and_stay_put() {
    let limits = Limits::default();
    let notes = super::super::memory::notes_block(&["Task: count\nResult: 3".into()]);
    let m = messages("sys", &notes, "the goal", &history(2), &[], &limits);
    assert!(m[1].content.starts_with("Notes from earlier tasks"));
    assert!(m[1]
        .content
        .contains("- Task: count\n  Result: 3\n\nGoal: the goal"));
    assert!(m[2..]
        .iter()
        .all(|turn| !turn.content.contains("Notes from")));
    // The prefix stays stable with notes too.
    let more = messages("sys", &notes, "the goal", &history(3), &[], &limits);
    assert!(kept_text(&more, 4).starts_with(&kept_text(&m, 3)));
}

#[test]
fn summarised_rounds_come_in_blocks_and_keep_the_window_bounded() {
    assert_eq!(summarised_rounds(6, 6), 0);
    assert_eq!(summarised_rounds(7, 6), 3);
    assert_eq!(summarised_rounds(9, 6), 3);
    assert_eq!(summarised_rounds(10, 6), 6);
    assert_eq!(summarised_rounds(3, 0), 3);
    for rounds in 0..40 {
        let shown = rounds - summarised_rounds(rounds, 6);
        assert!(shown <= 6, "{rounds} rounds show {shown} whole");
    }
}

#[test]
fn each_turn_restates_the_goal_and_the_round_and_says_what_succeeded() {
    let limits = turns_layout();
    let m = messages("sys", "", "count the admins", &history(2), &[], &limits);
    assert_eq!(m.len(), 6);
    assert!(m[1].content.starts_with("Goal: count the admins"));
    assert!(m[1]
        .content
        .ends_with("Round 1 of 20. Reply with one JSON object."));
    let last = &m[5].content;
    assert!(
        last.starts_with("Goal: count the admins\n\nObservation (round 2): "),
        "{last}"
    );
    assert!(last.contains("\n\nRound 3 of 20."), "{last}");
    assert!(last.contains("Round 2 (read_file) succeeded"), "{last}");
    // An error is not called a success.
    let m = messages("sys", "", "g", &history(3), &[], &limits);
    assert!(!m.last().unwrap().content.contains("succeeded"));
}

#[test]
fn the_log_shows_calls_and_observations_and_never_replays_a_reply() {
    let limits = Limits::default();
    let mut past = history(2);
    past.push(JournalEntry {
        raw: Some("I think the answer is 7".into()),
        observation: "not JSON".into(),
        status: ToolStatus::Error,
        ..JournalEntry::new(3, "", UNPARSED, json!({}))
    });
    let m = messages("sys", "", "count the admins", &past, &[], &limits);
    assert_eq!(m.len(), 2, "system and one user turn");
    let log = &m[1].content;
    assert!(log.starts_with("Goal: count the admins\n\nRound 1: you called read_file {\"path\":\"f1\"}\nObservation: {\"status\":\"ok\",\"data\":\"line 1\""), "{log}");
    assert!(log.contains("\n\nRound 3: your reply was not a readable decision.\nObservation: not JSON\n\nRound 4 of 20."), "{log}");
    // Neither the thought nor the unreadable reply is there to copy.
    assert!(
        !log.contains("reading") && !log.contains("answer is 7"),
        "{log}"
    );
    // After a success the request says so.
    let m = messages("sys", "", "g", &history(2), &[], &limits);
    assert!(m[1].content.ends_with("Round 3 of 20. Round 2 (read_file) succeeded and its result is in the observation above: do not repeat it; use that result for the next step toward the goal, or finish if the goal is reached. Reply with one JSON object."), "{}", m[1].content);
}

#[test]
fn the_system_prompt_steers_arithmetic_to_run_code_only_when_offered() {
    use crate::tools::builtin::RunCode;
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::Toolbox;
    let limits = Limits::default();
    let without = system_prompt(DEFAULT_IDENTITY, &Toolbox::new(), &limits);
    assert!(!without.contains("run_code"));
    let mut toolbox = Toolbox::new();
    toolbox.register(RunCode::new(SandboxConfig::new("/tmp")));
    let with = system_prompt(DEFAULT_IDENTITY, &toolbox, &limits);
    assert!(with.contains("compute with run_code"), "{with}");
}

#[test]
fn the_worked_example_ends_the_system_prompt_when_switched_on() {
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::Workspace;
    let dir = tempfile::tempdir().unwrap();
    let mut toolbox = Toolbox::new();
    register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
    let no_code = system_prompt(DEFAULT_IDENTITY, &toolbox, &Limits::default());
    assert!(!no_code.contains("Example of a whole run"), "{no_code}");
    toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
    let on = Limits {
        steer: steer::Steers::defaults().with("worked_example", true),
        ..Limits::default()
    };
    let with = system_prompt(DEFAULT_IDENTITY, &toolbox, &on);
    let example = with.find("Example of a whole run").expect(&with);
    assert!(with.find("- Limits:").unwrap() < example, "{with}");
    // Off by default (EVALS.md, section 30).
    let off = Limits::default();
    let without = system_prompt(DEFAULT_IDENTITY, &toolbox, &off);
    assert!(!without.contains("Example of a whole run"), "{without}");
    // The shared prompt is keyed by the switch too.
    assert_ne!(
        shared_system_prompt(DEFAULT_IDENTITY, &toolbox, &on),
        shared_system_prompt(DEFAULT_IDENTITY, &toolbox, &off)
    );
}

#[test]
fn a_log_block_writes_the_args_as_their_clipped_copy_would_read() {
    let long = "é".repeat(HISTORY_ARG_CHARS + 5);
    let exact = "x".repeat(HISTORY_ARG_CHARS);
    for args in [
        json!({}),
        json!({"path": "a.txt"}),
        json!({"content": long, "path": "b \"q\"\n.txt", "n": 1.5, "ok": true, "none": null}),
        json!({"nested": {"list": [long.clone(), exact.clone(), 3]}, "z": exact}),
    ] {
        let mut entry = JournalEntry::new(4, "t", "write_file", args.clone());
        entry.observation = r#"{"status":"ok","data":"wrote","error":null}"#.into();
        let expected = format!(
            "Round 4: you called write_file {}\nObservation: {}",
            clip_strings(&args),
            entry.observation
        );
        assert_eq!(log_block(&entry, false), expected);
    }
}

#[test]
fn with_observation_text_on_a_read_file_shows_as_lines_in_both_layouts() {
    let mut past = history(1);
    past[0].observation =
        r#"{"status":"ok","data":"id,role\n1,admin\n2,user\n","error":null}"#.into();
    let lines = "\n--- data (3 lines) ---\nid,role\n1,admin\n2,user\n--- end of data ---";
    let on = |layout| Limits {
        steer: steer::Steers::defaults().with(observation_text::NAME, true),
        history: layout,
        ..Limits::default()
    };
    for layout in [HistoryLayout::Log, HistoryLayout::Turns] {
        let m = messages("sys", "", "count the admins", &past, &[], &on(layout));
        let last = &m.last().unwrap().content;
        assert!(
            last.contains(&format!(
                "{{\"status\":\"ok\",\"data\":\"<3 lines, below>\",\"error\":null}}{lines}"
            )),
            "{layout:?}: {last}"
        );
        let off = Limits {
            history: layout,
            ..Limits::default()
        };
        let m = messages("sys", "", "count the admins", &past, &[], &off);
        let last = &m.last().unwrap().content;
        assert!(
            !last.contains(lines) && last.contains(&past[0].observation),
            "{last}"
        );
    }
}

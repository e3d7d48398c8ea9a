//! Repeated calls: a decision that makes exactly the same call (name and
//! canonical args) as one of the last rounds.
//!
//! Small models often redo the step that just worked, or retry a failed
//! call unchanged, until the repetition guard ends the run. When this steer
//! is on (the default; `--no-repeat-guidance` turns it off), the loop answers such a decision
//! before running anything: it asks the model once more with a note that
//! names the earlier round and what it returned ([`reask_note`]), and that
//! second answer may not name the repeated action at all (its decision
//! schema leaves it out, so under the grammar a small model cannot send the
//! call a third time; words alone did not move it, EVALS.md section 19).
//! If the second answer repeats the call anyway (a model without the
//! grammar), it is not run but answered with an error that points back at
//! that round ([`refusal`]); the refused call still counts for the
//! repetition guard, so a model that cannot let go is stopped as before.
//! Both notes end with the files the goal and earlier results named that
//! no round has read yet ([`super::unread_files`]), and the read of the
//! first of them spelled out as a reply ([`super::unread_files::read_offer`]):
//! barred from one repeat, a small model otherwise repeats another earlier
//! call, even with the unread files named (EVALS.md, section 38).
//!
//! A call is a repeat only while the workspace is as it was: after a round
//! that wrote a file or ran code successfully, the same call may give
//! another answer (run the script again after fixing it), so it runs.

use crate::decision::{Action, FINISH};
use crate::journal::JournalEntry;
use crate::text::{clip, one_line};
use crate::tools::{ToolEffect, ToolResult, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "repeat_guidance";

/// Repeat guidance as a steer: re-asks, then refuses, an exact repeat.
pub struct RepeatGuidance;

impl super::Steer for RepeatGuidance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "asks once more, without that action, when a decision repeats a recent call exactly and nothing was written since; refuses the call if the answer repeats it again"
    }

    fn on_by_default(&self) -> bool {
        // On since the re-asked answer may not name the repeated action:
        // dev 0.400 -> 0.422, held-out 0.289 -> 0.342, no run ended by the
        // repetition guard (EVALS.md, section 25). In words alone it made
        // runs longer and no more successful (sections 3 and 19).
        true
    }

    fn gate(
        &self,
        cx: &super::SteerContext<'_>,
        decision: &crate::decision::Decision,
        reasked: bool,
    ) -> super::Gate {
        if decision.is_finish() {
            return super::Gate::Go;
        }
        let Some(earlier) = repeated_round(cx.history, &decision.action, cx.repetition_window)
        else {
            return super::Gate::Go;
        };
        if changed_since(cx, earlier.round) {
            return super::Gate::Go;
        }
        // Where to go instead: files it was shown the names of and never
        // read (a run that repeats itself was, in every dev run the
        // repetition guard ended, one read short of one).
        let files = super::unread_files::unread(cx);
        let unread = super::unread_files::sentence(&files);
        let read = |not: &str| super::unread_files::read_offer(cx.toolbox, &files, not);
        if !reasked {
            // The re-asked answer may not use the repeated action.
            let offer = read(&decision.action.name);
            return super::Gate::Reask {
                note: format!("{}{unread}{offer}", reask_note(earlier)),
                among: Some(other_actions(cx.toolbox, &decision.action.name)),
            };
        }
        super::Gate::Refuse {
            note: format!(
                "{}{unread}{}",
                refusal(earlier).error.unwrap_or_default(),
                read("")
            ),
            repeat_of: Some(earlier.round),
        }
    }
}

/// Whether a round after `round` changed the workspace: a write or a code
/// run that succeeded and was not a steer's answer.
fn changed_since(cx: &super::SteerContext<'_>, round: u32) -> bool {
    cx.history.iter().any(|entry| {
        entry.round > round
            && !entry.is_error()
            && entry.steered_by.is_none()
            && matches!(
                cx.toolbox.effect(&entry.action),
                ToolEffect::Writes | ToolEffect::RunsCode
            )
    })
}

/// Every action of `toolbox`, and finish, except `repeated`.
fn other_actions(toolbox: &Toolbox, repeated: &str) -> Vec<String> {
    toolbox
        .names()
        .into_iter()
        .chain([FINISH])
        .filter(|name| *name != repeated)
        .map(str::to_string)
        .collect()
}

/// How much of the earlier observation a note quotes.
const QUOTED_CHARS: usize = 300;

/// The most recent of the last `repetition_window` rounds that made
/// exactly `action`'s call.
pub fn repeated_round<'a>(
    history: &'a [JournalEntry],
    action: &Action,
    window: usize,
) -> Option<&'a JournalEntry> {
    // The same call as `args_hash` compares, without hashing: objects
    // compare without regard to key order, and most names differ.
    history
        .iter()
        .rev()
        .take(window)
        .find(|entry| entry.action == action.name && entry.args == action.args)
}

/// The message that asks the model to decide again instead of repeating
/// `earlier`'s call.
pub fn reask_note(earlier: &JournalEntry) -> String {
    let call = format!(
        "{} {}",
        earlier.action,
        clip(&one_line(&earlier.args.to_string()), 120)
    );
    if earlier.is_error() {
        format!(
            "That is exactly the call of round {} ({call}), which failed: {}. The same call will fail the same way, so this answer may not use {}: take another step toward the goal with another tool, or finish with a progress report. Reply with one JSON object.",
            earlier.round,
            clip(&one_line(&earlier.observation), QUOTED_CHARS),
            earlier.action
        )
    } else {
        format!(
            "That is exactly the call of round {} ({call}), which already succeeded; its result is in the observation of round {}. This answer may not use {}: take the next step toward the goal with that result, or finish if the goal is reached. Reply with one JSON object.",
            earlier.round, earlier.round, earlier.action
        )
    }
}

/// The observation for a repeated call that was not run.
pub fn refusal(earlier: &JournalEntry) -> ToolResult {
    let outcome = if earlier.is_error() {
        "failed"
    } else {
        "succeeded"
    };
    ToolResult::error(format!(
        "not run: this is exactly the call of round {}, which {outcome}; see the observation of round {}. Take a different step: the next one toward the goal, or finish.",
        earlier.round, earlier.round
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::{Gate, GoalFiles, Steer, SteerContext};
    use crate::decision::Decision;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    fn entry(round: u32, action: &str, args: serde_json::Value, ok: bool) -> JournalEntry {
        JournalEntry {
            status: if ok {
                ToolStatus::Ok
            } else {
                ToolStatus::Error
            },
            observation: if ok {
                r#"{"status":"ok","data":"7","error":null}"#.into()
            } else {
                r#"{"status":"error","data":null,"error":"no such file"}"#.into()
            },
            ..JournalEntry::new(round, "", action, args)
        }
    }

    fn call(name: &str, args: serde_json::Value) -> Action {
        Action {
            name: name.into(),
            args,
        }
    }

    #[test]
    fn finds_the_latest_identical_call_within_the_window() {
        let history = vec![
            entry(1, "read_file", json!({"path": "a"}), true),
            entry(2, "list_dir", json!({}), true),
            entry(3, "read_file", json!({"path": "a"}), false),
        ];
        let window = crate::limits::Limits::default().repetition_window;
        let found = repeated_round(&history, &call("read_file", json!({"path": "a"})), window);
        assert_eq!(found.map(|e| e.round), Some(3));
        assert!(
            repeated_round(&history, &call("read_file", json!({"path": "b"})), window).is_none()
        );
        assert!(repeated_round(&history, &call("list_dir", json!({})), 1).is_none());
        // The same args in another key order are the same call (as their
        // `args_hash` says); another value is not.
        let two = vec![entry(
            1,
            "write_file",
            json!({"path": "a", "content": "1"}),
            true,
        )];
        let reordered = call("write_file", json!({"content": "1", "path": "a"}));
        assert_eq!(
            crate::journal::action_hash(&reordered.name, &reordered.args),
            two[0].args_hash
        );
        assert!(repeated_round(&two, &reordered, window).is_some());
        let other = call("write_file", json!({"content": 1, "path": "a"}));
        assert!(repeated_round(&two, &other, window).is_none());
    }

    #[test]
    fn notes_say_what_the_earlier_round_returned() {
        let ok = entry(2, "read_file", json!({"path": "a"}), true);
        let note = reask_note(&ok);
        assert!(
            note.contains("round 2") && note.contains("already succeeded"),
            "{note}"
        );
        let failed = entry(4, "read_file", json!({"path": "a"}), false);
        let note = reask_note(&failed);
        assert!(
            note.contains("round 4") && note.contains("no such file"),
            "{note}"
        );
        let refused = refusal(&failed);
        assert_eq!(refused.status, ToolStatus::Error);
        assert!(refused.error.unwrap().contains("round 4, which failed"));
    }

    #[test]
    fn a_repeat_is_asked_again_without_its_action_until_something_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let files = GoalFiles::default();
        let cx = |history| SteerContext {
            goal: "Fix a.txt.",
            files: &files,
            toolbox: &toolbox,
            history,
            repetition_window: 5,
            shown: &[],
            others: &[],
        };
        let read = Decision {
            thought: String::new(),
            action: call("read_file", json!({"path": "a.txt"})),
            result: None,
            repaired: false,
        };
        let history = vec![entry(1, "read_file", json!({"path": "a.txt"}), true)];
        let Gate::Reask { note, among } = RepeatGuidance.gate(&cx(&history), &read, false) else {
            panic!("a repeat went ahead");
        };
        assert!(note.contains("may not use read_file"), "{note}");
        let among = among.expect("the second answer is narrowed");
        assert!(!among.iter().any(|n| n == "read_file"), "{among:?}");
        assert!(among.iter().any(|n| n == FINISH) && among.iter().any(|n| n == "write_file"));
        // Asked again and still the same call: refused, pointing back.
        let Gate::Refuse { repeat_of, .. } = RepeatGuidance.gate(&cx(&history), &read, true) else {
            panic!("a second repeat went ahead");
        };
        assert_eq!(repeat_of, Some(1));
        // A file written since: the same read may now say something else.
        let mut written = history.clone();
        written.push(entry(
            2,
            "write_file",
            json!({"path": "a.txt", "content": "b"}),
            true,
        ));
        assert_eq!(RepeatGuidance.gate(&cx(&written), &read, false), Gate::Go);
        // A write that failed, or one a steer answered, changed nothing.
        let mut failed = history.clone();
        failed.push(entry(
            2,
            "write_file",
            json!({"path": "a.txt", "content": "b"}),
            false,
        ));
        assert!(matches!(
            RepeatGuidance.gate(&cx(&failed), &read, false),
            Gate::Reask { .. }
        ));
    }
}

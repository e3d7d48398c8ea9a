//! Repeated calls: a decision that makes exactly the same call (name and
//! canonical args) as one of the last rounds.
//!
//! Small models often redo the step that just worked, or retry a failed
//! call unchanged, until the repetition guard ends the run. When this steer
//! is on (`--steer repeat_guidance=on`), the loop answers such a decision
//! before running anything: it asks the model once more with a note that
//! names the earlier round and what it returned ([`reask_note`]), and if the
//! second answer repeats the call too, it does not run it but answers with
//! an error that points back at that round ([`refusal`]). The refused call
//! still counts for the repetition guard, so a model that cannot let go is
//! stopped as before.

use crate::decision::Action;
use crate::journal::{action_hash, JournalEntry};
use crate::text::{clip, one_line};
use crate::tools::ToolResult;

/// The steer's name (switches, journals).
pub const NAME: &str = "repeat_guidance";

/// Repeat guidance as a steer: re-asks, then refuses, an exact repeat.
pub struct RepeatGuidance;

impl super::Steer for RepeatGuidance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "asks once more when a decision repeats a recent call exactly, and refuses the call if the answer repeats it again (off by default)"
    }

    fn on_by_default(&self) -> bool {
        // Off: on the 1.5B model it made runs longer and no more
        // successful (EVALS.md, section 3).
        false
    }

    fn may_reask(&self) -> bool {
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
        if !reasked {
            return super::Gate::Reask(reask_note(earlier));
        }
        super::Gate::Refuse {
            note: refusal(earlier).error.unwrap_or_default(),
            repeat_of: Some(earlier.round),
        }
    }
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
    let hash = action_hash(&action.name, &action.args);
    history
        .iter()
        .rev()
        .take(window)
        .find(|entry| entry.args_hash == hash)
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
            "That is exactly the call of round {} ({call}), which failed: {}. The same call will fail the same way. Change the arguments, use another tool, or finish with a progress report. Reply with one JSON object.",
            earlier.round,
            clip(&one_line(&earlier.observation), QUOTED_CHARS)
        )
    } else {
        format!(
            "That is exactly the call of round {} ({call}), which already succeeded; its result is in the observation of round {}. Do not call it again: use that result for the next step toward the goal (for example run_code to compute from it, or write_file to save an answer), or finish if the goal is reached. Reply with one JSON object.",
            earlier.round, earlier.round
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
    use crate::tools::ToolStatus;

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
}

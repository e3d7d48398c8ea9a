//! **Read check**: a `write_file` made before any call looked at the files
//! the goal names as its inputs is answered, once, with a note instead of
//! being carried out.
//!
//! Asked to "find the lowest temperature in temperatures.csv and write it
//! to answer.txt", a small model often writes a number in round 1 that it
//! never read (`-10.0`, `12345`; EVALS.md, sections 12 and 13), and the
//! written note then invites it to finish. The loop sees that without a
//! model call: the goal names `temperatures.csv`, the file is in the
//! workspace, and no call of the run has read anything yet. The note says
//! which file to read first. A second such write is carried out, so a goal whose
//! answer does not come from its input still gets written, one round later.
//!
//! **Off by default since session 34** (EVALS.md, section 29, the helpers'
//! ablation): it acted in none of 121 runs of the dev and held-out suites
//! with today's other helpers (the input preview counts as a read and
//! shows the files whole), so it cannot help there; `--steer read_check=on`
//! turns it on.

use serde_json::Value;

use super::goal_files::base_name;
use super::{Gate, Steer, SteerContext};
use crate::decision::{Decision, FINISH};
use crate::journal::JournalEntry;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "read_check";

/// How every note of this check begins.
const MARK: &str = "not written yet:";

/// The read check as a steer: gates writes made before anything was read.
pub struct ReadCheck;

impl Steer for ReadCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "answers a run's first write with a note when the goal names input files and nothing was read yet"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        // Files the first prompt showed whole were read, without a call.
        if !cx.shown.is_empty() {
            return Gate::Go;
        }
        let unread = unread(&cx.files.inputs, decision, cx.history, cx.toolbox);
        if unread.is_empty() {
            return Gate::Go;
        }
        let target = decision.action.args.get("path").and_then(Value::as_str);
        Gate::refuse(note(&unread, target.unwrap_or("the file")))
    }
}

/// `inputs` when `decision` writes another file before any call of the
/// run read anything and the run has not been told before; empty when the
/// write may go ahead. A call read something when it succeeded and was
/// neither a write nor a listing: a `read_file` of any path, a `run_code`.
/// Any file counts, not only the goal's inputs: the answer may come through
/// files the goal does not name (one file pointing to another), and a write
/// after reading those is not a guess (EVALS.md, section 14).
pub fn unread(
    inputs: &[String],
    decision: &Decision,
    history: &[JournalEntry],
    toolbox: &Toolbox,
) -> Vec<String> {
    if toolbox.effect(&decision.action.name) != ToolEffect::Writes || inputs.is_empty() {
        return Vec::new();
    }
    let already_told = super::acted(history, NAME);
    if already_told {
        return Vec::new();
    }
    let target = decision.action.args.get("path").and_then(Value::as_str);
    let writes_an_input = target.is_some_and(|path| {
        let path = path.trim_start_matches("./");
        inputs
            .iter()
            .any(|input| input == path || base_name(input) == base_name(path))
    });
    let read_something = history.iter().any(|e| {
        let effect = toolbox.effect(&e.action);
        !e.is_error()
            && e.action != FINISH
            && effect != ToolEffect::Writes
            && effect != ToolEffect::Lists
    });
    if writes_an_input || read_something {
        return Vec::new();
    }
    inputs.to_vec()
}

/// The observation of a write that was not carried out because `unread`
/// were not looked at; `target` is the file it would have written.
pub fn note(unread: &[String], target: &str) -> String {
    let names = super::quoted_names(unread);
    let (pronoun, verb) = if unread.len() == 1 {
        ("it", "has")
    } else {
        ("them", "have")
    };
    format!(
        "{MARK} the goal's answer comes from {names}, which no call of this run {verb} read, so what you wrote would be a guess. Read {pronoun} first (read_file, or run_code to compute the answer from {pronoun}), then write `{target}` with what {pronoun} shows."
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::goal_files::tests::toolbox;
    use super::*;
    use crate::decision::Action;
    use crate::tools::ToolStatus;

    const WRITE: &str = "write_file";

    fn decision(name: &str, args: Value) -> Decision {
        Decision {
            thought: String::new(),
            action: Action {
                name: name.into(),
                args,
            },
            result: None,
            repaired: false,
        }
    }

    fn done(round: u32, action: &str, args: Value, status: ToolStatus) -> JournalEntry {
        JournalEntry {
            status,
            ..JournalEntry::new(round, "", action, args)
        }
    }

    #[test]
    fn a_write_before_the_input_was_read_is_refused_once() {
        let (_dir, tb) = toolbox(&[]);
        let inputs = vec!["temperatures.csv".to_string()];
        let write = decision(WRITE, json!({"path": "answer.txt", "content": "-10"}));
        assert_eq!(unread(&inputs, &write, &[], &tb), inputs);
        let listed = done(1, "list_dir", json!({"path": "."}), ToolStatus::Ok);
        assert_eq!(unread(&inputs, &write, &[listed], &tb), inputs);
        let note = note(&inputs, "answer.txt");
        assert!(note.starts_with("not written yet: the goal's answer comes from `temperatures.csv`, which no call of this run has read"), "{note}");
        let told = JournalEntry {
            observation: format!("{{\"status\":\"error\",\"error\":\"{note}\"}}"),
            steered_by: Some(NAME.into()),
            ..done(1, WRITE, json!({"path": "answer.txt"}), ToolStatus::Error)
        };
        assert!(unread(&inputs, &write, &[told], &tb).is_empty());
    }

    #[test]
    fn a_write_after_any_read_goes_ahead() {
        let (_dir, tb) = toolbox(&[]);
        let inputs = vec!["data/temperatures.csv".to_string()];
        let write = decision(WRITE, json!({"path": "answer.txt", "content": "-7"}));
        let read = done(
            1,
            "read_file",
            json!({"path": "data/temperatures.csv"}),
            ToolStatus::Ok,
        );
        assert!(unread(&inputs, &write, &[read], &tb).is_empty());
        let code =
            json!({"language": "python", "code": "print(min(open('data/temperatures.csv')))"});
        let ran = done(1, "run_code", code.clone(), ToolStatus::Ok);
        assert!(unread(&inputs, &write, &[ran], &tb).is_empty());
        // A call that failed saw nothing.
        let failed = done(1, "run_code", code, ToolStatus::Error);
        assert_eq!(unread(&inputs, &write, &[failed], &tb), inputs);
        // The answer came through a file the goal does not name.
        let pointer = done(
            1,
            "read_file",
            json!({"path": "vault/where.txt"}),
            ToolStatus::Ok,
        );
        assert!(unread(&inputs, &write, &[pointer], &tb).is_empty());
    }

    #[test]
    fn writing_an_input_itself_or_calling_another_tool_is_not_checked() {
        let (_dir, tb) = toolbox(&[]);
        let inputs = vec!["notes.txt".to_string()];
        let rewrite = decision(WRITE, json!({"path": "./notes.txt", "content": "x"}));
        assert!(unread(&inputs, &rewrite, &[], &tb).is_empty());
        let read = decision("read_file", json!({"path": "other.txt"}));
        assert!(unread(&inputs, &read, &[], &tb).is_empty());
        let write = decision(WRITE, json!({"path": "answer.txt", "content": "x"}));
        assert!(unread(&[], &write, &[], &tb).is_empty());
    }
}

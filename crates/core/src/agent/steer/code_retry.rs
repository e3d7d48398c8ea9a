//! **Code retry**: a `finish` that gives up right after code failed, while
//! a file the goal asks for is still missing, is asked again, at most
//! twice per run, with the error's last line and a request to fix the code;
//! that second answer may only run code.
//!
//! Why: with the worked example on, the commonest way a dev run ended
//! `incomplete` was a surrender after one error (EVALS.md, section 30: 4 of
//! 7 — a `TypeError` subtracting two `time`s, a `KeyError` on a column a
//! text file does not have, `unhashable type`), each time with most of the
//! run's rounds left and a `finish` whose result only explained the error.
//! The finish check's note ("write it now") does not say that the code
//! can be fixed, and a second `finish` then ends the run. A model that
//! still cannot fix it gives up on the next `finish`, which the finish
//! check answers as before, so a goal that cannot be done still ends with
//! its progress report.
//!
//! **Off by default** (EVALS.md, section 30): on the dev suite it acted in
//! 3 of 45 runs and none of them passed — the model retried, but fixed the
//! wrong thing and then wrote a guessed value, turning an honest
//! `incomplete` into a wrong `finished`. `--steer code_retry=on` turns it on.

use serde_json::Value;

use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::text::clip;
use crate::tools::{failure_line, ToolEffect};

/// The steer's name (switches, journals).
pub const NAME: &str = "code_retry";

/// How many times one run is asked to fix its code.
const MAX_RETRIES: usize = 2;

/// The code retry as a steer: gates a `finish` made right after failed code.
pub struct CodeRetry;

impl Steer for CodeRetry {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "asks a `finish` made right after failed code, while a goal's file is missing, to fix the code and run it again (twice per run at most)"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, reasked: bool) -> Gate {
        if reasked || !decision.is_finish() {
            return Gate::Go;
        }
        let Some(runs_code) = cx.toolbox.first_with(ToolEffect::RunsCode) else {
            return Gate::Go;
        };
        let Some(failed) = cx
            .history
            .last()
            .filter(|e| e.action == runs_code && e.is_error())
        else {
            return Gate::Go;
        };
        let asked = cx
            .history
            .iter()
            .filter(|e| e.reasked_by.as_deref() == Some(NAME))
            .count();
        if asked >= MAX_RETRIES {
            return Gate::Go;
        }
        let missing = cx.files.missing(cx.toolbox);
        if missing.is_empty() {
            return Gate::Go;
        }
        Gate::Reask {
            note: note(&missing, failed),
            among: Some(vec![runs_code.to_string()]),
        }
    }
}

/// The note: what is missing, the error the code of `failed` ended with,
/// and what to do.
fn note(missing: &[String], failed: &JournalEntry) -> String {
    let names = super::quoted_names(missing);
    let verb = if missing.len() == 1 { "is" } else { "are" };
    let error = error_line(&failed.observation)
        .map(|line| format!(" with `{}`", clip(&line, 200)))
        .unwrap_or_default();
    format!(
        "not finished yet: {names} {verb} not written, and the code of round {round} failed{error}. \
         Do not give up: fix what the error points to (look at the files' text shown above) and run the code again.",
        round = failed.round
    )
}

/// The last line of a failed run's stderr, else its envelope's error.
fn error_line(observation: &str) -> Option<String> {
    let envelope: Value = serde_json::from_str(observation).ok()?;
    failure_line(&envelope["data"], envelope["error"].as_str()).map(String::from)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::GoalFiles;
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::{ToolStatus, Toolbox, Workspace};

    fn failed_code(round: u32) -> JournalEntry {
        JournalEntry {
            status: ToolStatus::Error,
            observation: json!({"status": "error", "data": {"exit_code": 1, "stdout": "", "stderr": "Traceback (most recent call last):\n  File \"<string>\", line 7, in <module>\nKeyError: 'item'\n"}, "error": "the code exited with code 1; see stderr"}).to_string(),
            ..JournalEntry::new(round, "", "run_code", json!({"language": "python", "code": "x"}))
        }
    }

    fn finish() -> Decision {
        let reply = json!({"thought": "", "action": {"name": "finish", "args": {"result": "I cannot do it"}}});
        crate::decision::parse_decision(&reply.to_string()).unwrap()
    }

    fn gate_with(history: &[JournalEntry], with_code: bool) -> Gate {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        if with_code {
            toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
        }
        let goal = "Count the open items and write the number to open.txt.";
        let files = GoalFiles::of(goal, &toolbox);
        let cx = SteerContext {
            goal,
            files: &files,
            toolbox: &toolbox,
            history,
            repetition_window: 5,
            shown: &[],
            others: &[],
        };
        CodeRetry.gate(&cx, &finish(), false)
    }

    #[test]
    fn a_finish_right_after_failed_code_is_asked_to_fix_it() {
        let gate = gate_with(&[failed_code(1)], true);
        let Gate::Reask { note, among } = gate else {
            panic!("{gate:?}")
        };
        assert_eq!(among, Some(vec!["run_code".to_string()]));
        assert!(note.contains("`open.txt` is not written"), "{note}");
        assert!(
            note.contains("round 1 failed with `KeyError: 'item'`"),
            "{note}"
        );
    }

    #[test]
    fn it_asks_twice_per_run_and_only_right_after_failed_code() {
        let mut asked = failed_code(1);
        asked.reasked_by = Some(NAME.into());
        let mut history = vec![asked.clone(), failed_code(2)];
        assert!(matches!(gate_with(&history, true), Gate::Reask { .. }));
        history.push(JournalEntry { round: 3, ..asked });
        history.push(failed_code(4));
        assert_eq!(gate_with(&history, true), Gate::Go);
        // A successful round since, or no run_code at all: no retry.
        let read = JournalEntry::new(2, "", "read_file", json!({"path": "a"}));
        assert_eq!(gate_with(&[failed_code(1), read], true), Gate::Go);
        assert_eq!(gate_with(&[failed_code(1)], false), Gate::Go);
        assert_eq!(gate_with(&[], true), Gate::Go);
    }
}

//! What a finished subtask's last program printed and its result left out:
//! the hand-over between executors.
//!
//! An executor often computes in `run_code` and then finishes with the
//! one word the subtask asked about ("north"), while the subtask after it
//! needed the numbers the program printed (the totals per region): the
//! writer, shown only "north", wrote what it could find (EVALS.md §42).
//! The planner cannot see the rounds (it keeps no journal per executor), so
//! the loop hands the printed text over with its outcome
//! ([`super::Outcome::printed`]), and the dependent subtask's goal shows it
//! beside the result ([`super::Goal::text`]).

use serde_json::Value;

use crate::journal::JournalEntry;
use crate::text::clip;
use crate::tools::{ToolEffect, Toolbox};

/// Longest printed text handed over, in characters.
pub const PRINTED_CHARS: usize = 2000;

/// The standard output of the last program that ran without error in
/// `journal`, clipped to [`PRINTED_CHARS`], when it printed something that
/// `result` does not already hold (compared with runs of whitespace made
/// one space). `None` when no program ran, the last one failed, or the
/// result says it all.
pub fn left_out(journal: &[JournalEntry], toolbox: &Toolbox, result: &str) -> Option<String> {
    let entry = journal
        .iter()
        .rev()
        .find(|e| !e.is_error() && toolbox.effect(&e.action) == ToolEffect::RunsCode)?;
    let stdout = match &entry.data {
        Some(data) => stdout_of(data)?,
        // Data too long to keep: the observation, when it is whole JSON.
        None => stdout_of(
            serde_json::from_str::<Value>(&entry.observation)
                .ok()?
                .get("data")?,
        )?,
    };
    let printed = stdout.trim();
    if printed.is_empty() || squeezed(result).contains(&squeezed(printed)) {
        return None;
    }
    Some(clip(printed, PRINTED_CHARS))
}

/// A program's standard output, when it exited cleanly.
fn stdout_of(data: &Value) -> Option<String> {
    if data.get("exit_code").and_then(Value::as_i64).unwrap_or(0) != 0 {
        return None;
    }
    data.get("stdout")?.as_str().map(str::to_string)
}

/// `text` with each run of whitespace made one space.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::Workspace;

    fn ran(round: u32, data: Value) -> JournalEntry {
        JournalEntry {
            observation: json!({"status": "ok", "data": data, "error": null}).to_string(),
            data: Some(data),
            ..JournalEntry::new(round, "", "run_code", json!({"code": "print(1)"}))
        }
    }

    /// The file tools and `run_code` (nothing here runs a program).
    fn toolbox() -> Toolbox {
        let dir = std::env::temp_dir();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(&dir).unwrap());
        toolbox.register(RunCode::new(SandboxConfig::new(&dir)));
        toolbox
    }

    #[test]
    fn the_last_clean_programs_output_is_handed_over_when_the_result_lacks_it() {
        let journal = vec![
            ran(1, json!({"exit_code": 0, "stdout": "first\n"})),
            ran(
                2,
                json!({"exit_code": 0, "stdout": "north 1200\nsouth  800\n"}),
            ),
        ];
        let toolbox = toolbox();
        assert_eq!(
            left_out(&journal, &toolbox, "north").as_deref(),
            Some("north 1200\nsouth  800")
        );
        // A result that already holds it (whitespace aside) needs nothing.
        assert_eq!(
            left_out(&journal, &toolbox, "Totals: north 1200 south 800"),
            None
        );
    }

    #[test]
    fn a_failed_program_or_none_at_all_hands_nothing_over() {
        let toolbox = toolbox();
        let failed = vec![ran(1, json!({"exit_code": 1, "stdout": "partial"}))];
        assert_eq!(left_out(&failed, &toolbox, "done"), None);
        let mut read = JournalEntry::new(1, "", "read_file", json!({"path": "a.txt"}));
        read.data = Some(json!({"stdout": "not a program"}));
        assert_eq!(left_out(&[read], &toolbox, "done"), None);
        let silent = vec![ran(1, json!({"exit_code": 0, "stdout": "  \n"}))];
        assert_eq!(left_out(&silent, &toolbox, "done"), None);
    }

    #[test]
    fn output_too_long_to_keep_is_read_from_the_observation_and_clipped() {
        let long = "x".repeat(PRINTED_CHARS * 2);
        let mut entry = ran(1, json!({"exit_code": 0, "stdout": long}));
        entry.data = None;
        let handed = left_out(&[entry], &toolbox(), "done").unwrap();
        assert!(
            handed.chars().count() <= PRINTED_CHARS + 40,
            "{}",
            handed.len()
        );
    }
}

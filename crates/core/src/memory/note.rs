//! The text a finished run leaves in memory: what was asked, what came of
//! it, and the observations the answer rests on, clipped so one memory
//! stays a paragraph and a recalled handful fits in a prompt.

use crate::text::{clip, one_line};

/// The most characters kept of the goal.
pub const MAX_GOAL_CHARS: usize = 500;
/// The most characters kept of the result.
pub const MAX_RESULT_CHARS: usize = 1500;
/// The most characters kept of each cited observation.
pub const MAX_OBSERVATION_CHARS: usize = 300;
/// The most cited observations kept (the first ones).
pub const MAX_OBSERVATIONS: usize = 5;

/// The memory text for a run that finished `goal` with `result`, citing
/// `cited_observations`:
///
/// ```text
/// Task: <goal, on one line, ≤ 500 chars>
/// Result: <result, ≤ 1500 chars>
/// Evidence:
/// - <observation, on one line, ≤ 300 chars>
/// ```
///
/// Blank observations are dropped, and so is the `Evidence:` block when
/// none is left; at most [`MAX_OBSERVATIONS`] are kept.
pub fn finished_run_note(goal: &str, result: &str, cited_observations: &[String]) -> String {
    let mut note = format!(
        "Task: {}\nResult: {}",
        clip(&one_line(goal), MAX_GOAL_CHARS),
        clip(result.trim(), MAX_RESULT_CHARS)
    );
    let evidence: Vec<String> = cited_observations
        .iter()
        .map(|observation| one_line(observation))
        .filter(|observation| !observation.is_empty())
        .take(MAX_OBSERVATIONS)
        .map(|observation| format!("- {}", clip(&observation, MAX_OBSERVATION_CHARS)))
        .collect();
    if !evidence.is_empty() {
        note.push_str("\nEvidence:\n");
        note.push_str(&evidence.join("\n"));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_holds_goal_result_and_clipped_evidence() {
        let long = "x".repeat(1000);
        let note = finished_run_note(
            "Count the lines\nof notes.txt",
            "  It has 42 lines. ",
            &["read_file notes.txt:\n42 lines".into(), "  ".into(), long],
        );
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines[0], "Task: Count the lines of notes.txt");
        assert_eq!(lines[1], "Result: It has 42 lines.");
        assert_eq!(lines[2], "Evidence:");
        assert_eq!(lines[3], "- read_file notes.txt: 42 lines");
        assert_eq!(lines[4].chars().count(), 2 + MAX_OBSERVATION_CHARS + 1);
        assert!(lines[4].ends_with('…'));
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_note_without_evidence_has_no_evidence_block() {
        let note = finished_run_note("goal", "done", &[]);
        assert_eq!(note, "Task: goal\nResult: done");
        let many: Vec<String> = (0..9).map(|i| format!("obs {i}")).collect();
        let note = finished_run_note("goal", "done", &many);
        assert_eq!(
            note.lines().filter(|l| l.starts_with("- ")).count(),
            MAX_OBSERVATIONS
        );
    }
}

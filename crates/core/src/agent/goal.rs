//! [`Goal`]: what a run is asked to do, kept apart from what frames it.
//!
//! A plain run's goal is its text. An executor's goal is one subtask of a
//! larger task: the subtask's own work, the task it is part of, and the
//! results of the subtasks it builds on. The model sees all three
//! ([`Goal::text`]); the steers read files only from the work itself, so an
//! executor is never held to files that other subtasks write. The files
//! that other subtasks still to run or running write ([`Goal::others`])
//! are theirs: the run may read them, and with the `owned_files` steer on
//! a write to one is refused with whose it is (see
//! [`super::steer::owned_files`]).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::text::clip;

/// Longest dependency result shown in an executor's goal, in characters.
pub const INPUT_CHARS: usize = 4000;

/// What a run is asked to do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    /// The work itself: the files it names are what the run must write
    /// (and may read first).
    pub work: String,
    /// The larger task this run is one subtask of (orientation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_of: Option<String>,
    /// Results of the subtasks this one builds on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<GoalInput>,
    /// Files that other subtasks of the same task, pending or running,
    /// write (not shown to the model; see [`super::steer::owned_files`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<OwnedFile>,
}

/// A file that another subtask of the same task writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedFile {
    /// The workspace path, as the plan names it.
    pub path: String,
    /// The id of the subtask that writes it.
    pub subtask: String,
    /// The role that runs that subtask.
    pub role: String,
}

/// The result of a subtask another one builds on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalInput {
    /// The subtask's id.
    pub id: String,
    /// The role that ran it.
    pub role: String,
    /// What it returned.
    pub result: String,
    /// The workspace files it wrote (as its plan named them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// What its last program printed and its result left out (see
    /// [`super::printed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printed: Option<String>,
}

impl Goal {
    /// A goal that is only its work.
    pub fn new(work: impl Into<String>) -> Self {
        Self {
            work: work.into(),
            ..Self::default()
        }
    }

    /// This goal as one subtask of `task`.
    pub fn part_of(mut self, task: impl Into<String>) -> Self {
        self.part_of = Some(task.into());
        self
    }

    /// This goal, building on the result of another subtask.
    pub fn with_input(mut self, input: GoalInput) -> Self {
        self.inputs.push(input);
        self
    }

    /// This goal, with `file` left to the other subtask that writes it.
    pub fn with_other(mut self, file: OwnedFile) -> Self {
        self.others.push(file);
        self
    }

    /// The text the model is given: the work, then the larger task, then
    /// each input (clipped to [`INPUT_CHARS`]).
    pub fn text(&self) -> String {
        let mut text = self.work.clone();
        if let Some(task) = &self.part_of {
            let _ = write!(text, "\n\nThis is one subtask of a larger task: {task}");
        }
        if !self.inputs.is_empty() {
            text.push_str("\n\nResults of the subtasks this one depends on:");
            for input in &self.inputs {
                let result = clip(&input.result, INPUT_CHARS);
                let _ = write!(text, "\n[{} — {}] {}", input.id, input.role, result);
                if let Some(printed) = &input.printed {
                    let _ = write!(text, "\n(its last program printed:\n{printed})");
                }
                if !input.files.is_empty() {
                    let _ = write!(text, "\n(its files: {})", input.files.join(", "));
                }
            }
        }
        text
    }
}

impl From<&str> for Goal {
    fn from(work: &str) -> Self {
        Goal::new(work)
    }
}

impl From<&String> for Goal {
    fn from(work: &String) -> Self {
        Goal::new(work.as_str())
    }
}

impl From<String> for Goal {
    fn from(work: String) -> Self {
        Goal::new(work)
    }
}

impl From<&Goal> for Goal {
    fn from(goal: &Goal) -> Self {
        goal.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_goal_is_its_work() {
        assert_eq!(Goal::from("Count the rows.").text(), "Count the rows.");
    }

    #[test]
    fn a_subtask_shows_its_task_and_inputs_after_its_work() {
        let goal = Goal::new("Write owners.md.")
            .part_of("Read notes.txt and write owners.md.")
            .with_input(GoalInput {
                id: "s1".into(),
                role: "analyst".into(),
                result: "ada, bob".into(),
                files: vec![],
                printed: None,
            });
        assert_eq!(
            goal.text(),
            "Write owners.md.\n\nThis is one subtask of a larger task: Read notes.txt and write owners.md.\n\nResults of the subtasks this one depends on:\n[s1 — analyst] ada, bob"
        );
        // Only the work names the run's files.
        assert_eq!(goal.work, "Write owners.md.");
        let with_files = Goal::new("Write the summary.").with_input(GoalInput {
            id: "s1".into(),
            role: "analyst".into(),
            result: "totals computed".into(),
            files: vec!["totals.csv".into()],
            printed: None,
        });
        assert!(
            with_files
                .text()
                .ends_with("[s1 — analyst] totals computed\n(its files: totals.csv)"),
            "{}",
            with_files.text()
        );
    }

    #[test]
    fn what_a_dependency_printed_is_shown_after_its_result() {
        let goal = Goal::new("Write report.md.").with_input(GoalInput {
            id: "s1".into(),
            role: "analyst".into(),
            result: "north".into(),
            files: vec![],
            printed: Some("north 1200\nsouth 800".into()),
        });
        assert!(
            goal.text().ends_with(
                "[s1 — analyst] north\n(its last program printed:\nnorth 1200\nsouth 800)"
            ),
            "{}",
            goal.text()
        );
    }

    #[test]
    fn a_plain_goal_travels_as_its_work_alone() {
        let json = serde_json::to_string(&Goal::new("x")).unwrap();
        assert_eq!(json, r#"{"work":"x"}"#);
        let back: Goal = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Goal::new("x"));
    }
}

//! **Finish check**: a `finish` while a file the goal names is still
//! missing from the workspace is answered, once, with a note instead of
//! ending the run.
//!
//! Small models often compute the right value and then end the run with
//! it in `finish`'s result, never writing the file the goal asked for
//! (the value printed by `run_code`, or a `write_file()` call inside the
//! code that failed; EVALS.md, section 12). The loop sees that without a
//! model call: it reads the file names in the goal (`answer.txt`,
//! `data/report.md`) and looks them up in the workspace. A name missing
//! there may be an output not written yet, or an input that is elsewhere;
//! the note says both, and a second `finish` ends the run whatever the
//! workspace holds, so a goal that cannot be done still ends with its
//! progress report.

use super::{Gate, GoalFiles, Steer, SteerContext};
use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::tools::Toolbox;

/// The steer's name (switches, journals).
pub const NAME: &str = "finish_check";

/// The finish check as a steer: gates `finish`, and says in the closing
/// request when the goal's files are all written.
pub struct FinishCheck;

impl Steer for FinishCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "answers the first `finish` with a note while a file the goal asks for is missing; says when all are written"
    }

    fn closing(&self, cx: &SteerContext<'_>) -> String {
        if cx.history.last().is_some_and(JournalEntry::is_error) {
            return String::new();
        }
        written_note(&cx.files.outputs, cx.toolbox)
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if !decision.is_finish() {
            return Gate::Go;
        }
        let missing = missing_files(cx.files, cx.toolbox, cx.history);
        if missing.is_empty() {
            Gate::Go
        } else {
            Gate::refuse(note(&missing))
        }
    }
}

/// Of the goal's outputs, those still missing from `toolbox`'s workspace,
/// when the run should be told before it finishes: the toolbox has a tool
/// that writes files and no earlier `finish` of this run was answered with
/// the note.
pub fn missing_files(
    files: &GoalFiles,
    toolbox: &Toolbox,
    history: &[JournalEntry],
) -> Vec<String> {
    let already_told = super::acted(history, NAME);
    if already_told {
        return Vec::new();
    }
    files.missing(toolbox)
}

/// What the closing request says once every one of `outputs` (the files
/// the goal names that were absent when the run started) is in the
/// workspace; empty while one is still missing, or when there are none.
/// Small models keep writing a file that is already right instead of
/// finishing (EVALS.md, section 12).
pub fn written_note(outputs: &[String], toolbox: &Toolbox) -> String {
    let Some(workspace) = toolbox.workspace() else {
        return String::new();
    };
    let all_there = !outputs.is_empty()
        && outputs
            .iter()
            .all(|name| workspace.resolve(name).is_ok_and(|path| path.exists()));
    if !all_there {
        return String::new();
    }
    // The reply is spelled out: a small model that ignores advice in words
    // still copies a JSON template.
    let reply = format!(
        "{{\"thought\": \"{} written\", \"action\": {{\"name\": \"finish\", \"args\": {{\"result\": \"<the answer itself>\"}}}}}}",
        outputs.join(", ")
    );
    reached_note(outputs, "", "written", "Write", &reply)
}

/// The sentence that says the goal's files `names` are `done` now
/// ("written", "changed"; `kind` follows "file" in the text, " to change")
/// and spells out `reply`, the `finish` that ends the run; `redo` starts
/// the last sentence ("Write them again only if they are wrong."). Shared
/// by the finish check and the edit check.
pub fn reached_note(names: &[String], kind: &str, done: &str, redo: &str, reply: &str) -> String {
    let quoted = super::quoted_names(names);
    let one = names.len() == 1;
    format!(
        "The goal's {}{kind} ({quoted}) {} {done} now. If {} what the goal asks for, the goal is reached: reply {reply}. {redo} {} again only if {} wrong.",
        if one { "file" } else { "files" },
        if one { "is" } else { "are" },
        if one { "it holds" } else { "they hold" },
        if one { "it" } else { "them" },
        if one { "it is" } else { "they are" },
    )
}

/// The observation of a `finish` that was not accepted because of `missing`.
pub fn note(missing: &[String]) -> String {
    let names = super::quoted_names(missing);
    let (verb, subject, object) = if missing.len() == 1 {
        ("is", "it", "it")
    } else {
        ("are", "they", "them")
    };
    format!(
        "not finished yet: the goal names {names}, which {verb} not in the workspace. If the goal asks you to write {object}, write {object} now (write_file) with what the goal asks {object} to hold, then finish. If {subject} should already exist, look for {object} (list_dir)."
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    fn toolbox(files: &[&str]) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    #[test]
    fn only_the_names_missing_from_the_workspace_are_reported() {
        let (_dir, toolbox) = toolbox(&["data.csv"]);
        let goal = "Sum data.csv and write the total to answer.txt.";
        let expected = GoalFiles::of(goal, &toolbox);
        assert_eq!(expected.outputs, vec!["answer.txt"]);
        assert_eq!(missing_files(&expected, &toolbox, &[]), vec!["answer.txt"]);
        let (_dir, written) = self::toolbox(&["data.csv", "answer.txt"]);
        assert!(missing_files(&expected, &written, &[]).is_empty());
    }

    fn answer() -> GoalFiles {
        GoalFiles {
            outputs: vec!["answer.txt".into()],
            inputs: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn the_run_is_told_once() {
        let (_dir, toolbox) = toolbox(&[]);
        let told = JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(3, "done", crate::decision::FINISH, json!({"result": "42"}))
        };
        assert!(missing_files(&answer(), &toolbox, &[told]).is_empty());
    }

    #[test]
    fn a_toolbox_that_cannot_write_is_never_told() {
        let (_dir, toolbox) = toolbox(&[]);
        let reader = std::sync::Arc::new(toolbox).subset(&["read_file"]);
        assert!(missing_files(&answer(), &reader, &[]).is_empty());
    }

    #[test]
    fn the_written_note_comes_once_every_expected_output_is_there() {
        let (dir, toolbox) = toolbox(&["data.csv"]);
        let goal = "Sum data.csv and write the total to answer.txt and the rows to rows.txt.";
        let outputs = super::super::GoalFiles::of(goal, &toolbox).outputs;
        assert_eq!(outputs, vec!["answer.txt", "rows.txt"]);
        assert_eq!(written_note(&outputs, &toolbox), "");
        std::fs::write(dir.path().join("answer.txt"), "3").unwrap();
        assert_eq!(written_note(&outputs, &toolbox), "");
        std::fs::write(dir.path().join("rows.txt"), "3").unwrap();
        assert_eq!(
            written_note(&outputs, &toolbox),
            "The goal's files (`answer.txt`, `rows.txt`) are written now. If they hold what the goal asks for, the goal is reached: reply {\"thought\": \"answer.txt, rows.txt written\", \"action\": {\"name\": \"finish\", \"args\": {\"result\": \"<the answer itself>\"}}}. Write them again only if they are wrong."
        );
        assert_eq!(
            written_note(&outputs[..1], &toolbox),
            "The goal's file (`answer.txt`) is written now. If it holds what the goal asks for, the goal is reached: reply {\"thought\": \"answer.txt written\", \"action\": {\"name\": \"finish\", \"args\": {\"result\": \"<the answer itself>\"}}}. Write it again only if it is wrong."
        );
        // A goal that names no file to write gets no note.
        assert_eq!(written_note(&[], &toolbox), "");
    }

    #[test]
    fn the_note_names_the_files() {
        let one = note(&["answer.txt".into()]);
        assert_eq!(one, "not finished yet: the goal names `answer.txt`, which is not in the workspace. If the goal asks you to write it, write it now (write_file) with what the goal asks it to hold, then finish. If it should already exist, look for it (list_dir).");
        let two = note(&["a.txt".into(), "b.txt".into()]);
        assert!(two.contains("`a.txt`, `b.txt`, which are not"), "{two}");
        assert!(
            two.ends_with("If they should already exist, look for them (list_dir)."),
            "{two}"
        );
    }
}

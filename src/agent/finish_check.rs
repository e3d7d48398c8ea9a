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

use crate::decision::FINISH;
use crate::journal::JournalEntry;
use crate::tools::Toolbox;

/// The file names a goal mentions, in order, once each: runs of path
/// characters (letters, digits, `_-./`) that end in a `.` and an extension
/// of 2 to 8 letters or digits starting with a letter. URLs and absolute
/// paths are left out (they are not workspace files), and so are
/// `e.g.`-style abbreviations, version numbers, and names given as an
/// example of a form ("its name (for example notes.md)").
pub fn named_files(goal: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let mut rest = goal;
    while let Some(start) = rest.find(is_path_char) {
        let tail = &rest[start..];
        let end = tail.find(|c: char| !is_path_char(c)).unwrap_or(tail.len());
        let token = tail[..end].trim_end_matches(['.', '/']);
        let after_scheme = rest[..start].ends_with(':');
        let example = is_example(&goal[..goal.len() - rest.len() + start]);
        rest = &tail[end..];
        if after_scheme || example || token.starts_with('/') || token.contains("..") {
            continue;
        }
        let Some((stem, extension)) = token.rsplit_once('.') else {
            continue;
        };
        let extension_ok = (2..=8).contains(&extension.len())
            && extension.starts_with(|c: char| c.is_ascii_alphabetic())
            && extension.chars().all(|c| c.is_ascii_alphanumeric());
        let stem_ok = stem.rsplit('/').next().is_some_and(|name| !name.is_empty());
        if extension_ok && stem_ok && !names.iter().any(|n| n == token) {
            names.push(token.to_string());
        }
    }
    names
}

/// Whether the text before a file name introduces it as an example of a
/// form rather than a file of the task: "(for example notes.md)",
/// "example: a.txt",
/// "such as report.md", "例如 a.txt".
fn is_example(before: &str) -> bool {
    let before = before.trim_end_matches([' ', '(', ',', ':', '"', '\'', '`', '：', '，', '（']);
    let lower = before.to_lowercase();
    [
        "example",
        "for instance",
        "such as",
        "e.g.",
        "e.g",
        "like",
        "例如",
        "比如",
    ]
    .iter()
    .any(|cue| lower.ends_with(cue))
}

/// Of `outputs` (see [`outputs`]), those still missing from `toolbox`'s
/// workspace, when the run should be told before it finishes: the toolbox
/// can write files (`write_file`) and no earlier `finish` of this run was
/// answered with the note.
pub fn missing_files(
    outputs: &[String],
    toolbox: &Toolbox,
    history: &[JournalEntry],
) -> Vec<String> {
    let already_told = history.iter().any(|e| e.action == FINISH && e.is_error());
    if already_told || !toolbox.names().contains(&"write_file") {
        return Vec::new();
    }
    let Some(workspace) = toolbox.workspace() else {
        return Vec::new();
    };
    outputs
        .iter()
        .filter(|name| workspace.lacks(name))
        .cloned()
        .collect()
}

/// The files `goal` names that the run is expected to write, taken before
/// the first round: those missing from `toolbox`'s workspace, leaving out
/// a name that a file elsewhere in the workspace carries (`settings.ini`
/// when the file is `conf/settings.ini`: an input the goal placed wrongly,
/// not an output). Empty without a workspace.
pub fn outputs(goal: &str, toolbox: &Toolbox) -> Vec<String> {
    let Some(workspace) = toolbox.workspace() else {
        return Vec::new();
    };
    named_files(goal)
        .into_iter()
        .filter(|name| {
            let absent = workspace.lacks(name);
            let base = name.rsplit('/').next().unwrap_or(name);
            absent && !workspace.holds_file_named(base)
        })
        .collect()
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
    let names = outputs
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let one = outputs.len() == 1;
    // The reply is spelled out: a small model that ignores advice in words
    // still copies a JSON template.
    format!(
        "The goal's {} ({names}) {} written now. If {} what the goal asks for, the goal is reached: reply {{\"thought\": \"{} written\", \"action\": {{\"name\": \"finish\", \"args\": {{\"result\": \"<the answer itself>\"}}}}}}. Write {} again only if {} wrong.",
        if one { "file" } else { "files" },
        if one { "is" } else { "are" },
        if one { "it holds" } else { "they hold" },
        names.replace('`', ""),
        if one { "it" } else { "them" },
        if one { "it is" } else { "they are" },
    )
}

/// The observation of a `finish` that was not accepted because of `missing`.
pub fn note(missing: &[String]) -> String {
    let names = missing
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
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

    #[test]
    fn file_names_are_read_from_the_goal() {
        assert_eq!(
            named_files("Count the rows of data/users.csv whose role is admin. Write just the number to answer.txt."),
            vec!["data/users.csv", "answer.txt"]
        );
        assert_eq!(
            named_files(
                "读取 data/scores.csv，找出分数最高的学生，把他的名字写入 answer.txt（只写名字）。"
            ),
            vec!["data/scores.csv", "answer.txt"]
        );
        assert_eq!(
            named_files("Write a script primes.py, run it, then write the number to answer.txt and answer.txt again."),
            vec!["primes.py", "answer.txt"]
        );
    }

    #[test]
    fn urls_versions_abbreviations_and_outside_paths_are_not_files() {
        assert!(named_files("Fetch https://example.com/data.csv (e.g. with http_fetch), version 1.2.3, not /etc/passwd.txt or ../up.txt").is_empty());
        assert!(named_files("List the folder photos/ and say i.e. nothing").is_empty());
    }

    #[test]
    fn names_given_as_examples_are_not_files_of_the_task() {
        assert_eq!(
            named_files("Write just that file's name (for example notes.md) to answer.txt."),
            vec!["answer.txt"]
        );
        assert_eq!(
            named_files(
                "Name it like report.md, or such as `summary.md`; e.g. a.txt. Then read b.txt."
            ),
            vec!["b.txt"]
        );
        assert_eq!(
            named_files("把文件名（例如 notes.md）写入 answer.txt"),
            vec!["answer.txt"]
        );
    }

    #[test]
    fn a_named_file_found_elsewhere_in_the_workspace_is_an_input_not_an_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("conf")).unwrap();
        std::fs::write(dir.path().join("conf/settings.ini"), "timeout = 45").unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let goal =
            "Read settings.ini in the workspace root and write the value of timeout to answer.txt.";
        assert_eq!(outputs(goal, &toolbox), vec!["answer.txt"]);
    }

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
        let expected = outputs(goal, &toolbox);
        assert_eq!(expected, vec!["answer.txt"]);
        assert_eq!(missing_files(&expected, &toolbox, &[]), vec!["answer.txt"]);
        let (_dir, written) = self::toolbox(&["data.csv", "answer.txt"]);
        assert!(missing_files(&expected, &written, &[]).is_empty());
    }

    #[test]
    fn the_run_is_told_once() {
        let (_dir, toolbox) = toolbox(&[]);
        let told = JournalEntry {
            status: ToolStatus::Error,
            ..JournalEntry::new(3, "done", FINISH, json!({"result": "42"}))
        };
        assert!(missing_files(&["answer.txt".into()], &toolbox, &[told]).is_empty());
    }

    #[test]
    fn a_toolbox_that_cannot_write_is_never_told() {
        let (_dir, toolbox) = toolbox(&[]);
        let reader = std::sync::Arc::new(toolbox).subset(&["read_file"]);
        assert!(missing_files(&["answer.txt".into()], &reader, &[]).is_empty());
    }

    #[test]
    fn the_written_note_comes_once_every_expected_output_is_there() {
        let (dir, toolbox) = toolbox(&["data.csv"]);
        let goal = "Sum data.csv and write the total to answer.txt and the rows to rows.txt.";
        let outputs = outputs(goal, &toolbox);
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

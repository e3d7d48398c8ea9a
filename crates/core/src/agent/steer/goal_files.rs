//! **The goal's files**, read once before round 1 for every steer that
//! needs them: the names the goal mentions, split into the files the run is
//! expected to write (absent when it starts) and the files it is expected
//! to read (present). A pure function of the goal and the workspace.

use crate::tools::{ToolEffect, Toolbox};

/// The files a goal names, split by what the workspace held before the
/// first round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoalFiles {
    /// Named files absent before round 1: what the run should write.
    pub outputs: Vec<String>,
    /// Named files present before round 1 (at the path or under the same
    /// name elsewhere), then the files of the folders it names (see
    /// [`super::goal_folders`]): what the run should read.
    pub inputs: Vec<String>,
    /// Named inputs the goal asks the run to change in place, each with a
    /// hash of its bytes before round 1 (see [`super::edit_check`]).
    pub edits: Vec<super::edit_check::Edit>,
}

impl GoalFiles {
    /// The files `goal` names, looked up in `toolbox`'s workspace (none
    /// without a workspace).
    pub fn of(goal: &str, toolbox: &Toolbox) -> Self {
        let outputs = outputs(goal, toolbox);
        let named = inputs(goal, toolbox, &outputs);
        let targets = super::edit_check::targets(goal, &named, &outputs);
        let edits = super::edit_check::snapshot(&targets, toolbox);
        let inputs = with_folders(named, goal, toolbox);
        Self {
            outputs,
            inputs,
            edits,
        }
    }

    /// The outputs still missing from `toolbox`'s workspace (none without
    /// a workspace, or without a tool that could have written them).
    pub fn missing(&self, toolbox: &Toolbox) -> Vec<String> {
        let Some(workspace) = toolbox.workspace() else {
            return Vec::new();
        };
        if toolbox.first_with(ToolEffect::Writes).is_none() {
            return Vec::new();
        }
        self.outputs
            .iter()
            .filter(|name| workspace.lacks(name))
            .cloned()
            .collect()
    }
}

/// The path (without a leading `./`) and the content of `decision` when
/// it writes one of `outputs` (its `path` and `content` args): the write
/// that the checks on a goal's answer look at. `None` for anything else.
pub fn output_write<'d>(
    outputs: &[String],
    decision: &'d crate::decision::Decision,
) -> Option<(&'d str, &'d str)> {
    let args = &decision.action.args;
    let path = args.get("path")?.as_str()?.trim_start_matches("./");
    let content = args.get("content")?.as_str()?;
    outputs
        .iter()
        .any(|output| output == path)
        .then_some((path, content))
}

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

/// The files `goal` names that are in `toolbox`'s workspace before the
/// first round, at the named path or under the same name elsewhere: what
/// the run is expected to read. `outputs` (see [`outputs`]) are left out.
pub fn inputs(goal: &str, toolbox: &Toolbox, outputs: &[String]) -> Vec<String> {
    let Some(workspace) = toolbox.workspace() else {
        return Vec::new();
    };
    named_files(goal)
        .into_iter()
        .filter(|name| !outputs.contains(name))
        .filter(|name| {
            workspace.resolve(name).is_ok_and(|path| path.is_file())
                || workspace.holds_file_named(base_name(name))
        })
        .collect()
}

/// `named` (the goal's named inputs, see [`inputs`]) followed by the files
/// of the folders `goal` names that `named` does not hold already.
pub fn with_folders(mut named: Vec<String>, goal: &str, toolbox: &Toolbox) -> Vec<String> {
    for file in super::goal_folders::files(goal, toolbox) {
        if !named.contains(&file) {
            named.push(file);
        }
    }
    named
}

/// The last part of a workspace path.
pub(crate) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::Workspace;

    const GOAL: &str =
        "Find the lowest temperature in temperatures.csv. Write just that number to answer.txt.";

    /// The file tools over a workspace holding `files` (each "x").
    pub(crate) fn toolbox(files: &[&str]) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

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
    #[test]
    fn a_named_folder_s_files_are_inputs_but_not_files_to_change() {
        let (_dir, toolbox) = toolbox(&["teams/a.txt", "teams/b.txt"]);
        let files = GoalFiles::of(
            "The files in teams/ list names. Fix nothing; write the count to people.txt.",
            &toolbox,
        );
        assert_eq!(files.outputs, ["people.txt"]);
        assert_eq!(files.inputs, ["teams/a.txt", "teams/b.txt"]);
        let (_dir, toolbox) = super::tests::toolbox(&["solo/list.txt"]);
        let one = GoalFiles::of("Update the file in solo/ so it is sorted.", &toolbox);
        assert_eq!(one.inputs, ["solo/list.txt"]);
        assert!(
            one.edits.is_empty(),
            "a folder's file is not the goal's one file to change"
        );
    }

    #[test]
    fn the_inputs_are_the_named_files_that_exist() {
        let (_dir, toolbox) = toolbox(&["temperatures.csv", "conf/settings.ini"]);
        assert_eq!(
            inputs(GOAL, &toolbox, &["answer.txt".into()]),
            vec!["temperatures.csv"]
        );
        let misplaced = "Read settings.ini and write the timeout to answer.txt.";
        assert_eq!(inputs(misplaced, &toolbox, &[]), vec!["settings.ini"]);
    }
}

//! **Files named but not read**: the workspace files that the goal or the
//! results of earlier rounds named (a path in a file's text or a
//! program's output, a folder's entries, a search's matches) and that no
//! round has read yet. Where a run that keeps repeating itself can go
//! next.
//!
//! Why: in the dev suite's journals (EVALS.md, section 37) every run
//! ended by the repetition guard was one step short of a file it had
//! been shown the name of: the pointer file's target (`vault/where.txt`
//! held `vault/deep/code-7.txt`, read never, `vault/where.txt` five
//! times), the two unread files of a folder it had listed. Told only "take
//! a different step", the model took another earlier step again.

use serde_json::Value;

use super::goal_files::{base_name, named_files};
use super::SteerContext;
use crate::journal::JournalEntry;
use crate::tools::ToolEffect;

/// The most files a note names.
pub const MAX_NAMED: usize = 4;

/// The files the goal's inputs and earlier results name, in that order
/// (the latest results first), that are files of the workspace, that no
/// round read (a read of the file itself, or a program whose code names
/// it), that the first prompt did not show whole, and that are not
/// outputs the goal asks for. At most [`MAX_NAMED`].
pub fn unread(cx: &SteerContext<'_>) -> Vec<String> {
    let Some(workspace) = cx.toolbox.workspace() else {
        return Vec::new();
    };
    let named = cx
        .files
        .inputs
        .iter()
        .cloned()
        .chain(cx.history.iter().rev().flat_map(named_by));
    let mut unread: Vec<String> = Vec::new();
    for name in named {
        let name = name.trim_start_matches("./").to_string();
        if unread.contains(&name)
            || cx.files.outputs.contains(&name)
            || cx.shown.contains(&name)
            || was_read(cx, &name)
            || !workspace.resolve(&name).is_ok_and(|path| path.is_file())
        {
            continue;
        }
        unread.push(name);
        if unread.len() == MAX_NAMED {
            break;
        }
    }
    unread
}

/// The sentence that names `unread` (empty for none).
pub fn sentence(unread: &[String]) -> String {
    if unread.is_empty() {
        return String::new();
    }
    let names: Vec<String> = unread.iter().map(|n| format!("`{n}`")).collect();
    format!(
        " Files named so far that no round has read yet: {}.",
        names.join(", ")
    )
}

/// The tool that reads one file by its `path` (the built-in's name).
pub const READ_TOOL: &str = "read_file";

/// The reply that reads the first of `unread`, spelled out as the write
/// offer spells out its write (a small model copies a reply it is shown
/// far more often than it follows a list of names), when `toolbox` has
/// [`READ_TOOL`] and `not` (the action the answer may not use) is not it.
/// Empty otherwise.
pub fn read_offer(toolbox: &crate::tools::Toolbox, unread: &[String], not: &str) -> String {
    let Some(first) = unread.first() else {
        return String::new();
    };
    if not == READ_TOOL || !toolbox.names().contains(&READ_TOOL) {
        return String::new();
    }
    let reply = serde_json::json!({
        "thought": format!("{first} is named but not read yet"),
        "action": {"name": READ_TOOL, "args": {"path": first}},
    });
    format!(" If reading `{first}` is the next step, reply {reply}")
}

/// The workspace paths `entry`'s result names, when it succeeded: a
/// file's text or a program's output (the file names in it), a folder's
/// entries (joined to the folder), a search's matching files.
fn named_by(entry: &JournalEntry) -> Vec<String> {
    let Some(data) = entry.data.as_ref().filter(|_| !entry.is_error()) else {
        return Vec::new();
    };
    match data {
        Value::String(text) => named_files(text),
        Value::Object(object) => {
            if let (Some(folder), Some(entries)) = (
                object.get("path").and_then(Value::as_str),
                object.get("entries").and_then(Value::as_array),
            ) {
                let folder = folder.trim_start_matches("./").trim_end_matches('/');
                return entries
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|e| match folder {
                        "" | "." => e.to_string(),
                        _ => format!("{folder}/{e}"),
                    })
                    .collect();
            }
            if let Some(matches) = object.get("matches").and_then(Value::as_array) {
                return matches
                    .iter()
                    .filter_map(|m| m.get("path").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
            }
            object
                .get("stdout")
                .and_then(Value::as_str)
                .map(named_files)
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Whether a round read `name`: a read that returned its text, or a
/// program that ran and names it (or its base name) in its code.
fn was_read(cx: &SteerContext<'_>, name: &str) -> bool {
    cx.history.iter().filter(|e| !e.is_error()).any(|entry| {
        let path = entry.args.get("path").and_then(Value::as_str);
        match cx.toolbox.effect(&entry.action) {
            ToolEffect::Reads => {
                path.map(|p| p.trim_start_matches("./")) == Some(name)
                    && matches!(entry.data, Some(Value::String(_)))
            }
            ToolEffect::RunsCode => entry
                .args
                .get("code")
                .and_then(Value::as_str)
                .is_some_and(|code| code.contains(name) || code.contains(base_name(name))),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::{test_context, GoalFiles};
    use crate::tools::builtin::RunCode;
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::Toolbox;

    /// The goal-files tests' workspace, with `run_code` too.
    fn workspace(files: &[&str]) -> (tempfile::TempDir, Toolbox) {
        let (dir, mut toolbox) = crate::agent::steer::goal_files::tests::toolbox(files);
        toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
        (dir, toolbox)
    }

    fn done(round: u32, action: &str, args: Value, data: Value) -> JournalEntry {
        JournalEntry {
            data: Some(data),
            ..JournalEntry::new(round, "", action, args)
        }
    }

    #[test]
    fn a_path_in_a_file_read_is_named_until_it_is_read() {
        let (_dir, toolbox) = workspace(&["start.txt", "vault/where.txt", "vault/deep/code-7.txt"]);
        let files = GoalFiles {
            inputs: vec!["start.txt".into()],
            outputs: vec!["answer.txt".into()],
            ..Default::default()
        };
        let mut history = vec![
            done(
                1,
                "read_file",
                json!({"path": "start.txt"}),
                json!("It is in vault/where.txt."),
            ),
            done(
                2,
                "read_file",
                json!({"path": "vault/where.txt"}),
                json!("vault/deep/code-7.txt\n"),
            ),
        ];
        let cx = test_context(
            "Follow start.txt; write the code to answer.txt.",
            &files,
            &toolbox,
            &history,
        );
        assert_eq!(unread(&cx), ["vault/deep/code-7.txt"]);
        assert_eq!(
            sentence(&unread(&cx)),
            " Files named so far that no round has read yet: `vault/deep/code-7.txt`."
        );
        history.push(done(
            3,
            "run_code",
            json!({"language": "python", "code": "print(open('vault/deep/code-7.txt').read())"}),
            json!({"stdout": "code: ORCHID-42"}),
        ));
        let cx = test_context("Follow start.txt.", &files, &toolbox, &history);
        assert!(unread(&cx).is_empty(), "{:?}", unread(&cx));
    }

    #[test]
    fn the_read_of_the_first_unread_file_is_spelled_out() {
        let (_dir, toolbox) = workspace(&["teams/a.txt"]);
        let unread = ["teams/a.txt".to_string(), "teams/b.txt".to_string()];
        let offer = read_offer(&toolbox, &unread, "search_files");
        let reply = offer
            .strip_prefix(" If reading `teams/a.txt` is the next step, reply ")
            .expect(&offer);
        let reply: Value = serde_json::from_str(reply).unwrap();
        assert_eq!(reply["action"]["name"], READ_TOOL);
        assert_eq!(reply["action"]["args"], json!({"path": "teams/a.txt"}));
        // Nothing to read, or reading barred, or no read tool: no offer.
        assert_eq!(read_offer(&toolbox, &[], "search_files"), "");
        assert_eq!(read_offer(&toolbox, &unread, READ_TOOL), "");
        let no_reader = toolbox.subset(&["list_dir"]);
        assert_eq!(read_offer(&no_reader, &unread, ""), "");
    }

    #[test]
    fn a_listed_folder_names_its_files_and_the_goals_unread_inputs_come_first() {
        let (_dir, toolbox) = workspace(&[
            "teams/data.txt",
            "teams/mobile.txt",
            "teams/platform.txt",
            "notes.md",
        ]);
        let files = GoalFiles {
            inputs: vec!["notes.md".into()],
            ..Default::default()
        };
        let history = vec![
            done(
                1,
                "read_file",
                json!({"path": "teams/data.txt"}),
                json!("Chloe\n"),
            ),
            done(
                2,
                "list_dir",
                json!({"path": "teams"}),
                json!({"path": "teams", "entries": ["data.txt", "mobile.txt", "platform.txt"]}),
            ),
        ];
        let cx = test_context("Count the people in teams/.", &files, &toolbox, &history);
        assert_eq!(
            unread(&cx),
            ["notes.md", "teams/mobile.txt", "teams/platform.txt"]
        );
        // A file the first prompt showed whole was seen.
        let shown = vec!["notes.md".to_string()];
        let cx = SteerContext {
            shown: &shown,
            others: &[],
            ..cx
        };
        assert_eq!(unread(&cx), ["teams/mobile.txt", "teams/platform.txt"]);
    }

    #[test]
    fn a_failed_call_or_a_missing_file_names_nothing() {
        let (_dir, toolbox) = workspace(&["a.txt"]);
        let files = GoalFiles::default();
        let failed = JournalEntry {
            status: crate::tools::ToolStatus::Error,
            ..done(1, "read_file", json!({"path": "a.txt"}), json!("see b.txt"))
        };
        let history = vec![
            failed,
            done(
                2,
                "run_code",
                json!({"code": "print(1)"}),
                json!({"stdout": "gone.txt"}),
            ),
        ];
        let cx = test_context("x", &files, &toolbox, &history);
        assert!(unread(&cx).is_empty());
        assert_eq!(sentence(&[]), "");
    }
}

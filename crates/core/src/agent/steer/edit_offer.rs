//! **Edit offer**: after a program ran that is a changed copy of a script
//! the goal asks the run to fix, while the script itself is unchanged, the
//! closing request spells out the `write_file` reply that saves the change
//! into the script.
//!
//! Asked to fix a script, small models retype it with the fix inside
//! `run_code`, see it print the right thing, and run it again and again
//! until the repetition guard ends the run: the script is never saved
//! (session 39's dev journals: both fix-script runs). The write offer
//! ([`write_offer`](super::write_offer)) saves a value into a missing
//! file; this is its counterpart for a file to change. The loop sees it
//! without a model call: the program is in the script's language, shares
//! at least half of the script's lines, differs from it, and does not name
//! the script (a program that opens the script edits it itself). What is
//! offered is the script with the program's changes: lines the program
//! left out are dropped, except comments and blank lines, which a program
//! that only runs has no reason to retype.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::{Steer, SteerContext};
use crate::journal::JournalEntry;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "edit_offer";

/// Most characters of a script that is offered.
const MAX_CHARS: usize = 4_000;

/// The edit offer as a steer: a sentence of the closing request.
pub struct EditOffer;

impl Steer for EditOffer {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "after a program that is a changed copy of a script the goal asks to fix ran, while the script is unchanged, spells out the write that saves the change"
    }

    fn closing(&self, cx: &SteerContext<'_>) -> String {
        let Some(last) = cx.history.last() else {
            return String::new();
        };
        offer(cx, last).unwrap_or_default()
    }
}

/// The offer for the latest round of `history` whose program qualifies
/// (see [`offer`]), for a note that looks back over the run. The files to
/// change are looked at once, not once per round.
pub fn latest(cx: &SteerContext<'_>) -> Option<String> {
    let unchanged = super::edit_check::unchanged(cx.files, cx.toolbox);
    if unchanged.is_empty() {
        return None;
    }
    cx.history
        .iter()
        .rev()
        .find_map(|entry| offer_among(cx.toolbox, &unchanged, entry))
}

/// The offer after `entry`: when it is a `run_code` that succeeded and
/// its program is a changed copy of one of the goal's unchanged files to
/// change, the `write_file` reply that saves the change there.
pub fn offer(cx: &SteerContext<'_>, entry: &JournalEntry) -> Option<String> {
    let ran_code = cx.toolbox.effect(&entry.action) == ToolEffect::RunsCode && !entry.is_error();
    if !ran_code {
        return None;
    }
    let unchanged = super::edit_check::unchanged(cx.files, cx.toolbox);
    offer_among(cx.toolbox, &unchanged, entry)
}

/// [`offer`] with the goal's files still unchanged given (`unchanged`).
fn offer_among(toolbox: &Toolbox, unchanged: &[String], entry: &JournalEntry) -> Option<String> {
    if toolbox.effect(&entry.action) != ToolEffect::RunsCode || entry.is_error() {
        return None;
    }
    let writer = toolbox.first_with(ToolEffect::Writes)?;
    let code = entry.args.get("code").and_then(Value::as_str)?;
    let language = entry
        .args
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("python");
    unchanged.iter().find_map(|file| {
        if !same_language(file, language) {
            return None;
        }
        let original = read(file, toolbox)?;
        let fixed = changed_copy(&original, code, file)?;
        let reply = serde_json::json!({
            "thought": format!("save the fix in {file}"),
            "action": {"name": writer, "args": {"path": file, "content": fixed}},
        });
        Some(format!(
            "Round {} ({}) ran a changed copy of `{file}`, and `{file}` itself is still unchanged. If that change is what the goal asks for, save it in the file: reply {reply}",
            entry.round, entry.action
        ))
    })
}

/// Whether a program in `language` could be a copy of `file`: a Python
/// program of a `.py` file, a shell program of a `.sh` file.
fn same_language(file: &str, language: &str) -> bool {
    let extension = file.rsplit_once('.').map_or("", |(_, e)| e);
    match language.to_ascii_lowercase().as_str() {
        "python" | "python3" | "py" => extension == "py",
        "bash" | "sh" | "shell" => extension == "sh",
        _ => false,
    }
}

/// The text of `file` in `toolbox`'s workspace, when it is short.
fn read(file: &str, toolbox: &Toolbox) -> Option<String> {
    let path = toolbox.workspace()?.resolve(file).ok()?;
    let text = std::fs::read_to_string(path).ok()?;
    (text.chars().count() <= MAX_CHARS).then_some(text)
}

/// Whether a line carries code (not blank, not a comment).
fn is_code(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty() && !line.starts_with('#')
}

/// `original` with the changes `program` made to it, when `program` is a
/// changed copy of it: at least half of its code lines appear in
/// `program`, its code lines differ, and `program` does not name `file`
/// (a program that opens the file changes it itself). Lines the program
/// left out are dropped unless they are comments or blank.
pub fn changed_copy(original: &str, program: &str, file: &str) -> Option<String> {
    let base = file.rsplit('/').next().unwrap_or(file);
    if program.contains(base) {
        return None;
    }
    let code = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| is_code(l))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let (old, new) = (code(original), code(program));
    if old.is_empty() || old == new {
        return None;
    }
    let shared = old.iter().filter(|l| new.contains(l)).count();
    if shared * 2 < old.len() {
        return None;
    }
    let program = if program.ends_with('\n') {
        program.to_string()
    } else {
        format!("{program}\n")
    };
    let mut merged = String::new();
    for change in TextDiff::from_lines(original, program.as_str()).iter_all_changes() {
        let line = change.value();
        let keep = match change.tag() {
            ChangeTag::Equal | ChangeTag::Insert => true,
            ChangeTag::Delete => !is_code(line),
        };
        if keep {
            merged.push_str(line);
            if !line.ends_with('\n') {
                merged.push('\n');
            }
        }
    }
    if !original.ends_with('\n') {
        merged.truncate(merged.trim_end_matches('\n').len());
    }
    (merged != original).then_some(merged)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::GoalFiles;
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::{ToolStatus, Workspace};

    const SCRIPT: &str = "# Prints the sum of the whole numbers from 1 to 10.\ntotal = 0\nfor n in range(1, 10):\n    total += n\nprint(total)\n";

    #[test]
    fn the_change_is_merged_into_the_script_keeping_its_comments() {
        let program = "total = 0\nfor n in range(1, 11):\n    total += n\nprint(total)";
        assert_eq!(
            changed_copy(SCRIPT, program, "sum_to_ten.py").unwrap(),
            "# Prints the sum of the whole numbers from 1 to 10.\ntotal = 0\nfor n in range(1, 11):\n    total += n\nprint(total)\n"
        );
    }

    #[test]
    fn copies_without_a_change_other_programs_and_programs_that_open_the_file_are_not_offered() {
        let same = "total = 0\nfor n in range(1, 10):\n    total += n\nprint(total)";
        assert_eq!(changed_copy(SCRIPT, same, "sum_to_ten.py"), None);
        let other = "print(sum(range(1, 11)))";
        assert_eq!(changed_copy(SCRIPT, other, "sum_to_ten.py"), None);
        let opens = "src = open('sum_to_ten.py').read()\nopen('sum_to_ten.py', 'w').write(src.replace('10)', '11)'))";
        assert_eq!(changed_copy(SCRIPT, opens, "sum_to_ten.py"), None);
    }

    #[test]
    fn a_run_of_a_changed_copy_is_offered_while_the_script_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sum_to_ten.py"), SCRIPT).unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
        let goal = "sum_to_ten.py prints 45. Fix the loop so that it prints 55.";
        let files = GoalFiles::of(goal, &toolbox);
        let ran = JournalEntry {
            status: ToolStatus::Ok,
            ..JournalEntry::new(
                2,
                "",
                "run_code",
                json!({"language": "python", "code": "total = 0\nfor n in range(1, 11):\n    total += n\nprint(total)"}),
            )
        };
        let history = [ran];
        let cx = super::super::test_context(goal, &files, &toolbox, &history);
        let offer = EditOffer.closing(&cx);
        assert!(
            offer.starts_with("Round 2 (run_code) ran a changed copy of `sum_to_ten.py`"),
            "{offer}"
        );
        assert!(offer.contains(r##""content":"# Prints the sum of the whole numbers from 1 to 10.\ntotal = 0\nfor n in range(1, 11):"##), "{offer}");
        assert_eq!(latest(&cx), Some(offer));
        // Saved: nothing more to offer.
        std::fs::write(dir.path().join("sum_to_ten.py"), "print(55)\n").unwrap();
        assert_eq!(EditOffer.closing(&cx), "");
    }
}

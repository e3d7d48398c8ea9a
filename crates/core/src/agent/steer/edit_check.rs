//! **Edit check**: a `finish` while every file the goal asks the run to
//! change is still exactly as it was before round 1 is answered, once,
//! with a note instead of ending the run, and the next decision may only
//! write a file or finish. Once every one of them has changed, the closing
//! request says so and spells out the `finish` reply ([`changed_note`]).
//!
//! Asked to fix or change a file in place, small models often do the work
//! where it does not last: they run the corrected script with `run_code`
//! and finish with its output, or say what the new line should be, and the
//! file itself is never saved (session 38's dev journals: both fix-script
//! runs ended `finished` with the script unchanged). The finish check does
//! not see it, because the file is there. The loop sees it without a model
//! call: the goal says to change a file it names (a verb such as *fix*,
//! *change*, *update*, *replace*, in a sentence that names the file, or the
//! goal's only file), the file's bytes were hashed before round 1
//! ([`GoalFiles::edits`]), and at `finish` none of those files has changed.
//! A second `finish` ends the run whatever the files hold, so a goal that
//! needs no change after all still ends.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::LazyLock;

use regex::Regex;

use super::{Gate, GoalFiles, Steer, SteerContext};
use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "edit_check";

/// The edit check as a steer: gates `finish` while the files to change
/// are unchanged, narrows the next decision to writing one (or
/// finishing), and says when they have all changed.
pub struct EditCheck;

impl Steer for EditCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "answers the first `finish` with a note while every file the goal asks to change is still as it was (the next decision may only write or finish); says when all have changed"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if !decision.is_finish() || super::acted(cx.history, NAME) {
            return Gate::Go;
        }
        let unchanged = unchanged(cx.files, cx.toolbox);
        if unchanged.is_empty() {
            return Gate::Go;
        }
        let mut note = note(&unchanged);
        if let Some(offer) = super::edit_offer::latest(cx) {
            note.push(' ');
            note.push_str(&offer);
        }
        Gate::refuse(note)
    }

    fn closing(&self, cx: &SteerContext<'_>) -> String {
        if cx.history.last().is_some_and(JournalEntry::is_error) {
            return String::new();
        }
        changed_note(cx.files, cx.toolbox)
    }

    fn narrow(&self, cx: &SteerContext<'_>) -> Option<Vec<String>> {
        let last = cx.history.last()?;
        if last.steered_by.as_deref() != Some(NAME) {
            return None;
        }
        let writes = cx.toolbox.first_with(ToolEffect::Writes)?;
        Some(vec![
            writes.to_string(),
            crate::decision::FINISH.to_string(),
        ])
    }
}

/// A file the goal asks the run to change, with a hash of its bytes
/// before round 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The file's path as the goal names it.
    pub file: String,
    /// A hash of its bytes when the run began.
    pub before: u64,
}

/// Words that ask for a file to be changed in place, in the languages the
/// goals come in. Matched as whole words (case-insensitive); the CJK ones
/// anywhere.
static EDIT_VERB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(fix|change|update|edit|modify|correct|replace|rename|remove|delete|append|insert|bump|set|increase|decrease|repair|patch|rewrite|in place|ändere|ändern|korrigiere|aktualisiere|ersetze|entferne|cambia|corrige|actualiza|modifica|reemplaza|elimina|modifie|remplace|supprime|mets à jour|corrija|altere|atualize|substitua)\b|修改|更改|修复|改为|改成|更新|替换|删除|修正|変更|置き換",
    )
    .expect("valid regex")
});

/// What may stand before an edit verb in its sentence for the verb to be
/// an instruction ("Fix the bug", "In a.ini, change", "Read it and
/// update", "you need to replace"): nothing, a comma, or a joining word.
static IMPERATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(^|[,:(]|\b(and|then|please|to|und|dann|y|luego|et|puis|e|depois))\s*$")
        .expect("valid regex")
});

/// Whether `sentence` asks for a change: it holds an edit verb said as an
/// instruction (see [`IMPERATIVE`]; a CJK verb anywhere), that is not part
/// of a file name (`update.txt`) and not followed by "nothing" ("change
/// nothing else").
fn asks_for_change(sentence: &str) -> bool {
    EDIT_VERB.find_iter(sentence).any(|verb| {
        let before = sentence[..verb.start()].trim_start();
        let rest = &sentence[verb.end()..];
        let in_name = before.ends_with(['/', '_', '-', '.'])
            || rest.starts_with(['_', '-', '/'])
            || (rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_alphanumeric()));
        let cjk = !verb.as_str().is_ascii() && verb.as_str().chars().all(|c| c as u32 > 0x2E80);
        let anywhere = cjk || verb.as_str().eq_ignore_ascii_case("in place");
        let instruction = anywhere || IMPERATIVE.is_match(before);
        let forbids = rest.trim_start().to_lowercase().starts_with("nothing");
        instruction && !in_name && !forbids
    })
}

/// The goal's sentences (split after `.`, `!`, `?`, `;`, `。`, `；` and
/// line breaks that end a sentence; a `.` inside a file name does not).
fn sentences(goal: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = goal.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = matches!(c, '。' | '；' | '！' | '？' | '\n')
            || (matches!(c, '.' | '!' | '?' | ';') && next.is_none_or(char::is_whitespace));
        if ends {
            let end = i + c.len_utf8();
            out.push(&goal[start..end]);
            start = end;
        }
    }
    if start < goal.len() {
        out.push(&goal[start..]);
    }
    out
}

/// The files of `inputs` (named in `goal`, present before round 1) that
/// `goal` asks to change: those named in a sentence that asks for a change
/// and names none of `outputs`; or, when no such sentence names a file,
/// the goal's one input if it has one and no outputs ("Running calc.py
/// fails. Fix the bug.").
pub fn targets(goal: &str, inputs: &[String], outputs: &[String]) -> Vec<String> {
    let asking: Vec<&str> = sentences(goal)
        .into_iter()
        .filter(|s| asks_for_change(s))
        .collect();
    if asking.is_empty() {
        return Vec::new();
    }
    let mut named = Vec::new();
    for sentence in &asking {
        let files = super::goal_files::named_files(sentence);
        if files.iter().any(|f| outputs.contains(f)) {
            continue;
        }
        for file in files {
            if inputs.contains(&file) && !named.contains(&file) {
                named.push(file);
            }
        }
    }
    let names_any = asking
        .iter()
        .any(|s| !super::goal_files::named_files(s).is_empty());
    if named.is_empty() && !names_any && inputs.len() == 1 && outputs.is_empty() {
        named.push(inputs[0].clone());
    }
    named
}

/// The files of `targets` at their named path in `toolbox`'s workspace,
/// each with a hash of its bytes now (a file that is not there, or not at
/// that path, is left out: the check cannot tell whether it changed).
pub fn snapshot(targets: &[String], toolbox: &Toolbox) -> Vec<Edit> {
    targets
        .iter()
        .filter_map(|file| {
            Some(Edit {
                file: file.clone(),
                before: hash_of(file, toolbox)?,
            })
        })
        .collect()
}

/// A hash of the bytes of `file` in `toolbox`'s workspace (`None` when it
/// cannot be read: gone, a folder, no workspace).
fn hash_of(file: &str, toolbox: &Toolbox) -> Option<u64> {
    let path = toolbox.workspace()?.resolve(file).ok()?;
    let bytes = std::fs::read(path).ok()?;
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    Some(hasher.finish())
}

/// The goal's files to change, when every one of them is still as it was
/// before round 1 (empty when one changed, was removed, or there are none,
/// or no tool can write).
pub fn unchanged(files: &GoalFiles, toolbox: &Toolbox) -> Vec<String> {
    if files.edits.is_empty() || toolbox.first_with(ToolEffect::Writes).is_none() {
        return Vec::new();
    }
    let all_same = files
        .edits
        .iter()
        .all(|edit| hash_of(&edit.file, toolbox) == Some(edit.before));
    if !all_same {
        return Vec::new();
    }
    files.edits.iter().map(|e| e.file.clone()).collect()
}

/// What the closing request says once every file the goal asks to change
/// has changed and every file it asks to write is there: that the goal may
/// be reached, with the `finish` reply spelled out (the finish check's
/// [`written_note`](super::finish_check::written_note) for a goal's new
/// files). Small models that saved a fix go on running it until a guard
/// stops them (session 39: both runs the edit offer saved). Empty while a
/// file is unchanged or missing, or when the goal changes none.
pub fn changed_note(files: &GoalFiles, toolbox: &Toolbox) -> String {
    if files.edits.is_empty() || !files.missing(toolbox).is_empty() {
        return String::new();
    }
    let all_changed = files
        .edits
        .iter()
        .all(|edit| hash_of(&edit.file, toolbox) != Some(edit.before));
    if !all_changed {
        return String::new();
    }
    let names: Vec<String> = files.edits.iter().map(|e| e.file.clone()).collect();
    let reply = serde_json::json!({
        "thought": format!("{} changed", names.join(", ")),
        "action": {"name": crate::decision::FINISH, "args": {"result": "<what you changed>"}},
    });
    super::finish_check::reached_note(
        &names,
        " to change",
        "changed",
        "Change",
        &reply.to_string(),
    )
}

/// The observation of a `finish` held back because `unchanged` are as
/// they were.
pub fn note(unchanged: &[String]) -> String {
    let names = super::quoted_names(unchanged);
    let (it, is) = if unchanged.len() == 1 {
        ("it", "is")
    } else {
        ("them", "are")
    };
    format!(
        "not finished yet: the goal asks you to change {names}, and {} {is} still exactly as {} {} before your work: nothing was saved to {it}. A program you ran or an answer you gave does not change the file. Write the whole changed text of {names} now (write_file), keeping what the goal says to keep, then finish.",
        if unchanged.len() == 1 { "it" } else { "they" },
        if unchanged.len() == 1 { "it" } else { "they" },
        if unchanged.len() == 1 { "was" } else { "were" },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::journal::JournalEntry;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_files_to_change_are_read_from_the_goal() {
        let goal = "In app/settings.ini, change the logging level to warning. The compression level and everything else must stay as they are.";
        assert_eq!(
            targets(goal, &v(&["app/settings.ini"]), &[]),
            v(&["app/settings.ini"])
        );
        // The verb's sentence names no file: the goal's one input.
        let goal = "Running scripts/total.py fails with a NameError. Fix the bug so that it prints Total: 27.";
        assert_eq!(
            targets(goal, &v(&["scripts/total.py"]), &[]),
            v(&["scripts/total.py"])
        );
        let goal = "Lies preise.csv und ändere den Preis in preise.csv auf 5.";
        assert_eq!(targets(goal, &v(&["preise.csv"]), &[]), v(&["preise.csv"]));
        let goal = "把 config.json 里的端口修改为 8080。";
        assert_eq!(
            targets(goal, &v(&["config.json"]), &[]),
            v(&["config.json"])
        );
    }

    #[test]
    fn reads_outputs_and_forbidden_changes_are_not_edits() {
        // No verb that asks for a change.
        let goal = "Read data.csv and write the total to answer.txt.";
        assert!(targets(goal, &v(&["data.csv"]), &v(&["answer.txt"])).is_empty());
        // "change nothing", "do not modify": a change is forbidden.
        let goal = "Copy notes.txt to copy.txt and change nothing. Do not modify notes.txt.";
        assert!(targets(goal, &v(&["notes.txt"]), &v(&["copy.txt"])).is_empty());
        // The sentence that asks for a change names the output.
        let goal = "Read prices.csv and update total.txt with the sum.";
        assert!(targets(goal, &v(&["prices.csv"]), &v(&["total.txt"])).is_empty());
        // A verb with no file named, and outputs to write: not an edit.
        let goal = "Read a.txt. Fix the spelling and write the result to b.txt.";
        assert!(targets(goal, &v(&["a.txt"]), &v(&["b.txt"])).is_empty());
    }

    #[test]
    fn a_sentence_ends_at_its_stop_not_inside_a_file_name() {
        assert_eq!(
            sentences("Fix calc.py now. Then run it!\nDone"),
            vec!["Fix calc.py now.", " Then run it!", "\n", "Done"]
        );
    }

    #[test]
    fn only_instructions_ask_for_a_change() {
        assert!(asks_for_change("Fix the bug."));
        assert!(asks_for_change("In app.ini, change the level."));
        assert!(asks_for_change("Read a.txt and update b.txt."));
        assert!(asks_for_change("修改 a.json 的端口。"));
        assert!(asks_for_change(
            "Set the port in service/config.json to 9090."
        ));
        assert!(asks_for_change("Sort the lines of names.txt in place."));
        assert!(!asks_for_change("Count the set of names in a.txt."));
        assert!(!asks_for_change("Check whether data.csv is correct."));
        assert!(!asks_for_change("Write the count to update.txt."));
        assert!(!asks_for_change("Count the fixes in log.txt."));
        assert!(!asks_for_change("Change nothing else."));
        assert!(!asks_for_change("Do not modify a.txt."));
    }

    fn finish(result: &str) -> Decision {
        let reply =
            json!({"thought": "", "action": {"name": "finish", "args": {"result": result}}});
        crate::decision::parse_decision(&reply.to_string()).unwrap()
    }

    fn toolbox(dir: &std::path::Path) -> Toolbox {
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir).unwrap());
        toolbox
    }

    #[test]
    fn a_finish_is_held_back_once_while_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("calc.py"), "print(4)\n").unwrap();
        let toolbox = toolbox(dir.path());
        let goal = "calc.py prints 4. Fix it so that it prints 5.";
        let files = GoalFiles::of(goal, &toolbox);
        assert_eq!(files.edits.len(), 1);
        let finish = finish("5");
        let cx = super::super::test_context(goal, &files, &toolbox, &[]);
        let Gate::Refuse { note, .. } = EditCheck.gate(&cx, &finish, false) else {
            panic!("an unchanged file must hold the finish back");
        };
        assert!(note.contains("`calc.py`"), "{note}");
        // Told once: the next finish ends the run.
        let told = JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(2, "done", crate::decision::FINISH, json!({"result": "5"}))
        };
        let history = [told];
        let cx = super::super::test_context(goal, &files, &toolbox, &history);
        assert_eq!(EditCheck.gate(&cx, &finish, false), Gate::Go);
        assert_eq!(EditCheck.narrow(&cx), Some(v(&["write_file", "finish"])));
        assert_eq!(EditCheck.closing(&cx), "");
        // Once the file changed, the finish goes, and the request says so.
        std::fs::write(dir.path().join("calc.py"), "print(5)\n").unwrap();
        let cx = super::super::test_context(goal, &files, &toolbox, &[]);
        assert_eq!(EditCheck.gate(&cx, &finish, false), Gate::Go);
        assert_eq!(
            EditCheck.closing(&cx),
            "The goal's file to change (`calc.py`) is changed now. If it holds what the goal asks for, the goal is reached: reply {\"thought\":\"calc.py changed\",\"action\":{\"name\":\"finish\",\"args\":{\"result\":\"<what you changed>\"}}}. Change it again only if it is wrong."
        );
    }

    #[test]
    fn other_actions_and_goals_without_an_edit_go() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.csv"), "a\n1\n").unwrap();
        let toolbox = toolbox(dir.path());
        let goal = "Sum data.csv and write the total to answer.txt.";
        let files = GoalFiles::of(goal, &toolbox);
        assert!(files.edits.is_empty());
        let cx = super::super::test_context(goal, &files, &toolbox, &[]);
        assert_eq!(EditCheck.gate(&cx, &finish("1"), false), Gate::Go);
        assert_eq!(EditCheck.narrow(&cx), None);
    }
}

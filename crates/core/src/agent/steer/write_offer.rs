//! **Write offer**: when the run has a value in hand and the goal's file
//! is still missing, the closing request spells out the `write_file` reply
//! that saves the value there.
//!
//! Small models compute the right value (`run_code` prints `87`) or end
//! with it (`finish` with `3`) and then never write the file the goal
//! names, or redo the step, or do more arithmetic on the value (EVALS.md,
//! sections 13 and 14). Told in words, they often do not act on it; a JSON
//! reply spelled out in the request is copied almost every time. So the
//! offer is made only for text that looks like a value (a number, a name,
//! a short list), never for a sentence: a copied progress report
//! (`The version of 'left-pad' is not available…`) is worse than no offer.
//!
//! On by default (`--no-steer write_offer`, or `--no-write-offer`); see
//! EVALS.md, section 14.

use serde_json::Value;

use super::{Steer, SteerContext};
use crate::decision::FINISH;
use crate::journal::JournalEntry;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "write_offer";

/// The write offer as a steer: a sentence of the closing request.
pub struct WriteOffer;

impl Steer for WriteOffer {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "after code printed or wrote a value, or a refused finish gave one, spells out the write that saves it in the goal's missing file"
    }

    fn closing(&self, cx: &SteerContext<'_>) -> String {
        offer_for(cx.goal, &cx.files.outputs, cx.toolbox, cx.history.last())
    }
}
/// Most lines of a value.
const MAX_LINES: usize = 20;
/// Most characters of a file written by code that is offered.
const MAX_UNSAVED_CHARS: usize = 1_000;
/// Most characters on one line of a value.
const MAX_LINE_CHARS: usize = 60;
/// Most words on one line of a value (a name may have a few; a sentence
/// has more).
const MAX_LINE_WORDS: usize = 3;

/// What the closing request says after `last`: the `write_file` reply that
/// saves its value in the one file of `outputs` still missing, when `last`
/// is a `finish` the finish check refused or a `run_code` that succeeded,
/// and what it gave looks like a value. Empty otherwise.
pub fn offer(outputs: &[String], toolbox: &Toolbox, last: Option<&JournalEntry>) -> String {
    offer_for("", outputs, toolbox, last)
}

/// [`offer`] for `goal`: a number is offered in the form the goal asks of
/// the file (`569.00` for "with two decimals", see
/// [`decimals_check::as_asked`](super::decimals_check::as_asked)).
pub fn offer_for(
    goal: &str,
    outputs: &[String],
    toolbox: &Toolbox,
    last: Option<&JournalEntry>,
) -> String {
    let Some(last) = last else {
        return String::new();
    };
    let Some(file) = one_missing(outputs, toolbox) else {
        return String::new();
    };
    let Some(writer) = toolbox.first_with(ToolEffect::Writes) else {
        return String::new();
    };
    let (value, said, it) = if last.action == FINISH && last.is_error() {
        let result = last.args.get("result").and_then(Value::as_str);
        (
            result.and_then(value_like),
            "was not accepted".to_string(),
            "your result",
        )
    } else if toolbox.effect(&last.action) == ToolEffect::RunsCode && !last.is_error() {
        match unsaved_write(last.data.as_ref(), file) {
            Some(text) => (
                Some(text),
                format!("wrote `{file}` only in its copy of the workspace"),
                "what it wrote",
            ),
            None => (
                printed(last.data.as_ref()).and_then(value_like),
                "printed a value".to_string(),
                "that value",
            ),
        }
    } else {
        return String::new();
    };
    let Some(value) = value else {
        return String::new();
    };
    let value = super::decimals_check::as_asked(goal, file, &value).unwrap_or(value);
    let reply = serde_json::json!({
        "thought": format!("{file} must hold the answer"),
        "action": {"name": writer, "args": {"path": file, "content": value}},
    });
    format!(
        "Round {} ({}) {said}, and `{file}` is not written yet. If {it} is what `{file}` should hold, reply {reply}",
        last.round, last.action
    )
}

/// What a `run_code` result's data says the code wrote to `file` in its
/// copy of the workspace (`unsaved_writes`), when that is short text
/// ([`MAX_LINES`] lines, [`MAX_UNSAVED_CHARS`] characters): computed by
/// the code, so offered as it is, not only when it looks like a value.
fn unsaved_write(data: Option<&Value>, file: &str) -> Option<String> {
    let text = data?["unsaved_writes"][file].as_str()?.trim_end();
    let short = !text.trim().is_empty()
        && text.lines().count() <= MAX_LINES
        && text.chars().count() <= MAX_UNSAVED_CHARS;
    short.then(|| text.to_string())
}

/// The one file of `outputs` missing from the workspace; `None` when none
/// or several are.
fn one_missing<'o>(outputs: &'o [String], toolbox: &Toolbox) -> Option<&'o String> {
    let workspace = toolbox.workspace()?;
    let mut missing = outputs.iter().filter(|name| workspace.lacks(name));
    let file = missing.next()?;
    missing.next().is_none().then_some(file)
}

/// The standard output in a `run_code` result's data (`{"stdout": …}`).
fn printed(data: Option<&Value>) -> Option<&str> {
    data?["stdout"].as_str()
}

/// `text` as a value to write, when it looks like one: at most
/// [`MAX_LINES`] short lines of at most [`MAX_LINE_WORDS`] words, none of
/// them code or a data structure (brackets, `=`, `:`). A whole number
/// printed as a float (`600.0`) is offered as the whole number.
pub(super) fn value_like(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .trim()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let fits = |line: &&str| {
        line.chars().count() <= MAX_LINE_CHARS
            && line.split_whitespace().count() <= MAX_LINE_WORDS
            && !line.contains(['{', '}', '[', ']', '(', ')', '=', ':', '<', '>'])
    };
    if lines.is_empty() || lines.len() > MAX_LINES || !lines.iter().all(fits) {
        return None;
    }
    if let [line] = lines[..] {
        if let Some(whole) = whole_number(line) {
            return Some(whole.to_string());
        }
    }
    Some(lines.join("\n"))
}

/// `600` for `600.0` (or `600.00`); `None` for anything else.
fn whole_number(text: &str) -> Option<&str> {
    let (whole, fraction) = text.split_once('.')?;
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    let is_whole = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && !fraction.is_empty()
        && fraction.chars().all(|c| c == '0');
    is_whole.then_some(whole)
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    const RUN_CODE: &str = "run_code";

    /// The file tools, and a tool that says it runs code.
    pub(crate) fn toolbox() -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let runs = |_: std::collections::BTreeMap<String, String>| async {
            Ok::<_, crate::tools::ToolError>(Value::Null)
        };
        toolbox.register(
            crate::tools::tool_fn(RUN_CODE, "runs code", runs)
                .with_spec(|spec| spec.effect(ToolEffect::RunsCode)),
        );
        (dir, toolbox)
    }

    fn ran(stdout: &str) -> JournalEntry {
        let data = json!({"exit_code": 0, "stdout": stdout});
        let observation = json!({"status": "ok", "data": data, "error": null});
        JournalEntry {
            observation: observation.to_string(),
            data: Some(data),
            ..JournalEntry::new(
                2,
                "",
                RUN_CODE,
                json!({"language": "python", "code": "print(1)"}),
            )
        }
    }

    fn refused(result: &str) -> JournalEntry {
        JournalEntry {
            status: ToolStatus::Error,
            ..JournalEntry::new(4, "", FINISH, json!({"result": result}))
        }
    }

    #[test]
    fn values_are_offered_and_sentences_code_and_structures_are_not() {
        assert_eq!(value_like("87\n").as_deref(), Some("87"));
        assert_eq!(value_like("600.0\n").as_deref(), Some("600"));
        assert_eq!(value_like("-7.00").as_deref(), Some("-7"));
        assert_eq!(value_like("3.5").as_deref(), Some("3.5"));
        assert_eq!(value_like("1.3.0").as_deref(), Some("1.3.0"));
        assert_eq!(
            value_like("alice\ncarol\n\nerin\n").as_deref(),
            Some("alice\ncarol\nerin")
        );
        assert_eq!(value_like("李娜").as_deref(), Some("李娜"));
        assert_eq!(
            value_like("Mary Ann Smith").as_deref(),
            Some("Mary Ann Smith")
        );
        assert_eq!(
            value_like("The version of 'left-pad' is not available in the package.json file."),
            None
        );
        assert_eq!(value_like("7 {'name': 'ana', 'age': '31'}"), None);
        assert_eq!(value_like("['a.md', 'b.md']"), None);
        assert_eq!(value_like("port = 5432"), None);
        assert_eq!(value_like("  \n"), None);
        assert_eq!(value_like(&"x\n".repeat(MAX_LINES + 1)), None);
        assert_eq!(whole_number("600.5"), None);
        assert_eq!(whole_number(".0"), None);
        assert_eq!(whole_number("v1.0"), None);
    }

    #[test]
    fn a_printed_value_is_offered_for_the_one_missing_output() {
        let (dir, toolbox) = toolbox();
        let outputs = vec!["answer.txt".to_string()];
        assert_eq!(
            offer(&outputs, &toolbox, Some(&ran("600.0\n"))),
            r#"Round 2 (run_code) printed a value, and `answer.txt` is not written yet. If that value is what `answer.txt` should hold, reply {"thought":"answer.txt must hold the answer","action":{"name":"write_file","args":{"path":"answer.txt","content":"600"}}}"#
        );
        // The goal asks for two decimals: the value is offered so.
        let goal = "Write the total with two decimals to answer.txt.";
        assert!(offer_for(goal, &outputs, &toolbox, Some(&ran("600.0\n")))
            .contains(r#""content":"600.00""#));
        // A failed run, a structure, or no output: nothing.
        let failed = JournalEntry {
            status: ToolStatus::Error,
            ..ran("3\n")
        };
        assert_eq!(offer(&outputs, &toolbox, Some(&failed)), "");
        assert_eq!(offer(&outputs, &toolbox, Some(&ran("{'a': 1}"))), "");
        assert_eq!(offer(&outputs, &toolbox, Some(&ran(""))), "");
        assert_eq!(offer(&outputs, &toolbox, None), "");
        // Two files missing: which one the value is for is not guessed.
        let two = vec!["primes.py".to_string(), "answer.txt".to_string()];
        assert_eq!(offer(&two, &toolbox, Some(&ran("25\n"))), "");
        std::fs::write(dir.path().join("primes.py"), "print(25)").unwrap();
        assert!(offer(&two, &toolbox, Some(&ran("25\n"))).contains(r#""content":"25""#));
        std::fs::write(dir.path().join("answer.txt"), "25").unwrap();
        assert_eq!(offer(&two, &toolbox, Some(&ran("25\n"))), "");
    }

    #[test]
    fn what_the_code_wrote_in_its_copy_is_offered_for_that_file() {
        let (_dir, toolbox) = toolbox();
        let outputs = vec!["old.txt".to_string()];
        let wrote = |file: &str, text: &str| {
            let data = json!({"exit_code": 0, "stdout": "", "unsaved_writes": {file: text}});
            JournalEntry {
                observation: json!({"status": "ok", "data": data, "error": null}).to_string(),
                data: Some(data),
                ..ran("")
            }
        };
        assert_eq!(
            offer(
                &outputs,
                &toolbox,
                Some(&wrote("old.txt", "alice\ncarol\n"))
            ),
            r#"Round 2 (run_code) wrote `old.txt` only in its copy of the workspace, and `old.txt` is not written yet. If what it wrote is what `old.txt` should hold, reply {"thought":"old.txt must hold the answer","action":{"name":"write_file","args":{"path":"old.txt","content":"alice\ncarol"}}}"#
        );
        // Computed text is offered even where it does not look like a value.
        assert!(offer(
            &outputs,
            &toolbox,
            Some(&wrote("old.txt", "name: ana (31)\n"))
        )
        .contains(r#""content":"name: ana (31)""#));
        // Another file, or a long one: the printed value, if any, instead.
        assert_eq!(
            offer(&outputs, &toolbox, Some(&wrote("other.txt", "x"))),
            ""
        );
        let long = "x\n".repeat(MAX_LINES + 1);
        assert_eq!(
            offer(&outputs, &toolbox, Some(&wrote("old.txt", &long))),
            ""
        );
    }

    #[test]
    fn a_refused_finish_is_offered_only_when_its_result_is_a_value() {
        let (_dir, toolbox) = toolbox();
        let outputs = vec!["files.txt".to_string()];
        assert_eq!(
            offer(&outputs, &toolbox, Some(&refused("beach.jpg\ncat.png\n"))),
            r#"Round 4 (finish) was not accepted, and `files.txt` is not written yet. If your result is what `files.txt` should hold, reply {"thought":"files.txt must hold the answer","action":{"name":"write_file","args":{"path":"files.txt","content":"beach.jpg\ncat.png"}}}"#
        );
        let report = "The code did not define the `users` variable, which was required.";
        assert_eq!(offer(&outputs, &toolbox, Some(&refused(report))), "");
        let accepted = JournalEntry::new(4, "", FINISH, json!({"result": "x"}));
        assert_eq!(offer(&outputs, &toolbox, Some(&accepted)), "");
    }
}

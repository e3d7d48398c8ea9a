//! **Compute check**: a `write_file` of a number into one of the goal's
//! new files, when that number is in nothing the run has seen, is answered
//! once with a note to compute it with `run_code` instead of being
//! carried out.
//!
//! Asked to count the distinct IPs of a log, the days between two dates
//! or the kilometres of a list of miles, a small model reads the file and
//! then writes a number it worked out in its head: `10` distinct IPs of 5,
//! `19` days of 49 (EVALS.md, section 23). The system prompt already says
//! to compute with `run_code`; the model does not act on a rule read
//! before the task. The loop sees the guess without a model call: a value
//! the model copied is in the goal, a file the first prompt showed, or a
//! tool's output (a `read_file`'s text, a `run_code`'s printout), while a
//! number worked out in the head is in none of them. The note asks for the
//! code that computes it, and the next decision may only run code (its
//! schema narrowed to `run_code`: told in words alone, the 1.5B model
//! mostly wrote another guess, EVALS.md section 23); the write offer then
//! spells out the write of what the code prints. A second such write is
//! carried out, so a number that really is the model's own (a count it can
//! see at a glance) still gets written, one round later.
//!
//! Only writes of values (a few short lines of at most three words, no
//! code or data structure: what the write offer would offer) into files
//! absent before round 1 are checked: an edited file, a script or a
//! document holds numbers of its own. Numbers are compared as whole
//! fields (`10` is not in `10.0.0.4` nor in the time `09:01:10`) and by
//! value (`600` is in `600.00`).
//!
//! **Off by default** (`--steer compute_check=on`): told in words, the
//! 1.5B model mostly wrote another guess and the dev suite stayed at 0.400
//! (EVALS.md, section 23); narrowed, every next decision was code and the
//! dev suite read 0.444, but on the held-out suite it acted in 2 runs and
//! passed neither (section 24). A scripted model that writes values
//! without code cannot follow the note either: the scripted gates run
//! with it off.

use serde_json::Value;

use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::tools::ToolEffect;

/// The steer's name (switches, journals).
pub const NAME: &str = "compute_check";

/// How every note of this check begins.
const MARK: &str = "not written yet:";

/// The compute check as a steer: gates writes of numbers nothing showed.
pub struct ComputeCheck;

impl Steer for ComputeCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "answers a write of a value holding a number into the goal's new file, when no file, output or the goal shows that number, with a note to compute it with run_code (once per run); the next decision may only run code"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        let toolbox = cx.toolbox;
        if toolbox.effect(&decision.action.name) != ToolEffect::Writes
            || toolbox.first_with(ToolEffect::RunsCode).is_none()
            || super::acted(cx.history, NAME)
        {
            return Gate::Go;
        }
        let Some((path, content)) = super::goal_files::output_write(&cx.files.outputs, decision)
        else {
            return Gate::Go;
        };
        if super::write_offer::value_like(content).is_none() {
            return Gate::Go;
        }
        let shown = shown_text(cx);
        let unseen = unseen_numbers(content, &seen_text(cx.goal, &shown, cx.history));
        if unseen.is_empty() {
            return Gate::Go;
        }
        Gate::refuse(note(&unseen, path))
    }

    /// Right after its note, the next decision may only run code.
    fn narrow(&self, cx: &SteerContext<'_>) -> Option<Vec<String>> {
        super::code_after_note(cx, NAME)
    }
}

/// The text of the files the first prompt showed whole, read again (their
/// headers' line counts and the listing's sizes are not the files' text: a
/// model that writes a line count as a count of something else guessed).
fn shown_text(cx: &SteerContext<'_>) -> String {
    let Some(workspace) = cx.toolbox.workspace() else {
        return String::new();
    };
    cx.shown
        .iter()
        .filter_map(|name| std::fs::read_to_string(workspace.resolve(name).ok()?).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything the run has seen, as plain text: the goal, the files the
/// first prompt showed, and each round's tool output (its data's strings and
/// numbers when kept, else its observation, unescaped where it can be).
pub fn seen_text(goal: &str, shown: &str, history: &[JournalEntry]) -> String {
    let mut text = format!("{goal}\n{shown}\n");
    for entry in history {
        match &entry.data {
            Some(data) => leaves(data, &mut text),
            None => match serde_json::from_str::<Value>(&entry.observation) {
                Ok(value) => leaves(&value, &mut text),
                Err(_) => text.push_str(&entry.observation.replace("\\n", "\n")),
            },
        }
        text.push('\n');
    }
    text
}

/// The strings and numbers inside `value`, each on a line of `out`.
fn leaves(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        Value::Bool(_) | Value::Null => return,
    }
    out.push('\n');
}

/// The numbers of `written` (once each, in order) that `seen` holds
/// neither as the same token nor as a token of the same value.
pub fn unseen_numbers(written: &str, seen: &str) -> Vec<String> {
    // Each field of what was seen is parsed once, not once per written number.
    let known: Vec<(&str, Option<f64>)> = numbers(seen).map(|k| (k, k.parse().ok())).collect();
    let mut unseen: Vec<String> = Vec::new();
    for number in numbers(written) {
        let value = number.parse::<f64>().ok();
        let is_known = known
            .iter()
            .any(|(k, v)| *k == number || (value.is_some() && *v == value));
        if !is_known && !unseen.iter().any(|u| u == number) {
            unseen.push(number.to_string());
        }
    }
    unseen
}

/// The number fields of `text`: its runs of characters between
/// whitespace, any non-ASCII character (CJK text and its punctuation,
/// currency signs) and the marks that separate fields (`,;=|"'`, brackets),
/// without a closing `.` or `:`, a leading `+` or `$`, or a
/// closing `%`, that are digits (with a leading `-` or not) with at most one decimal point. A time or
/// a date stays one field (`09:01:10`, `2024-03-04`), so the `10` of a
/// time is not a `10` of the text, and neither is the `10` of `10.0.0.4`.
fn numbers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii() || c.is_whitespace() || ",;=|\"'`()[]{}<>".contains(c))
        .map(|token| {
            token
                .trim_end_matches(['.', ':', '%'])
                .trim_start_matches(['+', '$'])
        })
        .filter(|token| {
            let unsigned = token.strip_prefix('-').unwrap_or(token);
            let mut parts = unsigned.split('.');
            let whole = parts.next().unwrap_or_default();
            let fraction = parts.next();
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            digits(whole) && parts.next().is_none() && fraction.is_none_or(digits)
        })
}

/// The observation of a write of `unseen` numbers into `target` that was
/// not carried out.
pub fn note(unseen: &[String], target: &str) -> String {
    let listed = unseen.join(", ");
    let (subject, verb) = if unseen.len() == 1 {
        (format!("the number {listed}"), "is")
    } else {
        (format!("the numbers {listed}"), "are")
    };
    format!(
        "{MARK} {subject} {verb} in no file, output or goal of this run, so {} worked out in your head, where counts, sums and dates often go wrong. Compute it with run_code: open the input file(s) in the code, apply every condition of the goal, print the result. Then write `{target}` with what the code prints.",
        if unseen.len() == 1 { "it was" } else { "they were" }
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::GoalFiles;
    use crate::tools::ToolStatus;

    #[test]
    fn numbers_are_whole_tokens_of_digits() {
        let found: Vec<&str> = numbers(
            "10.0.0.4 paid $182.40, v2 a1b 2024-03-04 09:01:10 total: 12. -1 (7) 50% port=8080 共3个",
        )
        .collect();
        assert_eq!(found, ["182.40", "12", "-1", "7", "50", "8080", "3"]);
    }

    #[test]
    fn a_number_is_seen_as_the_same_token_or_the_same_value() {
        let seen = "10.0.0.4 - [12/Mar/2024:09:01:10] GET\n10.0.0.7 - GET\ntotal 600.00\n";
        assert_eq!(unseen_numbers("10", seen), ["10"]);
        assert!(unseen_numbers("600", seen).is_empty());
        assert!(unseen_numbers("600.0 and 600", seen).is_empty());
        assert_eq!(unseen_numbers("49 days, 49", seen), ["49"]);
        assert!(unseen_numbers("no numbers here", seen).is_empty());
    }

    #[test]
    fn what_the_run_saw_includes_tool_outputs_and_the_shown_files() {
        let read = JournalEntry {
            status: ToolStatus::Ok,
            data: Some(json!("kickoff 2024-01-15\ngo-live 2024-03-04")),
            ..JournalEntry::new(1, "", "read_file", json!({"path": "p.txt"}))
        };
        let ran = JournalEntry {
            status: ToolStatus::Ok,
            observation: r#"{"status":"ok","data":{"stdout":"49\n","exit_code":0},"error":null}"#
                .into(),
            ..JournalEntry::new(2, "", "run_code", json!({"code": "print(7 * 7)"}))
        };
        let seen = seen_text("Days between? Write to days.txt", "5 apples", &[read]);
        assert_eq!(unseen_numbers("49", &seen), ["49"]);
        assert!(unseen_numbers("5", &seen).is_empty());
        let seen = seen_text("", "", &[ran]);
        assert!(unseen_numbers("49", &seen).is_empty());
        // The code the model wrote is not something it was shown.
        assert_eq!(unseen_numbers("7", &seen), ["7"]);
    }

    fn write(path: &str, content: &str) -> Decision {
        Decision {
            thought: String::new(),
            action: crate::decision::Action {
                name: "write_file".into(),
                args: json!({"path": path, "content": content}),
            },
            result: None,
            repaired: false,
        }
    }

    #[test]
    fn an_unseen_number_written_to_a_new_file_is_refused_once() {
        let (dir, toolbox) = super::super::write_offer::tests::toolbox();
        let text = "Kickoff: 2024-01-15\nGo-live: 2024-03-04\nBudget: 1200\n";
        std::fs::write(dir.path().join("project.txt"), text).unwrap();
        let files = GoalFiles {
            outputs: vec!["days.txt".into()],
            inputs: vec!["project.txt".into()],
            ..Default::default()
        };
        let shown = ["project.txt".to_string()];
        let goal =
            "How many days from kickoff to go-live in project.txt? Write the number to days.txt.";
        let cx = |history| SteerContext {
            goal,
            files: &files,
            toolbox: &toolbox,
            history,
            repetition_window: 5,
            shown: &shown,
            others: &[],
        };
        let guess = write("days.txt", "19");
        let Gate::Refuse { note, .. } = ComputeCheck.gate(&cx(&[]), &guess, false) else {
            panic!("a guess went ahead");
        };
        assert!(note.contains("the number 19"), "{note}");
        // Copied from what was shown, or written elsewhere: not checked;
        // code and sentences are not values.
        assert_eq!(
            ComputeCheck.gate(&cx(&[]), &write("days.txt", "1200"), false),
            Gate::Go
        );
        // A date is one field: its parts are not numbers the run saw; nor
        // is the line count the first prompt gave the file.
        assert_ne!(
            ComputeCheck.gate(&cx(&[]), &write("days.txt", "3"), false),
            Gate::Go
        );
        assert_ne!(
            ComputeCheck.gate(&cx(&[]), &write("days.txt", "2024"), false),
            Gate::Go
        );
        assert_eq!(
            ComputeCheck.gate(&cx(&[]), &write("notes.txt", "19"), false),
            Gate::Go
        );
        let script = "for n in range(19):\n    print(n * 2)\n";
        assert_eq!(
            ComputeCheck.gate(&cx(&[]), &write("days.txt", script), false),
            Gate::Go
        );
        let sentence = "There are 19 days between them.";
        assert_eq!(
            ComputeCheck.gate(&cx(&[]), &write("days.txt", sentence), false),
            Gate::Go
        );
        // A value of a few lines is checked line by line.
        let lines = write("days.txt", "Kickoff,1200\nGo-live,19");
        assert_ne!(ComputeCheck.gate(&cx(&[]), &lines, false), Gate::Go);
        // Told once: the second guess is written.
        let told = [JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(
                1,
                "",
                "write_file",
                json!({"path": "days.txt", "content": "19"}),
            )
        }];
        assert_eq!(ComputeCheck.gate(&cx(&told), &guess, false), Gate::Go);
        // Right after the note only code may run; a round later, anything.
        assert_eq!(ComputeCheck.narrow(&cx(&[])), None);
        assert_eq!(
            ComputeCheck.narrow(&cx(&told)),
            Some(vec!["run_code".to_string()])
        );
        let later = [
            told[0].clone(),
            JournalEntry::new(2, "", "run_code", json!({"code": "print(49)"})),
        ];
        assert_eq!(ComputeCheck.narrow(&cx(&later)), None);
    }

    #[test]
    fn without_a_tool_that_runs_code_nothing_is_checked() {
        let (_dir, toolbox) = super::super::goal_files::tests::toolbox(&[]);
        let files = GoalFiles {
            outputs: vec!["days.txt".into()],
            inputs: Vec::new(),
            ..Default::default()
        };
        let cx = SteerContext {
            goal: "",
            files: &files,
            toolbox: &toolbox,
            history: &[],
            repetition_window: 5,
            shown: &[],
            others: &[],
        };
        assert_eq!(
            ComputeCheck.gate(&cx, &write("days.txt", "19"), false),
            Gate::Go
        );
    }

    #[test]
    fn the_note_names_the_numbers_and_the_file() {
        let one = note(&["19".into()], "days.txt");
        assert!(
            one.starts_with("not written yet: the number 19 is in no file"),
            "{one}"
        );
        assert!(one.contains("it was worked out in your head"));
        assert!(one.ends_with("Then write `days.txt` with what the code prints."));
        let two = note(&["3".into(), "4".into()], "x.txt");
        assert!(two.contains("the numbers 3, 4 are in no file"), "{two}");
    }
}

//! **Condition check**: a `run_code` over the goal's input files whose code
//! never mentions a value the goal selects by (a word of the goal that is a
//! value in those files: `admin` in "the rows whose role is admin") is
//! answered once with a note instead of being run, and the next decision
//! may only run code.
//!
//! Asked to count the rows whose role is admin, a small model writes
//! `print(len(rows))`; asked for the hours of the travel entries, it sums
//! every entry (EVALS.md, sections 23 and 24): the code computes something,
//! the printout looks like an answer, and the answer is wrong. The loop sees
//! it without a model call: the condition's value is a word of the goal
//! and a value in the input (a cell of a CSV or TSV file, a string of a
//! JSON file, an upper-case token such as `ERROR` or `GET` in any other
//! text), and code that applies the condition must name it. Column names
//! (a CSV's first line, a JSON object's keys) are not required: code may
//! pick a column by its position. Words of the goal's file names and words
//! of a few letters are not looked at.
//!
//! **Off by default** (`--steer condition_check=on`): on the dev suite it
//! acted in 3 runs and 2 of them passed (0.444 → 0.511 with it), on the
//! held-out suite it acted in 3 and none passed, and that suite's figure
//! did not move (EVALS.md, section 24).

use std::collections::BTreeSet;

use serde_json::Value;

use super::goal_files::base_name;
use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::ToolEffect;

/// The steer's name (switches, journals).
pub const NAME: &str = "condition_check";

/// How every note of this check begins.
const MARK: &str = "not run:";

/// How much of an input file is read for its values.
const MAX_INPUT_BYTES: usize = 256 * 1024;

/// Most words in a cell or string taken as a value (longer ones are text).
const MAX_VALUE_WORDS: usize = 3;

/// Fewest letters in a goal word that is looked at.
const MIN_WORD_CHARS: usize = 3;

/// The condition check as a steer: gates code that drops a condition.
pub struct ConditionCheck;

impl Steer for ConditionCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "answers run_code over the goal's input files, when the code never names a value the goal selects by (a goal word that is a value in those files), with a note to apply every condition (once per run); the next decision may only run code"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if cx.toolbox.effect(&decision.action.name) != ToolEffect::RunsCode
            || super::acted(cx.history, NAME)
        {
            return Gate::Go;
        }
        let Some(code) = decision.action.args.get("code").and_then(Value::as_str) else {
            return Gate::Go;
        };
        let Some(workspace) = cx.toolbox.workspace() else {
            return Gate::Go;
        };
        let read: Vec<(&str, String)> = cx
            .files
            .inputs
            .iter()
            .filter(|name| code.contains(base_name(name)))
            .filter_map(|name| {
                let text = std::fs::read(workspace.resolve(name).ok()?).ok()?;
                let text = &text[..text.len().min(MAX_INPUT_BYTES)];
                Some((name.as_str(), String::from_utf8_lossy(text).into_owned()))
            })
            .collect();
        if read.is_empty() {
            return Gate::Go;
        }
        let mut values = Values::new();
        for (name, text) in &read {
            values.extend(input_values(name, text));
        }
        let missing = missing_values(cx.goal, &values, code);
        if missing.is_empty() {
            return Gate::Go;
        }
        let files: Vec<&str> = read.iter().map(|(name, _)| *name).collect();
        Gate::refuse(note(&missing, &files))
    }

    fn narrow(&self, cx: &SteerContext<'_>) -> Option<Vec<String>> {
        super::code_after_note(cx, NAME)
    }
}

/// The values of the input files, lower-cased.
pub type Values = BTreeSet<String>;

/// The values of an input file, lower-cased: the cells of a CSV or TSV
/// file below its first line, the strings of a JSON file, the upper-case
/// tokens of any other text. Each value of a few words is kept whole and
/// word by word.
pub fn input_values(name: &str, text: &str) -> Values {
    let mut values = Values::new();
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".csv") || lower.ends_with(".tsv") {
        let delimiter = delimiter(&lower, text);
        for line in text.lines().skip(1) {
            for cell in line.split(delimiter) {
                add_value(cell.trim().trim_matches('"'), &mut values);
            }
        }
    } else if lower.ends_with(".json") || lower.ends_with(".jsonl") {
        let parsed: Vec<Value> = match serde_json::from_str::<Value>(text) {
            Ok(value) => vec![value],
            Err(_) => text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        parsed.iter().for_each(|v| json_strings(v, &mut values));
    } else {
        for token in words(text) {
            let letters = token.chars().filter(|c| c.is_alphabetic()).count();
            if letters >= MIN_WORD_CHARS
                && token.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            {
                values.insert(token.to_ascii_lowercase());
            }
        }
    }
    values
}

/// The delimiter of a delimited file: a tab for `.tsv` or a tabbed first
/// line, else `;` when the first line has more of them than commas.
fn delimiter(name: &str, text: &str) -> char {
    let first = text.lines().next().unwrap_or("");
    if name.ends_with(".tsv") || first.contains('\t') {
        '\t'
    } else if first.matches(';').count() > first.matches(',').count() {
        ';'
    } else {
        ','
    }
}

/// `cell` as a value when it is a few words with a letter: whole, and each
/// word.
fn add_value(cell: &str, values: &mut Values) {
    let cell_words: Vec<&str> = words(cell).collect();
    if cell_words.is_empty()
        || cell_words.len() > MAX_VALUE_WORDS
        || !cell.chars().any(char::is_alphabetic)
    {
        return;
    }
    values.insert(cell.to_lowercase());
    values.extend(cell_words.iter().map(|w| w.to_lowercase()));
}

/// The string leaves of `value` (not its keys), as values.
fn json_strings(value: &Value, values: &mut Values) {
    match value {
        Value::String(s) => add_value(s, values),
        Value::Array(items) => items.iter().for_each(|v| json_strings(v, values)),
        Value::Object(map) => map.values().for_each(|v| json_strings(v, values)),
        _ => {}
    }
}

/// Runs of letters, digits and `_` in `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The values of `values` that a word of `goal` names (the word itself, or
/// without a plural `s`/`es`) and `code` never mentions (compared without
/// case), once each, in the goal's order. Words of the goal's file names
/// and short words are skipped.
pub fn missing_values(goal: &str, values: &Values, code: &str) -> Vec<String> {
    let code = code.to_lowercase();
    let in_names: BTreeSet<String> = super::goal_files::named_files(goal)
        .iter()
        .flat_map(|name| words(name).map(str::to_lowercase).collect::<Vec<_>>())
        .collect();
    let mut missing: Vec<String> = Vec::new();
    for word in words(goal) {
        let word = word.to_lowercase();
        if word.chars().count() < MIN_WORD_CHARS
            || !word.chars().any(char::is_alphabetic)
            || in_names.contains(&word)
        {
            continue;
        }
        let singular = [word.strip_suffix("es"), word.strip_suffix('s')];
        let Some(value) = std::iter::once(Some(word.as_str()))
            .chain(singular)
            .flatten()
            .find(|v| v.chars().count() >= MIN_WORD_CHARS && values.contains(*v))
        else {
            continue;
        };
        if !code.contains(value) && !missing.iter().any(|m| m == value) {
            missing.push(value.to_string());
        }
    }
    missing
}

/// The observation of code over `files` that never names `missing`.
pub fn note(missing: &[String], files: &[&str]) -> String {
    let quoted: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
    let (values, verb, pronoun) = if missing.len() == 1 {
        (quoted[0].clone(), "is a value", "it")
    } else {
        (quoted.join(", "), "are values", "them")
    };
    format!(
        "{MARK} the goal names {values}, which {verb} in {}, but this code never uses {pronoun}, so it does not apply all of the goal's conditions. Write the code again: keep only what every condition of the goal selects, then print the result.",
        files.join(", ")
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::GoalFiles;
    use crate::journal::JournalEntry;
    use crate::tools::ToolStatus;

    #[test]
    fn values_are_cells_strings_and_upper_case_tokens() {
        let csv = "name,role,city\nAda,admin,New York\nBo,user,Paris\n";
        let values = input_values("data/users.csv", csv);
        assert!(["admin", "new york", "york"]
            .iter()
            .all(|v| values.contains(*v)));
        assert!(!values.contains("role"), "the header is not a value");
        let json = r#"[{"status": "open", "note": "a long free text note here"}]"#;
        let values = input_values("orders.json", json);
        assert!(values.contains("open") && !values.contains("status"));
        assert!(
            !values.contains("note"),
            "text of many words is not a value"
        );
        let log = "2024-01-01 ERROR disk full\n2024-01-01 INFO GET /index ok\n";
        let found: Vec<String> = input_values("app.log", log).into_iter().collect();
        assert_eq!(found, ["error", "get", "info"]);
        assert!(input_values("t.tsv", "a\tb\nx y\tz\n").contains("x y"));
        assert!(input_values("s.csv", "a;b\nx;Open\n").contains("open"));
    }

    #[test]
    fn a_goal_value_the_code_never_names_is_missing() {
        let values = input_values("data/users.csv", "name,role\nAda,admin\nBo,user\n");
        let goal =
            "Count the rows of data/users.csv whose role is admin. Write the number to answer.txt.";
        let dropped =
            "import csv\nrows = list(csv.DictReader(open('data/users.csv')))\nprint(len(rows))";
        assert_eq!(missing_values(goal, &values, dropped), ["admin"]);
        let kept =
            "rows = [r for r in csv.DictReader(open('data/users.csv')) if r['role'] == 'Admin']";
        assert!(missing_values(goal, &values, kept).is_empty());
        // A plural in the goal names the singular value.
        let goal = "How many admins are in data/users.csv?";
        assert_eq!(missing_values(goal, &values, dropped), ["admin"]);
        // Words of file names, headers and short words are not conditions.
        let values = input_values("users.csv", "id,role\n1,users\n2,ab\n");
        assert!(missing_values(
            "Read users.csv; list each role by id, ab first",
            &values,
            ""
        )
        .is_empty());
    }

    #[test]
    fn the_note_names_the_values_and_the_files() {
        let one = note(&["travel".into()], &["expenses.csv"]);
        assert!(
            one.starts_with(MARK) && one.contains("'travel', which is a value in expenses.csv"),
            "{one}"
        );
        let two = note(
            &["error".into(), "travel".into()],
            &["app.log", "expenses.csv"],
        );
        assert!(
            two.contains("'error', 'travel', which are values in app.log, expenses.csv"),
            "{two}"
        );
    }

    /// A `run_code` decision of Python `code` (shared by the code checks' tests).
    pub(crate) fn run_code(code: &str) -> Decision {
        Decision {
            thought: String::new(),
            action: crate::decision::Action {
                name: "run_code".into(),
                args: json!({"language": "python", "code": code}),
            },
            result: None,
            repaired: false,
        }
    }

    #[test]
    fn code_that_drops_a_condition_is_refused_once_then_only_code_runs() {
        let (dir, toolbox) = super::super::write_offer::tests::toolbox();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(
            dir.path().join("data/users.csv"),
            "name,role\nAda,admin\nBo,user\nCy,admin\n",
        )
        .unwrap();
        let files = GoalFiles {
            outputs: vec!["answer.txt".into()],
            inputs: vec!["data/users.csv".into()],
            ..Default::default()
        };
        let goal = "Count the rows of data/users.csv whose role is admin. Write just the number to answer.txt.";
        let cx = |history| SteerContext {
            goal,
            files: &files,
            toolbox: &toolbox,
            history,
            repetition_window: 5,
            shown: &[],
            others: &[],
        };
        let dropped =
            run_code("import csv\nprint(len(list(csv.DictReader(open('data/users.csv')))))");
        let Gate::Refuse { note, .. } = ConditionCheck.gate(&cx(&[]), &dropped, false) else {
            panic!("code without the condition ran");
        };
        assert!(
            note.contains("'admin'") && note.contains("data/users.csv"),
            "{note}"
        );
        // Code that does not open the input is not looked at.
        assert_eq!(
            ConditionCheck.gate(&cx(&[]), &run_code("print(2)"), false),
            Gate::Go
        );
        let told = [JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(1, "", "run_code", dropped.action.args.clone())
        }];
        assert_eq!(ConditionCheck.gate(&cx(&told), &dropped, false), Gate::Go);
        assert_eq!(
            ConditionCheck.narrow(&cx(&told)),
            Some(vec!["run_code".to_string()])
        );
        assert_eq!(ConditionCheck.narrow(&cx(&[])), None);
    }
}

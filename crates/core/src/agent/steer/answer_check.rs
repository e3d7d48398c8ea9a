//! **Answer check**: a `finish` whose answer is a bare value while the
//! goal's file holds that value inside more words (`La nota media es:
//! 7.6`, `Total: 27`) is answered, once, with the write of the value
//! alone spelled out, instead of ending the run.
//!
//! Small models write a value into a sentence or behind a label, by
//! `write_file` or from a program's `f'Total: {total}'`, and then answer
//! `finish` with the bare value (session 38's dev journals: a Spanish goal
//! that said "write only the number", the label check missed it, because
//! it watches `write_file` alone and only English "just"/"only"). Checking
//! at the finish sees every way the file was written, and the model's own
//! answer says what it meant the file to hold. The loop sees it without a
//! model call: one of the goal's output files is one short line that holds the
//! answer as a whole word with other text around it, and the goal neither
//! spells that other text out nor asks for a sentence or a program's
//! output. A reply spelled out is copied almost every time (see
//! [`write_offer`](super::write_offer)); a second `finish` ends the run
//! whatever the file holds.
//!
//! **Off by default since session 40** (EVALS.md, section 37): it acted in
//! 1 run of each dev pass and in none of 152 held-out runs (four passes,
//! sessions 39 and 40), so by the project's rule it is a patch of the dev
//! suite; `--steer answer_check=on` turns it on.

use std::sync::LazyLock;

use regex::Regex;

use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "answer_check";

/// The answer check as a steer: gates a `finish` whose bare answer sits
/// inside more words in the goal's file.
pub struct AnswerCheck;

impl Steer for AnswerCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "answers the first `finish` whose bare answer sits inside more words in the goal's file with the write of the answer alone spelled out"
    }

    fn on_by_default(&self) -> bool {
        // Acted in no held-out run of four passes (EVALS.md, section 37).
        false
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if !decision.is_finish() || super::acted(cx.history, NAME) {
            return Gate::Go;
        }
        let Some(result) = decision.action.args.get("result").and_then(|r| r.as_str()) else {
            return Gate::Go;
        };
        refusal(cx.goal, &cx.files.outputs, result, cx.toolbox).map_or(Gate::Go, Gate::refuse)
    }
}

/// Most words in an answer offered alone.
const MAX_WORDS: usize = 3;

/// Most characters in an answer offered alone.
const MAX_CHARS: usize = 40;

/// Most characters on the file's line: a value with a label or a short
/// sentence around it. A longer line is prose the goal may want (a
/// one-line summary that happens to hold the answer's word).
const MAX_LINE: usize = 80;

/// A goal that asks for text around the value: a sentence, a line of a
/// given form, or what a program prints.
static WORDS_WANTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)sentence|phrase|\bsaying\b|\bin the form\b|\bformat|\bexactly\b|\bprint|\boutput\b|\blabel|\bsatz\b|\bfrase\b|句")
        .expect("valid regex")
});

/// The note that answers a `finish` with `result` instead of ending the
/// run, when one of `outputs` (the goal's files to write) is one line that
/// holds `result` as a whole word among other text the `goal` does not
/// spell out; `None` when the finish may go.
pub fn refusal(goal: &str, outputs: &[String], result: &str, toolbox: &Toolbox) -> Option<String> {
    let answer = bare(result)?;
    if WORDS_WANTED.is_match(goal) {
        return None;
    }
    let writes = toolbox.first_with(ToolEffect::Writes)?;
    let workspace = toolbox.workspace()?;
    let goal_lower = goal.to_lowercase();
    outputs.iter().find_map(|file| {
        let path = workspace.resolve(file).ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > 1024 {
            return None;
        }
        let content = std::fs::read_to_string(&path).ok()?;
        let line = content.trim();
        if line.contains('\n') || line == answer || line.chars().count() > MAX_LINE {
            return None;
        }
        let start = whole_word_at(line, answer)?;
        let around = format!("{} {}", &line[..start], &line[start + answer.len()..]);
        let around = around.trim_matches(|c: char| c.is_whitespace() || ".,;:!=-".contains(c));
        // "Write `Total: <n>` to total.txt": the goal spells the words out.
        if around.is_empty() || goal_lower.contains(&around.to_lowercase()) {
            return None;
        }
        let reply = serde_json::json!({
            "thought": format!("{file} must hold the answer alone"),
            "action": {"name": writes, "args": {"path": file, "content": answer}},
        });
        Some(format!(
            "not finished yet: `{file}` holds `{line}`, and your answer is `{answer}`. If the file should hold the answer alone, reply {reply}. If the goal asks for those other words too, finish again."
        ))
    })
}

/// `result` as a value that could stand alone in a file: trimmed of
/// quotes, backticks and a final stop, a few words, short, one line.
fn bare(result: &str) -> Option<&str> {
    let answer = result
        .trim()
        .trim_end_matches('.')
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim()
        .trim_end_matches('.')
        .trim();
    let short = !answer.is_empty()
        && answer.chars().count() <= MAX_CHARS
        && answer.split_whitespace().count() <= MAX_WORDS
        && !answer.contains('\n');
    short.then_some(answer)
}

/// Where `word` first stands in `line` as a whole word (no letter or
/// digit right before or after it).
fn whole_word_at(line: &str, word: &str) -> Option<usize> {
    line.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
        // "7.6" inside "17.65", a "." that continues a number
        let number_goes_on = line[i + word.len()..]
            .strip_prefix('.')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        !joins(before) && !joins(after) && !number_goes_on
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::journal::JournalEntry;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    fn workspace(file: &str, content: &str) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(file), content).unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    fn outputs() -> Vec<String> {
        vec!["media.txt".into()]
    }

    const GOAL: &str =
        "Lee notas.csv y calcula la nota media. Escribe solo el número en media.txt.";

    #[test]
    fn a_bare_answer_inside_a_sentence_is_offered_alone() {
        let (_dir, toolbox) = workspace("media.txt", "La nota media es: 7.6");
        let note = refusal(GOAL, &outputs(), "7.6", &toolbox).unwrap();
        assert_eq!(
            note,
            "not finished yet: `media.txt` holds `La nota media es: 7.6`, and your answer is `7.6`. If the file should hold the answer alone, reply {\"thought\":\"media.txt must hold the answer alone\",\"action\":{\"name\":\"write_file\",\"args\":{\"path\":\"media.txt\",\"content\":\"7.6\"}}}. If the goal asks for those other words too, finish again."
        );
        let (_dir, toolbox) = workspace("media.txt", "Total: 27\n");
        assert!(refusal(GOAL, &outputs(), "\"27\".", &toolbox).is_some());
    }

    #[test]
    fn right_files_spelled_out_words_sentences_and_long_answers_go() {
        let (_dir, toolbox) = workspace("media.txt", "7.6\n");
        assert!(refusal(GOAL, &outputs(), "7.6", &toolbox).is_none());
        // A number that only starts the file's number is another value.
        let (_dir, toolbox) = workspace("media.txt", "avg 17.65");
        assert!(refusal(GOAL, &outputs(), "7.6", &toolbox).is_none());
        let (_dir, toolbox) = workspace("media.txt", "Total: 27");
        let spelled = "Write Total: and the sum to media.txt.";
        assert!(refusal(spelled, &outputs(), "27", &toolbox).is_none());
        let sentence = "Write a sentence with the sum to media.txt.";
        assert!(refusal(sentence, &outputs(), "27", &toolbox).is_none());
        let printed = "Run calc.py and write what it prints to media.txt.";
        assert!(refusal(printed, &outputs(), "27", &toolbox).is_none());
        assert!(refusal(GOAL, &outputs(), "The total is 27 in all", &toolbox).is_none());
        // A one-line summary that holds the answer's word is prose.
        let (_dir, toolbox) = workspace(
            "media.txt",
            "Hermes is a runtime for agents, and it finishes real multi-step work reliably on small models.",
        );
        assert!(refusal(GOAL, &outputs(), "Hermes", &toolbox).is_none());
        // Lists are not one value.
        let (_dir, toolbox) = workspace("media.txt", "a: 1\nb: 2");
        assert!(refusal(GOAL, &outputs(), "1", &toolbox).is_none());
        // A file that is not an output is not looked at.
        assert!(refusal(GOAL, &["other.txt".into()], "27", &toolbox).is_none());
    }

    #[test]
    fn the_run_is_told_once() {
        let (_dir, toolbox) = workspace("media.txt", "La nota media es: 7.6");
        let files = super::super::GoalFiles {
            outputs: outputs(),
            ..Default::default()
        };
        let reply = json!({"thought": "", "action": {"name": "finish", "args": {"result": "7.6"}}});
        let finish = crate::decision::parse_decision(&reply.to_string()).unwrap();
        let cx = super::super::test_context(GOAL, &files, &toolbox, &[]);
        assert!(matches!(
            AnswerCheck.gate(&cx, &finish, false),
            Gate::Refuse { .. }
        ));
        let told = JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(3, "", crate::decision::FINISH, json!({"result": "7.6"}))
        };
        let history = [told];
        let cx = super::super::test_context(GOAL, &files, &toolbox, &history);
        assert_eq!(AnswerCheck.gate(&cx, &finish, false), Gate::Go);
    }
}

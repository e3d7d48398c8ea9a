//! **Code judge**: when the programs of a code vote (see
//! [`super::code_vote`]) disagree, the model is shown the programs that
//! gave each outcome side by side, with what each printed and wrote, and
//! asked which one does what the goal asks; its choice acts instead of
//! the count.
//!
//! Why: the vote counts answers, and a small model's misreading of a goal
//! is systematic (EVALS.md, section 35): drawn from the same prompt, most
//! programs share it, so the majority is often the misreading (a count of
//! every row against one of the rows the goal names, a JSON array against
//! one object per line). Telling programs apart is an easier task than
//! writing the right one: the difference between two candidates (one
//! filters on the column the goal names, the other does not) is on the
//! page, and so are their outcomes. This is verification by the
//! generator itself, as in CodeT or LEVER, without tests to run: the
//! goal is the specification.
//!
//! The contenders are listed with the count's choice first (so a model
//! that merely copies the first lands where the count would have), then
//! by answers; their number of answers is not shown. The reply is a reason, then
//! a letter, decoded under a schema; a reply that cannot be read leaves
//! the count's choice in place.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{Judging, Steer, SteerContext};
use crate::decision::Decision;
use crate::text::clip;

/// The steer's name (switches, journals).
pub const NAME: &str = "code_judge";

/// Most characters of one contender's program shown.
pub const PROGRAM_CHARS: usize = 900;
/// Most characters of one contender's outcome shown.
pub const OUTCOME_CHARS: usize = 400;
/// Most characters of the judge's reason.
pub const REASON_CHARS: u64 = 300;

/// The code judge as a steer.
pub struct CodeJudge;

impl Steer for CodeJudge {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "when the programs of a code vote disagree, shows the model each outcome's program and what it printed and wrote, and lets it choose the one that does what the goal asks (its choice acts instead of the count)"
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn judge(&self, cx: &SteerContext<'_>, contenders: &[(&Decision, &str)]) -> Option<Judging> {
        (contenders.len() >= 2).then(|| Judging {
            question: question(cx.goal, contenders),
            schema: schema(contenders.len()),
        })
    }
}

/// The letter of contender `index` (0-based): `A`, `B`, ….
fn letter(index: usize) -> char {
    char::from(b'A' + u8::try_from(index % 26).unwrap_or(0))
}

/// The question appended to the round's prompt: each contender's program
/// and outcome, then the goal and how to answer.
pub fn question(goal: &str, contenders: &[(&Decision, &str)]) -> String {
    let mut text = String::from(
        "Before a program runs for this round, several programs for it were tried on a copy of the workspace, and they do not agree:\n",
    );
    for (i, (decision, outcome)) in contenders.iter().enumerate() {
        let code = decision.action.args["code"].as_str().unwrap_or_default();
        let _ = write!(
            text,
            "\n[{}]\n```python\n{}\n```\n{}\n",
            letter(i),
            clip(code.trim(), PROGRAM_CHARS),
            shown_outcome(outcome)
        );
    }
    let letters: Vec<String> = (0..contenders.len())
        .map(|i| letter(i).to_string())
        .collect();
    let _ = write!(
        text,
        "\nThe goal: {}\nWhich program does exactly what the goal asks, with the data as the files hold it? Compare what they do differently and check their results against the files' data, then choose. Reply {{\"reason\": \"...\", \"choice\": \"{}\"}} with one of {}.",
        goal.trim(),
        letters[0],
        letters.join(", ")
    );
    text
}

/// An outcome as the question shows it: what was printed, then each file
/// written (the vote's outcome text: stdout, then `\0path\0text` per file).
fn shown_outcome(outcome: &str) -> String {
    let mut parts = outcome.split("\n\u{0}");
    let printed = parts.next().unwrap_or_default().trim();
    let mut text = if printed.is_empty() {
        "It printed nothing.".to_string()
    } else {
        format!("It printed:\n{}", clip(printed, OUTCOME_CHARS))
    };
    for file in parts {
        let (path, content) = file.split_once('\u{0}').unwrap_or((file, ""));
        let _ = write!(
            text,
            "\nIt wrote `{path}`:\n{}",
            clip(content.trim(), OUTCOME_CHARS)
        );
    }
    text
}

/// The schema of the judge's reply for `count` contenders: a reason, then
/// one of their letters.
pub fn schema(count: usize) -> Value {
    let letters: Vec<String> = (0..count).map(|i| letter(i).to_string()).collect();
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string", "maxLength": REASON_CHARS},
            "choice": {"enum": letters}
        },
        "required": ["reason", "choice"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(code: &str) -> Decision {
        let reply = json!({"thought": "", "action": {"name": "run_code", "args": {"language": "python", "code": code}}});
        crate::decision::parse_decision(&reply.to_string()).unwrap()
    }

    #[test]
    fn the_question_shows_each_program_and_what_it_printed_and_wrote() {
        let all = program("print(len(rows))");
        let admins = program("print(sum(r['role'] == 'admin' for r in rows))");
        let contenders = [(&all, "7"), (&admins, "\n\u{0}answer.txt\u{0}3")];
        let text = question("Count the admins in users.csv.", &contenders);
        assert!(
            text.contains("[A]\n```python\nprint(len(rows))\n```\nIt printed:\n7"),
            "{text}"
        );
        assert!(
            text.contains("[B]\n```python\nprint(sum(r['role'] == 'admin' for r in rows))\n```\nIt printed nothing.\nIt wrote `answer.txt`:\n3"),
            "{text}"
        );
        assert!(text.contains("The goal: Count the admins in users.csv."));
        assert!(text.ends_with("with one of A, B."), "{text}");
    }

    #[test]
    fn the_reply_is_a_reason_then_a_letter_of_a_contender() {
        let schema = schema(3);
        assert_eq!(
            schema["properties"]["choice"]["enum"],
            json!(["A", "B", "C"])
        );
        assert_eq!(schema["required"], json!(["reason", "choice"]));
        let judging = Judging {
            question: String::new(),
            schema,
        };
        assert_eq!(
            judging.choice(r#"{"reason": "filters", "choice": "B"}"#),
            Some((1, "filters".into()))
        );
        // Not a contender, not a letter, not JSON: no choice.
        assert_eq!(judging.choice(r#"{"reason": "", "choice": "D"}"#), None);
        assert_eq!(judging.choice(r#"{"reason": "", "choice": 1}"#), None);
        assert_eq!(judging.choice("B"), None);
    }

    #[test]
    fn one_contender_is_not_judged() {
        let toolbox = crate::tools::Toolbox::new();
        let goal = "Count the admins.";
        let files = super::super::GoalFiles::default();
        let cx = super::super::test_context(goal, &files, &toolbox, &[]);
        let only = program("print(3)");
        assert!(CodeJudge.judge(&cx, &[(&only, "3")]).is_none());
        let other = program("print(7)");
        assert!(CodeJudge
            .judge(&cx, &[(&only, "3"), (&other, "7")])
            .is_some());
    }
}

//! **Label check**: a `write_file` of `code: ORCHID-42` into the goal's
//! file, where the goal asks for "just the code", is answered once with
//! the write of the value alone, spelled out, instead of being carried out.
//!
//! A file that holds `code: ORCHID-42` is copied whole by small models,
//! label included, though the goal says "write just the code" (every run of
//! follow-the-pointer in EVALS.md, sections 13 and 14). The loop sees it
//! without a model call: the goal asks for just or only a value, the text
//! is one line of a short label, a `:` or `=`, and a value. A reply spelled
//! out in the observation is copied almost every time (see
//! [`write_offer`](super::write_offer)); a second such write is carried
//! out, so a value that really has a label still gets written.
//!
//! **Off by default since session 34** (EVALS.md, section 29, the helpers'
//! ablation): it acted in none of 121 runs of the dev and held-out suites
//! with today's other helpers (the input preview counts as a read and
//! shows the files whole), so it cannot help there; `--steer label_check=on`
//! turns it on.

use std::sync::LazyLock;

use regex::Regex;

use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::journal::JournalEntry;
use crate::tools::ToolEffect;

/// The steer's name (switches, journals).
pub const NAME: &str = "label_check";

/// The label check as a steer: gates writes of a labelled value.
pub struct LabelCheck;

impl Steer for LabelCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "answers a write of `label: value` into the goal's file, where the goal asks for just the value, with the bare write spelled out"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if cx.toolbox.effect(&decision.action.name) != ToolEffect::Writes {
            return Gate::Go;
        }
        refusal(cx.goal, &cx.files.outputs, decision, cx.history).map_or(Gate::Go, Gate::refuse)
    }
}

/// How every note of this check begins.
const MARK: &str = "not written yet: the goal asks for just the value";

/// Most words in a value offered alone (a name may have a few).
const MAX_VALUE_WORDS: usize = 3;

/// A goal that asks for a bare value: "just the code", "only the number",
/// "只写名字".
static BARE_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(just|only)\b|只").expect("valid regex"));

/// One line: a short label, `:` or `=`, a value.
static LABELLED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<label>[A-Za-z][A-Za-z _-]{0,29}?)\s*[:=]\s*(?P<value>\S.*)$")
        .expect("valid regex")
});

/// The note that answers `decision` instead of running it, when it writes
/// one of the goal's `outputs` with a labelled value while `goal` asks for
/// just the value, and the run has not been told before; `None` when the
/// write may go ahead. `decision` is taken to be a write (`path`, `content`).
pub fn refusal(
    goal: &str,
    outputs: &[String],
    decision: &Decision,
    history: &[JournalEntry],
) -> Option<String> {
    if !BARE_VALUE.is_match(goal) {
        return None;
    }
    let (path, content) = super::goal_files::output_write(outputs, decision)?;
    let told = super::acted(history, NAME);
    if told {
        return None;
    }
    // "Write only the line `Status: OK`": the goal asks for the label too.
    if goal.contains(content.trim()) {
        return None;
    }
    let (label, value) = labelled(content)?;
    let reply = serde_json::json!({
        "thought": format!("{path} must hold the value alone"),
        "action": {"name": decision.action.name, "args": {"path": path, "content": value}},
    });
    Some(format!(
        "{MARK}, and `{}` carries the label `{label}`. If `{value}` is the value, reply {reply}",
        content.trim()
    ))
}

/// The label and the value of `content` when it is one line of the form
/// `label: value` or `label = value` and the value is a few words, not a
/// path, a URL or a sentence.
fn labelled(content: &str) -> Option<(&str, &str)> {
    let line = content.trim();
    if line.contains('\n') {
        return None;
    }
    let caps = LABELLED.captures(line)?;
    let label = caps.name("label")?.as_str().trim();
    let value = caps
        .name("value")?
        .as_str()
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    let plain = !value.is_empty()
        && !value.starts_with('/')
        && value.split_whitespace().count() <= MAX_VALUE_WORDS;
    plain.then_some((label, value))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::Action;
    use crate::tools::ToolStatus;

    const WRITE: &str = "write_file";

    const GOAL: &str = "Follow start.txt to the access code and write just the code to answer.txt.";

    fn write(path: &str, content: &str) -> Decision {
        Decision {
            thought: String::new(),
            action: Action {
                name: WRITE.into(),
                args: json!({"path": path, "content": content}),
            },
            result: None,
            repaired: false,
        }
    }

    fn outputs() -> Vec<String> {
        vec!["answer.txt".to_string()]
    }

    #[test]
    fn a_labelled_value_is_refused_once_with_the_bare_write_spelled_out() {
        let note = refusal(
            GOAL,
            &outputs(),
            &write("answer.txt", "code: ORCHID-42\n"),
            &[],
        )
        .unwrap();
        assert_eq!(
            note,
            r#"not written yet: the goal asks for just the value, and `code: ORCHID-42` carries the label `code`. If `ORCHID-42` is the value, reply {"thought":"answer.txt must hold the value alone","action":{"name":"write_file","args":{"path":"answer.txt","content":"ORCHID-42"}}}"#
        );
        let mut told = JournalEntry::new(1, "", WRITE, json!({"path": "answer.txt"}));
        told.status = ToolStatus::Error;
        told.observation = format!("{{\"status\":\"error\",\"error\":\"{note}\"}}");
        told.steered_by = Some(NAME.into());
        assert_eq!(
            refusal(
                GOAL,
                &outputs(),
                &write("answer.txt", "code: ORCHID-42"),
                &[told]
            ),
            None
        );
        let port = refusal(
            "Write just the port to answer.txt",
            &outputs(),
            &write("./answer.txt", "port = \"5432\""),
            &[],
        )
        .unwrap();
        assert!(port.contains(r#""content":"5432""#), "{port}");
    }

    #[test]
    fn values_sentences_other_files_and_goals_without_just_are_left_alone() {
        let left_alone = |goal: &str, path: &str, content: &str| {
            refusal(goal, &outputs(), &write(path, content), &[]).is_none()
        };
        assert!(left_alone(GOAL, "answer.txt", "ORCHID-42"));
        assert!(left_alone(GOAL, "answer.txt", "12:30"));
        assert!(left_alone(GOAL, "answer.txt", "https://example.com/a"));
        assert!(left_alone(GOAL, "answer.txt", "path: /etc/hosts"));
        assert!(left_alone(
            GOAL,
            "answer.txt",
            "note: the code is in the file named in vault/where.txt"
        ));
        assert!(left_alone(GOAL, "answer.txt", "code: A\nother: B"));
        assert!(left_alone(GOAL, "notes.txt", "code: ORCHID-42"));
        assert!(left_alone(
            "Write only the line Status: OK to answer.txt",
            "answer.txt",
            "Status: OK\n"
        ));
        assert!(left_alone(
            "Write the access code to answer.txt.",
            "answer.txt",
            "code: ORCHID-42"
        ));
    }
}

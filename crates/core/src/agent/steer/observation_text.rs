//! **Observation text**: a text of several lines inside an observation — a
//! file's lines, a program's output, a traceback — is shown under the
//! envelope as lines, between `---` marks, instead of as one JSON string
//! with `\n` escapes.
//!
//! Why: the envelope is compact JSON, so a CSV of six rows that `read_file`
//! returned reaches the model as `"data":"nr,kunde,status\n1001,Weber,offen\n…"`,
//! one line. Counting its rows, finding the rows with a value, or reading a
//! program's second line of output is then a matter of splitting on a
//! two-character escape in the head, which a 1.5B model does badly (the
//! dev journals of EVALS.md section 42: `6` open orders of 3 and `10`
//! distinct addresses of 5, both counted from a `read_file` observation).
//! The first prompt's preview of the goal's files already shows them as
//! lines, between the same marks. The journal keeps the envelope as it was;
//! only the prompt's rendering of a past round changes, and the envelope
//! stays in place with each lifted text named (`"data": "<7 lines, below>"`).
//!
//! A text is lifted when it holds a line break before its last line: the
//! envelope's `data` when it is one, each string field of `data` when it is
//! an object (a run's `stdout`, `stderr`), and `error`. An observation that
//! is not an envelope (an untrusted tool's marked text) is shown as it is.
//!
//! **Off by default** until measured on both suites (`--steer
//! observation_text=on`).

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use super::Steer;

/// The steer's name (switches, journals).
pub const NAME: &str = "observation_text";

/// Observation text as a steer: a switch read by the prompt's rendering of
/// past rounds (see [`shown`]). It adds nothing to the system prompt (the
/// marks say what they hold), so a run whose observations are all one line
/// gets the prompts it would get with the switch off, word for word.
pub struct ObservationText;

impl Steer for ObservationText {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "shows a text of several lines inside an observation (a file, a program's output) as lines under the envelope, between --- marks, instead of one escaped JSON string"
    }
}

/// `observation` as the prompt shows it: the envelope with its texts of
/// several lines lifted out and written under it as lines, or the
/// observation unchanged when it holds none (or is not an envelope).
pub fn shown(observation: &str) -> Cow<'_, str> {
    // Nothing to lift without an escaped line break.
    if !observation.contains("\\n") {
        return Cow::Borrowed(observation);
    }
    let Ok(Value::Object(mut envelope)) = serde_json::from_str::<Value>(observation) else {
        return Cow::Borrowed(observation);
    };
    let mut lifted: Vec<(String, String)> = Vec::new();
    for key in ["data", "error"] {
        match envelope.get_mut(key) {
            Some(value @ Value::String(_)) => lift(key, value, &mut lifted),
            Some(Value::Object(fields)) if key == "data" => {
                for (name, value) in fields.iter_mut() {
                    lift(name, value, &mut lifted);
                }
            }
            _ => {}
        }
    }
    if lifted.is_empty() {
        return Cow::Borrowed(observation);
    }
    let mut text = serde_json::to_string(&envelope).unwrap_or_else(|_| observation.to_string());
    for (name, body) in &lifted {
        let lines = body.lines().count();
        let noun = if lines == 1 { "line" } else { "lines" };
        let _ = write!(
            text,
            "\n--- {name} ({lines} {noun}) ---\n{body}\n--- end of {name} ---"
        );
    }
    Cow::Owned(text)
}

/// `observation` as a prompt shows it: [`shown`] when the steer is `on`,
/// else unchanged (both history layouts call this one switch).
pub fn for_prompt(on: bool, observation: &str) -> Cow<'_, str> {
    if on {
        shown(observation)
    } else {
        Cow::Borrowed(observation)
    }
}

/// Moves `value`'s text into `lifted` under `name` and leaves its
/// placeholder, when it is a text of several lines.
fn lift(name: &str, value: &mut Value, lifted: &mut Vec<(String, String)>) {
    let Value::String(text) = value else {
        return;
    };
    let body = text.trim_end_matches(['\n', '\r']);
    if !body.contains('\n') {
        return;
    }
    let body = body.to_string();
    let lines = body.lines().count();
    *value = Value::String(format!("<{lines} lines, below>"));
    lifted.push((name.to_string(), body));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_is_shown_as_lines_under_its_envelope() {
        let raw = r#"{"status":"ok","data":"nr,status\n1,offen\n2,geliefert\n","error":null}"#;
        let text = shown(raw);
        assert_eq!(
            text,
            "{\"status\":\"ok\",\"data\":\"<3 lines, below>\",\"error\":null}\n--- data (3 lines) ---\nnr,status\n1,offen\n2,geliefert\n--- end of data ---"
        );
    }

    #[test]
    fn a_program_s_output_keeps_its_fields_in_order_and_lifts_each_text() {
        let raw = r#"{"status":"ok","data":{"exit_code":1,"stdout":"a\nb\n","stderr":"Traceback:\n  line 1\nNameError: x\n","seconds":0.1},"error":null}"#;
        let text = shown(raw);
        assert!(
            text.starts_with(
                r#"{"status":"ok","data":{"exit_code":1,"stdout":"<2 lines, below>","stderr":"<3 lines, below>","seconds":0.1},"error":null}"#
            ),
            "{text}"
        );
        assert!(text.contains("\n--- stdout (2 lines) ---\na\nb\n--- end of stdout ---"));
        assert!(text.ends_with(
            "\n--- stderr (3 lines) ---\nTraceback:\n  line 1\nNameError: x\n--- end of stderr ---"
        ));
    }

    #[test]
    fn one_line_texts_and_other_text_stay_as_they_are() {
        for raw in [
            r#"{"status":"ok","data":{"stdout":"7\n","stderr":""},"error":null}"#,
            r#"{"status":"error","data":null,"error":"no such file: a.txt"}"#,
            "<untrusted source=\"http_fetch\">\n{\"data\":\"a\\nb\"}\n</untrusted>",
            "not json \\n at all",
        ] {
            assert_eq!(shown(raw), raw);
        }
    }

    #[test]
    fn a_multi_line_error_is_lifted_too() {
        let raw = r#"{"status":"error","data":null,"error":"bad call:\n- path is required"}"#;
        assert!(shown(raw).ends_with(
            "--- error (2 lines) ---\nbad call:\n- path is required\n--- end of error ---"
        ));
    }
}

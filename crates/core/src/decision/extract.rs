//! Finds the JSON snippets inside a model's free text, in the order a
//! reader would meet them.

use serde_json::{json, Map, Value};

use super::call::{self, excerpt};
use super::{json::parse_value, shape, Action, Decision, DecisionError, FINISH};

/// Removes a byte-order mark and `<think>…</think>` blocks (which may hold
/// braces that are not the answer).
pub(super) fn clean(raw: &str) -> String {
    let mut text = raw.trim_start_matches('\u{feff}').to_string();
    while let Some(start) = text.find("<think>") {
        match text[start..].find("</think>") {
            Some(end) => text.replace_range(start..start + end + "</think>".len(), ""),
            // An unclosed think block: the answer, if any, is not inside it.
            None => text.truncate(start),
        }
    }
    text
}

/// The text after a `Thought:` label, up to `Action:` or the first `{`.
pub(super) fn labelled_thought(text: &str) -> Option<String> {
    let start = find_label(text, "thought:")?;
    let rest = &text[start..];
    let end = [find_label_start(rest, "action:"), rest.find('{')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let thought = rest[..end].trim();
    (!thought.is_empty()).then(|| thought.to_string())
}

/// Candidate JSON snippets, most explicit first: `<tool_call>` contents,
/// fenced blocks, then every balanced top-level `{…}` (and a cut-off tail).
pub(super) fn candidates(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for body in tagged(text, "<tool_call>", "</tool_call>") {
        push(body);
    }
    for body in fenced(text) {
        push(body);
    }
    for object in balanced_objects(text) {
        push(object);
    }
    out
}

/// Bodies between `open` and `close` tags; an unclosed tag runs to the end.
fn tagged<'a>(text: &'a str, open: &str, close: &str) -> Vec<&'a str> {
    let mut bodies = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        match after.find(close) {
            Some(end) => {
                bodies.push(&after[..end]);
                rest = &after[end + close.len()..];
            }
            None => {
                bodies.push(after);
                break;
            }
        }
    }
    bodies
}

/// Bodies of ``` fences (with or without a language tag).
fn fenced(text: &str) -> Vec<&str> {
    tagged(text, "```", "```")
        .into_iter()
        .map(|body| {
            // Drop a language tag such as `json` on the opening line.
            let first_line_end = body.find('\n').unwrap_or(0);
            let tag = &body[..first_line_end];
            if tag.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
                &body[first_line_end..]
            } else {
                body
            }
        })
        .collect()
}

/// Every top-level `{…}` in `text`, tracking double-quoted strings so braces
/// inside them do not count. An object still open at the end (output cut by
/// the token limit) is returned from its `{` to the end.
fn balanced_objects(text: &str) -> Vec<&str> {
    let mut objects = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' | '”' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '“' if depth > 0 => in_string = true,
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    objects.push(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    if depth > 0 {
        objects.push(&text[start..]);
    }
    objects
}

/// A ReAct action line written as a call: `Action: read_file(path="a")`.
/// `None` when there is no such line, or when a `Final Answer:` label makes
/// the text a finish (see [`react_text`]). The call may span lines (a
/// multi-line string argument); whatever follows it is ignored. It is read
/// before any JSON in the text, since JSON there is one of its arguments.
pub(super) fn react_call(text: &str) -> Option<Result<Decision, DecisionError>> {
    if !text.contains('(') || find_label(text, "final answer:").is_some() {
        return None;
    }
    let rest = &text[find_label(text, "action:")?..];
    match call::parse(rest) {
        Ok(None) => None,
        Ok(Some(parsed)) => {
            let quoted = rest[..parsed.end].trim().to_string();
            let thought = labelled_thought(text).unwrap_or_default();
            Some(shape::from_call(parsed, &quoted, thought))
        }
        Err(reason) => Some(Err(DecisionError::BadCall {
            call: excerpt(rest),
            reason,
        })),
    }
}

/// Classic ReAct text without JSON around the action:
/// `Action: read_file` / `Action Input: {...}`, or `Final Answer: ...`.
pub(super) fn react_text(text: &str) -> Option<Decision> {
    let thought = labelled_thought(text).unwrap_or_default();
    if let Some(start) = find_label(text, "final answer:") {
        let result = text[start..].trim().to_string();
        return Some(Decision {
            thought,
            action: Action {
                name: FINISH.into(),
                args: json!({ "result": result }),
            },
            result: Some(result),
            repaired: true,
        });
    }
    let start = find_label(text, "action:")?;
    let line = text[start..].lines().next()?.trim();
    let name: String = line
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    if name.is_empty() {
        return None;
    }
    let args = find_label(text, "action input:")
        .and_then(|at| parse_value(text[at..].trim()).ok())
        .map(|(v, _)| v)
        .and_then(|v| match v {
            Value::Object(map) => Some(Value::Object(map)),
            _ => None,
        })
        .unwrap_or_else(|| Value::Object(Map::new()));
    Some(Decision {
        thought,
        action: Action { name, args },
        result: None,
        repaired: true,
    })
}

/// Byte offset just after a case-insensitive `label` that starts a line.
fn find_label(text: &str, label: &str) -> Option<usize> {
    find_label_start(text, label).map(|at| at + label.len())
}

/// Byte offset of a case-insensitive `label` that starts a line.
fn find_label_start(text: &str, label: &str) -> Option<usize> {
    // ASCII lowercase keeps byte offsets identical to the original text.
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(label) {
        let at = from + found;
        let line_start = lower[..at].rfind('\n').map_or(0, |n| n + 1);
        if lower[line_start..at].trim().is_empty() {
            return Some(at);
        }
        from = at + label.len();
    }
    None
}

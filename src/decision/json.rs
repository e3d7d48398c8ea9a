//! Turns one candidate snippet into a JSON value: strict first, then after a
//! light preparation, then through the `llm_json` repair crate.

use serde_json::Value;

use super::DecisionError;

/// Deepest nesting accepted. A decision needs about five levels; the repair
/// crate recurses per level, so anything far deeper is refused up front.
pub(super) const MAX_DEPTH: usize = 64;

/// Parses `text` into a JSON value. The flag says whether repair was needed.
pub(super) fn parse_value(text: &str) -> Result<(Value, bool), DecisionError> {
    let depth = nesting_depth(text);
    if depth > MAX_DEPTH {
        return Err(DecisionError::TooDeep {
            depth,
            limit: MAX_DEPTH,
        });
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok((value, false));
    }
    let prepared = prepare(text);
    if let Ok(value) = serde_json::from_str::<Value>(&prepared) {
        return Ok((value, true));
    }
    let options = llm_json::RepairOptions {
        ensure_ascii: false,
        ..Default::default()
    };
    match llm_json::loads(&prepared, &options) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => Ok((value, true)),
        _ => Err(DecisionError::NoJson),
    }
}

/// Maximum bracket nesting outside double-quoted strings.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => {
                depth += 1;
                max = max.max(depth);
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Fixes what the repair crate passes through unchanged: raw newlines, tabs
/// and other control characters inside strings, and full-width quotes used
/// as string delimiters (a full-width quote inside an ASCII-quoted string is
/// content and is kept).
fn prepare(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // The character that closes the string we are in, if any.
    let mut closer: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match closer {
            None => match c {
                '“' | '”' => {
                    out.push('"');
                    closer = Some('”');
                }
                '"' | '\'' => {
                    out.push(c);
                    closer = Some(c);
                }
                _ => out.push(c),
            },
            Some(end) => {
                if escaped {
                    escaped = false;
                    out.push(c);
                } else if c == '\\' {
                    escaped = true;
                    out.push(c);
                } else if c == end || (end == '”' && c == '“') {
                    out.push(if end == '”' { '"' } else { c });
                    closer = None;
                } else if end == '”' && c == '"' {
                    out.push_str("\\\"");
                } else {
                    match c {
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_newlines_inside_strings_are_escaped() {
        assert_eq!(prepare("{\"a\": \"x\ny\"}"), "{\"a\": \"x\\ny\"}");
    }

    #[test]
    fn full_width_quotes_as_delimiters_become_ascii() {
        assert_eq!(prepare("{“a”: “b”}"), "{\"a\": \"b\"}");
        // Inside an ASCII string they are content.
        assert_eq!(
            prepare("{\"a\": \"he said “hi”\"}"),
            "{\"a\": \"he said “hi”\"}"
        );
    }

    #[test]
    fn depth_counts_outside_strings_only() {
        assert_eq!(nesting_depth(r#"{"a": "{{{{"}"#), 1);
        assert_eq!(nesting_depth("[[{}]]"), 3);
    }
}

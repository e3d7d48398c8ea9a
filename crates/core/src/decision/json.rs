//! Turns one candidate snippet into a JSON value: strict first, then after a
//! light preparation (control characters, full-width quotes, stray
//! backslashes), then after escaping double quotes left unescaped inside
//! strings and making single-quoted strings double-quoted, then through the
//! `llm_json` repair crate.

use serde_json::Value;

use super::quotes::{self, Quotes};
use super::{DecisionError, MAX_DEPTH};

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
    let prepared = prepare(text, false);
    if let Ok(value) = serde_json::from_str::<Value>(&prepared) {
        return Ok((value, true));
    }
    // Which double quotes end strings is settled before single-quoted
    // strings are converted: a stray `'` inside a double-quoted string whose
    // quotes were not escaped must not be taken for a string of its own.
    let prepared = match quotes::repair(&prepared) {
        Quotes::Fine if !prepared.contains('\'') => prepared,
        Quotes::Fine => prepare(&prepared, true),
        Quotes::Repaired(requoted) => prepare(&requoted, true),
        Quotes::Ambiguous => return Err(DecisionError::UnescapedQuotes),
    };
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
pub(super) fn nesting_depth(text: &str) -> usize {
    // Bytes, not chars: the marks counted are ASCII, and no byte of a
    // multi-byte UTF-8 character is.
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Fixes what the repair crate passes through unchanged: raw newlines, tabs
/// and other control characters inside strings, full-width quotes used as
/// string delimiters (a full-width quote inside an ASCII-quoted string is
/// content and is kept), single-quoted strings (made double-quoted when
/// `single_to_double`, so that `\'` inside them can be read; else left
/// single-quoted), and backslashes that start no JSON escape. It runs twice:
/// before quote repair, and after it with `single_to_double`, when it finds
/// nothing more to change but the single quotes and text that the repair
/// moved into a string (and looks for no raw paths: a `\"` may now be one
/// the repair wrote).
///
/// Escapes: the valid JSON escapes (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`,
/// `\r`, `\t`, `\uXXXX`) keep their meaning; `\'` is an apostrophe, as in
/// every language that writes it; any other backslash is kept literally
/// (`C:\Users` stays `C:\Users`). A string that starts with a drive letter
/// (`C:\`) and holds at least one invalid escape was plainly written with raw
/// backslashes, so every backslash in it is literal (`\n` in `\notes.txt`
/// included) except `\\` and an escaped quote. Without an invalid escape a
/// string is valid JSON and `C:\new` keeps its newline: that ambiguity cannot
/// be settled from the text.
fn prepare(text: &str, single_to_double: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    // The character that closes the string we are in, if any.
    let mut closer: Option<char> = None;
    // Whether the string we are in is a Windows path with raw backslashes.
    let mut raw_path = false;
    // The last character outside strings other than whitespace.
    let mut last: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let Some(end) = closer else {
            match c {
                '“' | '”' => {
                    out.push('"');
                    closer = Some('”');
                }
                // A single quote opens a string only where a key or a value
                // can start, and if the string ends before a delimiter (or
                // runs to the end of a cut-off reply): otherwise it is likely
                // a stray quote in a string whose double quotes were not
                // escaped, left to `quotes`.
                '\'' if !matches!(last, None | Some('{' | '[' | ',' | ':'))
                    || !single_quoted_string_ends(&chars[i + 1..]) =>
                {
                    out.push(c)
                }
                '"' | '\'' => {
                    out.push(if single_to_double { '"' } else { c });
                    closer = Some(c);
                }
                _ => out.push(c),
            }
            if !c.is_whitespace() {
                last = Some(c);
            }
            if let Some(end) = closer {
                // Raw paths are found before quotes are repaired; after, a
                // `\"` may be one the repair wrote.
                raw_path = !single_to_double && is_raw_windows_path(&chars[i + 1..], end);
            }
            i += 1;
            continue;
        };
        // Whether this string keeps its single quotes.
        let single = end == '\'' && !single_to_double;
        if c == '\\' {
            i += push_escape(&chars[i..], end, raw_path, single, &mut out);
        } else if c == end || (end == '”' && c == '“') {
            out.push(if single { '\'' } else { '"' });
            closer = None;
            i += 1;
        } else {
            match c {
                '"' if single => out.push('"'),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
            i += 1;
        }
    }
    out
}

/// Writes the escape that starts at `chars[0]` (a backslash) inside a string
/// closed by `end` (kept single-quoted if `single`), and returns how many
/// characters it consumed. See [`prepare`] for the rules.
fn push_escape(chars: &[char], end: char, raw_path: bool, single: bool, out: &mut String) -> usize {
    let Some(&next) = chars.get(1) else {
        // A lone backslash at the very end (a cut-off reply): keep it.
        out.push_str("\\\\");
        return 1;
    };
    if raw_path {
        return match next {
            '\\' => {
                out.push_str("\\\\");
                2
            }
            // `C:\Users\me\"` ending the string: the backslash ends the path.
            _ if next == end && delimiter_follows(&chars[2..]) => {
                out.push_str("\\\\");
                1
            }
            '"' => {
                out.push_str("\\\"");
                2
            }
            _ => {
                out.push_str("\\\\");
                1
            }
        };
    }
    match next {
        '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => {
            out.push('\\');
            out.push(next);
            2
        }
        'u' if is_unicode_escape(chars) => {
            out.extend(&chars[..6]);
            6
        }
        '\'' => {
            out.push_str(if single { "\\'" } else { "'" });
            2
        }
        // Not a JSON escape: the backslash is content.
        _ => {
            out.push_str("\\\\");
            1
        }
    }
}

/// Whether `chars` (starting at a backslash) is `\u` and four hex digits.
fn is_unicode_escape(chars: &[char]) -> bool {
    chars.len() >= 6 && chars[2..6].iter().all(char::is_ascii_hexdigit)
}

/// Whether the string whose content starts at `rest` (closed by `end`)
/// starts with a drive letter and was written with raw backslashes: it holds
/// an escape JSON does not know, or an escaped quote before a delimiter
/// (`"C:\temp\"}`: the backslash ends a directory; text that reaches this
/// point is not valid JSON, so the escaped reading is not one either).
fn is_raw_windows_path(rest: &[char], end: char) -> bool {
    let drive =
        rest.len() >= 3 && rest[0].is_ascii_alphabetic() && rest[1] == ':' && rest[2] == '\\';
    if !drive {
        return false;
    }
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            '\\' => match rest.get(i + 1) {
                Some(&q) if q == end && delimiter_follows(&rest[i + 2..]) => return true,
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | '\'') => i += 2,
                Some('u') if is_unicode_escape(&rest[i..]) => i += 6,
                Some(_) => return true,
                None => return false,
            },
            c if c == end || (end == '”' && c == '“') => return false,
            _ => i += 1,
        }
    }
    false
}

/// Whether the single-quoted string whose content starts at `rest` ends
/// before a `,` `}` `]` `:` or the end of the text, or runs to the end of
/// the text (a cut-off reply).
fn single_quoted_string_ends(rest: &[char]) -> bool {
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            '\\' => i += 2,
            '\'' => {
                return rest[i + 1..]
                    .iter()
                    .find(|c| !c.is_whitespace())
                    .is_none_or(|c| matches!(c, ',' | '}' | ']' | ':'))
            }
            _ => i += 1,
        }
    }
    true
}

/// Whether only whitespace stands between here and a `,` `}` `]` or the end.
fn delimiter_follows(rest: &[char]) -> bool {
    rest.iter()
        .find(|c| !c.is_whitespace())
        .is_none_or(|c| matches!(c, ',' | '}' | ']'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_newlines_inside_strings_are_escaped() {
        assert_eq!(prepare("{\"a\": \"x\ny\"}", false), "{\"a\": \"x\\ny\"}");
    }

    #[test]
    fn full_width_quotes_as_delimiters_become_ascii() {
        assert_eq!(prepare("{“a”: “b”}", false), "{\"a\": \"b\"}");
        // Inside an ASCII string they are content.
        assert_eq!(
            prepare("{\"a\": \"he said “hi”\"}", false),
            "{\"a\": \"he said “hi”\"}"
        );
    }

    #[test]
    fn single_quoted_strings_become_double_quoted() {
        assert_eq!(
            prepare(r#"{'a': 'it\'s "x"', "b": "it\'s"}"#, true),
            r#"{"a": "it's \"x\"", "b": "it's"}"#
        );
        // Until asked, they stay as they are but for their control characters.
        assert_eq!(
            prepare("{'a': 'it\\'s\n\"x\"', \"b\": \"it\\'s\"}", false),
            r#"{'a': 'it\'s\n"x"', "b": "it's"}"#
        );
        // A single quote where no string can start is left alone.
        assert_eq!(prepare(r#"{"a": ""'"}"#, true), r#"{"a": ""'"}"#);
    }

    #[test]
    fn stray_backslashes_are_kept_and_valid_escapes_keep_their_meaning() {
        assert_eq!(
            prepare(r#""a\db\n\"\\\u00e9\uZZ""#, false),
            r#""a\\db\n\"\\\u00e9\\uZZ""#
        );
        // A raw Windows path: every backslash literal, a closing one included.
        assert_eq!(
            prepare(r#""C:\Users\new\", 1"#, false),
            r#""C:\\Users\\new\\", 1"#
        );
        assert_eq!(
            prepare(r#"{"p": "C:\temp\"}"#, false),
            r#"{"p": "C:\\temp\\"}"#
        );
        // Valid JSON stays as it is.
        assert_eq!(prepare(r#""C:\new\file""#, false), r#""C:\new\file""#);
    }

    #[test]
    fn depth_counts_outside_strings_only() {
        assert_eq!(nesting_depth(r#"{"a": "{{{{"}"#), 1);
        assert_eq!(nesting_depth("[[{}]]"), 3);
    }
}

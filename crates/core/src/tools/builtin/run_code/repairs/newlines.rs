//! Repairs the commonest way a model's Python arrives broken: `'\n'` written
//! inside a JSON string becomes a real line break once the JSON is decoded,
//! so `f.write(name + '\n')` reaches the interpreter split across two lines
//! and fails with `SyntaxError: unterminated string literal`. Small models
//! then retry the same call unchanged until a guard stops them.
//!
//! A line break inside a one-line string literal (`'…'` or `"…"`, not
//! triple-quoted, not after a backslash) is never valid Python, so turning
//! it back into the escape `\n` cannot break a program that would have run:
//! it only repairs one that could not.

/// `code` with every line break inside a one-line string literal written as
/// `\n`, or `None` when there is none (or a literal never closes, where the
/// quote, not the line break, is what is wrong).
pub fn escape_newlines_in_strings(code: &str) -> Option<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len() + 8);
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '#' => {
                // A comment runs to the end of the line.
                while i < chars.len() && chars[i] != '\n' {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            '\'' | '"' if chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c) => {
                let end = close_triple(&chars, i + 3, c)?;
                out.extend(&chars[i..end]);
                i = end;
            }
            '\'' | '"' => {
                let fstring = is_fstring_prefix(&chars[..i]);
                let (end, literal, repaired) = close_single(&chars, i + 1, c, fstring)?;
                out.push(c);
                out.push_str(&literal);
                changed |= repaired;
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

/// Whether the letters just before a quote (the end of `before`) make it
/// an f-string: a prefix of at most two of `rbfu` that has an `f`.
fn is_fstring_prefix(before: &[char]) -> bool {
    let prefix: Vec<char> = before
        .iter()
        .rev()
        .take_while(|c| c.is_alphanumeric() || **c == '_')
        .copied()
        .collect();
    prefix.len() <= 2
        && prefix.iter().any(|c| matches!(c, 'f' | 'F'))
        && prefix.iter().all(|c| "rRbBfFuU".contains(*c))
}

/// Scans a one-line literal opened by `quote` whose body starts at
/// `start`: the index after its closing quote, the body plus closing quote
/// with bare line breaks escaped, and whether there were any. `None` if it
/// never closes. In an f-string (`fstring`), what is inside `{…}` is code:
/// since Python 3.12 it may hold line breaks and the same quote, so both
/// are left alone there.
fn close_single(
    chars: &[char],
    start: usize,
    quote: char,
    fstring: bool,
) -> Option<(usize, String, bool)> {
    let mut body = String::new();
    let mut repaired = false;
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if fstring && (c == '{' || c == '}') {
            let doubled = chars.get(i + 1) == Some(&c) && depth == 0;
            if doubled {
                body.push(c);
                body.push(c);
                i += 2;
                continue;
            }
            if c == '{' {
                depth += 1;
            } else {
                depth = depth.saturating_sub(1);
            }
            body.push(c);
            i += 1;
            continue;
        }
        if depth > 0 {
            body.push(c);
            i += 1;
            continue;
        }
        match c {
            '\\' => {
                body.push('\\');
                if let Some(&next) = chars.get(i + 1) {
                    body.push(next);
                }
                i += 2;
            }
            '\n' => {
                body.push_str("\\n");
                repaired = true;
                i += 1;
            }
            '\r' if chars.get(i + 1) == Some(&'\n') => {
                body.push_str("\\n");
                repaired = true;
                i += 2;
            }
            c if c == quote => {
                body.push(quote);
                return Some((i + 1, body, repaired));
            }
            c => {
                body.push(c);
                i += 1;
            }
        }
    }
    None
}

/// The index just past the string literal whose opening `quote` is at
/// `start - 1` (triple-quoted when two more follow it), or the text's end
/// when it never closes; a one-line literal ends at its line's break.
pub(super) fn string_end(chars: &[char], start: usize, quote: char) -> usize {
    if chars.get(start) == Some(&quote) && chars.get(start + 1) == Some(&quote) {
        return close_triple(chars, start + 2, quote).unwrap_or(chars.len());
    }
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => i += 2,
            '\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Scans a triple-quoted literal whose body starts at `start`: the index
/// after its closing triple quote. `None` if it never closes.
fn close_triple(chars: &[char], start: usize, quote: char) -> Option<usize> {
    let mut i = start;
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 2;
            continue;
        }
        if chars[i] == quote && chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote)
        {
            return Some(i + 3);
        }
        i += 1;
    }
    None
}

/// Said in the result when line breaks inside string literals were escaped.
pub const REPAIR_NOTE: &str = r"line breaks inside one-line string literals were run as \n (write \\n in JSON for a \n in the code)";

/// The repair, before the first run.
pub struct Newlines;

#[async_trait::async_trait]
impl super::Repair for Newlines {
    fn stage(&self) -> super::Stage {
        super::Stage::Before
    }

    async fn propose(&self, cx: &super::RepairContext<'_>) -> Option<super::Proposal> {
        if cx.language != "python" {
            return None;
        }
        escape_newlines_in_strings(cx.code).map(|code| super::Proposal {
            code,
            detail: String::new(),
        })
    }

    fn note(&self, _details: &[String]) -> String {
        REPAIR_NOTE.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_inside_a_one_line_literal_becomes_an_escape() {
        let broken = "with open('out.txt', 'w') as f:\n    f.write(name + '\n')\nprint(\"a\nb\")";
        let fixed = escape_newlines_in_strings(broken).unwrap();
        assert_eq!(
            fixed,
            "with open('out.txt', 'w') as f:\n    f.write(name + '\\n')\nprint(\"a\\nb\")"
        );
    }

    #[test]
    fn valid_code_is_left_alone() {
        for code in [
            "print('a\\nb')\nx = 1",
            "s = '''one\ntwo'''\nprint(s)",
            "t = \"\"\"a\n'b'\n\"\"\"",
            "# it's a comment\nprint(\"it's\")",
            "x = 'a\\\nb'",
            "d = {'k': \"v\"}  # don't",
            "print(f\"{d['k']}\")",
            "print(f'{x\n}')",
            "print(f\"{d[\"k\"]} {{literal}}\")",
            "",
        ] {
            assert_eq!(escape_newlines_in_strings(code), None, "{code:?}");
        }
    }

    #[test]
    fn f_strings_are_repaired_outside_their_braces_only() {
        assert_eq!(
            escape_newlines_in_strings("print(f'{n} rows\n')").as_deref(),
            Some("print(f'{n} rows\\n')")
        );
        assert_eq!(
            escape_newlines_in_strings("print(rf'{n}\n{{x}}')").as_deref(),
            Some("print(rf'{n}\\n{{x}}')")
        );
    }

    #[test]
    fn a_literal_that_never_closes_is_not_guessed_at() {
        assert_eq!(escape_newlines_in_strings("print('abc)\nx = 1"), None);
        assert_eq!(escape_newlines_in_strings("s = '''abc"), None);
    }
}

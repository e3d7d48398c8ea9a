//! A `}` closing the JSON around the code, written into the code: Python
//! says `SyntaxError: unmatched '}'`, and the program without it is run.
//! Written instead of the code's own last `)` (`f.write(str(total)}`),
//! Python says `closing parenthesis '}' does not match opening parenthesis
//! '('`, and the program is run with the brackets still open closed in its
//! place (two of four runs of the flattening trial, EVALS.md section 26).
//! Followed by more text (`print(v)}}} {`: the model went on as if the
//! JSON had closed), the code is cut at the stray `}` when it is on the
//! last line.

use async_trait::async_trait;

use super::newlines::string_end;
use super::{Proposal, Repair, RepairContext};

/// Said in the result when a stray `}` at the end of the code was left out
/// (and the brackets it stood for closed).
pub const BRACE_NOTE: &str = "the '}' at the end of the code was unmatched and was left out (it belongs to the JSON around the code, not to the code); brackets it left open were closed";

/// The repair.
pub struct Braces;

#[async_trait]
impl Repair for Braces {
    async fn propose(&self, cx: &RepairContext<'_>) -> Option<Proposal> {
        let output = cx.output?;
        if cx.language != "python" {
            return None;
        }
        let code = if output.stderr.contains("SyntaxError: unmatched '}'") {
            cut_at_unmatched_brace(cx.code).or_else(|| without_trailing_braces(cx.code))?
        } else if output
            .stderr
            .contains("closing parenthesis '}' does not match opening parenthesis")
        {
            let kept = without_trailing_braces(cx.code)?;
            let closers = still_open(&kept)?;
            kept + &closers
        } else {
            return None;
        };
        Some(Proposal {
            code,
            detail: String::new(),
        })
    }

    fn note(&self, _details: &[String]) -> String {
        BRACE_NOTE.into()
    }
}

/// `code` without the `}`s it ends with (and the whitespace around them),
/// or `None` when it does not end with one.
fn without_trailing_braces(code: &str) -> Option<String> {
    let kept = code
        .trim_end()
        .trim_end_matches(|c: char| c == '}' || c.is_whitespace());
    (kept.len() < code.trim_end().len() && !kept.is_empty()).then(|| kept.to_string())
}

/// The code before the first `}` that closes nothing, with the brackets
/// still open there closed, when that `}` is on the code's last line:
/// the model closed the JSON around the code and went on writing
/// (`print(version)}}} {`, `writer.writerow(row)}}} 🚀 Running... 🚀 {`:
/// two dev runs of EVALS.md section 30, whose code was otherwise right).
/// `None` when every `}` closes something, or the stray one has code on
/// lines after it (cutting would lose that code).
fn cut_at_unmatched_brace(code: &str) -> Option<String> {
    let chars: Vec<char> = code.chars().collect();
    let at = match brackets(&chars) {
        Err(at) if chars[at] == '}' => at,
        _ => return None,
    };
    if chars[at..]
        .iter()
        .collect::<String>()
        .trim_end()
        .contains('\n')
    {
        return None;
    }
    let kept: String = chars[..at]
        .iter()
        .collect::<String>()
        .trim_end()
        .to_string();
    if kept.is_empty() {
        return None;
    }
    let closers = still_open(&kept).unwrap_or_default();
    Some(kept + &closers)
}

/// The closers of the brackets `code` leaves open, innermost first
/// (`None` when none is open, or one closes what it did not open); strings
/// and comments are skipped.
fn still_open(code: &str) -> Option<String> {
    let chars: Vec<char> = code.chars().collect();
    let open = brackets(&chars).ok()?;
    (!open.is_empty()).then(|| open.iter().rev().collect())
}

/// The closers of the brackets open at the end of `chars`, outermost
/// first, or the index of the first closer that does not close the
/// bracket open before it; strings and comments are skipped.
fn brackets(chars: &[char]) -> Result<Vec<char>, usize> {
    let mut open = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '#' => {
                while chars.get(i).is_some_and(|&n| n != '\n') {
                    i += 1;
                }
            }
            '\'' | '"' => i = string_end(chars, i, c),
            '(' => open.push(')'),
            '[' => open.push(']'),
            '{' => open.push('}'),
            ')' | ']' | '}' if open.pop() != Some(c) => return Err(i - 1),
            _ => {}
        }
    }
    Ok(open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_braces_are_cut_with_the_space_around_them() {
        assert_eq!(
            without_trailing_braces("print(1)}\n").as_deref(),
            Some("print(1)")
        );
        assert_eq!(
            without_trailing_braces("x = {1: 2}\nprint(x)\n}}").as_deref(),
            Some("x = {1: 2}\nprint(x)")
        );
        assert_eq!(without_trailing_braces("print(1)"), None);
        assert_eq!(without_trailing_braces("}"), None);
    }

    #[test]
    fn the_code_is_cut_at_a_stray_brace_on_its_last_line() {
        assert_eq!(
            cut_at_unmatched_brace("import json\nv = {'a': 1}\nprint(v['a'])}}} {").as_deref(),
            Some("import json\nv = {'a': 1}\nprint(v['a'])")
        );
        assert_eq!(
            cut_at_unmatched_brace("for r in rows:\n    w.writerow(r)}}} 🚀 Running... 🚀 {")
                .as_deref(),
            Some("for r in rows:\n    w.writerow(r)")
        );
        // Brackets left open before the stray brace are closed.
        assert_eq!(
            cut_at_unmatched_brace("f.write(str(total)} {\"").as_deref(),
            Some("f.write(str(total))")
        );
        // Braces in strings and f-strings are not brackets.
        assert_eq!(
            cut_at_unmatched_brace("print(f'{x}}}')\nprint(1)}").as_deref(),
            Some("print(f'{x}}}')\nprint(1)")
        );
        // Code after the stray brace would be lost: no cut.
        assert_eq!(cut_at_unmatched_brace("x = 1}\nprint(x)"), None);
        assert_eq!(cut_at_unmatched_brace("print({1: 2})"), None);
        assert_eq!(cut_at_unmatched_brace("}"), None);
    }

    #[test]
    fn brackets_left_open_are_closed_in_order() {
        assert_eq!(still_open("f.write(str(total)").as_deref(), Some(")"));
        assert_eq!(
            still_open("w.writerow([country, total").as_deref(),
            Some("])")
        );
        assert_eq!(
            still_open("print('(', \"[\") # (\nx = (1").as_deref(),
            Some(")")
        );
        assert_eq!(still_open("s = '''a(\n'''\nprint(s").as_deref(), Some(")"));
        assert_eq!(still_open("print(1)"), None);
        assert_eq!(still_open("print(1]"), None);
    }
}

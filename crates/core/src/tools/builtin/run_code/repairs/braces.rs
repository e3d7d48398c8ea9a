//! A `}` closing the JSON around the code, written into the code: Python
//! says `SyntaxError: unmatched '}'`, and the program without it is run.

use async_trait::async_trait;

use super::{Proposal, Repair, RepairContext};

/// Said in the result when a stray `}` at the end of the code was left out.
pub const BRACE_NOTE: &str = "the '}' at the end of the code was unmatched and was left out (it belongs to the JSON around the code, not to the code)";

/// The repair.
pub struct Braces;

#[async_trait]
impl Repair for Braces {
    async fn propose(&self, cx: &RepairContext<'_>) -> Option<Proposal> {
        let output = cx.output?;
        if cx.language != "python" || !output.stderr.contains("SyntaxError: unmatched '}'") {
            return None;
        }
        without_trailing_braces(cx.code).map(|code| Proposal {
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
}

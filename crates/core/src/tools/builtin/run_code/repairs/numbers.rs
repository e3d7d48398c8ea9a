//! Text compared with a number: `row['age'] > 30` on a value read from a
//! CSV file, which Python refuses with `TypeError: '>' not supported
//! between instances of 'str' and 'int'`.
//!
//! Every value `csv.reader` and `csv.DictReader` give is a string, and small
//! models compare it with a number as it is. Told so, they "fix" the wrong
//! part (`int(user['age']) for user in …` on the names) and repeat the
//! error until the repetition guard stops the run (EVALS.md, section 15).
//! The failing line is known from the traceback; each name or subscript it
//! compares with a number literal is read as a number instead
//! (`float(row['age']) > 30`), which is what the program meant.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// A name or subscript, then a comparison, then a number literal.
static TEXT_THEN_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<text>\b[A-Za-z_]\w*(?:\.\w+)*(?:\[[^\[\]\n]+\])*)(?P<op>\s*(?:<=|>=|<|>)\s*)(?P<num>-?\d+(?:\.\d+)?)\b")
        .expect("valid regex")
});

/// A number literal, then a comparison, then a name or subscript.
static NUMBER_THEN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<num>\b\d+(?:\.\d+)?)(?P<op>\s*(?:<=|>=|<|>)\s*)(?P<text>\b[A-Za-z_]\w*(?:\.\w+)*(?:\[[^\[\]\n]+\])*)")
        .expect("valid regex")
});

/// Python keywords that can stand where a name would (`not x > 3` holds
/// the name `x`, but `if > 3` is no comparison of `if`).
const KEYWORDS: &[&str] = &[
    "if", "in", "and", "or", "not", "is", "for", "else", "return", "lambda", "while", "elif",
];

/// Whether Python's last error in `stderr` is an ordering comparison of a
/// string with a number.
pub fn compared_text_with_number(stderr: &str) -> bool {
    let Some(last) = stderr.lines().rev().find(|l| l.starts_with("TypeError: ")) else {
        return false;
    };
    let ordering = ["'<'", "'>'", "'<='", "'>='"]
        .iter()
        .any(|op| last.starts_with(&format!("TypeError: {op} not supported")));
    ordering && last.contains("'str'") && (last.contains("'int'") || last.contains("'float'"))
}

/// `code` with the comparisons of line `line` (1-based, as Python counts)
/// reading their name or subscript as a number, and the rewritten
/// comparisons; `None` when that line compares no name with a number.
pub fn read_as_numbers(code: &str, line: usize) -> Option<(String, Vec<String>)> {
    let lines: Vec<&str> = code.split('\n').collect();
    let target = lines.get(line.checked_sub(1)?)?;
    let mut rewritten = Vec::new();
    let wrap = |caps: &Captures, text_first: bool, rewritten: &mut Vec<String>| {
        let (text, op, num) = (&caps["text"], &caps["op"], &caps["num"]);
        if KEYWORDS.contains(&text) {
            return caps[0].to_string();
        }
        let comparison = if text_first {
            format!("float({text}){op}{num}")
        } else {
            format!("{num}{op}float({text})")
        };
        rewritten.push(comparison.clone());
        comparison
    };
    let fixed =
        TEXT_THEN_NUMBER.replace_all(target, |caps: &Captures| wrap(caps, true, &mut rewritten));
    let haystack = fixed.clone().into_owned();
    let fixed = NUMBER_THEN_TEXT
        .replace_all(&haystack, |caps: &Captures| {
            // A call (`float(x)`, `len(x)`) is a number already, or not text.
            let end = caps.get(0).map_or(0, |m| m.end());
            if haystack[end..].starts_with('(') {
                caps[0].to_string()
            } else {
                wrap(caps, false, &mut rewritten)
            }
        })
        .into_owned();
    if rewritten.is_empty() {
        return None;
    }
    let mut out = lines.clone();
    out[line - 1] = &fixed;
    Some((out.join("\n"), rewritten))
}

/// The line of the code (`File "<string>", line N`) where the last frame
/// of Python's traceback in `stderr` stopped.
pub fn error_line(stderr: &str) -> Option<usize> {
    stderr
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("File \"<string>\", line "))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.trim().parse().ok())
}

/// What the note (or, where the code may write, the hint) says about the
/// comparisons `rewritten`.
pub fn numbers_said(rewritten: &[String], may_write: bool) -> String {
    format!(
        "values read from a CSV file are text, and text was compared with a number: the comparison {} `{}`",
        if may_write { "should read" } else { "was run as" },
        rewritten.join("` and `")
    )
}

/// The program with the failing line's comparisons read as numbers, and
/// those comparisons, when `stderr` says text was compared with a number.
pub fn numbers_fix(code: &str, stderr: &str) -> Option<(String, Vec<String>)> {
    if !compared_text_with_number(stderr) {
        return None;
    }
    read_as_numbers(code, error_line(stderr)?)
}

/// The repair: run once more with the comparisons read as numbers.
pub struct Numbers;

#[async_trait::async_trait]
impl super::Repair for Numbers {
    fn read_only_workspace(&self) -> bool {
        true
    }

    async fn propose(&self, cx: &super::RepairContext<'_>) -> Option<super::Proposal> {
        if cx.language != "python" {
            return None;
        }
        let (code, rewritten) = numbers_fix(cx.code, &cx.output?.stderr)?;
        Some(super::Proposal {
            code,
            detail: numbers_said(&rewritten, false),
        })
    }

    fn note(&self, details: &[String]) -> String {
        details.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDERR: &str = "Traceback (most recent call last):\n  File \"<string>\", line 3, in <module>\n  File \"<string>\", line 3, in <listcomp>\nTypeError: '>' not supported between instances of 'str' and 'int'\n";

    #[test]
    fn the_error_and_its_line_are_read_from_the_traceback() {
        assert!(compared_text_with_number(STDERR));
        assert_eq!(error_line(STDERR), Some(3));
        assert!(compared_text_with_number(
            "TypeError: '<=' not supported between instances of 'float' and 'str'"
        ));
        assert!(!compared_text_with_number(
            "TypeError: unsupported operand type(s) for +: 'int' and 'str'"
        ));
        assert!(!compared_text_with_number(
            "NameError: name 'x' is not defined"
        ));
    }

    #[test]
    fn subscripts_and_names_compared_with_numbers_are_read_as_numbers() {
        let code = "import csv\nrows = list(csv.DictReader(open('u.csv')))\nold = sorted(r['name'] for r in rows if r['age'] > 30 and 18 <= r[\"age\"])\nprint(old)";
        let (fixed, rewritten) = read_as_numbers(code, 3).unwrap();
        assert_eq!(
            fixed,
            "import csv\nrows = list(csv.DictReader(open('u.csv')))\nold = sorted(r['name'] for r in rows if float(r['age']) > 30 and 18 <= float(r[\"age\"]))\nprint(old)"
        );
        assert_eq!(
            rewritten,
            ["float(r['age']) > 30", "18 <= float(r[\"age\"])"]
        );
        let (fixed, _) = read_as_numbers("if not age>=-2.5: print(age)", 1).unwrap();
        assert_eq!(fixed, "if not float(age)>=-2.5: print(age)");
    }

    #[test]
    fn lines_without_such_a_comparison_are_left_alone() {
        assert_eq!(read_as_numbers("x = len(rows) > 3", 1), None);
        assert_eq!(read_as_numbers("x = int(r['age']) > 3", 1), None);
        assert_eq!(read_as_numbers("x = 3 < len(rows)", 1), None);
        assert_eq!(read_as_numbers("print(1)", 2), None);
        assert_eq!(read_as_numbers("print(1)", 0), None);
    }
}

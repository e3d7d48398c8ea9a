//! Repairs Python written as one line where Python needs several: a small
//! model writes `for f in os.listdir('docs'): if 'x' in f: print(f)`,
//! `import os; for f in files: …` or `with open(p) as f: n = len(f.read())
//! print(n)`, Python answers `SyntaxError: invalid syntax`, and the model
//! sends the same line again until a guard stops the run (EVALS.md,
//! sections 12 and 13).
//!
//! Two steps, both only after Python refused the program with a
//! `SyntaxError`, so a program that ran is never touched:
//! [`split_compound_lines`] puts the body of every `for`/`if`/`with`/…
//! header written on the header's line on lines of its own, indented under
//! it (and a compound statement after a `;` on a line of its own), which is
//! what Python allows; then [`STATEMENT_SPLITTER`], run by Python in the
//! sandbox, breaks a line where Python's own parser says a new statement
//! begins (`lines = f.readlines() count = len(lines)`), keeping the
//! line's indentation, until the program compiles.

/// A Python program (run with the code as its one argument) that prints
/// the code with a line break wherever the parser reports "invalid syntax"
/// at the start of what follows a space, until it compiles; it prints
/// nothing and exits 1 when it cannot get there that way. It only
/// compiles the code, never runs it.
pub const STATEMENT_SPLITTER: &str = r#"
import sys
src = sys.argv[1]
changed = False
for _ in range(40):
    try:
        compile(src, "<string>", "exec")
        break
    except SyntaxError as e:
        lines = src.split("\n")
        if e.msg != "invalid syntax" or not e.lineno or not e.offset or e.lineno > len(lines):
            sys.exit(1)
        line = lines[e.lineno - 1]
        head, tail = line[:e.offset - 1], line[e.offset - 1:]
        if not head.endswith(" ") or not head.strip() or not tail.strip():
            sys.exit(1)
        indent = line[:len(line) - len(line.lstrip())]
        lines[e.lineno - 1:e.lineno] = [head.rstrip(), indent + tail]
        src = "\n".join(lines)
        changed = True
else:
    sys.exit(1)
if not changed:
    sys.exit(1)
sys.stdout.write(src)
"#;

/// Keywords that open a statement that may not follow a `:` or a `;` on
/// the same line.
const NESTED: [&str; 7] = ["for", "while", "if", "with", "try", "def", "class"];

/// Keywords that open a line whose header ends in a `:`.
const HEADERS: [&str; 13] = [
    "for", "while", "if", "elif", "else", "with", "try", "except", "finally", "def", "class",
    "async", "match",
];

/// Spaces added for each level a split line nests.
const INDENT: &str = "    ";

/// `code` with the body of every header written on the header's line moved
/// to the lines below it, indented, and every compound statement after a
/// `;` moved to a line of its own; `None` when there is nothing to move,
/// or a line holds a triple-quoted string.
pub fn split_compound_lines(code: &str) -> Option<String> {
    let mut out = Vec::new();
    let mut changed = false;
    for line in code.lines() {
        changed |= split_line(line, &mut out)?;
    }
    changed.then(|| out.join("\n"))
}

/// Whether a line of `code` is a header with a statement after its colon
/// (`with open(p) as f: x = f.read()`): legal alone, but where a small
/// model writes one it often writes a second statement after it.
pub fn has_inline_body(code: &str) -> bool {
    code.lines().any(|line| {
        let body = line.trim_start();
        starts_with_keyword(body, &HEADERS)
            && top_level(body, ':').is_some_and(|colon| !body[colon + 1..].trim().is_empty())
    })
}

/// Pushes `line`, split where needed, onto `out`; whether it was split.
/// `None` when the line cannot be read safely.
fn split_line(line: &str, out: &mut Vec<String>) -> Option<bool> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    if body.contains("'''") || body.contains("\"\"\"") {
        return None;
    }
    if starts_with_keyword(body, &HEADERS) {
        if let Some(colon) = top_level(body, ':') {
            let rest = body[colon + 1..].trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                out.push(format!("{indent}{}", &body[..=colon]));
                split_line(&format!("{indent}{INDENT}{rest}"), out)?;
                return Some(true);
            }
        }
    }
    let mut from = 0;
    while let Some(at) = top_level(&body[from..], ';').map(|at| at + from) {
        let rest = body[at + 1..].trim();
        if starts_with_keyword(rest, &NESTED) {
            out.push(format!("{indent}{}", body[..at].trim_end()));
            split_line(&format!("{indent}{rest}"), out)?;
            return Some(true);
        }
        from = at + 1;
    }
    out.push(line.to_string());
    Some(false)
}

/// Whether `text` opens with one of `keywords` as a whole word.
fn starts_with_keyword(text: &str, keywords: &[&str]) -> bool {
    keywords.iter().any(|k| {
        text.strip_prefix(k)
            .is_some_and(|after| after.starts_with([' ', '(', ':', '\t']))
    })
}

/// The byte offset of the first `wanted` (`:` or `;`) outside strings,
/// brackets and comments, not part of `:=`.
fn top_level(text: &str, wanted: char) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '#' => return None,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if c == wanted && depth == 0 => {
                let walrus = wanted == ':' && chars.peek().is_some_and(|(_, n)| *n == '=');
                if !walrus {
                    return Some(at);
                }
            }
            _ => {}
        }
    }
    None
}

/// Said in the result when compound statements written on one line were
/// put on lines of their own.
pub const COMPOUND_NOTE: &str = "statements written on one line were put on lines of their own, with the body of each for/if/with indented below it (Python reads one statement per line)";

/// How long the statement splitter may take (it compiles, never runs).
const SPLITTER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The repair, after a `SyntaxError`; a split Python still refuses is not
/// kept (the model sees its own program's error, with a hint).
pub struct Compound;

#[async_trait::async_trait]
impl super::Repair for Compound {
    async fn propose(&self, cx: &super::RepairContext<'_>) -> Option<super::Proposal> {
        if cx.language != "python" || !cx.output?.stderr.contains("SyntaxError") {
            return None;
        }
        one_statement_per_line(cx.sandbox, cx.code)
            .await
            .map(|code| super::Proposal {
                code,
                detail: String::new(),
            })
    }

    fn keep(&self, rerun: &crate::tools::sandbox::SandboxOutput) -> bool {
        !rerun.stderr.contains("SyntaxError")
    }

    fn note(&self, _details: &[String]) -> String {
        COMPOUND_NOTE.into()
    }
}

/// `code` with its statements on lines of their own, when that changes
/// it: bodies moved under their headers here, then lines broken where
/// Python's parser, in the sandbox, says a statement begins.
async fn one_statement_per_line(
    sandbox: &crate::tools::sandbox::SandboxConfig,
    code: &str,
) -> Option<String> {
    let moved = split_compound_lines(code);
    let base = moved.as_deref().unwrap_or(code);
    let argv = ["/usr/bin/python3", "-c", STATEMENT_SPLITTER, base];
    let split = match crate::tools::sandbox::run(sandbox, &argv, SPLITTER_TIMEOUT).await {
        Ok(out) if out.exit_code == Some(0) && !out.stdout.is_empty() => Some(out.stdout),
        _ => None,
    };
    split.or(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compound_statement_after_a_colon_goes_on_its_own_line() {
        let code = "import os\nfor file in os.listdir('docs'): if 'blue-falcon' in open('docs/' + file).read(): print(file)\nprint('done')";
        assert_eq!(
            split_compound_lines(code).unwrap(),
            "import os\nfor file in os.listdir('docs'):\n    if 'blue-falcon' in open('docs/' + file).read():\n        print(file)\nprint('done')"
        );
    }

    #[test]
    fn a_compound_statement_after_a_semicolon_goes_on_its_own_line() {
        let code =
            "import csv; rows = 0; with open('a.csv') as f: for row in csv.reader(f): rows += 1";
        assert_eq!(
            split_compound_lines(code).unwrap(),
            "import csv; rows = 0\nwith open('a.csv') as f:\n    for row in csv.reader(f):\n        rows += 1"
        );
    }

    #[test]
    fn nested_lines_keep_their_indentation() {
        let code = "def f(xs):\n    for x in xs: if x: print(x)";
        assert_eq!(
            split_compound_lines(code).unwrap(),
            "def f(xs):\n    for x in xs:\n        if x:\n            print(x)"
        );
    }

    #[test]
    fn colons_in_strings_brackets_slices_and_walruses_are_not_where_a_body_starts() {
        assert_eq!(
            split_compound_lines("for k in d: print(k)").unwrap(),
            "for k in d:\n    print(k)"
        );
        assert_eq!(
            split_compound_lines("if ':' in s: print('a: if b')").unwrap(),
            "if ':' in s:\n    print('a: if b')"
        );
        assert_eq!(
            split_compound_lines("if any(map(lambda x: x, xs)): print(xs[1:2])").unwrap(),
            "if any(map(lambda x: x, xs)):\n    print(xs[1:2])"
        );
        assert_eq!(
            split_compound_lines("while (n := n - 1): print({'a': 1})").unwrap(),
            "while (n := n - 1):\n    print({'a': 1})"
        );
        for code in [
            "d = {'for': 1}",
            "x = lambda y: y",
            "x = 1  # for y in z: if w: pass",
            "print('a; for x in y: pass')",
            "for k in d:  # a comment: here",
        ] {
            assert_eq!(split_compound_lines(code), None, "{code}");
        }
    }

    #[test]
    fn triple_quoted_strings_are_left_alone() {
        assert_eq!(
            split_compound_lines("x = '''a: for b'''; for c in d: pass"),
            None
        );
    }

    #[test]
    fn an_inline_body_is_seen() {
        assert!(has_inline_body(
            "with open('n.txt') as f: total = sum(map(int, f)) print(total)"
        ));
        assert!(!has_inline_body(
            "with open('n.txt') as f:\n    print(f.read())"
        ));
        assert!(!has_inline_body("d = {'for': 1}"));
    }
}

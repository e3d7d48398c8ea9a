//! The one-line hint after a failed `run_code`, read from what Python
//! said: the first that applies, in the order below.

use super::repairs::{has_inline_body, missing_import, numbers_fix, numbers_said, undefined_name};

/// What `run_code` knows when it writes the hint.
pub struct HintContext<'a> {
    /// The program as last run.
    pub code: &'a str,
    /// `python` or `bash`.
    pub language: &'a str,
    /// What the program wrote to stderr.
    pub stderr: &'a str,
    /// Whether the code may write to the workspace itself.
    pub may_write: bool,
    /// Whether the workspace tools are functions inside the code and
    /// variables are kept from one call to the next (code actions).
    pub code_actions: bool,
    /// Where the workspace has files named like the one Python could not
    /// open ([`missing_file`]), as workspace paths.
    pub found_elsewhere: &'a [String],
}

/// The hint, starting with `; ` (to follow "the code exited with code 1").
pub fn hint(cx: &HintContext<'_>) -> String {
    let stderr = cx.stderr;
    let undefined = undefined_name(stderr);
    if !cx.may_write && stderr.contains("Read-only file system") {
        return "; the workspace is read-only for run_code: print the value instead and save it with write_file".into();
    }
    if let (Some(missing), [first, ..]) = (missing_file(stderr), cx.found_elsewhere) {
        let more = if cx.found_elsewhere.len() > 1 {
            format!(" (and {} other place(s))", cx.found_elsewhere.len() - 1)
        } else {
            String::new()
        };
        return format!(
            "; there is no `{missing}`: paths in the code are relative to the workspace, and a file of that name is at `{first}`{more}"
        );
    }
    if let Some(name) = undefined.filter(|n| super::super::NAMES.contains(n)) {
        return format!(
            "; `{name}` is a tool, not a function inside the code: open files with open() in the code, or call {name} as your action"
        );
    }
    if let Some(module) = missing_module(stderr).or_else(|| undefined.and_then(library_alias)) {
        return format!(
            "; `{module}` is not installed in the sandbox's Python, which has the standard library only: use csv, json, statistics, collections or datetime instead"
        );
    }
    if let Some(import) = undefined.and_then(missing_import) {
        return format!("; add `{import}` at the top of the code");
    }
    if cx.may_write {
        if let Some((_, rewritten)) = numbers_fix(cx.code, stderr) {
            return format!("; {}", numbers_said(&rewritten, true));
        }
    }
    if let Some(value) = not_a_number(stderr) {
        return format!(
            "; `{value}` is not a number: if it is a column name, the first row is a header, so skip it (next(reader), or csv.DictReader)"
        );
    }
    if let Some(name) = undefined {
        return if cx.code_actions {
            format!(
                "; `{name}` is not defined: a variable exists only if this code or an earlier run_code call of this run set it (what other tools returned is not a variable); read what it needs inside the code, e.g. `{name} = read_file('the file')`"
            )
        } else {
            format!(
                "; `{name}` is not defined: every run_code call is a new program, so nothing from an earlier round exists in it as a variable; read the files it needs inside the code"
            )
        };
    }
    if cx.language == "python" && stderr.contains("SyntaxError") && has_inline_body(cx.code) {
        return "; Python reads one statement per line: put each statement on a line of its own (\\n between them in the JSON string), with the body of a for/if/with on the lines below it, indented".into();
    }
    "; see stderr".into()
}

/// The module Python could not import, from its last
/// `ModuleNotFoundError: No module named 'X'` (the top-level package).
fn missing_module(stderr: &str) -> Option<&str> {
    let name = stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("ModuleNotFoundError: No module named '"))?
        .strip_suffix('\'')?;
    name.split('.').next().filter(|n| !n.is_empty())
}

/// The library behind a conventional short name a small model uses
/// without importing it (`pd.read_csv`), when it is not the standard
/// library's.
fn library_alias(name: &str) -> Option<&'static str> {
    match name {
        "pd" | "pandas" => Some("pandas"),
        "np" | "numpy" => Some("numpy"),
        "plt" => Some("matplotlib"),
        _ => None,
    }
}

/// The path Python could not open, from its last `FileNotFoundError:
/// [Errno 2] No such file or directory: 'X'`: a small model lists a
/// folder and then opens its entries without the folder's name.
pub fn missing_file(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .rev()
        .find_map(|line| {
            line.strip_prefix("FileNotFoundError: [Errno 2] No such file or directory: '")
        })?
        .strip_suffix('\'')
}

/// The text Python could not read as a number, from its last
/// `ValueError: invalid literal for int() with base 10: 'X'` or
/// `ValueError: could not convert string to float: 'X'`, when it holds a
/// letter (a word such as a column name, not a malformed number).
fn not_a_number(stderr: &str) -> Option<&str> {
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("ValueError: "))?;
    let rest = line
        .strip_prefix("ValueError: invalid literal for int() with base 10: '")
        .or_else(|| line.strip_prefix("ValueError: could not convert string to float: '"))?;
    let value = rest.strip_suffix('\'')?;
    value.chars().any(char::is_alphabetic).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_where_a_number_was_expected_is_read_from_the_value_error() {
        let int = "Traceback (most recent call last):\nValueError: invalid literal for int() with base 10: 'age'\n";
        assert_eq!(not_a_number(int), Some("age"));
        let float = "ValueError: could not convert string to float: 'temp_c'";
        assert_eq!(not_a_number(float), Some("temp_c"));
        // A malformed number is not a header.
        assert_eq!(
            not_a_number("ValueError: invalid literal for int() with base 10: '3.5'"),
            None
        );
        assert_eq!(not_a_number("ValueError: math domain error"), None);
    }

    #[test]
    fn the_first_hint_that_applies_is_given() {
        let cx = |stderr: &'static str, code_actions| HintContext {
            code: "print(x)",
            language: "python",
            stderr,
            may_write: false,
            code_actions,
            found_elsewhere: &[],
        };
        let name = "NameError: name 'prices' is not defined";
        assert!(hint(&cx(name, false)).contains("every run_code call is a new program"));
        assert!(hint(&cx(name, true)).contains("prices = read_file("));
        assert!(hint(&cx("NameError: name 'csv' is not defined", true)).contains("import csv"));
        assert_eq!(hint(&cx("boom", true)), "; see stderr");
    }

    #[test]
    fn a_library_the_sandbox_lacks_is_named_with_what_to_use() {
        let cx = |stderr| HintContext {
            code: "df = pd.read_csv('a.csv')",
            language: "python",
            stderr,
            may_write: false,
            code_actions: true,
            found_elsewhere: &[],
        };
        let alias = hint(&cx("NameError: name 'pd' is not defined"));
        assert!(alias.starts_with("; `pandas` is not installed"), "{alias}");
        let missing = hint(&cx("ModuleNotFoundError: No module named 'numpy.linalg'"));
        assert!(
            missing.starts_with("; `numpy` is not installed"),
            "{missing}"
        );
    }

    #[test]
    fn a_file_opened_without_its_folder_is_shown_where_it_is() {
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 4, in <module>\nFileNotFoundError: [Errno 2] No such file or directory: '2024-01.json'\n";
        assert_eq!(missing_file(stderr), Some("2024-01.json"));
        let found = vec!["reports/2024-01.json".to_string()];
        let cx = HintContext {
            code: "open('2024-01.json')",
            language: "python",
            stderr,
            may_write: false,
            code_actions: true,
            found_elsewhere: &found,
        };
        assert_eq!(
            hint(&cx),
            "; there is no `2024-01.json`: paths in the code are relative to the workspace, and a file of that name is at `reports/2024-01.json`"
        );
        let nowhere = HintContext {
            found_elsewhere: &[],
            ..cx
        };
        assert_eq!(hint(&nowhere), "; see stderr");
    }
}

//! `run_code {language, code, timeout_secs?}`: Python or Bash in a bubblewrap sandbox.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::python_compound::{has_inline_body, split_compound_lines, STATEMENT_SPLITTER};
use super::python_newlines::escape_newlines_in_strings;
use super::python_numbers::{compared_text_with_number, error_line, read_as_numbers};
use crate::tools::sandbox::{self, SandboxConfig};
use crate::tools::scratch::Scratch;
use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec};

/// Default wall-clock limit for one run.
pub const DEFAULT_CODE_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest run the model may ask for.
pub const MIN_CODE_TIMEOUT: Duration = Duration::from_millis(100);
/// Longest run the model may ask for.
pub const MAX_CODE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the statement splitter may take (it compiles, never runs).
const SPLITTER_TIMEOUT: Duration = Duration::from_secs(5);

/// Said in the result when line breaks inside string literals were escaped.
pub const REPAIR_NOTE: &str = r"line breaks inside one-line string literals were run as \n (write \\n in JSON for a \n in the code)";

/// Said in the result when a stray `}` at the end of the code was left out.
pub const BRACE_NOTE: &str = "the '}' at the end of the code was unmatched and was left out (it belongs to the JSON around the code, not to the code)";

/// Said in the result when compound statements written on one line were
/// put on lines of their own.
pub const COMPOUND_NOTE: &str = "statements written on one line were put on lines of their own, with the body of each for/if/with indented below it (Python reads one statement per line)";

/// Said in the result when the code wrote files in its copy of the
/// workspace (`unsaved_writes`).
pub const UNSAVED_NOTE: &str = "run_code cannot change the workspace: the files this code wrote (unsaved_writes, with what they hold) were not saved. Save what the goal needs with write_file";

/// Most missing imports added to one program before its error is shown.
const MAX_ADDED_IMPORTS: usize = 3;

/// Runs code in the sandbox described by its config.
pub struct RunCode {
    config: SandboxConfig,
}

impl RunCode {
    /// The tool; register it only after [`sandbox::probe`] succeeded.
    pub fn new(config: SandboxConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for RunCode {
    fn spec(&self) -> ToolSpec {
        let workspace = if self.config.allow_writes {
            "read-write"
        } else {
            "read-only"
        };
        let description = format!(
            "Run Python or Bash code in a sandbox and return stdout, stderr, exit_code, timed_out and killed. \
             The sandbox has no network (even 127.0.0.1 is unreachable) and a read-only system. The workspace is the \
             working directory and is {workspace}, so open('data.csv') reads the workspace file; /tmp is private scratch \
             space that disappears after the run.{save} Limits: timeout_secs wall time (default {}s, at most {}s), {} MiB of \
             memory, {} processes. Print what you need to see.",
            DEFAULT_CODE_TIMEOUT.as_secs(),
            MAX_CODE_TIMEOUT.as_secs(),
            self.config.memory_bytes >> 20,
            self.config.max_processes,
            save = if self.config.allow_writes {
                ""
            } else {
                " To save a result, print it and write it with write_file."
            },
        );
        ToolSpec::new("run_code", description)
            .param(ParamSpec::new("language", ParamKind::String, "the interpreter").required().one_of(["python", "bash"]))
            .param(ParamSpec::new("code", ParamKind::String, "the program text").required())
            .param(ParamSpec::new("timeout_secs", ParamKind::Number, "wall-clock limit in seconds (fractions allowed)"))
            // The example reads a CSV by its header: `csv.reader` counted the
            // header as a row and picked columns by guessed positions
            // (EVALS.md, section 13).
            .example(json!({"language": "python", "code": "import csv\nrows = list(csv.DictReader(open('data.csv')))\nprint(len(rows), rows[0] if rows else 'no data rows')"}))
            .timeout(MAX_CODE_TIMEOUT + Duration::from_secs(10))
            .effect(ToolEffect::RunsCode)
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let mut code = super::required_str(&args, "code")?.to_string();
        let language = super::required_str(&args, "language")?;
        // A '\n' that JSON turned into a real line break inside a string literal.
        let repaired = (language == "python")
            .then(|| escape_newlines_in_strings(&code))
            .flatten();
        if let Some(fixed) = &repaired {
            code.clone_from(fixed);
        }
        let interpreter: &[&str] = match language {
            "bash" => &["/usr/bin/bash", "-c"],
            "python" => &["/usr/bin/python3", "-c"],
            other => {
                return Err(ToolError::new(format!(
                    "parameter `language` must be `python` or `bash`, got `{other}`"
                )))
            }
        };
        let timeout = args
            .get("timeout_secs")
            .and_then(Value::as_f64)
            .filter(|secs| secs.is_finite())
            .map_or(DEFAULT_CODE_TIMEOUT, |secs| {
                Duration::from_secs_f64(secs.clamp(
                    MIN_CODE_TIMEOUT.as_secs_f64(),
                    MAX_CODE_TIMEOUT.as_secs_f64(),
                ))
            });
        let mut notes: Vec<String> = Vec::new();
        if repaired.is_some() {
            notes.push(REPAIR_NOTE.into());
        }
        let (mut output, mut unsaved) = self.execute(interpreter, &code, timeout).await?;
        // A `}` closing the JSON written into the code: Python says exactly
        // that, and the program without it is run instead.
        if language == "python" && output.stderr.contains("SyntaxError: unmatched '}'") {
            if let Some(trimmed) = without_trailing_braces(&code) {
                (output, unsaved) = self.execute(interpreter, &trimmed, timeout).await?;
                notes.push(BRACE_NOTE.into());
                code = trimmed;
            }
        }
        // Statements on one line (`for …: if …: …`, `x = f() print(x)`):
        // Python refuses them, and the program split into lines is run
        // instead.
        if language == "python" && output.stderr.contains("SyntaxError") {
            if let Some(split) = self.one_statement_per_line(&code).await {
                let (rerun, rerun_unsaved) = self.execute(interpreter, &split, timeout).await?;
                // A split that Python still cannot read is not kept: the
                // model sees its own program's error, with the hint below.
                if !rerun.stderr.contains("SyntaxError") {
                    output = rerun;
                    unsaved = rerun_unsaved;
                    notes.push(COMPOUND_NOTE.into());
                    code = split;
                }
            }
        }
        // A standard module used without its import (`csv.reader` with no
        // `import csv`): the import is added at the top and the program
        // run again, a few times at most. Lines before the error did run,
        // so only where they cannot have changed the workspace (it is
        // read-only; /tmp is new each run).
        let mut added = Vec::new();
        while language == "python" && !self.config.allow_writes && added.len() < MAX_ADDED_IMPORTS {
            let Some(import) = undefined_name(&output.stderr).and_then(missing_import) else {
                break;
            };
            let with_import = format!("{import}\n{code}");
            (output, unsaved) = self.execute(interpreter, &with_import, timeout).await?;
            code = with_import;
            added.push(import);
        }
        if !added.is_empty() {
            notes.push(format!(
                "`{}` {} missing and {} added at the top",
                added.join("` and `"),
                if added.len() == 1 { "was" } else { "were" },
                if added.len() == 1 { "was" } else { "were" },
            ));
        }
        // Text compared with a number (`row['age'] > 30` on a CSV value):
        // the failing line's comparisons read their value as a number, and
        // the program runs again, once, on the same terms as the imports.
        let numbers = (language == "python" && compared_text_with_number(&output.stderr))
            .then(|| error_line(&output.stderr).and_then(|line| read_as_numbers(&code, line)))
            .flatten();
        let mut numbers_hint = None;
        if let Some((fixed, rewritten)) = numbers {
            let said = format!(
                "values read from a CSV file are text, and text was compared with a number: the comparison {} `{}`",
                if self.config.allow_writes { "should read" } else { "was run as" },
                rewritten.join("` and `")
            );
            if self.config.allow_writes {
                numbers_hint = Some(said);
            } else {
                (output, unsaved) = self.execute(interpreter, &fixed, timeout).await?;
                code = fixed;
                notes.push(said);
            }
        }
        let mut data = serde_json::to_value(&output).unwrap_or(Value::Null);
        if let Some(fields) = data.as_object_mut() {
            if !notes.is_empty() {
                fields.insert("repaired".into(), json!(notes.join("; ")));
            }
            if !unsaved.is_empty() {
                fields.insert("unsaved_writes".into(), json!(unsaved));
                fields.insert("note".into(), json!(UNSAVED_NOTE));
            }
        }
        let problem = if output.timed_out {
            Some(format!(
                "timed out after {}s and was killed",
                timeout.as_secs_f64()
            ))
        } else if output.killed {
            Some("killed by a signal (a CPU, memory or process limit)".to_string())
        } else if output.process_limit_hit {
            Some(format!(
                "tried to start more than {} processes and was stopped",
                self.config.max_processes
            ))
        } else {
            match output.exit_code {
                Some(0) => None,
                Some(code) => Some(format!("exited with code {code}")),
                None => Some("ended without an exit code".to_string()),
            }
        };
        let hint = if !self.config.allow_writes && output.stderr.contains("Read-only file system") {
            "; the workspace is read-only for run_code: print the value instead and save it with write_file".to_string()
        } else if let Some(name) =
            undefined_name(&output.stderr).filter(|n| super::NAMES.contains(n))
        {
            format!(
                "; `{name}` is a tool, not a function inside the code: open files with open() in the code, or call {name} as your action"
            )
        } else if let Some(import) = undefined_name(&output.stderr).and_then(missing_import) {
            format!("; add `{import}` at the top of the code")
        } else if let Some(said) = numbers_hint {
            format!("; {said}")
        } else if let Some(value) = not_a_number(&output.stderr) {
            format!(
                "; `{value}` is not a number: if it is a column name, the first row is a header, so skip it (next(reader), or csv.DictReader)"
            )
        } else if let Some(name) = undefined_name(&output.stderr) {
            format!(
                "; `{name}` is not defined: every run_code call is a new program, so nothing from an earlier round exists in it as a variable; read the files it needs inside the code"
            )
        } else if language == "python"
            && output.stderr.contains("SyntaxError")
            && has_inline_body(&code)
        {
            "; Python reads one statement per line: put each statement on a line of its own (\\n between them in the JSON string), with the body of a for/if/with on the lines below it, indented".to_string()
        } else {
            "; see stderr".to_string()
        };
        match problem {
            None => Ok(data),
            Some(problem) => Err(ToolError::with_data(
                format!("the code {problem}{hint}"),
                data,
            )),
        }
    }
}

impl RunCode {
    /// `code` with its statements on lines of their own, when that changes
    /// it (see `python_compound`): bodies moved under their headers here,
    /// then lines broken where Python's parser, in the sandbox, says a
    /// statement begins.
    async fn one_statement_per_line(&self, code: &str) -> Option<String> {
        let moved = split_compound_lines(code);
        let base = moved.as_deref().unwrap_or(code);
        let splitter = ["/usr/bin/python3", "-c", STATEMENT_SPLITTER];
        let split = match sandbox::run(
            &self.config,
            &splitter_argv(&splitter, base),
            SPLITTER_TIMEOUT,
        )
        .await
        {
            Ok(out) if out.exit_code == Some(0) && !out.stdout.is_empty() => Some(out.stdout),
            _ => None,
        };
        split.or(moved)
    }

    /// Runs `code` with `interpreter` in the sandbox, and returns with its
    /// output the files it wrote that were not saved (see [`Scratch`]):
    /// while the workspace is read-only for code, a small one is copied
    /// and the copy is the code's working directory, writable.
    async fn execute(
        &self,
        interpreter: &[&str],
        code: &str,
        timeout: Duration,
    ) -> Result<(sandbox::SandboxOutput, BTreeMap<String, String>), ToolError> {
        let mut argv = interpreter.to_vec();
        argv.push(code);
        let scratch = if self.config.allow_writes {
            None
        } else {
            let workspace = self.config.workspace.clone();
            tokio::task::spawn_blocking(move || Scratch::copy(&workspace))
                .await
                .ok()
                .flatten()
        };
        let mut config = self.config.clone();
        if let Some(scratch) = &scratch {
            config.workspace = scratch.path().to_path_buf();
            config.allow_writes = true;
        }
        let output = sandbox::run(&config, &argv, timeout)
            .await
            .map_err(|e| ToolError::new(e.0))?;
        let unsaved = match scratch {
            Some(scratch) => tokio::task::spawn_blocking(move || scratch.written())
                .await
                .unwrap_or_default(),
            None => BTreeMap::new(),
        };
        Ok((output, unsaved))
    }
}

/// The statement splitter's command line for `code`.
fn splitter_argv<'a>(splitter: &[&'a str], code: &'a str) -> Vec<&'a str> {
    let mut argv = splitter.to_vec();
    argv.push(code);
    argv
}

/// `code` without the `}`s it ends with (and the whitespace around them),
/// or `None` when it does not end with one.
fn without_trailing_braces(code: &str) -> Option<String> {
    let kept = code
        .trim_end()
        .trim_end_matches(|c: char| c == '}' || c.is_whitespace());
    (kept.len() < code.trim_end().len() && !kept.is_empty()).then(|| kept.to_string())
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

/// The import statement that defines `name`, when it is a standard-library
/// module or one of the few names programs take from one (`Counter`,
/// `Path`). Anything else undefined is the program's own mistake, and the
/// model is told so instead.
fn missing_import(name: &str) -> Option<&'static str> {
    const IMPORTS: &[&str] = &[
        "import csv",
        "import json",
        "import os",
        "import re",
        "import math",
        "import sys",
        "import statistics",
        "import collections",
        "import datetime",
        "import itertools",
        "import functools",
        "import glob",
        "import pathlib",
        "import string",
        "import random",
        "import time",
        "import decimal",
        "import fractions",
        "import textwrap",
        "import operator",
        "import heapq",
        "import bisect",
        "import hashlib",
        "import base64",
        "import shutil",
        "import io",
        "import tomllib",
        "import configparser",
        "import sqlite3",
        "import struct",
        "import zipfile",
        "import gzip",
        "import copy",
        "import pprint",
        "import unicodedata",
        "from collections import Counter",
        "from collections import defaultdict",
        "from collections import OrderedDict",
        "from collections import namedtuple",
        "from collections import deque",
        "from pathlib import Path",
        "from decimal import Decimal",
        "from fractions import Fraction",
        "from functools import reduce",
    ];
    IMPORTS
        .iter()
        .find(|import| import.rsplit(' ').next() == Some(name))
        .copied()
}

/// The name in Python's last `NameError: name 'X' is not defined`.
fn undefined_name(stderr: &str) -> Option<&str> {
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("NameError: name '"))?;
    let rest = line.strip_prefix("NameError: name '")?;
    let name = &rest[..rest.find('\'')?];
    (!name.is_empty()).then_some(name)
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
    fn the_undefined_name_is_read_from_the_last_name_error() {
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nNameError: name 'data' is not defined\n";
        assert_eq!(undefined_name(stderr), Some("data"));
        assert_eq!(undefined_name("SyntaxError: invalid syntax"), None);
        assert_eq!(undefined_name("NameError: name '"), None);
    }

    #[test]
    fn standard_modules_and_their_common_names_have_imports() {
        assert_eq!(missing_import("csv"), Some("import csv"));
        assert_eq!(missing_import("os"), Some("import os"));
        assert_eq!(
            missing_import("Counter"),
            Some("from collections import Counter")
        );
        assert_eq!(missing_import("Path"), Some("from pathlib import Path"));
        // The program's own names are not guessed.
        assert_eq!(missing_import("data"), None);
        assert_eq!(missing_import("rows"), None);
        assert_eq!(missing_import("import"), None);
    }
}

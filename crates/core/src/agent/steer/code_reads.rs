//! **Code reads**: after the input preview, one line that says how each of
//! the goal's data files is read in `run_code`, in the file's own name and,
//! for a table, its own column names.
//!
//! The one program in `run_code`'s spec (a CSV read with `csv.DictReader`)
//! carries a lesson the 1.5B model needs: without it the model split CSV
//! lines by hand, header row included, and reached for pandas, and the
//! held-out suite fell from 21 to 11 of 38 (EVALS.md §41). But it is one
//! program for one kind of file, and executors copied it onto logs and
//! scripts (`open('data.csv')` over a `.log`; §40). This steer gives the
//! same lesson for the files at hand: a CSV's `DictReader` with its keys
//! (or `csv.reader` when the first row is data, not a header), `json.load`
//! for JSON, one JSON object per line for JSON Lines, `splitlines()` for
//! text and logs, each with its import, as the lines a program starts
//! with: shown as bare assignments, the model took them for variables
//! already set (code actions keep a run's variables) and used `rows`
//! without reading it (5 of 45 dev runs). Nothing is read but the first
//! line of a table; taken once before round 1, so the prompt's opening
//! stays the same.
//!
//! **Off by default** (EVALS.md §42): the dev suite gave 24 of 45 with its
//! first wording (against 30 for the loop without it, paired +3 −9), and
//! the held-out suite 19 of 38 with this one against 21 and 18 for the same
//! loop without it in two passes (paired +5 −7 and +6 −5): nothing says it
//! helps, and it lengthens every prompt whose goal names data files.
//! `--steer code_reads=on` turns it on.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use async_trait::async_trait;

use super::goal_files;
use super::input_preview::files_of;
use super::{Opening, Steer, SteerContext};
use crate::agent::survey::readable_workspace;
use crate::tools::{ToolEffect, Workspace};

/// The steer's name (switches, journals).
pub const NAME: &str = "code_reads";

/// The most files the line names.
pub const MOST_FILES: usize = 4;
/// The most column names shown for a table.
const MOST_COLUMNS: usize = 8;

/// The code reads as a steer: an opening line.
pub struct CodeReads;

#[async_trait]
impl Steer for CodeReads {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "says in the first prompt how each of the goal's data files is read in run_code (a CSV's DictReader with its columns, json.load, lines), read once before round 1"
    }

    async fn opening(&self, cx: &SteerContext<'_>, _first_round: u32) -> Opening {
        let Some(tool) = cx.toolbox.first_with(ToolEffect::RunsCode) else {
            return Opening::default();
        };
        let Some(workspace) = readable_workspace(cx.toolbox) else {
            return Opening::default();
        };
        let named = goal_files::inputs(cx.goal, cx.toolbox, &cx.files.outputs);
        let named = goal_files::with_folders(named, cx.goal, cx.toolbox);
        let tool = tool.to_string();
        tokio::task::spawn_blocking(move || reads(&workspace, &named, &tool).into())
            .await
            .unwrap_or_default()
    }
}

/// The line for `named` (the goal's files present in `workspace`, or a
/// small workspace's files when it names none), or empty when none of
/// them is a kind of file it knows.
pub fn reads(workspace: &Workspace, named: &[String], tool: &str) -> String {
    let reads: Vec<String> = files_of(workspace, named)
        .iter()
        .filter_map(|(name, path)| read_of(name, path))
        .take(MOST_FILES)
        .collect();
    if reads.is_empty() {
        return String::new();
    }
    format!(
        "To read them in {tool} (Python), a program starts with these lines (nothing is defined until a program runs them): {}.",
        reads.join("; ")
    )
}

/// How the file `name` (at `path`) is read in Python, by its extension;
/// `None` for other kinds, and for a name a Python literal would need
/// escapes for.
fn read_of(name: &str, path: &Path) -> Option<String> {
    if name.contains(['\'', '\\']) || name.chars().any(char::is_control) {
        return None;
    }
    let (_, extension) = name.rsplit_once('.')?;
    match extension.to_ascii_lowercase().as_str() {
        "csv" | "tsv" => table_read(name, path, extension.eq_ignore_ascii_case("tsv")),
        "json" => Some(format!("`import json; data = json.load(open('{name}'))`")),
        "jsonl" | "ndjson" => Some(format!(
            "`import json; items = [json.loads(line) for line in open('{name}') if line.strip()]` (one object per line)"
        )),
        "txt" | "log" | "md" | "text" => {
            Some(format!("`lines = open('{name}').read().splitlines()`"))
        }
        _ => None,
    }
}

/// A table's read: `csv.DictReader` keyed by its header, or `csv.reader`
/// when its first row is data (every cell a number).
fn table_read(name: &str, path: &Path, tab_separated: bool) -> Option<String> {
    let first = first_line(path)?;
    let separator = if tab_separated || (first.contains('\t') && !first.contains(',')) {
        '\t'
    } else if first.contains(';') && !first.contains(',') {
        ';'
    } else {
        ','
    };
    let delimiter = match separator {
        '\t' => ", delimiter='\\t'",
        ';' => ", delimiter=';'",
        _ => "",
    };
    let cells: Vec<&str> = first
        .split(separator)
        .map(|cell| cell.trim().trim_matches('"').trim())
        .collect();
    if cells.iter().all(|cell| cell.parse::<f64>().is_ok()) {
        return Some(format!(
            "`import csv; rows = list(csv.reader(open('{name}'){delimiter}))` (one list per row; the first row is data, not a header; every value a string)"
        ));
    }
    let mut keys: Vec<String> = cells
        .iter()
        .take(MOST_COLUMNS)
        .map(|cell| format!("'{}'", cell.replace(['\'', '\\'], "")))
        .collect();
    if cells.len() > MOST_COLUMNS {
        keys.push("…".into());
    }
    Some(format!(
        "`import csv; rows = list(csv.DictReader(open('{name}'){delimiter}))` (one dict per data row, the header row is not one; keys {}; every value a string)",
        keys.join(", ")
    ))
}

/// The file's first line, without its line break (a BOM dropped); `None`
/// when it is empty or not text.
fn first_line(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file).take(4096).read_line(&mut line).ok()?;
    let line = line
        .trim_start_matches('\u{feff}')
        .trim_end_matches(['\r', '\n']);
    (!line.trim().is_empty()).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        Workspace::temp_with(files)
    }

    #[test]
    fn each_data_file_gets_its_own_read_in_its_own_names() {
        let (_dir, ws) = workspace(&[
            ("data/sales.csv", "region,amount\nnorth,3\n"),
            ("config.json", "{\"port\": 1}"),
            ("app.log", "ERROR x\n"),
            ("calc.py", "print(1)\n"),
        ]);
        let named: Vec<String> = ["sales.csv", "config.json", "app.log", "calc.py"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            reads(&ws, &named, "run_code"),
            "To read them in run_code (Python), a program starts with these lines (nothing is defined until a program runs them): \
             `import csv; rows = list(csv.DictReader(open('data/sales.csv')))` (one dict per data row, the header row is not one; keys 'region', 'amount'; every value a string); \
             `import json; data = json.load(open('config.json'))`; \
             `lines = open('app.log').read().splitlines()`."
        );
    }

    #[test]
    fn a_table_without_a_header_or_with_another_separator_is_read_as_it_is() {
        let (_dir, ws) = workspace(&[
            ("nums.csv", "1,2.5\n3,4\n"),
            ("semi.csv", "\u{feff}name;\"age\"\nana;3\n"),
            ("t.tsv", "a\tb\n"),
        ]);
        let named: Vec<String> = ["nums.csv", "semi.csv", "t.tsv"].map(String::from).to_vec();
        let line = reads(&ws, &named, "run_code");
        assert!(line.contains("`import csv; rows = list(csv.reader(open('nums.csv')))` (one list per row; the first row is data"), "{line}");
        assert!(line.contains("open('semi.csv'), delimiter=';'))` (one dict per data row, the header row is not one; keys 'name', 'age';"), "{line}");
        assert!(line.contains("open('t.tsv'), delimiter='\\t'))`"), "{line}");
    }

    #[test]
    fn nothing_is_said_for_other_files_or_names_python_would_need_escaped() {
        let (_dir, ws) = workspace(&[("calc.py", "x\n"), ("it's.txt", "y\n"), ("empty.csv", "")]);
        let named: Vec<String> = ["calc.py", "it's.txt", "empty.csv"]
            .map(String::from)
            .to_vec();
        assert_eq!(reads(&ws, &named, "run_code"), "");
        // A goal that names no file: a workspace of a few files is read.
        let (_dir, ws) = workspace(&[("a.jsonl", "{}\n")]);
        assert!(
            reads(&ws, &[], "run_code").contains("json.loads(line) for line in open('a.jsonl')")
        );
    }
}

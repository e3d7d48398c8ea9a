//! **Inputs check**: a `run_code` that reads some of the goal's data files
//! but not all of them (and lists no folder) is answered once with a note
//! that names the ones it leaves out, instead of being run; the next
//! decision may only run code.
//!
//! Asked to count the distinct people of the three files in `teams/`, a
//! small model opens `teams/data.txt`, prints its three names and writes
//! `3`; asked to combine two tables, it sums one (EVALS.md section 45):
//! the program runs, the printout looks like an answer, and the answer
//! comes from part of the input. The loop sees it without a model call:
//! the goal's input files (the files it names that exist, and the files of
//! a folder it names) are known before round 1, and a program that reads a
//! file names it. Only data files count (tables, JSON, text, logs, config
//! formats): a script to fix or a Markdown page of instructions is read
//! for what it says, not computed over. A program that lists a folder
//! (`os.listdir`, `glob`, `iterdir`, `walk`, a shell `*`) is taken to read
//! all of it.
//!
//! **Off by default** (`--steer inputs_check=on`): measured with
//! `compute_check` and `condition_check` on, in exact pairs (the engine is
//! repeatable), it acted in 3 dev runs and 3 held-out runs, and no run
//! flipped either way: it moved nothing (EVALS.md section 45).

use serde_json::Value;

use super::goal_files::base_name;
use super::{quoted_names, Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::ToolEffect;

/// The steer's name (switches, journals).
pub const NAME: &str = "inputs_check";

/// How every note of this check begins.
const MARK: &str = "not run:";

/// The extensions of data files: what a program computes over.
const DATA_EXTENSIONS: &[&str] = &[
    "csv", "tsv", "json", "jsonl", "txt", "log", "xml", "yaml", "yml", "ini", "cfg", "conf", "dat",
    "toml",
];

/// What a program that lists a folder contains (Python's ways, a shell
/// wildcard, `find`); a shell `ls` is looked for as a word.
const LISTS_A_FOLDER: &[&str] = &[
    "listdir", "glob", "scandir", "walk(", "iterdir", "/*", "*.", "find ",
];

/// The inputs check as a steer: gates code that reads part of the input.
pub struct InputsCheck;

impl Steer for InputsCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "answers a run_code that reads some of the goal's data files but not all (and lists no folder) with a note naming the ones it leaves out (once per run); the next decision may only run code"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if cx.toolbox.effect(&decision.action.name) != ToolEffect::RunsCode
            || super::acted(cx.history, NAME)
        {
            return Gate::Go;
        }
        let Some(code) = decision.action.args.get("code").and_then(Value::as_str) else {
            return Gate::Go;
        };
        match left_out(&cx.files.inputs, code) {
            Some((read, unread)) => Gate::refuse(note(&read, &unread)),
            None => Gate::Go,
        }
    }

    fn narrow(&self, cx: &SteerContext<'_>) -> Option<Vec<String>> {
        super::code_after_note(cx, NAME)
    }
}

/// The data files among `inputs` that `code` reads and those it leaves
/// out, when it reads at least one, leaves out at least one, and lists no
/// folder; `None` otherwise.
pub fn left_out(inputs: &[String], code: &str) -> Option<(Vec<String>, Vec<String>)> {
    let lists = LISTS_A_FOLDER.iter().any(|l| code.contains(l))
        || code
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|word| word == "ls");
    if lists {
        return None;
    }
    let (read, unread): (Vec<String>, Vec<String>) = inputs
        .iter()
        .filter(|name| is_data(name))
        .cloned()
        .partition(|name| code.contains(base_name(name)));
    (!read.is_empty() && !unread.is_empty()).then_some((read, unread))
}

/// Whether `name` is a data file (by its extension).
fn is_data(name: &str) -> bool {
    let base = base_name(name);
    base.rsplit_once('.')
        .is_some_and(|(_, ext)| DATA_EXTENSIONS.iter().any(|d| ext.eq_ignore_ascii_case(d)))
}

/// The observation of code that reads `read` and leaves out `unread`.
pub fn note(read: &[String], unread: &[String]) -> String {
    let all: Vec<String> = read.iter().chain(unread).cloned().collect();
    format!(
        "{MARK} the goal's input files are {}, and this program reads only {}. Write the program again so that it reads every input file the goal's answer depends on (for example, loop over them), then print the result.",
        quoted_names(&all),
        quoted_names(read),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::steer::condition_check::tests::run_code;
    use crate::agent::steer::GoalFiles;
    use crate::journal::JournalEntry;
    use crate::tools::ToolStatus;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_program_that_reads_part_of_the_data_files_leaves_the_rest_out() {
        let teams = names(&["teams/data.txt", "teams/mobile.txt", "teams/platform.txt"]);
        let one = "with open('teams/data.txt') as f: print(f.read().splitlines())";
        assert_eq!(
            left_out(&teams, one),
            Some((
                names(&["teams/data.txt"]),
                names(&["teams/mobile.txt", "teams/platform.txt"])
            ))
        );
        // Every file named, a folder listed, or none read: nothing to say.
        let all = "for n in ['data.txt', 'mobile.txt', 'platform.txt']:\n    print(open('teams/' + n).read())";
        assert_eq!(left_out(&teams, all), None);
        let listed = "import os\nfor n in os.listdir('teams'): print(open('teams/' + n).read())";
        assert_eq!(left_out(&teams, listed), None);
        assert_eq!(left_out(&teams, "cat teams/* | sort -u | wc -l"), None);
        assert_eq!(left_out(&teams, "ls teams | wc -l"), None);
        assert_eq!(left_out(&teams, "print(2 + 2)"), None);
        // A product is not a wildcard, nor a word holding "ls" a listing.
        let totals = "totals = len(open('teams/data.txt').read().split()) * 2\nprint(totals)";
        assert!(left_out(&teams, totals).is_some());
        // A script to fix and a page of instructions are not data.
        let inputs = names(&["calc.py", "steps.md", "prices.csv"]);
        assert_eq!(left_out(&inputs, "print(open('prices.csv').read())"), None);
        // One data file alone cannot be read in part.
        assert_eq!(left_out(&names(&["a.csv"]), "open('a.csv')"), None);
    }

    #[test]
    fn the_note_names_every_input_and_what_the_program_read() {
        let text = note(&names(&["a.csv"]), &names(&["b.csv", "c.csv"]));
        assert!(text.starts_with(MARK), "{text}");
        assert!(
            text.contains("are `a.csv`, `b.csv`, `c.csv`, and this program reads only `a.csv`"),
            "{text}"
        );
    }

    #[test]
    fn a_program_over_part_of_the_input_is_refused_once_then_only_code_runs() {
        let (_dir, toolbox) = super::super::write_offer::tests::toolbox();
        let files = GoalFiles {
            outputs: vec!["total.txt".into()],
            inputs: names(&["q1.csv", "q2.csv"]),
            ..Default::default()
        };
        let cx = |history| SteerContext {
            goal: "Add up the amounts of q1.csv and q2.csv; write the total to total.txt.",
            files: &files,
            toolbox: &toolbox,
            history,
            repetition_window: 5,
            shown: &[],
            others: &[],
        };
        let part = run_code(
            "import csv\nprint(sum(float(r['amount']) for r in csv.DictReader(open('q1.csv'))))",
        );
        let Gate::Refuse { note, .. } = InputsCheck.gate(&cx(&[]), &part, false) else {
            panic!("a program over part of the input ran");
        };
        assert!(note.contains("reads only `q1.csv`"), "{note}");
        let told = [JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(1, "", "run_code", part.action.args.clone())
        }];
        assert_eq!(InputsCheck.gate(&cx(&told), &part, false), Gate::Go);
        assert_eq!(
            InputsCheck.narrow(&cx(&told)),
            Some(vec!["run_code".to_string()])
        );
        assert_eq!(InputsCheck.narrow(&cx(&[])), None);
    }
}

//! **Worked example**: the system prompt ends with one whole run of another
//! task, reply by reply, so a small model sees the method and not only the
//! rules: read the input with code, apply the goal's condition in the code
//! and print what it counted, write just the value to the goal's file, then
//! finish.
//!
//! Why: the commonest failure of the 1.5B model on both suites is a file
//! written with a value the code got wrong or never computed (EVALS.md,
//! section 27: 8 of 11 dev runs that wrote a code-derived number failed on
//! the code; `len(rows)` for "how many are admins"), and the rules in the
//! prompt ("compute with run_code", "write just that value") were already
//! there. Few-shot demonstrations are how small models are usually taught
//! a format and a method; this one is of a task of no suite's wording, and
//! says its files are not in the workspace, so that its names are not
//! taken for the task's. Shown only when the run has both `run_code` and
//! `write_file`.
//!
//! **Off by default** (EVALS.md, section 30): it raised the dev suite
//! (21 → 24 and 26 of 45 in two passes) and lowered the held-out suite
//! (12 → 10 and 9 of 38): the gain did not carry over to tasks it was not
//! written beside. What it brought in besides passes: runs that copy its
//! code onto files it does not fit (`csv.DictReader` over a Markdown list)
//! and more runs that give up after one failed program. `--steer
//! worked_example=on` turns it on.

use super::Steer;
use crate::tools::Toolbox;

/// The steer's name (switches, journals).
pub const NAME: &str = "worked_example";

/// The worked example as a steer: a block at the end of the system prompt.
pub struct WorkedExample;

impl Steer for WorkedExample {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "ends the system prompt with one whole run of another task (read with code, apply the condition, write the value, finish)"
    }

    fn system(&self, toolbox: &Toolbox) -> String {
        let names = toolbox.names();
        if names.contains(&"run_code") && names.contains(&"write_file") {
            EXAMPLE.to_string()
        } else {
            String::new()
        }
    }
}

/// The example: a goal, three replies and the observations between them.
const EXAMPLE: &str = r#"Example of a whole run, for another task (its files are not in your workspace):
Goal: How many orders in orders.csv were shipped? Write the number to shipped.txt.
Reply: {"thought": "I count with code, keeping only the rows the goal asks about, and print what I kept to check it.", "action": {"name": "run_code", "args": {"language": "python", "code": "import csv\nrows = list(csv.DictReader(open('orders.csv')))\nprint(rows[0])\nshipped = [r for r in rows if r['status'].strip() == 'shipped']\nprint(len(rows), 'rows,', len(shipped), 'shipped:', [r['id'] for r in shipped])"}}}
Observation: {"status": "ok", "data": {"stdout": "{'id': '1', 'item': 'lamp', 'status': 'shipped'}\n8 rows, 3 shipped: ['1', '4', '7']\n", "stderr": "", "exit_code": 0}, "error": null}
Reply: {"thought": "The code kept 3 of the 8 rows. The goal wants just the number in shipped.txt.", "action": {"name": "write_file", "args": {"path": "shipped.txt", "content": "3"}}}
Observation: {"status": "ok", "data": {"path": "shipped.txt", "bytes": 1}, "error": null}
Reply: {"thought": "shipped.txt holds the count, so the goal is done.", "action": {"name": "finish", "args": {"result": "3 of the 8 orders were shipped; shipped.txt holds 3."}}}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::parse_decision;

    #[test]
    fn every_reply_of_the_example_is_a_decision() {
        let replies: Vec<_> = EXAMPLE
            .lines()
            .filter_map(|l| l.strip_prefix("Reply: "))
            .collect();
        assert_eq!(replies.len(), 3);
        let actions: Vec<String> = replies
            .iter()
            .map(|r| parse_decision(r).expect(r).action.name)
            .collect();
        assert_eq!(actions, ["run_code", "write_file", "finish"]);
    }

    #[test]
    fn the_example_needs_code_and_writes() {
        let toolbox = Toolbox::new();
        assert_eq!(WorkedExample.system(&toolbox), "");
    }
}

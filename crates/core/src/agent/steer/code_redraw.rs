//! **Code redraw**: when the model's own Python program fails, other
//! programs are drawn for the same round and the first that runs is kept.
//!
//! Why: in the dev suite's journals (EVALS.md, section 34) 20 of 43
//! `run_code` calls failed, in 12 of the 28 runs that ran code, and
//! almost every such run failed its check: after the error the model gave
//! up, wrote a guessed value, or "fixed" the wrong thing (a re-ask that
//! showed it the error, `code_retry`, turned honest `incomplete`s into
//! wrong `finished`s, section 30). A program that fails on its own syntax,
//! a wrong key or a misread format is usually one of several programs the
//! model could have written for the same prompt; drawn again from the same
//! conversation, before it has seen the error, at a higher temperature and
//! each with its own seed, one of them often runs. This is sampling, not a
//! note: the model is told nothing, and the round shows the program that
//! ran as if it had been the first answer.
//!
//! Only Python whose own code raised (every frame of its traceback is the
//! program, `<string>`, or Python's own library) is redrawn; a program
//! that ran out of time is not (its draws would likely wait as long, up to
//! two minutes each, on the run's clock). Nor is a failure inside a
//! script of the workspace that the code runs (it names a `.py` or `.sh`
//! file, or a frame is such a file): that is the observation the model
//! needs, not a failure to hide. A drawn program that does not name every
//! workspace file and folder the failed one named (the failed program
//! shows what the model meant to compute from) is not run: a draw that
//! writes a number it made up, lists the workspace's root, or reads one
//! table of a join "succeeds" at something else ([`reads_what_it_read`]).
//! When no draw is left, the round keeps the model's own error.
//! At most [`MAX_PER_RUN`] rounds per run are redrawn.

use serde_json::Value;

use super::{Redraw, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::{ToolEffect, ToolResult, ToolStatus};

/// The steer's name (switches, journals).
pub const NAME: &str = "code_redraw";

/// Programs drawn in place of a failed one: with the engine's batching,
/// three more cost little more than one.
pub const DRAWS: u32 = 3;

/// The temperature they are drawn at: enough that they differ.
pub const TEMPERATURE: f32 = 0.7;

/// Most rounds of one run whose program is redrawn.
pub const MAX_PER_RUN: usize = 3;

/// The code redraw as a steer.
pub struct CodeRedraw;

impl Steer for CodeRedraw {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "when the model's own Python fails (not a workspace script it runs), draws 3 other programs for the same round and keeps the first that runs (3 rounds per run at most)"
    }

    fn redraw(
        &self,
        cx: &SteerContext<'_>,
        decision: &Decision,
        result: &ToolResult,
    ) -> Option<Redraw> {
        let runs_code = cx.toolbox.first_with(ToolEffect::RunsCode)?;
        if decision.action.name != runs_code || !own_code_failed(&decision.action.args, result) {
            return None;
        }
        let redrawn = super::redrawn_rounds(cx, NAME);
        (redrawn < MAX_PER_RUN).then(|| Redraw {
            draws: DRAWS,
            temperature: TEMPERATURE,
            among: vec![runs_code.to_string()],
            reread: false,
        })
    }

    fn eligible(&self, cx: &SteerContext<'_>, decision: &Decision, candidate: &Decision) -> bool {
        reads_what_it_read(cx, decision, candidate)
    }
}

/// Whether program `candidate` names a workspace file or folder in its
/// code when program `decision` does: a drawn program that reads nothing
/// (and writes a number it made up) may not stand in for one that read
/// the workspace.
pub fn reads_if_it_read(cx: &SteerContext<'_>, decision: &Decision, candidate: &Decision) -> bool {
    let Some(workspace) = cx.toolbox.workspace() else {
        return true;
    };
    let reads = |d: &Decision| names_a_workspace_path(code_of(d), |path| !workspace.lacks(path));
    !reads(decision) || reads(candidate)
}

/// Whether program `candidate` names every workspace file and folder that
/// program `decision` names (itself, or a folder it lies in; the
/// workspace's root, `.`, reads nothing in particular), and reads the
/// workspace if `decision` did ([`reads_if_it_read`]).
///
/// The failed program shows what the model meant to compute from: a join
/// of `orders.csv` and `customers.csv`, a count over every file of
/// `teams/`. A draw that runs but reads less does not compute the same
/// thing: `os.listdir('.')` printed `2` in place of a join that raised,
/// one of three team files read in place of the folder, and the first
/// program that ran was kept (EVALS.md section 52). Such a draw is not
/// run; when none is left, the round keeps the model's own error, which
/// its next round sees.
fn reads_what_it_read(cx: &SteerContext<'_>, decision: &Decision, candidate: &Decision) -> bool {
    let Some(workspace) = cx.toolbox.workspace() else {
        return true;
    };
    let exists = |path: &str| workspace.resolve(path).is_ok_and(|p| p.exists());
    let theirs = named_paths(code_of(candidate), exists);
    named_paths(code_of(decision), exists).iter().all(|path| {
        theirs.iter().any(|named| {
            named == path
                || path
                    .strip_prefix(named.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }) && reads_if_it_read(cx, decision, candidate)
}

/// The code of a `run_code` decision (empty for another call).
fn code_of(decision: &Decision) -> &str {
    decision.action.args["code"].as_str().unwrap_or_default()
}

/// The paths that `exists` holds among `code`'s string literals, written
/// plainly (`./data/` as `data`), the workspace's root left out.
fn named_paths(code: &str, exists: impl Fn(&str) -> bool) -> Vec<String> {
    string_literals(code)
        .map(|text| {
            let text = text.trim();
            text.strip_prefix("./")
                .unwrap_or(text)
                .trim_end_matches('/')
        })
        .filter(|path| !path.is_empty() && *path != "." && exists(path))
        .map(str::to_string)
        .collect()
}

/// Whether a string literal of `code` is a path that `exists` (a file or
/// folder of the workspace the program reads from).
fn names_a_workspace_path(code: &str, exists: impl Fn(&str) -> bool) -> bool {
    string_literals(code).any(|text| !text.trim().is_empty() && exists(text.trim()))
}

/// The text of the one-line string literals of `code`, in `'…'` or `"…"`.
fn string_literals(code: &str) -> impl Iterator<Item = &str> {
    let mut rest = code;
    std::iter::from_fn(move || loop {
        let start = rest.find(['\'', '"'])?;
        let quote = rest[start..].chars().next()?;
        let body = &rest[start + 1..];
        let end = body.find([quote, '\n'])?;
        rest = &body[(end + 1).min(body.len())..];
        if body[end..].starts_with(quote) {
            return Some(&body[..end]);
        }
    })
}

/// Whether `result` is a Python program of `args` that failed in its own
/// code: it raised, and every frame of its traceback is the program or
/// Python's library; it did not run out of time; and the code runs no
/// script of the workspace.
pub fn own_code_failed(args: &Value, result: &ToolResult) -> bool {
    if result.status != ToolStatus::Error || args["language"].as_str() != Some("python") {
        return false;
    }
    let code = args["code"].as_str().unwrap_or_default();
    let data = &result.data;
    if runs_a_script(code) || data["timed_out"].as_bool() == Some(true) {
        return false;
    }
    let failed = data["exit_code"].as_i64().is_some_and(|code| code != 0);
    let stderr = data["stderr"].as_str().unwrap_or_default();
    let mut frames = frames(stderr).peekable();
    failed
        && frames.peek().is_some()
        && frames.all(|file| file == "<string>" || is_pythons_own(file))
}

/// The files of a traceback's frames (`File "<string>", line 4`).
fn frames(stderr: &str) -> impl Iterator<Item = &str> {
    stderr.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix("File \"")?;
        rest.split('"').next()
    })
}

/// Whether a frame's file is Python's own library or an installed
/// package (`/usr/lib/python3.11/json/__init__.py`), not the workspace's.
fn is_pythons_own(file: &str) -> bool {
    file.starts_with('<')
        || file.contains("/lib/python")
        || file.contains("site-packages")
        || file.contains("dist-packages")
}

/// Whether `code` names a Python or shell script (`calc.py`, `run.sh`):
/// its failure may be the script's, which the model must see.
pub fn runs_a_script(code: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')))
        .any(|word| {
            let word = word.trim_end_matches('.');
            [".py", ".sh"]
                .iter()
                .any(|ext| word.len() > ext.len() && word.ends_with(ext))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::{test_context, GoalFiles};
    use crate::journal::{JournalEntry, RedrawRecord};
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::{Toolbox, Workspace};

    fn failed(stderr: &str) -> ToolResult {
        ToolResult {
            status: ToolStatus::Error,
            data: json!({"exit_code": 1, "stdout": "", "stderr": stderr, "timed_out": false}),
            error: Some("the code exited with code 1; see stderr".into()),
        }
    }

    const KEY_ERROR: &str =
        "Traceback (most recent call last):\n  File \"<string>\", line 3, in <module>\nKeyError: 'item'\n";

    fn code(language: &str, code: &str) -> Decision {
        let reply = json!({"thought": "", "action": {"name": "run_code", "args": {"language": language, "code": code}}});
        crate::decision::parse_decision(&reply.to_string()).unwrap()
    }

    fn redraw_with(
        history: &[JournalEntry],
        decision: &Decision,
        result: &ToolResult,
    ) -> Option<Redraw> {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
        let goal = "Count the open items in items.csv and write the number to open.txt.";
        let files = GoalFiles::of(goal, &toolbox);
        let cx = test_context(goal, &files, &toolbox, history);
        CodeRedraw.redraw(&cx, decision, result)
    }

    #[test]
    fn the_models_own_failed_python_is_drawn_again_as_code() {
        let program = code(
            "python",
            "import csv\nrows = list(csv.DictReader(open('items.csv')))\nprint(rows[0]['item'])",
        );
        let redraw = redraw_with(&[], &program, &failed(KEY_ERROR)).expect("a redraw");
        assert_eq!(redraw.among, ["run_code"]);
        assert_eq!(redraw.draws, DRAWS);
        assert!(redraw.temperature > 0.5);
        // An error raised in Python's library by the program's call is its
        // own; so is a syntax error.
        let in_library = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/usr/lib/python3.11/json/__init__.py\", line 293, in load\nAttributeError: 'PosixPath' object has no attribute 'read'\n";
        assert!(redraw_with(&[], &program, &failed(in_library)).is_some());
        let syntax =
            "  File \"<string>\", line 9\n    if x\n        ^\nSyntaxError: expected ':'\n";
        assert!(redraw_with(&[], &program, &failed(syntax)).is_some());
    }

    #[test]
    fn what_is_not_the_programs_own_failure_stands() {
        let program = code("python", "print(1)");
        // It ran.
        assert!(redraw_with(&[], &program, &ToolResult::ok(json!({"exit_code": 0}))).is_none());
        // Refused before it ran (no exit code), or failed in a module.
        assert!(redraw_with(&[], &program, &ToolResult::error("not run: a repeat")).is_none());
        let in_script = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n  File \"/workspace/calc.py\", line 3, in total\nNameError: name 'n' is not defined\n";
        assert!(redraw_with(&[], &program, &failed(in_script)).is_none());
        // Out of time: the draws would likely wait as long.
        let timed_out = ToolResult {
            data: json!({"exit_code": -1, "timed_out": true, "stderr": ""}),
            ..failed("")
        };
        assert!(redraw_with(&[], &program, &timed_out).is_none());
        // No traceback at all (the program exited 1 by itself).
        assert!(redraw_with(&[], &program, &failed("usage: x\n")).is_none());
        // A workspace script it runs: that error is the model's to read.
        let script = code("python", "exec(open('calc.py').read())");
        assert!(redraw_with(&[], &script, &failed(KEY_ERROR)).is_none());
        let bash = code("bash", "python3 calc.py");
        assert!(redraw_with(&[], &bash, &failed(KEY_ERROR)).is_none());
        // Another tool.
        let read = crate::decision::parse_decision(
            &json!({"thought": "", "action": {"name": "read_file", "args": {"path": "a"}}})
                .to_string(),
        )
        .unwrap();
        assert!(redraw_with(&[], &read, &failed(KEY_ERROR)).is_none());
    }

    #[test]
    fn three_rounds_per_run_at_most() {
        let program = code("python", "print(x)");
        let mut entry = JournalEntry::new(1, "", "run_code", json!({}));
        entry.redraw = Some(Box::new(RedrawRecord {
            by: NAME.into(),
            drawn: DRAWS,
            ran: 1,
            kept: Some(1),
            replaced: None,
            tally: Vec::new(),
            judge: None,
        }));
        let history = vec![entry; MAX_PER_RUN - 1];
        assert!(redraw_with(&history, &program, &failed(KEY_ERROR)).is_some());
        let history = vec![history[0].clone(); MAX_PER_RUN];
        assert!(redraw_with(&history, &program, &failed(KEY_ERROR)).is_none());
    }

    #[test]
    fn a_draw_that_reads_nothing_does_not_replace_one_that_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sprint.md"), "- [ ] a\n").unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let files = GoalFiles::default();
        let cx = test_context("", &files, &toolbox, &[]);
        let read = code(
            "python",
            "lines = open('sprint.md').readlines()\nprint(lines[9])",
        );
        let made_up = code("python", "with open('open.txt', 'w') as f: f.write('2')");
        let reads_too = code(
            "python",
            "print(sum(1 for l in open(\"sprint.md\") if '[ ]' in l))",
        );
        assert!(!CodeRedraw.eligible(&cx, &read, &made_up));
        assert!(CodeRedraw.eligible(&cx, &read, &reads_too));
        // A failed program that read nothing may be replaced by any.
        assert!(CodeRedraw.eligible(&cx, &code("python", "print(1/0)"), &made_up));
    }

    #[test]
    fn a_draw_must_read_every_file_and_folder_the_failed_program_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("orders.csv"), "id,amount\n").unwrap();
        std::fs::write(dir.path().join("customers.csv"), "id,country\n").unwrap();
        std::fs::create_dir(dir.path().join("teams")).unwrap();
        std::fs::write(dir.path().join("teams/data.txt"), "Ann\n").unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let files = GoalFiles::default();
        let cx = test_context("", &files, &toolbox, &[]);
        let join = code(
            "python",
            "o = open('orders.csv').read()\nc = open('./customers.csv').read()\nprint(o[99])",
        );
        // Listing the root reads nothing in particular.
        let listing = code("python", "import os\nprint(len(os.listdir('.')))");
        assert!(!CodeRedraw.eligible(&cx, &join, &listing));
        let one_table = code("python", "print(open('orders.csv').read())");
        assert!(!CodeRedraw.eligible(&cx, &join, &one_table));
        let both = code(
            "python",
            "import csv\nrows = list(csv.DictReader(open(\"customers.csv\")))\nprint(rows, open('orders.csv').read())",
        );
        assert!(CodeRedraw.eligible(&cx, &join, &both));
        // A folder read whole; one of its files is not the folder, while
        // the folder covers a file read inside it.
        let folder = code(
            "python",
            "import os\nfor n in os.listdir('teams/'): print(n)\nprint(1/0)",
        );
        let one_file = code("python", "print(open('teams/data.txt').read())");
        assert!(!CodeRedraw.eligible(&cx, &folder, &one_file));
        let joined = code(
            "python",
            "import os\nfor n in os.listdir('teams'): print(open(os.path.join('teams', n)).read())",
        );
        assert!(CodeRedraw.eligible(&cx, &folder, &joined));
        assert!(CodeRedraw.eligible(&cx, &one_file, &joined));
    }

    #[test]
    fn string_literals_are_read_whole() {
        let code = "open('a b.csv')\nx = \"it's\"\ny = 'unclosed\nz = 'c.txt'";
        let found: Vec<&str> = string_literals(code).collect();
        assert_eq!(found, ["a b.csv", "it's", "c.txt"]);
    }

    #[test]
    fn script_names_are_found_as_words() {
        assert!(runs_a_script(
            "import subprocess\nsubprocess.run(['python3', 'tools/calc.py'])"
        ));
        assert!(runs_a_script("exec(open(\"fix_me.sh\").read())"));
        assert!(!runs_a_script("import csv\nprint(open('data.csv').read())"));
        assert!(!runs_a_script("x = a.py_thing\nprint('.py')"));
    }
}

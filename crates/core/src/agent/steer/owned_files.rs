//! **Owned files**: in plan mode an executor writes its own outputs, or
//! files no subtask of the task names, never another subtask's.
//!
//! Executors of one task share one workspace and run side by side, and
//! each reads the whole task it is part of, which names every subtask's
//! files. A 1.5B executor that reads "save the summary to summary.md and
//! the top region to top.txt" may write both, over the file its sibling
//! wrote or will write (EVALS.md §40: 2 of 36 plan runs lost their check
//! this way). The planner knows each subtask's outputs, so the loop is
//! given the others' ([`crate::agent::Goal::others`]) and this steer
//! refuses a write to one before it acts, naming whose it is and what this
//! subtask's own files are. A run with no others (every plain run) is
//! untouched.
//!
//! **Off by default since session 44** (EVALS.md §41): on the plan suite
//! at K=3 it acted in 7 of 32 runs, +0 −1 against the same runs without
//! it: an executor whose value belonged in a sibling's file retried the
//! refused write until its rounds ran out, and a replan's subtask that
//! had to redo a finished subtask's file was refused it. Both are answered
//! since, unmeasured: the note now spells out the `finish` that hands the
//! refused content over as the result (when the subtask's own files are
//! written), and finished subtasks' files are free. `--steer
//! owned_files=on` turns it on.

use std::path::PathBuf;

use super::{Gate, Steer, SteerContext};
use crate::agent::OwnedFile;
use crate::decision::Decision;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "owned_files";

/// The owned-files rule as a steer: gates writes to other subtasks' files.
pub struct OwnedFiles;

impl Steer for OwnedFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_by_default(&self) -> bool {
        false
    }

    fn about(&self) -> &'static str {
        "refuses an executor's write to a file the plan gives to another subtask of the task, naming whose it is"
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        refusal(cx.others, &cx.files.outputs, cx.toolbox, decision).map_or(Gate::Go, Gate::refuse)
    }
}

/// The note that answers `decision` instead of running it, when it writes
/// (a tool whose effect is [`ToolEffect::Writes`], by its `path` arg) a
/// file in `others`; `None` when the write may go ahead. `own` are the
/// files this run must write, named in the note.
pub fn refusal(
    others: &[OwnedFile],
    own: &[String],
    toolbox: &Toolbox,
    decision: &Decision,
) -> Option<String> {
    if others.is_empty() || toolbox.effect(&decision.action.name) != ToolEffect::Writes {
        return None;
    }
    let path = decision.action.args.get("path")?.as_str()?;
    let target = key(toolbox, path)?;
    let owner = others
        .iter()
        .find(|other| key(toolbox, &other.path).as_ref() == Some(&target))?;
    // The subtask's own file under the same name (a plan that gives one
    // file to two subtasks) stays writable.
    if own
        .iter()
        .any(|mine| key(toolbox, mine).as_ref() == Some(&target))
    {
        return None;
    }
    let yours = match own {
        [] => "this subtask names no file of its own: give what it found as its finish result"
            .to_string(),
        files => format!(
            "this subtask's own file{}: {}",
            if files.len() == 1 { " is" } else { "s are" },
            files
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut note = format!(
        "not written: `{path}` is the output of subtask {} ({}), another part of this task, which writes it; {yours}. Leave `{path}` to {}.",
        owner.subtask, owner.role, owner.subtask
    );
    // With its own files written (or none to write), what it meant to
    // write is its finding: the finish that hands it over is spelled out
    // (executors retried the refused write until their rounds ran out,
    // EVALS.md §41; a reply spelled out is copied almost every time).
    let own_done = toolbox
        .workspace()
        .is_none_or(|w| own.iter().all(|f| !w.lacks(f)));
    let content = decision.action.args.get("content").and_then(|c| c.as_str());
    if let (true, Some(content)) = (own_done, content.filter(|c| !c.trim().is_empty())) {
        let reply = serde_json::json!({
            "thought": format!("{path} belongs to {}; I hand my finding over as my result", owner.subtask),
            "action": {"name": "finish", "args": {"result": content}},
        });
        note.push_str(&format!(" To hand this over instead, reply {reply}"));
    }
    Some(note)
}

/// What two names of one file share: the path inside the workspace (so
/// `./a.txt` and `a.txt` match), or the name without a leading `./` when
/// the run has no workspace; `None` for a path the workspace refuses.
fn key(toolbox: &Toolbox, path: &str) -> Option<PathBuf> {
    match toolbox.workspace() {
        Some(workspace) => workspace.resolve(path).ok(),
        None => Some(PathBuf::from(path.trim().trim_start_matches("./"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::parse_decision;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::Workspace;

    fn toolbox() -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    fn call(name: &str, path: &str) -> Decision {
        let reply = json!({"thought": "", "action": {"name": name, "args": {"path": path, "content": "x"}}});
        parse_decision(&reply.to_string()).expect("a decision")
    }

    fn write(path: &str) -> Decision {
        call("write_file", path)
    }

    fn others() -> Vec<OwnedFile> {
        vec![OwnedFile {
            path: "top.txt".into(),
            subtask: "s3".into(),
            role: "writer".into(),
        }]
    }

    #[test]
    fn a_write_to_another_subtasks_file_is_refused_with_whose_it_is() {
        let (_dir, toolbox) = toolbox();
        let own = vec!["summary.md".to_string()];
        for path in ["top.txt", "./top.txt"] {
            let note = refusal(&others(), &own, &toolbox, &write(path)).expect(path);
            assert_eq!(
                note,
                format!("not written: `{path}` is the output of subtask s3 (writer), another part of this task, which writes it; this subtask's own file is: `summary.md`. Leave `{path}` to s3.")
            );
        }
        // Without a file of its own, the note says where the answer goes.
        // Its own files not written yet: no finish is offered.
        let note = refusal(&others(), &own, &toolbox, &write("top.txt")).unwrap();
        assert!(!note.contains("reply"), "{note}");
        // With none to write (or all written), the finish that hands the
        // refused content over is spelled out.
        let note = refusal(&others(), &[], &toolbox, &write("top.txt")).unwrap();
        assert!(
            note.contains("give what it found as its finish result"),
            "{note}"
        );
        let reply = note.split(" reply ").nth(1).expect(&note);
        let reply: serde_json::Value = serde_json::from_str(reply).expect(reply);
        assert_eq!(reply["action"]["name"], "finish");
        assert_eq!(reply["action"]["args"]["result"], "x");
    }

    #[test]
    fn its_own_files_unowned_files_and_reads_go_ahead() {
        let (_dir, toolbox) = toolbox();
        let own = vec!["summary.md".to_string()];
        for path in ["summary.md", "notes/scratch.txt", "top.txt.bak"] {
            assert_eq!(
                refusal(&others(), &own, &toolbox, &write(path)),
                None,
                "{path}"
            );
        }
        // A file the plan gave to both subtasks stays this one's to write.
        let shared = vec!["top.txt".to_string()];
        assert_eq!(
            refusal(&others(), &shared, &toolbox, &write("top.txt")),
            None
        );
        let read = call("read_file", "top.txt");
        assert_eq!(refusal(&others(), &own, &toolbox, &read), None);
        // A plain run has no others: nothing is looked at.
        assert_eq!(refusal(&[], &own, &toolbox, &write("top.txt")), None);
    }
}

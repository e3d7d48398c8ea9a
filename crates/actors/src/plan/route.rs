//! The one-executor route: a task with exactly one deliverable runs as one
//! subtask, the whole task its goal, without a planning call.
//!
//! A plan pays for every split with a hand-over, and a small model loses
//! work there (EVALS.md §49: on the dev suite's one-file tasks the planner
//! split 37 of 45 and passed 15 where one loop passed 29, at 2.5× the
//! time). What a task delivers is known before any model call: the files
//! its goal names that the workspace lacks (to write) and the files it
//! asks to change in place (core's `goal_files`, the same reading the
//! loop's finish check uses). With one deliverable, one executor does the
//! whole task; with two or more, the planner splits as before, and so it
//! does for a goal that names none (what it delivers is not known: a value,
//! a file the goal does not name, or several). The executor's role is the
//! registered role with the most tools that can write (ties: the first by
//! name), so nothing runs with a tool no role has. The subtask is held to
//! the file it must write like any planned subtask: missing, it goes to the
//! replanner, which may split it then. Without a workspace nothing is
//! routed: what the task delivers cannot be read.

use hermes_core::agent::steer::{goal_files::GoalFiles, one_executor, Steers};
use hermes_core::tools::Toolbox;

use super::repair::can_write;
use super::subtask::PlannedSubtask;
use crate::roles::Role;

/// The one-subtask plan for `task` when `steers` has `one_executor` on and
/// the task has exactly one deliverable (see the module), with the line
/// that says why for the plan's trace; `None` when the planner should plan.
pub fn one_executor_if_on(
    steers: &Steers,
    task: &str,
    roles: &[Role],
    toolbox: &Toolbox,
) -> Option<(Vec<PlannedSubtask>, String)> {
    if !steers.is_on(one_executor::NAME) || toolbox.workspace().is_none() {
        return None;
    }
    let files = GoalFiles::of(task, toolbox);
    let mut deliverables = files.outputs.clone();
    for edit in &files.edits {
        if !deliverables.contains(&edit.file) {
            deliverables.push(edit.file.clone());
        }
    }
    one_executor_plan(task, &deliverables, roles, toolbox)
}

/// The one-subtask plan for a task whose deliverables are `deliverables`:
/// `None` unless there is exactly one and a role can write it.
pub fn one_executor_plan(
    task: &str,
    deliverables: &[String],
    roles: &[Role],
    toolbox: &Toolbox,
) -> Option<(Vec<PlannedSubtask>, String)> {
    let [file] = deliverables else {
        return None;
    };
    let role = doer(roles)?;
    let line = format!(
        "one deliverable ({file}): the whole task runs as one subtask of `{}`, without a planning call",
        role.name
    );
    let outputs = match toolbox.workspace() {
        // A file changed in place exists already: it is no output to wait for.
        Some(workspace) if workspace.lacks(file) => vec![file.clone()],
        _ => Vec::new(),
    };
    let subtask = PlannedSubtask {
        id: "s1".into(),
        role: role.name.clone(),
        goal: task.trim().to_string(),
        outputs,
        depends_on: Vec::new(),
    };
    Some((vec![subtask], line))
}

/// The role that does a task alone: of those that can write (by the rule
/// the plan's check holds outputs to, [`can_write`]), the one with the most
/// tools (a role without a tool list has them all), the first by name on a
/// tie (`roles` is sorted by name).
fn doer(roles: &[Role]) -> Option<&Role> {
    let count = |r: &Role| r.tools.as_ref().map_or(usize::MAX, Vec::len);
    roles
        .iter()
        .filter(|r| can_write(r))
        .fold(None, |best: Option<&Role>, r| match best {
            Some(b) if count(b) >= count(r) => Some(b),
            _ => Some(r),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::tools::builtin::register_file_tools;
    use hermes_core::tools::Workspace;

    fn role(name: &str, tools: &[&str]) -> Role {
        let mut role = crate::roles::parse_role(&format!(
            "name = \"{name}\"\ndescription = \"d\"\nsystem_prompt = \"p\"\n"
        ))
        .unwrap();
        role.tools = Some(tools.iter().map(|t| t.to_string()).collect());
        role
    }

    fn roles() -> Vec<Role> {
        vec![
            role("analyst", &["list_dir", "read_file", "write_file"]),
            role("coder", &["list_dir", "read_file", "write_file"]),
            role(
                "researcher",
                &["list_dir", "read_file", "search_files", "http_fetch"],
            ),
            role("writer", &["read_file", "write_file"]),
        ]
    }

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    fn on() -> Steers {
        Steers::default().with(one_executor::NAME, true)
    }

    #[test]
    fn a_task_with_one_file_to_write_is_one_subtask_of_the_widest_writing_role() {
        let (_dir, toolbox) = workspace(&[("notes.txt", "owner: alice\n")]);
        let task = "Read notes.txt, list the owners, and write owners.md.";
        let (plan, line) = one_executor_if_on(&on(), task, &roles(), &toolbox).unwrap();
        assert_eq!(
            plan,
            vec![PlannedSubtask {
                id: "s1".into(),
                // researcher has the most tools but cannot write; analyst
                // and coder tie, analyst is first by name.
                role: "analyst".into(),
                goal: task.into(),
                outputs: vec!["owners.md".into()],
                depends_on: vec![],
            }]
        );
        assert!(line.contains("one deliverable (owners.md)"), "{line}");
    }

    #[test]
    fn a_task_that_names_no_file_to_write_is_planned() {
        let (_dir, toolbox) = workspace(&[("notes.txt", "x\n")]);
        let task = "How many lines does notes.txt have?";
        assert!(one_executor_if_on(&on(), task, &roles(), &toolbox).is_none());
        assert!(one_executor_if_on(&on(), "Write a greeting.", &roles(), &toolbox).is_none());
    }

    #[test]
    fn an_edit_in_place_is_a_deliverable_but_not_an_output() {
        let (_dir, toolbox) = workspace(&[("calc.py", "print(4)\n")]);
        let task = "Fix calc.py so that it prints 5.";
        let (plan, _) = one_executor_if_on(&on(), task, &roles(), &toolbox).unwrap();
        assert_eq!(plan[0].role, "analyst");
        assert!(plan[0].outputs.is_empty(), "{:?}", plan[0].outputs);
        // An edit and a new file are two deliverables: the planner plans.
        let two = "Fix calc.py so that it prints 5. Then write a note on the fix to fix.md.";
        assert!(one_executor_if_on(&on(), two, &roles(), &toolbox).is_none());
    }

    #[test]
    fn two_files_to_write_are_planned() {
        let (_dir, toolbox) = workspace(&[("sales.csv", "region,amount\n")]);
        let task =
            "Total sales.csv per region into summary.md and write the top region to top.txt.";
        assert!(one_executor_if_on(&on(), task, &roles(), &toolbox).is_none());
    }

    #[test]
    fn off_without_a_workspace_or_without_a_role_that_can_write_the_planner_plans() {
        let (_dir, toolbox) = workspace(&[]);
        let task = "Write hello to hello.txt.";
        assert!(one_executor_if_on(
            &Steers::default().with(one_executor::NAME, false),
            task,
            &roles(),
            &toolbox
        )
        .is_none());
        assert!(
            one_executor_if_on(&on(), task, &roles(), &Toolbox::new()).is_none(),
            "no workspace, no deliverables known: plan"
        );
        let readers = vec![role("researcher", &["read_file", "list_dir"])];
        assert!(one_executor_if_on(&on(), task, &readers, &toolbox).is_none());
        let all_tools = {
            let mut r = role("generalist", &[]);
            r.tools = None;
            r
        };
        let (plan, _) =
            one_executor_if_on(&on(), task, &[readers[0].clone(), all_tools], &toolbox).unwrap();
        assert_eq!(plan[0].role, "generalist");
    }
}

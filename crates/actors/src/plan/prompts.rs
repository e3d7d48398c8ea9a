//! The planner's prompts: ask for a plan, send an invalid one back with
//! its errors, ask for a revised plan after a failure, and ask for the
//! final answer from the subtask results.

use std::fmt::Write as _;

use super::subtask::{PlannedSubtask, PLAN_SHAPE};
use crate::roles::Role;
use hermes_core::llm::ChatMessage;
use hermes_core::text::clip;

fn roles_text(roles: &[Role]) -> String {
    roles
        .iter()
        .map(|r| format!("- {}: {}\n", r.name, r.description))
        .collect()
}

/// ` (wrote a.md, b.txt)` for a subtask with outputs; empty otherwise.
fn wrote(s: &PlannedSubtask) -> String {
    if s.outputs.is_empty() {
        String::new()
    } else {
        format!(" (wrote {})", s.outputs.join(", "))
    }
}

/// The conversation asking for a plan.
pub fn plan_messages(task: &str, roles: &[Role]) -> Vec<ChatMessage> {
    let system = format!(
        "You are the planner of a team of agents. Split the user's task into subtasks, each done by one executor role.\n\n\
         Roles:\n{}\n\
         Reply with exactly one JSON object and nothing else:\n{PLAN_SHAPE}\n\n\
         Rules:\n\
         - Use only the roles listed above; choose each by its description.\n\
         - Each goal must be self-contained: the executor sees only its goal and the results of the subtasks it depends on.\n\
         - Keep in each goal every detail the task gives for that part, in the task's own words: file names, formats, what to count or compute, what the output must include.\n\
         - outputs lists the workspace files the subtask must write (their names, as the task gives them); [] when it only reports a value in its result. Only a role that can write files may have outputs.\n\
         - depends_on lists the ids whose results or files a subtask needs; subtasks without dependencies run in parallel.\n\
         - A simple task is one subtask. Do not split work that one executor can do.",
        roles_text(roles)
    );
    vec![
        ChatMessage::system(system),
        ChatMessage::user(format!("Task: {task}")),
    ]
}

/// The follow-up after an invalid plan: the errors, and the shape again.
pub fn plan_errors_message(errors: &[String]) -> ChatMessage {
    ChatMessage::user(format!(
        "That plan is invalid:\n- {}\nReply with a corrected plan as one JSON object: {PLAN_SHAPE}",
        errors.join("\n- ")
    ))
}

/// What the replan prompt needs to know about the task so far.
pub struct ReplanContext<'a> {
    /// The whole task.
    pub task: &'a str,
    /// Completed subtasks and their results.
    pub completed: Vec<(&'a PlannedSubtask, &'a str)>,
    /// The subtask that failed.
    pub failed: &'a PlannedSubtask,
    /// Its progress report.
    pub progress: &'a str,
    /// The pending subtasks that depend on it, to be replaced as well.
    pub dependents: Vec<&'a PlannedSubtask>,
}

/// The conversation asking for a revised plan after a failure.
pub fn replan_messages(ctx: &ReplanContext<'_>, roles: &[Role]) -> Vec<ChatMessage> {
    let mut user = format!(
        "Task: {}\n\nCompleted subtasks (ids you may depend on):\n",
        ctx.task
    );
    if ctx.completed.is_empty() {
        user.push_str("- none\n");
    }
    for (s, result) in &ctx.completed {
        let _ = writeln!(
            user,
            "- {} ({}): {}{} → result: {}",
            s.id,
            s.role,
            s.goal,
            wrote(s),
            clip(result, 600)
        );
    }
    let _ = write!(
        user,
        "\nFailed subtask {} ({}): {}\nWhy it failed: {}\nIts progress report:\n{}\n",
        ctx.failed.id,
        ctx.failed.role,
        ctx.failed.goal,
        ctx.progress.lines().next().unwrap_or("unknown"),
        clip(ctx.progress, 1500)
    );
    if !ctx.dependents.is_empty() {
        user.push_str("\nPending subtasks that depended on it (they are replaced too):\n");
        for s in &ctx.dependents {
            let _ = writeln!(
                user,
                "- {} ({}): {} (depends on {})",
                s.id,
                s.role,
                s.goal,
                s.depends_on.join(", ")
            );
        }
    }
    user.push_str(
        "\nWrite revised subtasks that replace the failed subtask and the pending ones above. Do not send the failed subtask back \
         unchanged: change what it does or how (another tool, another role, smaller steps, the right file), as its failure shows. \
         Completed work is kept and must not be redone; new subtasks may depend on completed ids and read the files they wrote.",
    );
    let system = format!(
        "You are the planner of a team of agents, revising a plan after a subtask failed.\n\nRoles:\n{}\n\
         Reply with exactly one JSON object and nothing else:\n{PLAN_SHAPE}",
        roles_text(roles)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// The conversation asking for the final answer from the subtask results.
pub fn final_messages(task: &str, results: &[(&PlannedSubtask, &str)]) -> Vec<ChatMessage> {
    let mut user = format!("Task: {task}\n\nResults of the subtasks:\n");
    for (s, result) in results {
        let _ = writeln!(
            user,
            "## {} ({}): {}{}\n{}\n",
            s.id,
            s.role,
            s.goal,
            wrote(s),
            clip(result, 3000)
        );
    }
    user.push_str("Write the final answer to the task from these results. Answer in plain text; keep every relevant fact and add none.");
    vec![
        ChatMessage::system(
            "You write the final answer of a team of agents from their subtask results.",
        ),
        ChatMessage::user(user),
    ]
}

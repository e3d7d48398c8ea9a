//! Repairs a plan can take without a model call, made before it is
//! checked: a refusal costs a re-ask, and a second refusal the whole task,
//! over a mistake whose fix is plain from the plan itself.
//!
//! - An "output" that is no file name (`<list of owners>`, `the total`;
//!   `data_file`, without an extension, given to a role that cannot write)
//!   is what the subtask returns, not a file it writes: it leaves the
//!   outputs and the goal says to return it.
//! - A subtask that must write files, given to a role that cannot write,
//!   goes to the role that can write and shares the most tools with the one
//!   the planner chose (so a reading task stays with a reading role).

use super::subtask::PlannedSubtask;
use crate::roles::Role;

/// Repairs `subtasks` in place; returns one line per change made, for the
/// plan's trace.
pub fn repair_plan(subtasks: &mut [PlannedSubtask], roles: &[Role]) -> Vec<String> {
    let mut repairs = Vec::new();
    for s in subtasks.iter_mut() {
        let role = roles.iter().find(|r| r.name == s.role);
        let writes = role.is_none_or(can_write);
        let (files, values): (Vec<String>, Vec<String>) =
            s.outputs.drain(..).partition(|o| is_file_name(o, writes));
        s.outputs = files;
        for value in values {
            let value = value.trim_matches(['<', '>', ' ']).to_string();
            repairs.push(format!(
                "subtask `{}`: `{value}` is no file name; it is returned in the result",
                s.id
            ));
            if !s.goal.to_lowercase().contains(&value.to_lowercase()) {
                s.goal = format!("{} Return in your result: {value}.", s.goal.trim_end());
            }
        }
        // An unknown role is the check's to report; one that writes needs nothing.
        let Some(role) = role.filter(|_| !writes && !s.outputs.is_empty()) else {
            continue;
        };
        if let Some(writer) = closest_writer(role, roles) {
            repairs.push(format!(
                "subtask `{}` writes {} but role `{}` cannot write files; given to `{}`",
                s.id,
                s.outputs.join(", "),
                s.role,
                writer.name
            ));
            s.role = writer.name.clone();
        }
    }
    repairs
}

/// Whether `output` names a file: no spaces or angle brackets, and an
/// extension on its last part (`report.md`, `out/totals.csv`). A name
/// without one (`REPORT`, `Makefile`, `data_file`) is a file for a role
/// that can write, and a value for one that cannot (`role_writes`).
fn is_file_name(output: &str, role_writes: bool) -> bool {
    let output = output.trim();
    if output.is_empty() || output.contains(|c: char| c.is_whitespace() || "<>{}|*?\"".contains(c))
    {
        return false;
    }
    let last = output.rsplit(['/', '\\']).next().unwrap_or_default();
    role_writes
        || last
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty())
}

/// Whether `role` has a tool that writes workspace files (`write_file`, or
/// `run_code`, whose writes are saved); a role without a tool list has
/// every tool.
pub(super) fn can_write(role: &Role) -> bool {
    role.tools
        .as_ref()
        .is_none_or(|tools| tools.iter().any(|t| t == "write_file" || t == "run_code"))
}

/// The role that can write and shares the most tools with `role` (a role
/// without a tool list shares all); the first listed on a tie.
fn closest_writer<'a>(role: &Role, roles: &'a [Role]) -> Option<&'a Role> {
    let shared = |other: &Role| match (&role.tools, &other.tools) {
        (Some(mine), Some(theirs)) => mine.iter().filter(|t| theirs.contains(t)).count(),
        _ => usize::MAX,
    };
    roles
        .iter()
        .filter(|r| can_write(r))
        .fold(None, |best: Option<&Role>, r| match best {
            Some(b) if shared(b) >= shared(r) => Some(b),
            _ => Some(r),
        })
}

//! The checks a plan must pass before anything runs: not empty, not too
//! big, unique ids, known roles, goals present, outputs that are workspace
//! paths and given to roles that can write, dependencies that exist, and
//! no cycles. A replan's new ids are renamed where they clash.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::repair::can_write;
use super::subtask::PlannedSubtask;
use crate::roles::Role;

/// Most subtasks one plan may have.
pub const MAX_SUBTASKS: usize = 500;

/// Checks `subtasks` as a plan. `settled` are ids outside the plan that
/// may be depended on (completed subtasks, during a replan); `taken` are ids
/// that may not be reused. Returns every problem found.
pub fn validate_plan(
    subtasks: &[PlannedSubtask],
    roles: &[Role],
    settled: &HashSet<String>,
    taken: &HashSet<String>,
) -> Vec<String> {
    let mut errors = Vec::new();
    if subtasks.is_empty() {
        errors.push("the plan is empty; give at least one subtask".to_string());
        return errors;
    }
    if subtasks.len() > MAX_SUBTASKS {
        errors.push(format!(
            "the plan has {} subtasks; at most {MAX_SUBTASKS} are allowed",
            subtasks.len()
        ));
    }
    let role_names: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
    let mut seen = HashSet::new();
    for s in subtasks {
        if !seen.insert(s.id.as_str()) {
            errors.push(format!("duplicate subtask id `{}`", s.id));
        }
        if taken.contains(&s.id) {
            errors.push(format!(
                "subtask id `{}` is already used by an earlier subtask; pick a new id",
                s.id
            ));
        }
        if !role_names.contains(&s.role.as_str()) {
            errors.push(format!(
                "subtask `{}` has unknown role `{}`; roles: {}",
                s.id,
                s.role,
                role_names.join(", ")
            ));
        }
        if s.goal.is_empty() {
            errors.push(format!("subtask `{}` has no goal", s.id));
        }
        for output in &s.outputs {
            if output.starts_with('/') || output.split(['/', '\\']).any(|part| part == "..") {
                errors.push(format!(
                    "subtask `{}` output `{output}` is outside the workspace; name a file inside it (e.g. report.md)",
                    s.id
                ));
            }
        }
        let role = roles.iter().find(|r| r.name == s.role);
        if !s.outputs.is_empty() && role.is_some_and(|r| !can_write(r)) {
            let writers: Vec<&str> = roles
                .iter()
                .filter(|r| can_write(r))
                .map(|r| r.name.as_str())
                .collect();
            errors.push(format!(
                "subtask `{}` must write {} but role `{}` cannot write files; give that work to {}",
                s.id,
                s.outputs.join(", "),
                s.role,
                if writers.is_empty() {
                    "no role (none can write): leave outputs empty".to_string()
                } else {
                    format!("a role that can: {}", writers.join(", "))
                }
            ));
        }
    }
    for s in subtasks {
        for dep in &s.depends_on {
            if dep == &s.id {
                errors.push(format!("subtask `{}` depends on itself", s.id));
            } else if !seen.contains(dep.as_str()) && !settled.contains(dep) {
                errors.push(format!(
                    "subtask `{}` depends on `{dep}`, which does not exist",
                    s.id
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(subtasks) {
        errors.push(format!("dependency cycle: {}", cycle.join(" → ")));
    }
    errors
}

/// A dependency cycle among `subtasks`, if any (ids in order, first repeated).
fn find_cycle(subtasks: &[PlannedSubtask]) -> Option<Vec<String>> {
    let deps: HashMap<&str, Vec<&str>> = subtasks
        .iter()
        .map(|s| {
            (
                s.id.as_str(),
                s.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // Iterative DFS with colours: 0 unvisited, 1 on the stack, 2 done.
    let mut colour: HashMap<&str, u8> = HashMap::new();
    for start in subtasks.iter().map(|s| s.id.as_str()) {
        if colour.get(start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        colour.insert(start, 1);
        while let Some((node, next)) = stack.pop() {
            let children = deps.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if next < children.len() {
                stack.push((node, next + 1));
                let child = children[next];
                if !deps.contains_key(child) {
                    continue;
                }
                match colour.get(child).copied().unwrap_or(0) {
                    0 => {
                        colour.insert(child, 1);
                        stack.push((child, 0));
                    }
                    1 => {
                        let mut cycle: Vec<String> = stack
                            .iter()
                            .map(|(n, _)| n.to_string())
                            .skip_while(|n| n != child)
                            .collect();
                        cycle.push(child.to_string());
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                colour.insert(node, 2);
            }
        }
    }
    None
}

/// Gives new subtasks ids that do not clash with `taken`, rewriting
/// dependencies among them to match (a replan often reuses `s2` for the
/// subtask that replaces `s2`).
pub fn rename_clashes(subtasks: &mut [PlannedSubtask], taken: &HashSet<String>) {
    let mut renames = BTreeMap::new();
    let mut used: HashSet<String> = taken.clone();
    used.extend(subtasks.iter().map(|s| s.id.clone()));
    for s in subtasks.iter_mut() {
        if taken.contains(&s.id) {
            let mut n = 1;
            while used.contains(&format!("{}.r{n}", s.id)) {
                n += 1;
            }
            let new = format!("{}.r{n}", s.id);
            used.insert(new.clone());
            renames.insert(s.id.clone(), new.clone());
            s.id = new;
        }
    }
    for s in subtasks.iter_mut() {
        for dep in &mut s.depends_on {
            if let Some(new) = renames.get(dep) {
                *dep = new.clone();
            }
        }
    }
}

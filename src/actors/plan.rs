//! Plans: what the planner asks the model for, how the answer is read, and
//! the checks a plan must pass before anything runs.
//!
//! A plan is `{"subtasks": [{"id", "role", "goal", "depends_on": [...]}]}`,
//! read with the same lenient machinery as decisions. It is checked for an
//! empty plan, duplicate ids, unknown roles, missing dependencies and
//! cycles; an invalid plan goes back to the model once with the errors.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::roles::Role;
use crate::decision::{find_all_json, find_json};
use crate::llm::ChatMessage;
use crate::text::clip;

/// Most subtasks one plan may have.
pub const MAX_SUBTASKS: usize = 500;

/// One unit of work in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedSubtask {
    /// Unique id within the task (`s1`, `s2`, ...).
    pub id: String,
    /// Name of the executor role that runs it.
    pub role: String,
    /// What the executor must achieve, self-contained.
    pub goal: String,
    /// Ids whose results this subtask needs.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// The plan JSON shape shown to the model.
pub const PLAN_SHAPE: &str = r#"{"subtasks": [{"id": "s1", "role": "<role name>", "goal": "<self-contained goal>", "depends_on": []}, {"id": "s2", "role": "<role name>", "goal": "...", "depends_on": ["s1"]}]}"#;

/// Reads subtasks from the model's reply, leniently: `subtasks`/`plan`/
/// `steps` keys, numeric ids, a single dependency as a string, `task` or
/// `description` for the goal, `agent` for the role.
pub fn parse_plan(raw: &str) -> Result<Vec<PlannedSubtask>, String> {
    let list_key = |v: &Value| {
        ["subtasks", "plan", "steps", "tasks"]
            .into_iter()
            .find(|k| v.get(*k).is_some_and(Value::is_array))
    };
    let items: Vec<Value> = match find_json(raw, |v| list_key(v).is_some()) {
        Some(plan) => plan[list_key(&plan).unwrap_or("subtasks")]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        // A bare list of subtask objects.
        None => find_all_json(raw, |v| v.get("goal").is_some() || v.get("task").is_some()),
    };
    if items.is_empty() {
        return Err(format!("no plan found in the reply; expected {PLAN_SHAPE}"));
    }
    Ok(items
        .iter()
        .enumerate()
        .map(|(i, item)| subtask_from(item, i))
        .collect())
}

fn subtask_from(item: &Value, index: usize) -> PlannedSubtask {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| match item.get(*k) {
                Some(Value::String(s)) => Some(s.trim().to_string()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let id = Some(text(&["id", "name"]))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("s{}", index + 1));
    let depends_on = match item
        .get("depends_on")
        .or_else(|| item.get("dependencies"))
        .or_else(|| item.get("deps"))
    {
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(|d| match d {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        Some(Value::Number(n)) => vec![n.to_string()],
        _ => Vec::new(),
    };
    PlannedSubtask {
        id,
        role: text(&["role", "agent", "executor"]),
        goal: text(&["goal", "task", "description"]),
        depends_on,
    }
}

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

fn roles_text(roles: &[Role]) -> String {
    roles
        .iter()
        .map(|r| format!("- {}: {}\n", r.name, r.description))
        .collect()
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
         - depends_on lists the ids whose results a subtask needs; subtasks without dependencies run in parallel.\n\
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
            "- {} ({}): {} → result: {}",
            s.id,
            s.role,
            s.goal,
            clip(result, 600)
        );
    }
    let _ = write!(
        user,
        "\nFailed subtask {} ({}): {}\nIts progress report:\n{}\n",
        ctx.failed.id,
        ctx.failed.role,
        ctx.failed.goal,
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
        "\nWrite revised subtasks that replace the failed subtask and the pending ones above, taking a different approach \
         where the failure shows one is needed. Completed work is kept and must not be redone; new subtasks may depend on completed ids.",
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
            "## {} ({}): {}\n{}\n",
            s.id,
            s.role,
            s.goal,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::roles::parse_role;

    fn roles() -> Vec<Role> {
        ["researcher", "writer"]
            .iter()
            .map(|n| {
                parse_role(&format!(
                    "name = \"{n}\"\ndescription = \"d\"\nsystem_prompt = \"p\"\n"
                ))
                .unwrap()
            })
            .collect()
    }

    fn sub(id: &str, role: &str, deps: &[&str]) -> PlannedSubtask {
        PlannedSubtask {
            id: id.into(),
            role: role.into(),
            goal: format!("do {id}"),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    fn check(subtasks: &[PlannedSubtask]) -> Vec<String> {
        validate_plan(subtasks, &roles(), &HashSet::new(), &HashSet::new())
    }

    #[test]
    fn parses_plan_leniently() {
        let raw = "Here is the plan:\n```json\n{'subtasks': [{'id': 1, 'role': 'researcher', 'task': 'find'}, {'id': 2, 'agent': 'writer', 'goal': 'write', 'depends_on': '1'}]}\n```";
        let plan = parse_plan(raw).unwrap();
        assert_eq!(plan[0].id, "1");
        assert_eq!(plan[0].goal, "find");
        assert_eq!(plan[1].role, "writer");
        assert_eq!(plan[1].depends_on, vec!["1"]);
        assert!(parse_plan("no plan here").is_err());
    }

    #[test]
    fn valid_plan_has_no_errors() {
        assert!(check(&[sub("s1", "researcher", &[]), sub("s2", "writer", &["s1"])]).is_empty());
    }

    #[test]
    fn each_invalid_plan_kind_is_reported() {
        assert!(check(&[]).iter().any(|e| e.contains("empty")));
        assert!(
            check(&[sub("s1", "researcher", &[]), sub("s1", "writer", &[])])
                .iter()
                .any(|e| e.contains("duplicate"))
        );
        assert!(check(&[sub("s1", "poet", &[])])
            .iter()
            .any(|e| e.contains("unknown role `poet`; roles: researcher, writer")));
        assert!(check(&[sub("s1", "writer", &["s9"])])
            .iter()
            .any(|e| e.contains("`s9`, which does not exist")));
        let cycle = check(&[
            sub("a", "writer", &["c"]),
            sub("b", "writer", &["a"]),
            sub("c", "writer", &["b"]),
        ]);
        assert!(
            cycle.iter().any(|e| e.contains("dependency cycle")),
            "{cycle:?}"
        );
    }

    #[test]
    fn replans_may_depend_on_settled_ids_and_clashing_ids_are_renamed() {
        let settled: HashSet<String> = ["s1".to_string()].into();
        let taken: HashSet<String> = ["s1".to_string(), "s2".to_string()].into();
        let mut new = vec![
            sub("s2", "researcher", &["s1"]),
            sub("s3", "writer", &["s2"]),
        ];
        rename_clashes(&mut new, &taken);
        assert_eq!(new[0].id, "s2.r1");
        assert_eq!(new[1].depends_on, vec!["s2.r1"]);
        assert!(validate_plan(&new, &roles(), &settled, &taken).is_empty());
    }

    #[test]
    fn long_chains_do_not_overflow_cycle_detection() {
        let chain: Vec<PlannedSubtask> = (0..MAX_SUBTASKS)
            .map(|i| {
                if i == 0 {
                    sub("t0", "writer", &[])
                } else {
                    sub(&format!("t{i}"), "writer", &[&format!("t{}", i - 1)])
                }
            })
            .collect();
        assert!(check(&chain).is_empty());
    }
}

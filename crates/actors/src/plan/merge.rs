//! Chains one role can do alone, joined into one subtask before they run
//! (the `chain_merge` steer, `hermes_core::agent::steer::chain_merge`).
//!
//! Subtask `b` joins subtask `a` when `b` depends on `a` alone, no other
//! subtask depends on `a` (so nothing could run beside the chain), and one
//! of the two roles has every tool the other has (a role without a tool
//! list has them all). The roles must also agree on what a split would
//! keep apart: the same model, and neither has budgets or approval rules
//! unless both subtasks are of one role. The joined subtask keeps `a`'s
//! id, takes the role that covers both (`a`'s when each covers the other),
//! both goals in order, both outputs, and `a`'s dependencies; what
//! depended on `b` depends on it. Repeated until no pair joins, so a chain
//! of three is one subtask.

use super::ask::{Asked, PlanError};
use super::subtask::PlannedSubtask;
use crate::roles::Role;
use hermes_core::agent::steer::{chain_merge, Steers};

/// Joins the chains of a plan the model gave (`asked`), when `steers` has
/// the `chain_merge` steer on; each join is traced.
pub fn merge_chains_if_on(
    steers: &Steers,
    asked: &mut Asked<Vec<PlannedSubtask>, PlanError>,
    roles: &[Role],
) {
    if !steers.is_on(chain_merge::NAME) {
        return;
    }
    if let Ok(subtasks) = &mut asked.answer {
        for line in merge_chains(subtasks, roles) {
            tracing::info!("plan merged: {line}");
        }
    }
}

/// Joins every chain of `subtasks` that one role of `roles` can do alone
/// (see the module); returns one line per join, for the plan's trace.
pub fn merge_chains(subtasks: &mut Vec<PlannedSubtask>, roles: &[Role]) -> Vec<String> {
    let mut merged = Vec::new();
    while let Some((a, b, role)) = next_pair(subtasks, roles) {
        let later = subtasks.remove(b);
        let first = &mut subtasks[a];
        merged.push(format!(
            "subtasks `{}` ({}) and `{}` ({}) are one chain that `{role}` can do alone: merged into `{}`",
            first.id, first.role, later.id, later.role, first.id
        ));
        first.goal = format!("{}\nThen: {}", first.goal.trim_end(), later.goal.trim());
        for output in later.outputs {
            if !first.outputs.contains(&output) {
                first.outputs.push(output);
            }
        }
        first.role = role;
        let id = first.id.clone();
        for s in subtasks.iter_mut() {
            if s.depends_on.contains(&later.id) {
                s.depends_on.retain(|d| *d != later.id);
                if !s.depends_on.contains(&id) {
                    s.depends_on.push(id.clone());
                }
            }
        }
    }
    merged
}

/// The first pair (index of `a`, index of `b`, the role that does both)
/// that joins.
fn next_pair(subtasks: &[PlannedSubtask], roles: &[Role]) -> Option<(usize, usize, String)> {
    let role = |name: &str| roles.iter().find(|r| r.name == name);
    subtasks.iter().enumerate().find_map(|(b, later)| {
        let [only] = later.depends_on.as_slice() else {
            return None;
        };
        let a = subtasks.iter().position(|s| &s.id == only)?;
        let dependents = subtasks
            .iter()
            .filter(|s| s.depends_on.contains(only))
            .count();
        if dependents != 1 {
            return None;
        }
        let (first, second) = (role(&subtasks[a].role)?, role(&later.role)?);
        let doer = if covers(first, second) {
            first
        } else if covers(second, first) {
            second
        } else {
            return None;
        };
        agree(first, second).then(|| (a, b, doer.name.clone()))
    })
}

/// Whether `role` has every tool `other` has.
fn covers(role: &Role, other: &Role) -> bool {
    match (&role.tools, &other.tools) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(mine), Some(theirs)) => theirs.iter().all(|t| mine.contains(t)),
    }
}

/// Whether one executor of either role would run as the two would: the
/// same model, and no budgets or approval rules a join could move (unless
/// both are the one role).
fn agree(first: &Role, second: &Role) -> bool {
    if first.name == second.name {
        return true;
    }
    let plain = |r: &Role| {
        r.approve.is_empty()
            && !r.approve_after_untrusted
            && r.token_budget.is_none()
            && r.call_budget.is_none()
    };
    first.model == second.model && plain(first) && plain(second)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, tools: Option<&[&str]>) -> Role {
        Role {
            name: name.into(),
            description: format!("the {name}"),
            system_prompt: String::new(),
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            model: None,
            limits: Default::default(),
            steer: Default::default(),
            approve: Vec::new(),
            approve_after_untrusted: false,
            token_budget: None,
            call_budget: None,
        }
    }

    fn roles() -> Vec<Role> {
        vec![
            role(
                "analyst",
                Some(&["list_dir", "read_file", "write_file", "run_code"]),
            ),
            role("writer", Some(&["list_dir", "read_file", "write_file"])),
            role("researcher", Some(&["list_dir", "read_file", "http_fetch"])),
        ]
    }

    fn subtask(id: &str, role: &str, outputs: &[&str], depends_on: &[&str]) -> PlannedSubtask {
        PlannedSubtask {
            id: id.into(),
            role: role.into(),
            goal: format!("goal of {id}."),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            depends_on: depends_on.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_reader_and_its_writer_become_one_subtask_of_the_role_that_has_both_tools() {
        let mut plan = vec![
            subtask("s1", "analyst", &[], &[]),
            subtask("s2", "writer", &["owners.md"], &["s1"]),
        ];
        let lines = merge_chains(&mut plan, &roles());
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].id, "s1");
        assert_eq!(plan[0].role, "analyst");
        assert_eq!(plan[0].goal, "goal of s1.\nThen: goal of s2.");
        assert_eq!(plan[0].outputs, ["owners.md"]);
        assert!(plan[0].depends_on.is_empty());
    }

    #[test]
    fn the_role_that_covers_both_does_the_chain_whichever_comes_first() {
        let mut plan = vec![
            subtask("s1", "writer", &["draft.md"], &[]),
            subtask("s2", "analyst", &["totals.csv"], &["s1"]),
            subtask("s3", "writer", &["final.md"], &["s2"]),
        ];
        merge_chains(&mut plan, &roles());
        assert_eq!(plan.len(), 1, "a chain of three is one subtask");
        assert_eq!(plan[0].role, "analyst");
        assert_eq!(plan[0].outputs, ["draft.md", "totals.csv", "final.md"]);
        assert_eq!(
            plan[0].goal,
            "goal of s1.\nThen: goal of s2.\nThen: goal of s3."
        );
    }

    #[test]
    fn parallel_work_roles_that_lack_each_others_tools_and_fan_ins_stay_apart() {
        // Two readers feeding one writer: the writer depends on two.
        let mut fan_in = vec![
            subtask("s1", "analyst", &[], &[]),
            subtask("s2", "analyst", &[], &[]),
            subtask("s3", "writer", &["report.md"], &["s1", "s2"]),
        ];
        assert!(merge_chains(&mut fan_in, &roles()).is_empty());
        assert_eq!(fan_in.len(), 3);
        // One reader feeding two writers: they could run side by side.
        let mut fan_out = vec![
            subtask("s1", "analyst", &[], &[]),
            subtask("s2", "writer", &["a.md"], &["s1"]),
            subtask("s3", "writer", &["b.md"], &["s1"]),
        ];
        assert!(merge_chains(&mut fan_out, &roles()).is_empty());
        // A researcher's web tools and a writer's writes: no role has both.
        let mut apart = vec![
            subtask("s1", "researcher", &[], &[]),
            subtask("s2", "writer", &["notes.md"], &["s1"]),
        ];
        assert!(merge_chains(&mut apart, &roles()).is_empty());
        // An unknown role is the check's to report, not joined.
        let mut unknown = vec![
            subtask("s1", "ghost", &[], &[]),
            subtask("s2", "writer", &["x.md"], &["s1"]),
        ];
        assert!(merge_chains(&mut unknown, &roles()).is_empty());
    }

    #[test]
    fn dependents_of_the_joined_subtask_follow_it_and_the_rest_of_the_plan_stays() {
        let mut plan = vec![
            subtask("s1", "analyst", &[], &[]),
            subtask("s2", "writer", &["a.md"], &["s1"]),
            subtask("s3", "analyst", &[], &[]),
            subtask("s4", "writer", &["both.md"], &["s2", "s3"]),
        ];
        merge_chains(&mut plan, &roles());
        let ids: Vec<&str> = plan.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["s1", "s3", "s4"]);
        assert_eq!(plan[2].depends_on, ["s3", "s1"]);
    }

    #[test]
    fn other_models_budgets_or_approval_rules_keep_a_chain_apart() {
        let mut with_model = roles();
        with_model[1].model = Some("big".into());
        let mut budgeted = roles();
        budgeted[0].call_budget = Some(5);
        let mut approving = roles();
        approving[1].approve_after_untrusted = true;
        for roles in [with_model, budgeted, approving] {
            let mut plan = vec![
                subtask("s1", "analyst", &[], &[]),
                subtask("s2", "writer", &["owners.md"], &["s1"]),
            ];
            assert!(merge_chains(&mut plan, &roles).is_empty());
            assert_eq!(plan.len(), 2);
        }
        // One role twice: its own rules hold either way.
        let mut same = roles();
        same[0].call_budget = Some(5);
        let mut plan = vec![
            subtask("s1", "analyst", &[], &[]),
            subtask("s2", "analyst", &["out.csv"], &["s1"]),
        ];
        assert_eq!(merge_chains(&mut plan, &same).len(), 1);
    }
}

//! Tests of plan parsing and validation.
use std::collections::HashSet;

use super::*;
use crate::roles::{parse_role, Role};

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

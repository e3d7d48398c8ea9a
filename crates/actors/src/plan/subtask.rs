//! The plan's shape and how it is read from the model's reply.
//!
//! A plan is `{"subtasks": [{"id", "role", "goal", "depends_on": [...]}]}`,
//! read with the same lenient machinery as decisions: `subtasks`/`plan`/
//! `steps`/`tasks` keys, numeric ids, a single dependency as a string,
//! `task` or `description` for the goal, `agent` for the role, or a bare
//! list of subtask objects.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use hermes_core::decision::json_values;

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

/// The model's reply held no plan.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no plan found in the reply; expected {PLAN_SHAPE}")]
pub struct NoPlanFound;

/// Reads subtasks from the model's reply, leniently, from one pass of the
/// lenient JSON reader: the first object with a subtask list, else every
/// object that looks like a subtask (a bare list).
pub fn parse_plan(raw: &str) -> Result<Vec<PlannedSubtask>, NoPlanFound> {
    let list_key = |v: &Value| {
        ["subtasks", "plan", "steps", "tasks"]
            .into_iter()
            .find(|k| v.get(*k).is_some_and(Value::is_array))
    };
    let values = json_values(raw);
    let items: Vec<Value> = match values.iter().find_map(|v| Some((v, list_key(v)?))) {
        Some((plan, key)) => plan[key].as_array().cloned().unwrap_or_default(),
        None => values
            .iter()
            .flat_map(|v| match v {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            })
            .filter(|v| v.get("goal").is_some() || v.get("task").is_some())
            .collect(),
    };
    if items.is_empty() {
        return Err(NoPlanFound);
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

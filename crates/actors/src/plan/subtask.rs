//! The plan's shape and how it is read from the model's reply.
//!
//! A plan is `{"subtasks": [{"id", "role", "goal", "outputs": [...],
//! "depends_on": [...]}]}`, read with the same lenient machinery as
//! decisions: `subtasks`/`plan`/`steps`/`tasks` keys, numeric ids, a single
//! dependency or output as a string, `task` or `description` for the goal,
//! `agent` for the role, `files`/`writes` for the outputs, or a bare list
//! of subtask objects.

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
    /// The workspace files it must write (empty: it returns a value in its
    /// result). The executor is held to them, and the subtasks that depend
    /// on it are told where to read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// Ids whose results this subtask needs.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// The plan JSON shape shown to the model.
pub const PLAN_SHAPE: &str = r#"{"subtasks": [{"id": "s1", "role": "<role name>", "goal": "<self-contained goal>", "outputs": [], "depends_on": []}, {"id": "s2", "role": "<role name>", "goal": "...", "outputs": ["<file it writes>"], "depends_on": ["s1"]}]}"#;

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
    let list = |keys: &[&str]| match keys.iter().find_map(|k| item.get(*k)) {
        Some(Value::Array(values)) => values
            .iter()
            .filter_map(|d| match d {
                Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        Some(Value::Number(n)) => vec![n.to_string()],
        _ => Vec::new(),
    };
    let mut outputs: Vec<String> = Vec::new();
    for name in list(&["outputs", "output", "files", "writes", "produces"]) {
        let name = name.trim_start_matches("./").to_string();
        if !outputs.contains(&name) {
            outputs.push(name);
        }
    }
    PlannedSubtask {
        id,
        role: text(&["role", "agent", "executor"]),
        goal: text(&["goal", "task", "description"]),
        outputs,
        depends_on: list(&["depends_on", "dependencies", "deps"]),
    }
}

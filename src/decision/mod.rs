//! What the model decided, recovered from whatever text it produced.
//!
//! The model is asked for `{"thought": ..., "action": {"name": ..., "args": {...}}}`
//! and often answers with something near it: prose around the JSON, fences,
//! `<think>` blocks, single quotes, Python literals, a cut-off tail, another
//! framework's shape. [`parse_decision`] recovers a [`Decision`] in four steps:
//!
//! 1. `extract`: strip `<think>` blocks and a byte-order mark, then list the
//!    candidate JSON snippets in order (`<tool_call>` tags, fences, balanced
//!    objects, a truncated tail);
//! 2. `json`: parse each strictly, then after escaping raw control characters
//!    and full-width quotes, then with the `llm_json` repair crate;
//! 3. `shape`: normalise the value's shape (aliases for name and args,
//!    OpenAI `tool_calls`, ReAct `action`/`action_input`, finish aliases);
//! 4. the first candidate that yields a decision wins.
//!
//! Nothing here panics or recurses on the input's nesting without a bound:
//! pathological nesting is refused before any recursive parser sees it.

mod extract;
mod json;
mod shape;

use serde::Serialize;
use serde_json::Value;

/// The action name that ends a run.
pub const FINISH: &str = "finish";

/// One step the model chose: why, and which tool with which arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The model's reasoning, empty when it gave none.
    pub thought: String,
    /// The tool to call (or `finish`).
    pub action: Action,
    /// For a finish: the final answer. `None` for tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// True when the text needed repair or reshaping to be read.
    #[serde(skip)]
    pub repaired: bool,
}

/// A tool call: a name and a JSON object of arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// Tool name (`finish` for the end of the run).
    pub name: String,
    /// Arguments; always a JSON object, empty when the model gave none.
    pub args: Value,
}

impl Decision {
    /// Whether this decision ends the run.
    pub fn is_finish(&self) -> bool {
        self.action.name == FINISH
    }
}

/// Why no decision could be read from the model's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The text was empty (or only a `<think>` block).
    #[error("the reply was empty")]
    Empty,
    /// No JSON object could be found or repaired.
    #[error("no JSON object found in the reply")]
    NoJson,
    /// JSON was found but it names no action.
    #[error("the JSON names no action (expected \"action\": {{\"name\": ..., \"args\": {{...}}}}); found keys: {keys}")]
    NoAction {
        /// The keys that were present, for the error message.
        keys: String,
    },
    /// The JSON nests deeper than any decision needs.
    #[error("the JSON nests {depth} levels deep (limit {limit})")]
    TooDeep {
        /// Nesting found.
        depth: usize,
        /// The limit applied.
        limit: usize,
    },
}

/// The decision shape the model is asked for, shown again after a parse error.
pub const EXPECTED_SHAPE: &str = r#"{"thought": "what the last observation showed and what the next step is", "action": {"name": "<tool name or finish>", "args": {...}}}"#;

/// Reads a decision from raw model output, repairing and reshaping it leniently.
///
/// Returns the first valid decision among the JSON snippets in `raw`.
/// Never panics, whatever the input.
pub fn parse_decision(raw: &str) -> Result<Decision, DecisionError> {
    let text = extract::clean(raw);
    if text.trim().is_empty() {
        return Err(DecisionError::Empty);
    }
    let label_thought = extract::labelled_thought(&text);
    let mut last_error = DecisionError::NoJson;
    for candidate in extract::candidates(&text) {
        let (value, repaired) = match json::parse_value(&candidate) {
            Ok(parsed) => parsed,
            Err(e) => {
                last_error = prefer(last_error, e);
                continue;
            }
        };
        match shape::normalize(value, label_thought.as_deref()) {
            Ok(mut decision) => {
                decision.repaired |= repaired || candidate.trim() != text.trim();
                return Ok(decision);
            }
            Err(e) => last_error = prefer(last_error, e),
        }
    }
    extract::react_text(&text).ok_or(last_error)
}

/// The first JSON value in `raw`, cleaned and repaired exactly as decisions
/// are, that `accept` takes. Used for other structured answers (plans).
pub fn find_json(raw: &str, accept: impl Fn(&Value) -> bool) -> Option<Value> {
    let text = extract::clean(raw);
    extract::candidates(&text)
        .iter()
        .filter_map(|candidate| json::parse_value(candidate).ok())
        .map(|(value, _)| value)
        .find(|value| accept(value))
}

/// Every JSON object in `raw` that `accept` takes, in order.
pub fn find_all_json(raw: &str, accept: impl Fn(&Value) -> bool) -> Vec<Value> {
    let text = extract::clean(raw);
    extract::candidates(&text)
        .iter()
        .filter_map(|candidate| json::parse_value(candidate).ok())
        .map(|(value, _)| value)
        .filter(|value| accept(value))
        .collect()
}

/// Keeps the more informative of two errors: a found-but-wrong JSON beats
/// "no JSON at all".
fn prefer(old: DecisionError, new: DecisionError) -> DecisionError {
    match (&old, &new) {
        (DecisionError::NoAction { .. }, _) => old,
        (DecisionError::TooDeep { .. }, DecisionError::NoJson) => old,
        _ => new,
    }
}

#[cfg(test)]
mod tests;

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
//!    and full-width quotes and keeping stray backslashes literal
//!    (`C:\Users`), then after escaping double quotes left unescaped inside
//!    strings (`quotes`), then with the `llm_json` repair crate;
//! 3. `shape`: normalise the value's shape (aliases for name and args,
//!    OpenAI `tool_calls`, ReAct `action`/`action_input`, finish aliases, a
//!    name written as a call expression, read by `call`);
//! 4. the first candidate that yields a decision wins.
//!
//! A ReAct `Action: name(k=v)` line is read as that call before any JSON.
//! Recovery never guesses: a call with positional arguments, a cut-off
//! call, or quotes that cannot be told apart is an error that says so,
//! never a decision with arguments the model did not mean.
//!
//! Nothing here panics or recurses on the input's nesting without a bound:
//! pathological nesting is refused before any recursive parser sees it.

mod call;
mod extract;
mod json;
mod quotes;
mod shape;

use serde::Serialize;
use serde_json::Value;

/// Deepest nesting accepted. A decision needs about five levels; the repair
/// crate recurses per level, so anything far deeper is refused up front.
const MAX_DEPTH: usize = 64;

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
    /// The model stopped before the reply was complete (`finish_reason`
    /// `length`: the token budget ran out, or the engine cut an answer
    /// that kept repeating itself); whatever a repair would make of it
    /// ends in the middle of a value.
    #[error("the reply was cut off before it was complete: it ran too long or kept repeating the same text; keep every value short")]
    CutOff,
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
    /// A JSON string holds double quotes that are not escaped, and no
    /// reading settles which of them end strings.
    #[error("a JSON string holds unescaped double quotes that cannot be told apart from the quotes that end strings; escape quotes inside strings as \\\"")]
    UnescapedQuotes,
    /// The action is written as a call expression that cannot be read
    /// (cut off, unbalanced, or a value that is not a literal).
    #[error("the action `{call}` cannot be read as a tool call: {reason}; give the tool name alone in \"name\" and the arguments as a JSON object in \"args\"")]
    BadCall {
        /// The call as written (shortened).
        call: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The action is a call expression with positional arguments, which
    /// cannot be mapped to parameter names without guessing.
    #[error("the action `{call}` passes arguments by position; name every argument in JSON: {{\"action\": {{\"name\": \"{name}\", \"args\": {{\"<parameter>\": <value>}}}}}}")]
    PositionalArgs {
        /// The call as written (shortened).
        call: String,
        /// The tool it names.
        name: String,
    },
    /// The tool name holds parentheses or whitespace, so it is not a name.
    #[error("the tool name `{name}` is not a tool name (it holds parentheses or whitespace); give the tool name alone in \"name\" and the arguments as a JSON object in \"args\"")]
    BadToolName {
        /// The name as given (shortened).
        name: String,
    },
}

/// The decision shape the model is asked for, shown again after a parse error.
/// Its thought hint asks for "what the last observation showed", and before
/// round 1 small models invent one (31 of 48 first rounds of the 1.5B model
/// on `evals/files.toml`). Rewording it to "what the observations so far
/// show (there are none before round 1)" measured worse (EVALS.md section
/// 5: the model then fetched workspace files from example.com or declared
/// a file already there), and so did asking for "the conditions the goal
/// sets" first (section 47: dev 29 -> 22 of 45; the restated goal took the
/// place of reading), so the wording stays until a change measures better.
pub const EXPECTED_SHAPE: &str = r#"{"thought": "what the last observation showed and what the next step is", "action": {"name": "<tool name or finish>", "args": {...}}}"#;

/// Reads a decision from raw model output, repairing and reshaping it leniently.
///
/// Returns the first valid decision among the JSON snippets in `raw`.
/// Never panics, whatever the input.
pub fn parse_decision(raw: &str) -> Result<Decision, DecisionError> {
    if let Some(decision) = strict(raw) {
        return Ok(decision);
    }
    let text = extract::clean(raw);
    if text.trim().is_empty() {
        return Err(DecisionError::Empty);
    }
    if let Some(decision) = extract::react_call(&text) {
        return decision;
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
    match extract::react_text(&text) {
        Some(decision) => shape::check_name(&decision.action.name).map(|()| decision),
        None => Err(last_error),
    }
}

/// The common reply read the short way: exactly one JSON object (blank
/// space around it allowed) with a string `thought` and an `action` object
/// whose `name` is a string and whose `args`, if any, is an object, as a
/// constrained decoder writes it. The same decision the lenient path makes
/// of such a text (it tries plain JSON first too), without looking for
/// `<think>` blocks, ReAct labels or snippets to repair; `None` (take the
/// lenient path) for anything else, including a shape error, so that
/// errors read the same.
fn strict(raw: &str) -> Option<Decision> {
    let text = raw.trim();
    if !text.starts_with('{') || !text.ends_with('}') || json::nesting_depth(text) > MAX_DEPTH {
        return None;
    }
    if let Some(decision) = canonical(text) {
        return Some(decision);
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.as_object()?;
    let action = object.get("action")?.as_object()?;
    let shaped = object.get("thought")?.is_string()
        && action.get("name")?.is_string()
        && action.get("args").is_none_or(Value::is_object);
    if !shaped {
        return None;
    }
    shape::normalize(value, None).ok()
}

/// The canonical shape, read straight into its fields: exactly the keys
/// `thought` (a string) and `action`, whose keys are exactly `name` (a
/// tool's plain name: letters, digits, `_`; no finish alias) and, if
/// given, `args` (an object). What [`shape::normalize`] makes of such an
/// object, without building it as a `Value` and looking its keys up among
/// the other shapes' (the loop's most common reply; a unit test holds the
/// two paths to the same decision). `None` for anything else.
fn canonical(text: &str) -> Option<Decision> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Canonical {
        thought: String,
        action: CanonicalAction,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CanonicalAction {
        name: String,
        #[serde(default)]
        args: serde_json::Map<String, Value>,
    }
    let read: Canonical = serde_json::from_str(text).ok()?;
    let name = read.action.name;
    let plain = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !shape::is_finish_alias(&name);
    plain.then(|| Decision {
        thought: read.thought,
        action: Action {
            name,
            args: Value::Object(read.action.args),
        },
        result: None,
        repaired: false,
    })
}

/// Every JSON value (object or array) in `raw`, in the order a reader meets
/// them, found and repaired exactly as decisions are: `<think>` blocks and a
/// byte-order mark removed, each candidate snippet (tags, fences, balanced
/// objects, a cut-off tail) extracted and repaired once. Snippets that
/// cannot be read, or that read as a bare string or number, are skipped.
///
/// Call it once and filter the result when several filters apply to the
/// same reply; [`find_json`] and [`find_all_json`] are filters over it.
pub fn json_values(raw: &str) -> Vec<Value> {
    let text = extract::clean(raw);
    extract::candidates(&text)
        .iter()
        .filter_map(|candidate| json::parse_value(candidate).ok())
        .map(|(value, _)| value)
        .filter(|value| value.is_object() || value.is_array())
        .collect()
}

/// The first of [`json_values`] that `accept` takes. Used for other
/// structured answers (plans).
pub fn find_json(raw: &str, accept: impl Fn(&Value) -> bool) -> Option<Value> {
    json_values(raw).into_iter().find(|value| accept(value))
}

/// Every one of [`json_values`] that `accept` takes, in order.
pub fn find_all_json(raw: &str, accept: impl Fn(&Value) -> bool) -> Vec<Value> {
    json_values(raw)
        .into_iter()
        .filter(|value| accept(value))
        .collect()
}

/// Keeps the more informative of two errors, the first of equals: a
/// misread call or name beats found-but-wrong JSON, which beats JSON too
/// deep to read, which beats "no JSON at all".
fn prefer(old: DecisionError, new: DecisionError) -> DecisionError {
    fn rank(error: &DecisionError) -> u8 {
        match error {
            DecisionError::Empty | DecisionError::NoJson | DecisionError::CutOff => 0,
            DecisionError::TooDeep { .. } => 1,
            DecisionError::NoAction { .. } | DecisionError::UnescapedQuotes => 2,
            DecisionError::BadCall { .. }
            | DecisionError::PositionalArgs { .. }
            | DecisionError::BadToolName { .. } => 3,
        }
    }
    if rank(&new) > rank(&old) {
        new
    } else {
        old
    }
}

#[cfg(test)]
mod tests;

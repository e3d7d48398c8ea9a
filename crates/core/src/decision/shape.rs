//! Normalises the many shapes a decision arrives in to one [`Decision`].
//!
//! Accepted, besides the canonical `{"thought", "action": {"name", "args"}}`:
//! a name under `tool`/`tool_name`/`function`; args under `arg`, `arguments`,
//! `params`, `parameters`, `input`, `action_input` (or a JSON string of
//! them); OpenAI `tool_calls[0].function`; ReAct `{"action": "name",
//! "action_input": {...}}`; the flattened `{"thought", "name", "args"}`;
//! Hermes `{"name", "arguments"}`; and finish aliases.
//!
//! A name written as a call expression (`"read_file(path='a')"`) is read as
//! that call (see [`super::call`]); and whatever the shape, no decision leaves
//! here with a tool name that holds parentheses or whitespace.

use serde_json::{Map, Value};

use super::call::{self, excerpt, Call};
use super::{json::parse_value, Action, Decision, DecisionError, FINISH};

const NAME_KEYS: &[&str] = &["name", "tool", "tool_name", "function", "action_name"];
const ARG_KEYS: &[&str] = &[
    "args",
    "arg",
    "arguments",
    "params",
    "parameters",
    "input",
    "action_input",
    "tool_input",
];
const THOUGHT_KEYS: &[&str] = &["thought", "thoughts", "reasoning", "think", "rationale"];
const FINISH_ALIASES: &[&str] = &["finish", "final_answer", "answer", "done", "final"];
const RESULT_KEYS: &[&str] = &[
    "result",
    "answer",
    "final_answer",
    "output",
    "response",
    "text",
];

/// Reads a decision out of a parsed JSON value.
pub(super) fn normalize(
    value: Value,
    label_thought: Option<&str>,
) -> Result<Decision, DecisionError> {
    match value {
        Value::Object(obj) => from_object(obj, label_thought),
        Value::Array(items) => {
            let mut last = DecisionError::NoJson;
            for item in items {
                match normalize(item, label_thought) {
                    Ok(d) => return Ok(d),
                    Err(e) => last = e,
                }
            }
            Err(last)
        }
        _ => Err(DecisionError::NoJson),
    }
}

fn from_object(
    obj: Map<String, Value>,
    label_thought: Option<&str>,
) -> Result<Decision, DecisionError> {
    let thought = first_string(&obj, THOUGHT_KEYS)
        .or(label_thought.map(str::to_string))
        .unwrap_or_default();
    let (name, args) = name_and_args(&obj).ok_or_else(|| DecisionError::NoAction {
        keys: obj.keys().cloned().collect::<Vec<_>>().join(", "),
    })?;
    let name = name.trim().to_string();
    if name.is_empty() {
        return Err(DecisionError::NoAction {
            keys: obj.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    match call::parse(&name) {
        Ok(None) => decision(thought, name, args, &obj, false),
        Ok(Some(parsed)) => {
            // Only the call: `read_file(path='a') and then...` is not one.
            let tail = name[parsed.end..].trim().trim_start_matches(';');
            if !tail.trim().is_empty() {
                return Err(bad_call(
                    &name,
                    "text follows its closing parenthesis".into(),
                ));
            }
            let args = call_args(&parsed, &name, args)?;
            decision(thought, parsed.name, args, &obj, true)
        }
        Err(reason) => Err(bad_call(&name, reason)),
    }
}

/// A decision from a ReAct `Action: name(...)` line. `quoted` is the call
/// as written, for error messages.
pub(super) fn from_call(
    parsed: Call,
    quoted: &str,
    thought: String,
) -> Result<Decision, DecisionError> {
    let args = call_args(&parsed, quoted, None)?;
    decision(thought, parsed.name, args, &Map::new(), true)
}

/// The decision for a resolved name and its raw args. `reshaped`: the name
/// came out of a call expression.
fn decision(
    thought: String,
    name: String,
    args: Option<Value>,
    obj: &Map<String, Value>,
    reshaped: bool,
) -> Result<Decision, DecisionError> {
    if is_finish_alias(&name) {
        let args = finish_args(args);
        let result = finish_result(&args, obj, &thought);
        return Ok(Decision {
            thought,
            action: Action {
                name: FINISH.into(),
                args,
            },
            result: Some(result),
            repaired: reshaped || name != FINISH,
        });
    }
    check_name(&name)?;
    Ok(Decision {
        thought,
        action: Action {
            name,
            args: tool_args(args),
        },
        result: None,
        repaired: reshaped,
    })
}

/// The invariant on every decision: a tool name never holds parentheses or
/// whitespace (`read_file(path)` or `read file` would be a call or prose,
/// never a tool).
pub(super) fn check_name(name: &str) -> Result<(), DecisionError> {
    if name.contains(['(', ')']) || name.contains(char::is_whitespace) {
        return Err(DecisionError::BadToolName {
            name: excerpt(name),
        });
    }
    Ok(())
}

fn bad_call(call: &str, reason: String) -> DecisionError {
    DecisionError::BadCall {
        call: excerpt(call),
        reason,
    }
}

/// The args of a call expression, merged with args given beside it (as in
/// `{"name": "read_file(path='a')", "args": {...}}`).
///
/// Named arguments map to args by name. Positional ones cannot: the parser
/// does not know the tool's parameter names, and guessing them would give
/// silently wrong arguments. So they are an error, with two exceptions
/// whose meaning is certain: a lone object (`write_file({"path": "a"})`) is
/// the args, and a finish's lone argument is its result.
fn call_args(
    parsed: &Call,
    quoted: &str,
    given: Option<Value>,
) -> Result<Option<Value>, DecisionError> {
    let given = given.filter(|v| !v.is_null());
    let mut args = match (parsed.positional.as_slice(), parsed.named.is_empty()) {
        ([], _) => parsed.named.clone(),
        ([Value::Object(object)], true) => object.clone(),
        ([only], true) if is_finish_alias(&parsed.name) && given.is_none() => {
            return Ok(Some(only.clone()));
        }
        _ => {
            return Err(DecisionError::PositionalArgs {
                call: excerpt(quoted),
                name: parsed.name.clone(),
            })
        }
    };
    if given.is_none() && args.is_empty() {
        return Ok(None);
    }
    let Value::Object(given) = tool_args(given) else {
        return Ok(Some(Value::Object(args)));
    };
    for (key, value) in given {
        match args.get(&key) {
            Some(existing) if *existing != value => {
                return Err(bad_call(
                    quoted,
                    format!("`{key}` differs between the call and its \"args\""),
                ))
            }
            _ => {
                args.insert(key, value);
            }
        }
    }
    Ok(Some(Value::Object(args)))
}

/// Finds the action name and the raw args value, whatever the shape.
fn name_and_args(obj: &Map<String, Value>) -> Option<(String, Option<Value>)> {
    if let Some(call) = obj.get("tool_calls").and_then(|c| c.get(0)) {
        return call_name_and_args(call.as_object()?);
    }
    match obj.get("action") {
        Some(Value::Object(action)) => {
            let (name, args) = call_name_and_args(action)?;
            Some((name, args.or_else(|| first_value(obj, ARG_KEYS))))
        }
        Some(Value::String(name)) => Some((name.clone(), first_value(obj, ARG_KEYS))),
        _ => call_name_and_args(obj).or_else(|| {
            // {"thought": ..., "final_answer": "..."} with no action at all.
            ["final_answer", "answer"]
                .iter()
                .find(|k| obj.get(**k).is_some_and(|v| !v.is_null()))
                .map(|_| (FINISH.to_string(), None))
        }),
    }
}

/// Name and args of a call object: `{"name", "args"}`, `{"tool", ...}`, or
/// OpenAI's `{"function": {"name", "arguments"}}`.
fn call_name_and_args(obj: &Map<String, Value>) -> Option<(String, Option<Value>)> {
    if let Some(Value::Object(function)) = obj.get("function") {
        return call_name_and_args(function);
    }
    let name = first_string(obj, NAME_KEYS)?;
    Some((name, first_value(obj, ARG_KEYS)))
}

fn first_string(obj: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .map(str::to_string)
}

fn first_value(obj: &Map<String, Value>, keys: &[&str]) -> Option<Value> {
    keys.iter()
        .find_map(|k| obj.get(*k))
        .filter(|v| !v.is_null())
        .cloned()
}

pub(super) fn is_finish_alias(name: &str) -> bool {
    // Compared byte by byte, up to ASCII case and with ` ` and `-` read as
    // `_`, without writing the folded name (every decision asks this).
    let folded = |b: u8| match b {
        b' ' | b'-' => b'_',
        other => other.to_ascii_lowercase(),
    };
    FINISH_ALIASES.iter().any(|alias| {
        alias.len() == name.len() && alias.bytes().zip(name.bytes()).all(|(a, b)| a == folded(b))
    })
}

/// Args for a tool call: an object, parsed from a JSON string if need be.
/// Anything else is kept under `input`, so validation can say what is wrong.
fn tool_args(args: Option<Value>) -> Value {
    match args {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(map)) => Value::Object(map),
        Some(Value::String(s)) => match parse_value(&s) {
            Ok((Value::Object(map), _)) => Value::Object(map),
            _ if s.trim().is_empty() => Value::Object(Map::new()),
            _ => single("input", Value::String(s)),
        },
        Some(other) => single("input", other),
    }
}

/// Args for a finish: a bare string is the result itself.
fn finish_args(args: Option<Value>) -> Value {
    match args {
        Some(Value::String(s)) if !matches!(parse_value(&s), Ok((Value::Object(_), _))) => {
            single("result", Value::String(s))
        }
        other => tool_args(other),
    }
}

fn single(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_string(), value);
    Value::Object(map)
}

/// The final answer: `args.result`, `args.answer` (and kin), a top-level
/// `result`/`answer`, a lone string arg, and last the thought.
fn finish_result(args: &Value, obj: &Map<String, Value>, thought: &str) -> String {
    let args_obj = args.as_object();
    let found = args_obj
        .and_then(|a| first_value(a, RESULT_KEYS))
        .or_else(|| first_value(obj, RESULT_KEYS))
        .or_else(|| {
            let a = args_obj?;
            (a.len() == 1).then(|| a.values().next().cloned()).flatten()
        });
    match found {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => thought.to_string(),
    }
}

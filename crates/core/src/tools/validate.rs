//! Checks a call's args against its [`ToolSpec`] and applies safe coercions.
//!
//! Models get types slightly wrong all the time (`"3"` for 3, `"yes"` for
//! true, one string where a list is expected). Those are fixed silently.
//! Everything else is an error that names the parameter and, for a typo,
//! suggests the closest valid name.

use serde_json::{Map, Value};

use super::spec::{ParamKind, ParamSpec, ToolSpec};

/// Why a call's args do not fit its tool's spec. The message is written
/// for the model, which gets it as the call's error observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidArgs {
    /// The args are not a JSON object.
    #[error("args for `{tool}` must be a JSON object, got {got}")]
    NotAnObject {
        /// The tool that was called.
        tool: String,
        /// What was sent instead, as JSON.
        got: String,
    },
    /// Parameters are missing, unknown or of the wrong type.
    #[error("invalid args for `{tool}`: {}", problems.join("; "))]
    Problems {
        /// The tool that was called.
        tool: String,
        /// One line per problem, each naming the parameter.
        problems: Vec<String>,
    },
}

/// Validates `args` for `spec`, returning the coerced arguments or every
/// problem at once.
pub fn validate_args(spec: &ToolSpec, args: &Value) -> Result<Map<String, Value>, InvalidArgs> {
    let given = match args {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(InvalidArgs::NotAnObject {
                tool: spec.name.clone(),
                got: other.to_string(),
            })
        }
    };
    let mut problems = Vec::new();
    let mut out = Map::new();
    for (key, value) in given {
        let Some(param) = spec.find_param(&key) else {
            problems.push(unknown_param(spec, &key));
            continue;
        };
        if value.is_null() {
            continue; // An explicit null is the same as leaving an optional param out.
        }
        match coerce(param, value) {
            Ok(value) => {
                out.insert(key, value);
            }
            Err(problem) => problems.push(problem),
        }
    }
    for param in spec
        .params
        .iter()
        .filter(|p| p.required && !out.contains_key(&p.name))
    {
        if !problems
            .iter()
            .any(|p| p.contains(&format!("`{}`", param.name)))
        {
            problems.push(format!(
                "missing required parameter `{}` ({}): {}",
                param.name,
                param.kind.as_str(),
                param.description
            ));
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(InvalidArgs::Problems {
            tool: spec.name.clone(),
            problems,
        })
    }
}

fn unknown_param(spec: &ToolSpec, key: &str) -> String {
    let valid: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    let closest = valid
        .iter()
        .map(|name| (strsim::jaro_winkler(&key.to_lowercase(), name), *name))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(score, _)| *score > 0.7);
    match closest {
        Some((_, name)) => format!("unknown parameter `{key}`; did you mean `{name}`?"),
        None if valid.is_empty() => {
            format!("unknown parameter `{key}`; this tool takes no parameters")
        }
        None => format!(
            "unknown parameter `{key}`; valid parameters: {}",
            valid.join(", ")
        ),
    }
}

/// Converts `value` to the parameter's kind where that is unambiguous.
fn coerce(param: &ParamSpec, value: Value) -> Result<Value, String> {
    let wrong = |v: &Value| {
        format!(
            "parameter `{}` must be {}, got {}",
            param.name,
            param.kind.as_str(),
            crate::text::clip(&v.to_string(), 60)
        )
    };
    let coerced = match (param.kind, value) {
        (ParamKind::String, Value::String(s)) => Value::String(s),
        (ParamKind::String, v @ (Value::Number(_) | Value::Bool(_))) => {
            Value::String(v.to_string())
        }
        (ParamKind::String, v @ (Value::Array(_) | Value::Object(_))) => {
            // Structured content where text was expected (e.g. JSON file content).
            Value::String(serde_json::to_string_pretty(&v).unwrap_or_default())
        }
        (ParamKind::Integer, Value::Number(n)) => match n.as_i64().or_else(|| whole(n.as_f64())) {
            Some(i) => Value::from(i),
            None => return Err(wrong(&Value::Number(n))),
        },
        (ParamKind::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => return Err(wrong(&Value::String(s))),
        },
        (ParamKind::Number, Value::Number(n)) => Value::Number(n),
        (ParamKind::Number, Value::String(s)) => match s
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            Some(n) => Value::Number(n),
            None => return Err(wrong(&Value::String(s))),
        },
        (ParamKind::Boolean, Value::Bool(b)) => Value::Bool(b),
        (ParamKind::Boolean, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "on" => Value::Bool(true),
            "false" | "no" | "n" | "0" | "off" => Value::Bool(false),
            _ => return Err(wrong(&Value::String(s))),
        },
        (ParamKind::Boolean, Value::Number(n))
            if n.as_i64() == Some(0) || n.as_i64() == Some(1) =>
        {
            Value::Bool(n.as_i64() == Some(1))
        }
        (ParamKind::Array, Value::Array(a)) => Value::Array(a),
        (ParamKind::Array, Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Array(a)) => Value::Array(a),
            _ => Value::Array(vec![Value::String(s)]),
        },
        (ParamKind::Array, v @ (Value::Number(_) | Value::Bool(_) | Value::Object(_))) => {
            Value::Array(vec![v])
        }
        (ParamKind::Object, Value::Object(o)) => Value::Object(o),
        (ParamKind::Object, Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(o)) => Value::Object(o),
            _ => return Err(wrong(&Value::String(s))),
        },
        (_, v) => return Err(wrong(&v)),
    };
    if !param.allowed.is_empty() && !param.allowed.contains(&coerced) {
        let allowed: Vec<String> = param.allowed.iter().map(Value::to_string).collect();
        return Err(format!(
            "parameter `{}` must be one of {}, got {coerced}",
            param.name,
            allowed.join(", ")
        ));
    }
    Ok(coerced)
}

fn whole(f: Option<f64>) -> Option<i64> {
    f.filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
        .map(|f| f as i64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> ToolSpec {
        ToolSpec::new("t", "test tool")
            .param(ParamSpec::new("path", ParamKind::String, "a path").required())
            .param(ParamSpec::new("count", ParamKind::Integer, "how many"))
            .param(ParamSpec::new("ratio", ParamKind::Number, "a ratio"))
            .param(ParamSpec::new("force", ParamKind::Boolean, "overwrite"))
            .param(ParamSpec::new("tags", ParamKind::Array, "labels"))
            .param(ParamSpec::new("meta", ParamKind::Object, "extra"))
            .param(ParamSpec::new("mode", ParamKind::String, "mode").one_of(["fast", "slow"]))
    }

    #[test]
    fn safe_coercions_are_applied() {
        let out = validate_args(
            &spec(),
            &json!({"path": "a", "count": "3", "ratio": "0.5", "force": "yes", "tags": "one", "meta": "{\"k\": 1}"}),
        )
        .unwrap();
        assert_eq!(out["count"], json!(3));
        assert_eq!(out["ratio"], json!(0.5));
        assert_eq!(out["force"], json!(true));
        assert_eq!(out["tags"], json!(["one"]));
        assert_eq!(out["meta"], json!({"k": 1}));
    }

    #[test]
    fn missing_required_param_is_named() {
        let err = validate_args(&spec(), &json!({})).unwrap_err().to_string();
        assert!(err.contains("missing required parameter `path`"), "{err}");
    }

    #[test]
    fn unknown_param_suggests_closest_name() {
        let err = validate_args(&spec(), &json!({"path": "a", "cuont": 2}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown parameter `cuont`; did you mean `count`?"),
            "{err}"
        );
        let err = validate_args(&spec(), &json!({"path": "a", "zzzzzz": 2}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("valid parameters: path, count"), "{err}");
    }

    #[test]
    fn wrong_types_and_enum_values_are_errors() {
        assert!(
            validate_args(&spec(), &json!({"path": "a", "count": "many"}))
                .unwrap_err()
                .to_string()
                .contains("must be integer")
        );
        assert!(
            validate_args(&spec(), &json!({"path": "a", "mode": "medium"}))
                .unwrap_err()
                .to_string()
                .contains("one of")
        );
        assert!(validate_args(&spec(), &json!({"path": "a", "force": "perhaps"})).is_err());
        assert_eq!(
            validate_args(&spec(), &json!([1])),
            Err(InvalidArgs::NotAnObject {
                tool: "t".into(),
                got: "[1]".into()
            })
        );
    }

    #[test]
    fn null_optional_is_dropped_and_whole_floats_become_integers() {
        let out = validate_args(&spec(), &json!({"path": 7, "count": 2.0, "mode": null})).unwrap();
        assert_eq!(out["path"], json!("7"));
        assert_eq!(out["count"], json!(2));
        assert!(!out.contains_key("mode"));
    }
}

//! JSON Schema → tool parameters, so tools described by a schema (MCP
//! servers, schemars-derived argument structs) get the same prompt text,
//! validation and coercion as hand-written specs.

use serde_json::{Map, Value};

use super::{ParamKind, ParamSpec};

/// The parameters of an object schema: one per property, with its type,
/// description, enum and whether it is required. Unknown or composite
/// types become `object` (validated as JSON objects) or `string`.
pub fn params_from_schema(schema: &Map<String, Value>) -> Vec<ParamSpec> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let description = property
                .get("description")
                .or_else(|| property.get("title"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mut param = ParamSpec::new(name.clone(), kind_of(property), description);
            if required.contains(&name.as_str()) {
                param = param.required();
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                param = param.one_of(values.iter().filter(|v| !v.is_null()).cloned());
            }
            param
        })
        .collect()
}

/// The parameter kind of one property schema.
fn kind_of(property: &Value) -> ParamKind {
    let named = |t: &str| match t {
        "string" => Some(ParamKind::String),
        "integer" => Some(ParamKind::Integer),
        "number" => Some(ParamKind::Number),
        "boolean" => Some(ParamKind::Boolean),
        "array" => Some(ParamKind::Array),
        "object" => Some(ParamKind::Object),
        _ => None,
    };
    match property.get("type") {
        Some(Value::String(t)) => named(t).unwrap_or(ParamKind::String),
        // ["integer", "null"]: an optional value of the first real type.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find_map(named)
            .unwrap_or(ParamKind::String),
        _ => {
            // anyOf/oneOf: take the first branch with a type; a $ref is a nested object.
            let branches = property
                .get("anyOf")
                .or_else(|| property.get("oneOf"))
                .and_then(Value::as_array);
            match branches.and_then(|b| b.iter().map(kind_of_opt).find_map(|k| k)) {
                Some(kind) => kind,
                None if property.get("enum").is_some() => ParamKind::String,
                None => ParamKind::Object,
            }
        }
    }
}

fn kind_of_opt(branch: &Value) -> Option<ParamKind> {
    match branch.get("type") {
        Some(Value::String(t)) if t != "null" => Some(kind_of(branch)),
        Some(Value::Array(_)) => Some(kind_of(branch)),
        _ if branch.get("$ref").is_some() => Some(ParamKind::Object),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn converts_types_required_enums_and_optionals() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "where"},
                "count": {"type": ["integer", "null"]},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "nested": {"$ref": "#/$defs/Inner"},
                "choice": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}
            },
            "required": ["path"]
        });
        let params = params_from_schema(schema.as_object().unwrap());
        let get = |n: &str| params.iter().find(|p| p.name == n).unwrap();
        assert!(get("path").required);
        assert_eq!(get("path").description, "where");
        assert_eq!(get("count").kind, ParamKind::Integer);
        assert!(!get("count").required);
        assert_eq!(get("mode").allowed, vec![json!("a"), json!("b")]);
        assert_eq!(get("nested").kind, ParamKind::Object);
        assert_eq!(get("choice").kind, ParamKind::Boolean);
    }
}

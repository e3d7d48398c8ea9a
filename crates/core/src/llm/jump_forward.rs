//! **Jump-forward decoding** of a decision: the text of a decision that
//! only one continuation can take, read from the decision's JSON schema,
//! so that an in-process engine evaluates it in one batch instead of
//! choosing it one token at a time.
//!
//! A decision `{"thought": "…", "action": {"name": "read_file", "args":
//! {"path": "…"}}}` is about half fixed text: the keys, the punctuation
//! between them, the parameter names of the chosen tool (its required
//! parameters come in schema order, as the grammar derived from the schema
//! demands) and the closing braces. Each token an engine chooses costs a
//! full evaluation (~35 ms for a 1.5B model on two cores); a run of fixed
//! tokens evaluated in one batch costs little more than one of them. This
//! is SGLang's "jump-forward" and llguidance's "fast-forward tokens",
//! done on the text rather than on the grammar's automaton: after each
//! chosen token the engine asks [`Template::forced`] what must follow the
//! text so far, and feeds it.
//!
//! The forced text is written the canonical way (one space after `:` and
//! `,`, as the prompt's examples show the shape); the grammar permits it,
//! and a text that strays from that shape (other whitespace, another key
//! order) gets nothing forced, so the model decides on its own from there.
//!
//! Forcing stops at each `:`: the space and the quote (or brace) that open
//! a value are left to the model. Tokenizers merge them with what follows
//! (` "-`, ` "read`, ` {"`), so a forced lone ` "` puts the model at a
//! token boundary it never saw in training, and it chose differently
//! there: `7` for `-7` as the content of a file, `{}` as `list_dir`'s
//! arguments however often the thought named a folder (EVALS.md, section
//! 14). Letting it write that one token itself keeps its choice its own.

use serde_json::Value;

/// The decision's opening, up to the thought's first character.
const OPEN: &str = r#"{"thought": ""#;
/// Between the thought and the tool's name.
const TO_NAME: &str = r#", "action": {"name": ""#;
/// Between the tool's name and its first argument.
const TO_ARGS: &str = r#", "args": {"#;

/// Text that must come next, and whether the decision is complete after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forced {
    /// The fixed text, never empty.
    pub text: String,
    /// Whether the decision's JSON closes with it (nothing may follow).
    pub complete: bool,
}

/// What a decision schema fixes: each action's name and its required
/// arguments in order.
#[derive(Debug, Clone)]
pub struct Template {
    actions: Vec<ActionShape>,
}

#[derive(Debug, Clone)]
struct ActionShape {
    name: String,
    /// Required arguments in the schema's order, with whether each is a string.
    required: Vec<(String, bool)>,
    /// Whether the arguments end after the required ones (no optional one).
    closed: bool,
}

impl Template {
    /// The template of a decision schema (see `agent::decide::decision_schema`):
    /// an object of `thought` (string) then `action`, an `anyOf` of objects
    /// whose `name` is a `const` and whose `args` is an object. `None` for
    /// any other schema.
    pub fn from_schema(schema: &Value) -> Option<Self> {
        let properties = schema.get("properties")?.as_object()?;
        let keys: Vec<&String> = properties.keys().collect();
        if keys != ["thought", "action"] || properties["thought"]["type"] != "string" {
            return None;
        }
        let actions = properties["action"]["anyOf"]
            .as_array()?
            .iter()
            .map(ActionShape::from_schema)
            .collect::<Option<Vec<_>>>()?;
        Some(Self { actions })
    }

    /// The text that must follow `text` (a decision being written), or
    /// `None` while the model has a choice: inside the thought, the name
    /// or a value, after an argument that optional ones may follow, once
    /// the decision is complete, or once `text` strays from the canonical
    /// shape.
    pub fn forced(&self, text: &str) -> Option<Forced> {
        self.walk(text).err().flatten()
    }

    /// Reads `text` piece by piece; stops with `Err(Some(_))` where it ends
    /// inside fixed text, `Err(None)` where nothing is fixed.
    fn walk(&self, text: &str) -> Result<(), Option<Forced>> {
        let mut cursor = Cursor { text, at: 0 };
        cursor.fixed(OPEN)?;
        cursor.string().ok_or(None)?;
        cursor.fixed(TO_NAME)?;
        let name = cursor.string().ok_or(None)?;
        let action = self.actions.iter().find(|a| a.name == name).ok_or(None)?;
        // Fixed text not yet matched: the way to the first argument, then
        // from each value to the next argument's value.
        let mut pieces = String::from(TO_ARGS);
        for (i, (argument, is_string)) in action.required.iter().enumerate() {
            if i > 0 {
                pieces.push_str(", ");
            }
            pieces.push('"');
            pieces.push_str(argument);
            pieces.push_str("\": ");
            if *is_string {
                pieces.push('"');
            }
            cursor.fixed(&pieces)?;
            pieces.clear();
            if *is_string {
                cursor.string().ok_or(None)?;
            } else {
                cursor.value().ok_or(None)?;
            }
        }
        if action.closed {
            pieces.push_str("}}}");
            cursor.fixed(&pieces)?;
            return Err(None);
        }
        cursor.fixed(&pieces)?;
        // Optional arguments may follow; once the model closes the
        // arguments instead, the rest is fixed.
        if cursor.rest().starts_with('}') {
            cursor.fixed("}}}")?;
        }
        Err(None)
    }
}

impl ActionShape {
    fn from_schema(action: &Value) -> Option<Self> {
        let properties = action.get("properties")?.as_object()?;
        let keys: Vec<&String> = properties.keys().collect();
        if keys != ["name", "args"] {
            return None;
        }
        let name = properties["name"]["const"].as_str()?.to_string();
        let Some(args) = args_shape(&properties["args"]) else {
            // Args of a shape the template cannot follow: nothing after
            // the name is fixed.
            return Some(Self {
                name,
                required: Vec::new(),
                closed: false,
            });
        };
        let declared = args.get("properties").and_then(Value::as_object);
        let required: Vec<(String, bool)> = args
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|n| {
                        let is_string = declared
                            .and_then(|d| d.get(n))
                            .is_some_and(|p| p["type"] == "string" || p["const"].is_string());
                        (n.to_string(), is_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let closed = declared.map_or(0, serde_json::Map::len) == required.len();
        Some(Self {
            name,
            required,
            closed,
        })
    }
}

/// The object schema an action's args follow: the args themselves, or the
/// first branch of an `anyOf` whose branches all have the same properties
/// and required ones in the same order (`run_code`'s one branch per
/// language, see `ToolSpec::refine_args`); `None` for anything else.
fn args_shape(args: &Value) -> Option<&Value> {
    let Some(branches) = args.get("anyOf").and_then(Value::as_array) else {
        return Some(args);
    };
    let first = branches.first()?;
    let keys = |branch: &Value| -> Option<Vec<String>> {
        Some(
            branch
                .get("properties")?
                .as_object()?
                .keys()
                .cloned()
                .collect(),
        )
    };
    let same = branches
        .iter()
        .all(|b| keys(b) == keys(first) && b.get("required") == first.get("required"));
    (same && keys(first).is_some()).then_some(first)
}

/// A reading position in a decision being written.
struct Cursor<'t> {
    text: &'t str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    /// Steps over `fixed`. When the text ends inside it, `Err(Some(_))`
    /// with the part still to come; when the text strays, `Err(None)`.
    fn fixed(&mut self, fixed: &str) -> Result<(), Option<Forced>> {
        let rest = self.rest();
        if rest.starts_with(fixed) {
            self.at += fixed.len();
            return Ok(());
        }
        let Some(to_come) = fixed.strip_prefix(rest) else {
            return Err(None);
        };
        let complete = fixed.ends_with("}}}");
        // What opens a value (` "`, ` {`) is the model's to write.
        let held = if complete {
            0
        } else {
            fixed.len() - fixed.rfind(':').map_or(fixed.len(), |colon| colon + 1)
        };
        match to_come.len().checked_sub(held) {
            Some(len) if len > 0 => Err(Some(Forced {
                text: to_come[..len].to_string(),
                complete,
            })),
            _ => Err(None),
        }
    }

    /// Steps over a string's characters and its closing quote (the opening
    /// quote is part of the fixed text before it); returns its content.
    fn string(&mut self) -> Option<&str> {
        let start = self.at;
        let mut escaped = false;
        for (offset, c) in self.rest().char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    let content = &self.text[start..start + offset];
                    self.at = start + offset + 1;
                    return Some(content);
                }
                _ => {}
            }
        }
        None
    }

    /// Steps over a value that is not a string (number, literal, object,
    /// array) once the character after it is written.
    fn value(&mut self) -> Option<()> {
        let mut depth = 0i32;
        let mut in_string = false;
        let mut escaped = false;
        for (offset, c) in self.rest().char_indices() {
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '{' | '[' => depth += 1,
                '}' | ']' if depth > 0 => depth -= 1,
                ',' | '}' | ' ' if depth == 0 && offset > 0 => {
                    self.at += offset;
                    return Some(());
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        let tool = |name: &str, args: Value| json!({"type": "object", "properties": {"name": {"const": name}, "args": args}, "required": ["name", "args"]});
        json!({
            "type": "object",
            "properties": {
                "thought": {"type": "string", "maxLength": 600},
                "action": {"anyOf": [
                    tool("write_file", json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]})),
                    // One branch per language, as `run_code`'s refined args.
                    tool("run_code", json!({"anyOf": (["python", "bash"].map(|language| json!({"type": "object", "properties": {"language": {"const": language}, "code": {"type": "string"}, "timeout_secs": {"type": "number"}}, "required": ["language", "code"]})))})),
                    tool("list_dir", json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": []})),
                    tool("read_lines", json!({"type": "object", "properties": {"path": {"type": "string"}, "max": {"type": "integer"}}, "required": ["max", "path"]})),
                    tool("finish", json!({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]})),
                ]}
            },
            "required": ["thought", "action"]
        })
    }

    fn forced(text: &str) -> Option<(String, bool)> {
        Template::from_schema(&schema())
            .unwrap()
            .forced(text)
            .map(|f| (f.text, f.complete))
    }

    fn open(text: &str) -> Option<(String, bool)> {
        Some((text.to_string(), false))
    }

    #[test]
    fn the_opening_and_the_way_to_the_name_are_forced() {
        assert_eq!(forced(""), open(r#"{"thought":"#));
        assert_eq!(forced(r#"{"th"#), open(r#"ought":"#));
        // The quote that opens the thought is the model's own token.
        assert_eq!(forced(r#"{"thought":"#), None);
        assert_eq!(forced(r#"{"thought": "#), None);
        assert_eq!(forced(r#"{"thought": "I will read"#), None);
        assert_eq!(forced(r#"{"thought": "say \"hi"#), None);
        assert_eq!(
            forced(r#"{"thought": "Read it \"now\"""#),
            open(r#", "action": {"name":"#)
        );
        assert_eq!(
            forced(r#"{"thought": "x", "act"#),
            open(r#"ion": {"name":"#)
        );
        assert_eq!(
            forced(r#"{"thought": "x", "action": {"name": "write"#),
            None
        );
    }

    #[test]
    fn required_arguments_are_forced_in_order() {
        let name = r#"{"thought": "x", "action": {"name": "write_file""#;
        assert_eq!(forced(name), open(r#", "args": {"path":"#));
        let path = format!(r#"{name}, "args": {{"path": "a.txt""#);
        assert_eq!(forced(&path), open(r#", "content":"#));
        let content = format!(r#"{path}, "content": "3\n""#);
        assert_eq!(forced(&content), Some(("}}}".to_string(), true)));
        assert_eq!(
            forced(&format!("{content}}}")),
            Some(("}}".to_string(), true))
        );
        assert_eq!(
            forced(&format!("{content}}}}}")),
            Some(("}".to_string(), true))
        );
        assert_eq!(forced(&format!("{content}}}}}}}")), None);
    }

    #[test]
    fn values_are_left_to_the_model_and_optional_arguments_stop_the_forcing() {
        let name = r#"{"thought": "x", "action": {"name": "run_code""#;
        assert_eq!(forced(name), open(r#", "args": {"language":"#));
        assert_eq!(
            forced(&format!(r#"{name}, "args": {{"language": "py"#)),
            None
        );
        let language = format!(r#"{name}, "args": {{"language": "python""#);
        assert_eq!(forced(&language), open(r#", "code":"#));
        let code = format!(r#"{language}, "code": "print(1)""#);
        // `timeout_secs` may follow: the model chooses.
        assert_eq!(forced(&code), None);
        assert_eq!(forced(&format!("{code}}}")), Some(("}}".to_string(), true)));
        let numbers = r#"{"thought": "x", "action": {"name": "read_lines", "args": {"max": 12"#;
        assert_eq!(forced(numbers), None);
        assert_eq!(forced(&format!("{numbers},")), open(r#" "path":"#));
    }

    #[test]
    fn args_whose_branches_differ_fix_nothing_after_the_name() {
        let branch = |required: Value| json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": required});
        let args = json!({"anyOf": [branch(json!(["a"])), branch(json!(["b"]))]});
        assert!(args_shape(&args).is_none());
        let action = json!({"properties": {"name": {"const": "t"}, "args": args}});
        let shape = ActionShape::from_schema(&action).unwrap();
        assert!(shape.required.is_empty() && !shape.closed);
    }

    #[test]
    fn a_tool_without_required_arguments_and_finish() {
        let list = r#"{"thought": "x", "action": {"name": "list_dir""#;
        assert_eq!(forced(list), open(r#", "args":"#));
        assert_eq!(forced(&format!(r#"{list}, "args":"#)), None);
        assert_eq!(forced(&format!(r#"{list}, "args": {{"#)), None);
        let finish = r#"{"thought": "done", "action": {"name": "finish""#;
        assert_eq!(forced(finish), open(r#", "args": {"result":"#));
        assert_eq!(
            forced(&format!(r#"{finish}, "args": {{"result": "42""#)),
            Some(("}}}".to_string(), true))
        );
    }

    #[test]
    fn a_text_that_strays_from_the_shape_gets_nothing() {
        assert_eq!(forced(r#"{ "thought": "x""#), None);
        assert_eq!(forced(r#"{"thought": "x",  "action""#), None);
        assert_eq!(
            forced(r#"{"thought": "x", "action": {"name": "nope""#),
            None
        );
        assert!(Template::from_schema(&json!({"type": "object"})).is_none());
        assert!(Template::from_schema(
            &json!({"properties": {"action": {}, "thought": {"type": "string"}}})
        )
        .is_none());
    }
}

//! `ToolSpec`: one description of a tool that both writes the prompt and
//! validates the model's calls, so the two can never disagree.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// Default limit for one tool call.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The JSON type a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// A JSON string.
    String,
    /// A whole number.
    Integer,
    /// Any JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON array.
    Array,
    /// A JSON object.
    Object,
}

impl ParamKind {
    /// The lowercase name used in prompts and errors.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Number => "number",
            ParamKind::Boolean => "boolean",
            ParamKind::Array => "array",
            ParamKind::Object => "object",
        }
    }
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamSpec {
    /// Argument key.
    pub name: String,
    /// Expected JSON type.
    pub kind: ParamKind,
    /// Whether the call fails without it.
    pub required: bool,
    /// What it means, shown to the model.
    pub description: String,
    /// Allowed values, when the parameter is an enumeration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<Value>,
}

impl ParamSpec {
    /// An optional parameter of the given kind.
    pub fn new(name: impl Into<String>, kind: ParamKind, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            required: false,
            description: description.into(),
            allowed: Vec::new(),
        }
    }
    /// Marks the parameter as required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// Restricts the parameter to these values.
    pub fn one_of<I: IntoIterator<Item = V>, V: Into<Value>>(mut self, values: I) -> Self {
        self.allowed = values.into_iter().map(Into::into).collect();
        self
    }
}

/// Everything the runtime knows about a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Name the model uses in `action.name`.
    pub name: String,
    /// What the tool does and when to use it, shown to the model.
    pub description: String,
    /// Parameters, in the order they are shown.
    pub params: Vec<ParamSpec>,
    /// Example `args` objects, shown to the model.
    pub examples: Vec<Value>,
    /// Limit for one call.
    #[serde(skip)]
    pub timeout: Duration,
    /// Whether a failed call may be retried safely.
    pub idempotent: bool,
    /// What the tool does to the workspace, as the loop's steers ask it
    /// (see [`ToolEffect`]); `Other` unless the tool declares one.
    #[serde(skip)]
    pub effect: ToolEffect,
    /// Whether its results are text from outside (web pages, search
    /// results, MCP servers): shown to the model as data between
    /// `<untrusted>` marks, never as instructions.
    #[serde(skip)]
    pub untrusted: bool,
    /// The args schema a constrained decoder follows when it is narrower
    /// than the one the params make (patterns, one branch per enum value);
    /// calls are still validated against [`ToolSpec::params`].
    #[serde(skip)]
    pub decoding_args: Option<Value>,
    /// Whether a call made in a trial ([`session::trial`](super::session::trial))
    /// changes nothing that lasts, so that the loop may try it before it
    /// acts (the code vote). Only a tool that declares it is ever tried.
    #[serde(skip)]
    pub triable: bool,
    /// Whether a call never holds its thread for long (it only awaits, or
    /// sends its slow work to the blocking pool), so that it may run in the
    /// loop's own task: its panic is caught and its time bounded there, as
    /// in a task of its own, without the new task's start waking another
    /// worker thread for every call (two of every three context switches
    /// of a round at one task at a time; BENCHMARKS.md, session 43, which
    /// also shows the cost: at 50 loops at once over HTTP, about a tenth
    /// more CPU per round). A tool that may block its thread leaves this
    /// off: only in a task of its own can the loop's timeout still fire
    /// while the thread is held.
    #[serde(skip)]
    pub inline: bool,
}

/// What a tool does to the workspace, declared by the tool itself so that
/// the loop's helpers (`agent::steer`) ask the spec, never a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolEffect {
    /// Neither reads nor writes the workspace (network, MCP, custom tools).
    #[default]
    Other,
    /// Lists the workspace's folders without reading files (`list_dir`).
    Lists,
    /// Reads files of the workspace (`read_file`, `search_files`).
    Reads,
    /// Writes a file of the workspace from `path` and `content` args
    /// (`write_file`).
    Writes,
    /// Runs code that can read the workspace (`run_code`).
    RunsCode,
}

impl ToolEffect {
    /// Whether the model sees the workspace's files through such a tool.
    pub fn sees_workspace(self) -> bool {
        matches!(self, Self::Lists | Self::Reads | Self::RunsCode)
    }
}

impl ToolSpec {
    /// A spec with no parameters, the default timeout, not idempotent.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            params: Vec::new(),
            examples: Vec::new(),
            timeout: DEFAULT_TOOL_TIMEOUT,
            idempotent: false,
            effect: ToolEffect::Other,
            untrusted: false,
            decoding_args: None,
            triable: false,
            inline: false,
        }
    }
    /// Adds a parameter.
    pub fn param(mut self, param: ParamSpec) -> Self {
        self.params.push(param);
        self
    }
    /// Adds an example `args` object.
    pub fn example(mut self, args: Value) -> Self {
        self.examples.push(args);
        self
    }
    /// Sets the per-call timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Declares that repeating a call is harmless, so failures are retried.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Declares that its results come from outside and are data, not
    /// instructions (see [`ToolSpec::untrusted`]).
    pub fn untrusted(mut self) -> Self {
        self.untrusted = true;
        self
    }

    /// Declares that a call in a trial changes nothing that lasts (see
    /// [`ToolSpec::triable`]).
    pub fn triable(mut self) -> Self {
        self.triable = true;
        self
    }

    /// Declares that a call never holds its thread for long, so that it
    /// runs in the loop's own task (see [`ToolSpec::inline`]).
    pub fn inline(mut self) -> Self {
        self.inline = true;
        self
    }

    /// Declares what the tool does to the workspace (see [`ToolEffect`]).
    pub fn effect(mut self, effect: ToolEffect) -> Self {
        self.effect = effect;
        self
    }

    /// Narrows the args schema a constrained decoder follows: `refine`
    /// gets the schema the params make (so call this after the last
    /// [`ToolSpec::param`]) and returns the one to decode under (see
    /// [`ToolSpec::decoding_args`]).
    pub fn refine_args(mut self, refine: impl FnOnce(Value) -> Value) -> Self {
        self.decoding_args = Some(refine(self.args_schema()));
        self
    }

    /// The parameter with this name.
    pub fn find_param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The tool's args as a JSON schema object (types, required, enums, and
    /// whatever [`ToolSpec::refine_args`] narrowed), for models that
    /// constrain decoding to a schema; closed to arguments the tool does
    /// not declare.
    pub fn args_schema(&self) -> Value {
        if let Some(schema) = &self.decoding_args {
            return schema.clone();
        }
        let properties: serde_json::Map<String, Value> = self
            .params
            .iter()
            .map(|p| {
                let mut schema = serde_json::json!({ "type": p.kind.as_str() });
                if !p.allowed.is_empty() {
                    schema["enum"] = Value::Array(p.allowed.clone());
                }
                (p.name.clone(), schema)
            })
            .collect();
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        })
    }

    /// The prompt text for this tool: name, description, parameters, examples.
    pub fn render(&self) -> String {
        let mut out = format!("- {}: {}\n", self.name, self.description);
        if self.params.is_empty() {
            out.push_str("    args: none\n");
        }
        for p in &self.params {
            let need = if p.required { "required" } else { "optional" };
            let _ = write!(out, "    {} ({}, {need})", p.name, p.kind.as_str());
            if !p.allowed.is_empty() {
                let values: Vec<String> = p.allowed.iter().map(Value::to_string).collect();
                let _ = write!(out, " one of {}", values.join(", "));
            }
            let _ = writeln!(out, ": {}", p.description);
        }
        for example in &self.examples {
            let _ = writeln!(out, "    example args: {example}");
        }
        out
    }
}

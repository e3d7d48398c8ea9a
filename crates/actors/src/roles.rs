//! Executor roles as data: one TOML file each in `agents/`, plus runtime
//! registration.
//!
//! A role names what an executor is for (the planner picks roles by their
//! description), how its system prompt starts, which tools it may use, and
//! optionally its own model and limits. Unknown fields are an error, and
//! every error names the file and the field.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use hermes_core::agent::steer::Steers;
use hermes_core::agent::{Agent, LongTermMemory};
use hermes_core::approval::{ApprovalPolicy, RuleSpec};
use hermes_core::limits::{Limits, LimitsOverlay};
use hermes_core::llm::Llm;
use hermes_core::tools::Toolbox;

/// One executor role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Unique name the planner uses in plans.
    pub name: String,
    /// What the role is good at; the planner chooses roles by this.
    pub description: String,
    /// The start of the executor's system prompt.
    pub system_prompt: String,
    /// Tools the role may use; omitted means every registered tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Model for this role; omitted means the run's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Limits for this role's loops (`[limits]`); omitted fields keep the
    /// run's limits.
    #[serde(default)]
    pub limits: LimitsOverlay,
    /// The loop's steers switched on or off for this role (`[steer]`,
    /// `read_check = false`); see `hermes steers`.
    #[serde(default, skip_serializing_if = "Steers::is_empty")]
    pub steer: Steers,
    /// Calls that wait for a person's approval (`approve = ["run_code",
    /// { tool = "write_file", unless_path = ["out/**"] }]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<RuleSpec>,
    /// Ask before a call made right after reading untrusted text that runs
    /// code, or writes a file or fetches a URL that the text names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approve_after_untrusted: bool,
    /// Most prompt + completion tokens for one run of this role (each
    /// subtask it takes); at the cap that run stops with status `budget`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Most model calls for one run of this role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_budget: Option<u64>,
}

/// Per-role overrides of [`Limits`]: the one overlay type.
pub type RoleLimits = LimitsOverlay;

impl Role {
    /// What this role changes: its `[limits]` with its `[steer]` table on top.
    pub fn overlay(&self) -> LimitsOverlay {
        self.limits.then(&LimitsOverlay {
            steer: self.steer.clone(),
            ..LimitsOverlay::default()
        })
    }

    /// The role's approval rules as a policy.
    pub fn approval_policy(&self) -> ApprovalPolicy {
        ApprovalPolicy::new(self.approve.iter().map(RuleSpec::rule).collect())
            .after_untrusted(self.approve_after_untrusted)
    }

    /// `base` with this role's overrides applied.
    pub fn limits_over(&self, base: &Limits) -> Limits {
        self.overlay().apply(base)
    }

    /// An agent that works in this role: the role's prompt as its identity,
    /// its tools out of `toolbox`, and `memory` filed under its name. The
    /// caller gives the run's `limits` (its base with
    /// [`Role::limits_over`], and whatever else bounds the run: a task's
    /// deadline, a suite's task limits). The one place a role is applied to
    /// an agent: the planner's executors, a worker node's and `hermes eval`.
    pub fn agent(
        &self,
        llm: Arc<dyn Llm>,
        toolbox: &Arc<Toolbox>,
        limits: Limits,
        memory: Option<&LongTermMemory>,
    ) -> Agent {
        let toolbox = Toolbox::for_role(toolbox, self.tools.as_deref());
        let agent = Agent::new(llm, toolbox)
            .with_limits(limits)
            .with_identity(self.system_prompt.clone());
        match memory {
            Some(memory) => agent.with_memory(memory.for_role(self.name.clone())),
            None => agent,
        }
    }

    /// Checks the fields a TOML parser cannot: non-empty text, known tools, sane limits.
    pub fn check(&self, known_tools: &[&str]) -> Result<(), RoleError> {
        let field = |field: &str, problem: String| RoleError::Field {
            field: field.into(),
            problem,
        };
        if self.name.trim().is_empty() || self.name.contains(char::is_whitespace) {
            return Err(field(
                "name",
                format!("must be one word, got {:?}", self.name),
            ));
        }
        if self.description.trim().is_empty() {
            return Err(field("description", "must not be empty".into()));
        }
        if self.system_prompt.trim().is_empty() {
            return Err(field("system_prompt", "must not be empty".into()));
        }
        for tool in self.tools.iter().flatten() {
            if !known_tools.contains(&tool.as_str()) {
                return Err(field(
                    "tools",
                    format!(
                        "unknown tool `{tool}`; available tools: {}",
                        known_tools.join(", ")
                    ),
                ));
            }
        }
        if let Err(e) = self.limits.check() {
            return Err(field(&format!("limits.{}", e.field), e.problem));
        }
        if let Err(e) = self.steer.check() {
            return Err(field("steer", e.to_string()));
        }
        if self.token_budget == Some(0) {
            return Err(field("token_budget", "must be at least 1".into()));
        }
        if self.call_budget == Some(0) {
            return Err(field("call_budget", "must be at least 1".into()));
        }
        for rule in self.approve.iter().map(RuleSpec::rule) {
            if rule.tool != "*" && !known_tools.contains(&rule.tool.as_str()) {
                return Err(field(
                    "approve",
                    format!(
                        "unknown tool `{}`; available tools: {}",
                        rule.tool,
                        known_tools.join(", ")
                    ),
                ));
            }
            rule.check().map_err(|e| field("approve", e))?;
        }
        Ok(())
    }
}

/// Why a role could not be loaded or registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RoleError {
    /// A field is missing, unknown or invalid.
    #[error("field `{field}`: {problem}")]
    Field {
        /// The field's name (dotted for nested fields).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The file is not valid TOML for a role (the message names the field).
    #[error("{0}")]
    Toml(String),
    /// Two roles share a name.
    #[error("a role named `{name}` already exists (from {existing})")]
    Duplicate {
        /// The shared name.
        name: String,
        /// Where the first one came from.
        existing: String,
    },
    /// A file or directory could not be read.
    #[error("{0}")]
    Io(String),
    /// An error inside a specific file.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The role file.
        path: PathBuf,
        /// The error in it.
        #[source]
        source: Box<RoleError>,
    },
}

/// The roles executors may take, by name. Shared and safe to change at runtime.
#[derive(Debug, Clone, Default)]
pub struct RoleRegistry {
    roles: Arc<DashMap<String, (Arc<Role>, String)>>,
}

impl RoleRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads every `*.toml` in `dir` (sorted by file name), checking tools
    /// against `known_tools`. The first bad file stops the load with an
    /// error naming the file and the field.
    pub fn load_dir(dir: &Path, known_tools: &[&str]) -> Result<Self, RoleError> {
        let registry = Self::new();
        let entries = std::fs::read_dir(dir).map_err(|e| {
            RoleError::Io(format!(
                "cannot read roles directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for path in files {
            let in_file = |source: RoleError| RoleError::InFile {
                path: path.clone(),
                source: Box::new(source),
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|e| in_file(RoleError::Io(e.to_string())))?;
            let role = parse_role(&text).map_err(in_file)?;
            registry
                .insert(role, path.display().to_string(), known_tools)
                .map_err(in_file)?;
        }
        Ok(registry)
    }

    /// Adds a role at runtime; `origin` says where it came from, for errors.
    pub fn register(&self, role: Role, known_tools: &[&str]) -> Result<(), RoleError> {
        self.insert(role, "the API".into(), known_tools)
    }

    fn insert(&self, role: Role, origin: String, known_tools: &[&str]) -> Result<(), RoleError> {
        role.check(known_tools)?;
        // The entry API holds the shard lock only for this check-and-insert.
        match self.roles.entry(role.name.clone()) {
            dashmap::Entry::Occupied(existing) => Err(RoleError::Duplicate {
                name: role.name,
                existing: existing.get().1.clone(),
            }),
            dashmap::Entry::Vacant(slot) => {
                slot.insert((Arc::new(role), origin));
                Ok(())
            }
        }
    }

    /// The role with this name, shared: every executor of a role holds
    /// the same one (its prompt, tools and rules are not copied per
    /// executor).
    pub fn get(&self, name: &str) -> Option<Arc<Role>> {
        self.roles.get(name).map(|r| Arc::clone(&r.0))
    }

    /// Every role, sorted by name.
    pub fn all(&self) -> Vec<Role> {
        let mut roles: Vec<Role> = self.roles.iter().map(|r| Role::clone(&r.0)).collect();
        roles.sort_by(|a, b| a.name.cmp(&b.name));
        roles
    }

    /// Whether no role is registered.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }
}

/// Parses one role file's text.
pub fn parse_role(text: &str) -> Result<Role, RoleError> {
    toml::from_str::<Role>(text)
        .map_err(|e| RoleError::Toml(e.to_string().trim().replace('\n', " ")))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const TOOLS: &[&str] = &["read_file", "write_file", "list_dir"];

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    const GOOD: &str = r#"
name = "researcher"
description = "Finds facts."
system_prompt = "You are a researcher."
tools = ["read_file"]
model = "qwen2.5:7b"
[limits]
max_rounds = 7
timeout_secs = 60
temperature = 0.1
reflect_every = 3
"#;

    #[test]
    fn loads_a_directory_and_applies_limits() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "researcher.toml", GOOD);
        write(dir.path(), "README.md", "not a role");
        let registry = RoleRegistry::load_dir(dir.path(), TOOLS).unwrap();
        let role = registry.get("researcher").unwrap();
        let limits = role.limits_over(&Limits::default());
        assert_eq!(limits.max_rounds, 7);
        assert_eq!(limits.timeout, Duration::from_secs(60));
        assert_eq!(limits.max_tokens, Limits::default().max_tokens);
        assert_eq!(limits.reflect_every, 3);
    }

    #[test]
    fn unknown_field_names_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "bad.toml",
            &format!("{GOOD}\ncolour = \"blue\"\n"),
        );
        let err = RoleRegistry::load_dir(dir.path(), TOOLS)
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains("colour"), "{err}");
    }

    #[test]
    fn missing_field_and_unknown_tool_are_named() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.toml",
            "name = \"a\"\nsystem_prompt = \"x\"\n",
        );
        let err = RoleRegistry::load_dir(dir.path(), TOOLS)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a.toml") && err.contains("description"),
            "{err}"
        );

        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "b.toml",
            &GOOD.replace("[\"read_file\"]", "[\"teleport\"]"),
        );
        let err = RoleRegistry::load_dir(dir.path(), TOOLS)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("b.toml") && err.contains("field `tools`") && err.contains("teleport"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_names_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "one.toml", GOOD);
        write(dir.path(), "two.toml", GOOD);
        let err = RoleRegistry::load_dir(dir.path(), TOOLS)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("two.toml") && err.contains("already exists") && err.contains("one.toml"),
            "{err}"
        );
    }

    #[test]
    fn runtime_registration_checks_like_files() {
        let registry = RoleRegistry::new();
        let role = parse_role(GOOD).unwrap();
        registry.register(role.clone(), TOOLS).unwrap();
        assert!(matches!(
            registry.register(role, TOOLS),
            Err(RoleError::Duplicate { .. })
        ));
        let mut bad = parse_role(GOOD).unwrap();
        bad.name = "other".into();
        bad.limits.temperature = Some(9.0);
        assert!(registry
            .register(bad, TOOLS)
            .unwrap_err()
            .to_string()
            .contains("limits.temperature"));
    }

    #[test]
    fn shipped_roles_load() {
        // The workspace root, two folders above this crate.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../agents");
        let registry = RoleRegistry::load_dir(&dir, hermes_core::tools::builtin::NAMES).unwrap();
        assert!(registry.all().len() >= 4);
    }
}

//! Suite files: a named list of tasks, each with fixture files and checks.
//!
//! ```toml
//! name = "files"                 # optional; defaults to the file stem
//! memory = "fresh"               # optional: "fresh" (default) or "shared"
//! [defaults]                     # optional; any task field but id and goal
//! max_rounds = 10
//!
//! [[task]]
//! id = "admins"
//! category = "normal"            # default "normal"
//! mode = "run"                   # "run" (default) or "plan"
//! goal = "Count the admins in data/users.csv; write just the number to answer.txt."
//! [task.files]
//! "data/users.csv" = "name,role\nalice,admin\nbob,user\n"
//! [[task.check]]
//! file = "answer.txt"
//! equals = "1"
//! ```
//!
//! The file is read as a TOML table and walked by hand rather than through
//! `#[derive(Deserialize)]`, so that every error names the file, the task
//! (by id, or by position when it has none), the check and the field:
//! `evals/files.toml: task `admins`, check 2: field `matches`: bad regex …`.
//!
//! Defaults: scalar fields of `[defaults]` apply where a task leaves them
//! out; `[defaults.files]` are written before the task's own files (a task's
//! file with the same path wins); `[[defaults.check]]` are added after each
//! task's own checks. Every task still needs at least one check of its own,
//! so that no task passes by default.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::check::{relative_path, Check};

use hermes_core::limits::LimitsOverlay;

/// A parsed, validated suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The suite's name (`name`, else the file stem).
    pub name: String,
    /// The file it was read from (used in messages).
    pub path: PathBuf,
    /// Whether runs start with fresh memory or share it.
    pub memory: Memory,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// What long-term memory runs of a suite start with (see
/// [`EvalMemory`](super::runner::EvalMemory)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Memory {
    /// Every run starts with empty memory (the default).
    #[default]
    Fresh,
    /// Runs share one memory across the suite.
    Shared,
}

/// How a task is run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// One agent loop, as `hermes run` (the default).
    #[default]
    Run,
    /// A planner and executors, as `hermes plan`.
    Plan,
}

impl Mode {
    /// `"run"` or `"plan"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Plan => "plan",
        }
    }

    /// `"run"` or `"plan"` as a mode; the error names the known ones.
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text.trim() {
            "run" => Ok(Mode::Run),
            "plan" => Ok(Mode::Plan),
            other => Err(format!("mode `{other}`: use `run` or `plan`")),
        }
    }
}

/// The mode a run id names: `owners@plan` → `plan` (a suite run in
/// several modes, [`Suite::in_modes`]); `None` for a plain id.
pub fn mode_of(task_id: &str) -> Option<&str> {
    task_id
        .rsplit_once('@')
        .map(|(_, mode)| mode)
        .filter(|m| Mode::parse(m).is_ok())
}

/// Limits a task sets, with the suite's `[defaults]` already applied: the
/// one overlay type ([`LimitsOverlay`]). Unset fields mean the task does
/// not say: the runner uses the role's limit if the task names a role,
/// else the command's (as for `hermes run` or `hermes plan`).
pub type TaskLimits = LimitsOverlay;

/// One task of a suite, with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Unique within the suite; letters, digits, `-`, `_`, `.` (it names
    /// the run's folder, `runs/<id>.<rep>/`).
    pub id: String,
    /// Free text used to group results (`normal`, `edge`, `misleading`, ...).
    pub category: String,
    /// One agent or a plan.
    pub mode: Mode,
    /// Run mode: the role whose prompt, tools and limits to use. Plan mode:
    /// passed to the planner as given.
    pub role: Option<String>,
    /// What the agent is asked to do.
    pub goal: String,
    /// Limits the task sets (see [`TaskLimits`]).
    pub limits: TaskLimits,
    /// Fixture files (workspace-relative path → content), validated.
    pub files: BTreeMap<String, String>,
    /// The checks, all of which must hold; never empty.
    pub checks: Vec<Check>,
}

impl Task {
    /// Writes the fixture files into `dir` (normally a fresh, empty
    /// workspace), creating folders as needed.
    pub fn write_fixtures(&self, dir: &Path) -> std::io::Result<()> {
        for (path, content) in &self.files {
            let rel = relative_path(path).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("task `{}`: {e}", self.id),
                )
            })?;
            let full = dir.join(rel);
            let with_path = |e: std::io::Error| {
                std::io::Error::new(e.kind(), format!("{}: {e}", full.display()))
            };
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(with_path)?;
            }
            std::fs::write(&full, content).map_err(with_path)?;
        }
        Ok(())
    }
}

/// Why a suite could not be loaded. Displays as
/// `FILE: task `ID`, check N: field `F`: problem`, leaving out what does not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteError {
    /// The suite file.
    pub file: PathBuf,
    /// The task's id, or `#N` (1-based position) for a task without a usable id.
    pub task: Option<String>,
    /// The check's 1-based position within the task, for errors in a check.
    pub check: Option<usize>,
    /// The field (`max_rounds`, `files`, `defaults.mode`, `matches`, ...).
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(task) = &self.task {
            if task.starts_with('#') {
                write!(f, ": task {task}")?;
            } else {
                write!(f, ": task `{task}`")?;
            }
        }
        if let Some(check) = self.check {
            write!(f, ", check {check}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for SuiteError {}

const TOP_KEYS: &[&str] = &["name", "memory", "defaults", "task"];
const TASK_KEYS: &[&str] = &[
    "id",
    "category",
    "mode",
    "role",
    "goal",
    "max_rounds",
    "timeout_secs",
    "steer",
    "files",
    "check",
];
const DEFAULT_KEYS: &[&str] = &[
    "category",
    "mode",
    "role",
    "max_rounds",
    "timeout_secs",
    "steer",
    "files",
    "check",
];
const FILE_EXPECTS: &[&str] = &["equals", "contains", "matches", "exists"];
const CHECK_KINDS: &[&str] = &[
    "file",
    "status",
    "result_contains",
    "result_matches",
    "max_rounds",
];

impl Suite {
    /// Reads and parses the suite file at `path`.
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError {
            file: path.to_path_buf(),
            task: None,
            check: None,
            field: None,
            problem: format!("cannot read the suite: {e}"),
        })?;
        Suite::parse(&text, path)
    }

    /// Parses suite text; `path` names the file in errors and gives the
    /// default name (its stem).
    pub fn parse(text: &str, path: &Path) -> Result<Suite, SuiteError> {
        let top = Ctx::top(path);
        let table: Table =
            toml::from_str(text).map_err(|e| top.err(None, e.to_string().trim_end()))?;
        top.known_keys(&table, TOP_KEYS, "")?;

        let name = match table.get("name") {
            Some(v) => top.string(v, "name")?,
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "suite".into()),
        };
        let memory = match table.get("memory") {
            None => Memory::Fresh,
            Some(v) => match top.string(v, "memory")?.as_str() {
                "fresh" => Memory::Fresh,
                "shared" => Memory::Shared,
                other => {
                    return Err(top.err(
                        Some("memory"),
                        format!("expected \"fresh\" or \"shared\", got {other:?}"),
                    ))
                }
            },
        };
        let defaults = match table.get("defaults") {
            None => Fields::default(),
            Some(Value::Table(t)) => {
                let ctx = Ctx {
                    prefix: "defaults.",
                    ..top.clone()
                };
                ctx.known_keys(t, DEFAULT_KEYS, "defaults.")?;
                Fields::read(t, &ctx)?
            }
            Some(_) => return Err(top.err(Some("defaults"), "expected a table ([defaults])")),
        };
        let tasks = match table.get("task") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            Some(Value::Array(_)) | None => {
                return Err(top.err(Some("task"), "the suite has no tasks; add a [[task]] table"))
            }
            Some(_) => return Err(top.err(Some("task"), "expected [[task]] tables")),
        };

        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut parsed = Vec::with_capacity(tasks.len());
        for (index, item) in tasks.iter().enumerate() {
            let label = match item.get("id").and_then(Value::as_str) {
                Some(id) if !id.trim().is_empty() => id.to_string(),
                _ => format!("#{}", index + 1),
            };
            let ctx = Ctx {
                task: Some(label),
                ..top.clone()
            };
            let Value::Table(t) = item else {
                return Err(ctx.err(None, "expected a table ([[task]])"));
            };
            ctx.known_keys(t, TASK_KEYS, "")?;
            let task = Fields::read(t, &ctx)?.into_task(&defaults, &ctx)?;
            if let Some(first) = seen.insert(task.id.clone(), index + 1) {
                return Err(ctx.err(
                    Some("id"),
                    format!("duplicate id: task #{first} already uses it"),
                ));
            }
            parsed.push(task);
        }
        Ok(Suite {
            name,
            path: path.to_path_buf(),
            memory,
            tasks: parsed,
        })
    }

    /// The suite restricted to the tasks whose ids are in `ids` (kept in
    /// suite order). An id that names no task is an error that lists the
    /// suite's ids.
    pub fn only<S: AsRef<str>>(&self, ids: &[S]) -> Result<Suite, SuiteError> {
        for id in ids {
            let id = id.as_ref();
            if !self.tasks.iter().any(|t| t.id == id) {
                let known: Vec<&str> = self.tasks.iter().map(|t| t.id.as_str()).collect();
                return Err(SuiteError {
                    file: self.path.clone(),
                    task: Some(id.to_string()),
                    check: None,
                    field: None,
                    problem: format!("no such task; this suite has: {}", known.join(", ")),
                });
            }
        }
        Ok(Suite {
            tasks: self
                .tasks
                .iter()
                .filter(|t| ids.iter().any(|id| id.as_ref() == t.id))
                .cloned()
                .collect(),
            ..self.clone()
        })
    }

    /// Every task run in each of `modes` instead of the mode it sets: with
    /// one mode, the same ids; with several, one task per mode, its id
    /// suffixed `@run` / `@plan` (so pass^k and the run folders stay per
    /// mode). A task whose checks need plan mode (`status = "failed"`)
    /// cannot run as one agent: that is an error naming it.
    pub fn in_modes(&self, modes: &[Mode]) -> Result<Suite, SuiteError> {
        let mut tasks = Vec::new();
        for task in &self.tasks {
            for &mode in modes {
                let plan_only = task.checks.iter().find_map(|c| match c {
                    Check::Status(s) if s.plan_only() => Some(*s),
                    _ => None,
                });
                if let (Mode::Run, Some(status)) = (mode, plan_only) {
                    return Err(SuiteError {
                        file: self.path.clone(),
                        task: Some(task.id.clone()),
                        check: None,
                        field: Some("mode".into()),
                        problem: format!(
                            "its check `status = \"{}\"` only happens in plan mode; it cannot run in mode run",
                            status.as_str()
                        ),
                    });
                }
                let id = if modes.len() > 1 {
                    format!("{}@{}", task.id, mode.as_str())
                } else {
                    task.id.clone()
                };
                tasks.push(Task {
                    id,
                    mode,
                    ..task.clone()
                });
            }
        }
        Ok(Suite {
            tasks,
            ..self.clone()
        })
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }
}

mod fields;

use fields::{Ctx, Fields};
#[cfg(test)]
mod tests;

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

use super::check::{relative_path, Check, FileExpect, Pattern};
use hermes_core::agent::steer::Steers;
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

/// Where an error happened, so each one can name it.
#[derive(Clone)]
struct Ctx<'a> {
    file: &'a Path,
    task: Option<String>,
    check: Option<usize>,
    /// Prepended to field names (`defaults.`).
    prefix: &'static str,
}

impl<'a> Ctx<'a> {
    fn top(file: &'a Path) -> Self {
        Ctx {
            file,
            task: None,
            check: None,
            prefix: "",
        }
    }

    fn err(&self, field: Option<&str>, problem: impl Into<String>) -> SuiteError {
        SuiteError {
            file: self.file.to_path_buf(),
            task: self.task.clone(),
            check: self.check,
            field: field.map(|f| format!("{}{f}", self.prefix)),
            problem: problem.into(),
        }
    }

    fn known_keys(
        &self,
        table: &Table,
        known: &[&str],
        shown_prefix: &str,
    ) -> Result<(), SuiteError> {
        for key in table.keys() {
            if !known.contains(&key.as_str()) {
                let near = known
                    .iter()
                    .map(|k| (strsim::jaro_winkler(k, key), k))
                    .filter(|(score, _)| *score > 0.8)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, k)| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                return Err(SuiteError {
                    field: Some(format!("{shown_prefix}{key}")),
                    ..self.err(
                        None,
                        format!("unknown field{near}; expected one of: {}", known.join(", ")),
                    )
                });
            }
        }
        Ok(())
    }

    fn string(&self, v: &Value, field: &str) -> Result<String, SuiteError> {
        match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(
                Some(field),
                format!("expected a string, got {}", other.type_str()),
            )),
        }
    }

    fn non_empty(&self, v: &Value, field: &str) -> Result<String, SuiteError> {
        let s = self.string(v, field)?;
        if s.trim().is_empty() {
            return Err(self.err(Some(field), "must not be empty"));
        }
        Ok(s)
    }

    fn positive(&self, v: &Value, field: &str, max: u64) -> Result<u64, SuiteError> {
        match v {
            Value::Integer(n) if *n >= 1 && (*n as u64) <= max => Ok(*n as u64),
            Value::Integer(n) => {
                Err(self.err(Some(field), format!("must be between 1 and {max}, got {n}")))
            }
            other => Err(self.err(
                Some(field),
                format!("expected a whole number, got {}", other.type_str()),
            )),
        }
    }
}

/// A task's or the defaults' fields as written, before defaults are applied.
#[derive(Default)]
struct Fields {
    id: Option<String>,
    category: Option<String>,
    mode: Option<Mode>,
    role: Option<String>,
    goal: Option<String>,
    max_rounds: Option<u32>,
    timeout_secs: Option<u64>,
    steer: Steers,
    files: BTreeMap<String, String>,
    /// Checks as written, with the status checks' names kept for the mode check.
    checks: Vec<Check>,
}

impl Fields {
    fn read(t: &Table, ctx: &Ctx) -> Result<Fields, SuiteError> {
        let mut f = Fields::default();
        if let Some(v) = t.get("id") {
            let id = ctx.non_empty(v, "id")?;
            let ok = !id.starts_with('.')
                && id
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !ok {
                return Err(ctx.err(
                    Some("id"),
                    format!(
                        "{id:?} must be letters, digits, `-`, `_` or `.` and not start with `.` \
                         (it names the run's folder)"
                    ),
                ));
            }
            f.id = Some(id);
        }
        if let Some(v) = t.get("category") {
            f.category = Some(ctx.non_empty(v, "category")?.trim().to_string());
        }
        if let Some(v) = t.get("mode") {
            f.mode = Some(match ctx.string(v, "mode")?.as_str() {
                "run" => Mode::Run,
                "plan" => Mode::Plan,
                other => {
                    return Err(ctx.err(
                        Some("mode"),
                        format!("expected \"run\" or \"plan\", got {other:?}"),
                    ))
                }
            });
        }
        if let Some(v) = t.get("role") {
            f.role = Some(ctx.non_empty(v, "role")?.trim().to_string());
        }
        if let Some(v) = t.get("goal") {
            f.goal = Some(ctx.non_empty(v, "goal")?);
        }
        if let Some(v) = t.get("max_rounds") {
            f.max_rounds = Some(ctx.positive(v, "max_rounds", u32::MAX as u64)? as u32);
        }
        if let Some(v) = t.get("timeout_secs") {
            f.timeout_secs = Some(ctx.positive(v, "timeout_secs", i64::MAX as u64)?);
        }
        if let Some(v) = t.get("steer") {
            let steer: Steers = v.clone().try_into().map_err(|e: toml::de::Error| {
                ctx.err(
                    Some("steer"),
                    format!("expected a table of NAME = true|false: {}", e.message()),
                )
            })?;
            steer
                .check()
                .map_err(|e| ctx.err(Some("steer"), e.to_string()))?;
            f.steer = steer;
        }
        match t.get("files") {
            None => {}
            Some(Value::Table(files)) => {
                for (path, content) in files {
                    relative_path(path).map_err(|e| ctx.err(Some("files"), e))?;
                    let Value::String(content) = content else {
                        return Err(ctx.err(
                            Some("files"),
                            format!(
                                "the content of {path:?} must be a string, got {}",
                                content.type_str()
                            ),
                        ));
                    };
                    f.files.insert(path.clone(), content.clone());
                }
            }
            Some(other) => {
                return Err(ctx.err(
                    Some("files"),
                    format!(
                        "expected a table of path = \"content\", got {}",
                        other.type_str()
                    ),
                ))
            }
        }
        match t.get("check") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let ctx = Ctx {
                        check: Some(i + 1),
                        ..ctx.clone()
                    };
                    let Value::Table(check) = item else {
                        return Err(ctx.err(Some("check"), "expected a table ([[task.check]])"));
                    };
                    f.checks.push(parse_check(check, &ctx)?);
                }
            }
            Some(other) => {
                return Err(ctx.err(
                    Some("check"),
                    format!("expected [[task.check]] tables, got {}", other.type_str()),
                ))
            }
        }
        Ok(f)
    }

    fn into_task(self, defaults: &Fields, ctx: &Ctx) -> Result<Task, SuiteError> {
        let id = self
            .id
            .ok_or_else(|| ctx.err(Some("id"), "missing; every task needs a unique id"))?;
        let goal = self
            .goal
            .ok_or_else(|| ctx.err(Some("goal"), "missing; say what the agent must do"))?;
        if self.checks.is_empty() {
            return Err(ctx.err(
                Some("check"),
                "the task has no checks; add a [[task.check]] table (a file, status, result or max_rounds check)",
            ));
        }
        let mode = self.mode.or(defaults.mode).unwrap_or_default();
        let mut files = defaults.files.clone();
        files.extend(self.files);
        let mut checks = self.checks;
        checks.extend(defaults.checks.iter().cloned());
        if mode == Mode::Run {
            for (i, check) in checks.iter().enumerate() {
                if let Check::Status(status) = check {
                    if status.plan_only() {
                        let ctx = Ctx {
                            check: Some(i + 1),
                            ..ctx.clone()
                        };
                        return Err(ctx.err(
                            Some("status"),
                            format!("`{status}` only happens in plan mode; this task runs one agent (mode = \"run\")"),
                        ));
                    }
                }
            }
        }
        Ok(Task {
            id,
            category: self
                .category
                .or_else(|| defaults.category.clone())
                .unwrap_or_else(|| "normal".into()),
            mode,
            role: self.role.or_else(|| defaults.role.clone()),
            goal,
            limits: TaskLimits {
                max_rounds: self.max_rounds.or(defaults.max_rounds),
                timeout_secs: self.timeout_secs.or(defaults.timeout_secs),
                steer: defaults.steer.overlaid(&self.steer),
                ..TaskLimits::default()
            },
            files,
            checks,
        })
    }
}

/// One `[[task.check]]` table: exactly one kind, named by its keys.
fn parse_check(t: &Table, ctx: &Ctx) -> Result<Check, SuiteError> {
    let mut allowed: Vec<&str> = CHECK_KINDS.to_vec();
    allowed.extend(FILE_EXPECTS);
    ctx.known_keys(t, &allowed, "")?;

    let kinds: Vec<&str> = CHECK_KINDS
        .iter()
        .copied()
        .filter(|k| t.contains_key(*k))
        .collect();
    let expects: Vec<&str> = FILE_EXPECTS
        .iter()
        .copied()
        .filter(|k| t.contains_key(*k))
        .collect();
    let usage = "give exactly one of: file (with one of equals, contains, matches, exists), \
                 status, result_contains, result_matches, max_rounds";
    match kinds.as_slice() {
        [] if expects.is_empty() => return Err(ctx.err(None, format!("empty check; {usage}"))),
        [] => {
            return Err(ctx.err(
                Some(expects[0]),
                "needs `file` (the workspace file to check)",
            ))
        }
        [_] => {}
        [first, second, ..] => {
            return Err(ctx.err(
                Some(second),
                format!(
                    "a check has exactly one kind, and this one also has `{first}`; \
                     split them into two [[task.check]] tables"
                ),
            ))
        }
    }
    let kind = kinds[0];
    if kind != "file" {
        if let Some(stray) = expects.first() {
            return Err(ctx.err(
                Some(stray),
                format!("only a file check takes `{stray}`, and this is a `{kind}` check"),
            ));
        }
    }
    let value = &t[kind];
    let regex = |source: String, field: &str| {
        Pattern::new(&source)
            .map_err(|e| ctx.err(Some(field), format!("bad regex {source:?}: {e}")))
    };
    Ok(match kind {
        "file" => {
            let path = ctx.non_empty(value, "file")?;
            relative_path(&path).map_err(|e| ctx.err(Some("file"), e))?;
            let expect = match expects.as_slice() {
                [] => {
                    return Err(ctx.err(
                        Some("file"),
                        "a file check needs one of: equals, contains, matches, exists",
                    ))
                }
                [_] => expects[0],
                [first, second, ..] => {
                    return Err(ctx.err(
                        Some(second),
                        format!(
                            "a file check takes exactly one of equals, contains, matches, exists, \
                             and this one also has `{first}`; split them into two [[task.check]] tables"
                        ),
                    ))
                }
            };
            let v = &t[expect];
            let expect = match expect {
                "equals" => FileExpect::Equals(ctx.string(v, "equals")?),
                "contains" => FileExpect::Contains(ctx.non_empty(v, "contains")?),
                "matches" => FileExpect::Matches(regex(ctx.string(v, "matches")?, "matches")?),
                _ => match v {
                    Value::Boolean(b) => FileExpect::Exists(*b),
                    other => {
                        return Err(ctx.err(
                            Some("exists"),
                            format!("expected true or false, got {}", other.type_str()),
                        ))
                    }
                },
            };
            Check::File { path, expect }
        }
        "status" => Check::Status(
            ctx.string(value, "status")?
                .parse()
                .map_err(|e: String| ctx.err(Some("status"), e))?,
        ),
        "result_contains" => Check::ResultContains(ctx.non_empty(value, "result_contains")?),
        "result_matches" => Check::ResultMatches(regex(
            ctx.string(value, "result_matches")?,
            "result_matches",
        )?),
        _ => Check::MaxRounds(ctx.positive(value, "max_rounds", u32::MAX as u64)? as u32),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::RunStatus;
    use hermes_core::limits::Limits;

    fn parse(text: &str) -> Result<Suite, SuiteError> {
        Suite::parse(text, Path::new("evals/demo.toml"))
    }

    fn err(text: &str) -> SuiteError {
        parse(text).expect_err("the suite should not parse")
    }

    const GOOD: &str = r#"
[defaults]
max_rounds = 10
timeout_secs = 300

[[task]]
id = "admins"
category = "normal"
goal = "Count the admins."
[task.files]
"data/users.csv" = "name,role\nalice,admin\nbob,user\n"
[[task.check]]
file = "answer.txt"
equals = "1"
[[task.check]]
status = "finished"

[[task]]
id = "plan-it"
mode = "plan"
role = "analyst"
category = "multi-step"
goal = "Plan something."
max_rounds = 4
[[task.check]]
result_matches = "\\d+"
[[task.check]]
max_rounds = 30
"#;

    #[test]
    fn a_good_suite_parses_with_defaults_applied() {
        let suite = parse(GOOD).unwrap();
        assert_eq!(suite.name, "demo");
        assert_eq!(suite.memory, Memory::Fresh);
        assert_eq!(suite.tasks.len(), 2);
        let a = &suite.tasks[0];
        assert_eq!(a.id, "admins");
        assert_eq!(a.mode, Mode::Run);
        assert_eq!(
            a.limits,
            TaskLimits {
                max_rounds: Some(10),
                timeout_secs: Some(300),
                ..TaskLimits::default()
            }
        );
        assert_eq!(
            a.files["data/users.csv"],
            "name,role\nalice,admin\nbob,user\n"
        );
        assert_eq!(
            a.checks,
            vec![
                Check::File {
                    path: "answer.txt".into(),
                    expect: FileExpect::Equals("1".into())
                },
                Check::Status(RunStatus::Finished),
            ]
        );
        let b = &suite.tasks[1];
        assert_eq!(b.mode, Mode::Plan);
        assert_eq!(b.role.as_deref(), Some("analyst"));
        assert_eq!(b.limits.max_rounds, Some(4));
        assert_eq!(b.limits.timeout_secs, Some(300));
        assert_eq!(b.checks[1], Check::MaxRounds(30));
    }

    #[test]
    fn name_and_memory_are_read() {
        let suite = parse(&format!("name = \"x\"\nmemory = \"shared\"\n{GOOD}")).unwrap();
        assert_eq!(suite.name, "x");
        assert_eq!(suite.memory, Memory::Shared);
        let e = err(&format!("memory = \"forever\"\n{GOOD}"));
        assert_eq!(e.field.as_deref(), Some("memory"));
    }

    #[test]
    fn unknown_task_field_names_the_file_the_task_and_the_field() {
        let e = err(r#"
[[task]]
id = "admins"
goal = "g"
fiels = { "a.txt" = "x" }
[[task.check]]
status = "finished"
"#);
        assert_eq!(e.task.as_deref(), Some("admins"));
        assert_eq!(e.field.as_deref(), Some("fiels"));
        let msg = e.to_string();
        assert!(msg.starts_with("evals/demo.toml: task `admins`: field `fiels`: unknown field (did you mean `files`?)"), "{msg}");
    }

    #[test]
    fn unknown_check_and_defaults_fields_are_named() {
        let e = err(r#"
[[task]]
id = "t"
goal = "g"
[[task.check]]
file = "a.txt"
equal = "1"
"#);
        assert_eq!(
            (e.task.as_deref(), e.check, e.field.as_deref()),
            (Some("t"), Some(1), Some("equal"))
        );
        assert!(
            e.to_string().contains("task `t`, check 1: field `equal`"),
            "{e}"
        );

        let e = err("[defaults]\nid = \"x\"\n[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("defaults.id"));
        let e = err("[defaults]\nmode = \"swarm\"\n[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("defaults.mode"));
        let e = err(&format!("colour = 1\n{GOOD}"));
        assert_eq!((e.task, e.field.as_deref()), (None, Some("colour")));
    }

    #[test]
    fn a_task_without_a_check_is_an_error() {
        let e = err("[[task]]\nid = \"lonely\"\ngoal = \"g\"\n");
        assert_eq!(
            (e.task.as_deref(), e.field.as_deref()),
            (Some("lonely"), Some("check"))
        );
        assert!(e.problem.contains("no checks"), "{e}");
        // Default checks do not count: a task needs a check of its own.
        let e = err(
            "[[defaults.check]]\nstatus = \"finished\"\n[[task]]\nid = \"lonely\"\ngoal = \"g\"\n",
        );
        assert_eq!(e.task.as_deref(), Some("lonely"));
    }

    #[test]
    fn a_duplicate_id_is_an_error() {
        let e = err(r#"
[[task]]
id = "same"
goal = "g"
[[task.check]]
status = "finished"
[[task]]
id = "same"
goal = "h"
[[task.check]]
status = "finished"
"#);
        assert_eq!(
            (e.task.as_deref(), e.field.as_deref()),
            (Some("same"), Some("id"))
        );
        assert!(e.problem.contains("task #1 already uses it"), "{e}");
    }

    #[test]
    fn fixture_paths_outside_the_workspace_are_errors_naming_the_task() {
        for path in ["../x", "/etc/passwd", "a/../../b"] {
            let e = err(&format!(
                "[[task]]\nid = \"escape\"\ngoal = \"g\"\n[task.files]\n{path:?} = \"x\"\n[[task.check]]\nstatus = \"finished\"\n"
            ));
            assert_eq!(e.task.as_deref(), Some("escape"), "{path}");
            assert_eq!(e.field.as_deref(), Some("files"));
            assert!(e.to_string().contains(path), "{e}");
        }
        let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\n[[task.check]]\nfile = \"../answer.txt\"\nexists = true\n");
        assert_eq!((e.check, e.field.as_deref()), (Some(1), Some("file")));
    }

    #[test]
    fn a_bad_regex_is_an_error_naming_the_task() {
        let e = err("[[task]]\nid = \"re\"\ngoal = \"g\"\n[[task.check]]\nfile = \"a.txt\"\nmatches = \"(unclosed\"\n");
        assert_eq!(
            (e.task.as_deref(), e.check, e.field.as_deref()),
            (Some("re"), Some(1), Some("matches"))
        );
        assert!(e.problem.starts_with("bad regex \"(unclosed\""), "{e}");
        let e =
            err("[[task]]\nid = \"re\"\ngoal = \"g\"\n[[task.check]]\nresult_matches = \"[\"\n");
        assert_eq!(e.field.as_deref(), Some("result_matches"));
    }

    #[test]
    fn a_check_has_exactly_one_kind() {
        let check = |body: &str| {
            err(&format!(
                "[[task]]\nid = \"k\"\ngoal = \"g\"\n[[task.check]]\n{body}\n"
            ))
        };
        let e = check("file = \"a\"\nequals = \"1\"\ncontains = \"1\"");
        assert_eq!(e.field.as_deref(), Some("contains"));
        let e = check("file = \"a\"");
        assert_eq!(e.field.as_deref(), Some("file"));
        let e = check("equals = \"1\"");
        assert_eq!(e.field.as_deref(), Some("equals"));
        assert!(e.problem.contains("needs `file`"));
        let e = check("status = \"finished\"\nresult_contains = \"x\"");
        assert_eq!(e.field.as_deref(), Some("result_contains"));
        let e = check("status = \"finished\"\nequals = \"x\"");
        assert_eq!(e.field.as_deref(), Some("equals"));
        let e = check("file = \"a\"\nstatus = \"finished\"\nexists = true");
        assert_eq!(e.field.as_deref(), Some("status"));
        let e = check("status = \"done\"");
        assert!(e.problem.contains("unknown status"), "{e}");
        let e = check("max_rounds = 0");
        assert_eq!(e.field.as_deref(), Some("max_rounds"));
        let e = check("file = \"a\"\nexists = \"yes\"");
        assert_eq!(e.field.as_deref(), Some("exists"));
        let e = check("status = \"failed\"");
        assert!(e.problem.contains("only happens in plan mode"), "{e}");
    }

    #[test]
    fn missing_id_or_goal_and_bad_values_are_named() {
        let e = err("[[task]]\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(
            (e.task.as_deref(), e.field.as_deref()),
            (Some("#1"), Some("id"))
        );
        assert!(e.to_string().contains("task #1: field `id`"), "{e}");
        let e = err("[[task]]\nid = \"t\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("goal"));
        let e =
            err("[[task]]\nid = \"a/b\"\ngoal = \"g\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("id"));
        let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\nmax_rounds = -1\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("max_rounds"));
        let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\ntimeout_secs = \"300\"\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("timeout_secs"));
        let e = err("name = \"x\"\n");
        assert_eq!(e.field.as_deref(), Some("task"));
        let e = err("[[task]\n");
        assert!(e.to_string().starts_with("evals/demo.toml: "), "{e}");
    }

    #[test]
    fn default_files_and_checks_are_merged() {
        let suite = parse(
            r#"
[defaults]
category = "edge"
[defaults.files]
"shared.txt" = "base"
"a.txt" = "from defaults"
[[defaults.check]]
status = "finished"
[[task]]
id = "t"
goal = "g"
[task.files]
"a.txt" = "from task"
[[task.check]]
file = "out.txt"
exists = true
"#,
        )
        .unwrap();
        let t = &suite.tasks[0];
        assert_eq!(t.category, "edge");
        assert_eq!(t.files["shared.txt"], "base");
        assert_eq!(t.files["a.txt"], "from task");
        assert_eq!(t.checks.len(), 2);
        assert_eq!(t.checks[1], Check::Status(RunStatus::Finished));
    }

    #[test]
    fn only_keeps_the_named_tasks_and_rejects_unknown_ids() {
        let suite = parse(GOOD).unwrap();
        let one = suite.only(&["plan-it"]).unwrap();
        assert_eq!(one.tasks.len(), 1);
        assert_eq!(one.tasks[0].id, "plan-it");
        let e = suite.only(&["admins", "nope"]).unwrap_err();
        assert_eq!(e.task.as_deref(), Some("nope"));
        assert!(e.problem.contains("admins, plan-it"), "{e}");
    }

    #[test]
    fn fixtures_are_written_into_the_workspace() {
        let suite = parse(GOOD).unwrap();
        let dir = tempfile::tempdir().unwrap();
        suite.tasks[0].write_fixtures(dir.path()).unwrap();
        let written = std::fs::read_to_string(dir.path().join("data/users.csv")).unwrap();
        assert_eq!(written, "name,role\nalice,admin\nbob,user\n");
    }

    #[test]
    fn task_limits_apply_over_a_base() {
        let limits = TaskLimits {
            max_rounds: Some(7),
            ..TaskLimits::default()
        };
        let base = Limits::default();
        let applied = limits.apply(&base);
        assert_eq!(applied.max_rounds, 7);
        assert_eq!(applied.timeout, base.timeout);
    }

    #[test]
    fn steers_are_switched_by_defaults_and_tasks() {
        let suite = parse(
            "[defaults.steer]\nread_check = false\n\n[[task]]\nid = \"a\"\ngoal = \"g\"\n[task.steer]\nlabel_check = false\n[[task.check]]\nstatus = \"finished\"\n\n[[task]]\nid = \"b\"\ngoal = \"g\"\n[task.steer]\nread_check = true\n[[task.check]]\nstatus = \"finished\"\n",
        )
        .unwrap();
        let a = suite.tasks[0].limits.apply(&Limits::default());
        assert!(!a.steer.is_on("read_check") && !a.steer.is_on("label_check"));
        assert!(a.steer.is_on("finish_check"));
        let b = suite.tasks[1].limits.apply(&Limits::default());
        assert!(b.steer.is_on("read_check"));
        let e = err("[[task]]\nid = \"t\"\ngoal = \"g\"\n[task.steer]\nread_chek = false\n[[task.check]]\nstatus = \"finished\"\n");
        assert_eq!(e.field.as_deref(), Some("steer"));
        assert!(e.to_string().contains("read_check"), "{e}");
    }

    /// The suites shipped in `evals/` parse, and every plan task asks for at
    /// least two of the roles in `agents/`.
    #[test]
    fn shipped_suites_parse() {
        // The workspace root, two folders above this crate.
        let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let files = Suite::load(&root.join("evals/files.toml")).unwrap();
        assert!(files.tasks.len() >= 40, "{}", files.tasks.len());
        // The held-out suite (never tuned on): at least 30 tasks.
        let test = Suite::load(&root.join("evals/test.toml")).unwrap();
        assert!(test.tasks.len() >= 30, "{}", test.tasks.len());
        assert!(files.tasks.iter().all(|t| t.mode == Mode::Run));
        for category in ["normal", "edge", "misleading", "multi-step", "chinese"] {
            assert!(
                files.tasks.iter().any(|t| t.category == category),
                "{category}"
            );
        }

        let roles: Vec<String> = std::fs::read_dir(root.join("agents"))
            .unwrap()
            .filter_map(|e| {
                let p = e.ok()?.path();
                (p.extension()? == "toml")
                    .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
            })
            .collect();
        let plan = Suite::load(&root.join("evals/plan.toml")).unwrap();
        assert!(plan.tasks.len() >= 12, "{}", plan.tasks.len());
        // The held-out plan suite (session 34; never tuned on).
        let plan_test = Suite::load(&root.join("evals/plan-test.toml")).unwrap();
        assert!(plan_test.tasks.len() >= 12, "{}", plan_test.tasks.len());
        for task in plan.tasks.iter().chain(&plan_test.tasks) {
            assert_eq!(task.mode, Mode::Plan, "{}", task.id);
            let named = roles
                .iter()
                .filter(|r| task.goal.contains(r.as_str()))
                .count();
            // A goal in another language names the roles in its own words.
            assert!(
                named >= 2 || task.category == "non-english",
                "task {} names {named} roles",
                task.id
            );
        }
    }
}

//! The walk over a suite file's TOML: each task's and the defaults' fields
//! read by hand, so that every error names the file, the task, the check and
//! the field ([`Ctx`]).

use std::collections::BTreeMap;
use std::path::Path;

use toml::{Table, Value};

use super::super::check::{relative_path, Check, FileExpect, Pattern};
use super::{Mode, SuiteError, Task, TaskLimits, CHECK_KINDS, FILE_EXPECTS};
use hermes_core::agent::steer::Steers;

/// Where an error happened, so each one can name it.
#[derive(Clone)]
pub(super) struct Ctx<'a> {
    pub(super) file: &'a Path,
    pub(super) task: Option<String>,
    pub(super) check: Option<usize>,
    /// Prepended to field names (`defaults.`).
    pub(super) prefix: &'static str,
}

impl<'a> Ctx<'a> {
    pub(super) fn top(file: &'a Path) -> Self {
        Ctx {
            file,
            task: None,
            check: None,
            prefix: "",
        }
    }

    pub(super) fn err(&self, field: Option<&str>, problem: impl Into<String>) -> SuiteError {
        SuiteError {
            file: self.file.to_path_buf(),
            task: self.task.clone(),
            check: self.check,
            field: field.map(|f| format!("{}{f}", self.prefix)),
            problem: problem.into(),
        }
    }

    pub(super) fn known_keys(
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

    pub(super) fn string(&self, v: &Value, field: &str) -> Result<String, SuiteError> {
        match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(
                Some(field),
                format!("expected a string, got {}", other.type_str()),
            )),
        }
    }

    pub(super) fn non_empty(&self, v: &Value, field: &str) -> Result<String, SuiteError> {
        let s = self.string(v, field)?;
        if s.trim().is_empty() {
            return Err(self.err(Some(field), "must not be empty"));
        }
        Ok(s)
    }

    pub(super) fn positive(&self, v: &Value, field: &str, max: u64) -> Result<u64, SuiteError> {
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
pub(super) struct Fields {
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
    pub(super) fn read(t: &Table, ctx: &Ctx) -> Result<Fields, SuiteError> {
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

    pub(super) fn into_task(self, defaults: &Fields, ctx: &Ctx) -> Result<Task, SuiteError> {
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

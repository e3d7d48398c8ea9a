//! `run_code {language, code, timeout_secs?}`: Python or Bash in a bubblewrap sandbox.
//!
//! The tool runs the program, then the list of repairs (`repairs/`), then
//! says what happened. With **code actions** (on by default), Python code
//! runs after a prelude (`prelude.py`) that makes the workspace tools plain
//! functions (`read_file(path)`, `write_file(path, content)`,
//! `list_dir(path)`, `search_files(text, path)`, under the same workspace
//! policy) and keeps the program's variables from one call to the next
//! within a run (in the run's session folder, see
//! [`session`](crate::tools::session)). Where the workspace is read-only
//! for code, a small workspace is copied for each call
//! ([`Scratch`]); what a program that succeeded wrote there is **saved**
//! into the workspace (`saved`, with a diff), unless saving is off, when
//! it is only shown (`unsaved_writes`). A trial call
//! ([`session::trial`]) always runs on a copy and saves nothing.

mod hints;
mod line_shape;
mod prelude;
pub mod repairs;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use self::repairs::{RepairContext, Stage, ORDER};
use crate::tools::sandbox::{self, SandboxConfig, SandboxOutput};
use crate::tools::scratch::{Change, Scratch};
use crate::tools::Workspace;
use crate::tools::{session, ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec};

pub use repairs::escape_newlines_in_strings;

/// Default wall-clock limit for one run.
pub const DEFAULT_CODE_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest run the model may ask for.
pub const MIN_CODE_TIMEOUT: Duration = Duration::from_millis(100);
/// Longest run the model may ask for.
pub const MAX_CODE_TIMEOUT: Duration = Duration::from_secs(120);

/// Said in the result when the code wrote files in its copy of the
/// workspace that were not saved (`unsaved_writes`).
pub const UNSAVED_NOTE: &str = "run_code cannot change the workspace: the files this code wrote (unsaved_writes, with what they hold) were not saved. Save what the goal needs with write_file";

/// Said when a failed program's writes were not saved.
pub const FAILED_UNSAVED_NOTE: &str = "the program failed, so the files it wrote (unsaved_writes) were not saved; fix it and run it again, or save what the goal needs with write_file";

/// Most workspace calls listed in the result.
const MAX_LISTED_CALLS: usize = 20;

/// How `run_code` treats the model's code beyond running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeOptions {
    /// The workspace tools as Python functions, and variables kept from
    /// one call to the next within a run.
    pub code_actions: bool,
    /// What a program that succeeded wrote in its copy of a read-only
    /// workspace is saved into the workspace.
    pub save_writes: bool,
    /// Python's `code` is decoded under the line shape of `line_shape.rs`
    /// where the model's decoding is constrained to the decision schema.
    /// Off by default: it did not help either suite (EVALS.md, section 26).
    pub line_shape: bool,
}

impl Default for CodeOptions {
    fn default() -> Self {
        Self {
            code_actions: true,
            save_writes: true,
            line_shape: false,
        }
    }
}

/// Runs code in the sandbox described by its config.
pub struct RunCode {
    config: SandboxConfig,
    options: CodeOptions,
}

/// One execution: its output, the copy it ran in (if any) and what it did
/// through the workspace functions.
struct Executed {
    output: SandboxOutput,
    scratch: Option<Scratch>,
    calls: Vec<Value>,
    variables: Option<Variables>,
}

/// The variables a program left for the next call, and those it set that
/// could not be kept (functions, open files, ...).
struct Variables {
    kept: Vec<String>,
    dropped: Vec<String>,
}

impl RunCode {
    /// The tool with the default [`CodeOptions`]; register it only after
    /// [`sandbox::probe`] succeeded.
    pub fn new(config: SandboxConfig) -> Self {
        Self::with_options(config, CodeOptions::default())
    }

    /// The tool with `options`.
    pub fn with_options(config: SandboxConfig, options: CodeOptions) -> Self {
        Self { config, options }
    }
}

/// `run_code`'s args schema with Python's `code` held to the line shape
/// of [`line_shape`] (headers end at their colon, blocks are indented):
/// one branch per language, so Bash stays free.
fn python_lines_shaped(args: Value) -> Value {
    let branch = |language: &str, pattern: Option<String>| {
        let mut schema = args.clone();
        schema["properties"]["language"] = json!({"const": language});
        if let Some(pattern) = pattern {
            schema["properties"]["code"]["pattern"] = Value::String(pattern);
        }
        schema
    };
    json!({"anyOf": [branch("python", Some(line_shape::python_line_pattern())), branch("bash", None)]})
}

#[async_trait]
impl Tool for RunCode {
    fn spec(&self) -> ToolSpec {
        // How the workspace behaves for code, and how a result is kept.
        let (workspace, save) = match (self.config.allow_writes, self.options.save_writes) {
            (true, _) => (" and is read-write", ""),
            (false, true) => ("", " Files the code writes (open(..., 'w') or write_file) are saved to the workspace when the code succeeds."),
            (false, false) => (" and is read-only", " To save a result, print it and write it with write_file."),
        };
        let actions = if self.options.code_actions {
            " In Python, the workspace tools are functions: read_file(path) returns the text, write_file(path, content) saves it, list_dir(path) returns the names, search_files(text, path) returns the matching lines; variables you set stay defined in the next run_code call of this task."
        } else {
            ""
        };
        let description = format!(
            "Run Python or Bash code in a sandbox and return stdout, stderr, exit_code, timed_out and killed. \
             The sandbox has no network (even 127.0.0.1 is unreachable) and a read-only system. The workspace is the \
             working directory{workspace}, so open('data.csv') reads the workspace file; /tmp is private scratch \
             space that disappears after the run.{save}{actions} Limits: timeout_secs wall time (default {}s, at most {}s), {} MiB of \
             memory, {} processes. Print what you need to see.",
            DEFAULT_CODE_TIMEOUT.as_secs(),
            MAX_CODE_TIMEOUT.as_secs(),
            self.config.memory_bytes >> 20,
            self.config.max_processes,
        );
        let spec = ToolSpec::new("run_code", description)
            .param(ParamSpec::new("language", ParamKind::String, "the interpreter").required().one_of(["python", "bash"]))
            .param(ParamSpec::new("code", ParamKind::String, "the program text").required())
            .param(ParamSpec::new("timeout_secs", ParamKind::Number, "wall-clock limit in seconds (fractions allowed)"))
            // The example reads a CSV by its header: `csv.reader` counted the
            // header as a row and picked columns by guessed positions
            // (EVALS.md, section 13). Executors copy it as the program itself
            // onto logs and scripts (§40), yet without it the held-out suite
            // fell from 21 to 11 of 38 in one sitting (§41): the model then
            // splits CSV lines by hand, header included. It stays until a
            // form that keeps the CSV lesson without a program to copy is
            // measured.
            .example(json!({"language": "python", "code": "import csv\nrows = list(csv.DictReader(open('data.csv')))\nprint(len(rows), rows[0] if rows else 'no data rows')"}))
            .timeout(MAX_CODE_TIMEOUT + Duration::from_secs(10))
            .effect(ToolEffect::RunsCode)
            // A trial runs on a copy and saves nothing (`execute`).
            .triable();
        if self.options.line_shape {
            spec.refine_args(python_lines_shaped)
        } else {
            spec
        }
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let mut code = super::required_str(&args, "code")?.to_string();
        let language = super::required_str(&args, "language")?;
        if !matches!(language, "python" | "bash") {
            return Err(ToolError::new(format!(
                "parameter `language` must be `python` or `bash`, got `{language}`"
            )));
        }
        let timeout = args
            .get("timeout_secs")
            .and_then(Value::as_f64)
            .filter(|secs| secs.is_finite())
            .map_or(DEFAULT_CODE_TIMEOUT, |secs| {
                Duration::from_secs_f64(secs.clamp(
                    MIN_CODE_TIMEOUT.as_secs_f64(),
                    MAX_CODE_TIMEOUT.as_secs_f64(),
                ))
            });
        let mut notes: Vec<String> = Vec::new();
        for repair in ORDER.iter().filter(|r| r.stage() == Stage::Before) {
            let cx = self.repair_context(&code, language, None);
            if let Some(proposal) = repair.propose(&cx).await {
                code = proposal.code;
                notes.push(repair.note(&[proposal.detail]));
            }
        }
        let mut run = self.execute(language, &code, timeout).await?;
        for repair in ORDER.iter().filter(|r| r.stage() == Stage::After) {
            if repair.read_only_workspace() && self.config.allow_writes {
                continue;
            }
            let mut details = Vec::new();
            while details.len() < repair.times() {
                let cx = self.repair_context(&code, language, Some(&run.output));
                let Some(proposal) = repair.propose(&cx).await else {
                    break;
                };
                let rerun = self.execute(language, &proposal.code, timeout).await?;
                if !repair.keep(&rerun.output) {
                    break;
                }
                run = rerun;
                code = proposal.code;
                details.push(proposal.detail);
            }
            if !details.is_empty() {
                notes.push(repair.note(&details));
            }
        }
        let output = &run.output;
        let problem = problem(output, self.config.max_processes, timeout);
        let mut data = serde_json::to_value(output).unwrap_or(Value::Null);
        if let Some(fields) = data.as_object_mut() {
            if !notes.is_empty() {
                fields.insert("repaired".into(), json!(notes.join("; ")));
            }
            if !run.calls.is_empty() {
                fields.insert("calls".into(), json!(run.calls));
            }
            if let Some(Variables { kept, dropped }) = &run.variables {
                if !kept.is_empty() {
                    fields.insert("variables".into(), json!(kept));
                }
                if !dropped.is_empty() {
                    fields.insert("not_kept".into(), json!(dropped));
                }
            }
            self.report_writes(fields, run.scratch.take(), problem.is_none())
                .await;
        }
        match problem {
            None => Ok(data),
            Some(problem) => {
                let found_elsewhere = self.files_named_like(hints::missing_file(&output.stderr));
                let hint = hints::hint(&hints::HintContext {
                    code: &code,
                    language,
                    stderr: &output.stderr,
                    may_write: self.config.allow_writes,
                    code_actions: self.code_actions(language),
                    found_elsewhere: &found_elsewhere,
                });
                Err(ToolError::with_data(
                    format!("the code {problem}{hint}"),
                    data,
                ))
            }
        }
    }
}

impl RunCode {
    /// The workspace paths of files named like `missing` (a path the code
    /// could not open), at most three; none when it names no file.
    fn files_named_like(&self, missing: Option<&str>) -> Vec<String> {
        match (missing, Workspace::new(&self.config.workspace)) {
            (Some(missing), Ok(workspace)) => workspace.files_named_like(missing, 3),
            _ => Vec::new(),
        }
    }

    /// What a repair sees of the program as it stands.
    fn repair_context<'a>(
        &'a self,
        code: &'a str,
        language: &'a str,
        output: Option<&'a SandboxOutput>,
    ) -> RepairContext<'a> {
        RepairContext {
            code,
            language,
            output,
            sandbox: &self.config,
        }
    }

    /// Whether code in `language` gets the workspace functions and keeps
    /// its variables.
    fn code_actions(&self, language: &str) -> bool {
        self.options.code_actions && language == "python"
    }

    /// Adds to `fields` what the program wrote in its copy: saved into the
    /// workspace (`saved`, with a diff) when it `succeeded` and saving is
    /// on, else shown (`unsaved_writes`, with a note).
    async fn report_writes(
        &self,
        fields: &mut Map<String, Value>,
        scratch: Option<Scratch>,
        succeeded: bool,
    ) {
        let Some(scratch) = scratch else {
            return;
        };
        let save = self.options.save_writes && succeeded && !session::is_trial();
        let root = self.config.workspace.clone();
        let reported = tokio::task::spawn_blocking(move || {
            let changes = scratch.changes();
            if changes.is_empty() {
                return None;
            }
            if save {
                Some(("saved", json!(save_changes(&root, &changes)), None))
            } else {
                let note = if succeeded {
                    UNSAVED_NOTE
                } else {
                    FAILED_UNSAVED_NOTE
                };
                Some((
                    "unsaved_writes",
                    json!(Scratch::shown(&changes)),
                    Some(note),
                ))
            }
        })
        .await
        .ok()
        .flatten();
        if let Some((key, value, note)) = reported {
            fields.insert(key.into(), value);
            if let Some(note) = note {
                fields.insert("note".into(), json!(note));
            }
        }
    }

    /// Runs `code` in the sandbox: where the workspace is read-only for
    /// code, a small one is copied and the copy is the code's working
    /// directory, writable (see [`Scratch`]). Python with code actions
    /// runs after the prelude, with the run's session folder mounted.
    async fn execute(
        &self,
        language: &str,
        code: &str,
        timeout: Duration,
    ) -> Result<Executed, ToolError> {
        // A trial (see `session::trial`) always works on a copy.
        let trial = session::is_trial();
        let scratch = if self.config.allow_writes && !trial {
            None
        } else {
            let workspace = self.config.workspace.clone();
            tokio::task::spawn_blocking(move || Scratch::copy(&workspace))
                .await
                .ok()
                .flatten()
        };
        let mut config = self.config.clone();
        if let Some(scratch) = &scratch {
            config.workspace = scratch.path().to_path_buf();
            config.allow_writes = true;
        } else if trial {
            config.allow_writes = false;
        }
        let actions = self.code_actions(language);
        // Without a run's session (a direct call), a folder for this call.
        let own_session;
        let session = if actions {
            match session::current_dir() {
                Some(dir) => Some(dir),
                None => {
                    own_session = tempfile::tempdir().ok();
                    own_session.as_ref().map(|d| d.path().to_path_buf())
                }
            }
        } else {
            None
        };
        if let Some(dir) = &session {
            let _ = std::fs::remove_file(dir.join(prelude::CALLS_FILE));
            config.session = Some(dir.clone());
        }
        let argv: Vec<&str> = match (language, actions) {
            ("bash", _) => vec!["/usr/bin/bash", "-c", code],
            (_, true) => vec![
                "/usr/bin/python3",
                "-c",
                prelude::LAUNCHER,
                prelude::PRELUDE,
                code,
            ],
            (_, false) => vec!["/usr/bin/python3", "-c", code],
        };
        let output = sandbox::run(&config, &argv, timeout)
            .await
            .map_err(|e| ToolError::new(e.0))?;
        let (calls, variables) = match &session {
            Some(dir) => read_log(dir),
            None => (Vec::new(), None),
        };
        Ok(Executed {
            output,
            scratch,
            calls,
            variables,
        })
    }
}

/// What went wrong with a run, if anything.
fn problem(output: &SandboxOutput, max_processes: u32, timeout: Duration) -> Option<String> {
    if output.timed_out {
        Some(format!(
            "timed out after {}s and was killed",
            timeout.as_secs_f64()
        ))
    } else if output.killed {
        Some("killed by a signal (a CPU, memory or process limit)".to_string())
    } else if output.process_limit_hit {
        Some(format!(
            "tried to start more than {max_processes} processes and was stopped"
        ))
    } else {
        match output.exit_code {
            Some(0) => None,
            Some(code) => Some(format!("exited with code {code}")),
            None => Some("ended without an exit code".to_string()),
        }
    }
}

/// The workspace calls the prelude logged (`{"tool", "path"}`, at most
/// [`MAX_LISTED_CALLS`]) and the variables it kept and could not keep.
fn read_log(session: &Path) -> (Vec<Value>, Option<Variables>) {
    let text = std::fs::read_to_string(session.join(prelude::CALLS_FILE)).unwrap_or_default();
    let mut calls = Vec::new();
    let mut variables = None;
    for line in text.lines() {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(kept) = entry.get("kept") {
            let names = |v: Option<&Value>| -> Vec<String> {
                v.and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            variables = Some(Variables {
                kept: names(Some(kept)),
                dropped: names(entry.get("dropped")),
            });
        } else if calls.len() < MAX_LISTED_CALLS {
            calls.push(Value::Object(entry));
        }
    }
    (calls, variables)
}

/// Writes `changes` into the workspace at `root`, each through the
/// workspace's policy (inside it, not in `.hermes/`, no symbolic link out);
/// returns each path with its diff, or why it was not saved.
fn save_changes(root: &Path, changes: &[Change]) -> BTreeMap<String, String> {
    let workspace = match Workspace::new(root) {
        Ok(workspace) => workspace,
        Err(e) => {
            return BTreeMap::from([("…".into(), format!("not saved: {e}"))]);
        }
    };
    changes
        .iter()
        .map(|change| {
            let said = match workspace.resolve(&change.path) {
                Err(e) => format!("not saved: {}", e.message),
                Ok(path) => {
                    let written = path
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .and_then(|()| std::fs::write(&path, &change.after));
                    match written {
                        Ok(()) => change.diff(),
                        Err(e) => format!("not saved: {e}"),
                    }
                }
            };
            (change.path.clone(), said)
        })
        .collect()
}

//! Checks: what must hold after a run for it to pass.
//!
//! A check looks at the workspace the run left behind and at the outcome the
//! runtime recorded (status, final answer, rounds used), never at what the
//! model says it did: "I wrote answer.txt" passes nothing, `answer.txt`
//! holding `7` does. [`evaluate`] runs every check of a task and returns one
//! human-readable line per failed check, so an empty list means the run passed.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// How a run ended, as the report and the `status` check name it.
///
/// The first five come from one agent loop (`hermes run`); `failed` and
/// `cancelled` only from plan mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent (or the planner) finished with an answer.
    Finished,
    /// The agent finished while a file its goal asks for was missing.
    Incomplete,
    /// The round budget ran out.
    MaxRounds,
    /// The repetition guard stopped the agent.
    Repetition,
    /// The wall-clock budget ran out.
    Timeout,
    /// The run could not go on (model unreachable, runner failure, ...).
    Error,
    /// Plan mode: a subtask still failed after the replans ran out.
    Failed,
    /// Plan mode: the run was cancelled.
    Cancelled,
    /// The task's token or call budget was spent.
    Budget,
}

impl RunStatus {
    /// Every status, in the order reports list them.
    pub const ALL: [RunStatus; 9] = [
        RunStatus::Finished,
        RunStatus::Incomplete,
        RunStatus::MaxRounds,
        RunStatus::Repetition,
        RunStatus::Timeout,
        RunStatus::Error,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Budget,
    ];

    /// The snake_case name used in suite files, JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Finished => "finished",
            RunStatus::Incomplete => "incomplete",
            RunStatus::MaxRounds => "max_rounds",
            RunStatus::Repetition => "repetition",
            RunStatus::Timeout => "timeout",
            RunStatus::Error => "error",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Budget => "budget",
        }
    }

    /// Whether only plan mode can end this way.
    pub fn plan_only(self) -> bool {
        matches!(self, RunStatus::Failed | RunStatus::Cancelled)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = String;

    /// Parses a snake_case name (`"max_rounds"`); the error lists the known names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                format!("unknown status {s:?}; expected one of {}", known.join(", "))
            })
    }
}

impl From<hermes_core::agent::StopStatus> for RunStatus {
    fn from(status: hermes_core::agent::StopStatus) -> Self {
        use hermes_core::agent::StopStatus as S;
        match status {
            S::Finished => RunStatus::Finished,
            S::Incomplete => RunStatus::Incomplete,
            S::MaxRounds => RunStatus::MaxRounds,
            S::Repetition => RunStatus::Repetition,
            S::Timeout => RunStatus::Timeout,
            S::Error => RunStatus::Error,
            S::Cancelled => RunStatus::Cancelled,
            S::Budget => RunStatus::Budget,
        }
    }
}

/// A compiled regular expression that remembers its source, so checks can be
/// compared, printed and quoted in messages.
#[derive(Clone)]
pub struct Pattern {
    source: String,
    regex: Regex,
}

impl Pattern {
    /// Compiles `source`; the error is the regex crate's explanation.
    pub fn new(source: &str) -> Result<Self, regex::Error> {
        Ok(Self {
            source: source.to_string(),
            regex: Regex::new(source)?,
        })
    }

    /// The pattern as written in the suite.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern matches anywhere in `text` (anchor it with `^…$`
    /// to match the whole text).
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}/", self.source)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// What a file check expects of the file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileExpect {
    /// The content, whitespace-trimmed (and with `\r\n` read as `\n`),
    /// equals this text, also trimmed.
    Equals(String),
    /// The content contains this text.
    Contains(String),
    /// The pattern matches somewhere in the content.
    Matches(Pattern),
    /// The file exists (`true`) or does not (`false`).
    Exists(bool),
}

/// One check of a task. All of a task's checks must hold for a run to pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// A file in the workspace after the run.
    File {
        /// Path relative to the workspace (validated: no `..`, not absolute).
        path: String,
        /// What the file must hold.
        expect: FileExpect,
    },
    /// The outcome's status.
    Status(RunStatus),
    /// The final answer contains this text.
    ResultContains(String),
    /// The pattern matches somewhere in the final answer.
    ResultMatches(Pattern),
    /// The run used at most this many rounds.
    MaxRounds(u32),
}

impl Check {
    /// A one-line description of the check, as in the suite (`file answer.txt equals "7"`).
    pub fn describe(&self) -> String {
        match self {
            Check::File { path, expect } => match expect {
                FileExpect::Equals(s) => format!("file {path} equals {s:?}"),
                FileExpect::Contains(s) => format!("file {path} contains {s:?}"),
                FileExpect::Matches(p) => format!("file {path} matches /{}/", p.as_str()),
                FileExpect::Exists(true) => format!("file {path} exists"),
                FileExpect::Exists(false) => format!("file {path} does not exist"),
            },
            Check::Status(s) => format!("status is {s}"),
            Check::ResultContains(s) => format!("result contains {s:?}"),
            Check::ResultMatches(p) => format!("result matches /{}/", p.as_str()),
            Check::MaxRounds(n) => format!("at most {n} rounds"),
        }
    }
}

/// What the runner observed of one finished run: the facts checks may use
/// besides the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct RunObservation {
    /// How the run ended.
    pub status: RunStatus,
    /// The final answer text; `None` unless the run finished.
    pub result: Option<String>,
    /// Rounds the run used (plan mode: summed over its executors).
    pub rounds: u32,
}

/// Runs every check against `workspace` and `observation`, and returns one
/// line per failed check, in the order the checks were declared, for
/// example `file answer.txt: expected "7", found "8"`. Empty means passed.
///
/// A file that is missing or unreadable fails its check with a message that
/// says so; a file that is not UTF-8 is read lossily.
pub fn evaluate(checks: &[Check], workspace: &Path, observation: &RunObservation) -> Vec<String> {
    checks
        .iter()
        .filter_map(|check| check_one(check, workspace, observation).err())
        .collect()
}

fn check_one(check: &Check, workspace: &Path, obs: &RunObservation) -> Result<(), String> {
    match check {
        Check::File { path, expect } => check_file(path, expect, workspace),
        Check::Status(expected) => {
            if obs.status == *expected {
                Ok(())
            } else {
                Err(format!("status: expected {expected}, found {}", obs.status))
            }
        }
        Check::ResultContains(needle) => match &obs.result {
            Some(result) if result.contains(needle.as_str()) => Ok(()),
            Some(result) => Err(format!(
                "result: expected to contain {needle:?}, found {}",
                quote(result)
            )),
            None => Err(format!(
                "result: expected to contain {needle:?}, but the run gave no result (status {})",
                obs.status
            )),
        },
        Check::ResultMatches(pattern) => match &obs.result {
            Some(result) if pattern.is_match(result) => Ok(()),
            Some(result) => Err(format!(
                "result: expected to match /{}/, found {}",
                pattern.as_str(),
                quote(result)
            )),
            None => Err(format!(
                "result: expected to match /{}/, but the run gave no result (status {})",
                pattern.as_str(),
                obs.status
            )),
        },
        Check::MaxRounds(max) => {
            if obs.rounds <= *max {
                Ok(())
            } else {
                Err(format!(
                    "rounds: expected at most {max}, used {}",
                    obs.rounds
                ))
            }
        }
    }
}

fn check_file(path: &str, expect: &FileExpect, workspace: &Path) -> Result<(), String> {
    // Paths were validated when the suite was parsed; a hand-built check is
    // validated here too, so no check ever reads outside the workspace.
    let full = workspace.join(relative_path(path).map_err(|e| format!("file {path}: {e}"))?);
    let exists = full.is_file();
    if let FileExpect::Exists(want) = expect {
        return match (want, exists) {
            (true, false) => Err(format!("file {path}: missing")),
            (false, true) => Err(format!("file {path}: exists but should not")),
            _ => Ok(()),
        };
    }
    let content = match std::fs::read(&full) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).replace("\r\n", "\n"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("file {path}: missing ({})", expected(expect)));
        }
        Err(e) => return Err(format!("file {path}: cannot read: {e}")),
    };
    let holds = match expect {
        FileExpect::Equals(want) => content.trim() == want.replace("\r\n", "\n").trim(),
        FileExpect::Contains(want) => content.contains(want.as_str()),
        FileExpect::Matches(pattern) => pattern.is_match(&content),
        FileExpect::Exists(_) => unreachable!("handled above"),
    };
    if holds {
        Ok(())
    } else {
        Err(format!(
            "file {path}: {}, found {}",
            expected(expect),
            quote(content.trim())
        ))
    }
}

fn expected(expect: &FileExpect) -> String {
    match expect {
        FileExpect::Equals(want) => format!("expected {:?}", want.trim()),
        FileExpect::Contains(want) => format!("expected to contain {want:?}"),
        FileExpect::Matches(pattern) => format!("expected to match /{}/", pattern.as_str()),
        FileExpect::Exists(true) => "expected to exist".into(),
        FileExpect::Exists(false) => "expected not to exist".into(),
    }
}

/// Longest quoted excerpt of a found value in a message, in characters.
const QUOTE_CHARS: usize = 120;

/// Quotes `text` for a message, cut to [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}… ({} characters)", text.chars().count())
    } else {
        format!("{head:?}")
    }
}

/// Validates a workspace-relative path from a suite (fixture or checked
/// file): not empty, not absolute, no `..`. Returns it as a path.
pub(crate) fn relative_path(path: &str) -> Result<PathBuf, String> {
    if path.trim().is_empty() {
        return Err("the path is empty".into());
    }
    let p = Path::new(path);
    let mut clean = PathBuf::new();
    for component in p.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("path {path:?} leaves the workspace (`..`)"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "path {path:?} is absolute; use a path relative to the workspace"
                ));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(format!(
            "path {path:?} names the workspace itself, not a file"
        ));
    }
    Ok(clean)
}

#[cfg(test)]
mod tests;

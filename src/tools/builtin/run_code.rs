//! `run_code {language, code, timeout_secs?}`: Python or Bash in a bubblewrap sandbox.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::python_newlines::escape_newlines_in_strings;
use crate::tools::sandbox::{self, SandboxConfig};
use crate::tools::{ParamKind, ParamSpec, Tool, ToolError, ToolSpec};

/// Default wall-clock limit for one run.
pub const DEFAULT_CODE_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest run the model may ask for.
pub const MIN_CODE_TIMEOUT: Duration = Duration::from_millis(100);
/// Longest run the model may ask for.
pub const MAX_CODE_TIMEOUT: Duration = Duration::from_secs(120);

/// Said in the result when line breaks inside string literals were escaped.
pub const REPAIR_NOTE: &str = r"line breaks inside one-line string literals were run as \n (write \\n in JSON for a \n in the code)";

/// Runs code in the sandbox described by its config.
pub struct RunCode {
    config: SandboxConfig,
}

impl RunCode {
    /// The tool; register it only after [`sandbox::probe`] succeeded.
    pub fn new(config: SandboxConfig) -> Self {
        Self { config }
    }
}

#[async_trait]
impl Tool for RunCode {
    fn spec(&self) -> ToolSpec {
        let workspace = if self.config.allow_writes {
            "read-write"
        } else {
            "read-only"
        };
        let description = format!(
            "Run Python or Bash code in a sandbox and return stdout, stderr, exit_code, timed_out and killed. \
             The sandbox has no network (even 127.0.0.1 is unreachable) and a read-only system. The workspace is the \
             working directory and is {workspace}, so open('data.csv') reads the workspace file; /tmp is private scratch \
             space that disappears after the run.{save} Limits: timeout_secs wall time (default {}s, at most {}s), {} MiB of \
             memory, {} processes. Print what you need to see.",
            DEFAULT_CODE_TIMEOUT.as_secs(),
            MAX_CODE_TIMEOUT.as_secs(),
            self.config.memory_bytes >> 20,
            self.config.max_processes,
            save = if self.config.allow_writes {
                ""
            } else {
                " To save a result, print it and write it with write_file."
            },
        );
        ToolSpec::new("run_code", description)
            .param(ParamSpec::new("language", ParamKind::String, "the interpreter").required().one_of(["python", "bash"]))
            .param(ParamSpec::new("code", ParamKind::String, "the program text").required())
            .param(ParamSpec::new("timeout_secs", ParamKind::Number, "wall-clock limit in seconds (fractions allowed)"))
            .example(json!({"language": "python", "code": "import csv\nrows = list(csv.reader(open('data.csv')))\nprint(len(rows))"}))
            .timeout(MAX_CODE_TIMEOUT + Duration::from_secs(10))
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let mut code = super::required_str(&args, "code")?.to_string();
        let language = super::required_str(&args, "language")?;
        // A '\n' that JSON turned into a real line break inside a string literal.
        let repaired = (language == "python")
            .then(|| escape_newlines_in_strings(&code))
            .flatten();
        if let Some(fixed) = &repaired {
            code.clone_from(fixed);
        }
        let interpreter: &[&str] = match language {
            "bash" => &["/usr/bin/bash", "-c"],
            "python" => &["/usr/bin/python3", "-c"],
            other => {
                return Err(ToolError::new(format!(
                    "parameter `language` must be `python` or `bash`, got `{other}`"
                )))
            }
        };
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
        let mut argv = interpreter.to_vec();
        argv.push(&code);
        let output = sandbox::run(&self.config, &argv, timeout)
            .await
            .map_err(|e| ToolError::new(e.0))?;
        let mut data = serde_json::to_value(&output).unwrap_or(Value::Null);
        if let (Some(_), Some(fields)) = (&repaired, data.as_object_mut()) {
            fields.insert("repaired".into(), json!(REPAIR_NOTE));
        }
        let problem = if output.timed_out {
            Some(format!(
                "timed out after {}s and was killed",
                timeout.as_secs_f64()
            ))
        } else if output.killed {
            Some("killed by a signal (a CPU, memory or process limit)".to_string())
        } else if output.process_limit_hit {
            Some(format!(
                "tried to start more than {} processes and was stopped",
                self.config.max_processes
            ))
        } else {
            match output.exit_code {
                Some(0) => None,
                Some(code) => Some(format!("exited with code {code}")),
                None => Some("ended without an exit code".to_string()),
            }
        };
        let hint = if !self.config.allow_writes && output.stderr.contains("Read-only file system") {
            "; the workspace is read-only for run_code: print the value instead and save it with write_file"
        } else {
            "; see stderr"
        };
        match problem {
            None => Ok(data),
            Some(problem) => Err(ToolError::with_data(
                format!("the code {problem}{hint}"),
                data,
            )),
        }
    }
}

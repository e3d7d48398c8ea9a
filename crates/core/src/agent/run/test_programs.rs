//! A stand-in for `run_code` in the act phase's tests (the redraw's and
//! the vote's): what a program does is written in its code.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolEffect, ToolError, ToolSpec};

/// `run_code` as the loop sees it: code holding `good` prints `4`, code
/// holding `slow` runs out of time, code holding `print N` prints `N`,
/// any other fails in its own code (a `KeyError` traceback). Every call is kept, with whether it was a trial.
pub(super) struct Programs {
    pub(super) ran: Arc<Mutex<Vec<(String, bool)>>>,
}

impl Programs {
    /// The programs run so far, in order (trials included).
    pub(super) fn codes(ran: &Mutex<Vec<(String, bool)>>) -> Vec<String> {
        ran.lock()
            .unwrap()
            .iter()
            .map(|(code, _)| code.clone())
            .collect()
    }
}

#[async_trait]
impl Tool for Programs {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("run_code", "runs a program")
            .param(ParamSpec::new("language", ParamKind::String, "python").required())
            .param(ParamSpec::new("code", ParamKind::String, "the program").required())
            .effect(ToolEffect::RunsCode)
            .triable()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let code = args["code"].as_str().unwrap_or_default().to_string();
        let trial = crate::tools::session::is_trial();
        self.ran.lock().unwrap().push((code.clone(), trial));
        if code.contains("good") {
            return Ok(json!({"exit_code": 0, "stdout": "4\n", "stderr": ""}));
        }
        if code.contains("slow") {
            return Err(ToolError::with_data(
                "the code timed out after 10s and was killed",
                json!({"exit_code": null, "stdout": "", "stderr": "", "timed_out": true}),
            ));
        }
        if let Some((_, n)) = code.split_once("print ") {
            return Ok(json!({"exit_code": 0, "stdout": format!("{n}\n"), "stderr": ""}));
        }
        let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nKeyError: 'item'\n";
        Err(ToolError::with_data(
            "the code exited with code 1; see stderr",
            json!({"exit_code": 1, "stdout": "", "stderr": stderr, "timed_out": false}),
        ))
    }
}

//! Scripted answers for a suite: a model that needs no server, so a suite
//! (and the fault injection around it) can run in CI and give the same
//! report every time.
//!
//! A script file maps task ids to the decisions the model should give, one
//! per round:
//!
//! ```toml
//! [admins]
//! replies = [
//!   '{"thought": "read it", "action": {"name": "read_file", "args": {"path": "data/users.csv"}}}',
//!   '{"thought": "done", "action": {"name": "finish", "args": {"result": "7"}}}',
//! ]
//! ```
//!
//! The reply is chosen by the round the prompt is on (`Round N of ...`, the
//! line the loop writes every round), not by call count: a regeneration
//! after an unreadable reply asks again for the same round and gets the same
//! reply, as a real model that answers the same prompt the same way would.

use std::collections::BTreeMap;
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;

use hermes_core::llm::scripted::scripted_response;
use hermes_core::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// The replies for each task of a suite.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Script {
    #[serde(flatten)]
    tasks: BTreeMap<String, TaskScript>,
}

/// One task's replies, one per round.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskScript {
    /// The model's reply for round 1, 2, ...; the last repeats after that.
    pub replies: Vec<String>,
}

/// Why a script file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read the script {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid script.
    #[error("{path}: {problem} (expected [task_id] tables with replies = [...])")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

impl Script {
    /// Reads a script file.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: shown.clone(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| ScriptError::Invalid {
            path: shown,
            problem: e.to_string().trim().replace('\n', " "),
        })
    }

    /// The model for `task`: its replies, or none (every call fails with a
    /// clear error, and the run ends in `error`).
    pub fn model_for(&self, task: &str) -> RoundScriptedLlm {
        RoundScriptedLlm {
            replies: self
                .tasks
                .get(task)
                .map(|t| t.replies.clone())
                .unwrap_or_default(),
            task: task.to_string(),
        }
    }
}

/// A model that answers each round with that round's scripted reply.
#[derive(Debug, Clone)]
pub struct RoundScriptedLlm {
    replies: Vec<String>,
    task: String,
}

/// The round the prompt asks about: the last `Round N of` in the messages.
fn round_of(request: &ChatRequest) -> usize {
    static ROUND: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let round =
        ROUND.get_or_init(|| regex::Regex::new(r"Round (\d+) of \d+").expect("valid regex"));
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| round.captures_iter(&m.content).last()?[1].parse().ok())
        .unwrap_or(1)
}

#[async_trait]
impl Llm for RoundScriptedLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let round = round_of(request);
        let Some(content) = self
            .replies
            .get(round.saturating_sub(1))
            .or(self.replies.last())
            .cloned()
        else {
            return Err(LlmError::Other(format!(
                "the script has no replies for task `{}`",
                self.task
            )));
        };
        Ok(scripted_response(request, content))
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::llm::ChatMessage;

    fn ask(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::system("s"), ChatMessage::user(text)],
            temperature: 0.0,
            max_tokens: 10,
            json: true,
            schema: None,
            seed: None,
        }
    }

    #[tokio::test]
    async fn replies_follow_the_round_and_a_regeneration_gets_the_same_one() {
        let script: Script = toml::from_str("[t]\nreplies = [\"one\", \"two\"]\n").unwrap();
        let llm = script.model_for("t");
        let first = llm.chat(&ask("Goal: x\n\nRound 1 of 10; 30s left.")).await;
        let told = "Round 2 of 10; 30s left. Round 1 (read_file) succeeded";
        assert_eq!(llm.chat(&ask(told)).await.unwrap().content, "two");
        assert_eq!(first.unwrap().content, "one");
        let mut again = ask("Goal: x\n\nRound 2 of 10; 30s left.");
        again.messages.push(ChatMessage::assistant("garbage"));
        again
            .messages
            .push(ChatMessage::user("Your reply could not be read"));
        assert_eq!(llm.chat(&again).await.unwrap().content, "two");
        let late = llm.chat(&ask("Round 7 of 10")).await.unwrap();
        assert_eq!(late.content, "two", "the last reply repeats");
        let none = script.model_for("other").chat(&ask("Round 1 of 2")).await;
        assert!(none
            .unwrap_err()
            .to_string()
            .contains("no replies for task `other`"));
    }
}

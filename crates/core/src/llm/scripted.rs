//! A deterministic replay model: answers come from a fixed script.
//!
//! Used by unit tests of the loop and by offline demos. Integration tests use
//! a real HTTP server instead (see `tests/common`), so the HTTP client is
//! exercised end to end.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, Llm, LlmError, Usage};

/// A scripted model's reply to `request`: `content`, with token counts
/// estimated at four characters per token (scripts report no real usage).
pub fn scripted_response(request: &ChatRequest, content: String) -> ChatResponse {
    let usage = Usage {
        prompt_tokens: request
            .messages
            .iter()
            .map(|m| m.content.len() as u64 / 4)
            .sum(),
        completion_tokens: content.len() as u64 / 4,
        cached_tokens: 0,
    };
    ChatResponse {
        content,
        usage,
        finish_reason: Some("stop".into()),
    }
}

/// Replays scripted answers in order and records every request it saw.
pub struct ScriptedLlm {
    answers: Mutex<VecDeque<String>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl ScriptedLlm {
    /// A model that answers with `answers`, one per call, in order.
    pub fn new<I, S>(answers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            answers: Mutex::new(answers.into_iter().map(Into::into).collect()),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Llm for ScriptedLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.clone());
        }
        let next = self.answers.lock().ok().and_then(|mut a| a.pop_front());
        let content =
            next.ok_or_else(|| LlmError::Other("scripted model has no answers left".into()))?;
        Ok(scripted_response(request, content))
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

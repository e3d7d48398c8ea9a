//! The model boundary: one trait, [`Llm`], and the types that cross it.
//!
//! Everything above this module (the loop, the planner) talks to a model only
//! through [`Llm::chat`]. `openai` speaks the OpenAI-compatible chat API that
//! OpenAI, DeepSeek, Ollama, vLLM and llama.cpp's server all serve; `scripted`
//! replays fixed answers for tests and offline demos.

pub mod budget;
mod error;
pub mod jump_forward;
pub mod kept_prompt;
pub mod openai;
pub mod prefix_cache;
pub mod reseeded;
pub mod scripted;
mod traced;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use error::LlmError;
pub use openai::{OpenAiClient, OpenAiConfig};
pub use reseeded::Reseeded;
pub use scripted::ScriptedLlm;
pub use traced::traced_chat;

/// Who wrote a chat message (serialized as the wire format's `role`).
///
/// Not to be confused with `hermes::actors::Role`, the kind of executor
/// agent a planner assigns work to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Author {
    /// Instructions that frame the whole conversation.
    System,
    /// The user (for the loop: the goal and tool observations).
    User,
    /// The model's own earlier replies.
    Assistant,
}

/// One message of a chat conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author of the message.
    pub role: Author,
    /// Plain-text content.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Author::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Author::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Author::Assistant,
            content: content.into(),
        }
    }
}

/// What the loop asks of a model: a conversation plus sampling settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The conversation so far, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    pub temperature: f32,
    /// Upper bound on generated tokens.
    pub max_tokens: u32,
    /// Ask the server for a JSON object answer where it supports that.
    pub json: bool,
    /// A JSON schema the answer must follow, for models that can constrain
    /// decoding (the in-process model turns it into a grammar); servers
    /// that cannot are only asked for JSON. Shared: an agent sends the same
    /// schema every round, and a deep clone of it cost more than the rest
    /// of the request.
    pub schema: Option<std::sync::Arc<serde_json::Value>>,
    /// The sampling seed for this request (`None`: the provider's own).
    /// The loop sets one only when it draws several answers to the same
    /// conversation ([`crate::agent::steer::Redraw`]): with one seed per
    /// engine, the same prompt would draw the same answer each time.
    pub seed: Option<u64>,
}

impl ChatRequest {
    /// The temperature as the decimal it was written as (`0.3`), for JSON
    /// bodies and span attributes; widening the `f32` directly would give
    /// `0.30000001192092896`.
    pub fn temperature_f64(&self) -> f64 {
        // An f32's Display is the shortest decimal that reads back as it.
        self.temperature
            .to_string()
            .parse()
            .unwrap_or(f64::from(self.temperature))
    }
}

/// Token counts as reported by the server (zero when it reports none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
    /// Prompt tokens the model did not evaluate again because it still held
    /// them from an earlier request (prefix reuse); part of `prompt_tokens`.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Total of both counts.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Self {
        iter.fold(Usage::default(), |mut total, u| {
            total += u;
            total
        })
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.prompt_tokens += rhs.prompt_tokens;
        self.completion_tokens += rhs.completion_tokens;
        self.cached_tokens += rhs.cached_tokens;
    }
}

/// The model's answer to one [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    /// The generated text (for native tool calls, their JSON).
    pub content: String,
    /// Token usage of this call.
    pub usage: Usage,
    /// Why generation stopped, when the server says (`stop`, `length`, ...).
    pub finish_reason: Option<String>,
}

/// A chat model. Implementations must be cheap to share (`Arc<dyn Llm>`).
#[async_trait]
pub trait Llm: Send + Sync {
    /// Sends one conversation and returns the model's reply.
    ///
    /// Transient failures (429, 5xx, connection errors) are retried inside
    /// the implementation; an `Err` here is final for this request.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The model name, for logs, journals and span attributes.
    fn model(&self) -> &str;
}
